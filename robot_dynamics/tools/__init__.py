"""Tooling around the library, not part of it: the demo, the node graphs and the benchmarks.

- :mod:`.graph` describes the package's two node graphs once, for the launch files and for
  :mod:`.processes`, which starts them as plain subprocesses;
- :mod:`.demo` is ``robot-dynamics demo``; :mod:`.benchmarks` are ``robot-dynamics bench``.

The core library (``robot_dynamics.*``) never imports this package.
"""
