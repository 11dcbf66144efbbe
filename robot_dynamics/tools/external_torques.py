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

On a recording without contact the residual is the model's error plus noise.  The gain: each of
``GAINS`` is tried and the largest whose peak residual is at most ``NOISE_MARGIN`` times the
lowest gain's is suggested (above it the noise, not the model, sets the thresholds); ``--gain``
fixes it.  The suggested collision thresholds are ``SAFETY_FACTOR`` times each joint's peak.
Writes ``DIR/external_torques.csv`` (``t``, ``r_<joint>``, and the wrench at ``--frame``, a link some
joint moves, as ``external_wrench_estimate`` carries it: in that link's axes, about its origin) and
``DIR/external_torques.png`` (all or nothing, the output
checked before the work) and prints the table.
"""

from __future__ import annotations

import io

import numpy as np

from ..identification.output import OutputError, check_directory, write_directory
from ..identification.pipeline import corrected
from ..identification.reading import (
    add_recording_arguments, check_recording_arguments, drive_settings, one_line_warnings, read_recordings, recording_model,
)
from ..identification.recording import RecordingError
from ..identification.samples import DEFAULT_CUTOFF, IdentificationError, clock_gaps
from ..control.observer import MomentumObserver, check_wrench_frame, tip_frame

__all__ = ["ERRORS", "GAINS", "SAFETY_FACTOR", "add_arguments", "external_torques", "run"]

SAFETY_FACTOR = 1.5
"""Suggested threshold = this times the joint's peak residual on a contact-free recording."""
GAINS = (5.0, 10.0, 20.0, 50.0, 100.0)
"""K_O tried, 1/s, for the suggested gain."""
NOISE_MARGIN = 1.25
"""A gain is suggested while its peak residual stays within this factor of the lowest gain's on every joint."""
SETTLING = 5.0
"""Time constants 1/K_O skipped at the start (the observer starts at r = 0)."""
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


def velocities(t, q, cutoff):
    """qd from positions on the uniform grid ``t``: zero-phase 4th-order Butterworth at ``cutoff`` Hz
    (as ``identify``'s), then central differences."""
    import scipy.signal

    rate = 1 / float(t[1] - t[0])
    if not cutoff < rate / 2:
        raise IdentificationError(f"--cutoff {cutoff:g} Hz must be below half the sampling rate ({rate:.4g} Hz)")
    sos = scipy.signal.butter(4, cutoff, fs=rate, output="sos")
    return np.gradient(scipy.signal.sosfiltfilt(sos, q, axis=0), t, axis=0)


def external_torques(model, t, q, qd, tau, gain, friction=False, frame=None, restart=None, wrench="full"):
    """``(r, wrench)``: the residual (N, n) and the wrench at ``frame`` (N, 6, ``[moment; force]`` in the
    frame's own axes about its origin, as ``external_wrench_estimate`` carries it) at every sample; the
    observer starts over at each sample where ``restart`` (N,) is True (NaN there and inside a gap)."""
    observer = MomentumObserver(model, gain, frame=frame or tip_frame(model), friction=friction, wrench=wrench)
    residuals, wrenches = np.full_like(q, np.nan), np.full((len(t), 6), np.nan)
    restart = np.zeros(len(t), dtype=bool) if restart is None else restart
    for k in range(len(t)):
        if restart[k]:
            observer.reset()
            continue
        residuals[k] = observer.update(float(t[k]), q[k], qd[k], tau[k])
        wrenches[k] = observer.wrench_in()
    return residuals, wrenches


def settled(t, restart, gain):
    """(N,) bool: samples at least ``SETTLING / gain`` s after the start and after each restart."""
    started = np.maximum.accumulate(np.where(restart, t, t[0]))
    return (t >= started + SETTLING / gain) & ~restart


def suggested_gain(model, t, q, qd, tau, friction, restart):
    """(K_O, {K_O: peak residual (n,)}): the largest of ``GAINS`` whose peaks stay within ``NOISE_MARGIN``
    of the lowest gain's (module docstring)."""
    calm = settled(t, restart, GAINS[0])
    if not calm.any():
        raise IdentificationError(f"{t[-1] - t[0]:.3g} s of recording: too short to choose the gain (it takes "
                                  f"{SETTLING / GAINS[0]:g} s without a gap): give --gain")
    peaks = {}
    for gain in GAINS:
        r, _ = external_torques(model, t, q, qd, tau, gain, friction, restart=restart)
        peaks[gain] = np.abs(r[calm]).max(axis=0)
    floor = peaks[GAINS[0]]
    return max(gain for gain in GAINS if np.all(peaks[gain] <= NOISE_MARGIN * floor + 1e-9)), peaks


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
    t, q, qd, tau = corrected(recording, model, drive)
    if len(t) < 3:
        raise IdentificationError(f"{args.recording}: {len(t)} samples: too few for the observer")
    restart = clock_gaps(recording, model, t)
    velocity = "recorded"
    if qd is None:
        velocity = f"from the positions (zero-phase low-pass at {args.cutoff:g} Hz, central differences)"
        qd = velocities(t, q, args.cutoff)
    candidates = None
    gain = args.gain
    if gain is None:
        gain, candidates = suggested_gain(model, t, q, qd, tau, args.friction, restart)
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
    gaps = int(np.sum(restart[1:] & ~restart[:-1]) + restart[0])
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
              "contact)\n")
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
