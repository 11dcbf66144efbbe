"""The per-model workspace and its pass (robot_dynamics.rigid_body.data): every output against the public
batched functions and the kinematics, on random trees, coupled joints and rotors; outputs not
asked for left alone; no allocation per pass; bad input refused."""

import tracemalloc

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.rigid_body.data import frame_jacobian

import robot_files as rf  # noqa: E402
from test_couplings import coupled_gripper  # noqa: E402

ALL = rd.GRAVITY | rd.BIAS | rd.MASS | rd.WORLD | rd.MOMENTUM


def tree(seed):
    xml = rf.random_tree_urdf(seed, n_links=3 + seed % 8, n_mimic=seed % 3, mimic_ancestor_only=False,
                              shuffle=seed % 2 == 0)
    return rd.load_urdf(xml)


def models():
    """Random trees (mimic joints, prismatic, fixed, branching), geared rotors, two masters per joint."""
    trees = [tree(seed) for seed in range(200, 208)]
    geared = trees[0].with_armature(np.linspace(0.1, 0.9, trees[0].nv)).with_gravity([1.0, -2.0, -9.0])
    return [*trees, geared, coupled_gripper()]


@pytest.mark.parametrize("model", models(), ids=lambda m: f"{m.name}-{m.nv}")
def test_the_pass_equals_the_public_functions(model):
    data = rd.Data(model)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd = rng.uniform(-1.5, 1.5, (2, model.nv))
        rd.compute_terms(data, q, qd, ALL)
        np.testing.assert_allclose(data.g, rd.gravity_torques(model, q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(data.h, rd.bias_forces(model, q, qd), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(data.c, rd.bias_forces(model.with_gravity([0, 0, 0]), q, qd), atol=1e-12)
        np.testing.assert_allclose(data.M, rd.mass_matrix(model, q), rtol=1e-12, atol=1e-12)
        # the observer's terms: p = M qd, and C^T qd - g with C the Christoffel C (Mdot = C + C^T)
        np.testing.assert_allclose(data.p, rd.mass_matrix(model, q) @ qd, rtol=1e-12, atol=1e-12)
        C = rd.christoffel_coriolis_matrix(model, q, qd) if model.nv <= 8 else rd.coriolis_matrix(model, q, qd)
        np.testing.assert_allclose(data.beta, C.T @ qd - rd.gravity_torques(model, q), rtol=1e-9, atol=1e-9)
        for link, frame in model.frames.items():
            if frame.body >= 0:
                J = np.zeros((6, model.nv))
                frame_jacobian(*model._kernel_arrays[:2], data.world, frame.body, tuple(frame.pose[:3, 3]), J)
                np.testing.assert_allclose(J, rd.jacobian(model, q, link), atol=1e-12)
                T = data.world[frame.body]
                world = np.eye(4)
                world[:3, :3], world[:3, 3] = T[:9].reshape(3, 3), T[9:]
                np.testing.assert_allclose(world @ frame.pose, rd.frame_pose(model, q, link), atol=1e-12)


@pytest.mark.parametrize("model", models()[:4] + [models()[-1]], ids=lambda m: f"{m.name}-{m.nv}")
def test_twists_and_accelerations_are_each_body_s_J_qd_and_Jdot_qd(model):
    """``twists[i] = J_i qd`` and ``accelerations[i] = Jdot_i qd`` (d/dt of it along ``q + t qd``), ``J_i``
    the body Jacobian of body ``i``'s frame: what a frame's velocity and acceleration bias build on."""
    data = rd.Data(model)
    rng = np.random.default_rng(4)
    q, qd = rng.uniform(-1.0, 1.0, (2, model.nv))
    rd.compute_terms(data, q, qd, rd.BIAS)
    eps = 1e-6
    checked = 0
    for link, frame in model.frames.items():
        if frame.body < 0 or not np.allclose(frame.pose, np.eye(4)):
            continue  # the body's own frame
        J = rd.jacobian(model, q, link, reference="local")
        np.testing.assert_allclose(data.twists[frame.body], J @ qd, atol=1e-12)
        ahead = rd.jacobian(model, q + eps * qd, link, reference="local") @ qd
        behind = rd.jacobian(model, q - eps * qd, link, reference="local") @ qd
        np.testing.assert_allclose(data.accelerations[frame.body], (ahead - behind) / (2 * eps), atol=1e-6)
        checked += 1
    assert checked >= 1


def test_only_the_outputs_asked_for_are_computed():
    model = tree(203)
    data = rd.Data(model)
    q, qd = np.full(model.nv, 0.3), np.full(model.nv, -0.2)
    rd.compute_terms(data, q, qd, rd.GRAVITY)
    np.testing.assert_allclose(data.g, rd.gravity_torques(model, q), atol=1e-12)
    assert not data.M.any() and not data.h.any() and not data.world.any() and not data.twists.any()
    assert not data.p.any() and not data.beta.any()
    rd.compute_terms(data, q, qd, rd.MASS)
    np.testing.assert_allclose(data.M, rd.mass_matrix(model, q), atol=1e-12)
    assert not data.h.any()
    rd.compute_terms(data, q, None, rd.BIAS)  # no qd: at rest, h = g
    np.testing.assert_allclose(data.h, rd.gravity_torques(model, q), atol=1e-12)
    assert not data.c.any()
    rd.compute_terms(data, q, qd, rd.MOMENTUM)  # implies the gravity and bias passes it builds on
    np.testing.assert_allclose(data.p, rd.mass_matrix(model, q) @ qd, atol=1e-12)
    np.testing.assert_allclose(data.h, rd.bias_forces(model, q, qd), atol=1e-12)


def test_a_pass_allocates_nothing():
    """The compiled pass allocates no array (numba's allocation counters: the only records are the
    wrappers numba puts around each array argument at the call, one per argument, freed on return;
    a batched function, which allocates its scratch and result, shows more) and a repeated call keeps no
    Python memory (tracemalloc)."""
    from numba.core.runtime import nrt, rtsys

    model = rd.load_urdf(rf.random_tree_urdf(205, n_links=9, n_mimic=1))
    data = rd.Data(model)
    q, qd = np.full(model.nv, 0.4), np.full(model.nv, 0.1)
    rd.compute_terms(data, q, qd, ALL)  # compiled, and any first-call caches filled
    nrt._nrt.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(100):
            rd.compute_terms(data, q, qd, ALL)
        after = rtsys.get_allocation_stats()
    finally:
        nrt._nrt.memsys_disable_stats()
    arguments = 2 + sum(isinstance(a, np.ndarray) for part in data._arguments for a in part)  # + q, qd
    assert after.alloc - before.alloc == 100 * arguments == after.free - before.free, (before, after, arguments)
    nrt._nrt.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        rd.gravity_torques(model, q)
        batched = rtsys.get_allocation_stats().alloc - before.alloc
    finally:
        nrt._nrt.memsys_disable_stats()
    assert batched > 4  # its 4 arguments, its scratch and its result: the counter sees allocations
    tracemalloc.start()
    try:
        for _ in range(10):
            rd.compute_terms(data, q, qd, ALL)
        first = tracemalloc.take_snapshot()
        for _ in range(1000):
            rd.compute_terms(data, q, qd, ALL)
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(first, "filename") if s.size_diff > 0)
    finally:
        tracemalloc.stop()
    assert grown < 2000, grown  # (tracemalloc's own bookkeeping; 1000 leaked arrays would be > 100 kB)


def test_the_compiled_pass_writes_into_the_data_s_arrays():
    """The results are views of the arrays the kernels receive: nothing is copied per pass."""
    data = rd.Data(rd.load_urdf(rd.examples.TWO_LINK_URDF))
    frames, joints, motion, composite, vectors, M = data._arguments[1]
    assert np.shares_memory(data.g, vectors) and np.shares_memory(data.h, vectors) and data.M is M
    assert np.shares_memory(data.world, frames) and np.shares_memory(data.twists, motion)


def test_bad_states_are_refused_naming_the_input():
    model = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    data = rd.Data(model)
    with pytest.raises(ValueError, match="q must have 2 values"):
        rd.compute_terms(data, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="qd must have 2 values"):
        rd.compute_terms(data, [0.0, 0.0], [1.0])
    with pytest.raises(ValueError, match="NaN or inf"):
        rd.compute_terms(data, [0.0, np.nan])
    with pytest.raises(ValueError, match="NaN or inf"):
        rd.compute_terms(data, [0.0, 0.0], [np.inf, 0.0], rd.BIAS)
    rd.compute_terms(data, [0, 1], (0.5, 0.5), rd.BIAS)  # lists, tuples and ints are converted
    np.testing.assert_allclose(data.h, rd.bias_forces(model, [0.0, 1.0], [0.5, 0.5]), atol=1e-12)
