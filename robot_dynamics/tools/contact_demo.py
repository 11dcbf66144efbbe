"""``robot-dynamics demo-contact``: an arm driven into a wall, its contact felt by the momentum observer.

In process (no ROS), with the pieces the nodes run on every message: the simulator with contact
(:class:`robot_dynamics.simulation.simulator.Simulator`, a :class:`robot_dynamics.simulation.contact.ContactModel` wall
and a sphere on the tool), the computed-torque law (:func:`robot_dynamics.control.laws.computed_torque`,
the dynamics node's), the momentum observer (:class:`robot_dynamics.control.observer.MomentumObserver`, its
``external_torque.*``, URDF friction compensated as the simulator applies it) and the collision
detector (:class:`robot_dynamics.control.collision.CollisionDetector`, its ``collision.*``) with the
``gravity`` reaction.  ``arm7_gripper`` follows, under computed torque at 1 kHz, a slow straight
approach of its tool centre point (``arm7_tcp``) to a point beyond a wall (``WALL_AT``): the tool
touches, the servo presses harder as the error grows, the observer's wrench estimate follows the true
contact wrench, and once an external torque has stayed beyond its threshold for ``min_duration`` the
command switches to the gravity hold ``g(q)``: the arm stops pushing.

It prints when the tool touched, when the collision was declared and what force it carried then, how
closely the estimate followed the true force during contact, and writes a PNG (true vs estimated
force, the residual per joint with the thresholds, contact and collision flags).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_contact_demo.png"
STEP = 1e-3                 # s, physics and control period
TOOL = "arm7_tcp"
START = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 1.9, 0.8, 0.02])
APPROACH = np.array([0.2, 0.0, 0.0])  # m, the tool's desired straight path in world axes
WALL_AT = 0.6               # the wall at this fraction of the path: the servo aims 8 cm beyond it
RADIUS = 0.02               # m, the sphere on the tool
KP, KD = 100.0, 20.0        # computed torque, 1/s^2 and 1/s (critically damped)
GAIN = 50.0                 # K_O, 1/s
THRESHOLD = 1.0             # N m on every joint
RELEASE, MIN_DURATION = 0.5, 0.005


def add_arguments(parser):
    parser.add_argument("--duration", type=float, default=4.0, metavar="S", help="seconds simulated (default 4)")
    parser.add_argument("--approach-time", type=float, default=2.5, metavar="S",
                        help="seconds of the desired approach (default 2.5)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, metavar="NM",
                        help=f"collision threshold on every joint, N m (default {THRESHOLD:g})")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PNG",
                        help=f"where to write the plot (default {DEFAULT_OUTPUT})")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")


@dataclass
class Run:
    t: np.ndarray             # (N,) s
    force: np.ndarray         # (N, 3) the true contact force on the tool, world axes, N
    estimate: np.ndarray      # (N, 3) the observer's force at the tool, N
    residual: np.ndarray      # (N, n) external torques, N m
    collision: np.ndarray     # (N,) the detector's flag
    holding: np.ndarray       # (N,) the command is the gravity hold
    names: tuple
    threshold: float


def desired_joints(model, q0, duration, steps):
    """Joint positions along the straight tool path (a quintic in time), by damped-least-squares steps."""
    import robot_dynamics as rd

    start = rd.frame_pose(model, q0, TOOL)[:3, 3]
    times = np.arange(steps + 1) * STEP
    s = np.clip(times / duration, 0.0, 1.0)
    blend = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    path = start + blend[:, None] * APPROACH
    q = np.empty((steps + 1, model.nv))
    current = q0.copy()
    for k, target in enumerate(path):
        for _ in range(3):  # a few Newton steps per sample: the path moves little between samples
            J = rd.jacobian(model, current, TOOL)[3:]
            error = target - rd.frame_pose(model, current, TOOL)[:3, 3]
            current = current + J.T @ np.linalg.solve(J @ J.T + 1e-6 * np.eye(3), error)
        q[k] = current
    qd = np.gradient(q, STEP, axis=0)
    qdd = np.gradient(qd, STEP, axis=0)
    return q, qd, qdd, start


def run(duration, approach_time, threshold):
    """The demo's simulation (module docstring)."""
    import robot_dynamics as rd
    from robot_dynamics.control import laws as control
    from robot_dynamics.rigid_body.friction import friction_torques
    from robot_dynamics.simulation.contact import ContactModel
    from robot_dynamics.control.collision import CollisionDetector
    from robot_dynamics.control.observer import MomentumObserver
    from robot_dynamics.description.robots import bundled_urdf
    from robot_dynamics.simulation.simulator import Simulator

    model = rd.load_urdf(str(bundled_urdf("arm7_gripper")))
    steps = int(round(duration / STEP))
    q_d, qd_d, qdd_d, start = desired_joints(model, START, approach_time, steps)
    normal = -APPROACH / np.linalg.norm(APPROACH)
    # the sphere's surface meets the wall when its centre is at WALL_AT of the path
    wall = ContactModel(planes=[(start + WALL_AT * APPROACH - RADIUS * normal, normal)],
                        spheres=[(TOOL, (0.0, 0.0, 0.0), RADIUS)])
    sim = Simulator(model, q=START, apply_damping=True, apply_friction=True, enforce_position_limits=True, contact=wall)
    observer = MomentumObserver(model, GAIN, frame=TOOL, friction=True)
    detector = CollisionDetector(np.full(model.nv, threshold), RELEASE, MIN_DURATION)
    observer.update(sim.t, sim.q, sim.qd, np.zeros(model.nv))
    holding = False
    rows = []
    for k in range(steps):
        if holding:
            tau = rd.gravity_torques(model, sim.q)
        else:
            tau = control.computed_torque(rd.mass_matrix(model, sim.q), rd.bias_forces(model, sim.q, sim.qd), qdd_d[k],
                                          q_d[k] - sim.q, qd_d[k] - sim.qd, KP, KD)
            tau += friction_torques(model.viscous_damping, model.friction, sim.friction_velocity, sim.qd)
        sim.step(tau, STEP)
        r = observer.update(sim.t, sim.q, sim.qd, sim.applied_effort)
        if detector.update(sim.t, r):
            holding = True  # collision.reaction: gravity, until ~/reset_collision (never, here)
        true = sim.contact_wrenches().get(TOOL, np.zeros(6))
        rows.append((sim.t, true[3:], observer.wrench[3:].copy(), r, detector.active, holding))
    t, force, estimate, residual, collision, hold = (np.array(column) for column in zip(*rows))
    return Run(t, force, estimate, residual, collision, hold, model.joint_names, threshold)


def impact(run: Run):
    """``(touch, detection, peak)`` sample indices: the first contact, the collision declared (None if
    never), and the largest true contact force of the first impact (before the reaction released the
    wall, or within 0.2 s of the touch)."""
    magnitude = np.linalg.norm(run.force, axis=1)
    touch = int(np.argmax(magnitude > 0))
    detection = int(np.argmax(run.collision)) if run.collision.any() else None
    end = (detection if detection is not None else touch) + int(round(0.2 / STEP))
    peak = touch + int(np.argmax(magnitude[touch:end + 1]))
    return touch, detection, peak


def summary_lines(run: Run):
    magnitude = np.linalg.norm(run.force, axis=1)
    touching = magnitude > 0
    if not touching.any():
        return ["the tool never touched the wall"]
    touch, detection, peak = impact(run)
    first = run.t[touch]
    lines = [f"tool touched the wall at t = {first:.3f} s"]
    if detection is not None:
        k = detection
        lines.append(f"collision declared at t = {run.t[k]:.3f} s ({1e3 * (run.t[k] - first):.0f} ms after the touch); "
                     f"at that instant the true force was {magnitude[k]:.2f} N, estimated "
                     f"{np.linalg.norm(run.estimate[k]):.2f} N; joints beyond {run.threshold:g} N m: "
                     f"{', '.join(run.names[i] for i in np.flatnonzero(np.abs(run.residual[k]) > run.threshold))}")
    else:
        lines.append("no collision declared")
    estimate_peak = np.linalg.norm(run.estimate[touch:peak + int(round(0.2 / STEP))], axis=1).max()
    lines.append(f"impact peak: true force {magnitude[peak]:.2f} N at t = {run.t[peak]:.3f} s "
                 f"({1e3 * (run.t[peak] - first):.0f} ms after the touch"
                 + (f", {1e3 * (run.t[peak] - run.t[detection]):+.0f} ms from the detection" if detection is not None else "")
                 + f"); the estimate peaked at {estimate_peak:.2f} N (the observer filters with 1/K_O = "
                 f"{1e3 / GAIN:.0f} ms: a spike shorter than that is seen smaller)")
    if detection is not None:
        lines.append("reaction: gravity hold from the detection on; force after 0.5 s: "
                     f"{magnitude[min(detection + 500, len(run.t) - 1)]:.2f} N")
    # how closely the estimate follows the truth while pressing (before the reaction, past one time constant)
    pressing = touching & ~run.holding & (run.t >= first + 1.0 / GAIN)
    if pressing.any():
        error = np.linalg.norm(run.estimate[pressing] - run.force[pressing], axis=1)
        lines.append(f"while pressing ({pressing.sum()} samples, up to {magnitude[pressing].max():.2f} N): force "
                     f"estimate error RMS {np.sqrt(np.mean(error ** 2)):.3f} N, largest {error.max():.3f} N (the observer "
                     f"lags by 1/K_O = {1e3 / GAIN:.0f} ms)")
    free = ~touching & (run.t < first)
    lines.append(f"free motion before the touch: largest |external torque| {np.abs(run.residual[free]).max():.2e} N m")
    return lines


def plot(path, run: Run):
    """Left: the whole run; right: the impact, from 20 ms before the touch to 100 ms after the later
    of the detection and the peak, with the touch, the detection and the peak force marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    magnitude = np.linalg.norm(run.force, axis=1)
    touching = magnitude > 0
    figure, axes = plt.subplots(3, 2, figsize=(15, 9), sharex="col", gridspec_kw={"width_ratios": (1.4, 1)})
    marks = impact(run) if touching.any() else None
    for column, title in ((0, "whole run"), (1, "the impact (zoomed)")):
        forces, torques, flags = axes[:, column]
        forces.plot(run.t, magnitude, label="true contact force |f| (simulator)", linewidth=2)
        forces.plot(run.t, np.linalg.norm(run.estimate, axis=1), "--", label="estimated |f| (momentum observer)")
        forces.set_ylabel("force at the tool (N)")
        forces.set_title(title)
        for i, name in enumerate(run.names):
            torques.plot(run.t, run.residual[:, i], label=name, linewidth=0.9)
        for sign in (1, -1):
            torques.axhline(sign * run.threshold, color="k", linestyle=":", linewidth=0.8,
                            label=f"threshold ±{run.threshold:g} N m" if sign > 0 else None)
        torques.set_ylabel("external torque r (N m)")
        flags.step(run.t, touching, where="post", label="touching")
        flags.step(run.t, run.collision + 0.02, where="post", label="collision")
        flags.step(run.t, run.holding - 0.02, where="post", label="gravity hold")
        flags.set_xlabel("time (s)")
        flags.set_yticks([0, 1], ["false", "true"])
        if marks is not None:
            touch, detection, peak = marks
            forces.plot(run.t[peak], magnitude[peak], "v", color="tab:red", markersize=9,
                        label=f"peak {magnitude[peak]:.1f} N at {run.t[peak]:.3f} s")
            if detection is not None:
                for ax in (forces, torques, flags):
                    ax.axvline(run.t[detection], color="tab:red", linewidth=1,
                               label=f"collision declared {run.t[detection]:.3f} s "
                                     f"(|f| = {magnitude[detection]:.1f} N)" if ax is forces else None)
            if column == 1:
                end = max(peak, detection if detection is not None else peak)
                forces.set_xlim(run.t[touch] - 0.02, run.t[end] + 0.1)
        forces.legend(fontsize="small", loc="upper right")
        torques.legend(fontsize="x-small", ncol=3, loc="upper right")
        flags.legend(fontsize="small", loc="center right")
    figure.suptitle("arm7_gripper driven into a wall: contact, its estimate, collision and the gravity hold")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def run_demo(args, out):
    if not (args.duration > 0 and args.approach_time > 0 and args.threshold > 0):
        raise ValueError("--duration, --approach-time and --threshold must be positive")
    result = run(args.duration, args.approach_time, args.threshold)
    for line in summary_lines(result):
        out.write(line + "\n")
    if not args.no_plot:
        try:
            plot(args.output, result)
            out.write(f"wrote {args.output}\n")
        except ImportError:
            out.write("no plot: matplotlib is not installed (pip install matplotlib)\n")
    return 0
