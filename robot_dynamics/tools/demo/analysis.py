"""What one run of the demo records (pure data) and what it measures (pure numpy): rates, RMS
tracking error, latency, the printed summary. Testable without ROS."""

import math
from dataclasses import dataclass, field

import numpy as np

from ...control.laws import position_error

STALL = 0.010  # s between two joint states (5 periods at 500 Hz): the simulator did not keep up
STARVED = 0.9  # computed_torques below this fraction of the joint_states rate: the dynamics node fell behind


class DemoError(Exception):
    """Printed as one line by the CLI, exit status ``status``: the graph does not run, a dependency is
    missing."""

    status = 1


class DemoArgumentError(DemoError):
    """A bad argument: exit status 2, as for every command's bad input."""

    status = 2



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
        return window_rate(series, run)

    latency = latency_ms(run)
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


def latency_ms(run):
    """(p50, p99, max) in ms from a joint state's arrival to that of the computed_torques stamped like
    it, in the recording window; () without any."""
    arrival = {}
    for t, s in zip(run.state.received, run.state.stamp):
        arrival.setdefault(round(s, 9), t)
    lags = [t - arrival[round(s, 9)] for t, s in zip(run.torques.received, run.torques.stamp)
            if round(s, 9) in arrival and run.start <= t <= run.end]
    if not lags:
        return ()
    lags = np.asarray(lags) * 1e3
    return float(np.percentile(lags, 50)), float(np.percentile(lags, 99)), float(lags.max())


def window_rate(series, run):
    """Messages per second of ``series`` received in ``run``'s recording window."""
    r = np.asarray(series.received)
    duration = run.end - run.start
    return float(((r >= run.start) & (r <= run.end)).sum() / duration) if len(r) and duration > 0 else 0.0


def starvation_lines(state_rate, torque_rate, latency_ms, label="the loop"):
    """Summary lines saying whether the loop starved, and what that does to the figures: the
    dynamics node answered fewer joint states than came (each command then acts for several
    simulator periods), or its answers came later than one joint-state period (each command acts
    on an older state). Empty for a loop that kept up."""
    if state_rate <= 0:
        return []
    period_ms = 1e3 / state_rate
    lines = []
    if torque_rate < STARVED * state_rate:
        lines.append(f"  STARVED      {label}: computed_torques {torque_rate:.0f} Hz for joint_states {state_rate:.0f} Hz: "
                     f"the dynamics node answered {100 * torque_rate / state_rate:.0f} % of the states (no CPU for it)")
    if latency_ms and latency_ms[0] > period_ms:
        lines.append(f"  STARVED      {label}: latency p50 {latency_ms[0]:.2f} ms is beyond the {period_ms:.2f} ms period "
                     f"of the joint states: each command acts on a state {latency_ms[0] / period_ms:.1f} periods old")
    if lines:
        lines.append("               so the latency above and the tracking errors below are those of a starved loop (a "
                     "busy machine), larger than the README's, which were measured on a quiet one; rerun on a "
                     "quieter machine to see the controller's own figures")
    return lines


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
    lines += starvation_lines(ct.state_rate, ct.torque_rate, ct.latency_ms, ct.label)
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
