"""The whole of ``identify``: recordings in, the estimate and its honest validation out.

Each recording is resampled, corrected for its drive's conventions (:mod:`.drive`: effort
sign and scale, positions in degrees), checked for units slips, filtered on its own, then
all are stacked: one fit sees every recording (several days, several trajectories), each
optionally with its own constant torque offset per joint.  The held-out part follows
``holdout`` (:mod:`.validation`) unless a separate validation recording is given.
"""

import warnings
from dataclasses import dataclass, replace

import numpy as np
from threadpoolctl import threadpool_limits

import robot_dynamics as rd

from .drive import check_positions, check_torques
from .identify import estimate, full_problem, payload_problem, rms
from .samples import DEFAULT_CUTOFF, IdentificationError, Samples, filtered, resample, stacked
from .validation import Holdout, describe, repeat_period, repeat_warning, splits


@dataclass(frozen=True)
class Validation:
    """Measured and predicted torques (N, n) on data not used for the fit, and their RMS per joint;
    ``fitted``: the samples the returned estimate was fitted on (what its thresholds cross-validate)."""

    label: str
    samples: Samples
    identified: np.ndarray
    input: np.ndarray          # predicted by the input URDF (its friction included)
    fitted: Samples = None

    @property
    def rms_torque(self):
        return rms(self.samples.tau)

    @property
    def rms_identified(self):
        return rms(self.samples.tau - self.identified)

    @property
    def rms_input(self):
        return rms(self.samples.tau - self.input)


@dataclass(frozen=True)
class DriveSettings:
    """How the recordings' numbers map to the URDF's: efforts times ``effort_sign`` (n,) and
    ``effort_scale``; positions and velocities times ``position_scale`` (pi / 180 for degrees);
    the joints in ``passive`` are unactuated (torque 0, whatever is recorded)."""

    effort_sign: np.ndarray = None
    effort_scale: float = 1.0
    position_scale: float = 1.0
    passive: tuple = ()


def predicted(estimate, samples):
    """The identified model's torques; a recording whose torque offsets were not fitted (a
    separate validation recording) gets each joint's mean error as its offset."""
    torques = estimate.predict(samples)
    unseen = samples.source >= estimate.problem.offsets
    if estimate.problem.offsets and unseen.any():
        for source in np.unique(samples.source[unseen]):
            rows = samples.source == source
            torques[rows] += (samples.tau[rows] - torques[rows]).mean(axis=0)
    return torques


def validate(estimate, samples, label, identified=None, nominal_model=None, fitted=None):
    """The identified model's (``identified``, else predicted) and the input URDF's (``nominal_model``,
    default the problem's, its friction included) torques against ``samples``; ``fitted`` the fit's samples."""
    model, qd = nominal_model or estimate.problem.model, samples.qd
    nominal = (rd.inverse_dynamics(model, samples.q, qd, samples.qdd) + model.viscous_damping * qd
               + model.friction * samples.coulomb)
    return Validation(label, samples, predicted(estimate, samples) if identified is None else identified, nominal,
                      fitted)


def corrected(recording, model, drive):
    """(t, q, qd or None, tau) of a recording on one uniform grid (:func:`.samples.resample`) in the
    URDF's conventions (``drive``), positions checked for a units slip: what both ``identify`` and
    ``external-torques`` read."""
    t, q, qd, tau = resample(recording, model, drive.passive)
    q = q * drive.position_scale
    qd = None if qd is None else qd * drive.position_scale
    check_positions(recording.source, model, q)
    sign = np.ones(model.nv) if drive.effort_sign is None else drive.effort_sign
    return t, q, qd, tau * sign * drive.effort_scale


def prepared(recording, model, cutoff, drive):
    """A recording's :class:`Samples`: resampled, corrected (``drive``), checked for units slips, filtered."""
    samples = filtered(*corrected(recording, model, drive), cutoff)
    check_torques(recording.source, model, samples, degrees_possible=drive.position_scale == 1)
    return samples


# BLAS on one thread: its matrices here (at most (p + 1) columns) gain little from a second
# thread on an idle machine and lose up to 10x on a busy one, where threads wait for each other
@threadpool_limits.wrap(limits=1, user_api="blas")
def identify(recordings, model, friction=False, payload=None, validation=None, cutoff=DEFAULT_CUTOFF,
             holdout=Holdout(), armature=False, offsets=False, drive=DriveSettings(), period=None):
    """(:class:`~.identify.Estimate`, :class:`Validation`) from one or several
    :class:`~.recording.Recording`.

    ``friction`` identifies viscous and Coulomb friction per joint; without it a whole-robot fit is
    rigid body only and the URDF's friction is left out (warned: a URDF's ``<dynamics>`` are often a
    simulator's values), while ``payload`` trusts the robot's URDF, its friction included.
    The armature is estimated on the coordinates whose URDF gives one, or on every coordinate with
    ``armature`` (not with ``payload``: the robot is trusted); ``offsets``: a constant torque
    offset per joint and recording.  Without a ``validation`` recording the part ``holdout``
    (a :class:`~.validation.Holdout` or a fraction of the end) is kept out of the fit and used
    for validation; ``period`` (s) is the excitation's, if known (else detected), for the
    warning that the held-out part repeats what the fit saw.
    """
    recordings = list(recordings) if isinstance(recordings, (list, tuple)) else [recordings]
    if payload is not None and armature:
        raise IdentificationError("the armature is the robot's: identify the robot (with --armature) first, "
                                  "then the payload alone (--payload trusts the robot's URDF)")
    if not isinstance(holdout, Holdout):
        if not 0 < holdout < 1:
            raise IdentificationError(f"holdout must be in (0, 1), got {holdout}")
        holdout = Holdout("last", float(holdout))
    count = len(recordings) if offsets else 0
    nominal = model
    if not friction and payload is None and (np.any(model.viscous_damping) or np.any(model.friction)):
        warnings.warn(friction_note(model), stacklevel=2)
        model = without_friction(model)
    problem = (payload_problem(model, payload, friction, offsets=count) if payload is not None
               else full_problem(model, friction, armature, offsets=count))
    samples = stacked([prepared(recording, model, cutoff, drive) for recording in recordings])
    if validation is not None:
        held = prepared(validation, model, cutoff, drive)
        held = Samples(*(getattr(held, f) for f in ("t", "q", "qd", "qdd", "tau", "coulomb")),
                       source=np.full(len(held.t), len(recordings)))
        result = estimate(problem, samples)
        return result, validate(result, held, validation.source, nominal_model=nominal, fitted=samples)
    masks = splits(holdout, samples.source)
    _check_parts(holdout, masks)
    _warn_if_repeated(samples, masks, period, describe(holdout, [r.source for r in recordings]))
    if holdout.kind != "kfold":
        fit, held = masks[0]
        result = estimate(problem, samples.part(fit))
        return result, validate(result, samples.part(held), describe(holdout, [r.source for r in recordings]),
                                nominal_model=nominal, fitted=samples.part(fit))
    out_of_block = np.empty_like(samples.tau)
    for fit, held in masks:
        out_of_block[held] = predicted(estimate(problem, samples.part(fit)), samples.part(held))
    result = estimate(problem, samples)
    return result, validate(result, samples, describe(holdout, [r.source for r in recordings]), out_of_block, nominal,
                            samples)


def without_friction(model):
    """The model with no joint or motor friction: a rigid-body fit's (``identify`` without ``--friction``)."""
    zeros = np.zeros(model.nv)
    zeros.setflags(write=False)  # read-only like every array of the model
    return replace(model, damping=zeros, friction=zeros, motor_damping=zeros)


def friction_note(model):
    joints = [name for name, d, f in zip(model.joint_names, model.viscous_damping, model.friction) if d or f]
    return (f"the URDF's friction (damping up to {np.max(model.viscous_damping):.3g}, friction up to "
            f"{np.max(model.friction):.3g} on {', '.join(joints)}) is left out: without --friction the fit is rigid-body "
            "only and identified.urdf sets it to 0; pass --friction to identify it")


MIN_PART = 20  # states in the fit and in the held-out part, at least


def _check_parts(holdout, masks):
    option = f"kfold:{holdout.folds}" if holdout.kind == "kfold" else f"{holdout.kind}:{holdout.fraction:g}"
    for fit, held in masks:
        if min(fit.sum(), held.sum()) < MIN_PART:
            raise IdentificationError(f"--holdout {option}: keeps {int(held.sum())} of {len(held)} samples for "
                                      f"validation and {int(fit.sum())} for the fit; each needs at least {MIN_PART}: "
                                      "give a fraction nearer 0.25")


def _warn_if_repeated(samples, masks, period, label):
    """Warn when the held-out part repeats the excitation's period that the fit saw (:mod:`.validation`)."""
    first = samples.part(samples.source == 0)
    if period is None:
        period, correlation = repeat_period(first.t, first.q)
        how = f"detected: the positions' autocorrelation at that lag is {correlation:.2f}"
    else:
        how = "from the excitation file"
    step = float(np.median(np.diff(first.t))) if len(first.t) > 1 else 0.0
    for fit, _ in masks:
        message = repeat_warning(period, how, np.sum(fit & (samples.source == 0)) * step, label)
        if message:
            warnings.warn(message, stacklevel=3)
            return
