"""From a robot's description to a :class:`~robot_dynamics.rigid_body.model.RobotModel`.

``urdf.py`` reads a URDF (fixed joints folded, couplings resolved, limits and ``<dynamics>`` kept) and
checks the model it builds with its mass matrix; ``transmissions.py`` turns ``<transmission>`` into
reflected rotor inertia; ``robots.py`` names the bundled robots; ``examples.py`` holds the example arms.
"""
