"""The dynamics node's force/torque sensor compensation, without rclpy: parameters, plan, per-reading logic.

With ``ft_sensor.frame`` (a link attached by a fixed joint) the node reads the raw sensor wrench on
``ft_sensor/wrench`` and publishes ``ft_sensor/wrench_compensated = reading - bias - prediction``:
the prediction is what the tool side (the links beyond the sensor and a payload there,
:class:`robot_dynamics.rigid_body.sensor.ForceTorqueSensor`) makes the sensor read from gravity and
its motion at the state the reading was taken in: of the last joint states, the one stamped nearest the
reading, carried to its stamp (a reading ahead of every state waits for its own; its ``q``, ``qd``, and
``qdd`` estimated as the difference of successive velocities over their stamps, low-passed with the time
constant ``ft_sensor.acceleration_filter``). What remains is the wrench the environment applies to the tool
side, in the sensor's axes about its origin. ``~/tare_ft_sensor`` takes the bias as the mean of
``reading - prediction`` over the last :data:`TARE_WINDOW` at rest, so it works in any pose.

A reading is refused (said, never compensated) when it is not finite, in another frame than
``ft_sensor.frame``, beyond ``ft_sensor.range`` or the plausibility rule of every wrench, or when the
state is stale, has no acceleration estimate yet or is stamped more than ``state_timeout`` away from the reading.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from ...rigid_body.sensor import COMPENSATED, ForceTorqueSensor, record_state, sensor_problem
from ..common.parameters import Parameter, Rejected, float_list

__all__ = ["FT_FIELDS", "FT_PARAMETERS", "FT_TOPICS", "REST_VELOCITY", "TARE_WINDOW", "StateHistory",
           "Compensation", "FtSensorPlan", "coerce_ft", "compile_ft", "read_wrench_stamped"]

DEFAULT_FILTER = 0.0  # s: none; the simulator's velocities are exact, a real encoder's noise needs some (docs/ft_sensor.md)
#: the tare averages the readings of this many seconds, each with the arm at rest
TARE_WINDOW = 0.2
#: at rest: every |qd| below this, rad/s or m/s
REST_VELOCITY = 0.01
_BUFFER = 512  # readings kept for the tare (TARE_WINDOW at up to 2.5 kHz)
_HISTORY = 32  # joint states kept: 32 ms at 1 kHz

#: Settings field -> default (the node's Settings carries these fields)
FT_FIELDS = {"ft_sensor_frame": "", "ft_sensor_range": (), "ft_sensor_acceleration_filter": DEFAULT_FILTER}

FT_PARAMETERS = (
    Parameter("ft_sensor.frame", "", "Link of a wrist force/torque sensor, attached by a fixed joint: subscribes "
              "ft_sensor/wrench (raw, in that frame), publishes ft_sensor/wrench_compensated; empty = off.", "string",
              field="ft_sensor_frame"),
    Parameter("ft_sensor.range", [], "The sensor's measuring range: 2 values (force N, moment N m, every axis) or 6 "
              "(fx fy fz tx ty tz); a reading beyond it is refused. Empty = only the plausibility rule of every wrench.",
              field="ft_sensor_range"),
    Parameter("ft_sensor.acceleration_filter", DEFAULT_FILTER, "Time constant of the low-pass on the joint "
              "accelerations estimated from successive joint_states velocities, s (0 = none).", "double", low=0.0,
              high=1.0, field="ft_sensor_acceleration_filter"),
)

FT_TOPICS = (
    ("ft_sensor/wrench", "geometry_msgs/WrenchStamped", "in", "with ft_sensor.frame: the raw sensor reading, "
     "header.frame_id = ft_sensor.frame (its axes, moment about its origin)"),
    ("ft_sensor/wrench_compensated", "geometry_msgs/WrenchStamped", "out", "reading - bias - the tool side's gravity "
     "and inertia at the current state: the environment's wrench on the tool, same frame and stamp; ~/tare_ft_sensor "
     "(std_srvs/Trigger) takes the bias at rest"),
)


def coerce_ft(field: str, value):
    """An ``ft_sensor.*`` Settings field's value; ValueError names the parameter and the problem."""
    param = field.replace("ft_sensor_", "ft_sensor.")
    if field == "ft_sensor_frame":
        return str(value)
    if field == "ft_sensor_range":
        limits = float_list(param, value, strict=False)
        if len(limits) not in (0, 2, 6) or any(v <= 0 for v in limits):
            raise ValueError(f"{param} must be empty, 2 values (force N, moment N m) or 6 (fx fy fz tx ty tz), each "
                             f"> 0; got {list(limits)}")
        return limits
    if field == "ft_sensor_acceleration_filter":
        v = float(value)
        if not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ValueError(f"{param} must be in [0, 1] s, got {value!r}")
        return v
    raise KeyError(field)


@dataclass(frozen=True, eq=False)
class FtSensorPlan:
    """The sensor compensation applied to one model."""

    sensor: ForceTorqueSensor
    frame: str
    limits: np.ndarray  # per component of [moment; force] (the library's order), inf where no range
    time_constant: float


def compile_ft(model, s) -> FtSensorPlan | None:
    """The plan of settings ``s`` for ``model`` (with its payload applied), None when off; ValueError
    names the problem (a frame that is not a link attached by a fixed joint)."""
    if not s.ft_sensor_frame:
        return None
    problem = sensor_problem(model, s.ft_sensor_frame)
    if problem:
        raise ValueError(f"ft_sensor.frame: {problem}")
    payload = ((s.payload_link, s.payload_mass, s.payload_com, s.payload_inertia) if s.payload_link else None)
    r = s.ft_sensor_range
    limits = (np.full(6, np.inf) if not r else np.array([r[1]] * 3 + [r[0]] * 3) if len(r) == 2
              else np.array([*r[3:], *r[:3]]))
    return FtSensorPlan(ForceTorqueSensor(model, s.ft_sensor_frame, payload), s.ft_sensor_frame, limits,
                        s.ft_sensor_acceleration_filter)


class StateHistory:
    """The last :data:`_HISTORY` joint states, each with its acceleration estimate
    (:func:`robot_dynamics.rigid_body.sensor.record_state`): a reading is compensated at the state stamped
    nearest its own stamp, whichever topic's message arrived first."""

    def __init__(self, n: int, tau: float, timeout: float):
        self.tau, self.timeout = tau, timeout
        self.history = np.zeros((_HISTORY, 3, n))
        self.stamps = np.zeros((_HISTORY, 2))  # (t, 1 with an acceleration estimate)
        self.last = -1

    def update(self, t: float, q: np.ndarray, qd: np.ndarray) -> None:
        self.last = record_state(self.history, self.stamps, self.last, q, qd, t, self.tau, self.timeout)

    def awaits(self, t: float) -> bool:
        """Whether a reading stamped ``t`` is to wait for its own state: the newest state here is older, by
        less than the timeout (a reading further ahead has another clock: it is refused at once)."""
        return self.last >= 0 and 0.0 < t - self.stamps[self.last, 0] <= self.timeout


_HEAD = struct.Struct("<iII")  # stamp sec, nanosec; frame_id's length (with its NUL)
_WRENCH = struct.Struct("<6d")  # force x y z, torque x y z


def read_wrench_stamped(data: bytes) -> tuple:
    """``(sec, nanosec, frame_id bytes, (tx, ty, tz, fx, fy, fz))`` of a serialized geometry_msgs/WrenchStamped
    (XCDR1 little endian, fields aligned to their size from the end of the 4-byte encapsulation header, as
    :mod:`~robot_dynamics.nodes.common.cdr` writes them). Read here instead of by rclpy: a message object
    costs a conversion of every field. Rejected on another encoding or a truncated message."""
    if data[:2] != b"\x00\x01":
        raise Rejected(f"not a little-endian CDR message (encapsulation {bytes(data[:4]).hex()})")
    try:
        sec, nanosec, length = _HEAD.unpack_from(data, 4)
        start = 16 + length
        fx, fy, fz, tx, ty, tz = _WRENCH.unpack_from(data, 4 + ((12 + length + 7) & ~7))
    except struct.error:
        raise Rejected(f"a truncated WrenchStamped ({len(data)} bytes)") from None
    return sec, nanosec, data[16:start - 1], (tx, ty, tz, fx, fy, fz)


class Compensation:
    """Per reading: the checks, ``reading - bias - prediction``, and the residuals the tare averages."""

    def __init__(self, plan: FtSensorPlan, plausibility):
        self.plan, self.plausibility = plan, plausibility
        self._wrenches = np.zeros((3, 6))  # the bias, the compensated wrench [moment; force], and [force; moment]
        self.bias, self.compensated, self.message = self._wrenches
        self._checks = np.array([*plan.limits, *plausibility.wrench_bounds()])
        self._residuals = np.zeros((_BUFFER, 6))
        self._times = np.full(_BUFFER, -np.inf)
        self._rest = np.zeros(_BUFFER, dtype=bool)
        self._next = 0
        self.frame_id = plan.frame.encode()  # (UTF-8, as read from a message)

    def set_bias(self, bias) -> None:
        self.bias[:] = bias

    def refusal(self, frame_id: bytes, raw: tuple) -> str:
        """Why the raw reading ``[moment; force]`` in frame ``frame_id`` (UTF-8) is not compensated ('' when
        it is): the frame, and the checks :meth:`compensate` makes, said."""
        if frame_id != self.frame_id:
            return (f"header.frame_id {bytes(frame_id).decode(errors='replace')!r} is not the sensor's frame "
                    f"{self.plan.frame!r} (ft_sensor.frame): a reading is taken in the sensor's own axes")
        if not all(math.isfinite(x) for x in raw):
            return f"the reading [moment; force] {list(raw)} is not finite"
        limits = self.plan.limits
        for c in range(6):
            if abs(raw[c]) > limits[c]:
                names = ("tx", "ty", "tz", "fx", "fy", "fz")
                return f"{names[c]} = {raw[c]:.6g} is beyond the sensor's range {limits[c]:g} (ft_sensor.range)"
        return self.plausibility.wrench_problem(raw, "the reading [moment; force]")

    def compensate(self, raw: tuple, states: StateHistory, t: float, state, limit: int, now: int):
        """``(status, gap)`` of :meth:`robot_dynamics.rigid_body.sensor.ForceTorqueSensor.compensate` at the
        state of ``states`` stamped nearest ``t`` (the reading's stamp): ``reading - bias - prediction`` in
        :attr:`compensated` (and :attr:`message`), the residual ``reading - prediction`` kept for the tare;
        ``state`` the joint-state merger (its receive times must be at least ``limit``)."""
        k = self._next
        status, gap, fastest = self.plan.sensor.compensate(raw, self._checks, self._wrenches, self._residuals, k,
                                                           states.history, states.stamps, t, state.q_ns, state.qd_ns, limit)
        if status == COMPENSATED:
            self._times[k] = now * 1e-9
            self._rest[k] = fastest <= REST_VELOCITY
            self._next = (k + 1) % _BUFFER
        return status, gap

    def tare(self, now: int) -> tuple[bool, str]:
        """Take the bias: the mean residual of the last :data:`TARE_WINDOW`, every reading at rest."""
        recent = self._times >= now * 1e-9 - TARE_WINDOW
        count = int(recent.sum())
        if count < 5:
            return False, (f"{count} compensated readings in the last {TARE_WINDOW:g} s (at least 5 needed: the sensor's "
                           "readings and fresh joint states, both flowing)")
        if not self._rest[recent].all():
            return False, (f"the arm moved in the last {TARE_WINDOW:g} s (|qd| above {REST_VELOCITY:g}): tare at rest "
                           "(the model's prediction is removed, so any pose will do)")
        self.set_bias(self._residuals[recent].mean(axis=0))
        b = self.bias
        return True, (f"bias taken from {count} readings: force [{b[3]:.4g}, {b[4]:.4g}, {b[5]:.4g}] N, "
                      f"moment [{b[0]:.4g}, {b[1]:.4g}, {b[2]:.4g}] N m ({self.plan.frame} axes)")
