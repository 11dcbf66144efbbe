"""ROS 2 nodes of robot_dynamics (the only subpackage that imports rclpy and message types).

- :mod:`robot_dynamics.nodes.dynamics_node`: URDF from robot_description, joint states in,
  gravity / bias / computed torques and the mass matrix out.
- :mod:`robot_dynamics.nodes.common`: description source, executor loop, message converters,
  parameter plumbing and checks, diagnostics helpers.
"""
