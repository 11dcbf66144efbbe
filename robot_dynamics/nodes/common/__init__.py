"""What every node shares: parameters as data, the plausibility rule, the command line, the runner, the
model from ``robot_description``, message conversions."""
