"""The dynamics node's external-torque outputs: external_torques, external_wrench_estimate, collision, ~/reset_collision.

The logic is :mod:`~robot_dynamics.nodes.dynamics.external_torque_plan` (no rclpy); this module owns the publishers and
the service, and :class:`ExternalTorqueOutputs` is what the dynamics node calls: ``install`` with each plan,
``take_efforts`` with each joint_states message, ``observe`` with each fresh state (before the command
is published, so that a collision changes the same message's command), ``command`` on effort_command,
``status`` for /diagnostics.
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from ..common.contact_messages import EffortWriter, WrenchWriter
from ...control.collision import CollisionDetector
from ...control.observer import OBSERVER_TERMS
from .external_torque_plan import EffortTracker, StampClocks, stamp_seconds
from ..common.parameters import Rejected
from ..common.safety import cut

__all__ = ["ExternalTorqueOutputs"]

#: collision: a late subscriber gets the current flag
LATCHED_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ExternalTorqueOutputs:
    """See the module docstring."""

    def __init__(self, node):
        self.node = node
        self.external_torque = None  # the ExternalTorquePlan in use (None: off); the node's Plan is what methods take as plan
        self._publishers = None
        self._estimate = None  # (sec, nanosec, r) of the last observe, until published
        self._observer = self._efforts = self._detector = None
        self._state = None
        self._latched = False  # the gravity-hold reaction holds until ~/reset_collision
        self._latched_on = {}  # joint -> |external torque| when the latched collision was detected
        self._clocks = None  # StampClocks of the joint-state publishers
        self._mixed = ""  # why the message being handled is stamped by another clock than the others ('')
        self._efforts_refused = False  # its efforts were refused: no output from its state
        self._published_flag = None
        self._n_published = 0

    # --- configuration -------------------------------------------------------------------------------
    def install(self, plan) -> None:
        external_torque = plan.external_torque
        self.external_torque, self._node_plan = external_torque, plan
        if external_torque is None:
            self._observer = self._detector = None
            return
        self._observer = external_torque.observer(plan.model)
        if (self._efforts is None or self._efforts.index != {n: i for i, n in enumerate(plan.model.joint_names)}
                or self._efforts.plausibility is not plan.plausibility):
            self._efforts = EffortTracker(plan.model.joint_names, plan.plausibility)
        self._clocks = StampClocks(plan.settings.state_timeout)
        self._detector = (CollisionDetector(external_torque.thresholds, external_torque.settings.collision_release,
                                            external_torque.settings.collision_min_duration)
                          if len(external_torque.thresholds) else None)
        if self._publishers is None:  # (offered from the first plan with external torques on: fewer entities to wait on)
            node = self.node
            node.create_service(Trigger, "~/reset_collision", self._on_reset)
            self._publishers = (node.publisher(JointState, "external_torques"),
                                node.publisher(WrenchStamped, "external_wrench_estimate"),
                                node.publisher(Bool, "collision", LATCHED_QOS))
        self._unsigned = bool((external_torque.sign == 1.0).all())
        self._torques = EffortWriter(plan.names)
        self._wrench = WrenchWriter(external_torque.wrench_frame)
        s = external_torque.settings
        if s.collision_reaction == "gravity" and s.command_source == "none":
            self.node.get_logger().warn("collision.reaction gravity: command_source is none, so there is no "
                                        "effort_command to switch to the gravity hold")
        if self._detector is not None and self._published_flag is None:
            self._publish_flag(False)

    # --- per message -----------------------------------------------------------------------------------
    def take_efforts(self, names, effort, stamp, now: int) -> None:
        """A joint_states message's efforts, and its stamp's clock (every message: the first too)."""
        if self.external_torque is None:
            return
        if len(self._efforts.map(names)[0]):  # (another robot's joint states: not our clocks)
            self._mixed = self._clocks.problem(names, stamp_seconds(stamp.sec, stamp.nanosec, now), now)
        self._efforts_refused = False
        try:
            self._efforts.update(names, effort, now)
        except Rejected as exc:
            self._efforts_refused = True  # (never fed to the observer: its state gives no output)
            self.node.problem("effort", cut(str(exc)), now, DiagnosticStatus.WARN)

    @property
    def terms(self) -> int:
        """The outputs of the message's one pass the observer reads (0 when it is off)."""
        return OBSERVER_TERMS if self.external_torque is not None else 0

    def observe(self, plan, state, stamp, now: int, data) -> None:
        """The observer's step on the state just merged and the collision detection, their outputs left to
        :meth:`publish`; nothing without fresh inputs.
        ``data``: the plan's workspace, filled for this state with at least :attr:`terms`."""
        self._estimate = None
        if self.external_torque is None:
            return
        self._state = state
        limit = now - plan.state_timeout_ns
        missing = self._efforts.missing(limit, plan.model.joint_names)
        if not missing and state.qd_ns.min() < limit:
            missing = state.missing(state.qd_ns, now, "velocity")
        if missing:
            self.node.problem("external_torque", cut("no external torques: " + missing), now, DiagnosticStatus.WARN)
            self._observer.reset()  # the torque over the gap is unknown: start over once it is back
            return
        if self._efforts_refused:
            return  # (the next state's step spans this one: the observer's gap rule)
        sec, nanosec = stamp.sec, stamp.nanosec
        t = stamp_seconds(sec, nanosec, now)
        if self._mixed:  # (each jump between the clocks would restart the observer: zeros, invented)
            self.node.problem("external_torque", cut("no external torques: " + self._mixed), now)
            self._observer.reset()
            return
        last = self._observer.last_time
        if last is not None and not 0.0 <= t - last <= plan.settings.state_timeout:
            # (states missing in between, e.g. ones the publisher did not believe: the torque over the gap
            # is unknown, and holding the last one over it would invent an external torque)
            self.node.problem("external_torque", f"external torques restarted: {t - last:.3f} s between joint "
                              f"states, more than state_timeout {plan.settings.state_timeout:g} s", now,
                              DiagnosticStatus.WARN)
            self._observer.reset()
        effort = self._efforts.effort if self._unsigned else self.external_torque.sign * self._efforts.effort
        try:
            r = self._observer.update(t, state.q, state.qd, effort, data)
        except ValueError as exc:
            self.node.problem("external_torque", cut(f"no external torques: {exc}"), now)
            self._observer.reset()
            return
        implausible = self._implausible(plan, r)
        if implausible:  # (published by no output, fed to no detector)
            self.node.problem("external_torque", cut(f"not publishing external torques: {implausible}"), now)
            self._observer.reset()
            return
        r_out = r if plan.full else r[plan.out]
        self._estimate = (sec, nanosec, r_out)
        if self._detector is not None:
            self._detect(plan, t, r_out, now)

    def publish(self) -> None:
        """The estimate of the last :meth:`observe`, if it gave one: after the command, which a control loop
        waits for (the detection, which changes the command, came before it)."""
        if self._estimate is None:
            return
        (sec, nanosec, r_out), self._estimate = self._estimate, None
        torques_pub, wrench_pub, _ = self._publishers
        # (each only when listened to: a publication costs the middleware more than the estimate itself)
        if torques_pub.get_subscription_count() > 0:
            torques_pub.publish(self._torques.serialize(sec, nanosec, r_out))
        if wrench_pub.get_subscription_count() > 0:
            wrench_pub.publish(self._wrench.serialize(sec, nanosec, self._observer.wrench_in(self.external_torque.wrench_frame)))
        self._n_published += 1

    def _implausible(self, plan, r: np.ndarray) -> str:
        """Why the estimate is not believed (the rule of every output: the torques, and the wrench by the rule
        of every published wrench), '' when it is."""
        plausibility = plan.plausibility
        problem = plausibility.output_problem(r)
        if problem:
            return "not plausible: " + problem
        return plausibility.wrench_problem(self._observer.wrench, "the wrench estimate [moment; force]")

    def _detect(self, plan, t: float, residual: np.ndarray, now: int) -> None:
        detector = self._detector
        change = detector.update(t, residual)
        if change is None:
            return
        self._publish_flag(change)
        log = self.node.get_logger()
        if change:
            joints = {plan.names[i]: round(float(residual[i]), 3) for i in detector.joints}
            reaction = self.external_torque.settings.collision_reaction
            if reaction == "gravity" and not self._latched:
                self._latched, self._latched_on = True, joints
            self.node.problem("collision", cut(f"collision: external torque beyond the threshold on {joints} "
                                               f"(reaction: {reaction})"), now, DiagnosticStatus.WARN)
            log.warn(cut(f"collision at t = {t:.4f} s: external torques {joints} beyond collision.thresholds; "
                         f"reaction {reaction}"))
        else:
            peak = {plan.names[i]: round(float(detector.peak[i]), 3) for i in range(len(residual))}
            log.info(cut(f"collision over at t = {t:.4f} s; peak |external torque| {peak}"))

    def _publish_flag(self, value: bool) -> None:
        self._published_flag = value
        self._publishers[2].publish(Bool(data=bool(value)))

    @property
    def latched(self) -> bool:
        """Whether the gravity-hold reaction holds (until ~/reset_collision, whatever is switched off meanwhile)."""
        return self._latched

    # --- service, diagnostics ----------------------------------------------------------------------------
    def _on_reset(self, request, response):
        detector = self._detector
        if detector is not None and detector.active:
            response.success = False
            response.message = "the collision lasts: the external torques are still beyond the release level"
            return response
        was = self._latched
        self._latched, self._latched_on = False, {}
        response.success = True
        response.message = "collision reaction released" if was else "no collision reaction was active"
        self.node.get_logger().info(response.message)
        return response

    def status(self, now: int, period: float):
        """The ``external_torque`` diagnostics status, or None when off (and no reaction holds)."""
        if self.external_torque is None and not self._latched:
            return None
        recent = self.node.recent_problems(now)
        values, level, text = [], DiagnosticStatus.OK, "estimating external torques"
        if self.external_torque is not None:
            values += [("external_torques rate (Hz)", f"{self._n_published / period:.1f}"),
                       ("frame", self.external_torque.frame), ("wrench frame", self.external_torque.wrench_frame),
                       ("gain (1/s)", f"{self.external_torque.settings.external_torque_gain:g}")]
        else:
            text = "external torques off"
        self._n_published = 0
        detector = self._detector
        if detector is not None:
            values.append(("collision", str(detector.active)))
            if detector.active:
                peak = {self._node_plan.names[i]: round(float(detector.peak[i]), 3) for i in detector.joints}
                level, text = DiagnosticStatus.WARN, f"collision on {peak} (peak |external torque|)"
        if self._latched:  # (whatever was switched off since: the hold lasts until ~/reset_collision)
            if detector is None or not detector.active:
                text = f"collision on {self._latched_on} (|external torque| at detection)"
            level, text = DiagnosticStatus.WARN, text + "; effort_command holds gravity until ~/reset_collision"
        if detector is not None or self._latched:
            reaction = self.external_torque.settings.collision_reaction if self.external_torque is not None else "off"
            values.append(("reaction", reaction + (" (holding gravity until ~/reset_collision)" if self._latched else "")))
        for kind in ("external_torque", "effort"):
            if kind in recent:
                lvl, txt, _ = recent[kind]
                level, text = max(level, lvl), (f"{text}; {txt}" if self._latched else txt)
        return ("external_torque", level, text, values)
