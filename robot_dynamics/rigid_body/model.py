"""The immutable robot model that every algorithm reads.

All tree work is done once, when the URDF is loaded (see ``urdf.py``): fixed joints are
folded away, mimic joints are resolved to the coordinates they follow, and the moving joints
are numbered so that every body's parent comes before it (``parent[i] < i``).  The
algorithms then walk two flat arrays and never search the tree; the names below are their
columns (integers are first columns, slices span several):

``topology[i]`` (integers)
    ``PARENT`` (index of the parent body, -1 for the root), ``KIND`` (``REVOLUTE`` or
    ``PRISMATIC``; continuous joints are revolute), ``MASTERS`` (how many coordinates drive the
    joint) and, from column ``FIRST_MASTER`` on, those coordinates.
``bodies[i]`` (floats)
    the fixed transform from the parent body frame to the joint frame (``ORIGIN_R``, row-major,
    and ``ORIGIN_P``), the joint's unit screw ``A_i = (w, v)`` in the joint frame (``SCREW``:
    ``(axis, 0)`` revolute, ``(0, axis)`` prismatic), the joint ``OFFSET``, the body's ten
    inertial parameters about its frame origin (``MASS``, ``FIRST_MOMENT`` = m c, ``INERTIA`` =
    xx, xy, xz, yy, yz, zz), fixed children included, and from column ``FIRST_FACTOR`` on the
    factor of each master coordinate.

The coordinates map linearly onto the joints, ``q_joints = E q + o`` (:meth:`RobotModel.joint_map`):
row ``i`` of ``E`` holds the factors of joint ``i``'s masters.  An independent joint has one master,
itself, with factor 1 and offset 0; a mimic joint has its master's coordinate with the
multiplier.  Both arrays are as wide as the joint with the most masters needs.

A body's frame is the URDF frame of the joint's child link.
"""

from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import numpy as np

from ..spatial import inertia_to_parent

PARENT, KIND, MASTERS, FIRST_MASTER = 0, 1, 2, 3
REVOLUTE, PRISMATIC = 0, 1

ORIGIN_R = slice(0, 9)
ORIGIN_P = slice(9, 12)
SCREW = slice(12, 18)
OFFSET = 18
MASS = 19
FIRST_MOMENT = slice(20, 23)
INERTIA = slice(23, 29)
INERTIAL_PARAMETERS = slice(19, 29)
FIRST_FACTOR = 29


def read_only(array, dtype=np.float64):
    """A private, write-protected copy, so a model can be shared without defensive copies."""
    array = np.array(array, dtype=dtype)
    array.flags.writeable = False
    return array


def given_limits(limits):
    """``limits`` (velocity or effort limits, per coordinate) with the entries a URDF gives as 0 made
    infinite: 0, a common xacro default, means "not given", not "cannot move"."""
    limits = np.asarray(limits, dtype=float)
    return np.where(limits > 0, limits, np.inf)


def inertial_parameters_about_origin(mass, com, inertia_at_com):
    """(m, m c, Ibar) about a frame's origin from mass, centre of mass and inertia about the CoM.

    Steiner's theorem ``Ibar = Ic + m (c^T c I - c c^T)`` (Lynch & Park eq. 8.26).
    """
    com = np.asarray(com, dtype=float)
    Ibar = np.asarray(inertia_at_com, dtype=float) + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return np.array([mass, *(mass * com), Ibar[0, 0], Ibar[0, 1], Ibar[0, 2], Ibar[1, 1], Ibar[1, 2], Ibar[2, 2]])


def move_inertial_parameters(parameters, rotation, position):
    """Ten inertial parameters given in a child frame, expressed about the parent frame's origin.

    ``rotation``/``position`` place the child frame in the parent frame.
    """
    first_moment, Ibar = inertia_to_parent(
        parameters[0], tuple(parameters[1:4]), tuple(parameters[4:10]),
        tuple(np.ravel(rotation)), tuple(position),
    )
    return np.array([parameters[0], *first_moment, *Ibar])


@dataclass(frozen=True, eq=False)
class Frame:
    """A URDF link as a frame: the body that carries it (-1: the root) and its fixed pose there."""

    body: int
    pose: np.ndarray  # 4x4, the link frame in the body frame
    parent: str = ""  # the parent link ('' for the root)
    fixed: bool = False  # attached to its parent by a fixed (or locked) joint
    inertial: np.ndarray = None  # (10,) the link's own inertial parameters about its origin (URDF <inertial>)


@dataclass(frozen=True, eq=False)
class RobotModel:
    """A fixed-base rigid-body tree built from a URDF; see the module docstring for the layout.

    Build it with :func:`robot_dynamics.load_urdf`; derive variants with :meth:`with_gravity`
    and :meth:`with_payload`.  Arrays are read-only.
    """

    name: str
    joint_names: tuple          # the independent coordinates, in model order
    joint_types: tuple          # 'revolute' | 'continuous' | 'prismatic' per coordinate
    link_names: tuple           # every URDF link, parents before children
    gravity: np.ndarray         # physical gravitational acceleration in the root frame
    position_limits: np.ndarray  # (nv, 2) lower, upper; +-inf where absent or continuous
    velocity_limits: np.ndarray  # (nv,); inf where absent
    effort_limits: np.ndarray    # (nv,); inf where absent
    damping: np.ndarray          # (nv,) URDF <dynamics damping>, N m s/rad or N s/m
    friction: np.ndarray         # (nv,) URDF <dynamics friction>, N m or N
    couplings: Mapping           # dependent joint -> (((independent joint, factor), ...), offset)
    body_joints: tuple           # every moving joint (mimic ones too), in body order
    topology: np.ndarray = field(repr=False)
    bodies: np.ndarray = field(repr=False)
    frames: Mapping = field(repr=False)
    armature: np.ndarray = None       # (nv,) reflected rotor inertia r^2 J_m, kg m^2 or kg; zeros by default
    motor_damping: np.ndarray = None  # (nv,) reflected motor damping r^2 B_m, N m s/rad or N s/m; zeros by default
    nv: int = field(init=False)  # number of independent coordinates, len(joint_names)
    # The compiled kernels' (topology, bodies, gravity): private writable copies of the read-only
    # arrays above, because numba checks a read-only argument on a slow path (a measured 0.25 us
    # per call for the three).  Set here only, never handed out, so nothing can change them.
    _kernel_arrays: tuple = field(init=False, repr=False)
    _kernel_armature: np.ndarray = field(init=False, repr=False)  # the same for ``armature``

    def __post_init__(self):
        object.__setattr__(self, "couplings", MappingProxyType(dict(self.couplings)))
        object.__setattr__(self, "frames", MappingProxyType(dict(self.frames)))
        object.__setattr__(self, "nv", len(self.joint_names))
        for name in ("armature", "motor_damping"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, read_only(np.zeros(self.nv)))
        object.__setattr__(self, "_kernel_arrays", (np.array(self.topology), np.array(self.bodies), np.array(self.gravity)))
        object.__setattr__(self, "_kernel_armature", np.array(self.armature))

    @property
    def mimic_joints(self):
        """The couplings that follow one coordinate, as URDF's ``<mimic>``: ``{joint: (master, multiplier, offset)}``."""
        return MappingProxyType({name: (terms[0][0], terms[0][1], offset)
                                 for name, (terms, offset) in self.couplings.items() if len(terms) == 1})

    def joint_map(self):
        """``(E, o)`` with ``q_joints = E q + o``: every moving joint's value (``body_joints`` order)
        from the coordinates (``joint_names`` order); so ``qd_joints = E qd`` and ``tau = E^T tau_joints``.

        >>> import robot_dynamics as rd
        >>> E, o = rd.load_urdf(rd.examples.TWO_LINK_URDF).joint_map()
        >>> E, o
        (array([[1., 0.],
               [0., 1.]]), array([0., 0.]))
        """
        E = np.zeros((len(self.body_joints), self.nv))
        for i, row in enumerate(self.topology):
            for m in range(row[MASTERS]):
                E[i, row[FIRST_MASTER + m]] += self.bodies[i, FIRST_FACTOR + m]
        return E, np.array(self.bodies[:, OFFSET])

    def with_gravity(self, gravity):
        """The same robot under another gravity vector (e.g. a wall or ceiling mounting).

        >>> import robot_dynamics as rd
        >>> arm = rd.load_urdf(rd.examples.PENDULUM_URDF)
        >>> arm.with_gravity([0, 0, -1.62]).gravity
        array([ 0.  ,  0.  , -1.62])
        """
        gravity = np.asarray(gravity, dtype=float)
        if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
            raise ValueError(f"gravity must be 3 finite numbers, got {gravity!r}")
        return replace(self, gravity=read_only(gravity))

    @cached_property  # (computed once: the dynamics node reads it for every joint state)
    def viscous_damping(self):
        """Each coordinate's viscous damping with its motor turning with it (a rigid joint):
        ``damping + motor_damping``, the joint's ``B`` plus the motor's reflected ``r^2 B_m`` (Spong
        Ex. 6.1). What the simulator applies and what a drive must add to compensate."""
        return read_only(self.damping + self.motor_damping)  # read-only like every array of the model

    @cached_property
    def continuous(self):
        """Bool per coordinate: a continuous joint (one angle, no limits; its position errors wrap,
        :func:`robot_dynamics.control.laws.position_error`)."""
        return read_only([kind == "continuous" for kind in self.joint_types], dtype=bool)

    def with_armature(self, armature, motor_damping=None):
        """The same robot with the reflected rotor inertia ``armature`` (``r^2 J_m``, Spong Ex. 6.1).

        ``armature`` (and ``motor_damping``, ``r^2 B_m``, if given) is a dict by joint name (the
        joints not named keep their value) or an ``(nv,)`` array; kg m^2 (kg for a prismatic joint).

        >>> import robot_dynamics as rd
        >>> arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
        >>> arm.with_armature({"elbow": 0.2}).armature
        array([0. , 0.2])
        """
        changes = {"armature": self._per_joint(armature, self.armature, "armature")}
        if motor_damping is not None:
            changes["motor_damping"] = self._per_joint(motor_damping, self.motor_damping, "motor_damping")
        return replace(self, **changes)

    def _per_joint(self, values, current, what):
        """A read-only (nv,) array of finite, non-negative ``values`` (a dict by joint name or a sequence)."""
        if isinstance(values, Mapping):
            unknown = sorted(set(values) - set(self.joint_names))
            if unknown:
                raise ValueError(f"{what} names unknown joints {unknown}; the joints are {list(self.joint_names)}")
            array = np.array(current, dtype=float)
            for name, value in values.items():
                array[self.joint_names.index(name)] = value
        else:
            array = np.asarray(values, dtype=float)
            if array.shape != (self.nv,):
                raise ValueError(f"{what} must have {self.nv} values ({', '.join(self.joint_names)}), got shape {array.shape}")
        if not (np.all(np.isfinite(array)) and np.all(array >= 0)):
            raise ValueError(f"{what} must be finite and non-negative, got {array.tolist()}")
        return read_only(array)

    def with_payload(self, link, mass, com, inertia):
        """The same robot carrying a rigid payload fixed to ``link``.

        ``com`` is the payload's centre of mass in the link frame; ``inertia`` its inertia about
        that centre of mass in the link's axes, as a 3x3 matrix or the six URDF values
        ``ixx, ixy, ixz, iyy, iyz, izz``.  Equivalent to a URDF with the payload as an extra link
        on a fixed joint.

        >>> import robot_dynamics as rd
        >>> arm = rd.load_urdf(rd.examples.PENDULUM_URDF)
        >>> heavier = arm.with_payload("link", 0.5, [0, 0, -1], [0] * 6)
        >>> (rd.gravity_torques(heavier, [0.3]) - rd.gravity_torques(arm, [0.3])).round(4)  # 0.5 g sin 0.3
        array([1.4495])
        """
        if link not in self.frames:
            raise ValueError(f"unknown link {link!r} for the payload")
        inertia = np.asarray(inertia, dtype=float)
        if inertia.shape == (6,):
            xx, xy, xz, yy, yz, zz = inertia
            inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        com = np.asarray(com, dtype=float)
        if inertia.shape != (3, 3) or com.shape != (3,):
            raise ValueError("payload com must have 3 values and inertia 6 values or 3x3")
        if not (np.isfinite(mass) and mass >= 0 and np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
            raise ValueError(f"payload on {link!r} must have a finite, non-negative mass and finite com/inertia")
        if not np.allclose(inertia, inertia.T) or np.linalg.eigvalsh(inertia).min() < -1e-12 * max(1.0, abs(inertia).max()):
            raise ValueError(f"payload inertia on {link!r} must be symmetric positive semi-definite")
        frame = self.frames[link]
        if frame.body < 0:
            return self  # welded to the fixed base: no effect on the dynamics
        in_link = inertial_parameters_about_origin(mass, com, inertia)
        bodies = np.array(self.bodies)
        bodies[frame.body, INERTIAL_PARAMETERS] += move_inertial_parameters(in_link, frame.pose[:3, :3], frame.pose[:3, 3])
        return replace(self, bodies=read_only(bodies))
