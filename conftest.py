"""Collection rules for the doctests in the package (``testpaths`` includes ``robot_dynamics``).

The ROS nodes and the benchmarks import rclpy/pinocchio at module level; where those are not
installed (the core alone, ``pip install .``), their modules are not collected for doctests.
"""

import importlib.util

collect_ignore_glob = []
if importlib.util.find_spec("rclpy") is None:
    collect_ignore_glob.append("robot_dynamics/nodes/*")
if importlib.util.find_spec("launch_ros") is None:  # used by launch/*.launch.py only
    collect_ignore_glob.append("robot_dynamics/tools/launch_nodes.py")
if importlib.util.find_spec("pinocchio") is None:
    collect_ignore_glob.append("robot_dynamics/tools/benchmarks/*")
