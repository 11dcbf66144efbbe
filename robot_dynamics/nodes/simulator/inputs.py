"""The simulator node's inputs, checked (no rclpy).

The commands it holds and what the drives do with them are :mod:`robot_dynamics.simulation.drives`'s.
:func:`effort_command`,
:func:`named_efforts` and :func:`external_wrench` check one message each and raise
:class:`~robot_dynamics.nodes.common.parameters.Rejected` with the reason: a rejected message never
reaches the state.
"""

from __future__ import annotations

import numpy as np

from ...rigid_body.kinematics import frame_pose
from ...rigid_body.wrenches import wrench_in_world
from ..common.parameters import Rejected, duplicates
from .plan import Plan

__all__ = ["effort_command", "external_wrench", "named_efforts"]


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
