"""The trajectory filter: a planned JointTrajectory in, one within the robot's limits out (``node.py``),
over its settings and filtering (``plan.py``)."""
