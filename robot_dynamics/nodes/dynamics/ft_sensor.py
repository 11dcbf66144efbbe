"""The dynamics node's force/torque sensor: ft_sensor/wrench in, ft_sensor/wrench_compensated out, ~/tare_ft_sensor.

The logic is :mod:`~robot_dynamics.nodes.dynamics.ft_sensor_plan` (no rclpy; what is compensated and how,
in its docstring); this module owns the subscription, the publisher and the service, and
:class:`FtSensorOutputs` is what the dynamics node calls: ``install`` with each plan, ``take_state`` with
each fresh joint state (the acceleration estimate), ``status`` for /diagnostics. Docs: docs/ft_sensor.md.
"""

from __future__ import annotations

import math
import struct
import time

from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from std_srvs.srv import Trigger

from ..common.cdr import ENCAPSULATION
from ..common.contact_messages import WrenchWriter
from ..common.safety import cut
from .contact_plan import stamp_seconds
from ..common.base import NO_SUBSCRIPTION_EVENT_HANDLERS
from ..common.parameters import Rejected
from .ft_sensor_plan import Compensation, StateHistory, read_wrench_stamped

__all__ = ["FtSensorOutputs"]

TOPIC = "ft_sensor/wrench"


class _Writer(WrenchWriter):
    """:class:`WrenchWriter` for a float64 array ``[moment; force]`` (without its conversions: the hot path)."""

    def write(self, sec: int, nanosec: int, wrench) -> bytes:
        message, offset = self._message, self._offset
        struct.pack_into("<iI", message, len(ENCAPSULATION), sec, nanosec)
        message[offset:offset + 24] = wrench[3:].tobytes()
        message[offset + 24:offset + 48] = wrench[:3].tobytes()
        return bytes(message)


class FtSensorOutputs:
    """See the module docstring."""

    def __init__(self, node, qos):
        self.node, self._qos = node, qos
        self.plan = None  # FtSensorPlan in use (None: off)
        self._node_plan = self._state = self._states = self._compensation = None
        self._publisher = self._writer = None
        self._n_published = self._n_refused = 0

    def install(self, plan) -> None:
        ft = plan.ft_sensor
        old = self.plan
        self.plan, self._node_plan = ft, plan
        if ft is None:
            return
        self._states = StateHistory(plan.model.nv, ft.time_constant, plan.settings.state_timeout)
        bias = self._compensation.bias if self._compensation is not None and old is not None and old.frame == ft.frame else None
        self._compensation = Compensation(ft, plan.plausibility)
        if bias is not None:  # (the same sensor: its bias stays)
            self._compensation.bias = bias
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
        self._state = state  # (stale velocities give no compensation: _stale)
        self._states.update(stamp_seconds(stamp.sec, stamp.nanosec, now), state.q, state.qd)

    def _on_wrench(self, data: bytes) -> None:
        """A raw reading, serialized (the subscription is raw: :func:`read_wrench_stamped`)."""
        now = time.monotonic_ns()
        if self.plan is None:
            return
        try:
            sec, nanosec, frame_id, raw = read_wrench_stamped(data)
        except Rejected as exc:
            self._n_refused += 1
            self.node.reject(TOPIC, str(exc), now, DiagnosticStatus.WARN)
            return
        compensation = self._compensation
        refusal = compensation.refusal(frame_id, raw)
        if not refusal:
            refusal = self._stale(now)
        if refusal:
            self._n_refused += 1
            self.node.reject(TOPIC, cut(refusal), now, DiagnosticStatus.WARN)
            return
        t = stamp_seconds(sec, nanosec, now)
        compensated, gap = compensation.compensate(raw, self._states, t, now)
        if not abs(gap) <= self._node_plan.settings.state_timeout:
            self._n_refused += 1
            self.node.reject(TOPIC, "not compensated: " + (
                "no acceleration estimate yet (two joint states with velocities, within state_timeout)" if gap == math.inf
                else f"the nearest joint state is stamped {gap:+.4f} s from the reading, more than state_timeout "
                     f"({self._node_plan.settings.state_timeout:g} s; stamped by different clocks?)"), now, DiagnosticStatus.WARN)
            return
        problem = compensation.plausibility.wrench_problem(compensated, "the compensated wrench [moment; force]")
        if problem:
            self.node.problem("ft_sensor", cut(f"not publishing ft_sensor/wrench_compensated: {problem}"), now)
            return
        self._publisher.publish(self._writer.write(sec, nanosec, compensated))
        self._n_published += 1

    def _stale(self, now: int) -> str:
        """Why the state cannot be compensated for ('' when it can)."""
        state, limit = self._state, now - self._node_plan.state_timeout_ns
        if state is None:
            return "no joint states yet: nothing to compensate the reading with"
        if state.q_ns.min() < limit:
            return "not compensated: " + state.missing(state.q_ns, now, "position")
        if state.qd_ns.min() < limit:
            return "not compensated: " + state.missing(state.qd_ns, now, "velocity")
        return ""

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
