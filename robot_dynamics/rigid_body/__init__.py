"""The robot as a tree of rigid bodies, and the algorithms over it (the bottom of the core).

``model.py`` holds :class:`RobotModel`, the immutable flat arrays every algorithm reads; ``kernels.py``
the compiled per-state loops (joint poses, Newton-Euler, composite rigid body, Jacobian columns), with
``cholesky.py``, ``wrenches.py`` (external wrenches, tf2's ``doTransform``) and ``batches.py`` beside
them; above them the public batched functions: ``dynamics.py`` (inverse and forward dynamics, gravity,
bias, mass and Coriolis matrices), ``kinematics.py`` (poses, Jacobians, energies), ``task_space.py``
(a frame's twist and acceleration, ``Jdot qd``, the damped task inertia, the pose error),
``regression.py`` (the regressor), ``data.py`` (the reusable workspace and its one pass per state),
``elastic.py`` (elastic joints); ``formulations.py`` holds the seeds' other derivations, independent
cross-checks of the kernels.
"""
