"""The simulator node's ``simulation`` status in /diagnostics: simulated time, the real-time factor
achieved, rates, the integrator, stale and never-received commands, and what stopped the integration."""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus

__all__ = ["simulation_status"]


def simulation_status(node, now_ns: int, period: float) -> tuple:
    """The ``("simulation", level, text, values)`` status of the ``period`` s since the last one."""
    sim, plan, s = node._sim, node._plan, node._settings
    if sim is None:
        return ("simulation", DiagnosticStatus.STALE, "no model: not simulating", [])
    achieved = (sim.t - node._stats_sim) / period
    names = plan.model.joint_names
    commands = node._commands
    values = [
        ("simulated time (s)", f"{sim.t:.6f}"), ("real-time factor", f"{achieved:.2f} (target "
                                                   f"{s.real_time_factor:g})"),
        ("steps per second", f"{node._n_steps / period:.0f}"),
        ("joint_states per second", f"{node._n_published / period:.1f}"),
        ("integrator", f"{s.integrator} at {s.physics_rate:g} Hz"), ("paused", node._paused),
        ("state", ("not published (integration stopped)" if node._silent else "stale (integration stopped)")
         if node._failure else "live"),
        ("stale commands", [names[i] for i in commands.stale_joints()]),
        ("never commanded", [names[i] for i in commands.never_commanded()]),
        ("external wrenches", sorted(node._wrenches)), ("rejected messages", node._n_rejected),
    ]
    if node._failure:
        return ("simulation", DiagnosticStatus.ERROR, f"integration stopped: {node._failure}", values)
    level, text = DiagnosticStatus.OK, "paused" if node._paused else f"running at {achieved:.2f}x real time"
    for kind, (lvl, txt, _) in node.recent_problems(now_ns).items():
        if lvl > level:
            level, text = lvl, txt
        values.append((kind, txt))
    if len(commands.stale_joints()) and level == DiagnosticStatus.OK:
        level, text = DiagnosticStatus.WARN, f"stale effort commands: {s.on_command_timeout}"
    return ("simulation", level, text, values)
