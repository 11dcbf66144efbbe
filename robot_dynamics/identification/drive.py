"""What real drives and loggers do to a recording, found and undone before identification.

* **Time stamps** from a logger's clock: repeated stamps (a row logged twice), stamps out of
  order, steps that jitter around the robot's period.  Repeats are dropped (the first kept),
  the rest sorted, and every series is interpolated onto one uniform grid at the median step
  (the robot's clock, when its period is evident as the most common step); each is reported.
* **Dropped samples** in a recording without time stamps (a CSV read with ``--rate``): a row the
  logger's clock skipped shows as a position step a whole multiple of its neighbours' (twice for
  one missing sample); :func:`.recording.skipped_samples` finds them and the reader restores the time.
* **Effort conventions**: a drive may report torques with the opposite sign (``--effort-sign``,
  per joint or for all) or in other units (``--effort-scale``, e.g. 0.001 for mN m).
* **Units slips**, checked against the URDF: positions far beyond a joint's limits that fit
  within them once read as degrees; torques whose scale is far from the URDF model's torques
  on the same motion (mN m: a thousand times too large).  A slip that would write an absurd
  model is refused, naming the likely cause and the option that undoes it; a smaller mismatch
  is warned about.
"""

import warnings

import numpy as np

import robot_dynamics as rd

from .recording import RecordingError

DEGREES_MARGIN = 1.2          # positions beyond 1.2x the distance to a joint's limits are "far beyond" them
TORQUE_SCALE_REFUSED = 30.0   # measured/URDF torque scale beyond this (or below its inverse): a units slip
TORQUE_SCALE_WARNED = 3.0     # beyond this: warned (a URDF from CAD is off by tens of percent, not by 3x)
SIGNIFICANT = 0.1             # joints whose rigid-body torque is at least 10 % of the largest joint's are judged
JITTER = 0.25                 # time steps beyond +-25 % of the median step are irregular
GAP = 1.5                     # a time step over 1.5 median steps is a gap in the clock


def parse_effort_signs(model, values):
    """(n,) signs from ``['-1']`` (every joint) or ``['joint=-1', ...]`` (the others +1)."""
    signs = np.ones(model.nv)
    if not values:
        return signs
    pairs = [("", values[0])] if len(values) == 1 and "=" not in values[0] else [v.partition("=")[::2] for v in values]
    for name, text in pairs:
        if text.strip() not in ("1", "-1", "+1"):
            raise RecordingError(f"--effort-sign: give 1 or -1 (for every joint) or joint=-1 pairs, not {text!r}")
        if name and name not in model.joint_names:
            raise RecordingError(f"--effort-sign: unknown joint {name!r} (joints: {', '.join(model.joint_names)})")
        signs[[model.joint_names.index(name)] if name else slice(None)] = float(text)
    return signs


def time_stamp_notes(source, t):
    """Warnings about the raw time stamps ``t`` of a recording's series (before repeats are dropped)."""
    notes = []
    steps = np.diff(t)
    if len(steps) < 2:
        return notes
    backwards, repeated = int(np.sum(steps < 0)), int(np.sum(steps == 0))
    if backwards:
        notes.append(f"{source}: {backwards} time stamps go backwards: the samples were sorted by time")
    if repeated:
        notes.append(f"{source}: {repeated} of {len(t)} samples ({100 * repeated / len(t):.1f} %) repeat "
                     "the previous time stamp: the repeats were dropped")
    forward = np.sort(steps[steps > 0])
    if len(forward):
        median = float(np.median(forward))
        irregular = float(np.mean(np.abs(forward - median) > JITTER * median))
        if irregular > 0.01:
            notes.append(f"{source}: time steps range over {1e3 * forward[0]:.3g}-{1e3 * forward[-1]:.3g} ms "
                         f"around {1e3 * median:.3g} ms ({100 * irregular:.1f} % off by more than {100 * JITTER:.0f} %: "
                         "a logger's clock?): the samples were interpolated onto a uniform grid at that median step")
    return notes


def check_positions(source, model, q):
    """Refuse positions (N, n) far beyond the URDF's limits that would fit them read as degrees."""
    lower, upper = np.asarray(model.position_limits, dtype=float).T
    revolute = np.array([kind in ("revolute", "continuous") for kind in model.joint_types])
    limited = np.isfinite(lower) & np.isfinite(upper)
    low, high = q.min(axis=0), q.max(axis=0)
    with np.errstate(invalid="ignore"):  # unlimited joints: inf - inf
        centre, half = (lower + upper) / 2, (upper - lower) / 2
    far = limited & ((high - centre > DEGREES_MARGIN * half + 0.1) | (centre - low > DEGREES_MARGIN * half + 0.1))
    as_radians = (np.radians(low) >= lower - 0.05 * half) & (np.radians(high) <= upper + 0.05 * half)
    slips = np.flatnonzero(far & revolute & as_radians)
    if len(slips) and len(slips) >= max(1, np.sum(far & revolute)) / 2:
        j = slips[0]
        raise RecordingError(
            f"{source}: positions of {', '.join(model.joint_names[k] for k in slips)} reach "
            f"[{low[j]:.4g}, {high[j]:.4g}], far beyond {model.joint_names[j]}'s limits [{lower[j]:.4g}, {upper[j]:.4g}] rad, "
            "and within them read as degrees: the recording looks to be in degrees; pass --position-unit deg")
    for j in np.flatnonzero(far):
        warnings.warn(f"{source}: positions of {model.joint_names[j]} reach [{low[j]:.4g}, {high[j]:.4g}], far beyond its "
                      f"URDF limits [{lower[j]:.4g}, {upper[j]:.4g}]: check the recording's units and the URDF", stacklevel=3)


def _nominal(model, samples, scale=1.0):
    """The URDF model's rigid-body torques on the samples' motion, revolute positions times ``scale``."""
    factor = np.where([kind in ("revolute", "continuous") for kind in model.joint_types], scale, 1.0)
    q, qd, qdd = samples.q * factor, samples.qd * factor, samples.qdd * factor
    return rd.inverse_dynamics(model, q, qd, qdd)  # rigid body: a URDF's friction is rarely the robot's


def _misfit(measured, nominal):
    return float(np.sum(np.sqrt(np.mean((measured - nominal) ** 2, axis=0))) / max(np.sum(np.sqrt(np.mean(measured**2, axis=0))), 1e-300))


def check_torques(source, model, samples, degrees_possible=True):
    """Refuse torques whose scale is far from the URDF model's on the same motion (a units slip:
    over ``TORQUE_SCALE_REFUSED`` times, the median over joints or one joint), or that the URDF
    model explains far better with the positions read as degrees; warn about a scale off by a few
    times or a joint whose torques look sign-flipped.  The scale is judged on the joints whose
    rigid-body torque is at least ``SIGNIFICANT`` of the largest joint's: on the others friction,
    which the URDF rarely knows, sets the torque."""
    nominal = _nominal(model, samples)
    measured = samples.tau
    if degrees_possible and any(kind in ("revolute", "continuous") for kind in model.joint_types):
        misfit, as_degrees = _misfit(measured, nominal), _misfit(measured, _nominal(model, samples, np.pi / 180))
        if misfit > 0.5 and as_degrees < 0.5 * misfit:
            raise RecordingError(
                f"{source}: the URDF model misses the recorded torques by {100 * misfit:.0f} % with the positions "
                f"in radians and by {100 * as_degrees:.0f} % with them in degrees: the recording looks to be in degrees; "
                "pass --position-unit deg")
    model_rms = np.sqrt(np.mean(nominal**2, axis=0))
    scale = np.sqrt(np.mean(measured**2, axis=0)) / np.maximum(model_rms, 1e-12)
    # only where the rigid body sets the torque: elsewhere friction, not the units, sets it
    judged = (model_rms >= SIGNIFICANT * model_rms.max()) & np.any(measured != 0, axis=0)  # (a passive joint: 0)
    if not judged.any():
        return
    typical = float(np.exp(np.median(np.log(np.maximum(scale[judged], 1e-300)))))
    if not 1 / TORQUE_SCALE_REFUSED <= typical <= TORQUE_SCALE_REFUSED:
        slip = _likely_unit(typical)
        raise RecordingError(
            f"{source}: the recorded torques are {typical:.3g} times those the URDF model needs for the same motion "
            f"(median over joints){slip}: pass --effort-scale {1 / typical:.3g} if that is the slip, or check the URDF")
    for j in np.flatnonzero(judged & ((scale > TORQUE_SCALE_REFUSED) | (scale < 1 / TORQUE_SCALE_REFUSED))):
        raise RecordingError(f"{source}: the torques of {model.joint_names[j]} are {scale[j]:.3g} times those its URDF "
                             "model needs for the same motion: check that drive's units (mN m, a gear ratio) or the URDF")
    for j in np.flatnonzero(judged & ((scale > TORQUE_SCALE_WARNED) | (scale < 1 / TORQUE_SCALE_WARNED))):
        warnings.warn(f"{source}: the torques of {model.joint_names[j]} are {scale[j]:.3g} times those its URDF model "
                      "needs for the same motion: check its units or the URDF", stacklevel=3)
    centred = lambda x: x - x.mean(axis=0)  # noqa: E731
    correlation = np.sum(centred(measured) * centred(nominal), axis=0) / np.maximum(
        np.sqrt(np.sum(centred(measured) ** 2, axis=0) * np.sum(centred(nominal) ** 2, axis=0)), 1e-300)
    flipped = np.flatnonzero(correlation < -0.5)
    if len(flipped):
        names = ", ".join(model.joint_names[j] for j in flipped)
        warnings.warn(f"{source}: the torques of {names} run against the URDF model's (correlation "
                      f"{', '.join(f'{correlation[j]:.2f}' for j in flipped)}): does the drive report effort with the "
                      f"opposite sign? then pass --effort-sign {' '.join(f'{model.joint_names[j]}=-1' for j in flipped)}",
                      stacklevel=3)


def _likely_unit(ratio):
    for factor, unit in ((1e3, "mN m instead of N m"), (1e-3, "kN m instead of N m"), (100.0, "N cm instead of N m")):
        if abs(np.log10(ratio / factor)) < 0.5:
            return f": the likely slip is {unit}"
    return ""
