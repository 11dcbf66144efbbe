"""Control laws and estimators, over the rigid-body algorithms.

``laws.py``: the joint-space (computed torque, PD) and task-space (operational space, Cartesian
impedance) laws, one implementation each; ``task_controller.py``: one frame's task-space torque from a
state; ``observer.py``: the generalized-momentum observer of external torques and the wrench at a frame.
"""
