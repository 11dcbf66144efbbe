"""ament_python packaging for robot_dynamics (also a plain pip package)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "robot_dynamics"

setup(
    name=PACKAGE,
    version="0.1.0",
    description="Rigid-body dynamics for robot arms from URDF, with ROS 2 nodes",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(exclude=["test", "test.*"]),
    py_modules=["robot_dynamics_executables"],
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/urdf", glob("urdf/*.urdf")),
    ],
    # rosbags: identification reads and writes rosbag2 bags (sqlite3 and MCAP) without ROS
    install_requires=["numpy>=1.24", "scipy>=1.10", "urdf-parser-py>=0.0.4", "numba>=0.59", "rosbags>=0.10", "threadpoolctl>=3"],
    extras_require={
        "test": [
            "pytest>=7",
            "pytest-xdist>=3",
            "pin>=3",
            "example-robot-data>=4",
            "modern-robotics>=1.1",
            "toppra>=0.6",  # retime's durations against the reference TOPP-RA (test/test_retime.py)
            # test/test_colcon.py builds the package the ROS 2 workspace way
            "colcon-common-extensions",
            "colcon-ros",
            "ros-ament-package",
        ],
        # robot-dynamics bench retime: Drake's Toppra as a second reference (large; benchmark only)
        "bench": ["drake"],
        # the demo's plot (robot-dynamics demo / ./dev demo)
        "demo": ["matplotlib>=3.5"],
        # identify's validation plot (validation.png)
        "plot": ["matplotlib>=3.5"],
        "ros": [
            "ros-rclpy",
            "ros-rmw-fastrtps-cpp",
            "ros-sensor-msgs",
            "ros-std-msgs",
            "ros-trajectory-msgs",
            "ros-geometry-msgs",
            "ros-diagnostic-msgs",
            "ros-rosgraph-msgs",
            "ros-std-srvs",
        ],
    },
    zip_safe=True,
    entry_points={
        "console_scripts": [
            # (a module of their own: a Ctrl-C while Python imports the package ends them cleanly too)
            "dynamics_node = robot_dynamics_executables:dynamics_node",
            "simulator_node = robot_dynamics_executables:simulator_node",
            "trajectory_publisher = robot_dynamics_executables:trajectory_publisher",
            "trajectory_filter = robot_dynamics_executables:trajectory_filter",
            "robot-dynamics = robot_dynamics_executables:robot_dynamics",
        ]
    },
)
