"""The frame's twist and acceleration and the task-space dynamics against Pinocchio (test-only oracle).

On the random trees of test_oracle_pinocchio (mimic joints compared at the expanded state
q_full = G q + o, qd_full = G qd), at every link, 20 random states each:
- frame_velocity == getFrameVelocity (LOCAL, LOCAL_WORLD_ALIGNED);
- frame_acceleration(kind="spatial") == getFrameAcceleration and kind="classical" ==
  getFrameClassicalAcceleration, at qdd = 0 and at a random qdd;
- jacobian_derivative_times_rate == d/dt (J qd) of the same reference (world: classical, local: spatial);
- operational_space_inertia, task_space_bias against Pinocchio's M, h, J and Jdot qd
  (eqs. 9.98-9.99 written with its quantities), on the 6-joint-or-more leaves whose J has rank 6.
"""

import functools

import numpy as np
import pytest

import robot_dynamics as rd

import robot_files as rf
from robot_files import assert_close

N_STATES = 20
TREE_SEEDS = list(range(12)) + [100, 101, 102]


@functools.lru_cache(maxsize=None)
def tree_case(seed):
    xml = rf.random_tree_urdf(seed, n_links=4 + seed % 9, n_mimic=seed % 3, shuffle=seed % 2 == 1,
                              mimic_ancestor_only=seed < 100)
    info = rf.parse_urdf(xml)
    model = rd.load_urdf(xml)
    return info, model, rf.PinOracle(xml, info.independent(False))


def _motion(m):
    return np.concatenate([m.angular, m.linear])


def pin_frame_motion(oracle, qf, vf, af, link):
    """Pinocchio's twist, spatial and classical acceleration of ``link``, ours' [angular; linear] rows."""
    pin = oracle.pin
    data = oracle.data
    pin.forwardKinematics(oracle.model, data, oracle.q(qf), oracle.v(vf), oracle.v(af))
    pin.updateFramePlacements(oracle.model, data)
    fid = oracle.frame_id(link)
    out = {}
    for reference, ref in (("local", pin.ReferenceFrame.LOCAL), ("world", pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)):
        out["velocity", reference] = _motion(pin.getFrameVelocity(oracle.model, data, fid, ref))
        out["spatial", reference] = _motion(pin.getFrameAcceleration(oracle.model, data, fid, ref))
        out["classical", reference] = _motion(pin.getFrameClassicalAcceleration(oracle.model, data, fid, ref))
    return out


@pytest.mark.parametrize("seed", TREE_SEEDS)
def test_frame_motion_against_pinocchio(seed):
    info, model, oracle = tree_case(seed)
    names = list(model.joint_names)
    ex = rf.MimicExpansion(info, names)
    rng = np.random.default_rng(seed)
    q, qd, qdd = rf.random_states(rng, info, names, N_STATES)
    for k in range(N_STATES):
        for link in model.link_names:
            for accel in (None, qdd[k]):
                af = ex.v(np.zeros(model.nv) if accel is None else accel)
                want = pin_frame_motion(oracle, ex.q(q[k]), ex.v(qd[k]), af, link)
                for reference in ("local", "world"):
                    tag = f"seed {seed} state {k} {link} {reference} qdd={'0' if accel is None else 'random'}"
                    assert_close(rd.frame_velocity(model, q[k], qd[k], link, reference), want["velocity", reference],
                                 tag + " velocity")
                    for kind in ("spatial", "classical"):
                        got = rd.frame_acceleration(model, q[k], qd[k], link, reference, qdd=accel, kind=kind)
                        assert_close(got, want[kind, reference], f"{tag} {kind}")
                    if accel is None:
                        kind = "classical" if reference == "world" else "spatial"
                        assert_close(rd.jacobian_derivative_times_rate(model, q[k], qd[k], link, reference),
                                     want[kind, reference], f"{tag} Jdot qd")


def test_batched_frame_motion_matches_single_states():
    info, model, _ = tree_case(5)
    rng = np.random.default_rng(1)
    q, qd, qdd = rf.random_states(rng, info, list(model.joint_names), 6)
    link = model.link_names[-1]
    batch = rd.frame_acceleration(model, q.reshape(2, 3, -1), qd.reshape(2, 3, -1), link, qdd=qdd.reshape(2, 3, -1))
    assert batch.shape == (2, 3, 6)
    for k in range(6):
        assert_close(batch.reshape(6, 6)[k], rd.frame_acceleration(model, q[k], qd[k], link, qdd=qdd[k]), f"state {k}")


def test_frame_on_the_fixed_base_does_not_move():
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    root = model.link_names[0]
    assert np.array_equal(rd.frame_velocity(model, [0.3, 0.2], [1.0, 2.0], root), np.zeros(6))
    assert np.array_equal(rd.frame_acceleration(model, [0.3, 0.2], [1.0, 2.0], root, qdd=[1.0, 1.0]), np.zeros(6))


def test_bad_arguments_are_refused():
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    with pytest.raises(ValueError, match="reference"):
        rd.frame_velocity(model, [0.0, 0.0], [0.0, 0.0], "tip", reference="base")
    with pytest.raises(ValueError, match="kind"):
        rd.frame_acceleration(model, [0.0, 0.0], [0.0, 0.0], "tip", kind="body")
    with pytest.raises(ValueError, match="unknown frame"):
        rd.frame_velocity(model, [0.0, 0.0], [0.0, 0.0], "nope")
    with pytest.raises(ValueError, match="NaN"):
        rd.frame_velocity(model, [0.0, np.nan], [0.0, 0.0], "tip")
    with pytest.raises(ValueError, match="qd"):
        rd.frame_velocity(model, [0.0, 0.0], [0.0], "tip")


PANDA = "panda"


@functools.lru_cache(maxsize=None)
def panda_case():
    info = rf.parse_urdf(rf.erd_path(PANDA))
    model = rd.load_urdf(rf.erd_path(PANDA), mimic=False)
    return info, model, rf.PinOracle(rf.erd_path(PANDA), info.independent(False))


@pytest.mark.parametrize("reference", ["world", "local"])
def test_task_space_inertia_and_bias_against_pinocchio(reference):
    """Lambda = (J M^-1 J^T)^-1 and eta = Lambda J M^-1 h - Lambda Jdot qd (eqs. 9.98-9.99 for a
    redundant arm) from Pinocchio's crba, rnea, frame Jacobian and classical/spatial acceleration."""
    info, model, oracle = panda_case()
    names = list(model.joint_names)
    rng = np.random.default_rng(3)
    q, qd, _ = rf.random_states(rng, info, names, N_STATES)
    link = "panda_hand"
    kind = "classical" if reference == "world" else "spatial"
    for k in range(N_STATES):
        M, h = oracle.mass_matrix(q[k]), oracle.bias(q[k], qd[k])
        J = oracle.jacobian(q[k], link, reference)
        Jdot_qd = pin_frame_motion(oracle, q[k], qd[k], np.zeros(model.nv), link)[kind, reference]
        Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T))
        eta = Lambda @ J @ np.linalg.solve(M, h) - Lambda @ Jdot_qd
        assert_close(rd.operational_space_inertia(model, q[k], link, reference), Lambda, f"Lambda {k}", rtol=1e-7)
        assert_close(rd.task_space_bias(model, q[k], qd[k], link, reference), eta, f"eta {k}", rtol=1e-7)


def test_task_space_bias_is_the_seeds_form_for_a_square_jacobian():
    """For six joints eta = J^-T h - Lambda Jdot J^-1 V (eq. 9.99 verbatim) with V = J qd, Lambda = J^-T M J^-1
    (eq. 9.98) and Jdot the derivative of J(q + t qd) at t = 0 (a central difference of our Jacobian, not
    jacobian_derivative_times_rate), on five well-conditioned states."""
    six = rd.load_urdf(rf.erd_path("ur5"), mimic=False)
    assert six.nv == 6
    rng = np.random.default_rng(4)
    link, step, checked = "tool0", 1e-6, 0
    for _ in range(50):
        q, qd = rng.uniform(-2, 2, six.nv), rng.uniform(-1, 1, six.nv)
        J = rd.jacobian(six, q, link)
        if np.linalg.cond(J) > 1e3:  # near a singularity the finite difference of J loses the digits compared
            continue
        Jdot = (rd.jacobian(six, q + step * qd, link) - rd.jacobian(six, q - step * qd, link)) / (2 * step)
        J_inv = np.linalg.inv(J)
        Lambda = J_inv.T @ rd.mass_matrix(six, q) @ J_inv
        eta = J_inv.T @ rd.bias_forces(six, q, qd) - Lambda @ Jdot @ J_inv @ (J @ qd)
        assert_close(rd.operational_space_inertia(six, q, link), Lambda, "Lambda", rtol=1e-7)
        assert_close(rd.task_space_bias(six, q, qd, link), eta, "eta", rtol=1e-6)
        checked += 1
    assert checked >= 5, f"only {checked} of 50 random states were away from a singularity"


def test_frame_state_is_the_checked_functions_at_one_state():
    """task_space.frame_state (the controllers' one-state path) == frame_pose, jacobian, frame_velocity and
    jacobian_derivative_times_rate (world), which are checked against Pinocchio above."""
    from robot_dynamics.rigid_body.task_space import frame_state

    info, model, _ = tree_case(7)
    rng = np.random.default_rng(2)
    q, qd, _ = rf.random_states(rng, info, list(model.joint_names), 5)
    for k in range(5):
        for link in model.link_names:
            state = frame_state(model, q[k], qd[k], link)
            assert_close(state.pose, rd.frame_pose(model, q[k], link), f"pose {link}")
            assert_close(state.jacobian, rd.jacobian(model, q[k], link), f"J {link}")
            assert_close(state.velocity, rd.frame_velocity(model, q[k], qd[k], link), f"V {link}")
            assert_close(state.bias_acceleration, rd.jacobian_derivative_times_rate(model, q[k], qd[k], link),
                         f"Jdot qd {link}")
