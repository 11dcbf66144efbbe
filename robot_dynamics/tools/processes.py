"""The node graphs of :mod:`robot_dynamics.tools.graph`, started as plain subprocesses.

Used by ``robot-dynamics demo``, the benchmarks and the tests: the same executables, YAML files and
wiring as ``launch/*.launch.py``, where ``ros2 launch`` is not installed. Nothing here imports rclpy.

- :func:`executable` finds a console script (``dynamics_node`` ...) of this package.
- :func:`params_file` writes parameters into a ROS 2 params file (a ``-p`` on the command line
  breaks on long URDFs and on ``": "`` inside the XML).
- :func:`choose_domain` is the ``ROS_DOMAIN_ID`` a command uses (the user's, or a private one when
  asked), :func:`ros_environment` the environment of a graph on it.
- :class:`NodeProcess` starts one node and stops it (SIGINT, then SIGTERM, then SIGKILL).
- :func:`start_graph` starts a graph; :func:`stop_all` stops it.
- :func:`end_with_launcher` and :func:`interrupt_on_sigterm` (with
  :func:`~robot_dynamics.child_processes.die_with_parent` for every child): no child outlives the
  program that started it (``robot-dynamics``, ``ros2 launch``), whatever ends that program.
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

from ..child_processes import die_with_parent, end_with
from ..description.robots import PACKAGE

#: The domain ids ROS 2 accepts (the DDS port formula's UDP ports end at 232).
DOMAINS = range(0, 233)
#: A random one of these for a private (``--isolated``) graph: clear of the ephemeral ports everywhere.
PRIVATE_DOMAINS = range(102 - 70, 102)
#: RTPS well-known ports of domain d: PORT_BASE + DOMAIN_GAIN d + 0 .. 11 (discovery and user
#: traffic of the first participant; DDSI-RTPS 9.6.1.1 defaults, as Fast DDS uses them).
PORT_BASE, DOMAIN_GAIN, WELL_KNOWN_SPAN = 7400, 250, 12

#: The package's node executables (console scripts) and their modules in ``robot_dynamics.nodes``.
NODE_EXECUTABLES = ("dynamics_node", "simulator_node", "trajectory_publisher", "trajectory_filter")


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


#: The environment variable in which the launch files (:func:`~robot_dynamics.tools.launch_nodes.launch_nodes`)
#: give each node the pid of ``ros2 launch``, which started it.
LAUNCHER_PID = "ROBOT_DYNAMICS_LAUNCHER_PID"


def end_with_launcher():
    """In a node a launch file started (:data:`LAUNCHER_PID` set): the same death signal as
    :func:`~robot_dynamics.child_processes.die_with_parent`, asked for by the node itself
    (:func:`~robot_dynamics.child_processes.end_with`), since launch_ros starts its processes without
    it: a ``ros2 launch`` killed with SIGKILL (or crashed, or OOM-killed) then leaves no node
    running. A node started any other way (``ros2 run``, ``nohup``) is left as it is. A launch that
    ended before the call ends the node at once, by the same SIGTERM."""
    launcher = os.environ.pop(LAUNCHER_PID, "")
    if launcher.isdigit():
        end_with(int(launcher))


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


def ephemeral_ports():
    """This machine's ephemeral port range (Linux: ``/proc/sys/net/ipv4/ip_local_port_range``;
    elsewhere the IANA range 49152-65535, which macOS and Windows use)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 49152, 65535


def domain_warning(domain, ports=None):
    """A warning for a domain id whose well-known ports fall in the OS's ephemeral port range (the
    ROS 2 docs' "About Domain ID": on Linux 102-214), where another program's socket can take a
    port the domain needs; None for a safe one."""
    low, high = ports or ephemeral_ports()
    first = PORT_BASE + DOMAIN_GAIN * domain
    if first <= high and first + WELL_KNOWN_SPAN - 1 >= low:
        safe = [d for d in DOMAINS if not (PORT_BASE + DOMAIN_GAIN * d <= high
                                           and PORT_BASE + DOMAIN_GAIN * d + WELL_KNOWN_SPAN - 1 >= low)]
        ranges = _ranges(safe)
        return (f"ROS_DOMAIN_ID {domain}: its DDS ports ({first}-{first + WELL_KNOWN_SPAN - 1}) are in this machine's "
                f"ephemeral port range {low}-{high}, where another program's connection can take one and stop "
                f"discovery (the ROS 2 docs advise {ranges} here)")
    return None


def _ranges(values):
    """'0-101 and 215-232' for the sorted integers ``values``."""
    spans, start = [], None
    for k, value in enumerate(values):
        if start is None:
            start = value
        if k + 1 == len(values) or values[k + 1] != value + 1:
            spans.append(f"{start}-{value}" if value != start else str(value))
            start = None
    return " and ".join(spans)


def choose_domain(domain_id=None, isolated=False, environ=None):
    """``(domain, where it comes from, warning or None)``: ``domain_id`` if given (``--domain-id``), a
    random private one with ``isolated``, else the exported ``ROS_DOMAIN_ID``, else ROS 2's default 0.
    ValueError for a domain ROS 2 does not accept (not an integer in 0-232)."""
    environ = os.environ if environ is None else environ
    if domain_id is not None and isolated:
        raise ValueError("--domain-id and --isolated: give one of them")
    if isolated:
        return random.choice(PRIVATE_DOMAINS), "--isolated: a private domain", None
    if domain_id is not None:
        text, source = str(domain_id), "--domain-id"
    elif environ.get("ROS_DOMAIN_ID", "").strip():
        text, source = environ["ROS_DOMAIN_ID"].strip(), "the exported ROS_DOMAIN_ID"
    else:
        return 0, "ROS 2's default (ROS_DOMAIN_ID not set)", None
    try:
        domain = int(text)
    except ValueError:
        domain = -1
    if domain not in DOMAINS:
        raise ValueError(f"{source} {text!r}: ROS 2 accepts the integers 0-232")
    return domain, source, domain_warning(domain)


def ros_environment(domain_id=None, base=None):
    """A copy of the environment for a ROS 2 graph on ``domain_id`` (None: a random private one);
    localhost-only discovery unless the environment sets ``ROS_AUTOMATIC_DISCOVERY_RANGE``."""
    env = dict(os.environ if base is None else base)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env.pop("ROS_LOCALHOST_ONLY", None)
    env["ROS_DOMAIN_ID"] = str(random.choice(PRIVATE_DOMAINS) if domain_id is None else domain_id)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
    return env


def ros_args(params_files=(), namespace=None, node_name=None, parameters=None, log_level=None, remappings=()):
    """``--ros-args`` for a node: params files (in order: later ones win), namespace, name, remappings."""
    args = ["--ros-args"]
    for file in params_files:
        args += ["--params-file", str(file)]
    for name, value in (parameters or {}).items():
        args += ["-p", f"{name}:={json.dumps(value) if not isinstance(value, str) else value}"]
    if namespace:
        args += ["-r", f"__ns:={namespace if namespace.startswith('/') else '/' + namespace}"]
    if node_name:
        args += ["-r", f"__node:={node_name}"]
    for source, target in remappings:
        args += ["-r", f"{source}:={target}"]
    if log_level:
        args += ["--log-level", log_level]
    return args


class NodeProcess:
    """One node in its own process; its output goes to ``log_path``. It ends with the thread that
    starts it (:func:`~robot_dynamics.child_processes.die_with_parent`)."""

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
            argv = executable(node.executable) + ros_args(files, namespace, node_name=node.name,
                                                          remappings=node.remappings)
            processes.append(NodeProcess(node.executable, argv, env, log_dir / f"{node.executable}.log"))
    except BaseException:
        stop_all(processes)
        raise
    return processes


def add_domain_arguments(parser):
    """``--domain-id N`` and ``--isolated`` of every command that starts nodes (:func:`graph_environment`)."""
    parser.add_argument("--domain-id", type=int, default=None, metavar="N",
                        help="ROS_DOMAIN_ID of the graph, 0-232 (default: the exported ROS_DOMAIN_ID, else 0)")
    parser.add_argument("--isolated", action="store_true",
                        help="run on a random private ROS_DOMAIN_ID (32-101) instead of yours")


def graph_environment(args, warn):
    """``(environment, one line saying which domain and why)`` for the nodes and this process, from
    :func:`add_domain_arguments`' options; ``warn`` gets the domain's warning, if any. ValueError
    for a domain ROS 2 does not accept. This process's own environment is set to the same domain
    and discovery range (its ROS node joins the graph)."""
    domain, source, warning = choose_domain(args.domain_id, args.isolated)
    if warning:
        warn(warning)
    env = ros_environment(domain)
    for name in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE"):
        os.environ[name] = env[name]
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    discovery = env["ROS_AUTOMATIC_DISCOVERY_RANGE"]
    scope = "this machine only" if discovery == "LOCALHOST" else f"discovery range {discovery}"
    return env, f"ROS_DOMAIN_ID={domain} ({source}; {scope})"
