"""URDF ``<transmission>`` -> reflected rotor inertia and motor damping (Spong Ex. 6.1).

A motor of rotor inertia ``J_m`` and viscous damping ``B_m`` driving a joint through a gear of
ratio ``r`` (motor angle = ``r`` x joint angle) adds ``r^2 J_m`` to the joint's diagonal of the
mass matrix (the *armature*) and ``r^2 B_m`` to its damping: the kinetic energy
``1/2 J_m (r qd)^2`` and the dissipated power ``B_m (r qd)^2``, seen from the joint.  The sign of
``r`` (a reversed motor) does not matter.  Two dialects are read:

ROS::

    <transmission name="t1">
      <type>transmission_interface/SimpleTransmission</type>
      <joint name="elbow"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
      <actuator name="m1"><mechanicalReduction>100</mechanicalReduction></actuator>
    </transmission>

Drake (``xmlns:drake="http://drake.mit.edu"`` on ``<robot>``)::

    <transmission name="t1">
      <type>transmission_interface/SimpleTransmission</type>
      <joint name="elbow"/>
      <actuator name="m1">
        <drake:gear_ratio value="100"/>
        <drake:rotor_inertia value="3.3e-5"/>
      </actuator>
    </transmission>

``r`` is ``<drake:gear_ratio>`` where present, else ``<mechanicalReduction>`` (in ``<actuator>`` or
directly in ``<transmission>``), else 1.  ``J_m`` is ``<drake:rotor_inertia>`` and ``B_m``
``<drake:rotor_damping>`` (this package's addition; no other tool reads it) in either dialect;
without them the transmission adds nothing.  On a mimic joint the motor's inertia reflects to
the coordinate it follows times the multiplier squared.  A transmission this module cannot read
is skipped with a warning naming it: one with a rotor but another type than SimpleTransmission,
several joints or several actuators; one naming a joint the URDF does not have, a fixed joint
with a rotor, or a rotor on a joint that follows several coordinates (its reflected inertia
``r^2 J_m e e^T``, ``e`` the joint's row of ``E``, would couple them, and the armature is one
value per coordinate); a value that is not a finite number; a negative inertia or damping; a gear
ratio of 0 with a rotor (a motor that does not turn).  (Without a rotor a transmission adds nothing,
so an unread differential transmission of a real robot description is skipped quietly.)  A
``<rotor_inertia>``, ``<rotor_damping>`` or ``<gear_ratio>`` without the ``drake:`` namespace is
not read, with a warning.  Only numbers that break the model stop a URDF from loading
(:class:`TransmissionError`): a gear ratio beyond :data:`MAX_GEAR_RATIO` in magnitude, or reflected
terms that overflow.
"""

import math
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

SIMPLE_TRANSMISSION = "SimpleTransmission"  # transmission_interface/… or pr2_mechanism_model/…
DRAKE_TAGS = ("gear_ratio", "rotor_inertia", "rotor_damping")

MAX_GEAR_RATIO = 1e6
"""Largest magnitude of a gear ratio: the armature is its square times the rotor inertia, and real
reductions stay below about 1e4 (a larger one is a slip, or overflows double precision)."""


class TransmissionError(ValueError):
    """A transmission whose numbers would break the model (the URDF is refused; the message names it)."""


class _Unreadable(ValueError):
    """A transmission value that is not a finite number (the transmission is skipped with a warning)."""


def _value(element, what, attribute):
    """The number in ``element`` (its ``value`` attribute or, for ROS tags, its text)."""
    text = element.get("value") if attribute else element.text
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _Unreadable(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise _Unreadable(f"{what} is not finite: {text!r}")
    return value


def _drake(element, tag, what):
    """The value of ``<drake:tag value=…/>`` among ``element``'s children, or None."""
    found = element.find("{*}" + tag) if element is not None else None
    if found is None or not found.tag.startswith("{"):
        return None
    return _value(found, f"{what} <drake:{tag}>", attribute=True)


DRAKE_NAMESPACE = "http://drake.mit.edu"


@dataclass(frozen=True)
class Rotor:
    """One motor read from a ``<transmission>``: the coordinate it drives, its ``gain = (multiplier r)^2``
    (its ``J_m`` adds ``gain J_m`` to that coordinate's armature), ``J_m``, ``B_m``, and its XML elements
    (``actuator`` None if it has none)."""

    coordinate: int
    gain: float
    rotor_inertia: float
    rotor_damping: float
    transmission: object
    actuator: object

    def set(self, tag, value):
        """Write ``<drake:tag value=…/>`` (``rotor_inertia`` or ``rotor_damping``) where :func:`_motor` reads
        it: the element already holding it, else a new one in the actuator (else the transmission)."""
        for holder in (self.actuator, self.transmission):
            found = holder.find("{*}" + tag) if holder is not None else None
            if found is not None and found.tag.startswith("{"):
                found.set("value", f"{float(value):.9g}")
                return
        holder = self.transmission if self.actuator is None else self.actuator
        holder.append(ET.Element(f"{{{DRAKE_NAMESPACE}}}{tag}", value=f"{float(value):.9g}"))


def rotors(root, model):
    """The :class:`Rotor` of every transmission this module reads in the URDF element ``root``
    (module docstring), warning about those it skips."""
    found = []
    fixed = {joint.get("name") for joint in root.findall("joint") if joint.get("type") == "fixed"}
    for transmission in root.findall("transmission"):
        what = f"transmission {transmission.get('name', '(unnamed)')!r}"
        kind = (transmission.findtext("type") or transmission.get("type") or "").strip()
        joints, actuators = transmission.findall("joint"), transmission.findall("actuator")
        if not kind.endswith(SIMPLE_TRANSMISSION) or len(joints) != 1 or len(actuators) > 1:
            if _has_rotor(transmission):  # otherwise there is nothing to reflect, hence nothing lost
                warnings.warn(f"{what} has type {kind!r}, {len(joints)} joints and {len(actuators)} actuators: only a "
                              "SimpleTransmission of one joint by one actuator is read; its rotor is ignored", stacklevel=5)
            continue
        joint = joints[0].get("name")
        actuator = actuators[0] if actuators else None
        _warn_plain_drake_tags(transmission, what)
        try:
            rotor_inertia, rotor_damping, ratio, ratio_tag = _motor(transmission, actuator, what)
        except _Unreadable as error:
            warnings.warn(f"{error}; {what} skipped", stacklevel=5)
            continue
        if not abs(ratio) <= MAX_GEAR_RATIO:
            raise TransmissionError(f"{what} of joint {joint!r} has the gear ratio {ratio_tag} {ratio:g}: beyond "
                                    f"{MAX_GEAR_RATIO:g} in magnitude (a slip, or the reflected inertia would overflow)")
        if ratio == 0 and (rotor_inertia or rotor_damping):
            warnings.warn(f"{what} of joint {joint!r} has the gear ratio 0 with a rotor: a motor that does not turn "
                          "reflects nothing, so its rotor is ignored (give the reduction, e.g. 100)", stacklevel=5)
            continue
        if joint in model.joint_names:
            coordinate, multiplier = model.joint_names.index(joint), 1.0
        elif joint in model.mimic_joints:
            master, multiplier, _ = model.mimic_joints[joint]
            coordinate = model.joint_names.index(master)
        elif joint in model.couplings:
            # A rotor on a joint that follows several coordinates would add r^2 J_m e e^T (e: the
            # joint's row of E), coupling those coordinates; the armature is diagonal per coordinate.
            if rotor_inertia or rotor_damping:
                masters = ", ".join(master for master, _ in model.couplings[joint][0])
                warnings.warn(f"{what} names joint {joint!r}, which follows several coordinates ({masters}): its rotor "
                              "would couple them, and armature is per coordinate; skipped", stacklevel=5)
            continue
        elif joint in fixed and rotor_inertia == rotor_damping == 0:
            continue  # a motor on a welded joint, and nothing to reflect: nothing is lost
        else:
            state = "a fixed joint" if joint in fixed else "not a joint of the model"
            warnings.warn(f"{what} names joint {joint!r}, which is {state}; skipped", stacklevel=5)
            continue
        found.append(Rotor(coordinate, (multiplier * ratio) ** 2, rotor_inertia, rotor_damping, transmission, actuator))
    return found


def reflected_motor_terms(root, model):
    """``(armature, motor_damping)``, ``(nv,)`` arrays ``r^2 J_m`` and ``r^2 B_m`` from the transmissions
    in the URDF element ``root`` (see the module docstring)."""
    armature, damping = np.zeros(model.nv), np.zeros(model.nv)
    for rotor in rotors(root, model):
        armature[rotor.coordinate] += rotor.gain * rotor.rotor_inertia
        damping[rotor.coordinate] += rotor.gain * rotor.rotor_damping
        for what, values in (("armature r^2 J_m", armature), ("motor damping r^2 B_m", damping)):
            if not np.isfinite(values[rotor.coordinate]):
                name = rotor.transmission.get("name", "(unnamed)")
                raise TransmissionError(
                    f"transmission {name!r}: the {what} of {model.joint_names[rotor.coordinate]!r} overflows "
                    f"(gear factor r^2 = {rotor.gain:g}, J_m = {rotor.rotor_inertia:g}, B_m = {rotor.rotor_damping:g})")
    return armature, damping


def _warn_plain_drake_tags(transmission, what):
    """Warn about Drake's tags written without their namespace (which Drake ignores, and so does this module)."""
    plain = sorted({element.tag for element in transmission.iter() if element.tag in DRAKE_TAGS})
    if plain:
        tags = ", ".join(f"<{tag}>" for tag in plain)
        warnings.warn(f"{what} has {tags} without the drake: namespace: not read; write <drake:{plain[0]} value=.../> "
                      f"with xmlns:drake=\"{DRAKE_NAMESPACE}\" on <robot>", stacklevel=6)


def _has_rotor(transmission):
    return any(element.tag.endswith(("}rotor_inertia", "}rotor_damping")) for element in transmission.iter())


def _motor(transmission, actuator, what):
    """``(J_m, B_m, r, the tag r is read from)`` of a transmission's motor (zeros where not given, ``r`` = 1
    if not given)."""
    ratio, source = _drake(actuator, "gear_ratio", what), "<drake:gear_ratio>"
    if ratio is None:
        source = "<mechanicalReduction>"
        reduction = actuator.find("mechanicalReduction") if actuator is not None else None
        if reduction is None:
            reduction = transmission.find("mechanicalReduction")
        ratio = 1.0 if reduction is None else _value(reduction, f"{what} {source}", attribute=False)
    terms = []
    for tag in ("rotor_inertia", "rotor_damping"):
        value = _drake(actuator, tag, what)
        if value is None:
            value = _drake(transmission, tag, what)
        if value is not None and value < 0:
            raise _Unreadable(f"{what} <drake:{tag}> is negative ({value})")
        terms.append(0.0 if value is None else value)
    return terms[0], terms[1], ratio, source
