"""The trajectory publisher: a joint-space or Cartesian reference as ``desired_state`` (``node.py``), over
its settings and the trajectories themselves (``plan.py``, ``cartesian.py``)."""
