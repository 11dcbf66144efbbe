"""Algorithm-against-algorithm identities on random URDF trees (no outside oracle needed).

The trees (robot_files.random_tree_urdf) branch, mix revolute / continuous / prismatic / fixed
joints, rotate joint origins and inertial frames, leave some axes out (default 1 0 0) or
unnormalised, drop <inertial> on some inner links, carry mimic joints (masters anywhere in the
tree, declaration order shuffled), and some have root-link inertia.

Tolerances: exact identities 1e-9 * (1 + |value|); identities through finite differences
(dM/dt, dP/dq) 1e-6 * (1 + |value|).
"""

import math

import numpy as np
import pytest

import robot_dynamics as rd

import robot_files as rf  # noqa: E402
from robot_files import assert_close  # noqa: E402

SEEDS = list(range(100, 110))
N_STATES = 10


def tree(seed):
    xml = rf.random_tree_urdf(
        seed, n_links=3 + seed % 8, n_mimic=seed % 3, mimic_ancestor_only=False, shuffle=seed % 2 == 0
    )
    return xml, rf.parse_urdf(xml), rd.load_urdf(xml)


def states(info, model, seed, n=N_STATES):
    return rf.random_states(np.random.default_rng(seed), info, list(model.joint_names), n)


@pytest.fixture(params=SEEDS, ids=lambda s: f"tree{s}")
def case(request):
    xml, info, model = tree(request.param)
    q, qd, qdd = states(info, model, request.param)
    return xml, info, model, q, qd, qdd


def test_generator_covers_the_features():
    """The random trees really contain every feature the identities are meant to cover."""
    text = "".join(tree(s)[0] for s in SEEDS)
    for kind in ("revolute", "continuous", "prismatic", "fixed"):
        assert f'type="{kind}"' in text, kind
    assert "<mimic" in text
    infos = [tree(s)[1] for s in SEEDS]
    assert any(len(set(j.parent for j in i.joints.values())) < len(i.joints) for i in infos), "no branching"
    assert any(len(i.masses) < len(i.links) for i in infos), "no massless link"
    models = [tree(s)[2] for s in SEEDS]
    assert any(m.mimic_joints for m in models)


def test_forward_inverts_inverse(case):
    xml, info, model, q, qd, qdd = case
    tau_rand = np.random.default_rng(1).standard_normal(q.shape)
    for k in range(len(q)):
        tau = rd.inverse_dynamics(model, q[k], qd[k], qdd[k])
        assert_close(rd.forward_dynamics(model, q[k], qd[k], tau), qdd[k], f"fd(id(qdd)) state {k}")
        a = rd.forward_dynamics(model, q[k], qd[k], tau_rand[k])
        scale = 1.0 + np.abs(a).max()
        assert_close(rd.inverse_dynamics(model, q[k], qd[k], a) / scale, tau_rand[k] / scale, f"id(fd(tau)) {k}")


def test_mass_matrix_columns_are_inverse_dynamics(case):
    xml, info, model, q, qd, qdd = case
    free = model.with_gravity([0.0, 0.0, 0.0])
    n = model.nv
    for k in range(len(q)):
        M = rd.mass_matrix(model, q[k])
        for i in range(n):
            e = np.zeros(n)
            e[i] = 1.0
            assert_close(M[:, i], rd.inverse_dynamics(free, q[k], np.zeros(n), e), f"column {i}, state {k}")
        assert_close(M, M.T, "symmetry")
        assert np.linalg.eigvalsh(M).min() > 0, "M must be positive definite"
        # the decomposition tau = M qdd + h, h = C qd + g
        h = rd.bias_forces(model, q[k], qd[k])
        g = rd.gravity_torques(model, q[k])
        assert_close(rd.inverse_dynamics(model, q[k], qd[k], qdd[k]), M @ qdd[k] + h, f"tau = M qdd + h, {k}")
        assert_close(g, rd.inverse_dynamics(model, q[k], np.zeros(n), np.zeros(n)), f"g = ID(q,0,0), {k}")
        assert_close(h, rd.inverse_dynamics(model, q[k], qd[k], np.zeros(n)), f"h = ID(q,qd,0), {k}")


def test_coriolis_matrix_properties(case):
    xml, info, model, q, qd, qdd = case
    eps = 1e-6
    for k in range(len(q)):
        C = rd.coriolis_matrix(model, q[k], qd[k])
        h = rd.bias_forces(model, q[k], qd[k])
        g = rd.gravity_torques(model, q[k])
        assert_close(C @ qd[k], h - g, f"C qd = h - g, state {k}")
        dM = (rd.mass_matrix(model, q[k] + eps * qd[k]) - rd.mass_matrix(model, q[k] - eps * qd[k])) / (2 * eps)
        S = dM - 2 * C
        assert_close(S + S.T, np.zeros_like(S), f"dM/dt - 2C skew, state {k}", rtol=1e-6)
        # C is linear in qd
        assert_close(rd.coriolis_matrix(model, q[k], 2.5 * qd[k]), 2.5 * C, "C linear in qd")


def test_energies(case):
    xml, info, model, q, qd, qdd = case
    eps = 1e-6
    n = model.nv
    for k in range(len(q)):
        M = rd.mass_matrix(model, q[k])
        assert_close(rd.kinetic_energy(model, q[k], qd[k]), 0.5 * qd[k] @ M @ qd[k], f"K, state {k}")
        grad = np.array(
            [
                (rd.potential_energy(model, q[k] + eps * e) - rd.potential_energy(model, q[k] - eps * e)) / (2 * eps)
                for e in np.eye(n)
            ]
        )
        assert_close(grad, rd.gravity_torques(model, q[k]), f"dP/dq = g, state {k}", rtol=1e-6)
    # energy balance along qdd = fd(q, qd, 0): d(K + P)/dt = 0 with no torque
    q0, v0 = q[0], qd[0]
    a0 = rd.forward_dynamics(model, q0, v0, np.zeros(n))
    h = 1e-5

    def energy(t):
        qq = q0 + t * v0 + 0.5 * t * t * a0
        return rd.kinetic_energy(model, qq, v0 + t * a0) + rd.potential_energy(model, qq)

    power = (energy(h) - energy(-h)) / (2 * h)
    scale = 1.0 + abs(rd.kinetic_energy(model, q0, v0)) + np.abs(rd.gravity_torques(model, q0) @ v0)
    assert abs(power) / scale < 1e-6, f"unforced motion changes the energy at rate {power}"


def test_regressor(case):
    xml, info, model, q, qd, qdd = case
    theta = rd.inertial_parameters(model)
    bodies = len(model.body_joints)
    assert theta.shape == (10 * bodies + model.nv,)  # ten per body, then one rotor inertia per coordinate
    for k in range(len(q)):
        Y = rd.regressor(model, q[k], qd[k], qdd[k])
        assert Y.shape == (model.nv, theta.size)
        assert_close(Y @ theta, rd.inverse_dynamics(model, q[k], qd[k], qdd[k]), f"Y theta = tau, state {k}")
    # the total mass of the moving bodies is in theta (every 10th entry is a body mass)
    root = info.root()
    welded = {root}
    changed = True
    while changed:
        changed = False
        for j in info.joints.values():
            if j.type == "fixed" and j.parent in welded and j.child not in welded:
                welded.add(j.child)
                changed = True
    moving_mass = sum(m for link, m in info.masses.items() if link not in welded)
    assert_close(theta[:10 * bodies:10].sum(), moving_mass, "sum of body masses")
    # Y does not depend on the inertial parameters: a payload changes theta, not Y
    link = [name for name in model.link_names if name not in welded][-1]
    heavy = model.with_payload(link, 1.7, [0.1, -0.2, 0.05], np.diag([0.01, 0.02, 0.03]))
    theta2 = rd.inertial_parameters(heavy)
    assert_close(theta2[:10 * bodies:10].sum(), moving_mass + 1.7, "payload mass in theta")
    Y = rd.regressor(model, q[0], qd[0], qdd[0])
    assert_close(rd.regressor(heavy, q[0], qd[0], qdd[0]), Y, "Y independent of theta")
    assert_close(Y @ theta2, rd.inverse_dynamics(heavy, q[0], qd[0], qdd[0]), "Y theta' = tau'")
    # the rotors too: their column is qdd, their parameter the armature
    geared = model.with_armature(np.linspace(0.1, 0.9, model.nv))
    theta3 = rd.inertial_parameters(geared)
    assert_close(theta3[10 * bodies:], geared.armature, "armature in theta")
    assert_close(rd.regressor(geared, q[0], qd[0], qdd[0]), Y, "Y independent of the armature")
    assert_close(Y @ theta3, rd.inverse_dynamics(geared, q[0], qd[0], qdd[0]), "Y theta = tau with armature")
    assert_close(Y[:, 10 * bodies:], np.diag(qdd[0]), "the armature's columns are qdd")


# ------------------------------------------------------------------------------------------------
# batches
# ------------------------------------------------------------------------------------------------


def _calls(model, link):
    return {
        "inverse_dynamics": (lambda q, qd, a: rd.inverse_dynamics(model, q, qd, a), ()),
        "gravity_torques": (lambda q, qd, a: rd.gravity_torques(model, q), ()),
        "bias_forces": (lambda q, qd, a: rd.bias_forces(model, q, qd), ()),
        "mass_matrix": (lambda q, qd, a: rd.mass_matrix(model, q), ()),
        "coriolis_matrix": (lambda q, qd, a: rd.coriolis_matrix(model, q, qd), ()),
        "forward_dynamics": (lambda q, qd, a: rd.forward_dynamics(model, q, qd, a), ()),
        "frame_pose": (lambda q, qd, a: rd.frame_pose(model, q, link), ()),
        "jacobian_world": (lambda q, qd, a: rd.jacobian(model, q, link, reference="world"), ()),
        "jacobian_local": (lambda q, qd, a: rd.jacobian(model, q, link, reference="local"), ()),
        "kinetic_energy": (lambda q, qd, a: rd.kinetic_energy(model, q, qd), ()),
        "potential_energy": (lambda q, qd, a: rd.potential_energy(model, q), ()),
        "regressor": (lambda q, qd, a: rd.regressor(model, q, qd, a), ()),
        "inverse_dynamics_wrench": (
            lambda q, qd, a: rd.inverse_dynamics(model, q, qd, a, external_wrenches={link: [0.1, -0.2, 0.3, 1, 2, -3]}),
            (),
        ),
        "forward_dynamics_wrench": (
            lambda q, qd, a: rd.forward_dynamics(model, q, qd, a, external_wrenches={link: [0.1, -0.2, 0.3, 1, 2, -3]}),
            (),
        ),
    }


BATCH_FUNCTIONS = list(_calls(None, None))


@pytest.mark.parametrize("function", BATCH_FUNCTIONS)
@pytest.mark.parametrize("batch", [(6,), (2, 3)], ids=["N", "2x3"])
def test_batch_equals_loop(function, batch):
    xml, info, model = tree(127)  # 10 links, 8 coordinates, a mimic joint
    assert model.nv >= 5 and model.mimic_joints
    link = rf.leaf_links(info)[0]
    call, _ = _calls(model, link)[function]
    n = model.nv
    count = int(np.prod(batch))
    q, qd, a = states(info, model, 9, count)
    out = call(q.reshape(batch + (n,)), qd.reshape(batch + (n,)), a.reshape(batch + (n,)))
    singles = np.array([call(q[k], qd[k], a[k]) for k in range(count)])
    assert np.shape(out) == batch + singles.shape[1:], f"{function}: batch shape {np.shape(out)}"
    assert_close(np.reshape(out, (count,) + singles.shape[1:]), singles, function)


@pytest.mark.parametrize("batch", [(6,), (2, 3)], ids=["N", "2x3"])
def test_operational_space_inertia_batch(batch):
    model = rd.load_urdf(rf.erd_path("ur5"))
    q = np.random.default_rng(2).uniform(-2.5, 2.5, (6, model.nv))
    out = rd.operational_space_inertia(model, q.reshape(batch + (model.nv,)), "tool0")
    assert out.shape == batch + (6, 6)
    out = out.reshape(6, 6, 6)
    for k in range(6):
        single = rd.operational_space_inertia(model, q[k], "tool0")
        scale = np.abs(single).max()
        assert_close(out[k] / scale, single / scale, f"state {k}")


# ------------------------------------------------------------------------------------------------
# external wrenches, payloads, gravity, operational space
# ------------------------------------------------------------------------------------------------


def test_external_wrenches(case):
    xml, info, model, q, qd, qdd = case
    rng = np.random.default_rng(3)
    links = list(model.link_names)
    for k in range(len(q)):
        chosen = [links[i] for i in rng.choice(len(links), size=min(3, len(links)), replace=False)]
        wrenches = {link: rng.standard_normal(6) for link in chosen}
        expected = rd.inverse_dynamics(model, q[k], qd[k], qdd[k])
        for link, F in wrenches.items():
            expected = expected - rd.jacobian(model, q[k], link, reference="world").T @ F
        tau = rd.inverse_dynamics(model, q[k], qd[k], qdd[k], external_wrenches=wrenches)
        assert_close(tau, expected, f"ID with wrenches on {chosen}, state {k}")
        assert_close(
            rd.forward_dynamics(model, q[k], qd[k], tau, external_wrenches=wrenches), qdd[k], f"FD with wrenches {k}"
        )


def test_external_wrench_is_a_real_force():
    """A 1 kg point mass on a prismatic z joint: an upward force m g holds it; τ = m (a - g_z) - F_z."""
    xml = f"""<robot name="slider"><link name="world"/>
      <link name="slide">{rf.inertial_xml(1.0, (0.3, 0, 0))}</link>
      <joint name="z" type="prismatic"><parent link="world"/><child link="slide"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="100" velocity="1"/></joint></robot>"""
    model = rd.load_urdf(xml)
    tau = rd.inverse_dynamics(model, [0.2], [0.0], [0.0], external_wrenches={"slide": [0, 0, 0, 0, 0, 9.81]})
    assert_close(tau, [0.0], "holding force supplied by the environment")
    assert_close(rd.gravity_torques(model, [0.2]), [9.81], "holding force is +m g")
    # a moment about the x axis at the link origin does nothing to a z slider
    tau = rd.inverse_dynamics(model, [0.2], [0.0], [1.0], external_wrenches={"slide": [5.0, 0, 0, 0, 0, 0]})
    assert_close(tau, [1.0 + 9.81], "pure moment")


def payload_urdf(xml, link, mass, com, inertia, rpy=(0.0, 0.0, 0.0), joint_rpy=(0.0, 0.0, 0.0)):
    """The same robot with the payload as an extra link on a fixed joint."""
    extra = (
        f'<link name="payload_link">{rf.inertial_xml(mass, com, rpy, inertia)}</link>'
        f'<joint name="payload_joint" type="fixed"><parent link="{link}"/><child link="payload_link"/>'
        f'<origin xyz="0 0 0" rpy="{rf.fmt(joint_rpy)}"/></joint></robot>'
    )
    return xml.replace("</robot>", extra)


@pytest.mark.parametrize("form", ["3x3", "six"])
def test_with_payload_equals_fixed_link(form):
    rng = np.random.default_rng(5)
    for seed in SEEDS[:5]:
        xml, info, model = tree(seed)
        for link in model.link_names:
            mass, com, inertia = rng.uniform(0.1, 2.0), rng.uniform(-0.3, 0.3, 3), rf.random_inertia(rng)
            arg = inertia if form == "3x3" else [inertia[r, c] for r, c in rf._SIX]
            loaded = model.with_payload(link, mass, com, arg)
            # the reference: payload with rotated axes (inertial rpy + joint rpy cancel out)
            R = rf.random_rotation(rng)
            reference = rd.load_urdf(
                payload_urdf(xml, link, mass, R.T @ com, R.T @ inertia @ R, (0, 0, 0), rf.matrix_to_rpy(R))
            )
            assert reference.joint_names == model.joint_names
            q, qd, qdd = states(info, model, seed, 3)
            for k in range(3):
                assert_close(
                    rd.inverse_dynamics(loaded, q[k], qd[k], qdd[k]),
                    rd.inverse_dynamics(reference, q[k], qd[k], qdd[k]),
                    f"tree {seed}, payload on {link}",
                )
                assert_close(rd.mass_matrix(loaded, q[k]), rd.mass_matrix(reference, q[k]), f"M, {link}")
                assert_close(rd.potential_energy(loaded, q[k]), rd.potential_energy(reference, q[k]), f"P, {link}")
    # the original model is untouched (immutability)
    xml, info, model = tree(SEEDS[0])
    q, qd, qdd = states(info, model, 0, 1)
    before = rd.inverse_dynamics(model, q[0], qd[0], qdd[0])
    model.with_payload(rf.leaf_links(info)[0], 3.0, [0.1, 0, 0], np.eye(3) * 0.01)
    assert_close(rd.inverse_dynamics(model, q[0], qd[0], qdd[0]), before, "with_payload mutated the model")


def test_with_payload_changes_gravity_torque_as_expected():
    """A point payload m at the tip of a horizontal 1-joint arm adds m g L to the holding torque."""
    xml = f"""<robot name="one"><link name="base"/>
      <link name="arm">{rf.inertial_xml(1.0, (0.5, 0, 0), (0, 0, 0), np.diag([0.01, 0.02, 0.02]))}</link>
      <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 -1 0"/>
        <limit lower="-3" upper="3" effort="100" velocity="1"/></joint></robot>"""
    model = rd.load_urdf(xml)
    loaded = model.with_payload("arm", 2.0, [1.0, 0.0, 0.0], np.zeros((3, 3)))
    assert_close(rd.gravity_torques(loaded, [0.0]) - rd.gravity_torques(model, [0.0]), [2.0 * 9.81 * 1.0], "m g L")
    assert_close(rd.gravity_torques(model, [0.0]), [1.0 * 9.81 * 0.5], "arm alone")


def test_with_gravity_rotates_the_problem(case):
    """A robot mounted with rotation R under g equals the original under R^T g."""
    xml, info, model, q, qd, qdd = case
    rng = np.random.default_rng(6)
    R = rf.random_rotation(rng)
    root = info.root()
    mounted_xml = xml.replace(
        "</robot>",
        f'<link name="mount"/><joint name="mount_joint" type="fixed"><parent link="mount"/><child link="{root}"/>'
        f'<origin xyz="0.1 -0.2 0.3" rpy="{rf.fmt(rf.matrix_to_rpy(R))}"/></joint></robot>',
    )
    mounted = rd.load_urdf(mounted_xml)
    g0 = np.array([0.0, 0.0, -9.81])
    turned = model.with_gravity(R.T @ g0)
    assert_close(turned.gravity, R.T @ g0, "gravity stored")
    for k in range(len(q)):
        assert_close(
            rd.inverse_dynamics(turned, q[k], qd[k], qdd[k]),
            rd.inverse_dynamics(mounted, q[k], qd[k], qdd[k]),
            f"tau {k}",
        )
        assert_close(rd.gravity_torques(turned, q[k]), rd.gravity_torques(mounted, q[k]), f"g {k}")
        link = model.link_names[-1]
        T = rd.frame_pose(mounted, q[k], link)
        assert_close(T[:3, :3], R @ rd.frame_pose(model, q[k], link)[:3, :3], "mounted pose")
    zero = model.with_gravity([0.0, 0.0, 0.0])
    assert_close(rd.gravity_torques(zero, q[0]), np.zeros(model.nv), "no gravity")
    double = model.with_gravity([0.0, 0.0, -19.62])
    assert_close(rd.gravity_torques(double, q[0]), 2 * rd.gravity_torques(model, q[0]), "g linear in gravity")
    assert_close(model.gravity, g0, "with_gravity must not mutate the model")


def test_operational_space_inertia_six_dof_arm():
    model = rd.load_urdf(rf.erd_path("ur5"))
    rng = np.random.default_rng(4)
    tested = 0
    while tested < 10:
        q = rng.uniform(-math.pi, math.pi, model.nv)
        J = rd.jacobian(model, q, "tool0", reference="world")
        if np.linalg.cond(J) > 1e3:
            continue
        tested += 1
        M = rd.mass_matrix(model, q)
        expected = np.linalg.inv(J @ np.linalg.inv(M) @ J.T)
        Lam = rd.operational_space_inertia(model, q, "tool0")
        scale = np.abs(expected).max()
        assert_close(Lam / scale, expected / scale, "Lambda = (J M^-1 J^T)^-1", rtol=1e-8)
        assert_close(Lam, Lam.T, "Lambda symmetric", rtol=1e-8 * scale)
        # square J: Lambda = J^-T M J^-1
        assert_close(Lam / scale, np.linalg.solve(J.T, np.linalg.solve(J.T, M).T).T / scale, "J^-T M J^-1", rtol=1e-8)
        # in the frame's own axes: Lambda_local = B^T Lambda_world B, B = diag(R, R)
        B = np.kron(np.eye(2), rd.frame_pose(model, q, "tool0")[:3, :3])
        local = rd.operational_space_inertia(model, q, "tool0", reference="local")
        assert_close(local / scale, B.T @ Lam @ B / scale, "Lambda local", rtol=1e-8)
