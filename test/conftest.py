"""Test-session set-up shared by every test module.

ROS isolation: each pytest run, and each pytest-xdist worker in it, gets its own
``ROS_DOMAIN_ID`` and localhost-only discovery, set before any test imports rclpy,
so parallel runs on one machine never see each other's topics.

Compilation: the controller compiles the dynamics kernels once (what ``robot-dynamics compile``
runs), before the workers start; a test's own compile then starts no worker processes.
"""

import os
import random

# Fast DDS accepts domains 0-101 (and 215-232); leave room for up to 16 workers.
_DOMAIN_SPAN = 16
_DOMAIN_MAX = 101


def pytest_configure(config):
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    worker_input = getattr(config, "workerinput", None)
    if worker_input is None:
        # The controller (or a plain run) picks the base; workers inherit it through the environment.
        # (ROBOT_DYNAMICS_TEST_DOMAIN_BASE set by the caller pins it: concurrent runs on one machine
        # given bases 16 apart never share a domain)
        preset = os.environ.get("ROBOT_DYNAMICS_TEST_DOMAIN_BASE")
        base = int(preset) if preset else random.randrange(1, _DOMAIN_MAX - _DOMAIN_SPAN)
        os.environ["ROBOT_DYNAMICS_TEST_DOMAIN_BASE"] = str(base)
        os.environ["ROS_DOMAIN_ID"] = str(base)
        # Compile the dynamics kernels into numba's on-disk cache once, before any worker or node
        # process starts: every node started by a test would otherwise compile them itself at
        # start-up (12-30 s on a fresh clone), longer than the tests wait for a node to come up.
        from robot_dynamics.compiling import WORKERS_VARIABLE, compile_parts

        compile_parts()
        # a test's own cold compile stays in its process: its workers would take the cores of the
        # other pytest worker's real-time ROS tests (test_compiling asks for workers where it tests them)
        os.environ[WORKERS_VARIABLE] = "1"
    else:
        base = int(os.environ["ROBOT_DYNAMICS_TEST_DOMAIN_BASE"])
        worker_index = int(worker_input["workerid"].removeprefix("gw"))
        os.environ["ROS_DOMAIN_ID"] = str(base + 1 + worker_index % (_DOMAIN_SPAN - 1))
