"""``robot-dynamics external-torques RECORDING --urdf URDF``: the observer's residual over a recording.

The recording (a rosbag2 bag or CSV of ``joint_states``, read by :mod:`robot_dynamics.identification.recording`
and put on one uniform time grid by :func:`robot_dynamics.identification.samples.resample`) is played
through :class:`robot_dynamics.observer.MomentumObserver` sample by sample, exactly as the dynamics node
would see it (velocities from the recording, or the positions' central differences when it has none).
On a recording without contact the residual is the model's error: its RMS and peak per joint show how
far the URDF (a nominal CAD one, or an identified one) is from the arm, and the suggested collision
thresholds are ``SAFETY_FACTOR`` times each joint's peak (a threshold below that peak would have fired
on this very recording).  Writes ``DIR/external_torques.csv`` (``t``, ``r_<joint>``, and the wrench at
``--frame``, a link some joint moves: world-aligned axes, moment about its origin),
``DIR/external_torques.png`` when matplotlib is installed, and prints the table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..identification.samples import IdentificationError, resample
from ..identification.recording import RecordingError, read_recording
from ..observer import MomentumObserver, check_wrench_frame, tip_frame

__all__ = ["ERRORS", "SAFETY_FACTOR", "add_arguments", "external_torques", "run"]

SAFETY_FACTOR = 1.5
"""Suggested threshold = this times the joint's peak residual on a contact-free recording."""
DEFAULT_GAIN = 50.0
ERRORS = (RecordingError, IdentificationError, ValueError)


def add_arguments(parser):
    parser.add_argument("recording", metavar="RECORDING", help="rosbag2 directory (sqlite3 or MCAP) or CSV file")
    parser.add_argument("--urdf", required=True, help="the robot's URDF (file or bundled robot name)")
    parser.add_argument("--topic", default="joint_states", help="JointState topic in a bag (default joint_states)")
    parser.add_argument("--friction", action="store_true", help="subtract the URDF friction (damping, friction)")
    parser.add_argument("--gain", type=float, default=DEFAULT_GAIN,
                        help=f"observer gain K_O, 1/s (default {DEFAULT_GAIN:g}: time constant {1e3 / DEFAULT_GAIN:g} ms)")
    parser.add_argument("--frame", help="link of the wrench estimate (default: the tip of the chain)")
    parser.add_argument("--output", default="external_torques", metavar="DIR", help="directory for the results")


def external_torques(model, t, q, qd, tau, gain=DEFAULT_GAIN, friction=False, frame=None):
    """``(r, wrench)``: the residual (N, n) and the wrench at ``frame`` (N, 6) at every sample of the series."""
    observer = MomentumObserver(model, gain, frame=frame or tip_frame(model), friction=friction)
    residuals, wrenches = np.empty_like(q), np.empty((len(t), 6))
    for k in range(len(t)):
        residuals[k] = observer.update(float(t[k]), q[k], qd[k], tau[k])
        wrenches[k] = observer.wrench
    return residuals, wrenches


def run(args, model, out, err):
    """The command (module docstring); returns the exit status."""
    if not (np.isfinite(args.gain) and args.gain > 0):
        raise ValueError(f"--gain must be a positive number (1/s), got {args.gain:g}")
    frame = args.frame or tip_frame(model)
    check_wrench_frame(model, frame, "--frame")  # before the work: a frame no joint moves has no wrench
    recording = read_recording(args.recording, args.topic)
    t, q, qd, tau = resample(recording, model)
    if qd is None:
        err.write("warning: the recording has no velocities: using the positions' central differences\n")
        qd = np.gradient(q, t, axis=0)
    r, wrench = external_torques(model, t, q, qd, tau, args.gain, args.friction, frame)
    settled = t >= t[0] + 5.0 / args.gain  # the observer starts at 0: skip its first five time constants
    if not settled.any():
        raise ValueError(f"{args.recording}: {t[-1] - t[0]:.3g} s is shorter than five observer time constants "
                         f"({5 / args.gain:.3g} s)")
    rms = np.sqrt(np.mean(r[settled] ** 2, axis=0))
    peak = np.abs(r[settled]).max(axis=0)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    written = [output / "external_torques.csv"]
    header = ["t"] + [f"r_{name}" for name in model.joint_names] + [
        f"{part}_{frame}" for part in ("mx", "my", "mz", "fx", "fy", "fz")]
    np.savetxt(written[0], np.column_stack((t, r, wrench)), delimiter=",", header=",".join(header), comments="",
               fmt="%.10g")
    try:
        plot(output / "external_torques.png", model.joint_names, t, r, peak * SAFETY_FACTOR)
        written.append(output / "external_torques.png")
    except ImportError:
        err.write("warning: no plot: matplotlib is not installed (pip install matplotlib)\n")
    out.write(f"external torques of {model.name} over {t[-1] - t[0]:.3g} s ({len(t)} samples at "
              f"{1 / np.median(np.diff(t)):.4g} Hz), K_O {args.gain:g} 1/s, friction {'on' if args.friction else 'off'}, "
              f"after the first {5 / args.gain:.3g} s\n")
    width = max(len(name) for name in model.joint_names)
    out.write(f"  {'joint':<{width}}  {'RMS':>10}  {'peak':>10}  {'suggested threshold':>20}\n")
    for name, kind, a, b in zip(model.joint_names, model.joint_types, rms, peak):
        unit = "N" if kind == "prismatic" else "N m"
        out.write(f"  {name:<{width}}  {a:10.4g}  {b:10.4g}  {SAFETY_FACTOR * b:16.3g} {unit}\n")
    thresholds = ", ".join(f"{SAFETY_FACTOR * b:.3g}" for b in peak)
    out.write(f"collision.thresholds: [{thresholds}]  ({SAFETY_FACTOR:g} x the peak, if this recording has no "
              "contact)\n")
    out.write("wrote " + ", ".join(str(path) for path in written) + "\n")
    return 0


def plot(path, names, t, r, thresholds):
    """The residual per joint over time, with the suggested thresholds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(10, 5))
    for i, name in enumerate(names):
        line, = axis.plot(t - t[0], r[:, i], label=name, linewidth=0.8)
        axis.axhline(thresholds[i], color=line.get_color(), linestyle=":", linewidth=0.6)
        axis.axhline(-thresholds[i], color=line.get_color(), linestyle=":", linewidth=0.6)
    axis.set_xlabel("time (s)")
    axis.set_ylabel("external torque r (N m or N)")
    axis.set_title("Momentum-observer residual per joint (dotted: suggested thresholds)")
    axis.legend(fontsize="small", ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
