"""Node parameters as data (no rclpy): what every node declares, and the checks of their values.

A node's parameters are a tuple of :class:`Parameter`: the one source from which the node
declares them (:mod:`robot_dynamics.nodes.common.ros_parameters`) and from which its ``--help`` is
written (:mod:`robot_dynamics.nodes.common.command_line`). Their values live in the node's frozen
``Settings`` dataclass, converted and checked by the node's ``coerce_setting(field, value)``
(``ValueError`` with the reason when invalid), built from the checks below (which the nodes' input checks use too, raising :class:`Rejected`).
"""

from __future__ import annotations

import array
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "DESCRIPTION_PARAMETERS", "LOCK", "MOTOR_PARAMETERS", "Parameter", "Rejected", "bounded_float", "duplicates", "float_list",
    "motor_values", "name_list", "one_of", "require_joints", "with_armature",
]

#: parameter types (rclpy's ParameterType names); ``None``: dynamically typed
TYPES = ("bool", "double", "double_array", "string")


@dataclass(frozen=True)
class Parameter:
    """One ROS parameter of a node.

    ``field`` is its ``Settings`` field ('' for the robot_description parameters, which the
    description source keeps). ``type`` is one of :data:`TYPES`, or ``None`` for a dynamically
    typed parameter (numbers written 1000 or 1000.0, lists that may be empty); ``low``/``high`` a
    floating-point range that rclpy enforces; ``read_only`` cannot change once the node runs;
    ``shapes_torque``: read-only too when the node has :data:`LOCK` and it is true.
    """

    name: str
    default: object
    description: str
    type: str | None = None
    low: float | None = None
    high: float | None = None
    read_only: bool = False
    field: str = ""
    shapes_torque: bool = False

    def __post_init__(self):
        if self.type is not None and self.type not in TYPES:
            raise ValueError(f"parameter {self.name}: unknown type {self.type!r}")
        if not self.field:
            object.__setattr__(self, "field", self.name)


#: The parameters of :class:`robot_dynamics.nodes.common.description.DescriptionSource` (every node); the
#: model they give shapes the torques (inertias, effort limits, friction).
DESCRIPTION_PARAMETERS = (
    Parameter("robot_description", "", "URDF XML of the robot. Highest-precedence source; when empty "
              "the latched robot_description topic is used, then the robot_description parameter of "
              "the node named by robot_description_node.", "string", shapes_torque=True),
    Parameter("robot_description_node", "robot_state_publisher", "Node whose robot_description "
              "parameter is fetched when neither the own parameter nor the robot_description topic "
              "gives a URDF.", "string", shapes_torque=True),
)

#: The read-only mode: the first parameter of a node that offers it (declared before the others,
#: which it makes read-only). Its own value is read-only: it is set at start only.
LOCK = Parameter("lock_torque_parameters", False, "true: every parameter marked 'read-only with "
                 "lock_torque_parameters' is read-only once the node runs (a change is refused with the reason), "
                 "and the robot model is the first one loaded (a later robot_description is ignored, warned). "
                 "For a node that any process on the ROS domain can reach (docs/dynamics_node.md, Read-only "
                 "parameters).", "bool", read_only=True)


#: The motor parameters of the dynamics and simulator nodes (``docs/motors.md``).
MOTOR_PARAMETERS = (
    Parameter("motor_joint_names", [], "Joints that armature (and the simulator's joint_stiffness) give values "
              "for, in that order; empty = every joint, in model order."),
    Parameter("armature", [], "Reflected rotor inertia r^2 J_m per motor_joint_names entry, kg m^2 (kg for a "
              "prismatic joint), >= 0; overrides the URDF <transmission>; empty = the URDF's."),
)


def motor_values(model, names: tuple, values: tuple, what: str) -> dict:
    """``{model index: value}`` of a per-joint motor parameter ``what`` given for ``names`` (empty: every
    joint in model order); ``ValueError`` naming the problem (wrong count, unknown joint, negative)."""
    names = names or model.joint_names
    require_joints(model, names, "motor_joint_names")
    if len(values) != len(names):
        raise ValueError(f"{what} has {len(values)} values; expected one per motor_joint_names entry "
                         f"({len(names)}: {list(names)}), or none")
    if any(v < 0 for v in values):
        raise ValueError(f"{what} must be >= 0, got {list(values)}")
    return {model.joint_names.index(n): v for n, v in zip(names, values)}


def with_armature(model, names: tuple, armature: tuple):
    """``model`` with the ``armature`` parameter applied (unchanged when it is empty)."""
    if not armature:
        return model
    values = np.array(model.armature)
    for i, value in motor_values(model, names, armature, "armature").items():
        values[i] = value
    return model.with_armature(values)


# --- value checks (ValueError names the parameter and the problem) --------------------------------
class Rejected(ValueError):
    """An input message that a node refuses (the text says why); a rejected message changes nothing."""


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def float_list(name: str, value, size: int | None = None, *, scalar: bool = False, strict: bool = True) -> tuple:
    """A list parameter ``name`` as a tuple of finite floats (of length ``size`` when given).

    ``scalar``: a single number is taken as a list of one. ``strict``: the value must be a list,
    tuple or ``array.array`` of ints and floats; otherwise (``strict=False``) ``None`` (how a YAML
    ``[]`` arrives) is an empty list and any sized value but a string, bytes or bool is accepted
    whose entries ``float()`` converts.

    >>> float_list("gravity", [0, 0, -9.81], 3)
    (0.0, 0.0, -9.81)
    """
    if scalar and _is_number(value):
        value = [value]
    if strict:
        if not isinstance(value, (list, tuple, array.array)) or not all(_is_number(v) for v in value):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}")
        out = tuple(float(v) for v in value)
    else:
        if value is None:
            value = []
        if isinstance(value, (str, bytes, bool)) or not hasattr(value, "__len__"):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}")
        try:
            out = tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a list of numbers, got {value!r}") from None
    if size is not None and len(out) != size:
        raise ValueError(f"{name} must have {size} values, got {len(out)}")
    if not all(math.isfinite(v) for v in out):
        raise ValueError(f"{name} must be finite, got {list(out)}")
    return out


def bounded_float(name: str, value, low: float, high: float, low_open: bool = False) -> float:
    """A number parameter ``name`` as a float in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    if not _is_number(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        raise ValueError(f"{name} must be {bound} and <= {high:g}, got {value!r}")
    return value


def one_of(name: str, value, choices: Sequence[str]) -> str:
    """A string parameter ``name`` that must be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def name_list(name: str, value) -> tuple:
    """A list parameter ``name`` of joint names as a tuple (``None``: empty): non-empty strings,
    no name twice (the duplicates are named, sorted)."""
    names = tuple(value) if value is not None else ()
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{name} must be a list of joint names, got {value!r}")
    dup = duplicates(names)
    if dup:
        raise ValueError(f"{name} has duplicate names {sorted(dup)}")
    return names


def duplicates(names: Sequence) -> list:
    """The names that occur more than once in ``names``, each once, in order of first occurrence.

    >>> duplicates(["a", "b", "a", "c", "b", "a"])
    ['a', 'b']
    """
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def require_joints(model, names: Iterable[str], what: str) -> None:
    """``ValueError`` unless every one of ``names`` (given by parameter ``what``) is a joint
    (coordinate) of ``model``; the message lists the unknown names, says which of them are mimic
    joints, and lists the model's joints."""
    unknown = [n for n in names if n not in model.joint_names]
    if unknown:
        mimic = [n for n in unknown if n in model.couplings]
        hint = f" ({', '.join(mimic)} mimic another joint and are not coordinates)" if mimic else ""
        raise ValueError(f"{what} {unknown} are not joints of robot {model.name!r}{hint}; "
                         f"its joints: {list(model.joint_names)}")
