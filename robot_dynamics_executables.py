"""Entry points of the node executables (``dynamics_node``, ``simulator_node``, ``trajectory_publisher``)
and of the launch's compile step (``python -m robot_dynamics_executables [PART ...]``).

A module of its own, outside the ``robot_dynamics`` package, so that it imports only ``signal``,
``os`` and ``sys``: the package (numba, the kernels) takes 0.4 s to import on an idle machine and
about 2 s while a launch starts three nodes on two cores, and a Ctrl-C in that time would end the
process with Python's default, a ``KeyboardInterrupt`` traceback and status -2.  Here SIGINT and
SIGTERM end a node with status 0 from its first instruction on; then
:func:`robot_dynamics.nodes.command_line.main` runs the executable (and keeps that rule until the
node spins).  The compile step ends at once and quietly with status :data:`INTERRUPTED`.
"""

import os
import signal
import sys

INTERRUPTED = 130
"""The exit status of ``python -m robot_dynamics_executables`` (and ``robot_dynamics.warm_up``) ended by a Ctrl-C."""


def _stop_now(signum, frame):
    # a second signal while the first one's SystemExit unwinds must not interrupt the unwinding
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(0)


def stop_on_signals():
    """From now on, SIGINT and SIGTERM (a terminal's Ctrl-C, ros2 launch) end the process with status 0
    by ``SystemExit(0)``, a second signal ignored."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop_now)


def _run(name):
    stop_on_signals()
    from robot_dynamics.nodes.command_line import main

    return main(name)


def dynamics_node():
    """Entry point of the ``dynamics_node`` executable."""
    return _run("dynamics_node")


def simulator_node():
    """Entry point of the ``simulator_node`` executable."""
    return _run("simulator_node")


def trajectory_publisher():
    """Entry point of the ``trajectory_publisher`` executable."""
    return _run("trajectory_publisher")


def exit_quietly_on_ctrl_c():
    """From now on, SIGINT ends the process at once, quietly, with status :data:`INTERRUPTED`: for the
    compiling processes, whose interrupted compile leaves nothing behind (numba writes each cache
    file whole or not at all)."""
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(INTERRUPTED))


def compile_kernels(parts):
    """:func:`robot_dynamics.warm_up.warm_up` of ``parts``, a Ctrl-C ending it at once and quietly
    from the first instruction on (:func:`exit_quietly_on_ctrl_c`)."""
    exit_quietly_on_ctrl_c()
    from robot_dynamics.warm_up import warm_up

    warm_up(*parts)


if __name__ == "__main__":  # what simulation.launch.py runs on a cold cache
    compile_kernels(sys.argv[1:])
