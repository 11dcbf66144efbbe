"""The simulator node: effort commands in, the integrated joint states out (``node.py``), over its
settings and plan (``plan.py``), input checks and held commands (``inputs.py``) and its contact."""
