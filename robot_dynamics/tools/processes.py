"""The node graphs of :mod:`robot_dynamics.tools.graph`, started as plain subprocesses.

Used by ``robot-dynamics demo``, the benchmarks and the tests: the same executables, YAML files and
wiring as ``launch/*.launch.py``, where ``ros2 launch`` is not installed. Nothing here imports rclpy.

- :func:`executable` finds a console script (``dynamics_node`` ...) of this package.
- :func:`params_file` writes parameters into a ROS 2 params file (a ``-p`` on the command line
  breaks on long URDFs and on ``": "`` inside the XML).
- :func:`ros_environment` is the environment of an isolated graph: localhost-only discovery and a
  private ``ROS_DOMAIN_ID``.
- :class:`NodeProcess` starts one node and stops it (SIGINT, then SIGTERM, then SIGKILL).
- :func:`start_graph` starts a graph; :func:`stop_all` stops it.
- :func:`die_with_parent`, :func:`end_with_launcher` and :func:`interrupt_on_sigterm`: no child
  outlives the program that started it (``robot-dynamics``, ``ros2 launch``), whatever ends that
  program.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..robots import PACKAGE

#: Fast DDS accepts domain ids 0-101 and 215-232; a random one in this range for private graphs.
PRIVATE_DOMAINS = range(102 - 70, 102)

#: The package's node executables (console scripts) and their modules in ``robot_dynamics.nodes``.
NODE_EXECUTABLES = ("dynamics_node", "simulator_node", "trajectory_publisher")


def executable(name):
    """Command (argv prefix) that runs the console script ``name`` of this package.

    Looks next to the running interpreter (a venv's ``bin/``), in ``lib/robot_dynamics`` of this
    prefix and of the ROS 2 install (where ``ros2 run`` looks), then on ``PATH``; falls back to
    running the entry point with this interpreter.
    """
    candidates = [Path(sys.executable).parent / name, Path(sys.prefix) / "lib" / PACKAGE / name]
    try:
        from ament_index_python.packages import get_package_prefix
        candidates.append(Path(get_package_prefix(PACKAGE)) / "lib" / PACKAGE / name)
    except Exception:  # not a ROS 2 install, or the package is not indexed
        pass
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    found = shutil.which(name)
    if found:
        return [found]
    if name not in NODE_EXECUTABLES:
        raise FileNotFoundError(f"executable {name!r} not found (is its package installed?)")
    return [sys.executable, "-c", f"import sys, robot_dynamics_executables as e; sys.exit(e.{name}())"]


PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when the thread that forked it ends


def _prctl():
    """libc's ``prctl`` (None where the OS has none)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # (here: the demo's and the CLI's imports stay light)

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)
    prctl.restype = ctypes.c_int
    return prctl


def die_with_parent():
    """The ``preexec_fn`` of every child process the package starts (None where the OS cannot do it).

    On Linux the child asks, between fork and exec, for SIGTERM when the thread that started it
    ends (``prctl(PR_SET_PDEATHSIG)``, kept across exec): whatever ends the parent, SIGKILL, a crash
    or the OOM killer included, the child then stops as on any SIGTERM (a node: cleanly, status 0).
    A child whose parent ended between the fork and that call ends at once. Start children from a
    thread that outlives them (the main thread): the signal comes when that *thread* ends.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child():  # (after fork: nothing that takes a lock another thread of the parent may hold)
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGTERM)

    return in_child


#: The environment variable in which the launch files (:func:`~robot_dynamics.tools.launch_nodes.launch_nodes`)
#: give each node the pid of ``ros2 launch``, which started it.
LAUNCHER_PID = "ROBOT_DYNAMICS_LAUNCHER_PID"


def end_with_launcher():
    """In a node a launch file started (:data:`LAUNCHER_PID` set): the same death signal as
    :func:`die_with_parent`, asked for by the node itself, since launch_ros starts its processes
    without it: a ``ros2 launch`` killed with SIGKILL (or crashed, or OOM-killed) then leaves no node
    running. A node started any other way (``ros2 run``, ``nohup``) is left as it is. A launch that
    ended before the call ends the node at once, by the same SIGTERM."""
    launcher = os.environ.pop(LAUNCHER_PID, "")
    prctl = _prctl() if launcher else None
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if str(os.getppid()) != launcher:
        os.kill(os.getpid(), signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, after :func:`interrupt_on_sigterm`: a ``KeyboardInterrupt``, so that whatever cleans up
    after a Ctrl-C (stopping the nodes in ``finally``) cleans up after a SIGTERM too."""

    STATUS = 128 + signal.SIGTERM
    MESSAGE = "terminated"


def interrupt_on_sigterm():
    """From now on SIGTERM (``kill``, ``timeout``, a service manager) raises :class:`Terminated` in the
    main thread, once: a second SIGTERM is ignored while the program stops its children."""

    def terminated(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)


def params_text(parameters):
    """A params file setting the flat ``{name: value}`` parameters of every node (``/**``).

    Values are written as JSON, which is YAML: strings of any content stay exact.

    >>> print(params_text({"robot_description": '<robot name="r"/>', "kp": [100.0]}))
    /**:
      ros__parameters:
        robot_description: "<robot name=\\"r\\"/>"
        kp: [100.0]
    """
    return "\n".join(["/**:", "  ros__parameters:"] + [f"    {name}: {json.dumps(value)}" for name, value in parameters.items()])


def params_file(parameters, path):
    """Write :func:`params_text` of ``parameters`` to ``path``."""
    Path(path).write_text(params_text(parameters) + "\n")
    return Path(path)


def ros_environment(domain_id=None, base=None):
    """A copy of the environment for an isolated ROS 2 graph (localhost-only, private domain)."""
    env = dict(os.environ if base is None else base)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_LOCALHOST_ONLY", None)
    env["ROS_DOMAIN_ID"] = str(random.choice(PRIVATE_DOMAINS) if domain_id is None else domain_id)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
    return env


def ros_args(params_files=(), namespace=None, node_name=None, parameters=None, log_level=None):
    """``--ros-args`` for a node: params files (in order: later ones win), namespace, name."""
    args = ["--ros-args"]
    for file in params_files:
        args += ["--params-file", str(file)]
    for name, value in (parameters or {}).items():
        args += ["-p", f"{name}:={json.dumps(value) if not isinstance(value, str) else value}"]
    if namespace:
        args += ["-r", f"__ns:={namespace if namespace.startswith('/') else '/' + namespace}"]
    if node_name:
        args += ["-r", f"__node:={node_name}"]
    if log_level:
        args += ["--log-level", log_level]
    return args


class NodeProcess:
    """One node in its own process; its output goes to ``log_path``. It ends with the thread that
    starts it (:func:`die_with_parent`)."""

    def __init__(self, name, argv, env, log_path):
        self.name = name
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen(self.argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, preexec_fn=die_with_parent())

    @property
    def pid(self):
        return self.process.pid

    def running(self):
        return self.process.poll() is None

    def log_tail(self, lines=20):
        """The last ``lines`` lines the node printed (its output goes straight to the file)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout=5.0):
        """SIGINT (clean shutdown, frees shared memory), then SIGTERM, then SIGKILL. Returns the status."""
        if self.running():
            # Don't interrupt a node that is still importing: rclpy may not have its handler yet.
            time.sleep(max(0.0, 0.5 - (time.monotonic() - self.started)))
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
                if not self.running():
                    break
                try:
                    self.process.send_signal(sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(wait)
                except subprocess.TimeoutExpired:
                    continue
        self._log.close()
        return self.process.returncode


def stop_all(processes, timeout=5.0):
    """Stop the processes in reverse start order; {name: exit status}."""
    return {process.name: process.stop(timeout) for process in reversed(list(processes))}


def start_graph(graph, env, log_dir, namespace=None):
    """Start every :class:`~robot_dynamics.tools.graph.NodeLaunch` of a graph; the :class:`NodeProcess` list.

    Each node's parameter layers become ``--params-file`` arguments in order (dictionaries are
    written to ``log_dir/<node>_<k>.yaml``); its output goes to ``log_dir/<node>.log``.
    """
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    processes = []
    try:
        for node in graph:
            files = [layer if isinstance(layer, Path) else params_file(layer, log_dir / f"{node.name}_{k}.yaml")
                     for k, layer in enumerate(node.parameters)]
            argv = executable(node.executable) + ros_args(files, namespace, node_name=node.name)
            processes.append(NodeProcess(node.executable, argv, env, log_dir / f"{node.executable}.log"))
    except BaseException:
        stop_all(processes)
        raise
    return processes
