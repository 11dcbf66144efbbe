"""``robot-dynamics demo``: a computed-torque loop closed over real ROS 2 topics, and a PD-only run.

The demo starts the graph of ``launch/simulation.launch.py`` as subprocesses of the installed
executables (``simulator_node``, ``dynamics_node``, ``trajectory_publisher``, each with its
``config/*.yaml``), on your ``ROS_DOMAIN_ID`` (a private one with ``--isolated``) with localhost-only
discovery unless ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says otherwise:

    trajectory_publisher --desired_state--> dynamics_node --effort_command--> simulator_node
    simulator_node --joint_states--> dynamics_node

Run 1 (computed torque): the dynamics node publishes
``tau = M(q) (qdd_d + kd (qd_d - qd) + kp (q_d - q)) + h(q, qd)`` as the simulator's
``effort_command``. Run 2 (PD only, for comparison): the dynamics node is told
``command_source: none`` and this process closes the loop with a model-free joint PD controller
``tau = Kp (q_d - q) + Kd (qd_d - qd)`` whose gains give each joint the same stiffness and damping as
the computed-torque loop at the start pose (``Kp = kp diag M(q0)``, ``Kd = kd diag M(q0)``). The same
desired trajectory drives both runs.

The demo records ``joint_states``, ``desired_state``, ``computed_torques`` and ``/diagnostics``,
prints a summary (model, rates, latency, RMS tracking error of both runs) and writes a PNG.
This module sets the demo up and runs it; :mod:`.analysis` measures the runs, :mod:`.figure` draws
them, :mod:`.recorder` is the ROS side, :mod:`.closed_loop` one run. rclpy and matplotlib are
imported only when the demo runs.
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np

from ...nodes.common.command_line import EXECUTABLES
from .. import graph, processes
from .analysis import DemoArgumentError, DemoError, analyse, error_mask, summary_lines
from .closed_loop import Progress, closed_loop, pd_gains
from .figure import plot
from .recorder import Recorder

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_demo.png"


def add_arguments(parser):
    parser.add_argument("--robot", default="arm7_gripper", metavar="URDF",
                        help="URDF file or bundled robot name (default arm7_gripper)")
    parser.add_argument("--duration", type=float, default=5.0, metavar="S",
                        help="seconds of closed loop per run (default 5)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PNG",
                        help=f"where to write the plot (default {DEFAULT_OUTPUT})")
    parser.add_argument("--no-pd", action="store_true", help="skip the PD-only comparison run")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    processes.add_domain_arguments(parser)
    parser.add_argument("--log-dir", type=Path, default=None, metavar="DIR",
                        help="keep the nodes' logs in DIR (default: a temporary directory, removed)")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument("--task-space", nargs="?", const="computed_torque", choices=("computed_torque", "impedance"),
                        default=None, metavar="LAW", help="close the loop in task space instead: the tool frame draws "
                        "a circle, the dynamics node runs LAW (computed_torque, the default, or impedance)")
    parser.add_argument("--radius", type=float, default=0.05, metavar="M", help="--task-space: circle radius (0.05)")
    parser.add_argument("--frequency", type=float, default=0.25, metavar="HZ",
                        help="--task-space: turns per second (0.25)")


def check_arguments(args):
    """Raise :class:`DemoArgumentError` for a bad argument, :class:`DemoError` for a missing dependency.
    The CLI calls it before it loads the robot and, on the first run after installing, compiles the
    nodes' kernels."""
    if not args.duration > 0:
        raise DemoArgumentError("--duration must be positive")
    try:
        processes.choose_domain(args.domain_id, args.isolated)
    except ValueError as error:
        raise DemoArgumentError(str(error)) from None
    if args.task_space and not (0 < args.radius <= 1.0 and 0 <= args.frequency <= 5.0):
        raise DemoArgumentError("--radius must be in (0, 1] m and --frequency in [0, 5] Hz")
    for module, extra in (("rclpy", "ros"), ("sensor_msgs", "ros"), ("trajectory_msgs", "ros"),
                          ("std_srvs", "ros"), ("geometry_msgs", "ros")) + (() if args.no_plot else (("matplotlib", "demo"),)):
        try:
            __import__(module)
        except ImportError:
            raise DemoError(f"the demo needs {module}, which is not installed "
                            f"(pip install 'robot_dynamics[{extra}]')") from None
    for name in processes.NODE_EXECUTABLES:
        try:
            __import__(EXECUTABLES[name].node.partition(":")[0])
        except ImportError as error:
            raise DemoError(f"the demo needs the {name} executable, which cannot be imported: {error}") from None


def run_demo(args, model, path, load_warnings=()):
    """``robot-dynamics demo`` on ``model`` (read from ``path``), its arguments checked
    (:func:`check_arguments`) and its kernels compiled; returns the exit status.

    Raises :class:`DemoError` for a graph that does not run.
    """
    print(f"robot_dynamics demo: {model.name} ({model.nv} coordinates) from {path}", flush=True)
    # this process (the recorder) joins the same graph
    env, domain = processes.graph_environment(args, lambda text: print(f"  warning: {text}", flush=True))
    print(f"  simulator + dynamics node + trajectory publisher, {args.duration:g} s per run", flush=True)
    print(f"  {domain}", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="robot_dynamics_demo_"))
    log_dir = args.log_dir or workdir / "logs"
    urdf_text = path.read_text()
    progress = Progress(args.quiet)

    dynamics_config = graph.config_values(graph.config_file("dynamics.yaml"))
    kp = float(np.atleast_1d(dynamics_config.get("kp", 100.0))[0])
    kd = float(np.atleast_1d(dynamics_config.get("kd", 20.0))[0])
    q0, _, _ = graph.robot_setup(model)
    recorder = Recorder(model)
    failed = True
    try:
        runs = [closed_loop(
            recorder, "computed torque",
            graph.simulation_graph(urdf_text), env,
            Path(log_dir) / "computed_torque",
            args.duration, progress)]
        if not args.no_pd:
            gains = pd_gains(model, q0, kp, kd)
            runs.append(closed_loop(
                recorder, "PD only",
                graph.simulation_graph(urdf_text, command_source="none"),
                env, Path(log_dir) / "pd_only", args.duration, progress, pd_gains=gains, first=False))
        failed = False
    finally:
        recorder.close()
        kept = failed and Path(log_dir).exists()  # (no logs: it started nothing where a graph ran)
        if kept:
            progress.done(f"node logs kept in {log_dir}")
        if not (kept and args.log_dir is None):
            shutil.rmtree(workdir, ignore_errors=True)

    metrics = [analyse(run, *error_mask(model)) for run in runs]
    ct, pd = metrics[0], (metrics[1] if len(metrics) > 1 else None)
    for line in summary_lines(model, path, ct, pd, runs, load_warnings):
        print(line)
    if pd is not None:
        print(f"  PD gains     Kp = {kp:g} diag M(q0), Kd = {kd:g} diag M(q0) (the computed-torque loop's "
              f"stiffness at the start pose, without the model)")
    if not args.no_plot:
        output = plot(metrics, list(model.joint_names), args.output,
                      f"robot_dynamics demo: {model.name}, computed torque vs PD only ({args.duration:g} s each)",
                      model.joint_types)
        print(f"  plot         {output.resolve()}")
    return 0
