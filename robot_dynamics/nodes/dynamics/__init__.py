"""The dynamics node: joint states in; torques, the control laws' effort_command, external torques and
collisions out (``node.py``), over its settings and plan (``plan.py``), input checks (``inputs.py``),
the command path, the task-space command and the external-torque outputs."""
