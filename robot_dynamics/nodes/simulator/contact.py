"""The simulator node's contact parameters (no rclpy): ``contact.*`` -> :class:`robot_dynamics.simulation.contact.ContactModel`.

Off by default (no planes).  The node publishes the true contact wrench with every ``joint_states`` on
``contact_wrenches`` (geometry_msgs/WrenchStamped, ROS's rule: components in ``header.frame_id``'s axes,
moment about its origin; :func:`contact_wrench_messages`): one message per touching link, ``frame_id``
the link (as an F/T sensor mounted there would read it), or with ``contact.wrench_frame`` one message,
the sum of them expressed in that frame (moved about its origin as tf2's ``doTransform`` moves a wrench).
"""

from __future__ import annotations

import numpy as np

from ...simulation.contact import DEFAULT_DAMPING, DEFAULT_STIFFNESS, ContactModel
from ...rigid_body.kinematics import frame_pose
from ...rigid_body.wrenches import wrench_in_frame
from ..common.parameters import Parameter, bounded_float, float_list
from ..common.safety import cut, robot_size

__all__ = ["CONTACT_FIELDS", "CONTACT_PARAMETERS", "CONTACT_TOPICS", "MAX_CONTACT_PAIRS", "PLANE_RANGE", "coerce_contact",
           "contact_model", "contact_wrench_messages", "plausible_wrenches"]

#: Settings field -> default
CONTACT_FIELDS = {
    "contact_planes": (), "contact_links": (), "contact_spheres": (),
    "contact_stiffness": DEFAULT_STIFFNESS, "contact_damping": DEFAULT_DAMPING, "contact_friction": 0.0,
    "contact_wrench_frame": "",
}

CONTACT_PARAMETERS = (
    Parameter("contact.planes", [], "Static half-spaces the robot touches, 6 numbers each: a point of the "
              "boundary plane and the outward normal (x y z nx ny nz), root frame, m; the point within 10 times the "
              "robot's reach of the root; at most 64 sphere-plane pairs; empty = no contact.",
              field="contact_planes"),
    Parameter("contact.links", [], "The links that carry contact spheres, one entry per sphere (a link may "
              "appear more than once). Resized apart from contact.spheres: no contact until their counts match.", field="contact_links"),
    Parameter("contact.spheres", [], "Per contact.links entry 4 numbers: the sphere's centre in the link "
              "frame and its radius (x y z radius), m, both within the robot's reach; empty = a point at each link's origin.",
              field="contact_spheres"),
    Parameter("contact.stiffness", DEFAULT_STIFFNESS, "Penalty stiffness k, N/m (> 0): a resting load F "
              "sinks F/k into the plane.", field="contact_stiffness"),
    Parameter("contact.damping", DEFAULT_DAMPING, "Penalty damping b, N s/m (>= 0); 2 sqrt(k m) damps a "
              "mass m critically.", field="contact_damping"),
    Parameter("contact.friction", 0.0, "Coulomb friction coefficient mu at the contacts (>= 0; 0 = none), "
              "smoothed over friction_velocity.", field="contact_friction"),
    Parameter("contact.wrench_frame", "", "Frame of contact_wrenches: empty = one message per touching link, "
              "frame_id that link (its axes, moment about its origin); a link name = one message, the sum of the "
              "contact wrenches in that link's axes about its origin (e.g. the root link).", "string",
              field="contact_wrench_frame"),
)

CONTACT_TOPICS = (
    ("contact_wrenches", "geometry_msgs/WrenchStamped", "out", "with contact.planes: the true contact wrench "
     "on each touching link (frame_id the link: its axes, moment about its origin), or their sum in "
     "contact.wrench_frame, with each joint_states"),
)


#: most sphere-plane pairs (spheres x planes): 64 pairs in touch make a rk4 step of arm7_gripper 14
#: times as long (``robot-dynamics bench contact_count``); its simulator node
#: then still runs faster than real time on a loaded machine (docs/contact.md)
MAX_CONTACT_PAIRS = 64
#: how far from the root a plane's point may lie, in multiples of the robot's reach
#: (:func:`~robot_dynamics.nodes.common.safety.robot_size`): farther, a plane is a unit slip or garbage
PLANE_RANGE = 10.0


def coerce_contact(name: str, value):
    """A ``contact.*`` Settings field's value; ValueError names the parameter and the problem."""
    if name == "contact_links":
        names = tuple(value) if value is not None else ()
        if not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"contact.links must be a list of link names, got {cut(repr(value), 200)}")
        if len(names) > MAX_CONTACT_PAIRS:
            raise ValueError(f"contact.links has {len(names)} entries, more than {MAX_CONTACT_PAIRS} (spheres x "
                             "planes is bounded to keep the simulator real-time)")
        return names
    if name in ("contact_planes", "contact_spheres"):
        parameter = name.replace("_", ".", 1)
        width = 6 if name == "contact_planes" else 4
        if hasattr(value, "__len__") and len(value) > width * MAX_CONTACT_PAIRS:
            raise ValueError(f"{parameter} has {len(value) // width} entries, more than {MAX_CONTACT_PAIRS} "
                             "(spheres x planes is bounded to keep the simulator real-time)")
        values = float_list(parameter, value, strict=False)
        if len(values) % width:
            raise ValueError(f"{parameter} must hold {width} numbers per entry, got {len(values)}")
        return values
    if name == "contact_stiffness":
        return bounded_float("contact.stiffness", value, 0.0, 1e9, low_open=True)
    if name == "contact_damping":
        return bounded_float("contact.damping", value, 0.0, 1e7)
    if name == "contact_friction":
        return bounded_float("contact.friction", value, 0.0, 10.0)
    if name == "contact_wrench_frame":
        return str(value)
    raise KeyError(name)


def _check_sizes(planes, rows, links, reach: float) -> None:
    """``ValueError`` unless the planes' points lie within :data:`PLANE_RANGE` reaches of the root, the
    spheres' centres within the reach of their links and their radii at most the reach, and spheres x
    planes is at most :data:`MAX_CONTACT_PAIRS`."""
    for k in range(len(planes) // 6):
        distance = float(np.linalg.norm(planes[6 * k:6 * k + 3]))
        if not distance <= PLANE_RANGE * reach:
            raise ValueError(f"contact.planes entry {k}: its point {list(planes[6 * k:6 * k + 3])} is {distance:.4g} m "
                             f"from the root, beyond {PLANE_RANGE:g} times the robot's reach ({PLANE_RANGE * reach:.4g} m)")
    for k, (link, row) in enumerate(zip(links + ("(no link yet)",) * len(rows), rows)):
        distance = float(np.linalg.norm(row[:3]))
        if not (distance <= reach and row[3] <= reach):
            raise ValueError(f"contact.spheres entry {k} on {link}: centre {list(row[:3])}, radius {row[3]:g}: the "
                             f"centre must lie within the robot's reach ({reach:.4g} m) of its link and the radius "
                             f"be at most that")
    pairs = len(planes) // 6 * max(len(links), len(rows))
    if pairs > MAX_CONTACT_PAIRS:
        raise ValueError(f"{max(len(links), len(rows))} contact spheres and {len(planes) // 6} planes make {pairs} pairs, more than "
                         f"{MAX_CONTACT_PAIRS} (the simulator keeps real time up to that; docs/contact.md)")


def contact_model(model, settings, friction_velocity: float) -> tuple[ContactModel, tuple]:
    """``(contact, notes)``: the :class:`ContactModel` the settings describe for ``model``, and what is
    worth a warning. A sphere count that does not match contact.links, or planes without links, is a
    pair being resized one parameter at a time: no contact until they match (said in ``notes``).
    ValueError names a problem (an unknown link, a zero normal, a plane or sphere beyond the robot's
    size, too many pairs)."""
    planes = settings.contact_planes
    links, spheres = settings.contact_links, settings.contact_spheres
    unknown = [link for link in links if link not in model.frames]
    if unknown:
        raise ValueError(f"contact.links {unknown} are not links of robot {model.name!r}")
    rows = ([spheres[4 * k:4 * k + 4] for k in range(len(spheres) // 4)] if spheres
            else [(0.0, 0.0, 0.0, 0.0)] * len(links))
    _check_sizes(planes, rows, links, robot_size(model)[1])
    if settings.contact_wrench_frame and settings.contact_wrench_frame not in model.frames:
        raise ValueError(f"contact.wrench_frame {settings.contact_wrench_frame!r} is not a link of robot {model.name!r}")
    notes = ()
    if spheres and len(spheres) != 4 * len(links):
        notes = (f"contact.spheres has {len(spheres) // 4} spheres for {len(links)} contact.links entries: no contact "
                 "until they match (set both together, or one after the other)",)
    elif planes and not links:
        notes = ("contact.planes are set but contact.links is empty: nothing can touch them",)
    touching = bool(planes) and not notes
    contact = ContactModel(
        planes=tuple((planes[6 * k:6 * k + 3], planes[6 * k + 3:6 * k + 6]) for k in range(len(planes) // 6)),
        spheres=tuple((link, row[:3], row[3]) for link, row in zip(links, rows)) if touching else (),
        stiffness=settings.contact_stiffness, damping=settings.contact_damping, friction=settings.contact_friction,
        friction_velocity=friction_velocity)
    contact.array(model)  # checks the links against the model
    return contact, notes


def plausible_wrenches(plausibility, wrenches: dict) -> tuple[dict, str]:
    """``(believed, problem)``: the wrenches of ``{link: wrench}`` that the rule of every published wrench
    (:meth:`~robot_dynamics.nodes.common.safety.Plausibility.wrench_problem`) believes, and the first reason one
    was left out ('' when none was)."""
    believed, problem = {}, ""
    for link, wrench in wrenches.items():
        why = plausibility.wrench_problem(wrench, f"contact wrench on {link}")
        if why:
            problem = problem or why
        else:
            believed[link] = wrench
    return believed, problem
def contact_wrench_messages(model, q, wrenches, wrench_frame=""):
    """``[(frame_id, [moment; force])]``: the contact wrenches ``{link: [moment; force]}`` (the library's
    convention, world-aligned axes about each link's origin) at the state ``q`` as ``contact_wrenches``
    carries them (module docstring): each in its link's axes, or with ``wrench_frame`` their sum in that
    frame's axes about its origin — zero when nothing touches, as a sensor there would read."""
    origins = {link: frame_pose(model, q, link) for link in wrenches}
    if not wrench_frame:
        return [(link, wrench_in_frame(wrench, origins[link][:3, 3], origins[link])) for link, wrench in wrenches.items()]
    target = frame_pose(model, q, wrench_frame)
    total = np.zeros(6)
    for link, wrench in wrenches.items():
        total += wrench_in_frame(wrench, origins[link][:3, 3], target)
    return [(wrench_frame, total)]
