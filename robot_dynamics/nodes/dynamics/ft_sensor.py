"""The dynamics node's force/torque sensor: ft_sensor/wrench in, ft_sensor/wrench_compensated out, ~/tare_ft_sensor.

The logic is :mod:`~robot_dynamics.nodes.dynamics.ft_sensor_plan` (no rclpy; what is compensated and how,
in its docstring); this module owns the subscription, the publisher and the service, and
:class:`FtSensorOutputs` is what the dynamics node calls: ``install`` with each plan, ``take_state`` with
each fresh joint state (the acceleration estimate), ``status`` for /diagnostics. Docs: docs/ft_sensor.md.
"""

from __future__ import annotations

import struct
import time

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from std_srvs.srv import Trigger

from ..common.cdr import ENCAPSULATION
from ..common.contact_messages import WrenchWriter
from ..common.safety import cut
from .external_torque_plan import stamp_seconds
from ..common.base import NO_SUBSCRIPTION_EVENT_HANDLERS
from ..common.parameters import Rejected
from ...rigid_body.sensor import BAD_READING, COMPENSATED, IMPLAUSIBLE, NO_STATE, STALE_STATE
from .ft_sensor_plan import Compensation, StateHistory, read_wrench_stamped

__all__ = ["FtSensorOutputs"]

TOPIC = "ft_sensor/wrench"


class _Writer(WrenchWriter):
    """:class:`WrenchWriter` for a float64 array already in a Wrench message's order ``[force; moment]``
    (without its conversions: the hot path)."""

    def write(self, sec: int, nanosec: int, message_order) -> bytes:
        message = self._message
        struct.pack_into("<iI", message, len(ENCAPSULATION), sec, nanosec)
        message[self._offset:self._offset + 48] = message_order.tobytes()
        return bytes(message)


class FtSensorOutputs:
    """See the module docstring."""

    def __init__(self, node, qos):
        self.node, self._qos = node, qos
        self.plan = None  # FtSensorPlan in use (None: off)
        self._node_plan = self._state = self._states = self._compensation = None
        self._publisher = self._writer = None
        self._pending = None  # (sec, nanosec, frame_id, raw, t) of a reading waiting for its joint state
        self._n_published = self._n_refused = 0

    def install(self, plan) -> None:
        ft = plan.ft_sensor
        old = self.plan
        self.plan, self._node_plan, self._pending = ft, plan, None
        if ft is None:
            return
        self._states = StateHistory(plan.model.nv, ft.time_constant, plan.settings.state_timeout)
        bias = self._compensation.bias if self._compensation is not None and old is not None and old.frame == ft.frame else None
        self._compensation = Compensation(ft, plan.plausibility)
        if bias is not None:  # (the same sensor: its bias stays)
            self._compensation.set_bias(bias)
        self._writer = _Writer(ft.frame)
        if self._publisher is None:  # (offered from the first plan with the sensor on)
            node = self.node
            self._publisher = node.publisher(WrenchStamped, "ft_sensor/wrench_compensated")
            node.create_subscription(WrenchStamped, TOPIC, self._on_wrench, self._qos, raw=True,
                                     event_callbacks=NO_SUBSCRIPTION_EVENT_HANDLERS)
            node.create_service(Trigger, "~/tare_ft_sensor", self._on_tare)

    def take_state(self, state, stamp, now: int) -> None:
        """A fresh joint state: its velocities feed the acceleration estimate (when they are fresh)."""
        if self.plan is None:
            return
        self._state = state  # (stale positions or velocities give no compensation: STALE_STATE)
        self._states.update(stamp_seconds(stamp.sec, stamp.nanosec, now), state.q, state.qd)
        pending = self._pending
        if pending is not None and not self._states.awaits(pending[4]):
            self._pending = None
            self._compensate(*pending, now)

    def _on_wrench(self, data: bytes) -> None:
        """A raw reading, serialized (the subscription is raw: :func:`read_wrench_stamped`)."""
        now = time.monotonic_ns()
        if self.plan is None:
            return
        try:
            sec, nanosec, frame_id, raw = read_wrench_stamped(data)
        except Rejected as exc:
            self._refuse(str(exc), now)
            return
        compensation, state = self._compensation, self._state
        if frame_id != compensation.frame_id or state is None:
            self._refuse(compensation.refusal(frame_id, raw) or "no joint states yet: nothing to compensate with", now)
            return
        t = stamp_seconds(sec, nanosec, now)
        # A reading stamped after the newest joint state (by less than state_timeout) waits for the state that
        # reaches its stamp: the topics arrive in either order, and an older state would miss a change of the
        # arm's acceleration. One waits at most: the one before is compensated when the next reading comes.
        waiting, self._pending = self._pending, None
        if waiting is not None:
            self._compensate(*waiting, now)
        if self._states.awaits(t):
            self._pending = (sec, nanosec, frame_id, raw, t)
            return
        self._compensate(sec, nanosec, frame_id, raw, t, now)

    def _compensate(self, sec: int, nanosec: int, frame_id, raw, t: float, now: int) -> None:
        compensation, state, plan = self._compensation, self._state, self._node_plan
        status, gap = compensation.compensate(raw, self._states, t, state, now - plan.state_timeout_ns, now)
        if status == COMPENSATED and abs(gap) <= plan.settings.state_timeout:
            self._publisher.publish(self._writer.write(sec, nanosec, compensation.message))
            self._n_published += 1
        elif status == IMPLAUSIBLE:
            problem = compensation.plausibility.wrench_problem(compensation.compensated, "the compensated wrench [moment; force]")
            self.node.problem("ft_sensor", cut(f"not publishing ft_sensor/wrench_compensated: {problem}"), now)
        else:
            self._refuse(self._reason(status, gap, frame_id, raw, now), now)

    def _refuse(self, reason: str, now: int) -> None:
        self._n_refused += 1
        self.node.reject(TOPIC, cut(reason), now, DiagnosticStatus.WARN)

    def _reason(self, status: int, gap: float, frame_id, raw, now: int) -> str:
        """Why a reading was not compensated (``status`` of the compensation, not COMPENSATED)."""
        state, timeout = self._state, self._node_plan.settings.state_timeout
        if status == BAD_READING:
            return self._compensation.refusal(frame_id, raw)
        if status == STALE_STATE:
            return "not compensated: " + "; ".join(m for m in (state.missing(state.q_ns, now, "position"),
                                                               state.missing(state.qd_ns, now, "velocity")) if m)
        if status == NO_STATE:
            return "not compensated: no acceleration estimate yet (two joint states with velocities, within state_timeout)"
        return (f"not compensated: the nearest joint state is stamped {gap:+.4f} s from the reading, more than "
                f"state_timeout ({timeout:g} s; stamped by different clocks?)")

    def _on_tare(self, request, response):
        now = time.monotonic_ns()
        if self.plan is None:
            response.success, response.message = False, "no force/torque sensor (ft_sensor.frame is empty)"
            return response
        response.success, response.message = self._compensation.tare(now)
        log = self.node.get_logger()
        (log.info if response.success else log.warn)(f"~/tare_ft_sensor: {response.message}")
        return response

    def status(self, now: int, period: float):
        """The ``ft_sensor`` diagnostics status, or None when off."""
        if self.plan is None:
            return None
        b = self._compensation.bias
        values = [("frame", self.plan.frame), ("compensated rate (Hz)", f"{self._n_published / period:.1f}"),
                  ("refused readings", self._n_refused),
                  ("bias [moment; force]", " ".join(f"{x:.4g}" for x in b))]
        level, text = DiagnosticStatus.OK, f"compensating readings of {self.plan.frame}"
        recent = self.node.recent_problems(now)
        for kind in (TOPIC, "ft_sensor"):
            if kind in recent:
                lvl, txt, _ = recent[kind]
                level, text = max(level, lvl), txt
        if self._n_published == 0 and level == DiagnosticStatus.OK:
            level, text = DiagnosticStatus.WARN, f"no readings on {TOPIC}"
        self._n_published = self._n_refused = 0
        return ("ft_sensor", level, text, values)
