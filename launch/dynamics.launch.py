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

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from robot_dynamics.processes import share_file
from robot_dynamics.robots import PACKAGE, urdf_file


def flag(context, name):
    """A true/false launch argument as a bool (launch's own rules: true/false/1/0)."""
    return IfCondition(LaunchConfiguration(name)).evaluate(context)


def nodes(context):
    description = ParameterValue(urdf_file(LaunchConfiguration("urdf").perform(context)).read_text(), value_type=str)
    namespace = LaunchConfiguration("namespace").perform(context)
    use_sim_time = flag(context, "use_sim_time")
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
    if flag(context, "start_robot_state_publisher"):
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
        DeclareLaunchArgument("params_file", default_value=str(share_file("config", "dynamics.yaml")),
                              description="parameters of the dynamics node"),
        OpaqueFunction(function=nodes),
    ])
