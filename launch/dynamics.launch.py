"""The robot_dynamics dynamics node, configured by config/dynamics.yaml.

    ros2 launch robot_dynamics dynamics.launch.py                       # bundled arm7_gripper
    ros2 launch robot_dynamics dynamics.launch.py urdf:=/path/robot.urdf namespace:=arm
    ros2 launch robot_dynamics dynamics.launch.py start_robot_state_publisher:=true

The URDF text is passed to the node as its robot_description parameter (launch_ros writes it to
a parameters file, which carries URDFs of any size). The graph is described once, in
``robot_dynamics.tools.graph.dynamics_graph``; ``robot_dynamics.tools.processes`` starts the same
graph without ``ros2 launch``.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from robot_dynamics.description.robots import bundled_robot_names
from robot_dynamics.tools.graph import config_file, dynamics_graph
from robot_dynamics.tools.launch_nodes import (
    argument, boolean_argument, compile_ahead, flag, launch_nodes, params_file, require_package, urdf_text,
)


def nodes(context):
    with_state_publisher = flag(context, "start_robot_state_publisher")
    if with_state_publisher:
        require_package("robot_state_publisher", "start_robot_state_publisher:=true")
    graph = dynamics_graph(urdf_text(context), params_file=params_file(context, "params_file"),
                           use_sim_time=flag(context, "use_sim_time"), robot_state_publisher=with_state_publisher)
    compile_ahead("dynamics_node")  # the arguments checked first
    return launch_nodes(graph, argument(context, "namespace"))


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="arm7_gripper",
                              description="URDF file, or the name of a bundled robot: "
                                          + ", ".join(bundled_robot_names())),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the nodes (topics are relative)"),
        boolean_argument("use_sim_time", "false", "true: follow /clock (e.g. the simulator's)"),
        boolean_argument("start_robot_state_publisher", "false",
                         "also start robot_state_publisher (TF of the robot) with the same URDF"),
        DeclareLaunchArgument("params_file", default_value=str(config_file("dynamics.yaml")),
                              description="the dynamics node's params file (every parameter documented in it)"),
        OpaqueFunction(function=nodes),
    ])
