"""The dynamics node's external torques and collision detection, without rclpy: parameters, plan, per-message logic.

With ``external_torque.enabled`` the node runs the generalized-momentum observer
(:class:`robot_dynamics.control.observer.MomentumObserver`) on every fresh joint state: ``tau_m`` is the
``effort`` of ``joint_states`` times ``external_torque.effort_sign`` (for drives that report the
torque the other way round), the time is the state's stamp.  Efforts are tracked per joint like
positions; a message's efforts beyond the plausibility rule (non-finite, or above 1000 times the
joint's torque scale) are refused whole, and the state they came with gives no output; an effort
missing or older than ``state_timeout`` stops the outputs (and restarts the observer once they are
back: the torque over the gap is unknown).  Publishers stamping by different clocks stop them too
(:class:`StampClocks`).

Collision detection (``collision.thresholds``, one per output joint; empty = off;
``collision.release``, ``collision.min_duration``) is
:class:`robot_dynamics.control.collision.CollisionDetector`'s.  ``collision.reaction``: ``none``, or
``gravity``: from the first collision, effort_command carries the gravity hold ``g(q)`` until
``~/reset_collision`` (refused while the collision lasts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...control.collision import DEFAULT_MIN_DURATION, DEFAULT_RELEASE
from ...control.observer import DEFAULT_GAIN, MomentumObserver, check_wrench_frame, tip_frame
from ..common.parameters import Parameter, Rejected, bounded_float, float_list, name_list, one_of

__all__ = ["EXTERNAL_TORQUE_FIELDS", "EXTERNAL_TORQUE_PARAMETERS", "EXTERNAL_TORQUE_TOPICS", "REACTIONS", "ExternalTorquePlan",
           "EffortTracker", "StampClocks", "coerce_external_torque", "compile_external_torque"]

REACTIONS = ("none", "gravity")

#: Settings field -> default (the node's Settings carries these fields)
EXTERNAL_TORQUE_FIELDS = {
    "external_torque_enabled": False, "external_torque_gain": DEFAULT_GAIN, "external_torque_frame": "",
    "external_torque_wrench_frame": "",
    "external_torque_friction": False, "external_torque_effort_sign": (1.0,),
    "collision_thresholds": (), "collision_release": DEFAULT_RELEASE, "collision_min_duration": DEFAULT_MIN_DURATION,
    "collision_reaction": "none", "external_torque_wrench": "full", "external_torque_passive": (),
}

EXTERNAL_TORQUE_PARAMETERS = (
    Parameter("external_torque.enabled", False, "Estimate the external joint torques (generalized-momentum "
              "observer) from joint_states' position, velocity and effort; publishes external_torques and "
              "external_wrench_estimate.", "bool", field="external_torque_enabled"),
    Parameter("external_torque.gain", DEFAULT_GAIN, "Observer gain K_O, 1/s: the estimate follows a step of "
              "external torque with time constant 1/K_O.", "double", low=1e-3, high=1e5, field="external_torque_gain"),
    Parameter("external_torque.frame", "", "Link whose external wrench is estimated (a link some joint moves); "
              "empty = the tip of the chain.", "string", field="external_torque_frame"),
    Parameter("external_torque.friction", False, "Subtract the URDF friction damping*qd + "
              "friction*tanh(qd/friction_velocity) from the measured torque.", "bool", field="external_torque_friction"),
    Parameter("external_torque.effort_sign", 1.0, "+1 or -1, one number or one per output joint: the measured "
              "torque is effort_sign * effort (-1 for a drive that reports the torque the load exerts).",
              field="external_torque_effort_sign"),
    Parameter("collision.thresholds", [], "Collision thresholds on |external torque|, one per output joint, "
              "N m or N (> 0); empty = no collision detection.", field="collision_thresholds"),
    Parameter("collision.release", DEFAULT_RELEASE, "A collision ends when every |external torque| is below "
              "release * its threshold (0 < release <= 1).", "double", low=0.01, high=1.0, field="collision_release"),
    Parameter("collision.min_duration", DEFAULT_MIN_DURATION, "A threshold must be exceeded this long (state "
              "stamps, s) before a collision is declared; 0 = at the first sample.", "double", low=0.0, high=1.0,
              field="collision_min_duration"),
    Parameter("collision.reaction", "none", "On a collision: none | gravity (effort_command holds gravity "
              "until ~/reset_collision).", "string", field="collision_reaction"),
    Parameter("external_torque.wrench_frame", "", "Frame external_wrench_estimate is expressed in (its header.frame_id: "
              "that link's axes, moment about its origin); empty = external_torque.frame itself, as an F/T sensor "
              "there; e.g. the root link for base-frame wrenches.", "string", field="external_torque_wrench_frame"),
    Parameter("external_torque.wrench", "full", "full: [moment; force] at the frame (6 joints or more); force: a "
              "point force at the frame's origin, no moment (a contact point; 3 joints or more).", "string",
              field="external_torque_wrench"),
    Parameter("external_torque.passive", [], "Unactuated joints (a sliding stand, a free wheel): their motor "
              "torque is 0, whatever effort says.", field="external_torque_passive"),
)

EXTERNAL_TORQUE_TOPICS = (
    ("external_torques", "sensor_msgs/JointState", "out", "with external_torque.enabled: effort = the "
     "estimated external joint torques (output order), stamp of the state used"),
    ("external_wrench_estimate", "geometry_msgs/WrenchStamped", "out", "the wrench the environment applies to "
     "external_torque.frame, in header.frame_id's axes about its origin (frame_id = external_torque.wrench_frame, "
     "default that link)"),
    ("collision", "std_msgs/Bool", "out", "with collision.thresholds: reliable, transient local, on every change"),
)


def coerce_external_torque(field: str, value):
    """An external_torque.* or collision.* Settings field's value; ValueError names the parameter and the problem."""
    param = field.replace("external_torque_", "external_torque.").replace("collision_", "collision.")
    if field in ("external_torque_enabled", "external_torque_friction"):
        return bool(value)
    if field == "external_torque_gain":
        return bounded_float(param, value, 0.0, 1e5, low_open=True)
    if field in ("external_torque_frame", "external_torque_wrench_frame"):
        return str(value)
    if field == "external_torque_effort_sign":
        signs = float_list(param, value, scalar=True)
        if not signs or any(s not in (1.0, -1.0) for s in signs):
            raise ValueError(f"{param} must be +1 or -1 (one, or one per output joint), got {list(signs)}")
        return signs
    if field == "collision_thresholds":
        thresholds = float_list(param, value, strict=False)
        if any(t <= 0 for t in thresholds):
            raise ValueError(f"{param} must be > 0, got {list(thresholds)}")
        return thresholds
    if field == "collision_release":
        return bounded_float(param, value, 0.0, 1.0, low_open=True)
    if field == "collision_min_duration":
        return bounded_float(param, value, 0.0, 1.0)
    if field == "collision_reaction":
        return one_of(param, value, REACTIONS)
    if field == "external_torque_wrench":
        return one_of(param, value, ("full", "force"))
    if field == "external_torque_passive":
        return name_list(param, value)
    raise KeyError(field)


@dataclass(frozen=True, eq=False)
class ExternalTorquePlan:
    """The observer's and the detector's settings applied to one model and output order."""

    frame: str                 # link of the wrench estimate
    wrench_frame: str          # the frame it is expressed in (header.frame_id)
    sign: np.ndarray           # per model coordinate: tau_m = sign * effort
    thresholds: np.ndarray     # per output joint; empty: no detection
    settings: object           # the node's Settings

    def observer(self, model) -> MomentumObserver:
        s = self.settings
        return MomentumObserver(model, s.external_torque_gain, frame=self.frame, friction=s.external_torque_friction,
                                friction_velocity=s.friction_velocity, wrench=s.external_torque_wrench)


def compile_external_torque(model, out: np.ndarray, s) -> ExternalTorquePlan | None:
    """The :class:`ExternalTorquePlan` of the settings (None when ``external_torque.enabled`` is false);
    ValueError names the problem (an unknown frame, a count that does not match the output joints)."""
    n_out = len(out)
    if s.collision_thresholds and len(s.collision_thresholds) != n_out:
        raise ValueError(f"collision.thresholds has {len(s.collision_thresholds)} values; give one per output "
                         f"joint ({n_out}), or none")
    if len(s.external_torque_effort_sign) not in (1, n_out):
        raise ValueError(f"external_torque.effort_sign has {len(s.external_torque_effort_sign)} values; give one, "
                         f"or one per output joint ({n_out})")
    if not s.external_torque_enabled:
        if s.collision_thresholds:
            raise ValueError("collision.thresholds needs external_torque.enabled: true")
        return None
    frame = s.external_torque_frame or tip_frame(model)
    check_wrench_frame(model, frame, "external_torque.frame")
    wrench_frame = s.external_torque_wrench_frame or frame
    if wrench_frame not in model.frames:
        raise ValueError(f"external_torque.wrench_frame {wrench_frame!r} is not a link of robot {model.name!r}")
    sign = np.ones(model.nv)
    sign[out] = s.external_torque_effort_sign
    unknown = [name for name in s.external_torque_passive if name not in model.joint_names]
    if unknown:
        raise ValueError(f"external_torque.passive: {unknown[0]!r} is not a joint of robot {model.name!r}")
    sign[[model.joint_names.index(name) for name in s.external_torque_passive]] = 0.0  # tau_m = 0
    return ExternalTorquePlan(frame=frame, wrench_frame=wrench_frame, sign=sign, thresholds=np.array(s.collision_thresholds, dtype=float),
                       settings=s)


class EffortTracker:
    """The measured efforts of the model's coordinates, merged by name, each with its arrival time (ns);
    a message's efforts are refused whole when one is not believed (``plausibility``: the torque bound
    of :class:`~robot_dynamics.nodes.common.safety.Plausibility`, the rule of every torque in and out)."""

    NEVER = -(2 ** 62)

    def __init__(self, joint_names, plausibility):
        self.index = {name: i for i, name in enumerate(joint_names)}
        self.plausibility = plausibility
        self.effort = np.zeros(len(joint_names))
        self.effort_ns = np.full(len(joint_names), self.NEVER, dtype=np.int64)
        self._maps: dict = {}

    def update(self, names, effort, now_ns: int) -> None:
        """Merge a message's efforts (an empty effort array changes nothing); Rejected (nothing merged)
        names the non-finite or implausible ones."""
        if not len(effort):
            return
        src, dst = self.map(names)
        values = np.asarray(effort, dtype=float)[src]
        if (np.abs(values) <= self.plausibility.torque[dst]).all():  # the common case, one test (NaN fails it)
            self.effort[dst] = values
            self.effort_ns[dst] = now_ns
            return
        bad = ~np.isfinite(values)
        problem = (f"non-finite effort of {[names[k] for k in src[bad]]}" if bad.any()
                   else self.plausibility.torque_problem(dst, values).replace("torques", "efforts", 1))
        raise Rejected(f"{problem}: the message's efforts refused, no external torques from them")

    def map(self, names) -> tuple:
        """``(message index, model index)`` arrays of the model's joints among ``names`` (cached per list)."""
        key = tuple(names)
        found = self._maps.get(key)
        if found is None:
            pairs = [(k, self.index[name]) for k, name in enumerate(key) if name in self.index]
            found = (np.array([p[0] for p in pairs], dtype=np.intp), np.array([p[1] for p in pairs], dtype=np.intp))
            if len(self._maps) > 64:
                self._maps.clear()
            self._maps[key] = found
        return found

    def missing(self, limit_ns: int, names) -> str:
        """Which efforts are missing or older than ``limit_ns`` ('' when all are fresh)."""
        if self.effort_ns.min() >= limit_ns:
            return ""
        never = [names[i] for i in np.flatnonzero(self.effort_ns <= self.NEVER)]
        stale = [names[i] for i in np.flatnonzero((self.effort_ns < limit_ns) & (self.effort_ns > self.NEVER))]
        parts = ([f"effort never received for {never}"] if never else []) + (
            [f"effort older than state_timeout for {stale}"] if stale else [])
        return "; ".join(parts)


class StampClocks:
    """Whether the joint-state publishers stamp with one clock. Per publisher (its name list), the offset
    of its last stamp from its arrival time; two publishers heard within ``timeout`` whose offsets differ
    by more than ``timeout`` stamp by different clocks (e.g. wall time and simulated time): the observer,
    stepping from one to the other, would take each jump for a gap and restart (zeros) on every message."""

    MAX_SOURCES = 64

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._sources: dict = {}  # name tuple -> (offset s, arrival ns, stamp s)

    def problem(self, names, t: float, now_ns: int) -> str:
        """'' when the stamp ``t`` (s) of a message with joint ``names`` arriving at ``now_ns`` agrees with the
        other publishers' clocks; else what disagrees."""
        key = tuple(names)
        offset = t - now_ns * 1e-9
        sources = self._sources
        if key not in sources and len(sources) >= self.MAX_SOURCES:
            sources.clear()
        sources[key] = (offset, now_ns, t)
        if len(sources) == 1:
            return ""
        horizon = now_ns - int(self.timeout * 1e9)
        for other, (other_offset, arrived, stamp) in list(sources.items()):
            if arrived < horizon:
                del sources[other]  # (a publisher gone quiet: its clock no longer matters)
            elif abs(other_offset - offset) > self.timeout:
                return (f"joint_states stamped by different clocks: {list(key)} at {t:.3f} s, {list(other)} at "
                        f"{stamp:.3f} s ({abs(other_offset - offset):.3f} s apart, received together); stamp every "
                        "joint_states publisher with the same clock (all wall time or all /clock)")
        return ""


def stamp_seconds(sec: int, nanosec: int, now_ns: int) -> float:
    """A header stamp in seconds; the receive time when the publisher left it zero."""
    seconds = sec + nanosec * 1e-9
    return seconds if seconds > 0 and math.isfinite(seconds) else now_ns * 1e-9
