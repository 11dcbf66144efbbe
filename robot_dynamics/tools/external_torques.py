"""``robot-dynamics external-torques RECORDING --urdf URDF``: the observer's residual over a recording.

The recording is read exactly as ``identify`` reads it (:mod:`robot_dynamics.identification.reading`:
the same options ``--lock``, ``--passive``, ``--rate``, ``--effort-sign``, ``--effort-scale``,
``--position-unit``, the same checks, one uniform time grid) and played through
:class:`robot_dynamics.control.observer.MomentumObserver` sample by sample, as the dynamics node would see it.

Velocities: the recorded ones, as the node takes them; a recording without them gets the
derivative of its positions low-passed by the same zero-phase filter as ``identify``
(``--cutoff``, default 10 Hz): central differences alone turn encoder quantisation into velocity
noise that the observer passes on, amplified by the gain.  Gaps in the clock (a time step over
1.5 median steps, or samples a CSV's clock dropped, found by :func:`~robot_dynamics.identification.recording.skipped_samples`)
are reported and the observer restarts after each, as the node does.

The suggested gain (``--gain`` fixes it) and collision thresholds (``SAFETY_FACTOR`` times each
joint's peak) follow :mod:`robot_dynamics.identification.residuals`, on this recording: with a URDF
identified on it they are in-sample (optimistic); ``identify`` writes cross-validated ones.
Writes ``DIR/external_torques.csv`` (``t``, ``r_<joint>``, and the wrench at ``--frame``, a link some
joint moves, as ``external_wrench_estimate`` carries it: in that link's axes, about its origin) and
``DIR/external_torques.png`` (all or nothing, the output
checked before the work) and prints the table.
"""

from __future__ import annotations

import io

import numpy as np

from ..identification.output import OutputError, check_directory, write_directory
from ..identification.reading import (
    add_recording_arguments, check_recording_arguments, drive_settings, one_line_warnings, read_recordings, recording_model,
)
from ..identification.recording import RecordingError
from ..identification.residuals import (
    GAINS, NOISE_MARGIN, SAFETY_FACTOR, SETTLING, external_torques, gap_count, observed, settled, suggested_gain,
)
from ..identification.samples import DEFAULT_CUTOFF, IdentificationError
from ..control.observer import check_wrench_frame, tip_frame

__all__ = ["ERRORS", "GAINS", "SAFETY_FACTOR", "add_arguments", "external_torques", "run"]

RESULTS = ("external_torques.csv", "external_torques.png")
ERRORS = (RecordingError, IdentificationError, OutputError, ValueError)


def add_arguments(parser):
    add_recording_arguments(parser, several=False)
    parser.add_argument("--friction", action="store_true",
                        help="subtract the URDF's friction (damping, friction): use it with an identified URDF")
    parser.add_argument("--gain", type=float, metavar="K_O",
                        help=f"observer gain K_O, 1/s (default: chosen from the data among {', '.join(map('{:g}'.format, GAINS))})")
    parser.add_argument("--frame", help="link of the wrench estimate (default: the tip of the chain)")
    parser.add_argument("--wrench", choices=("full", "force"), default="full",
                        help="full: [moment; force] at the frame (6 or more joints); force: a point force at the frame's "
                             "origin (a contact point, fewer joints)")
    parser.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF, metavar="HZ",
                        help=f"low-pass of the positions whose derivative is the velocity of a recording without one "
                             f"(default {DEFAULT_CUTOFF:g})")
    parser.add_argument("--output", default="external_torques", metavar="DIR", help="directory for the results")


def run(args, model, urdf_path, out, err):
    """The command (module docstring); returns the exit status."""
    with one_line_warnings(err):
        return _run(args, model, urdf_path, out, err)


def _run(args, model, urdf_path, out, err):
    if args.gain is not None and not (np.isfinite(args.gain) and args.gain > 0):
        raise ValueError(f"--gain {args.gain:g}: give a positive, finite number (1/s)")
    if not (np.isfinite(args.cutoff) and args.cutoff > 0):
        raise ValueError(f"--cutoff {args.cutoff:g}: give a positive, finite number (Hz)")
    check_recording_arguments(args)
    check_directory(args.output, names=RESULTS)
    model, locks = recording_model(args, model, urdf_path)
    frame = args.frame or tip_frame(model)
    check_wrench_frame(model, frame, "--frame")  # before the work: a frame no joint moves has no wrench
    drive = drive_settings(args, model)
    recording = read_recordings([args.recording], args, locks)[0]
    stretch, velocity = observed(recording, model, drive, args.cutoff)
    t, q, qd, tau, restart = stretch.t, stretch.q, stretch.qd, stretch.tau, stretch.restart
    candidates = None
    gain = args.gain
    if gain is None:
        gain, candidates, _ = suggested_gain([stretch], args.friction)
    r, wrench = external_torques(model, t, q, qd, tau, gain, args.friction, frame, restart, args.wrench)
    calm = settled(t, restart, gain)
    if not calm.any():
        raise IdentificationError(f"{args.recording}: {t[-1] - t[0]:.3g} s is shorter than five observer time "
                                  f"constants ({SETTLING / gain:.3g} s)")
    rms = np.sqrt(np.mean(r[calm] ** 2, axis=0))
    peak = np.abs(r[calm]).max(axis=0)
    if not (np.all(np.isfinite(rms)) and np.all(np.isfinite(wrench[calm]))):
        raise IdentificationError(f"{args.recording}: the residual is not finite: check the recording's efforts and "
                                  "the URDF")
    files = {"external_torques.csv": _table(model, frame, t, r, wrench)}
    try:
        image = io.BytesIO()
        plot(image, model.joint_names, t, r, peak * SAFETY_FACTOR)
        files["external_torques.png"] = image.getvalue()
    except ImportError:
        err.write("warning: no plot: matplotlib is not installed (pip install matplotlib)\n")
    write_directory(args.output, files)
    _report(out, args, model, t, qd, restart, gain, candidates, velocity, rms, peak, files)
    return 0


def _table(model, frame, t, r, wrench):
    header = ["t"] + [f"r_{name}" for name in model.joint_names] + [
        f"{part}_{frame}" for part in ("mx", "my", "mz", "fx", "fy", "fz")]
    text = io.StringIO()
    np.savetxt(text, np.column_stack((t, r, wrench)), delimiter=",", header=",".join(header), comments="", fmt="%.10g")
    return text.getvalue().encode()


def noise_floor(t, qd):
    """(n,) the velocities' RMS above 20 Hz (or above a fifth of the sampling rate, if lower), rad/s or m/s."""
    import scipy.signal

    rate = 1 / float(t[1] - t[0])
    sos = scipy.signal.butter(4, min(20.0, rate / 5), fs=rate, btype="highpass", output="sos")
    return np.sqrt(np.mean(scipy.signal.sosfiltfilt(sos, qd, axis=0) ** 2, axis=0))


def _report(out, args, model, t, qd, restart, gain, candidates, velocity, rms, peak, files):
    gaps = gap_count(restart)
    out.write(f"external torques of {model.name} over {t[-1] - t[0]:.3g} s ({len(t)} samples at "
              f"{1 / np.median(np.diff(t)):.4g} Hz), friction {'on' if args.friction else 'off'}, velocities {velocity}\n")
    out.write(f"gaps in the clock: {gaps}" + (" (the observer restarted after each)\n" if gaps else "\n"))
    out.write("velocity noise above 20 Hz (rad/s or m/s): "
              + ", ".join(f"{name} {value:.2g}" for name, value in zip(model.joint_names, noise_floor(t, qd))) + "\n")
    if candidates is not None:
        out.write("peak residual per K_O (1/s): " + "; ".join(
            f"{k:g}: {np.max(p):.3g}" for k, p in candidates.items()) + " (largest over joints)\n")
        out.write(f"K_O {gain:g} 1/s suggested: the largest gain whose peaks stay within {NOISE_MARGIN:g} times the "
                  f"lowest gain's on every joint (above it, noise sets the thresholds); external_torque.gain: {gain:g}\n")
    else:
        out.write(f"K_O {gain:g} 1/s (--gain)\n")
    out.write(f"after the first {SETTLING / gain:.3g} s (and as long after each gap):\n")
    width = max(len(name) for name in model.joint_names)
    out.write(f"  {'joint':<{width}}  {'RMS':>10}  {'peak':>10}  {'suggested threshold':>20}\n")
    for name, kind, a, b in zip(model.joint_names, model.joint_types, rms, peak):
        unit = "N" if kind == "prismatic" else "N m"
        out.write(f"  {name:<{width}}  {a:10.4g}  {b:10.4g}  {SAFETY_FACTOR * b:16.3g} {unit}\n")
    thresholds = ", ".join(f"{SAFETY_FACTOR * b:.3g}" for b in peak)
    out.write(f"collision.thresholds: [{thresholds}]  ({SAFETY_FACTOR:g} x the peak, if this recording has no "
              "contact; in-sample if the URDF was identified on it: identify's collision.yaml holds cross-validated "
              "ones)\n")
    out.write("wrote " + ", ".join(f"{args.output}/{name}" for name in files) + "\n")


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
    figure.savefig(path, dpi=110, format="png")
    plt.close(figure)
