"""The momentum observer's residual over a recording, the gain and the collision thresholds it suggests.

On a recording without contact the residual ``r`` of :class:`~robot_dynamics.control.observer.MomentumObserver`
is the model's error plus noise.  The gain: each of ``GAINS`` is tried and the largest whose peak
residual is at most ``NOISE_MARGIN`` times the lowest gain's on every joint is suggested (above it
the noise, not the model, sets the thresholds).  A suggested collision threshold is ``SAFETY_FACTOR``
times a joint's peak ``|r|``, skipping ``SETTLING`` time constants after each start (the observer
starts at ``r = 0``).

Where the peaks come from decides whether the thresholds hold.  ``external-torques`` takes them on
the recording it is given: with a URDF identified on that same recording they are in-sample, the
model's error there is what the fit minimised, and a pose the recording never visited gives more.
:func:`cross_validated` takes them out of sample instead (blocked cross-validation in time, as
``identify --holdout kfold:N`` validates torques): the data the model is fitted on are cut into
contiguous blocks, each block observed with a model fitted on the others (built as the node would
load it: :func:`~.report.identified_urdf`), and the peaks are taken over all blocks, for each gain.
Contiguous blocks, not shuffled samples: neighbouring samples share the filter and the pose, so a
shuffled split would still be in-sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ..control.collision import DEFAULT_MIN_DURATION, DEFAULT_RELEASE, CollisionDetector
from ..control.observer import MomentumObserver, tip_frame
from .identify import estimate
from .pipeline import corrected
from .samples import IdentificationError, clock_gaps

SAFETY_FACTOR = 1.5
"""Suggested threshold = this times the joint's peak residual on a contact-free recording."""
GAINS = (5.0, 10.0, 20.0, 50.0, 100.0)
"""K_O tried, 1/s, for the suggested gain."""
NOISE_MARGIN = 1.25
"""A gain is suggested while its peak residual stays within this factor of the lowest gain's on every joint."""
SETTLING = 5.0
"""Time constants 1/K_O skipped at the start (the observer starts at r = 0)."""
FOLDS = 5
"""Contiguous blocks of the cross-validated thresholds (``identify --holdout kfold:N`` sets N)."""


@dataclass(frozen=True)
class Stretch:
    """Samples the observer runs over from ``r = 0`` with ``model``: ``t`` (N,) on a uniform grid, ``q``,
    ``qd``, ``tau`` (N, n) in the URDF's conventions; ``restart`` (N,) True inside a gap in the clock."""

    model: object
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray
    restart: np.ndarray

    def part(self, rows, model=None):
        return Stretch(self.model if model is None else model, self.t[rows], self.q[rows], self.qd[rows], self.tau[rows],
                       self.restart[rows])


def velocities(t, q, cutoff):
    """qd from positions on the uniform grid ``t``: zero-phase 4th-order Butterworth at ``cutoff`` Hz
    (as ``identify``'s), then central differences."""
    import scipy.signal

    rate = 1 / float(t[1] - t[0])
    if not cutoff < rate / 2:
        raise IdentificationError(f"--cutoff {cutoff:g} Hz must be below half the sampling rate ({rate:.4g} Hz)")
    sos = scipy.signal.butter(4, cutoff, fs=rate, output="sos")
    return np.gradient(scipy.signal.sosfiltfilt(sos, q, axis=0), t, axis=0)


def observed(recording, model, drive, cutoff):
    """(:class:`Stretch` with ``model``, how its velocities were had): a recording as the observer takes it, read
    as ``identify`` reads it (:func:`~.pipeline.corrected`, one uniform grid), the gaps in its clock found
    (:func:`~.samples.clock_gaps`), its velocities the recorded ones (as the node takes them), else
    :func:`velocities` of its positions."""
    t, q, qd, tau = corrected(recording, model, drive)
    if len(t) < 3:
        raise IdentificationError(f"{recording.source}: {len(t)} samples: too few for the observer")
    how = "recorded"
    if qd is None:
        how = f"from the positions (zero-phase low-pass at {cutoff:g} Hz, central differences)"
        qd = velocities(t, q, cutoff)
    return Stretch(model, t, q, qd, tau, clock_gaps(recording, model, t)), how


def external_torques(model, t, q, qd, tau, gain, friction=False, frame=None, restart=None, wrench="full"):
    """``(r, wrench)``: the residual (N, n) and the wrench at ``frame`` (N, 6, ``[moment; force]`` in the
    frame's own axes about its origin, as ``external_wrench_estimate`` carries it) at every sample; the
    observer starts over at each sample where ``restart`` (N,) is True (NaN there and inside a gap)."""
    observer = MomentumObserver(model, gain, frame=frame or tip_frame(model), friction=friction, wrench=wrench)
    wrenches = np.full((len(t), 6), np.nan)
    return _run(observer, t, q, qd, tau, restart, wrenches), wrenches


def _run(observer, t, q, qd, tau, restart, wrenches=None):
    """(N, n) ``observer``'s residual at every sample, starting over at each sample where ``restart`` (N,) is
    True (NaN there and inside a gap); with ``wrenches`` (N, 6), the wrench at its frame into it."""
    residuals = np.full_like(q, np.nan)
    restart = np.zeros(len(t), dtype=bool) if restart is None else restart
    for k in range(len(t)):
        if restart[k]:
            observer.reset()
            continue
        residuals[k] = observer.update(float(t[k]), q[k], qd[k], tau[k])
        if wrenches is not None:
            wrenches[k] = observer.wrench_in()
    return residuals


def gap_count(restart):
    """How many gaps in the clock ``restart`` (N,) marks (True inside each)."""
    return int(np.sum(restart[1:] & ~restart[:-1]) + restart[0])


def settled(t, restart, gain):
    """(N,) bool: samples at least ``SETTLING / gain`` s after the start and after each restart."""
    started = np.maximum.accumulate(np.where(restart, t, t[0]))
    return (t >= started + SETTLING / gain) & ~restart


def residual(stretch, gain, friction):
    """(N, n) the observer's residual over ``stretch`` (NaN inside gaps); no frame: no wrench estimated."""
    return _run(MomentumObserver(stretch.model, gain, friction=friction), stretch.t, stretch.q, stretch.qd,
                stretch.tau, stretch.restart)


def peak_residuals(stretches, residuals, settling_gain):
    """(n,) each joint's peak ``|r|`` in ``residuals`` (one (N, n) per stretch of ``stretches``), skipping
    ``SETTLING / settling_gain`` s after each start and gap; NaN when no sample is left."""
    peaks = np.full(stretches[0].q.shape[1], np.nan)
    for stretch, r in zip(stretches, residuals):
        calm = settled(stretch.t, stretch.restart, settling_gain)
        if calm.any():
            peaks = np.fmax(peaks, np.abs(r[calm]).max(axis=0))
    return peaks


def suggested_gain(stretches, friction):
    """(K_O, {K_O: peak residual (n,)}, {K_O: residuals (one (N, n) per stretch)}): the largest of ``GAINS``
    whose peaks over ``stretches`` stay within ``NOISE_MARGIN`` of the lowest gain's (module docstring),
    every gain judged after the lowest gain's settling time."""
    if not any(settled(s.t, s.restart, GAINS[0]).any() for s in stretches):
        longest = max(s.t[-1] - s.t[0] for s in stretches)
        raise IdentificationError(f"{longest:.3g} s of recording: too short to choose the gain (it takes "
                                  f"{SETTLING / GAINS[0]:g} s without a gap): give --gain")
    runs = {gain: [residual(stretch, gain, friction) for stretch in stretches] for gain in GAINS}
    peaks = {gain: peak_residuals(stretches, runs[gain], GAINS[0]) for gain in GAINS}
    floor = peaks[GAINS[0]]
    return max(gain for gain in GAINS if np.all(peaks[gain] <= NOISE_MARGIN * floor + 1e-9)), peaks, runs


@dataclass(frozen=True)
class Thresholds:
    """Cross-validated ``thresholds`` (n,) = ``SAFETY_FACTOR`` x ``peaks`` (n,), the out-of-block peak
    ``|r|`` at ``gain``; ``candidates`` {K_O: peaks} when the gain was chosen; ``folds`` blocks; ``gaps`` in
    the recordings' clocks, after each of which the observer restarted."""

    gain: float
    peaks: np.ndarray
    candidates: dict | None
    folds: int
    gaps: int

    @property
    def thresholds(self):
        return SAFETY_FACTOR * self.peaks


@threadpool_limits.wrap(limits=1, user_api="blas")  # as identify's own fit (pipeline.identify)
def cross_validated(problem, fitted, stretches, folds, to_model, friction, gain=None):
    """:class:`Thresholds` from blocked cross-validation (module docstring).

    ``problem`` and ``fitted`` (stacked :class:`~.samples.Samples`) are the fit's; ``stretches`` one
    :class:`Stretch` per recording on its full grid (``fitted.source`` indexes them); ``to_model`` turns an
    :class:`~.identify.Estimate` into the model the node would load; ``gain`` fixed, or None:
    :func:`suggested_gain` over the held-out blocks."""
    held = []
    for rows in np.array_split(np.arange(len(fitted.t)), folds):
        train = np.ones(len(fitted.t), dtype=bool)
        train[rows] = False
        model = to_model(estimate(problem, fitted.part(train)))
        for source in np.unique(fitted.source[rows]):
            times = fitted.t[rows[fitted.source[rows] == source]]
            whole = stretches[source]
            held.append(whole.part((whole.t >= times[0]) & (whole.t <= times[-1]), model))
    if gain is None:  # (the chosen gain's runs are reused: each gain's observer runs once over each block)
        gain, candidates, runs = suggested_gain(held, friction)
        residuals = runs[gain]
    else:
        candidates, residuals = None, [residual(stretch, gain, friction) for stretch in held]
    peaks = peak_residuals(held, residuals, gain)
    if not np.all(np.isfinite(peaks)):
        raise IdentificationError(f"no block of the fit data lasts {SETTLING / gain:.3g} s without a gap (five "
                                  "observer time constants): too short for cross-validated thresholds")
    return Thresholds(gain, peaks, candidates, folds, sum(gap_count(stretch.restart) for stretch in stretches))


@dataclass(frozen=True)
class ThresholdCheck:
    """The thresholds against the residual of held-out data: each joint's ``peaks`` (n,) and the number
    of ``collisions`` the node's detector (default release and minimum duration) counts, over ``duration`` s."""

    peaks: np.ndarray
    collisions: int
    duration: float


def checked(stretches, windows, thresholds, gain, friction):
    """:class:`ThresholdCheck` of the observer run over each of ``stretches`` whole, judged inside its
    ``windows`` entry ``(t_start, t_end)`` after each start's and gap's settling time."""
    peaks, collisions, duration = np.zeros(len(thresholds)), 0, 0.0
    for stretch, (start, end) in zip(stretches, windows):
        r = residual(stretch, gain, friction)
        judged = settled(stretch.t, stretch.restart, gain) & (stretch.t >= start) & (stretch.t <= end)
        if not judged.any():
            continue
        duration += float(np.sum(judged) * np.median(np.diff(stretch.t)))
        peaks = np.maximum(peaks, np.abs(r[judged]).max(axis=0))
        detector = CollisionDetector(np.asarray(thresholds, dtype=float), DEFAULT_RELEASE, DEFAULT_MIN_DURATION)
        for k in np.flatnonzero(judged):  # (across a gap the node restarts its observer, not its detector)
            collisions += detector.update(float(stretch.t[k]), r[k]) is True
    return ThresholdCheck(peaks, collisions, duration)


def identified_thresholds(estimate, validation, recordings, validation_recording, model, urdf_path, locks, drive,
                          cutoff, folds=FOLDS, gain=None, payload=None):
    """``identify``'s collision thresholds: (:class:`Thresholds` cross-validated over the data ``estimate`` was
    fitted on (``validation.fitted``), :class:`ThresholdCheck` of them on the held-out data with the model
    written (None with ``kfold``: nothing was left out), whether that model has friction to subtract)."""
    import warnings

    import robot_dynamics as rd

    from .report import identified_urdf

    def to_model(fitted_estimate):  # as the node loads identified.urdf
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # said when the URDF was loaded
            return rd.load_urdf(identified_urdf(urdf_path, fitted_estimate, payload), locks=locks or None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recordings' warnings were said when identify read them
        stretches = [observed(recording, model, drive, cutoff)[0] for recording in recordings]
        other = None if validation_recording is None else observed(validation_recording, model, drive, cutoff)[0]
    written = to_model(estimate)
    friction = bool(np.any(written.viscous_damping) or np.any(written.friction))
    found = cross_validated(estimate.problem, validation.fitted, stretches, folds, to_model, friction, gain)
    if other is not None:
        held, windows = [other.part(slice(None), written)], [(-np.inf, np.inf)]
    elif validation.fitted is validation.samples:  # kfold: every block was in the fit of the model written
        return found, None, friction
    else:
        sources = np.unique(validation.samples.source)
        held = [stretches[source].part(slice(None), written) for source in sources]
        windows = [(validation.samples.t[validation.samples.source == source].min(),
                    validation.samples.t[validation.samples.source == source].max()) for source in sources]
    return found, checked(held, windows, found.thresholds, found.gain, friction), friction


def threshold_lines(model, found, check, label):
    """What ``identify`` prints of its thresholds (``label`` names the held-out data of ``check``)."""
    lines = [f"collision thresholds, cross-validated: the fit's data cut into {found.folds} contiguous blocks, each "
             f"observed with a model fitted on the other {found.folds - 1} (the momentum observer as the node runs it)"]
    if found.candidates is not None:
        lines.append("  out-of-block peak residual per K_O (1/s): " + "; ".join(
            f"{k:g}: {np.max(p):.3g}" for k, p in found.candidates.items()) + " (largest over joints)")
        lines.append(f"  K_O {found.gain:g} 1/s suggested: the largest gain whose peaks stay within {NOISE_MARGIN:g} "
                     "times the lowest gain's on every joint")
    else:
        lines.append(f"  K_O {found.gain:g} 1/s (--gain)")
    if found.gaps:
        lines.append(f"  gaps in the clock: {found.gaps} (the observer restarted after each, as the node does)")
    width = max(len(name) for name in model.joint_names)
    held = "" if check is None else f"  {'held-out peak':>13}"
    lines.append(f"  {'joint':<{width}}  {'out-of-block peak':>17}  {'threshold':>9}{held}")
    for k, (name, kind) in enumerate(zip(model.joint_names, model.joint_types)):
        unit = "N" if kind == "prismatic" else "N m"
        row = f"  {name:<{width}}  {found.peaks[k]:17.4g}  {found.thresholds[k]:9.3g}"
        lines.append(row + ("" if check is None else f"  {check.peaks[k]:13.4g}") + f" {unit}")
    lines.append(f"collision.thresholds: [{', '.join(f'{x:.3g}' for x in found.thresholds)}]  ({SAFETY_FACTOR:g} x the "
                 "out-of-block peak, if the recordings have no contact)")
    if check is None:
        lines.append("  (--holdout kfold: no data were left out of the thresholds to check them on)")
    else:
        worst = int(np.argmax(check.peaks / found.thresholds))
        lines.append(f"on {label} ({check.duration:.3g} s, the model written): {check.collisions} false collision(s) "
                     f"with these thresholds (collision.min_duration {DEFAULT_MIN_DURATION:g} s); largest |r| / "
                     f"threshold {check.peaks[worst] / found.thresholds[worst]:.2f} ({model.joint_names[worst]})")
    return lines


def collision_yaml(model, found, friction, drive, node="robot_dynamics"):
    """The dynamics node's ``external_torque.*`` and ``collision.*`` parameters for ``--params-file``."""
    floats = lambda values: "[" + ", ".join(repr(round(float(v), 4)) for v in values) + "]"  # noqa: E731
    lines = [f"# collision thresholds cross-validated by robot-dynamics identify ({found.folds} blocks, "
             f"{SAFETY_FACTOR:g} x the out-of-block peak residual), for identified.urdf;",
             f"# one value per joint of joints (the recording's, a joint locked with --lock left out); node name "
             f"{node!r} is the dynamics node's default",
             f"{node}:", "  ros__parameters:", "    joints: [" + ", ".join(f'"{name}"' for name in model.joint_names) + "]",
             "    external_torque:", "      enabled: true",
             f"      gain: {float(found.gain)!r}", f"      friction: {'true' if friction else 'false'}"]
    if drive.effort_sign is not None and np.any(drive.effort_sign != 1):
        lines.append(f"      effort_sign: {floats(drive.effort_sign)}")
    if drive.passive:
        lines.append("      passive: [" + ", ".join(f'"{name}"' for name in drive.passive) + "]")
    lines += ["    collision:", f"      thresholds: {floats(found.thresholds)}"]
    return "\n".join(lines) + "\n"
