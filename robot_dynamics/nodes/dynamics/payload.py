"""The dynamics node's payload estimation: ``~/estimate_payload`` and ``payload_estimate`` (docs/payload.md).

With ``payload_estimation.enabled`` the node keeps a window of its recent joint states with their
efforts (times ``external_torque.effort_sign``, the drive's convention), the last
``payload_estimation.window`` seconds by their stamps. ``~/estimate_payload`` (std_srvs/Trigger) fits
the payload on ``payload.link`` to that window (:func:`robot_dynamics.identification.payload.estimate_payload`,
against the model without ``payload.*``: the estimate is the whole payload, ready to paste), answers
the report and the ``payload.*`` values, and publishes ``payload_estimate`` (geometry_msgs/InertiaStamped,
reliable and transient local; frame_id ``payload.link``, inertia about the centre of mass in its
axes). The live model changes only when the user asks: ``payload_estimation.apply`` true sets
``payload.*`` from each successful estimate; otherwise set them yourself. A window that cannot
determine the mass (no efforts, too few poses, too little motion) is refused with the reason.

The parameters and their checks are rclpy-free (the plan imports them); :class:`PayloadEstimation`
is what the node calls: ``install`` with each plan, ``take`` with each joint_states message.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..common.parameters import Parameter, Rejected, bounded_float
from .external_torque_plan import EffortTracker, stamp_seconds

__all__ = ["PAYLOAD_ESTIMATION_PARAMETERS", "PAYLOAD_ESTIMATION_TOPICS",
           "PayloadEstimation", "coerce_payload_estimation", "compile_payload_estimation"]

DEFAULT_WINDOW = 20.0  # s
MAX_WINDOW = 120.0     # s: the window's memory (at most MAX_RATE samples a second) stays below 60 MB
MAX_RATE = 2000.0      # Hz: samples closer than 1 / MAX_RATE to the last one kept are skipped

PAYLOAD_ESTIMATION_PARAMETERS = (
    Parameter("payload_estimation.enabled", False, "Keep a window of joint states with their efforts and offer "
              "~/estimate_payload: the payload on payload.link (which must be set) from the joint torques.", "bool",
              field="payload_estimation_enabled"),
    Parameter("payload_estimation.window", DEFAULT_WINDOW, "Length of the window ~/estimate_payload fits, s (by "
              "the joint states' stamps).", "double", low=0.5, high=MAX_WINDOW, field="payload_estimation_window"),
    Parameter("payload_estimation.apply", False, "true: each successful ~/estimate_payload sets payload.* (the live "
              "model); false: it only reports and publishes them.", "bool", field="payload_estimation_apply"),
)

PAYLOAD_ESTIMATION_TOPICS = (
    ("payload_estimate", "geometry_msgs/InertiaStamped", "out", "with payload_estimation.enabled: the last "
     "~/estimate_payload result, reliable and transient local; frame_id payload.link, inertia about the centre of mass"),
)


def coerce_payload_estimation(field: str, value):
    """A payload-estimation Settings field's value; ValueError names the parameter and the problem."""
    if field in ("payload_estimation_enabled", "payload_estimation_apply"):
        return bool(value)
    if field == "payload_estimation_window":
        return bounded_float("payload_estimation.window", value, 0.5, MAX_WINDOW)
    raise KeyError(field)


@dataclass(frozen=True, eq=False)
class PayloadEstimationPlan:
    model: object        # the model without payload.* (gravity and armature applied): what the fit subtracts
    link: str
    window: float        # s
    apply: bool
    sign: np.ndarray     # per model coordinate: tau_m = sign * effort


def compile_payload_estimation(model, out: np.ndarray, s) -> PayloadEstimationPlan | None:
    """The plan (None when off); ValueError when payload.link is empty or not a link the arm moves."""
    if not s.payload_estimation_enabled:
        return None
    if not s.payload_link:
        raise ValueError("payload_estimation.enabled needs payload.link: the link that carries the payload")
    from ...identification.identify import payload_transform
    from ...identification.samples import IdentificationError

    try:
        payload_transform(model, s.payload_link)
    except IdentificationError as exc:
        raise ValueError(f"payload.link: {exc}") from None
    sign = np.ones(model.nv)
    if len(s.external_torque_effort_sign) in (1, len(out)):
        sign[out] = s.external_torque_effort_sign
    return PayloadEstimationPlan(model, s.payload_link, s.payload_estimation_window, s.payload_estimation_apply, sign)


class Window:
    """The recent samples (stamp s, q, qd, effort) in a ring of fixed size."""

    def __init__(self, seconds: float, n: int):
        self.size = int(math.ceil(seconds * MAX_RATE)) + 1
        self.t = np.zeros(self.size)
        self.values = np.zeros((self.size, 3, n))
        self.count = self.next = 0

    def add(self, t: float, q, qd, effort, sign) -> None:
        """Keep (t, q, qd, sign * effort), unless ``t`` is within ``1 / MAX_RATE`` after the last sample kept."""
        if self.count and 0.0 <= t - self.t[self.next - 1] < 1.0 / MAX_RATE:
            return
        if self.count and t < self.t[self.next - 1]:  # (a clock that jumped back: the old samples are another run)
            self.count = self.next = 0
        k = self.next
        self.t[k] = t
        row = self.values[k]
        row[0], row[1] = q, qd
        np.multiply(sign, effort, out=row[2])
        self.next = (k + 1) % self.size
        self.count = min(self.count + 1, self.size)

    def last(self, seconds: float):
        """(t, q, qd, effort) of the samples within ``seconds`` of the newest, in time order."""
        order = (np.arange(self.next - self.count, self.next)) % self.size
        t, values = self.t[order], self.values[order]
        keep = t >= t[-1] - seconds if len(t) else slice(None)
        return t[keep], values[keep, 0], values[keep, 1], values[keep, 2]


def estimate_window(plan, plausibility, t, q, qd, effort):
    """(PayloadEstimate, warnings) of a window's samples (no rclpy: runs in the fit's thread); ValueError says why
    not, an estimate that ``payload.*`` would refuse included (the rule of every output: what the node would not
    take as input, it does not publish)."""
    from ...identification.payload import estimate_payload, recording_of
    from ...identification.pipeline import DriveSettings
    from ..common.safety import check_payload

    # (the window's notes go into the answer; catch_warnings is process-wide while the fit runs, so a warning of
    # the node's own thread meanwhile lands there too rather than in the log)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = estimate_payload(recording_of(plan.model.joint_names, t, q, qd, effort, "the window"),
                                  plan.model, plan.link, drive=DriveSettings())
    if not np.all(np.isfinite(result.theta)):
        raise ValueError("the estimate is not finite")
    try:
        check_payload(plausibility, result.mass, result.com)
    except ValueError as exc:
        raise ValueError(f"the estimate is not plausible: {exc}") from None
    return result, [str(w.message) for w in caught]


class PayloadEstimation:
    """See the module docstring."""

    def __init__(self, node):
        self.node = node
        self.plan = None
        self._window = None
        self._efforts = None
        self._publisher = None
        self._skipped = ""  # why the last fresh state was not kept ('' when it was)
        self._busy = False  # a fit is running
        self._last = ""  # the last answer's first line

    def install(self, node_plan) -> None:
        plan = node_plan.payload_estimation
        old, self.plan, self._node_plan = self.plan, plan, node_plan
        if plan is None:
            self._window = None
            return
        if old is None or old.model.joint_names != plan.model.joint_names or old.window != plan.window:
            self._window = Window(plan.window, plan.model.nv)
        if self._efforts is None or self._efforts.plausibility is not node_plan.plausibility:
            self._efforts = EffortTracker(plan.model.joint_names, node_plan.plausibility)
            self._ages = np.empty((3, plan.model.nv), dtype=np.int64)
        if self._publisher is None:
            self._load_fit(plan)
            from geometry_msgs.msg import InertiaStamped
            from std_srvs.srv import Trigger

            from .external_torque_outputs import LATCHED_QOS

            self._publisher = self.node.publisher(InertiaStamped, "payload_estimate", LATCHED_QOS)
            from rclpy.callback_groups import MutuallyExclusiveCallbackGroup

            # (its own group: the default one is mutually exclusive, so the waiting coroutine would hold
            # every joint_states callback until the fit is done)
            self.node.create_service(Trigger, "~/estimate_payload", self._on_estimate,
                                     callback_group=MutuallyExclusiveCallbackGroup())

    def take(self, msg, state, fresh: bool, now: int) -> None:
        """A joint_states message: its efforts, and the state it completes into the window."""
        if self.plan is None:
            return
        try:
            self._efforts.update(msg.name, msg.effort, now)
        except Rejected as exc:
            self._skipped = str(exc)
            return
        if not fresh:
            return
        limit = now - self._node_plan.state_timeout_ns
        ages = self._ages
        ages[0], ages[1], ages[2] = state.q_ns, state.qd_ns, self._efforts.effort_ns
        if ages.min() < limit:  # (one reduction in the common case; the reason only when something is old)
            self._skipped = (self._efforts.missing(limit, self.plan.model.joint_names)
                             or state.missing(state.q_ns, now, "position") or state.missing(state.qd_ns, now, "velocity"))
            return
        self._skipped = ""
        stamp = msg.header.stamp
        self._window.add(stamp_seconds(stamp.sec, stamp.nanosec, now), state.q, state.qd, self._efforts.effort,
                         self.plan.sign)

    @staticmethod
    def _load_fit(plan) -> None:
        """Load the fit's code (scipy, the regressor's compiled kernel: about 3 s) now, when the estimation is
        switched on, rather than in the first ~/estimate_payload, while the node's outputs wait for it."""
        import scipy.optimize  # noqa: F401
        import scipy.signal  # noqa: F401

        from ...rigid_body.regression import regressor

        zeros = np.zeros(plan.model.nv)
        regressor(plan.model, zeros, zeros, zeros)

    # --- the service -------------------------------------------------------------------------------
    async def _on_estimate(self, request, response):
        """The fit runs in a thread while this coroutine waits (the executor keeps handling joint states:
        the node's outputs never wait for it); the answer and the rest happen on the executor's thread."""
        import threading

        from rclpy.task import Future

        log = self.node.get_logger()
        try:
            if self._busy:
                raise ValueError("an estimate is being computed: ask again when it is answered")
            plan, plausibility, window = self.plan, self._node_plan.plausibility, self._snapshot()
        except ValueError as exc:
            response.success, response.message = False, f"payload not estimated: {exc}"
            log.warn(response.message)
            return response
        self._busy, done = True, Future()

        def fit():
            try:
                done.set_result(estimate_window(plan, plausibility, *window))
            except Exception as exc:  # noqa: BLE001 - every failure is the answer's reason
                done.set_result(exc)

        threading.Thread(target=fit, name="payload_estimation", daemon=True).start()
        try:
            outcome = await done
        finally:
            self._busy = False
        if isinstance(outcome, Exception):
            reason = str(outcome) if isinstance(outcome, ValueError) else f"the fit failed: {outcome!r}"
            response.success, response.message = False, f"payload not estimated: {reason}"
            self._last = response.message
            log.warn(response.message)
            return response
        result, notes = outcome
        self._publish(result)
        self._last = f"{result.mass:.4g} kg at {np.round(result.com, 4).tolist()} m ({result.mode})"
        lines = result.report_lines() + [f"  note: {note}" for note in notes]
        lines += ["to apply it, set payload.* (payload_estimation.apply: true does it on each estimate):",
                  *result.set_commands(self.node.get_name()), "or in a params file:",
                  result.parameters_yaml(self.node.get_name()).rstrip()]
        if plan.apply and self.plan is not None:
            lines.insert(0, self._apply(result))
        response.success, response.message = True, "\n".join(lines)
        log.info(response.message)
        return response

    def _snapshot(self):
        """(t, q, qd, effort) of the window, copies; ValueError when it holds no state with efforts."""
        if self.plan is None:
            raise ValueError("payload_estimation.enabled is false")
        t, q, qd, effort = self._window.last(self.plan.window)
        if len(t) < 2:
            reason = f" ({self._skipped})" if self._skipped else ""
            raise ValueError(f"no joint states with efforts in the window{reason}: a payload shows only in the measured "
                             "joint torques; the joint_states publisher must fill effort for every joint")
        return t, q, qd, effort

    def status(self):
        """The ``payload estimation`` diagnostics status, or None when off."""
        if self.plan is None:
            return None
        from diagnostic_msgs.msg import DiagnosticStatus

        window = self._window
        newest = window.t[window.next - 1] if window.count else 0.0
        span = newest - window.t[(window.next - window.count) % window.size] if window.count else 0.0
        text = f"{min(span, self.plan.window):.1f} s of joint states with efforts in the window"
        level = DiagnosticStatus.OK
        if self._skipped:
            level, text = DiagnosticStatus.WARN, f"joint states not kept for the payload: {self._skipped}"
        values = [("link", self.plan.link), ("window (s)", f"{self.plan.window:g}"), ("apply", str(self.plan.apply)),
                  ("last estimate", self._last or "none")]
        return ("payload estimation", level, text, values)

    def _publish(self, result) -> None:
        from geometry_msgs.msg import InertiaStamped

        msg = InertiaStamped()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id = result.link
        msg.inertia.m = result.mass
        msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = (float(v) for v in result.com)
        I = result.inertia
        msg.inertia.ixx, msg.inertia.ixy, msg.inertia.ixz = float(I[0, 0]), float(I[0, 1]), float(I[0, 2])
        msg.inertia.iyy, msg.inertia.iyz, msg.inertia.izz = float(I[1, 1]), float(I[1, 2]), float(I[2, 2])
        self._publisher.publish(msg)

    def _apply(self, result) -> str:
        from rclpy.parameter import Parameter as RosParameter

        values = {"payload.link": result.link, "payload.mass": result.mass,
                  "payload.com": [float(v) for v in result.com], "payload.inertia": result.inertia_six}
        outcome = self.node.set_parameters_atomically([RosParameter(name, value=value) for name, value in values.items()])
        if outcome.successful:
            return "applied to the live model (payload_estimation.apply)"
        return f"NOT applied (payload_estimation.apply): {outcome.reason}"
