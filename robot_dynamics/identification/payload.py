"""What the robot holds: a payload's ten inertial parameters on one link, from the joint torques.

The payload's torques are the regressor's columns of the body that carries the link (Spong
eq. 6.122), its ten parameters given in the link's frame and moved onto that body
(:func:`.identify.payload_transform`: the model folds fixed joints, so a link is a body and a
placement)::

    tau_measured - tau_model(q, qd, qdd) = Y_payload(q, qd, qdd) pi_payload

with ``tau_model`` the robot without the payload, its URDF friction included, and ``pi_payload``
= ``(m, m c, Ibar)`` about the link frame's origin in its axes.  We fit this regressor equation,
not the momentum observer's residual (:mod:`robot_dynamics.control.observer`): the residual is
the same torque passed through a first-order filter of time constant ``1/K_O``, so in motion its
regressor would have to pass the same filter, while the regressor route reads a window through
identification's zero-phase low-pass, the same on both sides of the equation
(:func:`.samples.filtered`), and needs no observer state; at rest the two are the same torque.

A window is one of two kinds (:func:`estimate_payload`):

poses
    the arm held still in a few poses (most of the window at rest): only gravity acts, so only
    the mass and the first moment ``m c`` show, from the samples at rest.  In one orientation
    of the link relative to gravity the centre of mass along gravity makes no torque: the
    poses must hold the link in at least two orientations ``MIN_TILT_DEG`` apart.  The inertia
    is reported undetermined (a point mass at the centre of mass is what can be applied).
motion
    an excitation (most of the window moving): all ten parameters, physically consistent
    (identification's log-Cholesky fit, :func:`.identify.estimate`: mass > 0, inertia positive
    definite and its triangle inequalities) with standard deviations for correlated residuals
    (:mod:`.uncertainty`) and what the window sees (:func:`.visibility.classify`).

A window without efforts, with too few distinct orientations, or whose mass comes out
non-positive is refused with the reason (:class:`~.samples.IdentificationError`).
"""

from dataclasses import dataclass

import numpy as np

import robot_dynamics as rd
from ..rigid_body.model import inertial_parameters_about_origin

from .identify import estimate as identify_estimate, payload_problem
from .parameters import PARAMETER_NAMES, condition_number, is_physically_consistent, mass_com_inertia
from .pipeline import DriveSettings, prepared
from .report import payload_yaml
from .samples import DEFAULT_CUTOFF, IdentificationError, clock_gaps
from .uncertainty import newey_west_covariance
from .visibility import WORDS, classify

REST_VELOCITY = 0.02       # rad/s (m/s): every joint slower than this, and ...
REST_ACCELERATION = 0.2    # rad/s^2 (m/s^2): ... accelerating less: a sample at rest
SETTLE_PERIODS = 2.0       # of the cut-off: samples this near a motion are not at rest
MIN_MOVING_FRACTION = 0.5  # of the window's samples moving: an excitation (all ten parameters)
MIN_REST_SAMPLES = 8       # filtered samples at rest (10 Hz cut-off: 40 a second), at least
MIN_TILT_DEG = 20.0        # between two orientations of the link relative to gravity that count as distinct
MAX_CONDITION = 1e4        # of the poses' column-scaled regressor (identify's bound)
GRAVITY_PARAMETERS = 4     # m, mx, my, mz: what poses at rest show


@dataclass(frozen=True)
class PayloadEstimate:
    """The payload on ``link``: ``theta`` its ten parameters about the link frame's origin in its axes
    (``m, mx, my, mz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz``), ``sigma`` the standard deviation of each (NaN where
    ``determined`` is false: those keep a point mass's values), from a window of kind ``mode``."""

    link: str
    mode: str                  # 'poses' or 'motion'
    theta: np.ndarray
    sigma: np.ndarray
    determined: np.ndarray     # (10,) bool
    orientations: int          # distinct orientations of the link relative to gravity at rest
    samples: int               # filtered samples fitted
    rest_seconds: float
    window_seconds: float
    residual_rms: np.ndarray   # (n,) per joint, N m or N
    joint_names: tuple

    @property
    def mass(self):
        return float(self.theta[0])

    @property
    def com(self):
        """Centre of mass in the link frame, m."""
        return mass_com_inertia(self.theta)[1]

    @property
    def inertia(self):
        """3x3 inertia about the centre of mass in the link's axes, kg m^2 (zeros when not determined)."""
        return mass_com_inertia(self.theta)[2] if self.inertia_determined else np.zeros((3, 3))

    @property
    def inertia_six(self):
        """The inertia as URDF's ixx ixy ixz iyy iyz izz (``payload.inertia``)."""
        I = self.inertia
        return [float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]), float(I[1, 2]), float(I[2, 2])]

    @property
    def inertia_determined(self):
        return bool(self.determined[4:].all())

    @property
    def com_sigma(self):
        """Standard deviation of each centre-of-mass coordinate, m (first order: c = h / m)."""
        return np.sqrt(self.sigma[1:4] ** 2 + (self.com * self.sigma[0]) ** 2) / self.mass

    def parameters_yaml(self, node="robot_dynamics"):
        """The dynamics node's ``payload.*`` parameters, ready to paste into a params file."""
        return payload_yaml(self.link, inertial_parameters_about_origin(self.mass, self.com, self.inertia),
                            node).replace("robot-dynamics identify", "payload estimation")

    def set_commands(self, node="robot_dynamics"):
        """The ``ros2 param set`` lines that apply it to a running dynamics node."""
        floats = lambda values: "[" + ", ".join(f"{float(v):.6g}" for v in values) + "]"  # noqa: E731
        return [f"ros2 param set /{node} payload.link {self.link}",
                f"ros2 param set /{node} payload.mass {self.mass:.6g}",
                f"ros2 param set /{node} payload.com \"{floats(self.com)}\"",
                f"ros2 param set /{node} payload.inertia \"{floats(self.inertia_six)}\""]

    def report_lines(self):
        """What the node's service and ``robot-dynamics estimate-payload`` say."""
        if self.mode == "poses":
            how = (f"from poses held still ({self.rest_seconds:.1f} s at rest in a {self.window_seconds:.1f} s window; "
                   f"{self.orientations} orientations of {self.link} relative to gravity)")
        else:
            how = f"from motion ({self.window_seconds:.1f} s, {self.samples} filtered samples)"
        c, sc = self.com, self.com_sigma
        lines = [f"payload on {self.link} {how}:",
                 f"  mass {self.mass:.4f} kg +- {self.sigma[0]:.2g}",
                 "  centre of mass (link frame) [" + ", ".join(f"{v:.4f}" for v in c) + "] m +- ["
                 + ", ".join(f"{v:.2g}" for v in sc) + "]"]
        if self.inertia_determined:
            lines.append("  inertia about the centre of mass (link axes) ixx ixy ixz iyy iyz izz ["
                         + ", ".join(f"{v:.4g}" for v in self.inertia_six) + "] kg m^2")
        else:
            lines.append("  inertia: not determined (poses held still show gravity only: move the arm over the window, "
                         "e.g. an excitation, to see it); applied as a point mass (inertia 0)")
        lines.append("  physically consistent: " + ("yes (mass > 0, inertia positive semi-definite, triangle inequalities)"
                                                    if is_physically_consistent(self.theta) else "NO"))
        lines.append("  " + visibility_line(self))
        lines.append("  residual torque RMS per joint: " + ", ".join(
            f"{name} {value:.3g}" for name, value in zip(self.joint_names, self.residual_rms)))
        return lines


def visibility_line(result):
    """Which of the ten parameters the window determines (with 2 sigma) and which it cannot."""
    seen, unseen = [], []
    for k, name in enumerate(PARAMETER_NAMES):
        word = WORDS[name]
        if not result.determined[k]:
            unseen.append(word)
            continue
        value = result.theta[k]
        two_sigma = 2 * result.sigma[k]
        seen.append(f"{word} (+-{100 * two_sigma / abs(value):.2g} %)" if abs(value) > two_sigma
                    else f"{word} (near 0: +-{two_sigma:.2g})")
    text = "what the window sees (2 sigma): " + ", ".join(seen)
    if unseen:
        text += "; not determined: " + ", ".join(unseen)
    return text


def recording_of(joint_names, t, q, qd, tau, source="window"):
    """A :class:`~.recording.Recording` of arrays (N,) and (N, n) in ``joint_names`` order (the node's window)."""
    from .recording import Recording

    recording = Recording(source)
    for quantity, values in (("q", q), ("qd", qd), ("tau", tau)):
        if values is not None:
            recording.series[quantity] = {name: (np.asarray(t, float), np.asarray(values)[:, j])
                                          for j, name in enumerate(joint_names)}
    return recording


def near(samples, flagged, cutoff=DEFAULT_CUTOFF):
    """(N,) bool: within ``SETTLE_PERIODS`` periods of the low-pass's cut-off of a ``flagged`` sample (the
    filter's response to it reaches that far either side)."""
    if len(samples.t) < 2 or not flagged.any():
        return flagged
    reach = int(np.ceil(SETTLE_PERIODS / cutoff / np.median(np.diff(samples.t))))
    return np.convolve(flagged, np.ones(2 * reach + 1), mode="same") > 0


def at_rest(samples, cutoff=DEFAULT_CUTOFF):
    """(N,) bool: every joint slower than ``REST_VELOCITY`` and accelerating less than ``REST_ACCELERATION``,
    and not :func:`near` a sample that is not (the low-pass rings on after a motion: such samples mix the
    motion's torques into the pose's)."""
    still = (np.abs(samples.qd).max(axis=1) < REST_VELOCITY) & (np.abs(samples.qdd).max(axis=1) < REST_ACCELERATION)
    return ~near(samples, ~still, cutoff)


def orientations(model, link, q):
    """How many orientations of ``link`` relative to gravity, ``MIN_TILT_DEG`` apart, the states ``q`` hold."""
    rotations = rd.frame_pose(model, q, link)[..., :3, :3]
    down = model.gravity / np.linalg.norm(model.gravity)
    directions = np.einsum("kji,j->ki", rotations, down)  # gravity in the link's axes, R^T g
    kept = []
    cos_tilt = np.cos(np.radians(MIN_TILT_DEG))
    for d in directions:
        if all(d @ other < cos_tilt for other in kept):
            kept.append(d)
    return len(kept)


def estimate_payload(recording, model, link, cutoff=DEFAULT_CUTOFF, drive=DriveSettings()):
    """The :class:`PayloadEstimate` on ``link`` from a :class:`~.recording.Recording` (a bag, a CSV or the
    node's window) of ``model`` without the payload; IdentificationError (or RecordingError) says why not."""
    if not np.any(model.gravity):
        raise IdentificationError("the model has no gravity: a payload's mass shows only through gravity or motion")
    problem = payload_problem(model, link, friction=False)  # (an unknown link, or one on the base: refused)
    efforts = recording.series["tau"].values()
    if efforts and not any(np.any(values[np.isfinite(values)]) for _, values in efforts):
        raise IdentificationError(f"{recording.source}: every effort is 0: the driver does not report joint torques, "
                                  "and a payload shows only in them")
    samples = prepared(recording, model, cutoff, drive)  # (a recording without efforts: refused)
    # samples the resampling invented across a gap in the clock (states not kept, a logger's drop-outs) longer
    # than a quarter of the low-pass's period: out, with the filter's reach either side
    gaps = near(samples, clock_gaps(recording, model, samples.t, shortest=0.25 / cutoff), cutoff)
    if len(samples.t) - gaps.sum() < MIN_REST_SAMPLES:
        raise IdentificationError(f"{recording.source}: {gaps.sum()} of its {len(samples.t)} filtered samples are in or "
                                  f"near a gap in its clock (steps over {250 / cutoff:g} ms: states not kept, or "
                                  "dropped): too few left")
    samples = samples.part(~gaps)
    rest = at_rest(samples, cutoff)
    window = float(samples.t[-1] - samples.t[0]) if len(samples.t) > 1 else 0.0
    dt = float(np.median(np.diff(samples.t))) if len(samples.t) > 1 else 0.0
    if 1 - rest.mean() >= MIN_MOVING_FRACTION:
        return _from_motion(problem, samples, link, window, float(rest.sum() * dt))
    return _from_poses(problem, samples.part(rest), link, window, float(rest.sum() * dt))


def _from_motion(problem, samples, link, window, rest_seconds):
    result = identify_estimate(problem, samples)  # (too little excitation: refused, the condition number named)
    determined = np.zeros(10, dtype=bool)
    sigma = np.full(10, np.nan)
    for column, (kind, _, row) in classify(result).items():
        if column < 10 and kind == "alone":
            determined[column] = True
            sigma[column] = result.base_std[row]
    if not determined[0]:
        raise IdentificationError(f"the motion does not determine the payload's mass on {link}: move the joints "
                                  "that lift it")
    model = problem.model
    residual = samples.tau - result.predict(samples)
    return PayloadEstimate(link, "motion", result.x[:10].copy(), sigma, determined, orientations(model, link, samples.q),
                           len(samples.t), rest_seconds, window, np.sqrt(np.mean(residual ** 2, axis=0)),
                           model.joint_names)


def _from_poses(problem, rest, link, window, rest_seconds):
    model = problem.model
    N, n = rest.q.shape
    if N < MIN_REST_SAMPLES:
        raise IdentificationError(
            f"too few samples at rest ({N}, {rest_seconds:.2f} s) and too little motion for the inertia: hold the arm "
            f"still in at least 2 poses (about 2 s each, {link} tilted by at least {MIN_TILT_DEG:g} deg between "
            "them), or move it over most of the window")
    count = orientations(model, link, rest.q)
    if count < 2:
        raise IdentificationError(
            f"too few distinct poses: the samples at rest hold {link} in {count} orientation relative to gravity "
            f"(poses within {MIN_TILT_DEG:g} deg of one another); the mass and centre of mass need at least 2 (in one, "
            f"the centre of mass along gravity makes no torque): tilt {link} by at least {MIN_TILT_DEG:g} deg between poses")
    A, known = problem.matrix(rest)
    A = A[:, :GRAVITY_PARAMETERS]  # (at rest the inertia's columns vanish)
    z = (rest.tau - known).ravel()
    condition = condition_number(A)
    if not condition <= MAX_CONDITION:
        raise IdentificationError(f"the poses do not determine the mass and centre of mass on {link} (condition number "
                                  f"{condition:.3g} > {MAX_CONDITION:g}): hold poses that tilt {link} differently")
    x = np.linalg.lstsq(A, z, rcond=None)[0]
    residual = (z - A @ x).reshape(N, n)
    covariance, _ = newey_west_covariance(A.reshape(N, n, -1), residual)
    if not x[0] > 0:
        raise IdentificationError(f"the poses give a mass of {x[0]:.3g} kg on {link} (<= 0): no payload, or efforts with "
                                  "the wrong sign (external_torque.effort_sign, --effort-sign)")
    theta = inertial_parameters_about_origin(x[0], x[1:4] / x[0], np.zeros((3, 3)))  # a point mass: consistent
    sigma = np.full(10, np.nan)
    sigma[:GRAVITY_PARAMETERS] = np.sqrt(np.maximum(np.diag(covariance), 0))
    determined = np.arange(10) < GRAVITY_PARAMETERS
    return PayloadEstimate(link, "poses", theta, sigma, determined, count, N, rest_seconds, window,
                           np.sqrt(np.mean(residual ** 2, axis=0)), model.joint_names)
