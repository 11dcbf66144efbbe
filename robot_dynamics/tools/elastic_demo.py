"""``robot-dynamics demo-elastic``: computed torque on an elastic-joint arm, with and without the elastic model.

What Spong's Ex. 6.2 means for a controller, in process (no ROS): the planar 2R arm of Lynch &
Park §9.1 (``planar_2r``) gets geared motors (``J = r^2 J_m`` = 0.5 kg m^2 per joint) and gears
of stiffness ``K`` = 1500 N m/rad (elastic modes near 30 and 65 rad/s).  The simulator integrates
the elastic model (rk4, 1 kHz); both controllers run at 1 kHz with a zero-order hold and follow
the same smooth trajectory (sinusoids of 0.5 rad about a bent pose) from the same start on it:

rigid model
    the rigid computed torque on the measured motor state (the motor encoders of a geared arm),
    taken for the joint state as the rigid model has it:
    ``u = (M(theta) + J) (qdd_d + 2 w (qd_d - theta') + w^2 (q_d - theta)) + h(theta, theta')``;
    the springs deflect under the load and ring, and the links lag and oscillate.
elastic model
    the motor torque and motor trajectory of :func:`robot_dynamics.elastic_inverse_dynamics`
    along the desired trajectory (feedforward; the torque held over a period is the one of its
    midpoint), and a PD on the measured motor state with the same bandwidth:
    ``u = u_d + J (w^2 (theta_d - theta) + 2 w (theta_d' - theta'))``.

It prints the RMS and largest link tracking error of both and writes a PNG of the errors.
"""

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_OUTPUT = Path("out") / "robot_dynamics_elastic_demo.png"
ARMATURE = 0.5        # kg m^2, r^2 J_m per joint
STIFFNESS = 1500.0    # N m/rad per joint
BANDWIDTH = 20.0      # rad/s, w of both controllers
STEP = 1e-3           # s, physics and control period
AMPLITUDE, FREQUENCY, START = 0.5, np.array([1.0, 1.6]), np.array([0.6, -0.8])  # rad, Hz, rad


def add_arguments(parser):
    parser.add_argument("--duration", type=float, default=3.0, metavar="S", help="seconds per run (default 3)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PNG",
                        help=f"where to write the plot (default {DEFAULT_OUTPUT})")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")


def geared_arm():
    """``planar_2r`` with the demo's motors, and the stiffness of its gears."""
    import robot_dynamics as rd
    from robot_dynamics.description.robots import bundled_urdf

    model = rd.load_urdf(bundled_urdf("planar_2r"))
    return model.with_armature(np.full(model.nv, ARMATURE)), np.full(model.nv, STIFFNESS)


def desired(times, order):
    """The ``order``-th time derivative of ``q_d(t) = START - AMPLITUDE cos(2 pi f t)`` (at rest at t = 0)."""
    w = 2 * np.pi * FREQUENCY
    t = np.asarray(times)[:, None]
    value = AMPLITUDE * w ** order * np.cos(w * t + order * np.pi / 2)
    return START - value if order == 0 else -value


@dataclass
class Run:
    label: str
    times: np.ndarray
    error: np.ndarray     # (steps + 1, n) link error q_d - q, rad
    torque: np.ndarray    # (steps, n) motor torque u, N m

    @property
    def rms(self):
        return float(np.sqrt(np.mean(self.error ** 2)))

    @property
    def largest(self):
        return float(np.abs(self.error).max())


def simulate(duration):
    """Both closed loops for ``duration`` s: ``(rigid Run, elastic Run)``."""
    import robot_dynamics as rd
    from robot_dynamics.simulation.simulator import Simulator

    model, K = geared_arm()
    J, w = model.armature, BANDWIDTH
    steps = int(round(duration / STEP))
    times = np.arange(steps + 1) * STEP
    q_d, qd_d, qdd_d = (desired(times, k) for k in range(3))
    theta_d, theta_d_rate, _ = rd.elastic_inverse_dynamics(model, K, *(desired(times, k) for k in range(5)))
    # the torque held over [t, t + STEP) is the one of its midpoint: a zero-order hold lags by half a period
    _, _, u_d = rd.elastic_inverse_dynamics(model, K, *(desired(times + STEP / 2, k) for k in range(5)))

    def rigid(k, q, qd, theta, theta_rate):  # joint angle = motor angle, as the rigid model says
        a = qdd_d[k] + 2 * w * (qd_d[k] - theta_rate) + w * w * (q_d[k] - theta)
        return rd.inverse_dynamics(model, theta, theta_rate, a)  # (M + J) a + h, rotors included

    def elastic(k, q, qd, theta, theta_rate):
        return u_d[k] + J * (w * w * (theta_d[k] - theta) + 2 * w * (theta_d_rate[k] - theta_rate))

    runs = []
    for label, control in (("rigid model", rigid), ("elastic model", elastic)):
        sim = Simulator(model, joint_stiffness=K, enforce_position_limits=False, enforce_effort_limits=False)
        sim.reset(q_d[0], qd_d[0], t=0.0, motor_q=theta_d[0], motor_qd=theta_d_rate[0])
        error, torque = np.empty((steps + 1, model.nv)), np.empty((steps, model.nv))
        error[0] = q_d[0] - sim.q
        for k in range(steps):
            torque[k] = control(k, sim.q, sim.qd, sim.motor_q, sim.motor_qd)
            sim.step(torque[k], STEP)
            error[k + 1] = q_d[k + 1] - sim.q
        runs.append(Run(label, times, error, torque))
    return runs


def summary_lines(runs):
    lines = [f"robot_dynamics demo-elastic: planar_2r, armature {ARMATURE} kg m^2, stiffness {STIFFNESS:g} N m/rad, "
             f"computed torque at {1 / STEP:g} Hz, bandwidth {BANDWIDTH:g} rad/s, rk4"]
    for run in runs:
        lines.append(f"  {run.label:<14} link error RMS {run.rms:.2e} rad, largest {run.largest:.2e} rad")
    return lines


def plot(runs, path):
    """PNG: each run's link errors (one curve per joint, log scale) and motor torques."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 5))
    fig.suptitle("computed torque on an elastic-joint arm (planar_2r with geared motors)")
    for run, style in zip(runs, ("--", "-")):
        for j in range(run.error.shape[1]):
            axes[0].semilogy(run.times, np.maximum(np.abs(run.error[:, j]), 1e-9), ls=style,
                             label=f"{run.label}, joint {j + 1}")
            axes[1].plot(run.times[1:], run.torque[:, j], ls=style, label=f"{run.label}, joint {j + 1}")
    axes[0].set_title("link tracking error |q_d - q| (rad)")
    axes[1].set_title("motor torque u (N m, link side)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def run_demo(args, out):
    from ..compiling import compile_and_report

    if not (math.isfinite(args.duration) and args.duration > 0):
        raise ValueError(f"--duration must be positive, got {args.duration}")
    compile_and_report(("dynamics_node", "simulator"), "the dynamics kernels",
                       lambda line: print(line, file=sys.stderr, flush=True))
    runs = simulate(args.duration)
    for line in summary_lines(runs):
        out.write(line + "\n")
    if not args.no_plot:
        out.write(f"plot: {plot(runs, args.output)}\n")
    return 0
