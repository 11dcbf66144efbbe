"""The simulator: a model's forward dynamics integrated in time, with contact, limits and drives.

``equations_of_motion.py`` is the right-hand side (forward dynamics with friction, joint limits and the
penalty contact of ``contact.py``); ``integrators.py`` the compiled fixed-step integrators;
``simulator.py`` :class:`~robot_dynamics.simulation.simulator.Simulator`, the state and its steps.
"""
