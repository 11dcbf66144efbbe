"""Planned trajectories: read, sampled as joint_trajectory_controller samples them, and checked
against the robot's torque and velocity limits (``check.py``)."""
