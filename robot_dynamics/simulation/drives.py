"""The drives of a simulated arm: the actuator commands they hold, and what they do when a command goes stale.

A real joint drive closes its own loops: when its command stops coming (``command_timeout``) it
either lets go (``zero_torque``), brakes and holds still (``brake``) or returns to where it was
(``hold_position``); and it keeps the joint under its velocity limit. :class:`Commands` keeps each
joint's actuator torque command with the simulated time it arrived; :func:`drive_torques` is the torque
the drives apply, from the commands and the state. The simulator node steps
:class:`~robot_dynamics.simulation.simulator.Simulator` with it; a library user can do the same.
"""

from __future__ import annotations

import math

import numpy as np

from ..rigid_body.data import GRAVITY, MASS, Data, compute_terms
from ..rigid_body.model import given_limits

__all__ = ["DRIVE_BANDWIDTH", "ON_COMMAND_TIMEOUT", "Commands", "Drives", "drive_torques"]

ON_COMMAND_TIMEOUT = ("zero_torque", "brake", "hold_position")
"""What a joint's drive does once its command went stale."""
DRIVE_BANDWIDTH = 2 * math.pi * 5.0
"""Bandwidth of the drives' own brake, hold and velocity-limit loops, rad/s (5 Hz)."""


class Drives:
    """What :func:`drive_torques` reads besides the state, made once per model (a plan's): the velocity
    limits (inf where the URDF gives none), a mask of no joints, and the workspace of the pass that
    gives ``g`` and ``M`` when a drive takes over."""

    def __init__(self, model):
        self.velocity_limit = given_limits(model.velocity_limits)
        self.none = np.zeros(model.nv, dtype=bool)
        self.data = Data(model)


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
