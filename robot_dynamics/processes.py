"""The node graphs of ``launch/*.launch.py``, started as plain subprocesses (no ``ros2 launch``).

Used by ``robot-dynamics demo`` and by ``test/test_launch_graphs.py``, so the executables, the
YAML files in ``config/`` and the wiring of the launch files are exercised where ``launch`` and
``launch_ros`` are not installable (PyPI-only machines). Nothing here imports rclpy.

- :func:`share_file` finds an installed data file (``config/dynamics.yaml``, ``urdf/...``).
- :func:`executable` finds a console script (``dynamics_node`` ...) of this package.
- :func:`description_params_file` writes ``robot_description`` into a ROS params file (a ``-p`` on
  the command line breaks on long URDFs and on ``": "`` inside the XML).
- :func:`ros_environment` is the environment of an isolated graph: localhost-only discovery and a
  private ``ROS_DOMAIN_ID``.
- :class:`NodeProcess` starts one node and stops it (SIGINT, then SIGTERM, then SIGKILL).
- :func:`dynamics_graph` / :func:`simulation_graph` are the command lines of the two launch files.
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

from .robots import PACKAGE, share_dirs

#: Fast DDS accepts domain ids 0-101 and 215-232; a random one in this range for private graphs.
PRIVATE_DOMAINS = range(102 - 70, 102)

#: Parameters layered over config/dynamics.yaml in the simulation graph (launch file and demo):
#: the dynamics node closes the loop by publishing the computed torques as ``effort_command``, and
#: models the URDF friction that the simulator applies (an exact model of the simulated robot).
SIMULATION_DYNAMICS_OVERRIDES = {"command_source": "computed", "compensate_friction": True}


def share_file(*parts):
    """Path of a data file of the package, e.g. ``share_file("config", "dynamics.yaml")``."""
    tried = []
    for directory in share_dirs():
        path = directory.joinpath(*parts)
        if path.is_file():
            return path
        tried.append(str(path))
    raise FileNotFoundError(f"{'/'.join(parts)} not found (looked in {', '.join(tried)})")


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
    module = {"dynamics_node": "dynamics_node", "simulator_node": "simulator_node",
              "trajectory_publisher": "trajectory_publisher"}[name]
    return [sys.executable, "-c",
            f"import sys; from robot_dynamics.nodes.{module} import main; sys.exit(main())"]


def description_params_file(urdf_text, path):
    """Write ``/**: ros__parameters: robot_description: "<xml>"`` to ``path`` (JSON-quoted string)."""
    path = Path(path)
    path.write_text("/**:\n  ros__parameters:\n    robot_description: " + json.dumps(urdf_text) + "\n")
    return path


def params_file(parameters, path):
    """Write a ``/**: ros__parameters:`` file with the given flat {name: value} parameters."""
    lines = ["/**:", "  ros__parameters:"]
    lines += [f"    {name}: {json.dumps(value)}" for name, value in parameters.items()]
    Path(path).write_text("\n".join(lines) + "\n")
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
    """One node in its own process; its output goes to ``log_path``."""

    def __init__(self, name, argv, env, log_path):
        self.name = name
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen(self.argv, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)

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


def dynamics_graph(description_file, namespace=None, config=None, extra_parameters=None, workdir=None):
    """[(name, argv)] of launch/dynamics.launch.py: the dynamics node with config/dynamics.yaml."""
    config = config or share_file("config", "dynamics.yaml")
    files = [config, description_file]
    if extra_parameters:
        files.append(params_file(extra_parameters, Path(workdir or Path(description_file).parent) / "dynamics_overrides.yaml"))
    return [("dynamics_node", executable("dynamics_node") + ros_args(files, namespace))]


def simulation_graph(description_file, namespace=None, dynamics_parameters=None, simulator_parameters=None,
                     trajectory_parameters=None, workdir=None):
    """[(name, argv)] of launch/simulation.launch.py: simulator, dynamics node, trajectory publisher.

    Every node gets its config/*.yaml file and the robot_description params file; the dynamics node
    also gets :data:`SIMULATION_DYNAMICS_OVERRIDES`. ``*_parameters`` add further overrides (the
    demo's duration, the PD-only comparison run).
    """
    workdir = Path(workdir or Path(description_file).parent)
    layers = {
        "simulator_node": (share_file("config", "simulator.yaml"), simulator_parameters or {}),
        "dynamics_node": (share_file("config", "dynamics.yaml"),
                          {**SIMULATION_DYNAMICS_OVERRIDES, **(dynamics_parameters or {})}),
        "trajectory_publisher": (share_file("config", "trajectory_publisher.yaml"), trajectory_parameters or {}),
    }
    graph = []
    for name, (config, overrides) in layers.items():
        files = [config, description_file]
        if overrides:
            files.append(params_file(overrides, workdir / f"{name}_overrides.yaml"))
        graph.append((name, executable(name) + ros_args(files, namespace)))
    return graph


def start_graph(graph, env, log_dir):
    """Start every (name, argv) of a graph; returns the :class:`NodeProcess` list."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    processes = []
    try:
        for name, argv in graph:
            processes.append(NodeProcess(name, argv, env, log_dir / f"{name}.log"))
    except BaseException:
        stop_all(processes)
        raise
    return processes
