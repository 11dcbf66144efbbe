"""Shared helpers for the core tests: robot files, random URDF trees, and the Pinocchio oracle.

Nothing here imports ``robot_dynamics``: the helpers describe the robots independently (a small
``xml.etree`` reading of the URDF) so that a bug in the package cannot hide in its own test oracle.

- :func:`erd_path` finds an example-robot-data URDF (the ``example_robot_data`` Python module is
  not importable; the files live under the cmeel prefix of the wheel).
- :func:`parse_urdf` reads joint types, limits and mimic tags straight from the XML.
- :func:`random_tree_urdf` writes random kinematic trees (branching, every joint type, rotated
  origins and inertias, absent and unnormalised axes, massless links, mimic joints).
- :class:`PinOracle` wraps a Pinocchio model and converts between its joint order / continuous
  (cos, sin) coordinates / [linear; angular] rows and ours (model order, one angle,
  [angular; linear]).
- :class:`MimicExpansion` maps the independent coordinates of a mimic model to every moving joint.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.tools.benchmarks.robots import ROBOT_FILES, example_robot_path

# --------------------------------------------------------------------------------------------
# example-robot-data
# --------------------------------------------------------------------------------------------

#: The robots of example-robot-data usable with a fixed base, and their URDF files.
ERD_ROBOTS = ROBOT_FILES

#: Robots whose URDF has <mimic> tags on moving joints.
ERD_MIMIC_ROBOTS = ("panda", "baxter", "pr2", "talos_full_v2")


def erd_path(robot: str) -> str:
    return str(example_robot_path(robot))


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# --------------------------------------------------------------------------------------------
# independent URDF reading
# --------------------------------------------------------------------------------------------


@dataclass
class JointInfo:
    name: str
    type: str
    parent: str
    child: str
    lower: float = -math.inf
    upper: float = math.inf
    mimic: tuple | None = None  # (master, multiplier, offset)


@dataclass
class UrdfInfo:
    name: str
    links: list
    joints: dict = field(default_factory=dict)  # name -> JointInfo, declaration order
    masses: dict = field(default_factory=dict)  # link -> mass (links with <inertial>)

    @property
    def moving(self):
        return [j for j in self.joints.values() if j.type in ("revolute", "continuous", "prismatic")]

    def independent(self, mimic: bool):
        """Names of the coordinates: every moving joint, or only the non-mimic ones."""
        return [j.name for j in self.moving if not (mimic and j.mimic is not None)]

    def root(self):
        children = {j.child for j in self.joints.values()}
        roots = [name for name in self.links if name not in children]
        assert len(roots) == 1, roots
        return roots[0]


def parse_urdf(source: str) -> UrdfInfo:
    """Joint types, limits and mimic tags of a URDF path or XML string (no defaults beyond spec)."""
    text = source if source.lstrip().startswith("<") else read_text(source)
    root = ET.fromstring(text)
    info = UrdfInfo(name=root.get("name"), links=[link.get("name") for link in root.findall("link")])
    for link in root.findall("link"):
        inertial = link.find("inertial")
        if inertial is not None:
            info.masses[link.get("name")] = float(inertial.find("mass").get("value"))
    for j in root.findall("joint"):
        ji = JointInfo(j.get("name"), j.get("type"), j.find("parent").get("link"), j.find("child").get("link"))
        lim = j.find("limit")
        if ji.type in ("revolute", "prismatic") and lim is not None:
            ji.lower = float(lim.get("lower", 0.0))
            ji.upper = float(lim.get("upper", 0.0))
        m = j.find("mimic")
        if m is not None and ji.type != "fixed":
            ji.mimic = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))
        info.joints[ji.name] = ji
    return info


def sample_q(rng, info: UrdfInfo, names, n_states: int) -> np.ndarray:
    """Random positions: uniform within finite limits, else uniform in [-pi, pi]."""
    out = np.empty((n_states, len(names)))
    for k, name in enumerate(names):
        j = info.joints[name]
        lo, hi = j.lower, j.upper
        if j.type == "continuous" or not (np.isfinite(lo) and np.isfinite(hi)) or hi < lo:
            lo, hi = -math.pi, math.pi
        out[:, k] = rng.uniform(lo, hi, n_states)
    return out


def random_states(rng, info, names, n_states):
    q = sample_q(rng, info, names, n_states)
    n = len(names)
    return q, rng.standard_normal((n_states, n)), rng.standard_normal((n_states, n))


# --------------------------------------------------------------------------------------------
# small rotation helpers (URDF rpy convention: R = Rz(yaw) Ry(pitch) Rx(roll))
# --------------------------------------------------------------------------------------------


def rpy_to_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def matrix_to_rpy(R) -> np.ndarray:
    """Inverse of :func:`rpy_to_matrix` (at pitch = +-pi/2 the roll is taken as 0)."""
    if abs(R[2, 0]) > 1.0 - 1e-12:
        return np.array([0.0, -math.copysign(math.pi / 2, R[2, 0]), math.atan2(-R[0, 1], R[1, 1])])
    pitch = math.asin(-R[2, 0])
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return np.array([roll, pitch, yaw])


def random_rotation(rng) -> np.ndarray:
    q = rng.standard_normal(4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def fmt(values) -> str:
    return " ".join(repr(float(v)) for v in values)


_SIX = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))


def inertia_attrs(inertia) -> str:
    i = np.asarray(inertia, dtype=float)
    return " ".join(
        f'{key}="{float(i[r, c])!r}"'
        for key, (r, c) in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), _SIX)
    )


def inertial_xml(mass, xyz=(0, 0, 0), rpy=(0, 0, 0), inertia=np.zeros((3, 3))) -> str:
    return (
        f'<inertial><origin xyz="{fmt(xyz)}" rpy="{fmt(rpy)}"/><mass value="{float(mass)!r}"/>'
        f"<inertia {inertia_attrs(inertia)}/></inertial>"
    )


def random_inertia(rng, rotate=True) -> np.ndarray:
    """A physically valid rotational inertia (principal moments obey the triangle inequality)."""
    a, b, c = rng.uniform(0.005, 0.08, 3)
    principal = np.diag([b + c, a + c, a + b])
    if not rotate:
        return principal
    R = random_rotation(rng)
    return R @ principal @ R.T


# --------------------------------------------------------------------------------------------
# random trees
# --------------------------------------------------------------------------------------------


def random_tree_urdf(
    seed: int,
    n_links: int = 8,
    *,
    n_mimic: int = 1,
    prismatic: bool = True,
    continuous: bool = True,
    fixed: bool = True,
    massless: bool = True,
    root_inertial: bool | None = None,
    mimic_ancestor_only: bool = True,
    shuffle: bool = False,
    name: str | None = None,
) -> str:
    """A random URDF tree.

    Link ``l0`` is the root; link ``li`` hangs from a random earlier link (so trees branch).
    Joints are revolute / continuous / prismatic / fixed with random origins (xyz and rpy) and
    random axes (some unnormalised, some absent => URDF default 1 0 0).  Inertials have random
    origins with rpy and full (rotated) tensors; some inner links have no <inertial> at all, leaves
    always have one so no moving joint carries a massless subtree.  ``n_mimic`` moving joints
    mimic another moving joint of the same type (an ancestor when ``mimic_ancestor_only``, as
    Pinocchio requires) with a random multiplier and offset.  ``shuffle`` declares links and
    joints in random order.
    """
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, n_links)]
    has_child = {p for p in parents if p >= 0}
    kinds = ["revolute"] * 5 + ["continuous"] * (2 if continuous else 0)
    kinds += ["prismatic"] * (2 if prismatic else 0) + ["fixed"] * (2 if fixed else 0)

    link_xml = {}
    for i in range(n_links):
        want = True
        if i == 0:
            want = bool(rng.integers(0, 2)) if root_inertial is None else root_inertial
        elif massless and i in has_child and rng.uniform() < 0.3:
            want = False
        if want:
            body = inertial_xml(
                rng.uniform(0.2, 3.0),
                rng.uniform(-0.3, 0.3, 3),
                rng.uniform(-math.pi, math.pi, 3),
                random_inertia(rng),
            )
        else:
            body = ""
        link_xml[i] = f'<link name="l{i}">{body}</link>'

    joints = {}
    for i in range(1, n_links):
        kind = kinds[int(rng.integers(0, len(kinds)))]
        joints[i] = {"kind": kind, "parent": parents[i]}
    # Make sure there is something to move.
    if all(j["kind"] == "fixed" for j in joints.values()) and n_links > 1:
        joints[1]["kind"] = "revolute"

    def ancestors(i):
        out = []
        while parents[i] > 0:
            i = parents[i]
            out.append(i)
        return out

    mimics = {}
    moving = [i for i in joints if joints[i]["kind"] != "fixed"]
    candidates = list(moving)
    rng.shuffle(candidates)
    for i in candidates:
        if len(mimics) >= n_mimic:
            break
        pool = ancestors(i) if mimic_ancestor_only else [k for k in moving if k != i]
        pool = [
            k
            for k in pool
            if joints[k]["kind"] != "fixed"
            and k not in mimics
            and joints[k]["kind"] == joints[i]["kind"]
        ]
        # a master never mimics, a mimic is never a master
        pool = [k for k in pool if k not in mimics.values()]
        if not pool or i in mimics.values():
            continue
        mimics[i] = int(pool[int(rng.integers(0, len(pool)))])

    joint_xml = {}
    for i, j in joints.items():
        kind = j["kind"]
        parts = [
            f'<joint name="j{i}" type="{kind}">',
            f'<parent link="l{j["parent"]}"/><child link="l{i}"/>',
            f'<origin xyz="{fmt(rng.uniform(-0.5, 0.5, 3))}" rpy="{fmt(rng.uniform(-math.pi, math.pi, 3))}"/>',
        ]
        if kind != "fixed":
            r = rng.uniform()
            if r < 0.15:
                pass  # absent axis: URDF default (1, 0, 0)
            else:
                axis = rng.standard_normal(3)
                axis /= np.linalg.norm(axis)
                if r < 0.4:
                    axis *= rng.uniform(0.3, 3.0)
                parts.append(f'<axis xyz="{fmt(axis)}"/>')
        if kind == "revolute":
            lo, hi = -rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0)
            parts.append(f'<limit lower="{float(lo)!r}" upper="{float(hi)!r}" effort="50" velocity="3"/>')
        elif kind == "prismatic":
            lo, hi = -rng.uniform(0.1, 1.0), rng.uniform(0.1, 1.0)
            parts.append(f'<limit lower="{float(lo)!r}" upper="{float(hi)!r}" effort="100" velocity="1"/>')
        elif kind == "continuous" and rng.uniform() < 0.5:
            parts.append('<limit effort="20" velocity="4"/>')
        if i in mimics:
            parts.append(
                f'<mimic joint="j{mimics[i]}" multiplier="{float(rng.uniform(-2, 2))!r}"'
                f' offset="{float(rng.uniform(-0.3, 0.3))!r}"/>'
            )
        parts.append("</joint>")
        joint_xml[i] = "".join(parts)

    order_links = list(range(n_links))
    order_joints = list(joints)
    if shuffle:
        rng.shuffle(order_links)
        rng.shuffle(order_joints)
    body = "\n".join([link_xml[i] for i in order_links] + [joint_xml[i] for i in order_joints])
    return f'<?xml version="1.0"?>\n<robot name="{name or f"tree{seed}"}">\n{body}\n</robot>\n'


def leaf_links(info: UrdfInfo):
    parents = {j.parent for j in info.joints.values()}
    return [name for name in info.links if name not in parents]


# --------------------------------------------------------------------------------------------
# mimic expansion
# --------------------------------------------------------------------------------------------


class MimicExpansion:
    """q_full = G q + o for every moving joint, from the independent coordinates of a mimic model.

    With ``independent`` = every moving joint (a model loaded with mimic=False) G is the identity.
    """

    def __init__(self, info: UrdfInfo, independent):
        self.independent = list(independent)
        self.full = [j.name for j in info.moving]
        col = {name: k for k, name in enumerate(self.independent)}
        self.G = np.zeros((len(self.full), len(self.independent)))
        self.o = np.zeros(len(self.full))
        for r, name in enumerate(self.full):
            mult, off = 1.0, 0.0
            seen = set()
            while name not in col:  # q_name = m q_master + c, chains resolved
                assert name not in seen, f"mimic cycle through {name}"
                seen.add(name)
                master, m, c = info.joints[name].mimic
                mult, off = mult * m, off + mult * c
                name = master
            self.G[r, col[name]] = mult
            self.o[r] = off

    def q(self, q):
        return np.asarray(q) @ self.G.T + self.o

    def v(self, qd):
        return np.asarray(qd) @ self.G.T


# --------------------------------------------------------------------------------------------
# Pinocchio oracle
# --------------------------------------------------------------------------------------------


def _swap_rows(J):
    """Pinocchio's [linear; angular] rows -> ours [angular; linear]."""
    return np.concatenate([J[3:6], J[0:3]], axis=0)


class PinOracle:
    """Pinocchio evaluated in our joint order and conventions.

    ``names`` are our coordinates in our order.  Every one of them must be a Pinocchio joint with
    one velocity; continuous joints (nq = 2) get (cos, sin) of our angle.
    """

    def __init__(self, source: str, names, *, mimic: bool = False):
        import pinocchio as pin

        self.pin = pin
        if source.lstrip().startswith("<"):
            self.model = pin.buildModelFromXML(source, mimic=mimic)
        else:
            self.model = pin.buildModelFromUrdf(source, mimic=mimic)
        self.mimic = mimic
        self._shared_data = self.model.createData()
        self.names = list(names)
        m = self.model
        self.idx_q, self.nq, self.idx_v = [], [], []
        for name in self.names:
            assert m.existJointName(name), f"pinocchio has no joint {name!r}"
            jm = m.joints[m.getJointId(name)]
            assert jm.nv == 1, f"{name}: pinocchio nv = {jm.nv}"
            self.idx_q.append(jm.idx_q)
            self.nq.append(jm.nq)
            self.idx_v.append(jm.idx_v)
        assert sorted(self.idx_v) == list(range(m.nv)), "our coordinates do not cover pinocchio's"
        self.perm = np.array(self.idx_v)

    @property
    def data(self):
        return self._shared_data

    # conversions ------------------------------------------------------------------------------
    def q(self, q):
        out = self.pin.neutral(self.model)
        for k, (iq, nq) in enumerate(zip(self.idx_q, self.nq)):
            if nq == 1:
                out[iq] = q[k]
            else:
                out[iq] = math.cos(q[k])
                out[iq + 1] = math.sin(q[k])
        return out

    def v(self, qd):
        out = np.zeros(self.model.nv)
        out[self.perm] = qd
        return out

    def ours(self, vec):
        return np.asarray(vec)[self.perm]

    def ours_mat(self, mat):
        return np.asarray(mat)[np.ix_(self.perm, self.perm)]

    def ours_cols(self, mat):
        return np.asarray(mat)[:, self.perm]

    def frame_id(self, link):
        fid = self.model.getFrameId(link, self.pin.FrameType.BODY)
        assert fid < self.model.nframes, f"pinocchio has no BODY frame {link!r}"
        return fid

    def body_frames(self):
        return [f.name for f in self.model.frames if f.type == self.pin.FrameType.BODY]

    # quantities in our conventions --------------------------------------------------------------
    def rnea(self, q, qd, qdd):
        return self.ours(self.pin.rnea(self.model, self.data, self.q(q), self.v(qd), self.v(qdd)))

    def gravity(self, q):
        return self.ours(self.pin.computeGeneralizedGravity(self.model, self.data, self.q(q)))

    def bias(self, q, qd):
        return self.ours(self.pin.rnea(self.model, self.data, self.q(q), self.v(qd), np.zeros(self.model.nv)))

    def mass_matrix(self, q):
        # Pinocchio 4.1's crba in mimic mode accumulates into a reused Data (a second call on the
        # same Data returns a different M): mimic models get a fresh Data.
        data = self.model.createData() if self.mimic else self.data
        M = self.pin.crba(self.model, data, self.q(q)).copy()
        M = np.triu(M) + np.triu(M, 1).T
        return self.ours_mat(M)

    def coriolis_times_qd(self, q, qd):
        C = self.pin.computeCoriolisMatrix(self.model, self.data, self.q(q), self.v(qd))
        return self.ours(C @ self.v(qd))

    def aba(self, q, qd, tau):
        return self.ours(self.pin.aba(self.model, self.data, self.q(q), self.v(qd), self.v(tau)))

    def frame_pose(self, q, link):
        data = self.data
        self.pin.framesForwardKinematics(self.model, data, self.q(q))
        return data.oMf[self.frame_id(link)].homogeneous.copy()

    def jacobian(self, q, link, reference):
        pin = self.pin
        ref = {"world": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED, "local": pin.ReferenceFrame.LOCAL}[reference]
        J = pin.computeFrameJacobian(self.model, self.data, self.q(q), self.frame_id(link), ref)
        return self.ours_cols(_swap_rows(J))

    def kinetic_energy(self, q, qd):
        return float(self.pin.computeKineticEnergy(self.model, self.data, self.q(q), self.v(qd)))

    def potential_energy(self, q):
        return float(self.pin.computePotentialEnergy(self.model, self.data, self.q(q)))


#: the largest error/tolerance ratio seen by assert_close in this process, and where (diagnostics)
WORST_MARGIN = [0.0, ""]


def assert_close(actual, expected, what="", rtol=1e-9):
    """max |a - e| <= rtol * (1 + |e|), elementwise, with a useful message."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    err = np.abs(actual - expected)
    bound = rtol * (1.0 + np.abs(expected))
    if err.size:
        ratio = float(np.nanmax(err / bound)) if not np.isnan(err).any() else math.inf
        if ratio > WORST_MARGIN[0]:
            WORST_MARGIN[:] = [ratio, what]
    if not np.all(err <= bound):  # also catches NaN
        k = np.unravel_index(np.argmax(np.where(np.isnan(err), np.inf, err / bound)), err.shape)
        raise AssertionError(
            f"{what}: max error {np.nanmax(err):.3e} (worst at {k}: got {actual[k]!r}, want {expected[k]!r});"
            f" tolerance {rtol:g}*(1+|value|)"
        )


def expected_joint_order(info: UrdfInfo, mimic: bool):
    """Our documented coordinate order: depth-first from the root, children in URDF declaration order."""
    independent = set(info.independent(mimic))
    out = []
    by_parent = {}
    for j in info.joints.values():
        by_parent.setdefault(j.parent, []).append(j)
    # explicit pre-order depth-first traversal
    stack = [(info.root(), 0)]
    while stack:
        link, k = stack.pop()
        children = by_parent.get(link, [])
        if k < len(children):
            stack.append((link, k + 1))
            j = children[k]
            if j.name in independent:
                out.append(j.name)
            stack.append((j.child, 0))
    return out


def massless_subtree_joints(info: UrdfInfo):
    """Moving joints whose whole subtree carries no mass."""
    by_parent = {}
    for j in info.joints.values():
        by_parent.setdefault(j.parent, []).append(j)

    def mass(link):
        return info.masses.get(link, 0.0) + sum(mass(j.child) for j in by_parent.get(link, []))

    return [j.name for j in info.moving if mass(j.child) == 0.0]
