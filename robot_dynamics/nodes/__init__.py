"""ROS 2 nodes of robot_dynamics: thin adapters between ROS messages and the core.

Executables (entry points in ``robot_dynamics_executables`` beside the package, then
:mod:`~robot_dynamics.nodes.common.command_line`; each answers ``--help``):

- :mod:`~robot_dynamics.nodes.dynamics.node`: URDF from robot_description, joint states in,
  gravity / bias / computed torques and the mass matrix out.
- :mod:`~robot_dynamics.nodes.simulator.node`: the forward dynamics of the same model, integrated
  in real time: effort commands in, joint states out.
- :mod:`~robot_dynamics.nodes.trajectory_publisher.node`: smooth sinusoids as ``desired_state``.

No rclpy (pure logic, unit-tested without ROS):

- :mod:`~robot_dynamics.nodes.common.parameters`: parameters as data (one source for declaring them and for
  ``--help``) and the checks of parameter values and messages.
- :mod:`~robot_dynamics.nodes.dynamics.plan`, :mod:`~robot_dynamics.nodes.simulator.plan`,
  :mod:`~robot_dynamics.nodes.trajectory_publisher.plan`: each node's settings, their coercion, and the plan
  made from settings and model (``make_plan``).
- :mod:`~robot_dynamics.nodes.dynamics.inputs`, :mod:`~robot_dynamics.nodes.simulator.inputs`: the
  checks of each node's input messages, the merged joint state, the held commands.
- :mod:`~robot_dynamics.nodes.common.command_line`: ``--help``, ``--urdf``, the start-up line.
- :mod:`~robot_dynamics.nodes.common.cdr`: joint_states serialized without rclpy's per-field conversion.

With rclpy (the only modules of the package that import it and message types):

- :mod:`~robot_dynamics.nodes.common.base`: :class:`~robot_dynamics.nodes.common.base.RobotNode`, what every node
  does: parameters, model from robot_description, throttled problems, diagnostics.
- :mod:`~robot_dynamics.nodes.common.description`: where the URDF comes from (parameter, latched topic,
  another node's parameter).
- :mod:`~robot_dynamics.nodes.common.ros_parameters`: declaring the parameters, checked run-time changes.
- :mod:`~robot_dynamics.nodes.common.runner`: rclpy init, the spin loop (and its signals), clean exit.
- :mod:`~robot_dynamics.nodes.common.converters`: numpy arrays <-> message fields.
"""
