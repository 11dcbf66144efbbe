"""From a recording to the states and torques identification fits: steps 1 and 2 of
:mod:`.identify` (resampling onto one uniform grid, the zero-phase low-pass, derivatives,
decimation), each recording on its own; several recordings are stacked with the index of the
recording each sample came from."""

import warnings
from dataclasses import dataclass

import numpy as np

from .drive import time_stamp_notes
from .recording import RecordingError
from ..rigid_body.friction import DEFAULT_FRICTION_VELOCITY

PLAUSIBLE_MOTION = 1e4        # rad, m, rad/s or m/s: no recorded joint position or velocity comes near
PLAUSIBLE_EFFORT = 1e4        # times a joint's effort limit (1e6 N m or N without one): room for a units slip
DEFAULT_CUTOFF = 10.0          # Hz, the low-pass on q and tau
FILTER_ORDER = 4


class IdentificationError(ValueError):
    """Data that cannot give a trustworthy model; the message says what to do."""


@dataclass(frozen=True)
class Samples:
    """States and torques on a uniform grid, (N,) and (N, n) in model order; ``coulomb`` is
    ``tanh(qd / eps)`` through the same low-pass as the torques (it changes sign faster than the
    cut-off, so filtering it, not the velocity alone, keeps both sides of the equation alike);
    ``source`` (N,) the index of the recording of each sample."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    coulomb: np.ndarray
    source: np.ndarray = None

    def __post_init__(self):
        if self.source is None:
            object.__setattr__(self, "source", np.zeros(len(self.t), dtype=int))

    def part(self, rows):
        return Samples(self.t[rows], self.q[rows], self.qd[rows], self.qdd[rows], self.tau[rows], self.coulomb[rows],
                       self.source[rows])


def stacked(parts):
    """One :class:`Samples` of several, each part's samples marked with its index."""
    fields = ("t", "q", "qd", "qdd", "tau", "coulomb")
    columns = {name: np.concatenate([getattr(part, name) for part in parts]) for name in fields}
    return Samples(**columns, source=np.concatenate([np.full(len(part.t), k) for k, part in enumerate(parts)]))


def plausible_bound(model, quantity):
    """(n,) the largest magnitude a recorded sample of ``quantity`` may have: beyond it a sample is a
    glitch (a driver's garbage, a corrupted row), dropped like a NaN."""
    if quantity != "tau":
        return np.full(model.nv, PLAUSIBLE_MOTION)
    limits = np.asarray(model.effort_limits, dtype=float)
    return PLAUSIBLE_EFFORT * np.where(np.isfinite(limits) & (limits > 0), limits, 100.0)


def _clean(t, values, joint, quantity, source, bound=np.inf):
    """The samples of one series without NaNs or values beyond ``bound`` (warned about) and with
    strictly increasing times."""
    with np.errstate(invalid="ignore"):
        absurd = np.abs(values) > bound
    bad = ~np.isfinite(values) | ~np.isfinite(t) | absurd
    if bad.any():
        warnings.warn(f"{source}: {int(bad.sum())} of {len(t)} {quantity} samples of joint {joint!r} are NaN, "
                      f"infinite or implausible (|value| > {bound:.3g}) and were dropped (check the driver that "
                      "publishes them)", stacklevel=3)
        if bad.mean() > 0.5:
            raise IdentificationError(f"{source}: most {quantity} samples of joint {joint!r} are not finite or implausible")
    t, values = t[~bad], values[~bad]
    order = np.argsort(t, kind="stable")
    t, values = t[order], values[order]
    keep = np.concatenate([[True], np.diff(t) > 0])
    return t[keep], values[keep]


def resample(recording, model, passive=()):
    """(t, q, qd or None, tau) of the model's joints on one uniform grid over the common time span;
    irregular, repeated or unordered time stamps are reported (:func:`.drive.time_stamp_notes`); the
    joints named in ``passive`` are unactuated: their torque is 0, whatever the recording says."""
    source, names = recording.source, model.joint_names
    unknown = [name for name in passive if name not in names]
    if unknown:
        raise RecordingError(f"--passive {unknown[0]}: not a joint of {model.name!r} (joints: {', '.join(names)})")
    recording.for_model(names)
    missing = [name for name in names if name not in recording.series["q"]]
    if missing:
        raise RecordingError(
            f"{source}: no positions for joint(s) {', '.join(missing)} of {model.name!r} (the recording has "
            f"{', '.join(recording.joint_names) or 'no joints'}): record every joint, hold the missing ones at a position "
            f"with {' '.join(f'--lock {name}=VALUE' for name in missing)} (a closed gripper, a removed tool), or pass the "
            "URDF of the robot recorded")
    no_effort = [name for name in names if name not in recording.series["tau"] and name not in passive]
    if no_effort:
        raise RecordingError(
            f"{source}: no efforts for joint(s) {', '.join(no_effort)}: identification needs the measured joint "
            "torques; record joint_states from a driver that fills 'effort' (e.g. ros2_control's joint_state_broadcaster), or "
            f"declare an unactuated joint with --passive {no_effort[0]}")
    with_velocity = all(name in recording.series["qd"] for name in names)
    quantities = ("q", "qd", "tau") if with_velocity else ("q", "tau")
    for note in time_stamp_notes(source, recording.series["q"][names[0]][0]):  # one driver's clock stamps them all
        warnings.warn(note, stacklevel=2)
    bounds = {quantity: plausible_bound(model, quantity) for quantity in quantities}
    series = {(quantity, name): _clean(*recording.series[quantity][name], name, quantity, source, bounds[quantity][j])
              for quantity in quantities for j, name in enumerate(names)
              if not (quantity == "tau" and name in passive)}
    if any(len(t) == 0 for t, _ in series.values()):
        raise IdentificationError(f"{source}: a joint has no usable samples")
    start = max(t[0] for t, _ in series.values())
    end = min(t[-1] for t, _ in series.values())
    steps = np.concatenate([np.diff(t) for t, _ in series.values() if len(t) > 1] or [np.array([np.inf])])
    dt = float(np.median(steps))
    if not end > start or not np.isfinite(dt):
        raise IdentificationError(f"{source}: the joints' samples do not overlap in time")
    if (end - start) / dt > 1e8:
        raise IdentificationError(f"{source}: {end - start:.4g} s at steps of {dt:.3g} s is over 1e8 samples: check the "
                                  "time stamps (a step in ns read as s?)")
    t = np.arange(start, end + 1e-9 * dt, dt)
    grid = {key: np.interp(t, *values) for key, values in series.items()}
    grid.update({("tau", name): np.zeros(len(t)) for name in passive})
    stack = lambda quantity: np.column_stack([grid[quantity, name] for name in names])  # noqa: E731
    return t, stack("q"), stack("qd") if with_velocity else None, stack("tau")


def clock_gaps(recording, model, t, shortest=0.0):
    """(N,) bool over the grid ``t`` of :func:`resample`: the samples interpolated inside a gap in the
    recording's clock (a time step over ``GAP`` times the median and over ``shortest`` s, e.g. samples a
    logger dropped)."""
    from .drive import GAP

    stamps = np.unique(recording.series["q"][model.joint_names[0]][0])
    stamps = stamps[np.isfinite(stamps)]
    after = np.zeros(len(t), dtype=bool)
    if len(stamps) < 3:
        return after
    steps = np.diff(stamps)
    for k in np.flatnonzero(steps > max(GAP * np.median(steps), shortest)):
        after[(t > stamps[k]) & (t < stamps[k + 1] - 1e-9)] = True
    return after


def filtered(t, q, qd, tau, cutoff=DEFAULT_CUTOFF, friction_velocity=DEFAULT_FRICTION_VELOCITY):
    """Zero-phase low-passed q, qd, qdd and tau (:mod:`.identify`, step 2), edges trimmed, decimated."""
    import scipy.signal  # (here: see design_excitation)

    dt = float(t[1] - t[0]) if len(t) > 1 else np.inf
    rate = 1 / dt
    if cutoff >= rate / 2:
        raise IdentificationError(f"the cut-off {cutoff:g} Hz must be below half the sampling rate ({rate:.4g} Hz)")
    trim = int(np.ceil(2 / cutoff * rate))  # the filter's response settles within ~2 periods of the cut-off
    if len(t) < 2 * trim + 3 * FILTER_ORDER * 3:
        raise IdentificationError(f"the recording is too short ({len(t)} samples over {t[-1] - t[0]:.3g} s): "
                                  "record at least a whole excitation period (robot-dynamics excite)")
    sos = scipy.signal.butter(FILTER_ORDER, cutoff, fs=rate, output="sos")
    low = lambda x: scipy.signal.sosfiltfilt(sos, x, axis=0)  # noqa: E731
    q = low(q)
    qd = np.gradient(q, dt, axis=0) if qd is None else low(qd)
    qdd = np.gradient(qd, dt, axis=0)
    tau = low(tau)
    coulomb = low(np.tanh(qd / friction_velocity))
    step = max(1, int(rate / (4 * cutoff)))
    rows = slice(trim, len(t) - trim, step)
    return Samples(t[rows], q[rows], qd[rows], qdd[rows], tau[rows], coulomb[rows])
