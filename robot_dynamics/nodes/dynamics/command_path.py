"""What ``effort_command`` carries, decided in one place (no rclpy).

``command_source`` names a law: ``gravity`` (``g(q)``), ``computed`` (the computed-torque law) or
``task_space`` (the task-space law). Whatever is refused on the law's way, the command does not go
silent while joint states arrive: it carries the gravity hold ``g(q)`` instead, and says why. The
reasons, in the order they are checked (:class:`CommandPath` takes them from the node):

1. a collision reaction latched (``collision.reaction: gravity``, until ``~/reset_collision``);
2. missing or stale velocities (the laws need ``qd``);
3. a desired input missing or older than ``desired_timeout`` (``desired_state`` /
   ``desired_accelerations``, or the task-space target);
4. a position error beyond ``max_position_error`` (``computed``);
5. the law's torque not finite or not plausible
   (:class:`~robot_dynamics.nodes.common.safety.Plausibility`).

Either way the command is saturated to the URDF effort limits. Only when ``g(q)`` itself is not
plausible (or the positions are not fresh, checked before) is nothing published.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .plan import Plan

__all__ = ["Command", "CommandPath", "HOLD"]

HOLD = "gravity hold"


@dataclass(frozen=True)
class Command:
    """One decision: ``torque`` (output order, saturated; None: nothing is published), what it carries
    (the law's name or ``HOLD``), why the hold replaces the law (''), the joints saturated, and
    ``changed``: whether what it carries changed since the last decision (to be said once)."""

    torque: np.ndarray | None
    carries: str
    reason: str
    saturated: list
    changed: bool


class CommandPath:
    """Decides each ``effort_command`` (:meth:`decide`) and remembers what the last one carried."""

    def __init__(self):
        self.carries = ""  # what the last command carried ('' before the first)
        self.reason = ""   # why the hold replaced the law, '' when it did not
        self.kind = ""     # the reason's kind: 'collision', 'velocity', 'desired', 'tracking', 'law', 'gravity'

    def decide(self, plan: Plan, source: str, law: np.ndarray | None, hold: np.ndarray | None,
               refusals=()) -> Command:
        """``effort_command`` for ``source`` (``gravity``, ``computed`` or ``task_space``): ``law``, the
        source's torques (model order; None when they could not be computed), unless a refusal applies;
        ``hold``: ``g(q)`` (model order); ``refusals``: ``(kind, reason)`` pairs in the order of the module
        docstring, an empty reason when that check passed. The law is judged here by the plausibility rule
        unless a ``"law"`` pair says the caller judged it already (by the same rule: one check per message)."""
        kind = reason = ""
        judged = False
        for k, r in refusals:
            judged = judged or k == "law"
            if r:
                kind, reason = k, r
                break
        if source == "gravity":
            kind = reason = ""
        elif not reason:
            problem = "no torque" if law is None else "" if judged else plan.plausibility.output_problem(law)
            if problem:
                kind, reason = "law", f"{source} torques refused: {problem}"
        torque, carries = (law, source) if source != "gravity" and not reason else (hold, source if not reason else HOLD)
        if torque is hold:  # (the law was judged above; the hold, or gravity as the law, is judged here)
            problem = plan.plausibility.output_problem(hold) if hold is not None else "no torque"
            if problem:  # (g(q) beyond the rule: nothing to fall back to)
                torque, carries = None, "nothing"
                kind, reason = "gravity", f"the gravity hold is not plausible: {problem}"
        changed = (carries, kind) != (self.carries, self.kind)
        self.carries, self.reason, self.kind = carries, reason, kind
        if torque is None:
            return Command(None, carries, reason, [], changed)
        wanted = torque[plan.out]
        limit = plan.effort_limit
        command = np.minimum(np.maximum(wanted, -limit), limit)  # (np.clip costs twice as much here)
        clipped = command != wanted
        saturated = [plan.names[i] for i in np.flatnonzero(clipped)] if clipped.any() else []
        return Command(command, carries, reason, saturated, changed)
