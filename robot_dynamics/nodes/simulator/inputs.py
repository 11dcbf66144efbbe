"""The simulator node's inputs, checked, and the commands it holds (no rclpy).

:class:`Commands` keeps each joint's actuator torque command with the simulated time it arrived;
a command older than ``command_timeout`` becomes zero torque. :func:`effort_command`,
:func:`named_efforts` and :func:`external_wrench` check one message each and raise
:class:`~robot_dynamics.nodes.common.parameters.Rejected` with the reason: a rejected message never
reaches the state.
"""

from __future__ import annotations

import math

import numpy as np

from ...rigid_body.data import GRAVITY, MASS, compute_terms
from ...rigid_body.kinematics import frame_pose
from ...rigid_body.wrenches import wrench_in_world
from ..common.parameters import Rejected, duplicates
from .plan import DRIVE_BANDWIDTH, Drives, Plan

__all__ = ["DRIVE_BANDWIDTH", "Commands", "drive_torques", "effort_command", "external_wrench",
           "named_efforts"]


class Commands:
    """The actuator commands of one model, model order (zero where never commanded or stale)."""

    def __init__(self, nv: int, q0: np.ndarray | None = None):
        self.effort = np.zeros(nv)
        self.time = np.full(nv, -math.inf)  # simulated time of each joint's last command (-inf: never)
        self.stale = np.isinf(self.time)  # never commanded: zero torque, nothing to warn about
        self.next_expiry = math.inf  # simulated time at which the oldest live command goes stale
        # position to hold of each joint whose command went stale (or never came: the start's)
        self.hold = np.zeros(nv) if q0 is None else np.array(q0, dtype=float)

    def accept(self, index: np.ndarray, efforts: np.ndarray, t: float, timeout: float) -> list:
        """Take the commands ``efforts`` of the joints ``index`` at simulated time ``t``; the joints
        whose commands had gone stale and are fresh again."""
        revived = [i for i in index if self.stale[i] and np.isfinite(self.time[i])]
        self.effort[index] = efforts
        self.time[index] = t
        self.stale[index] = False
        self.schedule_expiry(timeout)
        return revived

    def schedule_expiry(self, timeout: float) -> None:
        """Recompute :attr:`next_expiry` (inf: no command can go stale)."""
        live = self.time[~self.stale]
        self.next_expiry = live.min() + timeout if timeout > 0 and live.size else math.inf

    def expire(self, t: float, timeout: float, q: np.ndarray | None = None) -> np.ndarray:
        """Zero the commands older than ``timeout`` at simulated time ``t`` (and keep the positions
        ``q`` of their joints to hold); the joints that went stale now (each once per episode)."""
        if timeout <= 0:
            self.next_expiry = math.inf
            return np.zeros(0, dtype=np.intp)
        stale = (t - self.time > timeout) & ~self.stale
        self.effort[stale] = 0.0
        if q is not None:
            self.hold[stale] = q[stale]
        self.stale |= stale
        self.schedule_expiry(timeout)
        return np.flatnonzero(stale)

    def stale_joints(self) -> np.ndarray:
        """Joints commanded once whose command went stale."""
        return np.flatnonzero(self.stale & np.isfinite(self.time))

    def never_commanded(self) -> np.ndarray:
        return np.flatnonzero(np.isinf(self.time))


def drive_torques(drives: Drives, q: np.ndarray, qd: np.ndarray, commands: Commands, on_timeout: str,
                  limit_velocity: bool, motors=None) -> np.ndarray:
    """The torques the drives apply (model order): the commands; where a command went stale,
    ``on_timeout`` — ``zero_torque``: 0; ``brake``: ``g_i(q) - 2 w M_ii qd_i`` (stops the joint and
    holds it where it stops); ``hold_position``: ``g_i(q) + M_ii (w^2 (q_hold - q_i) - 2 w qd_i)``
    (a critically damped return to where it was); with ``limit_velocity``, a joint faster than its
    URDF velocity limit v gets ``g_i(q) - 2 w M_ii (qd_i - clip(qd_i, -v, v))`` instead. ``w`` is
    :data:`DRIVE_BANDWIDTH`, ``M_ii`` the mass matrix's diagonal: each joint a decoupled
    second-order loop (the effort limits still apply after).

    Elastic joints (``motors = (theta, theta_d, K)``, Spong Ex. 6.2): a drive measures and drives its
    motor, so the same loops close on the motor's ``theta``, ``theta_d`` (reflected to the link side):
    damping the link's velocity through the spring would be unstable (the loop from the motor
    torque to the link velocity has no damping term: ``J m s^4 + K (J + m) s^2 + c K s`` is never
    Hurwitz). ``hold_position`` holds the motor at ``q_hold + K^-1 g(q_hold)`` with the constant
    gravity ``g(q_hold)`` (Tomei's PD with gravity compensation), so the link settles at ``q_hold``
    exactly; the velocity limit bounds the motor velocity."""
    stale = commands.stale if on_timeout != "zero_torque" else drives.none
    vmax = drives.velocity_limit
    position, velocity = (q, qd) if motors is None else motors[:2]
    over = np.abs(velocity) > vmax if limit_velocity else drives.none
    if not (stale.any() or over.any()):
        return commands.effort
    data = drives.data
    held_load = None  # elastic hold_position: the constant g(q_hold) the springs carry there
    if motors is not None and on_timeout == "hold_position" and stale.any():
        compute_terms(data, commands.hold, None, GRAVITY)
        held_load = data.g.copy()
    compute_terms(data, q, None, GRAVITY | MASS)
    w, m, g = DRIVE_BANDWIDTH, np.diag(data.M), data.g
    tau = commands.effort.copy()
    if on_timeout == "brake":
        tau[stale] = (g - 2 * w * m * velocity)[stale]
    elif on_timeout == "hold_position":
        load, target = g, commands.hold
        if held_load is not None:
            load, target = held_load, commands.hold + held_load / np.asarray(motors[2])
        tau[stale] = (load + m * (w * w * (target - position) - 2 * w * velocity))[stale]
    tau[over] = (g - 2 * w * m * (velocity - np.clip(velocity, -vmax, vmax)))[over]
    return tau


def effort_command(data, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """``effort_command`` data (the ``joints`` order) -> ``(model indices, efforts)``."""
    efforts = np.asarray(data, dtype=float)
    if efforts.shape != (len(plan.command_index),):
        raise Rejected(f"{efforts.size} values, expected {len(plan.command_index)} "
                       f"(one per joint of `joints`: {list(plan.command_names)})")
    if not np.isfinite(efforts).all():
        raise Rejected(f"non-finite effort for {[plan.command_names[i] for i in np.flatnonzero(~np.isfinite(efforts))]}")
    _check_plausible(plan, plan.command_index, efforts)
    return plan.command_index, efforts


def named_efforts(names, efforts, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
    """``effort_command_named`` (names and efforts, any subset of the joints) -> ``(model indices,
    efforts)``."""
    names = list(names)
    efforts = np.asarray(efforts, dtype=float)
    if not names or efforts.shape != (len(names),):
        raise Rejected(f"{len(names)} names and {efforts.size} efforts (need one effort per name, at least one)")
    unknown = [n for n in names if n not in plan.index]
    if unknown:
        mimic = [n for n in unknown if n in plan.model.couplings]
        hint = f" ({', '.join(mimic)} mimic another joint: command the joint it follows)" if mimic else ""
        raise Rejected(f"unknown joints {unknown}{hint}")
    if len(set(names)) != len(names):
        raise Rejected(f"duplicate joint names {sorted(duplicates(names))}")
    if not np.isfinite(efforts).all():
        raise Rejected(f"non-finite effort for {[names[i] for i in np.flatnonzero(~np.isfinite(efforts))]}")
    index = np.array([plan.index[n] for n in names], dtype=np.intp)
    _check_plausible(plan, index, efforts)
    return index, efforts


def _check_plausible(plan: Plan, index: np.ndarray, efforts: np.ndarray) -> None:
    """:class:`Rejected` unless the efforts of the model joints ``index`` are plausible torques (the
    rule the published ``joint_states`` efforts pass)."""
    implausible = plan.plausibility.torque_problem(index, efforts)
    if implausible:
        raise Rejected(implausible)


def external_wrench(frame_id: str, torque, force, plan: Plan, q: np.ndarray) -> tuple[str, np.ndarray]:
    """An ``external_wrench`` on link ``frame_id``, in that link's axes with the moment about its origin
    (a WrenchStamped as ROS reads it), at the state ``q`` -> ``(link, [torque; force])`` in the library's
    convention (world-aligned axes, about the link's origin): held fixed in the world until the next message."""
    link = frame_id.lstrip("/")
    frame = plan.model.frames.get(link)
    if frame is None:
        raise Rejected(f"header.frame_id {frame_id!r} is not a link of robot {plan.model.name!r} "
                       "(the wrench acts on that link: its axes, moment about its origin)")
    if frame.body < 0:
        raise Rejected(f"header.frame_id {frame_id!r} is fixed to the base (no joint moves it): a wrench there "
                       "moves nothing")
    wrench = np.array([*torque, *force], dtype=float)
    if not np.isfinite(wrench).all():
        raise Rejected(f"non-finite wrench on {link!r}")
    return link, wrench_in_world(wrench, frame_pose(plan.model, q, link))
