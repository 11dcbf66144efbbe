"""The dynamics node's inputs, checked and merged (no rclpy).

:class:`JointStateMerger` keeps the newest position and velocity of every joint of the model, each
with the time it arrived, from ``joint_states`` messages that may each carry only some joints
(several publishers, e.g. an arm and a gripper driver); :func:`desired_accelerations` and
:class:`DesiredStateReader` check a desired input and put it in the output order. Every check raises
:class:`Rejected` with the reason: a rejected message changes nothing.
"""

from __future__ import annotations

import array

import numpy as np

from .plan import Desired, Plan
from ..common.parameters import Rejected, duplicates

__all__ = ["MAX_CACHED_NAME_LISTS", "NEVER", "DesiredStateReader", "JointStateMerger", "Rejected",
           "desired_accelerations"]

MAX_CACHED_NAME_LISTS = 64  # per input topic; publishers with ever-changing name lists don't grow memory
MIMIC_TOLERANCE = 1e-3  # rad or m: a reported mimic joint further than this from its master is diagnosed
NEVER = np.iinfo(np.int64).min // 2  # "last received" of a joint that never was


def _floats(values) -> np.ndarray:
    return np.frombuffer(values) if isinstance(values, array.array) else np.asarray(values, dtype=float)


class _MessageMap:
    """How the names of one joint-state message map onto the model (cached per name tuple)."""

    def __init__(self, names: tuple, plan: Plan):
        if len(set(names)) != len(names):
            raise Rejected(f"duplicate joint names {duplicates(names)}")
        known = [(i, plan.index[n]) for i, n in enumerate(names) if n in plan.index]
        mimic = [(i, *plan.mimic[n]) for i, n in enumerate(names) if n in plan.mimic]
        self.src = np.array([k[0] for k in known], dtype=np.intp)  # message index of each known joint
        self.dst = np.array([k[1] for k in known], dtype=np.intp)  # its model index
        self.known_names = tuple(names[k[0]] for k in known)
        self.mimic_src = np.array([m[0] for m in mimic], dtype=np.intp)  # message index of a mimic joint
        self.mimic_rows = np.zeros((len(mimic), plan.model.nv))  # its row of q_joint = E q + o
        for row, (_, terms, _) in zip(self.mimic_rows, mimic):
            for master, factor in terms:
                row[master] += factor
        self.mimic_offset = np.array([m[2] for m in mimic], dtype=float)
        self.mimic_names = tuple(names[m[0]] for m in mimic)

    def non_finite(self, taken, what: str) -> str:
        """What is not finite among ``taken``, the known joints' entries of a message field ('' when all are)."""
        if taken is None or np.isfinite(taken).all():
            return ""
        return f"non-finite {what} of {[self.known_names[i] for i in np.flatnonzero(~np.isfinite(taken))]}"


class JointStateMerger:
    """The merged joint state of one plan's model: ``q``, ``qd`` and the monotonic time (ns) at
    which each entry arrived (``NEVER`` for none yet)."""

    def __init__(self, plan: Plan, previous: "JointStateMerger | None" = None):
        n = plan.model.nv
        self.plan = plan
        self.q, self.qd = np.zeros(n), np.zeros(n)
        self.q_ns, self.qd_ns = np.full(n, NEVER, dtype=np.int64), np.full(n, NEVER, dtype=np.int64)
        self._maps: dict = {}
        if previous is not None:  # a new model keeps what it can, by joint name
            for name, i in plan.index.items():
                j = previous.plan.index.get(name)
                if j is not None:
                    self.q[i], self.qd[i] = previous.q[j], previous.qd[j]
                    self.q_ns[i], self.qd_ns[i] = previous.q_ns[j], previous.qd_ns[j]

    def update(self, names, position, velocity, effort, now_ns: int) -> tuple[bool, str]:
        """Merge one message in; ``(whether it carried a position or velocity of this model, a
        warning about mimic joints that disagree with their masters or '')``; Rejected (nothing
        merged) for duplicate names, wrong lengths, non-finite or implausible values
        (:class:`~robot_dynamics.nodes.common.safety.Plausibility`: values one by one, and the kinetic energy of
        the state the message would make)."""
        key = tuple(names)
        mm = self._maps.get(key)
        if mm is None:
            mm = _MessageMap(key, self.plan)
            if len(self._maps) > MAX_CACHED_NAME_LISTS:
                self._maps.clear()
            self._maps[key] = mm
        n = len(key)
        if len(position) not in (0, n) or len(velocity) not in (0, n) or len(effort) not in (0, n):
            raise Rejected(f"{n} names but {len(position)} positions, {len(velocity)} velocities and "
                           f"{len(effort)} efforts (each must be {n} or empty)")
        position = _floats(position) if len(position) else None
        p = position[mm.src] if position is not None else None
        v = _floats(velocity)[mm.src] if len(velocity) else None
        plausibility = self.plan.plausibility
        implausible = plausibility.problem(mm.dst, p, v)  # (a NaN or inf is never believed)
        if implausible:
            raise Rejected(mm.non_finite(p, "position") or mm.non_finite(v, "velocity") or implausible)
        if v is not None and not (np.abs(v) <= plausibility.speed[mm.dst]).all():  # (else the energy is bounded)
            q, qd = self.q.copy(), self.qd.copy()  # the state this message would make
            if p is not None:
                q[mm.dst] = p
            qd[mm.dst] = v
            implausible = plausibility.energy_problem(q, qd)
            if implausible:
                raise Rejected(implausible)
        warning = ""
        if p is not None:
            self.q[mm.dst] = p
            self.q_ns[mm.dst] = now_ns
            if len(mm.mimic_src):
                warning = self._mimic_warning(position, mm, now_ns)
        if v is not None:
            self.qd[mm.dst] = v
            self.qd_ns[mm.dst] = now_ns
        return (p is not None or v is not None) and len(mm.src) > 0, warning

    def _mimic_warning(self, position, mm: _MessageMap, now_ns: int) -> str:
        stale = now_ns - self.q_ns > self.plan.state_timeout_ns
        masters_fresh = ~((mm.mimic_rows != 0) & stale).any(axis=1)
        expected = mm.mimic_rows @ self.q + mm.mimic_offset
        reported = position[mm.mimic_src]
        bad = masters_fresh & ~(np.abs(reported - expected) <= MIMIC_TOLERANCE)  # NaN counts as bad
        if not bad.any():
            return ""
        detail = ", ".join(f"{mm.mimic_names[i]}={reported[i]:.4g} (expected {expected[i]:.4g})"
                           for i in np.flatnonzero(bad))
        return f"mimic joints disagree with their masters (ignored): {detail}"

    def missing(self, stamps_ns: np.ndarray, now_ns: int, what: str) -> str:
        """What of ``stamps_ns`` (``q_ns`` or ``qd_ns``) is missing or older than state_timeout;
        '' when every joint is fresh."""
        plan = self.plan
        limit = now_ns - plan.state_timeout_ns
        names = plan.model.joint_names
        never = [names[i] for i in np.flatnonzero(stamps_ns <= NEVER)]
        stale = [f"{names[i]} ({(now_ns - stamps_ns[i]) * 1e-9:.3f} s)"
                 for i in np.flatnonzero((stamps_ns < limit) & (stamps_ns > NEVER))]
        parts = []
        if never:
            parts.append(f"{what} never received for {never}")
        if stale:
            parts.append(f"{what} older than state_timeout {plan.settings.state_timeout:g} s for {stale}")
        return "; ".join(parts)


def desired_accelerations(data, plan: Plan, now_ns: int) -> Desired:
    """A ``desired_accelerations`` message's data (output order) as a :class:`Desired`."""
    qdd = np.array(data, dtype=float)
    if qdd.shape != (len(plan.names),):
        raise Rejected(f"{qdd.size} values, expected {len(plan.names)} (one per output joint {plan.names})")
    if not np.isfinite(qdd).all():
        raise Rejected(f"non-finite acceleration of {[plan.names[i] for i in np.flatnonzero(~np.isfinite(qdd))]}")
    return Desired(qdd, None, None, now_ns, "desired_accelerations")


class DesiredStateReader:
    """``desired_state`` points (by joint name) in the output order of one plan."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self._orders: dict = {}

    def read(self, joint_names, points, now_ns: int) -> Desired:
        """The one point of a trajectory message as a :class:`Desired`; Rejected with the reason."""
        plan = self.plan
        key = tuple(joint_names)
        order = self._orders.get(key)
        if order is None:
            if len(set(key)) != len(key):
                raise Rejected(f"duplicate joint names {duplicates(key)}")
            where = {n: i for i, n in enumerate(key)}
            missing = [n for n in plan.names if n not in where]
            if missing:
                raise Rejected(f"joints {missing} missing (it must name every output joint)")
            order = np.array([where[n] for n in plan.names], dtype=np.intp)
            if len(self._orders) > MAX_CACHED_NAME_LISTS:
                self._orders.clear()
            self._orders[key] = order
        if len(points) != 1:
            raise Rejected(f"{len(points)} points, expected exactly one")
        point, n = points[0], len(key)
        values = {}
        for field in ("positions", "velocities", "accelerations"):
            raw = getattr(point, field)
            if len(raw) == 0:
                values[field] = None
                continue
            if len(raw) != n:
                raise Rejected(f"{len(raw)} {field} for {n} joint names")
            ordered = np.asarray(raw, dtype=float)[order]
            if not np.isfinite(ordered).all():
                raise Rejected(f"non-finite {field} of {[plan.names[i] for i in np.flatnonzero(~np.isfinite(ordered))]}")
            values[field] = ordered
        if all(v is None for v in values.values()):
            raise Rejected("the point has no positions, velocities or accelerations")
        qdd = values["accelerations"] if values["accelerations"] is not None else np.zeros(len(plan.names))
        return Desired(qdd, values["velocities"], values["positions"], now_ns, "desired_state")

