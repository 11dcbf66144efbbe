"""Tooling around the library, not part of it: the demos, the node graphs and the benchmarks.

- :mod:`.graph` describes the package's two node graphs once, for the launch files and for
  :mod:`.processes`, which starts them as plain subprocesses;
- :mod:`.demo` is ``robot-dynamics demo`` (:mod:`.elastic_demo`: ``robot-dynamics demo-elastic``);
  :mod:`.benchmarks` are ``robot-dynamics bench``;
- :mod:`.launch_nodes` is what the launch files share (it needs ROS 2 ``launch``).

The core library (``robot_dynamics.*``) never imports this package.
"""
