"""``robot-dynamics demo-trajectory``: a planner's timing against the torque limits, and the retimed one.

In process (no ROS): the bundled 7-joint arm (``arm7_gripper``) carries a 3 kg payload on its hand
and swings from a folded pose on its right to a reach on its left, along a straight line in joint
space. The
planner's timing is what a planner that knows only velocity and acceleration limits gives (MoveIt's
time parametrizations): the time-optimal trapezoid in the path parameter within the URDF velocity
limits (98 %) and the acceleration limits of :data:`PLANNER_ACCELERATION`; it breaks the effort
limits (where, by how much: :func:`robot_dynamics.trajectories.check.check_trajectory`, as
joint_trajectory_controller samples it). :func:`robot_dynamics.trajectories.retime.retime` gives the
same path the shortest timing within the velocity, acceleration and ``effort_margin`` times the
effort limits, with the payload in the model.

Both are then tracked in the simulator (:class:`robot_dynamics.simulation.simulator.Simulator`, rk4
at 1 kHz, effort limits enforced: a motor delivers at most its limit) under computed torque
(:func:`robot_dynamics.control.laws.computed_torque` with the exact model, ``kp``, ``kd`` as the
dynamics node's defaults), the reference sampled every millisecond as the controller samples it.
The summary gives, for each, the duration, the share of control periods in which a commanded
torque was beyond its limit (saturated), the largest ``|tau|/tau_max`` commanded and the tracking
error; the plot shows ``|tau|/tau_max`` over time for both timings, and the tracking error.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_trajectory_demo.png"
ROBOT, PAYLOAD_LINK, PAYLOAD_MASS = "arm7_gripper", "arm7_hand", 3.0
PAYLOAD_COM, PAYLOAD_INERTIA = (0.0, 0.0, 0.1), (0.01, 0.0, 0.0, 0.01, 0.0, 0.01)  # m; kg m^2, a 3 kg block
JOINTS = tuple(f"arm7_joint{k}" for k in range(1, 8))
START = np.array([-1.0, -0.8, 0.0, -2.4, -1.2, 0.8, 0.8])  # rad: folded, to the right
GOAL = np.array([1.0, 0.5, 0.0, -1.4, 1.2, 2.6, 0.8])      # rad: reaching out, to the left
#: rad/s^2: the acceleration limits of a MoveIt configuration (joint_limits.yaml) for an arm of this size
PLANNER_ACCELERATION = np.array([15.0, 7.5, 10.0, 12.5, 15.0, 20.0, 20.0])
VELOCITY_SHARE = 0.98  # of the URDF velocity limits, for the planner
WAYPOINT_SPACING = 0.02  # s between the planner's waypoints
EFFORT_MARGIN = 0.9  # of the effort limits for the retimed trajectory: room for the feedback
KP, KD = 100.0, 20.0  # 1/s^2, 1/s: the dynamics node's defaults
STEP = 1e-3  # s: the control period and the simulator's step
SETTLE = 0.3  # s tracked after each trajectory's end


def add_arguments(parser):
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PNG",
                        help=f"where to write the plot (default {DEFAULT_OUTPUT})")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")


def arm_with_payload():
    """The bundled arm with the demo's payload on its hand."""
    import robot_dynamics as rd
    from robot_dynamics.description.robots import bundled_urdf

    arm = rd.load_urdf(bundled_urdf(ROBOT))
    return arm.with_payload(PAYLOAD_LINK, PAYLOAD_MASS, PAYLOAD_COM, PAYLOAD_INERTIA)


def planner_timing(model):
    """The planner's trajectory from START to GOAL: ``q = START + s (GOAL - START)`` with ``s(t)`` the
    time-optimal trapezoid within the velocity (``VELOCITY_SHARE``) and ``PLANNER_ACCELERATION``
    limits (``s' <= min v_j / |d_j|``, ``|s''| <= min a_j / |d_j|``); waypoints every
    ``WAYPOINT_SPACING`` s and at the phase changes, with exact velocities and accelerations."""
    from robot_dynamics.trajectories.check import Trajectory

    d = GOAL - START
    moving = np.abs(d) > 1e-12
    index = [model.joint_names.index(name) for name in JOINTS]
    top = np.min(VELOCITY_SHARE * model.velocity_limits[index][moving] / np.abs(d[moving]))
    accel = np.min(PLANNER_ACCELERATION[moving] / np.abs(d[moving]))
    ramp = top / accel
    if accel * ramp * ramp > 1.0:  # (a triangle: never at full speed)
        ramp = math.sqrt(1.0 / accel)
        top = accel * ramp
    T = 2 * ramp + (1.0 - accel * ramp * ramp) / top
    t = np.union1d(np.arange(0.0, T, WAYPOINT_SPACING), [ramp, T - ramp, T])
    rising, falling = t < ramp, t > T - ramp
    s = np.where(rising, 0.5 * accel * t**2, np.where(falling, 1.0 - 0.5 * accel * (T - t) ** 2,
                                                       0.5 * accel * ramp**2 + top * (t - ramp)))
    sd = np.where(rising, accel * t, np.where(falling, accel * (T - t), top))
    sdd = np.where(rising, accel, np.where(falling, -accel, 0.0))
    return Trajectory(JOINTS, t, START + np.outer(s, d), np.outer(sd, d), np.outer(sdd, d), source="planner")


@dataclass
class Run:
    """One timing tracked in the simulator."""

    label: str
    duration: float   # s, the trajectory's
    t: np.ndarray     # (K,) s
    ratio: np.ndarray  # (K, 7) |commanded tau| / tau_max of the arm joints
    error: np.ndarray  # (K, 7) q_d - q, rad

    @property
    def saturated(self):
        """Share of control periods with a commanded torque beyond its limit."""
        return float(np.mean((self.ratio > 1.0).any(axis=1)))

    @property
    def worst_error(self):
        return float(np.abs(self.error).max())

    @property
    def rms_error(self):
        return float(np.sqrt(np.mean(self.error**2)))


def track(model, trajectory, label):
    """``trajectory`` tracked under computed torque in the simulator (module docstring): a :class:`Run`."""
    import robot_dynamics as rd
    from robot_dynamics.control.laws import computed_torque
    from robot_dynamics.simulation.simulator import Simulator
    from robot_dynamics.trajectories.check import interpolate

    index = [model.joint_names.index(name) for name in JOINTS]
    rest = np.clip(0.0, model.position_limits[:, 0], model.position_limits[:, 1])
    steps = int(round((trajectory.t[-1] + SETTLE) / STEP))
    times = np.arange(steps) * STEP
    q_d, qd_d, qdd_d = np.tile(rest, (steps, 1)), np.zeros((steps, model.nv)), np.zeros((steps, model.nv))
    q, qd, qdd = interpolate(trajectory, np.minimum(times, trajectory.t[-1]))
    after = times > trajectory.t[-1]  # the end, held at rest
    qd[after], qdd[after] = 0.0, 0.0
    q_d[:, index], qd_d[:, index], qdd_d[:, index] = q, qd, qdd
    sim = Simulator(model, q_d[0], qd_d[0], integrator="rk4", enforce_effort_limits=True)
    limits = model.effort_limits[index]
    ratio, error = np.empty((steps, 7)), np.empty((steps, 7))
    for k in range(steps):
        q, qd = sim.q, sim.qd
        tau = computed_torque(rd.mass_matrix(model, q), rd.bias_forces(model, q, qd), qdd_d[k], q_d[k] - q, qd_d[k] - qd,
                              KP, KD)
        ratio[k] = np.abs(tau[index]) / limits
        error[k] = (q_d[k] - q)[index]
        sim.step(tau, STEP)
    return Run(label, float(trajectory.t[-1]), times, ratio, error)


@dataclass
class Demo:
    planner: object       # check.Trajectory
    planner_check: object  # check.TrajectoryCheck
    retimed: object       # retime.RetimeResult
    retimed_check: object
    runs: list            # [planner Run, retimed Run]


def run(model=None):
    """The demo's computation: both timings, checked and tracked (:class:`Demo`)."""
    from robot_dynamics.trajectories.check import check_trajectory
    from robot_dynamics.trajectories.retime import retime

    model = arm_with_payload() if model is None else model
    planner = planner_timing(model)
    accelerations = np.full(model.nv, np.inf)  # (per model joint: the finger, not in the path, has none)
    accelerations[[model.joint_names.index(name) for name in JOINTS]] = PLANNER_ACCELERATION
    result = retime(model, planner, effort_margin=EFFORT_MARGIN, acceleration_limits=accelerations)
    runs = [track(model, planner, "planner's timing"), track(model, result.trajectory, "retimed")]
    return Demo(planner, check_trajectory(model, planner), result, check_trajectory(model, result.trajectory), runs)


def _peaks(check):
    """``(joint, peak |tau|/tau_max)`` of the arm's joints, largest first."""
    return sorted(((name, check.peak_effort_fraction[name]) for name in JOINTS), key=lambda item: -item[1])


def summary_lines(demo):
    lines = [f"robot_dynamics demo-trajectory: {ROBOT} with {PAYLOAD_MASS:g} kg on {PAYLOAD_LINK}, "
             f"{len(demo.planner.t)} waypoints from {START.tolist()} to {GOAL.tolist()} rad"]
    check = demo.planner_check
    lines.append(f"  planner's timing  {demo.planner.t[-1]:.3f} s (velocity and acceleration limits only)")
    efforts = [v for v in check.violations if v.quantity == "effort"]
    for violation in efforts:
        name = violation.joint
        lines.append(f"    beyond the torque limit: {name} from t = {violation.time:.3f} s, {violation.value:.1f} N m "
                     f"against {violation.limit:g}; at worst {check.peak_effort_fraction[name]:.0%} of it")
    if not efforts:
        lines.append("    within the torque limits")
    result, retimed = demo.retimed, demo.retimed_check
    (name, peak), = _peaks(retimed)[:1]
    lines.append(f"  retimed           {result.duration_after:.3f} s (effort_margin {EFFORT_MARGIN:g}); largest "
                 f"|tau|/tau_max {peak:.0%} ({name}), {'within' if retimed.ok else 'BEYOND'} the limits")
    lines.append(f"  tracked in the simulator under computed torque (kp {KP:g}, kd {KD:g}, {1 / STEP:g} Hz, rk4, "
                 "effort limits enforced), each end held "
                 f"{SETTLE:g} s:")
    lines.append(f"    {'':<18}{'saturated':>11}{'max |tau|/tau_max':>19}{'error RMS':>12}{'error max':>12}")
    for r in demo.runs:
        lines.append(f"    {r.label:<18}{r.saturated:>10.1%} {r.ratio.max():>18.0%}"
                     f"{r.rms_error * 1e3:>9.3f} mrad{r.worst_error * 1e3:>7.2f} mrad")
    return lines


def plot(demo, path):
    """PNG: ``max_j |tau_j|/tau_max,j`` over time for both timings, and their tracking errors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    fig.suptitle(f"{ROBOT} with {PAYLOAD_MASS:g} kg: the planner's timing and the torque-limited retiming, "
                 "tracked under computed torque")
    for r, color in zip(demo.runs, ("tab:red", "tab:blue")):
        axes[0].plot(r.t, r.ratio.max(axis=1), color=color, label=f"{r.label} ({r.duration:.2f} s)")
        axes[1].semilogy(r.t, np.maximum(np.abs(r.error).max(axis=1), 1e-9), color=color, label=r.label)
    axes[0].axhline(1.0, color="k", ls="--", lw=1, label="effort limit")
    axes[0].set(title="largest |tau| / tau_max commanded (over the joints)", xlabel="time (s)")
    axes[1].set(title="largest tracking error |q_d - q| (rad)", xlabel="time (s)")
    for ax in axes:
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def run_demo(args, out):
    from ..compiling import compile_and_report

    compile_and_report(("simulator", "library"), "the dynamics kernels",
                       lambda line: print(line, file=sys.stderr, flush=True))
    demo = run()
    for line in summary_lines(demo):
        out.write(line + "\n")
    if not args.no_plot:
        out.write(f"  plot: {plot(demo, args.output)}\n")
    return 0
