"""Entry points of the executables (``dynamics_node``, ``simulator_node``, ``trajectory_publisher``,
``trajectory_filter``, ``robot-dynamics``): the one place where a process's signal handling and its compile step are set.

A module of its own, outside the ``robot_dynamics`` package, so that it imports only ``signal``,
``os`` and ``sys`` before it sets them: the package's imports take a while on a busy machine, and a
Ctrl-C in that time would end the process with Python's default, a ``KeyboardInterrupt`` traceback.
No module of the package imports this one.

- A node: SIGINT and SIGTERM end it with status 0 from its first instruction on
  (:func:`stop_on_signals`), within :data:`SWALLOWED_STOP_GRACE` s even when code it imports
  swallows the stop; once its command line is read, its kernels are loaded from numba's
  cache, or compiled, saying so, if nothing compiled them ahead (``robot-dynamics compile``), during
  which a signal ends it at once; then :func:`robot_dynamics.nodes.common.runner.run_node` spins it and
  reads the signals itself.
- ``robot-dynamics compile`` (and ``python -m robot_dynamics_executables compile PART``, what the
  launch files run): a Ctrl-C ends it at once and quietly with status :data:`INTERRUPTED`.
"""

import os
import signal
import sys
import threading

INTERRUPTED = 128 + signal.SIGINT
"""The exit status of ``robot-dynamics compile`` ended by a Ctrl-C (a shell's for a process ended by SIGINT)."""

SWALLOWED_STOP_GRACE = 3.0
"""s from a stop signal during a node's start to a forced exit with status 0, should it still run then:
the handler's SystemExit can be swallowed by the code it lands in (numpy.random's C extension, while
numba imports it, clears it), and the start would go on with the signals ignored."""


def _stop_now(signum, frame):
    # a second signal while the first one's SystemExit unwinds must not interrupt the unwinding
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    _exit_unless_ended_within(SWALLOWED_STOP_GRACE)
    raise SystemExit(0)


def _exit_unless_ended_within(seconds):
    def exit_now():
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "robot_dynamics"
        print(f"[{name}] stopping: still running {seconds:g} s after the stop signal (the code it landed in "
              "swallowed it): exiting now", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(0)

    timer = threading.Timer(seconds, exit_now)
    timer.daemon = True
    timer.start()


def stop_on_signals():
    """From now on, SIGINT and SIGTERM (a terminal's Ctrl-C, ros2 launch) end the process with status 0
    by ``SystemExit(0)``, a second signal ignored."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop_now)


def exit_at_once_on_signals(status):
    """From now on, SIGINT and SIGTERM end the process at once with ``status``: while numba compiles
    (an exception raised inside LLVM's code generation would be swallowed there; and numba writes
    each cache file whole or not at all, so nothing half-written stays behind)."""
    def exit_now(signum, frame):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, exit_now)


def _load_kernels(name, part):
    """The kernels of the node ``name`` (compile part ``part``), loaded or compiled before it starts."""
    exit_at_once_on_signals(0)
    from robot_dynamics.compiling import compile_and_report

    compile_and_report([part], "the dynamics kernels", lambda line: print(f"[{name}] {line}", file=sys.stderr, flush=True))
    stop_on_signals()


def _run(name):
    stop_on_signals()
    try:
        from robot_dynamics.tools.processes import end_with_launcher

        end_with_launcher()  # (started by a launch file: ends with ros2 launch, however that ends)
        from robot_dynamics.nodes.common.command_line import main

        return main(name, load_kernels=lambda part: _load_kernels(name, part))
    except Exception as error:
        # A stop signal's SystemExit raised inside the import of a C extension (rclpy's, on a busy
        # machine about 0.3 s after start) comes out as that import's ImportError: still a stop.
        if isinstance(error.__cause__, SystemExit) or isinstance(error.__context__, SystemExit):
            raise SystemExit(0) from None
        raise


def dynamics_node():
    """Entry point of the ``dynamics_node`` executable."""
    return _run("dynamics_node")


def simulator_node():
    """Entry point of the ``simulator_node`` executable."""
    return _run("simulator_node")


def trajectory_publisher():
    """Entry point of the ``trajectory_publisher`` executable."""
    return _run("trajectory_publisher")


def trajectory_filter():
    """Entry point of the ``trajectory_filter`` executable."""
    return _run("trajectory_filter")


def robot_dynamics(argv=None):
    """Entry point of the ``robot-dynamics`` command."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compile"]:
        exit_at_once_on_signals(INTERRUPTED)
    from robot_dynamics.cli import main

    return main(argv)


if __name__ == "__main__":  # python -m robot_dynamics_executables compile PART (what the launch files run)
    sys.exit(robot_dynamics())
