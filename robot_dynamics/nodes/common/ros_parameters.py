"""Parameter plumbing between a node's :class:`~robot_dynamics.nodes.common.parameters.Parameter` tuple,
its frozen ``Settings`` dataclass and rclpy: declaration at start-up, checked changes at run time."""

from __future__ import annotations

import dataclasses
from typing import Callable, NoReturn, Sequence

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node

from .parameters import LOCK, Parameter
from .safety import cut

__all__ = ["declare_settings", "descriptor", "fatal_parameter", "lock_reason", "refusal", "watch_settings"]

_TYPES = {
    "bool": ParameterType.PARAMETER_BOOL,
    "double": ParameterType.PARAMETER_DOUBLE,
    "double_array": ParameterType.PARAMETER_DOUBLE_ARRAY,
    "string": ParameterType.PARAMETER_STRING,
}


def descriptor(parameter: Parameter, locked: bool = False) -> ParameterDescriptor:
    """rclpy's ParameterDescriptor of ``parameter``: statically typed when it has a type, else
    dynamically typed; ``low``/``high`` become a floating-point range (no step) that rclpy enforces;
    read-only when the parameter is, or when it shapes the torques and ``locked`` (:data:`LOCK`)."""
    d = ParameterDescriptor(description=parameter.description,
                            read_only=parameter.read_only or (locked and parameter.shapes_torque))
    if parameter.type is None:
        d.dynamic_typing = True
    else:
        d.type = _TYPES[parameter.type]
    if parameter.low is not None:
        d.floating_point_range = [FloatingPointRange(from_value=parameter.low, to_value=parameter.high, step=0.0)]
    return d


def fatal_parameter(node: Node, exc: BaseException) -> NoReturn:
    """End the node's construction for an unusable parameter: FATAL log ``invalid parameter:
    <exc>`` and ``SystemExit(2)`` (the exit status of the executable)."""
    node.get_logger().fatal(f"invalid parameter: {exc}")
    raise SystemExit(2) from None


def declare_settings(node: Node, parameters: Sequence[Parameter], settings_type, coerce: Callable):
    """Declare ``parameters`` (in order) and return their values as a ``settings_type``.

    Each value is converted by ``coerce(field, value)``; a ``ValueError`` from it is fatal
    (:func:`fatal_parameter`), and so is rclpy's refusal of an override (``ParameterException``: a
    value of the wrong type or out of range): the node exits with a line naming the parameter,
    never a traceback. :data:`LOCK`, when it is among them, comes first: its value makes the
    parameters that shape the torques read-only.
    """
    values = {}
    locked = False
    for p in parameters:
        try:
            declared = node.declare_parameter(p.name, p.default, descriptor(p, locked))
            if p.name == LOCK.name:
                locked = declared.value is True
        except (ValueError, ParameterException) as exc:
            fatal_parameter(node, exc)
        try:
            values[p.field] = coerce(p.field, declared.value)
        except Exception as exc:  # noqa: BLE001 - a start-up value ends the node with the reason, never a traceback
            fatal_parameter(node, refusal(exc))
    return settings_type(**values)


def refusal(exc: BaseException) -> str:
    """The reason a parameter change is refused for ``exc``: a ``ValueError``'s text (it names the
    parameter), else ``computing with these parameters failed (<type>: <text>)``."""
    if isinstance(exc, ValueError) and not isinstance(exc, np.linalg.LinAlgError):
        return cut(str(exc))
    return cut(f"computing with these parameters failed ({type(exc).__name__}: {exc})")


def lock_reason(node: Node, name: str) -> str:
    """Why a change of ``name`` is refused when the node's :data:`LOCK` made it read-only ('' otherwise)."""
    if node.has_parameter(LOCK.name) and node.get_parameter(LOCK.name).value is True:
        if node.has_parameter(name) and node.describe_parameter(name).read_only:
            return f"{name} is read-only: {LOCK.name} is true (the parameters that shape the torques are fixed at start)"
    return ""


def watch_settings(node: Node, parameters: Sequence[Parameter], current: Callable, coerce: Callable,
                   check: Callable, apply: Callable) -> None:
    """Run-time changes of ``parameters``, whose values live in a frozen ``Settings`` dataclass.

    ``current()`` gives the node's settings now. A change is coerced into a candidate ``Settings``
    by ``coerce(field, value)``; that or ``check(candidate)`` raising ``ValueError`` rejects the
    change: the old value stays, and the reason goes back to the caller (the node logs it); what
    ``check`` returns (texts) is logged as warnings of an accepted change. Once rclpy has set an accepted change,
    ``apply(candidate)`` takes it over. Neither callback ever raises (an exception would end the
    node): any other exception of ``coerce`` or ``check`` refuses the change too, its type and text
    the reason (:func:`refusal`); ``apply`` handles its own failures.
    """
    fields = {p.name: p.field for p in parameters}

    def candidate(params):
        changes = {fields[p.name]: coerce(fields[p.name], p.value) for p in params if p.name in fields}
        return dataclasses.replace(current(), **changes) if changes else None

    def validate(params) -> SetParametersResult:
        try:
            changed = candidate(params)
            warnings = check(changed) if changed is not None else ()
        except Exception as exc:  # noqa: BLE001 - (logged by the node's set_parameters)
            return SetParametersResult(successful=False, reason=refusal(exc))
        for warning in warnings or ():
            node.get_logger().warning(cut(f"parameter change of {', '.join(p.name for p in params)} accepted: {warning}"))
        return SetParametersResult(successful=True)

    def take_over(params) -> None:
        changed = candidate(params)
        if changed is not None:
            apply(changed)

    node.add_on_set_parameters_callback(validate)
    node.add_post_set_parameters_callback(take_over)
