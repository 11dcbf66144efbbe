"""The robot_dynamics dynamics node, configured by config/dynamics.yaml.

    ros2 launch robot_dynamics dynamics.launch.py                       # bundled arm7_gripper
    ros2 launch robot_dynamics dynamics.launch.py urdf:=/path/robot.urdf namespace:=arm
    ros2 launch robot_dynamics dynamics.launch.py start_robot_state_publisher:=true

Launch arguments:
    urdf                          URDF file, or the name of a bundled robot (planar_2r,
                                  arm7_gripper, cartesian_3dof); default arm7_gripper
    namespace                     namespace of the nodes (topics are relative); default none
    use_sim_time                  true: follow /clock (e.g. the simulator's); default false
    start_robot_state_publisher   also start robot_state_publisher (TF of the robot); default false
    params_file                   the dynamics node's parameters; default config/dynamics.yaml

The URDF text is passed to the node as its robot_description parameter (launch_ros writes it to
a parameters file, which carries URDFs of any size). The same graph, without ``ros2 launch``:
``robot_dynamics.processes.dynamics_graph`` (used by test/test_launch_graphs.py).
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = "robot_dynamics"


def share_dir():
    """share/robot_dynamics of the install (ament index), else the source tree of this file."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory(PACKAGE)
    except Exception:
        return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def urdf_path(argument):
    """An existing file, else a bundled robot name (with or without .urdf)."""
    if os.path.isfile(argument):
        return argument
    name = argument if argument.endswith(".urdf") else argument + ".urdf"
    bundled = os.path.join(share_dir(), "urdf", name)
    if os.sep not in argument and os.path.isfile(bundled):
        return bundled
    raise RuntimeError(f"urdf:={argument!r} is neither a file nor a bundled robot")


def as_bool(text):
    return text.strip().lower() in ("1", "true", "yes", "on")


def nodes(context):
    urdf_file = urdf_path(LaunchConfiguration("urdf").perform(context))
    with open(urdf_file) as file:
        description = ParameterValue(file.read(), value_type=str)
    namespace = LaunchConfiguration("namespace").perform(context)
    use_sim_time = as_bool(LaunchConfiguration("use_sim_time").perform(context))
    actions = [
        Node(
            package=PACKAGE,
            executable="dynamics_node",
            name="robot_dynamics",
            namespace=namespace,
            output="screen",
            parameters=[
                LaunchConfiguration("params_file").perform(context),
                {"robot_description": description, "use_sim_time": use_sim_time},
            ],
        )
    ]
    if as_bool(LaunchConfiguration("start_robot_state_publisher").perform(context)):
        actions.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                namespace=namespace,
                output="screen",
                parameters=[{"robot_description": description, "use_sim_time": use_sim_time}],
            )
        )
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="arm7_gripper",
                              description="URDF file or bundled robot name (planar_2r, arm7_gripper, cartesian_3dof)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the nodes"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="follow /clock"),
        DeclareLaunchArgument("start_robot_state_publisher", default_value="false",
                              description="also start robot_state_publisher with the same URDF"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share_dir(), "config", "dynamics.yaml"),
                              description="parameters of the dynamics node"),
        OpaqueFunction(function=nodes),
    ])
