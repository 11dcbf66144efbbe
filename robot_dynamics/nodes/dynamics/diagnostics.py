"""The dynamics node's /diagnostics: its counters per period and the statuses made of them.

``model`` (the robot, joints, gravity and payload), ``inputs`` (joint_states rate, rejected messages,
missing or stale inputs), ``outputs`` (rates, compute time, what effort_command carries), and the
task-space, external-torque, F/T sensor and payload statuses when those are on.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus

from ..common.base import DIAGNOSTICS_PERIOD

__all__ = ["Counters", "dynamics_statuses"]


class Counters:
    """What the node counts over one diagnostics period."""

    def __init__(self, now: int):
        self.reset(now)

    def reset(self, now: int) -> None:
        self.since_ns = now
        self.n_in = self.n_out = self.n_computed = 0
        self.compute_ns_sum = self.compute_ns_max = 0

    def computed_in(self, ns: int) -> None:
        """One message's outputs done, in ``ns`` of CPU time."""
        self.n_out += 1
        self.compute_ns_sum += ns
        if ns > self.compute_ns_max:
            self.compute_ns_max = ns


def dynamics_statuses(node, now: int) -> list:
    """The node's statuses for the period since its counters' reset."""
    plan, state, stats = node._plan, node._state, node._stats
    period = max((now - stats.since_ns) * 1e-9, 1e-9)
    recent = node.recent_problems(now)
    model_values = []
    if plan is not None:
        model_values = [
            ("robot", plan.base.name), ("joints", " ".join(plan.names)),
            ("gravity", " ".join(f"{x:g}" for x in plan.settings.gravity)),
            ("payload", f"{plan.settings.payload_mass:g} kg on {plan.settings.payload_link}"
             if plan.settings.payload_link else "none"),
        ]
    statuses = [node.model_status(model_values), _inputs(node, plan, state, stats, recent, now, period),
                _outputs(node, plan, stats, recent, now, period)]
    if plan is not None and plan.task is not None:
        statuses.append(node._task.status(plan, recent))
    for status in (node._external_torque.status(now, period), node._ft_sensor.status(now, period), node._payload.status()):
        if status is not None:
            statuses.append(status)
    return statuses


def _inputs(node, plan, state, stats, recent, now, period):
    """Joint states and desired inputs."""
    values = [("joint_states rate (Hz)", f"{stats.n_in / period:.1f}"), ("rejected messages", node._n_rejected)]
    level, text = DiagnosticStatus.OK, "joint states complete and fresh"
    if plan is not None:
        missing = state.missing(state.q_ns, now, "position")
        if missing:
            level, text = DiagnosticStatus.ERROR, missing
        desired = node._desired
        if desired is None:
            values.append(("desired input", "none"))
        else:
            age = (now - desired.received_ns) * 1e-9
            values.append(("desired input", f"{desired.topic}, {age:.3f} s old"))
            if age > plan.settings.desired_timeout and plan.settings.command_source == "computed":
                level = max(level, DiagnosticStatus.WARN)
                text += f"; {desired.topic} stale ({age:.3f} s)"
    else:
        level, text = DiagnosticStatus.STALE, "no model"
    for kind in ("joint_states", "desired_accelerations", "desired_state", "mimic", "velocity", "desired"):
        if kind in recent:
            lvl, txt, _ = recent[kind]
            level = max(level, lvl)
            text += "; " + txt
            values.append((kind, txt))
    return ("inputs", level, text, values)


def _outputs(node, plan, stats, recent, now, period):
    """The published outputs, their compute time, and what effort_command carries."""
    n_out = stats.n_out
    values = [
        ("output rate (Hz)", f"{n_out / period:.1f}"),
        ("computed_torques rate (Hz)", f"{stats.n_computed / period:.1f}"),
        ("compute time mean (us)", f"{stats.compute_ns_sum / n_out / 1e3:.1f}" if n_out else "-"),
        ("compute time max (us)", f"{stats.compute_ns_max / 1e3:.1f}" if n_out else "-"),
        ("command_source", node._settings.command_source),
    ]
    level, text = DiagnosticStatus.OK, f"publishing at {n_out / period:.1f} Hz"
    for kind in ("state", "output", "saturation"):
        if kind in recent:
            lvl, txt, _ = recent[kind]
            level, text = max(level, lvl), txt
    note = node._command_note
    if note is not None and now - note[2] <= 2 * DIAGNOSTICS_PERIOD * 1e9:  # (the hold of this period)
        text = f"{text}; {note[1]}" if level > DiagnosticStatus.OK else note[1]
        level = max(level, note[0])
        values.append(("effort_command", note[1]))
    if plan is None:
        level, text = DiagnosticStatus.STALE, "no model: publishing nothing"
    elif n_out == 0 and level == DiagnosticStatus.OK:
        level, text = DiagnosticStatus.WARN, "no joint states: publishing nothing"
    return ("outputs", level, text, values)
