"""Guards of the nodes against hostile or absurd input (no rclpy).

- :func:`description_text`: a robot_description is URDF XML text of bounded size, never a path
  (a node never opens a file somebody named on the ROS graph);
- :func:`cut`: text of bounded length for logs and ``/diagnostics`` (a 1 MB joint name must not
  become a 1 MB log line);
- :class:`Plausibility`: what no robot state can be (non-finite values, positions a thousand turns
  past the joint limits, speeds of 9 500 rpm, more kinetic energy than any fall or drive could
  give), torques and mass matrices within a multiple of the robot's torque scale: the one rule for
  what the nodes take in (joint states and efforts) and what they publish. The URDF's limits
  themselves are not the rule: neither node enforces them, and a simulation without limits, or an
  arm falling with its motors off, passes them while its state is true;
- :func:`check_outputs_finite`: a model whose outputs at a reference state are not finite (gravity
  1e308, a payload far away) is refused before it replaces a working one;
  :func:`check_outputs_plausible`, :func:`check_gravity` and :func:`check_gains`: nor are settings
  whose outputs the plausibility rule would not believe (gravity 1e300, kp 1e300, armature 1e300);
- :func:`closest_name`: the known name a misspelled one most likely meant.
"""

from __future__ import annotations

import difflib
import math

import numpy as np

from ...rigid_body.model import FIRST_MOMENT, MASS, ORIGIN_P, given_limits

__all__ = ["ENERGY_FACTOR", "GRAVITY_FACTOR", "MAX_DESCRIPTION_CHARS", "MAX_SPEED", "MAX_TEXT", "PAYLOAD_FACTOR",
           "POSITION_MARGIN", "STANDARD_GRAVITY", "TORQUE_FACTOR", "UNLIMITED_POSITION", "VELOCITY_FACTOR", "Plausibility",
           "check_gains", "check_gravity", "check_payload", "check_outputs_finite", "check_outputs_plausible", "closest_name",
           "cut", "description_text"]

#: largest robot_description accepted, characters (the biggest real URDFs are a few hundred kB)
MAX_DESCRIPTION_CHARS = 10_000_000
#: longest text of one log line or diagnostic string, characters
MAX_TEXT = 1000
#: how far beyond its limits (rad or m) a joint position is still believed: 1 600 turns. The nodes do
#: not enforce the limits (a simulation without enforce_position_limits swings past them, a falling
#: arm passes them), but a joint limited to a turn that has wound up 1e5 rad, or slid 1e20 m, is a
#: broken encoder or an attack
POSITION_MARGIN = 1.0e4
#: largest |position| believed of a joint without limits (continuous, or none in the URDF), rad or m:
#: 160 000 turns, where an angle still has 1e-10 rad of resolution
UNLIMITED_POSITION = 1.0e6
#: largest speed believed of any joint, rad/s or m/s (9 500 rpm at the joint)
MAX_SPEED = 1.0e3
#: how many times the robot's energy scale (:meth:`Plausibility.energy_scale`) its kinetic energy may
#: reach and still be believed (10: a fall under 10 g, the largest gravity a node takes)
ENERGY_FACTOR = 10.0
#: velocities within this many times their velocity limits are believed without computing the
#: kinetic energy: it is then at most ENERGY_FACTOR times the energy scale by construction
VELOCITY_FACTOR = math.sqrt(ENERGY_FACTOR)
#: standard gravity, m/s^2
STANDARD_GRAVITY = 9.80665
#: largest |gravity| a node takes, in multiples of STANDARD_GRAVITY (a centrifuge test is 10 g)
GRAVITY_FACTOR = 10.0
#: largest payload a node takes, in multiples of the robot's own mass
PAYLOAD_FACTOR = 10.0
#: how many times its torque scale (:meth:`Plausibility.torque_scale`) a torque may reach and still
#: be believed; a mass matrix entry is believed up to the same bound per rad/s^2
TORQUE_FACTOR = 1000.0


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` shortened to at most ``limit`` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = f"... [{len(text) - limit} more characters]"
    return text[: max(limit - len(tail), 0)] + tail


def description_text(xml) -> str:
    """``xml`` if it is usable as a robot_description: a string that starts (after white space)
    with ``<`` and has at most :data:`MAX_DESCRIPTION_CHARS` characters; ``ValueError`` with the
    reason otherwise. A node never reads a file named by a description: a path is refused."""
    if not isinstance(xml, str):
        raise ValueError(f"robot_description must be URDF XML text, not {type(xml).__name__}")
    if len(xml) > MAX_DESCRIPTION_CHARS:
        raise ValueError(f"robot_description has {len(xml)} characters, more than the limit {MAX_DESCRIPTION_CHARS}")
    start = xml.lstrip()[:1]
    if start != "<":
        raise ValueError(
            f"robot_description must be URDF XML text (starting with '<'), got {cut(repr(xml), 80)}; "
            "the nodes never open files: give a file with --urdf FILE or in a params file")
    return xml


class Plausibility:
    """Limits beyond which a joint state, a torque or a mass matrix is not believed (one rule for
    the inputs and the outputs of the nodes, efforts included):

    - non-finite values;
    - positions more than ``POSITION_MARGIN`` beyond the joint limits; beyond ``UNLIMITED_POSITION``
      for a joint without limits;
    - speeds above ``MAX_SPEED``;
    - a state whose kinetic energy ``1/2 qd^T M(q) qd`` (Lynch & Park eq. 8.43) is above
      ``ENERGY_FACTOR`` times the robot's energy scale (:meth:`energy_scale`): more than any fall
      or any drive within its limits gives (computed only when some velocity is beyond
      ``VELOCITY_FACTOR`` times its limit, below which the bound holds by construction);
    - torques above ``TORQUE_FACTOR`` times the joint's torque scale (:meth:`torque_scale`), and mass
      matrix entries ``M_ij`` above ``TORQUE_FACTOR sqrt(scale_i scale_j)`` per rad/s^2.

    Built from the model as parsed (the settings of a node, gravity and payload among them, never
    widen the bounds they are checked against)."""

    def __init__(self, model):
        self.model = model
        self.names = model.joint_names
        low, high = model.position_limits[:, 0], model.position_limits[:, 1]
        # (a URDF <limit> without lower and upper reads as 0, 0; continuous joints have +-inf)
        unset = ~(low < high) | ~np.isfinite(low) | ~np.isfinite(high)
        self.low = np.where(unset, -UNLIMITED_POSITION, np.maximum(low - POSITION_MARGIN, -UNLIMITED_POSITION))
        self.high = np.where(unset, UNLIMITED_POSITION, np.minimum(high + POSITION_MARGIN, UNLIMITED_POSITION))
        self.speed = np.minimum(VELOCITY_FACTOR * drive_speeds(model), MAX_SPEED)
        self.mass, self.reach = robot_size(model)
        self.energy = ENERGY_FACTOR * self.energy_scale(model)
        self.scale = self.torque_scale(model)
        self.torque = TORQUE_FACTOR * self.scale
        self.matrix = TORQUE_FACTOR * np.sqrt(np.outer(self.scale, self.scale))

    @staticmethod
    def energy_scale(model) -> float:
        """J: ``m (2 g0 r + V^2)``, the energy a fall under standard gravity from any configuration
        releases (every mass drops at most the diameter ``2 r`` of the robot's reach) plus a bound of
        the kinetic energy with every joint at its velocity limit ``v_i`` (:func:`drive_speeds`): no
        point moves faster than ``V = sum_i v_i r_i`` (``r_i = r`` for a revolute joint, 1 for a
        prismatic one) and no body turns faster than ``V / r``, so ``T <= 1/2 m V^2 + 1/2 m r^2 (V / r)^2``
        (``m``, ``r``: :func:`robot_size`; a body's inertia about its centre taken as at most ``m r^2``)."""
        mass, reach = robot_size(model)
        speed = drive_speeds(model)
        prismatic = np.array([kind == "prismatic" for kind in model.joint_types], dtype=bool)
        top = float(np.sum(speed * np.where(prismatic, 1.0, max(reach, 1e-3))))
        return mass * (2.0 * STANDARD_GRAVITY * reach + top * top)

    @staticmethod
    def torque_scale(model) -> np.ndarray:
        """Per joint, N m or N: the larger of its URDF effort limit and the torque standard gravity
        exerts on the whole robot at its reach, ``m g0 r`` (``m g0`` for a prismatic joint), at least
        1 (``m``, ``r``: :func:`robot_size`)."""
        mass, reach = robot_size(model)
        weight = mass * STANDARD_GRAVITY
        prismatic = np.array([kind == "prismatic" for kind in model.joint_types], dtype=bool)
        gravity = np.where(prismatic, weight, weight * reach)
        effort = np.where(np.isfinite(model.effort_limits), model.effort_limits, 0.0)
        return np.maximum(np.maximum(gravity, effort), 1.0)

    def problem(self, index: np.ndarray, position, velocity) -> str:
        """The reason the values of the model joints ``index`` are not believed one by one (finite,
        positions, speeds), '' when they are; the kinetic energy of a whole state is
        :meth:`energy_problem`'s."""
        parts = []
        if position is not None:
            believed = (position >= self.low[index]) & (position <= self.high[index])  # (NaN: not believed)
            if not believed.all():
                parts.append(f"positions more than {POSITION_MARGIN:g} beyond the joint limits (or beyond "
                             f"{UNLIMITED_POSITION:.0e} without limits): {self._list(index, position, ~believed)}")
        if velocity is not None:
            believed = np.abs(velocity) <= MAX_SPEED
            if not believed.all():
                parts.append(f"velocities above {MAX_SPEED:g} rad/s (m/s): {self._list(index, velocity, ~believed)}")
        return "; ".join(parts)

    def energy_problem(self, q: np.ndarray, qd: np.ndarray) -> str:
        """The reason the state ``(q, qd)`` (model order, finite) is not believed for its kinetic
        energy, '' when it is (without computing it while every velocity is within ``VELOCITY_FACTOR``
        times its limit: the common case)."""
        fast = ~(np.abs(qd) <= self.speed)
        if not fast.any():
            return ""
        from ...rigid_body.kinematics import kinetic_energy

        with np.errstate(all="ignore"):
            energy = float(kinetic_energy(self.model, q, qd))
        if energy <= self.energy:
            return ""
        every = np.arange(len(qd))
        return (f"kinetic energy {energy:.4g} J above {ENERGY_FACTOR:g} times the robot's energy scale "
                f"({self.energy:.4g} J, more than any fall or drive gives): velocities {self._list(every, qd, fast)}")

    def state_problem(self, q: np.ndarray, qd: np.ndarray) -> str:
        """:meth:`problem` and :meth:`energy_problem` of a whole state (model order)."""
        every = np.arange(len(q))
        return self.problem(every, q, qd) or self.energy_problem(q, qd)

    def torque_problem(self, index: np.ndarray, torque) -> str:
        """The reason the torques of the model joints ``index`` are not believed, '' when they are."""
        bad = ~(np.abs(torque) <= self.torque[index])
        if not bad.any():
            return ""
        return (f"torques above {TORQUE_FACTOR:g} times the joint's torque scale: {self._list(index, torque, bad)} "
                f"(bounds {self._list(index, self.torque[index], bad)})")

    def output_problem(self, values: np.ndarray) -> str:
        """The reason an output in model order (torques ``(nv,)`` or a mass matrix ``(nv, nv)``) is
        not believed (non-finite or beyond the bounds), '' when it is."""
        bound = self.torque if values.ndim == 1 else self.matrix
        if (np.abs(values) <= bound).all():  # (the common case first: the node's hot path; NaN fails it)
            return ""
        if values.ndim == 1:
            return self.torque_problem(np.arange(len(values)), values)
        bad = ~(np.abs(values) <= self.matrix)
        i, j = np.unravel_index(int(np.argmax(np.where(bad, 1.0, 0.0))), values.shape)
        return (f"mass matrix entry ({self.names[i]}, {self.names[j]}) = {values[i, j]:.4g} beyond the plausible "
                f"{self.matrix[i, j]:.4g} ({TORQUE_FACTOR:g} times the torque scale per rad/s^2)")

    def wrench_bounds(self) -> tuple[float, float]:
        """``(force, moment)``: the largest norms of a believed wrench (:meth:`wrench_problem`)."""
        force = TORQUE_FACTOR * max(self.mass * STANDARD_GRAVITY, 1.0)
        return force, force * max(self.reach, 1.0)

    def wrench_problem(self, wrench, what: str) -> str:
        """The reason a wrench ``[moment; force]`` (``what`` names it) is not believed, '' when it is: a
        force above ``TORQUE_FACTOR`` times the robot's weight ``m g0`` (at least 1 N), or a moment above
        that force at the robot's reach (at least 1 m); non-finite values never are.  One rule for every
        wrench a node publishes: the simulator's contact truth and the dynamics node's estimate."""
        force, moment = self.wrench_bounds()
        # (Python floats, on the node's hot path: an overflowing square is inf, a NaN fails the test)
        mx, my, mz, fx, fy, fz = np.asarray(wrench, dtype=float).tolist()
        if fx * fx + fy * fy + fz * fz <= force * force and mx * mx + my * my + mz * mz <= moment * moment:
            return ""
        with np.errstate(all="ignore"):
            shown = np.round(np.asarray(wrench, dtype=float), 3).tolist()
        return (f"{what} {shown} is not finite or beyond the plausible {force:.4g} N "
                f"and {moment:.4g} N m ({TORQUE_FACTOR:g} times the robot's weight, at its reach)")

    def _list(self, index, values, bad) -> str:
        return cut(", ".join(f"{self.names[index[i]]}={values[i]:.4g}" for i in np.flatnonzero(bad)), 300)


def robot_size(model) -> tuple[float, float]:
    """``(m, r)``: the robot's mass, kg, and its reach, m: the sum of its joint offsets plus the
    farthest centre of mass from its body's joint (an upper bound of any point's distance from the root)."""
    bodies = model.bodies
    mass = bodies[:, MASS]
    com = np.linalg.norm(bodies[:, FIRST_MOMENT], axis=1) / np.where(mass > 0, mass, 1.0)
    reach = np.linalg.norm(bodies[:, ORIGIN_P], axis=1).sum() + (com.max() if len(com) else 0.0)
    return float(mass.sum()), float(reach)


def drive_speeds(model) -> np.ndarray:
    """Per joint, rad/s or m/s: its URDF velocity limit; ``MAX_SPEED / VELOCITY_FACTOR`` without one."""
    speed = given_limits(model.velocity_limits)
    return np.where(np.isfinite(speed), speed, MAX_SPEED / VELOCITY_FACTOR)


def reference_state(model) -> np.ndarray:
    """A configuration inside the joint limits (0 clipped into them)."""
    low, high = model.position_limits[:, 0], model.position_limits[:, 1]
    return np.clip(np.zeros(model.nv), low, high)


def check_outputs_finite(model, what: str) -> None:
    """``ValueError`` unless ``model`` has a coordinate and finite gravity torques and mass matrix at
    a configuration within its limits (``what`` names the settings that made the model)."""
    import robot_dynamics as rd

    if model.nv == 0:
        raise ValueError(f"robot {model.name!r} has no moving joints: there is nothing to compute")
    q = reference_state(model)
    with np.errstate(all="ignore"):
        g = rd.gravity_torques(model, q)
        M = rd.mass_matrix(model, q)
    if not (np.isfinite(g).all() and np.isfinite(M).all()):
        raise ValueError(f"{what} would make the gravity torques or the mass matrix non-finite")


def check_outputs_plausible(model, plausibility: Plausibility, what: str) -> None:
    """``ValueError`` unless ``model``'s gravity torques and mass matrix at a configuration within its
    limits pass ``plausibility`` (``what`` names the settings that made the model)."""
    import robot_dynamics as rd

    q = reference_state(model)
    with np.errstate(all="ignore"):
        problem = (plausibility.output_problem(rd.gravity_torques(model, q))
                   or plausibility.output_problem(rd.mass_matrix(model, q)))
    if problem:
        raise ValueError(f"{what} would make the outputs implausible at the reference state: {problem}")


def check_gravity(gravity) -> None:
    """``ValueError`` unless ``|gravity|`` is at most ``GRAVITY_FACTOR`` times standard gravity."""
    largest = float(np.abs(gravity).max())
    norm = largest * float(np.linalg.norm(np.asarray(gravity) / largest)) if largest > 0 else 0.0  # (no overflow)
    if not norm <= GRAVITY_FACTOR * STANDARD_GRAVITY:
        raise ValueError(f"gravity {list(gravity)} has magnitude {norm:.4g} m/s^2, more than "
                         f"{GRAVITY_FACTOR:g} g ({GRAVITY_FACTOR * STANDARD_GRAVITY:.4g} m/s^2)")


def check_payload(plausibility: Plausibility, mass: float, com) -> None:
    """``ValueError`` unless the payload's mass is at most ``PAYLOAD_FACTOR`` times the robot's and its
    centre of mass within the robot's reach of the link carrying it."""
    if mass > PAYLOAD_FACTOR * plausibility.mass:
        raise ValueError(f"payload.mass {mass:g} kg is more than {PAYLOAD_FACTOR:g} times the robot's mass "
                         f"({plausibility.mass:.4g} kg)")
    distance = float(np.linalg.norm(com))
    if distance > plausibility.reach:
        raise ValueError(f"payload.com {list(com)} is {distance:.4g} m from its link, beyond the robot's reach "
                         f"({plausibility.reach:.4g} m)")


def check_gains(model, plausibility: Plausibility, index: np.ndarray, kp: np.ndarray, kd: np.ndarray) -> None:
    """``ValueError`` unless, on each joint of ``index``, a 1 rad (m) error and a 1 rad/s (m/s)
    velocity error ask the computed-torque law ``M (kp e + kd e')`` for a plausible torque:
    ``M_ii (kp_i + kd_i)`` at the reference state within ``plausibility``'s torque bound."""
    import robot_dynamics as rd

    with np.errstate(all="ignore"):
        servo = np.diag(rd.mass_matrix(model, reference_state(model)))[index] * (kp + kd)
    problem = plausibility.torque_problem(index, servo)
    if problem:
        raise ValueError(f"kp and kd too large: a 1 rad error and 1 rad/s velocity error would ask for {problem}")


def closest_name(name: str, known) -> str:
    """The entry of ``known`` closest to ``name``, '' when none is close."""
    match = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return match[0] if match else ""
