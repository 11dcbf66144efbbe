"""``robot-dynamics sim``: the simulation graph of ``launch/simulation.launch.py`` as plain processes,
kept running until Ctrl-C or SIGTERM.

The graph is :func:`robot_dynamics.tools.graph.simulation_graph` (the launch file's), started so
that the arm is never left without a drive:

1. the simulator, which holds every joint at the start pose until its first command
   (:data:`~robot_dynamics.tools.graph.START_UP`: ``on_command_timeout: hold_position``, which also
   holds the arm should the dynamics node stop); up when it publishes ``joint_states``;
2. the dynamics node, which holds gravity (``effort_command`` = g(q)) until it has a desired motion
   (``desired_state``; ``desired_pose`` with ``--command-source task_space``); up when it answers
   with ``gravity_torques``;
3. the trajectory publisher (unless ``--no-trajectory``), which publishes nothing until its
   ``~/restart`` (``autostart: false``), called once the dynamics node is up and this command has
   heard the start pose held for :data:`HOLD_BEFORE_MOTION` s: its trajectory then starts at the
   start pose, at rest; the loop is closed when the desired motion and ``computed_torques`` flow.

All three start at once (each takes seconds to import and be discovered); the order is in what
they wait for.

It then says what runs where (domain, namespace, nodes, topics, clock, logs) and how far the arm
moved before its first desired motion, and keeps the nodes running. Every node ends with this
process (:func:`~robot_dynamics.child_processes.die_with_parent`); Ctrl-C or SIGTERM stops them
(SIGINT, then SIGTERM, then SIGKILL) and the command exits with status 0 if all of them ended cleanly.

Clocks: with ``--sim-time`` the simulator publishes the graph's clock and the other nodes follow it.
Without a namespace (or with ``--global-clock``) that is ``/clock``; a graph in namespace ``NS`` has
``/NS/clock`` of its own, so two simulators never interleave their times on one topic. Before it
starts anything the command looks for a graph already publishing its ``joint_states`` or its clock
and refuses to start a second one there (:func:`~robot_dynamics.tools.sim_watch.second_graph`); one
it discovers only while its nodes start is refused then, the nodes stopped
(:func:`~robot_dynamics.tools.sim_watch.graph_beside_ours`).

Exit status: 0 after a clean stop; 2 for a bad argument (:class:`ArgumentError`), before anything
starts; 1 when the graph cannot start or a node ends.
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import graph, processes
from .sim_watch import GraphWatch, graph_beside_ours, second_graph

START_TIMEOUT = 45.0  # s: one node's start-up and discovery on a busy 2-core machine
#: s of joint states at the start pose heard before the trajectory starts: the hold is measured over that
HOLD_BEFORE_MOTION = 0.5


class SimError(RuntimeError):
    """The graph cannot start or a node of it ended; the message says which and why."""

    status = 1  # the command's exit status


class ArgumentError(SimError):
    """A bad argument or input file: exit status 2, as for every command's bad input."""

    status = 2


def add_arguments(parser):
    parser.add_argument("--robot", default="arm7_gripper", metavar="URDF",
                        help="URDF file or bundled robot name (default arm7_gripper)")
    parser.add_argument("--namespace", default="", metavar="NS", help="namespace of the three nodes and their topics")
    parser.add_argument("--params", type=Path, default=None, metavar="FILE",
                        help="a ROS 2 params file of yours, applied last to every node: its sections name the "
                             "nodes they set (robot_dynamics_simulator, robot_dynamics, trajectory_publisher, "
                             "or /** for all)")
    parser.add_argument("--sim-time", action="store_true",
                        help="the simulator publishes the clock (/clock, or /NS/clock in a namespace) and the "
                             "other nodes follow it (use_sim_time)")
    parser.add_argument("--global-clock", action="store_true",
                        help="with --sim-time and --namespace: publish /clock rather than /NS/clock (one graph "
                             "per domain may)")
    parser.add_argument("--no-trajectory", action="store_true",
                        help="no trajectory publisher: the arm holds its start pose until you publish desired_state")
    parser.add_argument("--command-source", choices=graph.COMMAND_SOURCES, default="computed",
                        help="what the dynamics node sends the simulator (default computed: the computed-torque law)")
    processes.add_domain_arguments(parser)
    parser.add_argument("--log-dir", type=Path, default=None, metavar="DIR",
                        help="write the nodes' logs to DIR and keep them (default: a temporary directory, "
                             "removed after a clean stop)")
    parser.add_argument("--duration", type=float, default=None, metavar="S",
                        help="stop after S seconds (default: run until Ctrl-C or SIGTERM)")


def check_arguments(args):
    """Raise :class:`ArgumentError` for a bad argument, :class:`SimError` for a missing dependency,
    before anything starts."""
    if args.duration is not None and not args.duration > 0:
        raise ArgumentError("--duration must be positive")
    if args.global_clock and not args.sim_time:
        raise ArgumentError("--global-clock needs --sim-time")
    namespace = args.namespace.strip("/")
    if namespace and not all(part and (part[0].isalpha() or part[0] == "_")
                             and all(c.isalnum() or c == "_" for c in part) for part in namespace.split("/")):
        raise ArgumentError(f"--namespace {args.namespace!r}: ROS 2 names are letters, digits and _ "
                       f"(not starting with a digit), separated by /")
    if args.params is not None:
        if not args.params.is_file():
            raise ArgumentError(f"--params: no such file {str(args.params)!r}")
        try:
            graph.params_sections(args.params)
        except ValueError as error:
            raise ArgumentError(f"--params: {error}") from None
    try:
        processes.choose_domain(args.domain_id, args.isolated)
    except ValueError as error:
        raise ArgumentError(str(error)) from None
    for module in ("rclpy", "sensor_msgs", "trajectory_msgs", "geometry_msgs", "rosgraph_msgs", "std_srvs"):
        try:
            __import__(module)
        except ImportError:
            raise SimError(f"sim needs {module}, which is not installed (pip install 'robot_dynamics[ros]')") from None


def clock_topic(args):
    """The clock this graph publishes and follows (None without ``--sim-time``)."""
    if not args.sim_time:
        return None
    namespace = args.namespace.strip("/")
    return graph.CLOCK if args.global_clock or not namespace else f"/{namespace}/clock"


def run_sim(args, load, out=None):
    """``robot-dynamics sim``, its arguments checked, on the robot ``load()`` returns as ``(model, path,
    load warnings)`` (compiling the kernels first if they are not in numba's cache: meanwhile, DDS
    discovery looks for a graph already running here); returns the exit status once the graph is
    stopped. Raises :class:`SimError` if it cannot start or a node ends."""
    out = out or sys.stdout

    def say(line=""):
        print(line, file=out, flush=True)

    namespace = args.namespace.strip("/")
    clock = clock_topic(args)
    domain_warnings = []
    env, domain = processes.graph_environment(args, domain_warnings.append)
    watch = GraphWatch(namespace, clock, desired_topic(args), trajectory=not args.no_trajectory)  # discovery starts
    try:
        nodes_to_start = _prepare(args, load(), watch, domain, domain_warnings, say)
    except BaseException:
        watch.close()
        raise
    workdir = None if args.log_dir else Path(tempfile.mkdtemp(prefix="robot_dynamics_sim_"))
    log_dir = Path(args.log_dir or workdir)
    running, up, clean = [], False, False
    started = time.monotonic()
    try:
        running += processes.start_graph(nodes_to_start, env, log_dir, namespace=namespace)
        for node, process in zip(nodes_to_start, running):  # (in order: the motion waits for the dynamics node)
            _wait_for(node, running, watch, log_dir,
                      lambda: graph_beside_ours(watch.node, namespace, clock, domain, REMEDY))
            say(f"  {node.executable:<21} up after {time.monotonic() - started:4.1f} s  (pid {process.pid})")
        up = True
        _report(say, nodes_to_start, namespace, clock, watch, log_dir, args)
        _keep_running(running, args.duration)
        clean = True
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (processes.interrupt_on_sigterm): the normal end once up
        clean = up
        if not clean:
            raise
    finally:
        statuses = processes.stop_all(running)
        watch.close()
        ok = all(status == 0 for status in statuses.values())
        if running:
            say(f"stopped {', '.join(f'{name} ({status})' for name, status in statuses.items())}"
                + ("" if ok else f"; node logs kept in {log_dir}"))
        if workdir is not None and ok and clean:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


def _prepare(args, loaded, watch, domain, domain_warnings, say):
    """The nodes to start on the robot ``loaded`` (model, path, warnings), once said what and where;
    SimError if a graph already runs there (as ``watch`` sees it since it was made)."""
    model, path, load_warnings = loaded
    watch.expect_joints(model.joint_names)
    namespace, clock = args.namespace.strip("/"), clock_topic(args)
    nodes_to_start = graph.simulation_graph(
        path.read_text(), use_sim_time=args.sim_time, command_source=args.command_source,
        clock_topic=clock or graph.CLOCK, extra_params=args.params, trajectory=not args.no_trajectory,
        autostart=False)
    if args.params is not None and len(graph.unused_layers(nodes_to_start, namespace)) == len(nodes_to_start):
        raise ArgumentError(f"--params {str(args.params)!r}: none of its sections names a node of the graph "
                            f"({', '.join(graph.fully_qualified_name(namespace, n.name) for n in nodes_to_start)})")
    say(f"robot_dynamics sim: {model.name} ({model.nv} coordinates) from {path}")
    for warning in load_warnings + domain_warnings:
        say(f"  warning: {warning}")
    say(f"  {domain}")
    refusal = second_graph(watch.node, namespace, clock, domain, REMEDY, watch.created)
    if refusal:
        raise SimError(refusal)
    return nodes_to_start


#: what a refusal for a graph already running in the namespace advises
REMEDY = "give this one another --namespace"


def desired_topic(args):
    """The topic of the desired motion: ``desired_pose`` in task space (with ``desired_twist`` and
    ``desired_accel``, stamped alike), else ``desired_state``."""
    return "desired_pose" if args.command_source == "task_space" else "desired_state"


def _wait_for(node, running, watch, log_dir, other_graph):
    """Wait until ``node`` (just started) answers; SimError if a node ends, it takes too long, or
    ``other_graph()`` (meanwhile and then) gives a refusal: a graph already there, discovered late."""
    ready = {"simulator_node": lambda: watch.count("joint_states") > 0,
             "dynamics_node": watch.dynamics_ready,
             "trajectory_publisher": lambda: _motion_flows(watch)}
    waiting_for = {"simulator_node": "joint_states", "dynamics_node": "gravity_torques",
                   "trajectory_publisher": f"{watch.desired} and computed_torques"}
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        refusal = other_graph()
        if refusal:
            raise SimError(refusal)
        if ready[node.executable]():
            return
        _check_alive(running)
        if watch.error is not None:
            raise SimError(f"this command stopped listening to the graph ({watch.error!r}): it cannot tell "
                           f"when {node.executable} is up (node logs in {log_dir})")
        if time.monotonic() > deadline:
            raise SimError(f"{node.executable}: no {waiting_for[node.executable]} after {START_TIMEOUT:.0f} s "
                           f"(node logs in {log_dir})")
        time.sleep(0.05)


def _motion_flows(watch):
    """Whether the desired motion and ``computed_torques`` flow; (waited for once the dynamics node is
    up) the motion is started after :data:`HOLD_BEFORE_MOTION` s of joint states at the start pose,
    unless it already flows (a params file's ``autostart: true``)."""
    if watch.count(watch.desired) == 0:
        if watch.held_for() >= HOLD_BEFORE_MOTION:
            watch.start_motion()
        return False
    return watch.count("computed_torques") > 0


def _check_alive(running):
    for process in running:
        if not process.running():
            raise SimError(f"{process.name} ended with status {process.process.returncode}: "
                           f"{process.log_tail(1) or 'no output'} (log: {process.log_path})")


def _report(say, nodes, namespace, clock, watch, log_dir, args):
    """What runs where, and how still the arm stood before the first trajectory."""
    prefix = "/" + namespace if namespace else ""
    desired = watch.desired
    motion = (f"{prefix}/desired_pose, {prefix}/desired_twist, {prefix}/desired_accel" if desired == "desired_pose"
              else f"{prefix}/desired_state")
    say(f"  namespace     {prefix or '/ (none)'}")
    say(f"  nodes         {', '.join(graph.fully_qualified_name(namespace, n.name) for n in nodes)}")
    say(f"  topics        {prefix}/joint_states (simulator -> dynamics node), {prefix}/effort_command "
        f"(dynamics node -> simulator), {motion} ("
        + ("you -> dynamics node" if args.no_trajectory else "trajectory publisher -> dynamics node")
        + f"), {prefix}/computed_torques, {prefix}/gravity_torques, /diagnostics")
    say(f"  services      {prefix}/robot_dynamics_simulator/reset, .../pause"
        + ("" if args.no_trajectory else f", {prefix}/trajectory_publisher/restart"))
    say(f"  clock         {clock + ' (simulated time, published by the simulator)' if clock else 'wall clock'}")
    say(f"  logs          {log_dir}")
    error, seconds, states = watch.hold()  # (the measurement ends here, with or without a trajectory)
    if args.no_trajectory:
        say(f"  start pose    held (the dynamics node's gravity hold) until the first {prefix}/{desired}")
    elif states == 0:
        say(f"  start pose    not measured: no joint state heard before the first command ({desired})")
    else:
        say(f"  start pose    held within {error:.1e} rad over {seconds:.1f} s ({states} joint states) "
            f"before the first command ({desired})")
    say("running: Ctrl-C (or SIGTERM) stops every node" if args.duration is None
        else f"running for {args.duration:g} s")


def _keep_running(running, duration):
    """Until the duration is over (or forever); SimError when a node ends."""
    end = None if duration is None else time.monotonic() + duration
    while end is None or time.monotonic() < end:
        _check_alive(running)
        time.sleep(0.2)
