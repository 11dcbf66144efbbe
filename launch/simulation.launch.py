"""Simulator + dynamics node + trajectory publisher: the closed computed-torque loop of the demo.

    ros2 launch robot_dynamics simulation.launch.py                    # bundled arm7_gripper
    ros2 launch robot_dynamics simulation.launch.py namespace:=sim command_source:=gravity

Wiring (all topics relative to the namespace, so nothing needs remapping):

    trajectory_publisher --desired_state--> dynamics_node --effort_command--> simulator_node
    simulator_node --joint_states--> dynamics_node (and trajectory_publisher)

Launch arguments:
    urdf             URDF file or bundled robot name; default arm7_gripper (the initial pose in
                     config/simulator.yaml is this robot's home pose: change it for another robot)
    namespace        namespace of the three nodes; default none
    use_sim_time     true: every node follows the simulator's /clock (sets the simulator's
                     publish_clock); default false (the simulator is paced by the wall clock)
    command_source   what the dynamics node sends to the simulator: computed (default: the
                     computed-torque law), gravity (gravity compensation only) or none
    compensate_friction  true (default): the dynamics node adds the URDF damping and friction,
                     which the simulator applies, to its computed torques (an exact model)
    simulator_params, dynamics_params, trajectory_params   the YAML files; default config/*.yaml

The same graph, without ``ros2 launch``: ``robot_dynamics.processes.simulation_graph`` (used by
``robot-dynamics demo`` and test/test_launch_graphs.py).
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
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    with open(urdf_path(arg("urdf"))) as file:
        description = ParameterValue(file.read(), value_type=str)
    namespace = arg("namespace")
    use_sim_time = as_bool(arg("use_sim_time"))
    common = {"robot_description": description, "use_sim_time": use_sim_time}
    return [
        Node(package=PACKAGE, executable="simulator_node", name="robot_dynamics_simulator",
             namespace=namespace, output="screen",
             parameters=[arg("simulator_params"), {**common, "use_sim_time": False, "publish_clock": use_sim_time}]),
        Node(package=PACKAGE, executable="dynamics_node", name="robot_dynamics",
             namespace=namespace, output="screen",
             parameters=[arg("dynamics_params"), {**common, "command_source": arg("command_source"),
                                                  "compensate_friction": as_bool(arg("compensate_friction"))}]),
        Node(package=PACKAGE, executable="trajectory_publisher", name="trajectory_publisher",
             namespace=namespace, output="screen",
             parameters=[arg("trajectory_params"), common]),
    ]


def generate_launch_description():
    config = os.path.join(share_dir(), "config")
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="arm7_gripper",
                              description="URDF file or bundled robot name (planar_2r, arm7_gripper, cartesian_3dof)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the three nodes"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="run every node on the simulator's /clock"),
        DeclareLaunchArgument("command_source", default_value="computed",
                              description="effort_command of the dynamics node: computed | gravity | none"),
        DeclareLaunchArgument("compensate_friction", default_value="true",
                              description="the dynamics node models the URDF friction the simulator applies"),
        DeclareLaunchArgument("simulator_params", default_value=os.path.join(config, "simulator.yaml")),
        DeclareLaunchArgument("dynamics_params", default_value=os.path.join(config, "dynamics.yaml")),
        DeclareLaunchArgument("trajectory_params", default_value=os.path.join(config, "trajectory_publisher.yaml")),
        OpaqueFunction(function=nodes),
    ])
