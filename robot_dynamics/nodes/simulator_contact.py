"""The simulator node's contact parameters (no rclpy): ``contact.*`` -> :class:`robot_dynamics.contact.ContactModel`.

Off by default (no planes).  The node publishes the true contact wrench with every ``joint_states`` on
``contact_wrenches`` (geometry_msgs/WrenchStamped, ROS's rule: components in ``header.frame_id``'s axes,
moment about its origin; :func:`contact_wrench_messages`): one message per touching link, ``frame_id``
the link (as an F/T sensor mounted there would read it), or with ``contact.wrench_frame`` one message,
the sum of them expressed in that frame (moved about its origin as tf2's ``doTransform`` moves a wrench).
"""

from __future__ import annotations

from ..contact import DEFAULT_DAMPING, DEFAULT_STIFFNESS, ContactModel
from ..kinematics import frame_pose
from ..wrenches import wrench_in_frame
from .parameters import Parameter, bounded_float, float_list

__all__ = ["CONTACT_FIELDS", "CONTACT_PARAMETERS", "CONTACT_TOPICS", "coerce_contact", "contact_model",
           "contact_wrench_messages"]

#: Settings field -> default
CONTACT_FIELDS = {
    "contact_planes": (), "contact_links": (), "contact_spheres": (),
    "contact_stiffness": DEFAULT_STIFFNESS, "contact_damping": DEFAULT_DAMPING, "contact_friction": 0.0,
    "contact_wrench_frame": "",
}

CONTACT_PARAMETERS = (
    Parameter("contact.planes", [], "Static half-spaces the robot touches, 6 numbers each: a point of the "
              "boundary plane and the outward normal (x y z nx ny nz), root frame, m; empty = no contact.",
              field="contact_planes"),
    Parameter("contact.links", [], "The links that carry contact spheres, one entry per sphere (a link may "
              "appear more than once).", field="contact_links"),
    Parameter("contact.spheres", [], "Per contact.links entry 4 numbers: the sphere's centre in the link "
              "frame and its radius (x y z radius), m; empty = a point at each link's origin.",
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


def coerce_contact(name: str, value):
    """A ``contact.*`` Settings field's value; ValueError names the parameter and the problem."""
    if name == "contact_links":
        names = tuple(value) if value is not None else ()
        if not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"contact.links must be a list of link names, got {value!r}")
        return names
    if name in ("contact_planes", "contact_spheres"):
        parameter = name.replace("_", ".", 1)
        values = float_list(parameter, value, strict=False)
        width = 6 if name == "contact_planes" else 4
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


def contact_model(model, settings, friction_velocity: float) -> ContactModel:
    """The :class:`ContactModel` the settings describe for ``model``; ValueError names the problem (a
    sphere count that does not match contact.links, an unknown link, a zero normal)."""
    planes = settings.contact_planes
    links, spheres = settings.contact_links, settings.contact_spheres
    if spheres and len(spheres) != 4 * len(links):
        raise ValueError(f"contact.spheres has {len(spheres) // 4} spheres for {len(links)} contact.links entries")
    rows = [spheres[4 * k:4 * k + 4] if spheres else (0.0, 0.0, 0.0, 0.0) for k in range(len(links))]
    unknown = [link for link in links if link not in model.frames]
    if unknown:
        raise ValueError(f"contact.links {unknown} are not links of robot {model.name!r}")
    if planes and not links:
        raise ValueError("contact.planes are set but contact.links is empty: nothing can touch them")
    if settings.contact_wrench_frame and settings.contact_wrench_frame not in model.frames:
        raise ValueError(f"contact.wrench_frame {settings.contact_wrench_frame!r} is not a link of robot {model.name!r}")
    contact = ContactModel(
        planes=tuple((planes[6 * k:6 * k + 3], planes[6 * k + 3:6 * k + 6]) for k in range(len(planes) // 6)),
        spheres=tuple((link, row[:3], row[3]) for link, row in zip(links, rows)) if planes else (),
        stiffness=settings.contact_stiffness, damping=settings.contact_damping, friction=settings.contact_friction,
        friction_velocity=friction_velocity)
    contact.array(model)  # checks the links against the model
    return contact


def contact_wrench_messages(model, q, wrenches, wrench_frame=""):
    """``[(frame_id, [moment; force])]``: the contact wrenches ``{link: [moment; force]}`` (the library's
    convention, world-aligned axes about each link's origin) at the state ``q`` as ``contact_wrenches``
    carries them (module docstring): each in its link's axes, or with ``wrench_frame`` their sum in that
    frame's axes about its origin."""
    if not wrenches:
        return []
    origins = {link: frame_pose(model, q, link) for link in wrenches}
    if not wrench_frame:
        return [(link, wrench_in_frame(wrench, origins[link][:3, 3], origins[link])) for link, wrench in wrenches.items()]
    target = frame_pose(model, q, wrench_frame)
    return [(wrench_frame, sum(wrench_in_frame(wrench, origins[link][:3, 3], target) for link, wrench in wrenches.items()))]
