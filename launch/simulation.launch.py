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
    def arg(name):
        return LaunchConfiguration(name).perform(context)

    description = ParameterValue(urdf_file(arg("urdf")).read_text(), value_type=str)
    namespace = arg("namespace")
    use_sim_time = flag(context, "use_sim_time")
    common = {"robot_description": description, "use_sim_time": use_sim_time}
    return [
        Node(package=PACKAGE, executable="simulator_node", name="robot_dynamics_simulator",
             namespace=namespace, output="screen",
             parameters=[arg("simulator_params"), {**common, "use_sim_time": False, "publish_clock": use_sim_time}]),
        Node(package=PACKAGE, executable="dynamics_node", name="robot_dynamics",
             namespace=namespace, output="screen",
             parameters=[arg("dynamics_params"), {**common, "command_source": arg("command_source"),
                                                  "compensate_friction": flag(context, "compensate_friction")}]),
        Node(package=PACKAGE, executable="trajectory_publisher", name="trajectory_publisher",
             namespace=namespace, output="screen",
             parameters=[arg("trajectory_params"), common]),
    ]


def generate_launch_description():
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
        DeclareLaunchArgument("simulator_params", default_value=str(share_file("config", "simulator.yaml"))),
        DeclareLaunchArgument("dynamics_params", default_value=str(share_file("config", "dynamics.yaml"))),
        DeclareLaunchArgument("trajectory_params", default_value=str(share_file("config", "trajectory_publisher.yaml"))),
        OpaqueFunction(function=nodes),
    ])
