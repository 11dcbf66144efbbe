"""``robot-dynamics demo``: a computed-torque loop closed over real ROS 2 topics, and a PD-only run.

The demo starts the graph of ``launch/simulation.launch.py`` as subprocesses of the installed
executables (``simulator_node``, ``dynamics_node``, ``trajectory_publisher``, each with its
``config/*.yaml``), on a private ``ROS_DOMAIN_ID`` with localhost-only discovery:

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
rclpy and matplotlib are imported here only, inside :func:`run_demo`.
"""

import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..control import joint_pd, position_error
from . import graph, processes

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_demo.png"
STALL = 0.010  # s between two joint states (5 periods at 500 Hz): the simulator did not keep up
SETTLE_TIMEOUT = 45.0  # s: start-up of three Python processes + discovery on a busy 2-core machine


class DemoError(Exception):
    """Printed as one line by the CLI."""


def add_arguments(parser):
    parser.add_argument("--robot", default="arm7_gripper", metavar="URDF",
                        help="URDF file or bundled robot name (default arm7_gripper)")
    parser.add_argument("--duration", type=float, default=5.0, metavar="S",
                        help="seconds of closed loop per run (default 5)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PNG",
                        help=f"where to write the plot (default {DEFAULT_OUTPUT})")
    parser.add_argument("--no-pd", action="store_true", help="skip the PD-only comparison run")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    parser.add_argument("--domain-id", type=int, default=None, metavar="N",
                        help="ROS_DOMAIN_ID of the demo graph (default: a random private one)")
    parser.add_argument("--log-dir", type=Path, default=None, metavar="DIR",
                        help="keep the nodes' logs in DIR (default: a temporary directory, removed)")
    parser.add_argument("--quiet", action="store_true", help="no progress line")


# ------------------------------------------------------------------------------------------------
# recording (pure data) and analysis (pure numpy): testable without ROS
# ------------------------------------------------------------------------------------------------

@dataclass
class Series:
    """Time-stamped samples of one topic: receive time (monotonic s), header stamp (s), values."""

    received: list = field(default_factory=list)
    stamp: list = field(default_factory=list)
    values: list = field(default_factory=list)

    def add(self, received, stamp, values):
        self.received.append(received)
        self.stamp.append(stamp)
        self.values.append(values)

    def __len__(self):
        return len(self.received)


@dataclass
class Run:
    """Everything recorded during one closed-loop run."""

    label: str
    joint_names: tuple
    state: Series = field(default_factory=Series)      # values: (q, qd, effort) in joint_names order
    desired: Series = field(default_factory=Series)    # values: (q_d, qd_d, qdd_d) in joint_names order
    torques: Series = field(default_factory=Series)    # computed_torques efforts
    diagnostics: dict = field(default_factory=dict)    # last KeyValues per status name
    start: float = 0.0                                  # monotonic s: recording window
    end: float = 0.0


def _clock_of(run):
    """'stamp' if the desired and joint-state stamps are on one clock (wall or simulated), else 'received'.

    On one clock, a desired point and a joint state received together carry nearly equal stamps.
    """
    if not len(run.state) or not len(run.desired):
        return "received"
    received = np.asarray(run.desired.received)
    k = np.clip(np.searchsorted(received, np.asarray(run.state.received)), 0, len(received) - 1)
    difference = np.asarray(run.state.stamp) - np.asarray(run.desired.stamp)[k]
    return "stamp" if np.median(np.abs(difference)) < 0.05 else "received"


def desired_at(desired, times, clock):
    """Desired positions at ``times``: the latest desired point, extrapolated with its qd, qdd."""
    t_desired = np.asarray(desired.stamp if clock == "stamp" else desired.received)
    q = np.array([v[0] for v in desired.values])
    qd = np.array([v[1] for v in desired.values])
    qdd = np.array([v[2] for v in desired.values])
    k = np.searchsorted(t_desired, times, side="right") - 1
    valid = k >= 0
    k = np.clip(k, 0, len(t_desired) - 1)
    dt = (np.asarray(times) - t_desired[k])[:, None]
    out = q[k] + qd[k] * dt + 0.5 * qdd[k] * dt**2
    out[~valid] = np.nan
    return out


@dataclass
class Metrics:
    label: str
    duration: float
    state_rate: float
    desired_rate: float
    torque_rate: float
    rms_error: np.ndarray        # per joint, over the window
    rms_total: float             # sqrt(mean over joints and time of e^2), over the masked joints
    max_error: float
    latency_ms: tuple            # p50, p99, max of joint_states -> computed_torques (or ())
    times: np.ndarray
    q: np.ndarray
    q_desired: np.ndarray
    effort: np.ndarray
    error_norm: np.ndarray       # |q_d - q| over the masked joints, per sample
    max_gap_ms: float = 0.0      # longest pause between two joint states (stamps), ms
    stalls: int = 0              # pauses longer than STALL (the simulator was starved of CPU)
    unit: str = "rad"            # of the masked joints' errors


def error_mask(model):
    """(mask, unit, continuous): the revolute joints in rad if there are any (the gripper's metres
    apart), else all in m; and ``model.continuous``, for :func:`analyse`."""
    mask = np.array([kind != "prismatic" for kind in model.joint_types])
    return ((mask, "rad") if mask.any() else (~mask, "m")) + (model.continuous,)


def analyse(run, revolute_mask=None, unit="rad", continuous=None):
    """Rates, RMS tracking error and latency of one run, over its recording window. The error is the
    control law's (:func:`control.position_error`): on ``continuous`` joints a whole turn is no error."""
    received = np.asarray(run.state.received)
    in_window = (received >= run.start) & (received <= run.end)
    if in_window.sum() < 10:
        raise DemoError(f"{run.label}: only {int(in_window.sum())} joint states recorded in the window")
    clock = _clock_of(run)
    times = np.asarray(run.state.stamp if clock == "stamp" else run.state.received)[in_window]
    q = np.array([v[0] for v, keep in zip(run.state.values, in_window) if keep])
    effort = np.array([v[2] for v, keep in zip(run.state.values, in_window) if keep])
    q_desired = desired_at(run.desired, times, clock)
    ok = np.all(np.isfinite(q_desired), axis=1)
    errors = position_error(q_desired, q, continuous)
    error = errors[ok]
    mask = np.ones(q.shape[1], bool) if revolute_mask is None else np.asarray(revolute_mask)
    duration = run.end - run.start

    def rate(series):
        r = np.asarray(series.received)
        return float(((r >= run.start) & (r <= run.end)).sum() / duration) if len(r) else 0.0

    latency = ()
    if len(run.torques):
        arrival = {}
        for t, s in zip(run.state.received, run.state.stamp):
            arrival.setdefault(round(s, 9), t)
        lags = [t - arrival[round(s, 9)] for t, s in zip(run.torques.received, run.torques.stamp)
                if round(s, 9) in arrival and run.start <= t <= run.end]
        if lags:
            lags = np.asarray(lags) * 1e3
            latency = (float(np.percentile(lags, 50)), float(np.percentile(lags, 99)), float(lags.max()))
    return Metrics(
        label=run.label, duration=duration,
        state_rate=rate(run.state), desired_rate=rate(run.desired), torque_rate=rate(run.torques),
        rms_error=np.sqrt(np.mean(error**2, axis=0)) if len(error) else np.full(q.shape[1], np.nan),
        rms_total=float(np.sqrt(np.mean(error[:, mask] ** 2))) if len(error) else math.nan,
        max_error=float(np.abs(error[:, mask]).max()) if len(error) else math.nan,
        latency_ms=latency,
        times=times - times[0], q=q, q_desired=q_desired, effort=effort,
        error_norm=np.linalg.norm(errors[:, mask], axis=1),
        max_gap_ms=float(np.diff(times).max() * 1e3) if len(times) > 1 else 0.0,
        stalls=int((np.diff(times) > STALL).sum()),
        unit=unit,
    )


# ------------------------------------------------------------------------------------------------
# the plot
# ------------------------------------------------------------------------------------------------

def plot(metrics, joint_names, path, title):
    """PNG: desired vs actual positions (both runs), applied torques, tracking error (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ct = metrics[0]
    pd = metrics[1] if len(metrics) > 1 else None
    n = len(joint_names)
    colors = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    fig.suptitle(title, fontsize=14)

    def positions(ax, m):
        for j in range(n):
            ax.plot(m.times, m.q_desired[:, j], color=colors[j % 10], lw=5, alpha=0.3, solid_capstyle="butt")
            ax.plot(m.times, m.q[:, j], color=colors[j % 10], lw=1.3)
        ax.set_title(f"{m.label}: joint positions, actual (thin) and desired (wide, light)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("position (rad; gripper: m)")
        ax.grid(alpha=0.3)

    positions(axes[0, 0], ct)
    if pd is not None:
        positions(axes[0, 1], pd)
        low = min(axes[0, 0].get_ylim()[0], axes[0, 1].get_ylim()[0])
        high = max(axes[0, 0].get_ylim()[1], axes[0, 1].get_ylim()[1])
        axes[0, 0].set_ylim(low, high)
        axes[0, 1].set_ylim(low, high)
    else:
        axes[0, 1].axis("off")

    ax = axes[1, 0]
    for j in range(n):
        ax.plot(ct.times, ct.effort[:, j], color=colors[j % 10], lw=1.2)
    ax.set_title(f"{ct.label}: applied joint torques (joint_states.effort)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("torque (N m; gripper: N)")
    ax.grid(alpha=0.3)

    ax = axes[1, 1]
    for m, style in ((ct, "-"), (pd, "--")):
        if m is None:
            continue
        ax.semilogy(m.times, np.maximum(m.error_norm, 1e-7), ls=style, lw=1.5, color="k" if m is ct else "tab:red",
                    label=f"{m.label}: RMS {m.rms_total:.1e} {m.unit}, max {m.max_error:.1e} {m.unit}")
    ax.set_title("tracking error |q_d - q| of the " + ("revolute joints" if ct.unit == "rad" else "joints"))
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"error ({ct.unit})")
    ax.grid(alpha=0.3, which="both")
    top = max(float(np.nanmax(m.error_norm)) for m in metrics if m is not None)
    ax.set_ylim(1e-6, max(10 * top, 1e-3))
    ax.legend(loc="lower right", fontsize=10, framealpha=0.9)

    handles = [plt.Line2D([], [], color=colors[j % 10], lw=2) for j in range(n)]
    fig.legend(handles, joint_names, loc="lower center", ncol=min(n, 8), fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------
# the ROS side: a recorder node in this process (and the PD controller of run 2)
# ------------------------------------------------------------------------------------------------

class _Recorder:
    """An rclpy node that records the demo topics and, in the PD run, closes the loop itself."""

    def __init__(self, model, namespace=""):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        self._Float64MultiArray = Float64MultiArray
        self.model = model
        self.names = tuple(model.joint_names)
        self.continuous = model.continuous
        self.context = Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(f"robot_dynamics_demo_{os.getpid()}", namespace=namespace, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.run = None
        self.pd_gains = None
        self._latest_desired = None
        self.command = self.node.create_publisher(
            Float64MultiArray, "effort_command", QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        self.node.create_subscription(JointState, "joint_states", self._on_state, qos_profile_sensor_data)
        self.node.create_subscription(JointTrajectory, "desired_state", self._on_desired, qos_profile_sensor_data)
        self.node.create_subscription(JointState, "computed_torques", self._on_torques, qos_profile_sensor_data)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        self._index_cache = {}
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            while self.context.ok():
                self.executor.spin_once(timeout_sec=0.05)
        except Exception:  # noqa: BLE001 - the context is shut down at the end of the demo
            pass

    def close(self):
        self.context.try_shutdown()
        self._thread.join(5.0)
        self.node.destroy_node()

    @staticmethod
    def _seconds(stamp):
        return stamp.sec + stamp.nanosec * 1e-9

    def _order(self, names):
        """Indices into a message's arrays giving model order, or None if a joint is missing."""
        key = tuple(names)
        if key not in self._index_cache:
            position = {name: i for i, name in enumerate(key)}
            self._index_cache[key] = (np.array([position[n] for n in self.names])
                                      if all(n in position for n in self.names) else None)
        return self._index_cache[key]

    def _on_state(self, msg):
        now = time.monotonic()
        order = self._order(msg.name)
        if order is None or len(msg.position) != len(msg.name):
            return
        q = np.asarray(msg.position)[order]
        qd = np.asarray(msg.velocity)[order] if len(msg.velocity) == len(msg.name) else np.zeros(len(order))
        effort = np.asarray(msg.effort)[order] if len(msg.effort) == len(msg.name) else np.full(len(order), np.nan)
        with self.lock:
            run, gains, desired = self.run, self.pd_gains, self._latest_desired
            if run is not None:
                run.state.add(now, self._seconds(msg.header.stamp), (q, qd, effort))
        if gains is not None and desired is not None and now - desired[0] < 0.1:
            _, q_d, qd_d, qdd_d, received = desired
            dt = now - received
            q_target = q_d + qd_d * dt + 0.5 * qdd_d * dt * dt
            tau = joint_pd(gains[0], gains[1], position_error(q_target, q, self.continuous), qd_d + qdd_d * dt - qd)
            self.command.publish(self._Float64MultiArray(data=tau.tolist()))

    def _on_desired(self, msg):
        now = time.monotonic()
        if not msg.points:
            return
        position = {name: i for i, name in enumerate(msg.joint_names)}
        point = msg.points[0]
        n = len(self.names)

        def values(array, default):
            if len(array) != len(msg.joint_names):
                return np.full(n, default)
            return np.array([array[position[name]] if name in position else default for name in self.names])

        q_d = values(point.positions, np.nan)
        missing = [name for name, value in zip(self.names, q_d) if not np.isfinite(value)]
        if missing:  # joints without a desired value (e.g. the gripper) hold their start value
            q_d[~np.isfinite(q_d)] = 0.0
        qd_d, qdd_d = values(point.velocities, 0.0), values(point.accelerations, 0.0)
        with self.lock:
            self._latest_desired = (now, q_d, qd_d, qdd_d, now)
            if self.run is not None:
                self.run.desired.add(now, self._seconds(msg.header.stamp), (q_d, qd_d, qdd_d))

    def _on_torques(self, msg):
        now = time.monotonic()
        order = self._order(msg.name)
        if order is None or len(msg.effort) != len(msg.name):
            return
        with self.lock:
            if self.run is not None:
                self.run.torques.add(now, self._seconds(msg.header.stamp), np.asarray(msg.effort)[order])

    def _on_diagnostics(self, msg):
        with self.lock:
            if self.run is not None:
                for status in msg.status:
                    self.run.diagnostics[status.name] = {kv.key: kv.value for kv in status.values}

    def counts(self):
        with self.lock:
            run = self.run
            return (len(run.state), len(run.desired), len(run.torques)) if run is not None else (0, 0, 0)

    def _call(self, srv_type, service, request, timeout=10.0):
        client = self.node.create_client(srv_type, service)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                return False
            done = threading.Event()
            future = client.call_async(request)
            future.add_done_callback(lambda _f: done.set())
            return done.wait(timeout) and future.result() is not None and bool(future.result().success)
        finally:
            self.node.destroy_client(client)

    def restart_motion(self):
        """Simulator back to its initial state and the trajectory back to t = 0, in step.

        The simulator is paused, reset and given 0.1 s for the messages from before the reset to
        drain; then the trajectory restarts and the simulator resumes right after, so the loop
        starts at rest at home with the trajectory at t = 0 (within a millisecond or two, while
        the trajectory's smooth start is still flat). Returns the services that failed.
        """
        from std_srvs.srv import SetBool, Trigger

        simulator = "robot_dynamics_simulator"
        steps = [
            (SetBool, f"{simulator}/pause", SetBool.Request(data=True)),
            (Trigger, f"{simulator}/reset", Trigger.Request()),
            None,
            (Trigger, "trajectory_publisher/restart", Trigger.Request()),
            (SetBool, f"{simulator}/pause", SetBool.Request(data=False)),
        ]
        for step in steps:
            if step is None:
                time.sleep(0.1)
            elif not self._call(*step):
                return [step[1]]
        return []


# ------------------------------------------------------------------------------------------------
# orchestration
# ------------------------------------------------------------------------------------------------

class _Progress:
    """One updating line on a terminal; a line per second otherwise (logs, CI)."""

    def __init__(self, quiet=False, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self._last = 0.0

    def update(self, text, force=False):
        if self.quiet:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()
        elif force or now - self._last >= 1.0:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last = now

    def done(self, text):
        if self.quiet:
            return
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()


def _graph_died(nodes):
    for node in nodes:
        if not node.running():
            return node
    return None


def _closed_loop(recorder, label, nodes_to_start, env, log_dir, duration, progress, pd_gains=None, first=True):
    """Start the graph, wait for the loop to run, record ``duration`` seconds, stop the graph."""
    nodes = processes.start_graph(nodes_to_start, env, log_dir)
    run = Run(label=label, joint_names=recorder.names)
    try:
        with recorder.lock:
            recorder.run = run
        started = time.monotonic()
        need_torques = pd_gains is None
        while True:  # wait for the nodes to start, load the model and discover each other
            states, desired, torques = recorder.counts()
            if states and desired and (torques or not need_torques):
                break
            waited = time.monotonic() - started
            dead = _graph_died(nodes)
            if dead is not None:
                raise DemoError(f"{dead.name} exited with status {dead.process.returncode}: "
                                f"{dead.log_tail(1) or 'no output'} (log: {dead.log_path})")
            if waited > SETTLE_TIMEOUT:
                waiting = [what for what, n in (("joint_states", states), ("desired_state", desired),
                                                ("computed_torques", torques if need_torques else 1)) if not n]
                raise DemoError(f"{label}: no {', '.join(waiting)} after {SETTLE_TIMEOUT:.0f} s "
                                f"(node logs in {log_dir})")
            progress.update(f"[{label}] starting the nodes ... {waited:4.1f} s")
            time.sleep(0.1)
        # (only before the first run: the nodes of a previous run may linger in discovery)
        foreign = {topic: recorder.node.count_publishers(topic) - 1
                   for topic in ("/joint_states", "/desired_state")} if first else {}
        if any(count > 0 for count in foreign.values()):
            raise DemoError(f"another ROS 2 graph publishes on ROS_DOMAIN_ID {env['ROS_DOMAIN_ID']} "
                            f"({', '.join(t for t, c in foreign.items() if c > 0)}): rerun with another --domain-id")
        if pd_gains is not None:
            with recorder.lock:
                recorder.pd_gains = pd_gains
        # Until now the simulated arm moved under whatever command there was (none at first):
        # start both runs from the same state, at rest at home, with the trajectory at t = 0.
        progress.update(f"[{label}] resetting the simulator and the trajectory", force=True)
        failed = recorder.restart_motion()
        if failed:
            raise DemoError(f"{label}: {', '.join(failed)} did not answer (node logs in {log_dir})")
        run.start = time.monotonic()
        at_start = recorder.counts()
        while True:
            now = time.monotonic()
            elapsed = now - run.start
            if elapsed >= duration:
                break
            dead = _graph_died(nodes)
            if dead is not None:
                raise DemoError(f"{dead.name} exited during the run (status {dead.process.returncode}; "
                                f"log: {dead.log_path})")
            states, desired, torques = (c - c0 for c, c0 in zip(recorder.counts(), at_start))
            bar = int(20 * elapsed / duration)
            rates = f"joint_states {states / max(elapsed, 1e-3):3.0f} Hz  desired_state {desired / max(elapsed, 1e-3):3.0f} Hz"
            if need_torques:
                rates += f"  computed_torques {torques / max(elapsed, 1e-3):3.0f} Hz"
            progress.update(f"[{label}] [{'#' * bar}{'.' * (20 - bar)}] {elapsed:4.1f}/{duration:g} s  {rates}")
            time.sleep(0.1)
        run.end = time.monotonic()
    finally:
        with recorder.lock:
            recorder.run = None
            recorder.pd_gains = None
        processes.stop_all(nodes)
    progress.done(f"[{label}] done: {len(run.state)} joint states recorded")
    return run


def _pd_gains(model, q0, kp, kd):
    """Joint PD gains with the computed-torque loop's stiffness at q0: K = k diag M(q0)."""
    import robot_dynamics as rd

    inertia = np.diagonal(rd.mass_matrix(model, q0))
    return kp * inertia, kd * inertia


def _diagnostic(run, suffix, key):
    for name, values in run.diagnostics.items():
        if name.endswith(suffix) and key in values:
            return values[key]
    return None


def summary_lines(model, path, ct, pd, runs, warnings_):
    """The printed summary (list of lines)."""
    lines = [
        "",
        "robot_dynamics demo: summary",
        f"  model        {model.name} from {path}: {model.nv} coordinates "
        f"({', '.join(model.joint_names)}), {len(model.mimic_joints)} mimic joint(s)",
    ]
    for warning in warnings_:
        lines.append(f"  warning      {warning}")
    compute = _diagnostic(runs[0], ": outputs", "compute time mean (us)")
    lines.append(f"  rates        joint_states {ct.state_rate:.0f} Hz, desired_state {ct.desired_rate:.0f} Hz, "
                 f"computed_torques {ct.torque_rate:.0f} Hz (computed-torque run, {ct.duration:.1f} s)")
    for m in (ct, pd):
        if m is not None and m.stalls:
            lines.append(f"  NOTE         {m.label}: the loop stalled {m.stalls} time(s) (joint states more than "
                         f"{STALL * 1e3:.0f} ms apart, longest {m.max_gap_ms:.0f} ms): the machine is busy and "
                         "its figures are pessimistic")
    if ct.latency_ms:
        p50, p99, worst = ct.latency_ms
        lines.append(f"  latency      joint_states -> computed_torques, seen from a third process: "
                     f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {worst:.2f} ms"
                     + (f"; compute {float(compute):.0f} us per message" if compute not in (None, "-") else ""))
    which = "arm joints" if ct.unit == "rad" else "all joints"
    lines.append(f"  tracking     RMS error ({which}) computed torque: {ct.rms_total:.3e} {ct.unit} "
                 f"(max {ct.max_error:.3e} {ct.unit})")
    if pd is not None:
        ratio = pd.rms_total / ct.rms_total if ct.rms_total > 0 else math.inf
        lines.append(f"               RMS error ({which}) PD only:         {pd.rms_total:.3e} {pd.unit} "
                     f"(max {pd.max_error:.3e} {pd.unit}) -> {ratio:.0f}x larger")
    width = max(len(name) for name in model.joint_names)
    lines.append(f"  per joint    {'joint':<{width}}  {'RMS computed torque':>19}" + ("  RMS PD only" if pd is not None else ""))
    for k, (name, kind) in enumerate(zip(model.joint_names, model.joint_types)):
        unit = "m" if kind == "prismatic" else "rad"
        lines.append(f"               {name:<{width}}  {ct.rms_error[k]:15.2e} {unit:<3}"
                     + (f"  {pd.rms_error[k]:.2e} {unit}" if pd is not None else ""))
    return lines


def check_arguments(args):
    """Raise :class:`DemoError` for a bad argument or a missing dependency.  The CLI calls it before it
    loads the robot and, on the first run after installing, compiles the nodes' kernels."""
    if not args.duration > 0:
        raise DemoError("--duration must be positive")
    if args.domain_id is not None and not (0 <= args.domain_id <= 101 or 215 <= args.domain_id <= 232):
        raise DemoError(f"--domain-id {args.domain_id}: Fast DDS accepts 0-101 and 215-232")
    for module, extra in (("rclpy", "ros"), ("sensor_msgs", "ros"), ("trajectory_msgs", "ros"),
                          ("std_srvs", "ros")) + (() if args.no_plot else (("matplotlib", "demo"),)):
        try:
            __import__(module)
        except ImportError:
            raise DemoError(f"the demo needs {module}, which is not installed "
                            f"(pip install 'robot_dynamics[{extra}]')") from None
    for name in processes.NODE_EXECUTABLES:
        try:
            __import__(f"robot_dynamics.nodes.{name}")
        except ImportError as error:
            raise DemoError(f"the demo needs the {name} executable, which cannot be imported: {error}") from None


def run_demo(args, model, path, load_warnings=()):
    """``robot-dynamics demo`` on ``model`` (read from ``path``), its arguments checked
    (:func:`check_arguments`) and its kernels compiled; returns the exit status.

    Raises :class:`DemoError` for a graph that does not run.
    """
    env = processes.ros_environment(args.domain_id)
    print(f"robot_dynamics demo: {model.name} ({model.nv} coordinates) from {path}", flush=True)
    print(f"  simulator + dynamics node + trajectory publisher, ROS_DOMAIN_ID={env['ROS_DOMAIN_ID']} "
          f"(localhost only), {args.duration:g} s per run", flush=True)

    # this process (the recorder) joins the same private graph
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.pop("ROS_LOCALHOST_ONLY", None)

    workdir = Path(tempfile.mkdtemp(prefix="robot_dynamics_demo_"))
    log_dir = args.log_dir or workdir / "logs"
    urdf_text = path.read_text()
    progress = _Progress(args.quiet)

    dynamics_config = graph.config_values(graph.config_file("dynamics.yaml"))
    kp = float(np.atleast_1d(dynamics_config.get("kp", 100.0))[0])
    kd = float(np.atleast_1d(dynamics_config.get("kd", 20.0))[0])
    q0, _, _ = graph.robot_setup(model)
    recorder = _Recorder(model)
    failed = True
    try:
        runs = [_closed_loop(
            recorder, "computed torque",
            graph.simulation_graph(urdf_text), env,
            Path(log_dir) / "computed_torque",
            args.duration, progress)]
        if not args.no_pd:
            gains = _pd_gains(model, q0, kp, kd)
            runs.append(_closed_loop(
                recorder, "PD only",
                graph.simulation_graph(urdf_text, command_source="none"),
                env, Path(log_dir) / "pd_only", args.duration, progress, pd_gains=gains, first=False))
        failed = False
    finally:
        recorder.close()
        if args.log_dir is None and not failed:
            shutil.rmtree(workdir, ignore_errors=True)
        elif failed:
            progress.done(f"node logs kept in {log_dir}")

    metrics = [analyse(run, *error_mask(model)) for run in runs]
    ct, pd = metrics[0], (metrics[1] if len(metrics) > 1 else None)
    for line in summary_lines(model, path, ct, pd, runs, load_warnings):
        print(line)
    if pd is not None:
        print(f"  PD gains     Kp = {kp:g} diag M(q0), Kd = {kd:g} diag M(q0) (the computed-torque loop's "
              f"stiffness at the start pose, without the model)")
    if not args.no_plot:
        output = plot(metrics, list(model.joint_names), args.output,
                      f"robot_dynamics demo: {model.name}, computed torque vs PD only ({args.duration:g} s each)")
        print(f"  plot         {output.resolve()}")
    return 0
