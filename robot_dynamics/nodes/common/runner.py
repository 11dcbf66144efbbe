"""The life of a node process, from ``rclpy.init`` to a clean exit: :func:`run_node`."""

from __future__ import annotations

import faulthandler
import gc
import signal
import sys
from typing import Callable, Sequence

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

__all__ = ["run_node", "stop_handler"]

#: s from SIGINT/SIGTERM to a forced exit when the node has not ended by then: below launch's
#: escalation to SIGTERM (after 5 s, then SIGKILL), above the middleware's slowest teardown seen (a
#: node's destroy took over 3 s once on a loaded 2-core machine; 0.2 s is usual)
STOP_GRACE = 4.0


def stop_handler(stop: list) -> Callable:
    """The SIGINT/SIGTERM handler while a node spins: it appends the signal to ``stop`` for the loop
    to read, and gives the process :data:`STOP_GRACE` s from the first one on: should it still run
    then (stuck inside the middleware, even holding the GIL), faulthandler's own thread writes every
    thread's stack to stderr and ends it with status 1."""
    def handler(signum, _frame):
        if not stop:
            faulthandler.dump_traceback_later(STOP_GRACE, exit=True)
        stop.append(signum)
    return handler


def run_node(node_class: Callable[..., Node], args: Sequence[str] | None = None, *, executor: str = "single",
             **kwargs) -> int:
    """``rclpy.init(args)`` -> ``node_class(**kwargs)`` -> an executor spun with
    ``spin_once(timeout_sec=0.1)`` until SIGINT, SIGTERM or an external shutdown; the node is
    destroyed and the context shut down. Returns 0.

    The executor is ``"single"``, rclpy's SingleThreadedExecutor, which under a flood of messages
    keeps answering and stops on Ctrl-C at once, or ``"events"``, the EventsExecutor, which needs
    about half the CPU per message but wedges for minutes under a flood (docs/benchmarks.md). The
    executables choose (``command_line.Executable.executor``, ``--executor``).

    Signals: while the node starts (loading a model) the entry point's handlers
    (``robot_dynamics_executables``) end it at once; once it spins, SIGINT and SIGTERM
    only set a flag that the loop reads between spins (rclpy's own handlers, or Python's
    KeyboardInterrupt, would raise inside whatever runs when the signal lands: inside a message
    conversion the EventsExecutor turns that into a RuntimeError and the process exits with a
    traceback), and while it shuts down they are ignored, so a second Ctrl-C cannot break the
    clean exit. A node still running :data:`STOP_GRACE` s after the signal (stuck inside the
    middleware) ends with status 1 and every thread's stack on stderr.

    ROS arguments that rcl refuses (a params file that is not valid YAML, a list of mixed types), and
    a node the middleware refuses to create (security enabled without a keystore, or with Fast DDS
    built without security: docs/security.md), end it with a FATAL line and status 2, the status of
    any other invalid parameter.
    """
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from rclpy.signals import SignalHandlerOptions

    executor_class = {"single": SingleThreadedExecutor, "events": EventsExecutor}[executor]

    from rclpy.impl.implementation_singleton import rclpy_implementation

    try:
        init = rclpy.init(args=list(args) if args is not None else None, signal_handler_options=SignalHandlerOptions.NO)
    except rclpy_implementation.RCLError as exc:  # e.g. a params file that is no YAML, a mixed-type list, no enclave
        name = args[0] if args else "node"
        what = "the security settings" if "SECURITY" in str(exc) else "invalid ROS arguments or params file"
        print(f"[FATAL] [{name}]: {what}: {exc}", file=sys.stderr)
        return 2
    with init:
        context = init.context
        node = None
        spinner = None
        try:
            try:
                node = node_class(**kwargs)
            except rclpy_implementation.RCLError as exc:  # the middleware refused (e.g. ROS_SECURITY_ENABLE, docs/security.md)
                name = args[0] if args else "node"
                print(f"[FATAL] [{name}]: the middleware cannot create the node: {' '.join(str(exc).split())}",
                      file=sys.stderr)
                return 2
            gc.freeze()  # start-up objects out of the collector's way: no long gen-2 pauses in the loop
            spinner = executor_class(context=context)
            spinner.add_node(node)
            stop = []
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, stop_handler(stop))
            while context.ok() and not stop:
                spinner.spin_once(timeout_sec=0.1)
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            if spinner is not None:
                spinner.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
    return 0
