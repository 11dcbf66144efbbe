"""ROS 2 nodes of robot_dynamics: thin adapters between ROS messages and the core.

Executables (entry points in ``robot_dynamics_executables`` beside the package, then
:mod:`~robot_dynamics.nodes.command_line`; each answers ``--help``):

- :mod:`~robot_dynamics.nodes.dynamics_node`: URDF from robot_description, joint states in,
  gravity / bias / computed torques and the mass matrix out.
- :mod:`~robot_dynamics.nodes.simulator_node`: the forward dynamics of the same model, integrated
  in real time: effort commands in, joint states out.
- :mod:`~robot_dynamics.nodes.trajectory_publisher`: smooth sinusoids as ``desired_state``.

No rclpy (pure logic, unit-tested without ROS):

- :mod:`~robot_dynamics.nodes.parameters`: parameters as data (one source for declaring them and for
  ``--help``) and the checks of parameter values and messages.
- :mod:`~robot_dynamics.nodes.dynamics_plan`, :mod:`~robot_dynamics.nodes.simulator_plan`,
  :mod:`~robot_dynamics.nodes.trajectory_plan`: each node's settings, their coercion, and the plan
  made from settings and model (``make_plan``).
- :mod:`~robot_dynamics.nodes.dynamics_inputs`, :mod:`~robot_dynamics.nodes.simulator_inputs`: the
  checks of each node's input messages, the merged joint state, the held commands.
- :mod:`~robot_dynamics.nodes.command_line`: ``--help``, ``--urdf``, the start-up line.
- :mod:`~robot_dynamics.nodes.cdr`: joint_states serialized without rclpy's per-field conversion.

With rclpy (the only modules of the package that import it and message types):

- :mod:`~robot_dynamics.nodes.base`: :class:`~robot_dynamics.nodes.base.RobotNode`, what every node
  does: parameters, model from robot_description, throttled problems, diagnostics.
- :mod:`~robot_dynamics.nodes.description`: where the URDF comes from (parameter, latched topic,
  another node's parameter).
- :mod:`~robot_dynamics.nodes.ros_parameters`: declaring the parameters, checked run-time changes.
- :mod:`~robot_dynamics.nodes.runner`: rclpy init, the spin loop (and its signals), clean exit.
- :mod:`~robot_dynamics.nodes.converters`: numpy arrays <-> message fields.
"""
