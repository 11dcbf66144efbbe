"""Simulator + dynamics node + trajectory publisher: the closed computed-torque loop of the demo.

    ros2 launch robot_dynamics simulation.launch.py                    # bundled arm7_gripper
    ros2 launch robot_dynamics simulation.launch.py urdf:=planar_2r namespace:=sim command_source:=gravity
    ros2 launch robot_dynamics simulation.launch.py namespace:=left use_sim_time:=true clock_topic:=/left/clock

Wiring (all topics relative to the namespace, so nothing needs remapping):

    trajectory_publisher --desired_state--> dynamics_node --effort_command--> simulator_node
    simulator_node --joint_states--> dynamics_node

For a robot whose joints config/simulator.yaml does not name, the start pose and the trajectory's
home pose follow the robot's joint limits. The graph is described once, in
``robot_dynamics.tools.graph.simulation_graph``; ``robot-dynamics sim`` starts the same graph
without ``ros2 launch`` (and ``robot-dynamics demo`` records it). The simulator holds the start pose
until its first command (``on_command_timeout: hold_position`` unless simulator_params sets it).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction

from robot_dynamics.description.robots import bundled_robot_names
from robot_dynamics.tools.graph import COMMAND_SOURCES, config_file, simulation_graph
from robot_dynamics.tools.launch_nodes import (
    argument, boolean_argument, compile_ahead, flag, launch_nodes, params_file, urdf_text,
)

#: launch argument -> (default file in config/, the node it configures)
PARAMS_FILES = {"simulator_params": ("simulator.yaml", "simulator_node"),
                "dynamics_params": ("dynamics.yaml", "dynamics_node"),
                "trajectory_params": ("trajectory_publisher.yaml", "trajectory_publisher")}


def nodes(context):
    urdf = urdf_text(context)
    settings = dict(use_sim_time=flag(context, "use_sim_time"), command_source=argument(context, "command_source"),
                    compensate_friction=flag(context, "compensate_friction"),
                    clock_topic=argument(context, "clock_topic"), trajectory=flag(context, "start_trajectory"),
                    **{name: params_file(context, name) for name in PARAMS_FILES})
    namespace = argument(context, "namespace")
    # once, here, rather than in two nodes at once; the arguments checked first
    compile_ahead("dynamics_node", "simulator")
    return launch_nodes(simulation_graph(urdf, **settings), namespace)


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("urdf", default_value="arm7_gripper",
                              description="URDF file, or the name of a bundled robot: "
                                          + ", ".join(bundled_robot_names())),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the three nodes"),
        boolean_argument("use_sim_time", "false",
                         "true: the simulator publishes /clock and the other nodes follow it"),
        DeclareLaunchArgument("command_source", default_value="computed", choices=list(COMMAND_SOURCES),
                              description="what the dynamics node sends the simulator: computed "
                                          "(the computed-torque law), gravity (compensation only), none, or "
                                          "task_space (the tool frame follows a circle, docs/task_space.md)"),
        DeclareLaunchArgument("clock_topic", default_value="/clock",
                              description="with use_sim_time: the clock the simulator publishes and the nodes "
                                          "follow (a second simulated arm: /NS/clock, so /clock has one owner)"),
        boolean_argument("start_trajectory", "true",
                         "false: no trajectory publisher (publish desired_state yourself)"),
        boolean_argument("compensate_friction", "true",
                         "the dynamics node adds the URDF damping and friction that the simulator applies"),
        *(DeclareLaunchArgument(name, default_value=str(config_file(file)),
                                description=f"params file of {node} (every parameter documented in config/{file})")
          for name, (file, node) in PARAMS_FILES.items()),
        OpaqueFunction(function=nodes),
    ])
