"""URDF -> :class:`RobotModel`: parse, validate, fold fixed joints, resolve mimic joints.

Joint order (``model.joint_names``): depth-first from the root link, children visited in the
order their joints are declared in the URDF, so a parent always comes before its children.
``urdf_parser_py`` reads the attributes; only ``<link>``/``<joint>`` elements (and of those only
the kinematic and inertial children) are handed to it, so transmissions, Gazebo tags, sensors
and unknown elements can never break loading.  Its ``None``s are given the URDF defaults:
axis (1, 0, 0), mimic multiplier 1 and offset 0, identity origins.  ``<transmission>``
elements give the reflected rotor inertia and motor damping (``transmissions.py``).
"""

import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from urdf_parser_py import urdf as urdf_parser
from urdf_parser_py.xml_reflection import core as urdf_reflection

from ..rigid_body.dynamics import mass_matrix
from ..input_files import MAX_URDF_BYTES, read_text_file
from .transmissions import TransmissionError, reflected_motor_terms
from ..rigid_body.model import (
    FIRST_FACTOR, FIRST_MASTER, INERTIAL_PARAMETERS, KIND, MASTERS, OFFSET, ORIGIN_P, ORIGIN_R, PARENT, PRISMATIC,
    REVOLUTE, SCREW, Frame, RobotModel, inertial_parameters_about_origin, move_inertial_parameters, read_only,
)
from .robots import urdf_file
from ..spatial import axis_angle

MAX_COUPLING_FACTOR = 1e6
"""Largest magnitude of a coupling's factor, as declared (``<mimic multiplier>``) and through a chain: the
mass matrix carries its square times the link inertias, and a larger one is a slip (a gear train of a
million to one is beyond any real robot), or overflows double precision."""

SUPPORTED_JOINTS = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC, "fixed": None}
_KEPT_LINK_ELEMENTS = {"inertial"}
_KEPT_JOINT_ELEMENTS = {"origin", "parent", "child", "axis", "limit", "dynamics"}  # <mimic>: read by _couplings
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


class URDFError(ValueError):
    """A URDF that cannot be turned into a correct model; the message names the link or joint."""


def load_urdf(source, mimic=True, couplings=None, locks=None):
    """Build a :class:`RobotModel` from a URDF file path, an XML string or a bundled robot's name.

    A path that is not a file is looked up among the bundled robots (``"planar_2r"``), the same
    rule as the command line's (:func:`robot_dynamics.description.robots.urdf_file`).

    With ``mimic=True`` a ``<mimic>`` joint follows its master (``q = multiplier * q_master +
    offset``) and is not a coordinate; with ``mimic=False`` the tags are ignored and every
    moving joint is an independent coordinate.  Our extension: a joint with several ``<mimic>``
    children follows their sum, ``q = sum_i multiplier_i q_master_i + sum_i offset_i`` (a linear
    coupling, e.g. a closed parallelogram cut open, see ``urdf/five_bar.urdf``).  ``couplings``
    does the same from Python for a URDF that cannot be edited, and wins over the joint's tags:
    ``{joint: {master: factor, ...}}`` or ``{joint: ({master: factor, ...}, offset)}``.  Chains are
    resolved onto independent coordinates; an unknown master, a cycle, a factor that is not finite or
    beyond :data:`MAX_COUPLING_FACTOR` (as declared or through the chain) is a URDFError naming the
    joint and the value. A coupling for which a whole turn of a continuous joint moves its follower
    (a factor that is not a whole number, or a prismatic follower: a lead screw) is warned about: the
    continuous joint's angle must then be the multi-turn one, never wrapped into [-pi, pi).
    ``locks`` (``{joint: position}``) holds moving joints at a position: each becomes a fixed joint
    at that position and is folded like one (a gripper the recording lacks, a tool's axis).

    >>> import robot_dynamics as rd
    >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    >>> arm.joint_names, arm.nv
    (('shoulder', 'elbow'), 2)
    >>> rd.load_urdf("planar_2r").joint_names
    ('theta1', 'theta2')
    >>> rd.load_urdf("<robot name='r'><link name='a'/><link name='b'/></robot>")
    Traceback (most recent call last):
    ...
    robot_dynamics.description.urdf.URDFError: the URDF has several root links (links that are no joint's child): 'a', 'b'
    """
    xml = _read(source)
    robot, declared = _parse(xml)
    if not mimic:
        declared = {}
    declared.update(_api_couplings(couplings))
    model = _build(robot, declared, _locks(robot, declared, locks))
    try:
        armature, motor_damping = reflected_motor_terms(ET.fromstring(xml), model)
    except TransmissionError as error:
        raise URDFError(str(error)) from None
    model = model.with_armature(armature, motor_damping)
    _check_joint_inertias(model)  # (a rotor alone gives a joint inertia)
    return model


def _read(source):
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        if not str(source).strip():
            raise URDFError("the URDF is empty")
        try:
            path = urdf_file(source)
        except LookupError as error:
            raise URDFError(str(error)) from None
        try:
            return read_text_file(path, MAX_URDF_BYTES, "URDF file")
        except ValueError as error:
            raise URDFError(str(error)) from None
    if isinstance(source, bytes):
        return source.decode()
    if not isinstance(source, str):
        raise URDFError(f"a URDF must be a path or an XML string, not {type(source).__name__}")
    return source


def _parse(xml):
    """``(robot, couplings)``: the kinematic/inertial skeleton of the URDF, parsed by urdf_parser_py, and
    the joints' ``<mimic>`` tags as ``{joint: ([(master, factor), ...], offset)}``."""
    if not xml.strip():
        raise URDFError("the URDF is empty")
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as error:
        raise URDFError(f"the URDF is not well-formed XML: {error}") from None
    if root.tag != "robot":
        raise URDFError(f"the URDF's top element must be <robot>, not <{root.tag}>")
    declared, unread = {}, set()
    for joint in root.findall("joint"):
        tags = joint.findall("mimic")
        if tags:
            declared[joint.get("name")] = _mimic_terms(joint.get("name"), tags)
        for dynamics in joint.findall("dynamics"):  # (others: a vendor's friction model's, Franka's D, K, mu_coulomb ...)
            unread |= {(attribute, joint.get("name")) for attribute in set(dynamics.attrib) - {"damping", "friction"}}
    if unread:
        attributes, joints = (sorted({pair[k] for pair in unread}) for k in (0, 1))
        warnings.warn(f"<dynamics> attributes not read (only damping and friction are): {', '.join(attributes)}, on "
                      f"{', '.join(joints)}: the model has no such terms", stacklevel=4)
    skeleton = ET.Element("robot", {"name": root.get("name", "robot")})
    for kind, kept in (("link", _KEPT_LINK_ELEMENTS), ("joint", _KEPT_JOINT_ELEMENTS)):
        seen = set()
        for element in root.findall(kind):
            name = element.get("name")
            if not name:
                raise URDFError(f"a <{kind}> has no name")
            if name in seen:
                raise URDFError(f"duplicate {kind} name {name!r}")
            seen.add(name)
            copy = ET.SubElement(skeleton, kind, element.attrib)
            copy.extend(child for child in element if child.tag in kept)
    quiet, urdf_reflection.on_error = urdf_reflection.on_error, lambda message: None
    try:
        return urdf_parser.URDF.from_xml_string(ET.tostring(skeleton, encoding="unicode")), declared
    except Exception as error:  # urdf_parser_py raises several types; its message holds the XML path
        raise URDFError(f"invalid URDF: {error}".replace("\n", " ")) from None
    finally:
        urdf_reflection.on_error = quiet


def _finite(values, what):
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)):
        raise URDFError(f"{what} has a non-finite value: {values.tolist()}")
    return values


def _pose(origin, what):
    """4x4 transform of a URDF <origin xyz rpy> (rpy: fixed-axis roll, pitch, yaw: R = Rz Ry Rx)."""
    xyz = _finite(origin.xyz if origin is not None and origin.xyz is not None else (0, 0, 0), f"{what} origin xyz")
    rpy = _finite(origin.rpy if origin is not None and origin.rpy is not None else (0, 0, 0), f"{what} origin rpy")
    roll, pitch, yaw = rpy
    cr, sr, cp, sp, cy, sy = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw)
    pose = np.eye(4)
    pose[:3, :3] = [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]
    pose[:3, 3] = xyz
    return pose


def _link_inertial_parameters(link):
    """The link's ten inertial parameters about its own frame origin; zero without <inertial>."""
    inertial = link.inertial
    if inertial is None:
        return np.zeros(10)
    what = f"link {link.name!r}"
    mass = float(_finite(inertial.mass if inertial.mass is not None else 0.0, f"{what} mass"))
    if mass < 0:
        raise URDFError(f"{what} has a negative mass ({mass})")
    i = inertial.inertia
    entries = (i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz) if i is not None else (0,) * 6
    xx, xy, xz, yy, yz, zz = _finite([0.0 if e is None else e for e in entries], f"{what} inertia")
    at_com = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    principal = np.linalg.eigvalsh(at_com)
    tolerance = 1e-9 * max(1.0, np.abs(principal).max())
    if principal[0] < -tolerance:
        raise URDFError(f"{what} has an inertia tensor that is not positive semi-definite (principal moments {principal.tolist()})")
    if principal[2] > principal[0] + principal[1] + tolerance:
        warnings.warn(
            f"{what} has an inertia that violates the triangle inequality (principal moments {principal.tolist()}): "
            "physically impossible, kept as given",
            stacklevel=5,
        )
    pose = _pose(inertial.origin, f"{what} inertial")
    rotation = pose[:3, :3]
    return inertial_parameters_about_origin(mass, pose[:3, 3], rotation @ at_com @ rotation.T)


def _tree(robot):
    """Check the link/joint graph is one tree; return (root link, {name: link}, {link: [child joints in order]})."""
    links = {link.name: link for link in robot.links}
    parent_joint = {}
    children = {name: [] for name in links}
    for joint in robot.joints:
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link is None:
                raise URDFError(f"joint {joint.name!r} has no {role} link")
            if link not in links:
                raise URDFError(f"joint {joint.name!r} names an unknown {role} link {link!r}")
        if joint.child in parent_joint:
            raise URDFError(
                f"link {joint.child!r} is the child of both joint {parent_joint[joint.child].name!r} and "
                f"joint {joint.name!r} (kinematic loops are not supported)"
            )
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_joint]
    if not links:
        raise URDFError("the URDF has no links")
    if not roots:
        raise URDFError(
            "the URDF has no root link: every link is a joint's child (kinematic loop through "
            + ", ".join(map(repr, links)) + ")"
        )
    if len(roots) > 1:
        raise URDFError(
            "the URDF has several root links (links that are no joint's child): " + ", ".join(map(repr, roots))
        )
    reached, stack = set(), [roots[0]]
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(joint.child for joint in children[name])
    unreached = [name for name in links if name not in reached]
    if unreached:
        raise URDFError("kinematic loop through links " + ", ".join(map(repr, unreached)))
    return roots[0], links, children


def _mimic_terms(name, tags):
    """``([(master, multiplier), ...], sum of offsets)`` of a joint's ``<mimic>`` children."""
    terms, offset = [], 0.0
    for tag in tags:
        master = tag.get("joint")
        if not master:
            raise URDFError(f"joint {name!r} has a <mimic> without a joint attribute")
        try:
            multiplier, shift = float(tag.get("multiplier", 1.0)), float(tag.get("offset", 0.0))
        except ValueError:
            raise URDFError(f"joint {name!r} has a <mimic> whose multiplier or offset is not a number") from None
        terms.append((master, multiplier))
        offset += shift
    return terms, offset


def _api_couplings(couplings):
    """``load_urdf``'s ``couplings`` argument in the form of :func:`_mimic_terms`."""
    declared = {}
    for name, value in (couplings or {}).items():
        factors, offset = value if isinstance(value, tuple) else (value, 0.0)
        try:
            declared[name] = ([(master, float(factor)) for master, factor in dict(factors).items()], float(offset))
        except (TypeError, ValueError):
            raise URDFError(f"coupling of joint {name!r} must be {{master: factor}} or ({{master: factor}}, offset), "
                            f"got {value!r}") from None
    return declared


def _resolve_couplings(declared, moving):
    """``{joint: ({independent master: factor}, offset)}``: every coupled joint as a linear function of the
    independent coordinates, chains substituted (``q = a (b q_m + d) + c``)."""
    declared = {name: value for name, value in declared.items() if name in moving}  # a fixed joint stays fixed
    for name, (terms, offset) in declared.items():
        for master, factor in terms:
            if master not in moving:
                raise URDFError(f"joint {name!r} follows {master!r}, which is not a moving joint")
            if master == name:
                raise URDFError(f"joint {name!r} follows itself")
        _finite([factor for _, factor in terms] + [offset], f"joint {name!r} mimic")
        for master, factor in terms:
            _check_factor(name, master, factor, "its <mimic> multiplier")
    resolved = {}

    def resolve(name, path):
        if name in resolved:
            return resolved[name]
        if name in path:
            raise URDFError(f"joint {name!r}: the coupled joints {path[path.index(name):]} follow each other in a cycle")
        terms, offset = declared[name]
        factors = {}
        for master, factor in terms:
            if master in declared:  # a coupled master: substitute its own map
                inner, inner_offset = resolve(master, path + [name])
                offset += factor * inner_offset
                for coordinate, inner_factor in inner.items():
                    factors[coordinate] = factors.get(coordinate, 0.0) + factor * inner_factor
            else:
                factors[master] = factors.get(master, 0.0) + factor
        resolved[name] = (factors, offset)
        return resolved[name]

    for name in declared:
        factors, offset = resolve(name, [])
        for master, factor in factors.items():
            _check_factor(name, master, factor, "through its chain of couplings")
        _finite([offset], f"joint {name!r} mimic offset through its chain of couplings")
    return resolved


def _check_factor(name, master, factor, how):
    if not abs(factor) <= MAX_COUPLING_FACTOR:
        raise URDFError(f"joint {name!r} follows {master!r} with the factor {factor:g} ({how}): beyond "
                        f"{MAX_COUPLING_FACTOR:g} in magnitude (a slip, or the dynamics would overflow)")


def _warn_multi_turn_couplings(couplings, types):
    """Warn where a whole turn of a continuous joint moves a joint that follows it (a factor that is not a
    whole number, or a prismatic follower). A lead screw is such a mechanism, so it loads; but a driver
    that wraps the continuous joint's angle into [-pi, pi) would give one pose two angles of the follower,
    hence two torques."""
    for name, (factors, _) in couplings.items():
        for master, factor in factors.items():
            if types[master] == "continuous" and factor != 0 and (types[name] == "prismatic" or factor != round(factor)):
                turn = f"{factor * 2 * math.pi:g} m" if types[name] == "prismatic" else f"{factor * 360:g} degrees"
                warnings.warn(f"joint {name!r} follows the continuous joint {master!r} with the factor {factor:g}: a "
                              f"whole turn of {master!r} moves {name!r} by {turn}, so its position must be the multi-turn "
                              "angle, never wrapped into [-pi, pi) (with a range, declare it revolute with limits)",
                              stacklevel=5)


def _locks(robot, declared, locks):
    """``{joint: position}`` of the joints to hold fixed: the moving joints of ``locks`` and the
    coupled joints that follow only locked ones, at ``multiplier * master + offset``."""
    moving = {joint.name for joint in robot.joints if joint.type != "fixed"}
    held = {}
    for name, value in (locks or {}).items():
        if name not in moving:
            raise URDFError(f"cannot lock joint {name!r}: not a moving joint of the URDF "
                            f"(moving joints: {', '.join(sorted(moving))})")
        if name in declared:
            raise URDFError(f"cannot lock joint {name!r}: it follows another joint (<mimic>); lock its master")
        held[name] = float(_finite([value], f"lock of joint {name!r}")[0])
    followers = {name: value for name, value in declared.items() if name in moving}
    while True:  # coupled joints whose masters are all held, chains included
        ready = [name for name, (terms, _) in followers.items() if name not in held and all(m in held for m, _ in terms)]
        if not ready:
            break
        for name in ready:
            terms, offset = followers[name]
            held[name] = sum(factor * held[master] for master, factor in terms) + offset
    for name, (terms, _) in followers.items():
        if name not in held and any(master in held for master, _ in terms):
            raise URDFError(f"joint {name!r} follows locked and unlocked joints: lock them all, or none")
    return held


def _locked_motion(joint, value):
    """The 4x4 motion of a locked joint held at ``value`` (rad or m) along its axis."""
    axis = np.asarray(_finite(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), f"joint {joint.name!r} axis"))
    axis = axis / max(np.linalg.norm(axis), 1e-300)
    motion = np.eye(4)
    if SUPPORTED_JOINTS.get(joint.type) == PRISMATIC:
        motion[:3, 3] = value * axis
    else:
        motion[:3, :3] = np.array(axis_angle.py_func(axis, value)).reshape(3, 3)  # Rodrigues, without compiling it
    return motion


def _build(robot, declared, locks=None):
    locks = locks or {}
    root, links, children = _tree(robot)
    for joint in robot.joints:
        if joint.type not in SUPPORTED_JOINTS:
            detail = "not supported yet" if joint.type in ("floating", "planar") else "unknown"
            raise URDFError(f"joint {joint.name!r} has type {joint.type!r}: {detail} (use revolute, continuous, prismatic or fixed)")
    moving = {joint.name for joint in robot.joints if joint.type != "fixed" and joint.name not in locks}
    couplings = _resolve_couplings({name: value for name, value in declared.items() if name not in locks}, moving)
    _warn_multi_turn_couplings(couplings, {joint.name: joint.type for joint in robot.joints})

    # Depth-first walk: each link gets (carrying body, pose in that body's frame).
    body_rows, body_parents, body_kinds, body_joints, joint_info = [], [], [], [], []
    masters = max([1] + [len(factors) for factors, _ in couplings.values()])  # the most any joint follows
    frames = {root: Frame(-1, read_only(np.eye(4)), inertial=read_only(_link_inertial_parameters(links[root])))}
    link_order = [root]
    stack = list(reversed(children[root]))
    while stack:
        joint = stack.pop()
        parent_frame = frames[joint.parent]
        origin = parent_frame.pose @ _pose(joint.origin, f"joint {joint.name!r}")
        tree = {"parent": joint.parent, "inertial": read_only(_link_inertial_parameters(links[joint.child]))}
        if joint.name in locks:  # held at a position: a fixed joint there
            frames[joint.child] = Frame(parent_frame.body, read_only(origin @ _locked_motion(joint, locks[joint.name])),
                                          fixed=True, **tree)
        elif joint.type == "fixed":
            frames[joint.child] = Frame(parent_frame.body, read_only(origin), fixed=True, **tree)
        else:
            axis = _finite(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), f"joint {joint.name!r} axis")
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise URDFError(f"joint {joint.name!r} has a zero axis")
            row = np.zeros(FIRST_FACTOR + masters)
            row[ORIGIN_R] = origin[:3, :3].ravel()
            row[ORIGIN_P] = origin[:3, 3]
            kind = SUPPORTED_JOINTS[joint.type]
            row[SCREW] = np.concatenate([axis / norm, np.zeros(3)] if kind == REVOLUTE else [np.zeros(3), axis / norm])
            body_rows.append(row)
            body_parents.append(parent_frame.body)
            body_kinds.append(kind)
            body_joints.append(joint.name)
            joint_info.append(joint)
            frames[joint.child] = Frame(len(body_rows) - 1, read_only(np.eye(4)), **tree)
        link_order.append(joint.child)
        stack.extend(reversed(children[joint.child]))

    bodies = np.array(body_rows).reshape(-1, FIRST_FACTOR + masters)
    for name in link_order:  # inertia of each link, folded into the body that carries it
        frame = frames[name]
        parameters = frame.inertial
        if frame.body >= 0:
            bodies[frame.body, INERTIAL_PARAMETERS] += move_inertial_parameters(
                parameters, frame.pose[:3, :3], frame.pose[:3, 3]
            )

    coordinates = [name for name in body_joints if name not in couplings]
    index = {name: i for i, name in enumerate(coordinates)}
    topology = np.zeros((len(body_joints), FIRST_MASTER + masters), dtype=np.int64)
    for i, name in enumerate(body_joints):
        factors, offset = couplings.get(name, ({name: 1.0}, 0.0))
        topology[i, [PARENT, KIND, MASTERS]] = (body_parents[i], body_kinds[i], len(factors))
        bodies[i, OFFSET] = offset
        for m, (master, factor) in enumerate(factors.items()):
            topology[i, FIRST_MASTER + m], bodies[i, FIRST_FACTOR + m] = index[master], factor

    info = {joint.name: joint for joint in joint_info}
    limits = [_limits(info[name]) for name in coordinates]
    dynamics = [_dynamics(info[name]) for name in coordinates]
    model = RobotModel(
        name=robot.name,
        joint_names=tuple(coordinates),
        joint_types=tuple(info[name].type for name in coordinates),
        link_names=tuple(link_order),
        gravity=read_only(DEFAULT_GRAVITY),
        position_limits=read_only([limit[:2] for limit in limits]).reshape(-1, 2),
        velocity_limits=read_only([limit[2] for limit in limits]),
        effort_limits=read_only([limit[3] for limit in limits]),
        damping=read_only([d[0] for d in dynamics]),
        friction=read_only([d[1] for d in dynamics]),
        couplings={name: (tuple(factors.items()), offset) for name, (factors, offset) in couplings.items()},
        body_joints=tuple(body_joints),
        topology=read_only(topology, dtype=np.int64),
        bodies=read_only(bodies),
        frames=frames,
    )
    return model


def _limits(joint):
    """(lower, upper, velocity, effort) with +-inf where the URDF gives none."""
    limit = joint.limit
    lower, upper, velocity, effort = -np.inf, np.inf, np.inf, np.inf
    if limit is not None:
        if joint.type != "continuous":
            lower, upper = (bound if value is None else value for value, bound in ((limit.lower, -np.inf), (limit.upper, np.inf)))
        velocity, effort = (np.inf if value is None else value for value in (limit.velocity, limit.effort))
        _finite([v for v in (limit.lower, limit.upper, limit.velocity, limit.effort) if v is not None],
                f"joint {joint.name!r} limit")
        if lower > upper:
            raise URDFError(f"joint {joint.name!r} has lower limit {lower} above upper limit {upper}")
    return lower, upper, velocity, effort


def _dynamics(joint):
    dynamics = joint.dynamics  # (a None attribute is the URDF's default, 0)
    values = (0.0, 0.0) if dynamics is None else (dynamics.damping or 0.0, dynamics.friction or 0.0)
    return tuple(_finite(values, f"joint {joint.name!r} dynamics"))


def _check_joint_inertias(model):
    """The diagonal of ``M(0)``: refuse a model whose numbers overflow there; warn about coordinates that
    move no mass (their column of M is zero: singular dynamics)."""
    if model.nv == 0:
        return
    diagonal = np.diagonal(mass_matrix(model, np.zeros(model.nv)))
    for name, value in zip(model.joint_names, diagonal):
        if not np.isfinite(value):
            raise URDFError(f"the mass matrix overflows at q = 0: joint {name!r} has the inertia {value} "
                            "(masses, inertias, distances or motors too large for double precision)")
        if value <= 1e-12:
            warnings.warn(
                f"joint {name!r} moves no mass or inertia: its column of the mass matrix is zero, "
                "so forward dynamics is undefined for it",
                stacklevel=3,
            )
