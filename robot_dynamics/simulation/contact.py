"""Penalty contact between spheres on the robot's links and static half-spaces: the simulator's touch.

Geometry (:class:`ContactModel`): half-spaces ``{x : n . (x - x_0) <= 0}`` given by a point ``x_0`` on
their boundary plane and the outward unit normal ``n`` (world coordinates), and contact spheres, each a
centre fixed in a named link's frame and a radius (0: a point).  A sphere of centre ``x`` and radius
``rho`` penetrates a half-space by ``d = rho - n . (x - x_0)``; where ``d > 0`` the half-space pushes
at the contact point ``c = x - rho n`` with the spring-damper (penalty) force::

    f_n = max(0, k d + b d')                       normal, d' = -n . v_c; a wall pushes, never pulls
    f_t = -mu f_n tanh(|v_t| / eps) v_t / |v_t|    Coulomb friction, smoothed like the joints' (optional)

where ``v_c`` is the velocity of the contact point (``J_c qd``) and ``v_t`` its part along the plane.  The
force reaches the joints as ``J_c^T f`` (Lynch & Park eq. 9.81's ``J^T F``) and the true wrench on the
link, in the library's ``external_wrenches`` convention (world-aligned axes, moment about the link
origin ``o``), is ``[(c - o) x f; f]``.  A body at rest on a half-space sinks by
``f_n / k``: the stiffness sets that penetration and the contact's natural frequency
``sqrt(k / m)``, which must stay well under the integrator's limit (``sqrt(k / m) h`` of 0.1 at 1 kHz
for 1 kg and the default ``k``); ``b`` near ``2 sqrt(k m)`` damps it critically.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..jit import njit
from ..rigid_body.kernels import add_joint_force, jacobian_column, joint_poses, joint_rate, point_in_world, vec, world_poses
from ..rigid_body.model import PARENT
from ..spatial import add, cross, dot, scale, sub

__all__ = ["ContactModel", "DEFAULT_STIFFNESS", "DEFAULT_DAMPING"]


DEFAULT_STIFFNESS = 1.0e4
"""``k``, N/m: 1 mm of penetration under 10 N."""
DEFAULT_DAMPING = 200.0
"""``b``, N s/m: critical for 1 kg on the default stiffness."""


@dataclass(frozen=True)
class ContactModel:
    """Static half-spaces and contact spheres on links, and the penalty law's constants.

    ``planes``: ``[(point, normal), ...]`` (world, the normal points out of the solid, normalised here);
    ``spheres``: ``[(link, centre, radius), ...]`` (centre in the link's frame, m; radius >= 0);
    ``stiffness`` ``k`` (N/m, > 0), ``damping`` ``b`` (N s/m, >= 0), ``friction`` ``mu`` (>= 0, 0: none),
    ``friction_velocity`` ``eps`` (m/s, > 0).  ValueError names a bad value.
    """

    planes: tuple = ()
    spheres: tuple = ()
    stiffness: float = DEFAULT_STIFFNESS
    damping: float = DEFAULT_DAMPING
    friction: float = 0.0
    friction_velocity: float = 0.01
    _planes: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        rows = []
        for number, plane in enumerate(self.planes):
            point, normal = (np.asarray(x, dtype=float) for x in plane)
            length = np.linalg.norm(normal) if normal.shape == (3,) else 0.0
            if point.shape != (3,) or not np.isfinite(point).all() or not (math.isfinite(length) and length > 0):
                raise ValueError(f"contact plane {number}: needs a finite point (3 values) and a non-zero normal "
                                 f"(3 values), got {plane!r}")
            rows.append(np.concatenate((point, normal / length)))
        object.__setattr__(self, "_planes", np.array(rows, dtype=float).reshape(-1, 6))
        for number, sphere in enumerate(self.spheres):
            if len(sphere) != 3:
                raise ValueError(f"contact sphere {number}: needs (link, centre, radius), got {sphere!r}")
            link, centre, radius = sphere
            centre = np.asarray(centre, dtype=float)
            if centre.shape != (3,) or not np.isfinite(centre).all() or not (math.isfinite(radius) and radius >= 0):
                raise ValueError(f"contact sphere {number} on {link!r}: needs a finite centre (3 values) and a "
                                 f"radius >= 0, got {centre.tolist()}, {radius!r}")
        for name, value, low in (("stiffness", self.stiffness, 0.0), ("friction_velocity", self.friction_velocity, 0.0)):
            if not (math.isfinite(value) and value > low):
                raise ValueError(f"contact {name} must be positive, got {value!r}")
        for name, value in (("damping", self.damping), ("friction", self.friction)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"contact {name} must be >= 0, got {value!r}")

    @property
    def enabled(self):
        """Whether anything can touch: at least one plane and one sphere."""
        return bool(self.planes) and bool(self.spheres)

    @property
    def links(self):
        """The links that carry spheres, in order, each once."""
        return tuple(dict.fromkeys(link for link, _, _ in self.spheres))

    def array(self, model):
        """The compiled step's contact geometry, one ``(1 + planes + spheres, 8)`` array (one argument to
        unpack per step, not four): row 0 ``(k, b, mu, eps, planes, spheres, 0, 0)``; a plane's row its point
        and unit normal; a sphere's row its centre, radius and link origin in its body's frame, then the
        body.  No planes or spheres when nothing can touch.  ValueError names an unknown link."""
        spheres = self.spheres if self.enabled else ()
        planes = self._planes if self.enabled else np.zeros((0, 6))
        out = np.zeros((1 + len(planes) + len(spheres), 8))
        out[0, :6] = self.stiffness, self.damping, self.friction, self.friction_velocity, len(planes), len(spheres)
        out[1:1 + len(planes), :6] = planes
        for row, (link, centre, radius) in enumerate(spheres, start=1 + len(planes)):
            if link not in model.frames:
                raise ValueError(f"contact sphere on unknown link {link!r}: the links are the URDF's link names")
            frame = model.frames[link]
            pose_in_body = frame.pose
            out[row, :3] = pose_in_body[:3, :3] @ np.asarray(centre, dtype=float) + pose_in_body[:3, 3]
            out[row, 3] = radius
            out[row, 4:7] = pose_in_body[:3, 3]
            out[row, 7] = frame.body
        return out


@njit
def add_contact_torques(topology, bodies, world, qd, geometry, tau, wrenches):
    """``tau += sum J_c^T f`` over the spheres touching a half-space (module docstring), and each sphere's
    wrench ``[(c - o) x f; f]`` on its link into ``wrenches`` (one row per sphere, zero if untouched).
    ``geometry`` is :meth:`ContactModel.array`, ``world`` holds the bodies' world poses, ``qd`` is one
    state ``(1, n)``."""
    stiffness, damping, mu, eps = geometry[0, 0], geometry[0, 1], geometry[0, 2], geometry[0, 3]
    planes, spheres = int(geometry[0, 4]), int(geometry[0, 5])
    wrenches[:] = 0.0
    for s in range(spheres):
        row = 1 + planes + s
        body = int(geometry[row, 7])
        if body < 0:  # on the fixed base: nothing moves it
            continue
        centre = point_in_world(world, body, vec(geometry, row, 0))
        radius = geometry[row, 3]
        for m in range(1, 1 + planes):
            normal = vec(geometry, m, 3)
            depth = radius - dot(normal, sub(centre, vec(geometry, m, 0)))
            if depth <= 0.0:
                continue
            point = sub(centre, scale(normal, radius))
            velocity = (0.0, 0.0, 0.0)  # of the contact point, J_c qd
            j = body
            while j >= 0:
                _, linear = jacobian_column(bodies, world, j, point)
                velocity = add(velocity, scale(linear, joint_rate(topology, bodies, qd, qd.shape[0] - 1, j)))
                j = topology[j, PARENT]
            normal_speed = dot(normal, velocity)
            push = stiffness * depth - damping * normal_speed
            if push <= 0.0:
                continue
            force = scale(normal, push)
            tangential = sub(velocity, scale(normal, normal_speed))
            slip = math.sqrt(dot(tangential, tangential))
            if mu > 0.0 and slip > 0.0:
                force = add(force, scale(tangential, -mu * push * math.tanh(slip / eps) / slip))
            j = body
            while j >= 0:
                _, linear = jacobian_column(bodies, world, j, point)
                add_joint_force(topology, bodies, j, dot(linear, force), tau)
                j = topology[j, PARENT]
            moment = cross(sub(point, point_in_world(world, body, vec(geometry, row, 4))), force)
            for c in range(3):
                wrenches[s, c] += moment[c]
                wrenches[s, 3 + c] += force[c]


@njit
def contact_wrenches_at(topology, bodies, q, qd, geometry, poses, world):
    """The spheres' contact wrenches (one row each) at the state ``(q, qd)`` (rows of ``(1, n)``)."""
    state = q.shape[0] - 1  # the only state, 0, as a variable: a literal would compile a second joint_poses
    joint_poses(topology, bodies, q, state, poses)
    world_poses(topology, poses, world)
    tau = np.zeros(q.shape[1])
    wrenches = np.zeros((int(geometry[0, 5]), 6))
    add_contact_torques(topology, bodies, world, qd, geometry, tau, wrenches)
    return wrenches, tau

