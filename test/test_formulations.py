"""The cross-check formulations (robot_dynamics/rigid_body/formulations.py) against the Newton-Euler core.

On every robot the core is tested on: the bundled robots, the example-robot-data robots (with and
without their mimic joints), the random trees of test_identities.py, Lynch & Park's 2R arm and the
Modern Robotics example arm of test_analytic.py.

- Lagrange-Euler (D, h, c), the closed form of Lynch & Park §9.4 (M, c, g) and the generalized
  D'Alembert equations (D, h, c; revolute chains only) against mass_matrix, bias_forces -
  gravity_torques and gravity_torques: max error <= 1e-9 * (1 + |value|), elementwise.
- The Christoffel Coriolis matrix (complex-step dM/dq, exact to round-off): C qd = bias - gravity
  to 1e-9 * (1 + |value|); Mdot - 2C skew-symmetric to 1e-6 * (1 + |value|), with Mdot the central
  difference of the core's mass_matrix along qd (step 1e-6).
- The 2R arm term by term against its closed form (Lynch & Park §9.1), Christoffel symbols included.
"""

import functools
import math
import zlib

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.rigid_body.formulations import configurations_within_limits
from robot_dynamics.rigid_body.model import KIND, PARENT
from robot_dynamics.description.robots import bundled_urdf

import robot_files as rf  # noqa: E402
from robot_files import assert_close  # noqa: E402
from test_analytic import (  # noqa: E402
    GRAV, L1, L2, M2, MR_G, MR_GRAVITY, MR_MLIST, SLIST_DOCSTRING, closed_form, mr_urdf, two_r_states, two_r_urdf,
)
from test_identities import SEEDS as TREE_SEEDS, tree  # noqa: E402
from test_oracle_pinocchio import ours  # noqa: E402
from test_robots import planar_2r_closed_form, random_configuration  # noqa: E402

EXACT = 1e-9            # formulations that are exact up to round-off
FINITE_DIFFERENCE = 1e-6  # Mdot by central differences of the core's M
LARGE = 16               # robots with this many coordinates or more get fewer states (L-E is O(n^4))

LOADERS = {
    **{name: functools.partial(rd.load_urdf, bundled_urdf(name))
       for name in ("planar_2r", "cartesian_3dof", "arm7_gripper")},
    "arm7_gripper/no-mimic": functools.partial(rd.load_urdf, bundled_urdf("arm7_gripper"), mimic=False),
    **{name: functools.partial(ours, name, True) for name in rf.ERD_ROBOTS},
    **{f"{name}/no-mimic": functools.partial(ours, name, False) for name in rf.ERD_MIMIC_ROBOTS},
    **{f"tree{seed}": (lambda seed=seed: tree(seed)[2]) for seed in TREE_SEEDS},
    "lynch_park_2r": lambda: rd.load_urdf(two_r_urdf()).with_gravity([0.0, -GRAV, 0.0]),
    "mr_arm": lambda: rd.load_urdf(mr_urdf(MR_MLIST, MR_G, SLIST_DOCSTRING)[0]).with_gravity(MR_GRAVITY),
}
ROBOTS = list(LOADERS)


@functools.lru_cache(maxsize=None)
def robot(name):
    return LOADERS[name]()


def robot_states(name):
    """(model, [(q, qd), ...]): random states within the limits, fewer for the largest robots."""
    model = robot(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    count = 8 if model.nv < LARGE else 2
    return model, [(random_configuration(model, rng), rng.standard_normal(model.nv)) for _ in range(count)]


def core_terms(model, q, qd):
    """M, c = C qd, g from the core."""
    g = rd.gravity_torques(model, q)
    return rd.mass_matrix(model, q), rd.bias_forces(model, q, qd) - g, g


def is_revolute_chain(model):
    parents, kinds = model.topology[:, PARENT], model.topology[:, KIND]
    return not model.mimic_joints and np.array_equal(parents, np.arange(len(parents)) - 1) and not kinds.any()


# ------------------------------------------------------------------------------------------------
# every robot
# ------------------------------------------------------------------------------------------------


def assert_terms_match_the_core(name, formulation, terms):
    """``formulation(model, q, qd)`` returns the core's (M, bias - g, g), each to EXACT, at every state."""
    model, states = robot_states(name)
    for k, (q, qd) in enumerate(states):
        for term, actual, expected in zip(terms, formulation(model, q, qd), core_terms(model, q, qd)):
            assert_close(actual, expected, f"{name}: {formulation.__name__} {term}, state {k}", rtol=EXACT)


@pytest.mark.parametrize("name", ROBOTS)
def test_lagrange_euler_agrees_with_the_core(name):
    assert_terms_match_the_core(name, rd.lagrange_euler_terms, ("D = M", "h = bias - g", "c = g"))


@pytest.mark.parametrize("name", ROBOTS)
def test_closed_form_agrees_with_the_core(name):
    assert_terms_match_the_core(name, rd.closed_form_terms, ("M", "c = bias - g", "g"))


@pytest.mark.parametrize("name", ROBOTS)
def test_christoffel_coriolis_matrix_agrees_with_the_core(name):
    model, states = robot_states(name)
    eps = 1e-6
    for k, (q, qd) in enumerate(states):
        _, c, _ = core_terms(model, q, qd)
        C = rd.christoffel_coriolis_matrix(model, q, qd)
        assert_close(C @ qd, c, f"{name} C qd = bias - g, state {k}", rtol=EXACT)
        assert_close(C @ qd, rd.coriolis_matrix(model, q, qd) @ qd, f"{name} C qd = core C qd, state {k}",
                     rtol=EXACT)
        Mdot = (rd.mass_matrix(model, q + eps * qd) - rd.mass_matrix(model, q - eps * qd)) / (2 * eps)
        S = Mdot - 2 * C
        assert_close(S + S.T, np.zeros_like(S), f"{name} Mdot - 2C skew, state {k}", rtol=FINITE_DIFFERENCE)


@pytest.mark.parametrize("name", ROBOTS)
def test_dalembert_agrees_with_the_core_on_revolute_chains_and_refuses_the_rest(name):
    model = robot(name)
    if is_revolute_chain(model):
        assert_terms_match_the_core(name, rd.dalembert_terms, ("D = M", "h_tran + h_rot = bias - g", "c = g"))
    else:
        with pytest.raises(ValueError, match="chains of revolute joints"):
            rd.dalembert_terms(model, np.zeros(model.nv), np.zeros(model.nv))


def test_the_robots_cover_what_each_formulation_claims():
    """Trees, prismatic and mimic joints for L-E and the closed form; enough revolute chains for D'Alembert."""
    models = [robot(name) for name in ROBOTS]
    assert any(m.mimic_joints for m in models)
    assert any(m.topology[:, KIND].any() for m in models), "no prismatic joint"
    assert any(np.any(m.topology[1:, PARENT] != np.arange(len(m.topology) - 1)) for m in models), "no tree"
    assert max(m.nv for m in models) >= 40  # talos_full_v2 without mimic: 44
    chains = {name for name in ROBOTS if is_revolute_chain(robot(name))}
    assert {"planar_2r", "ur5", "ur10", "kinova", "double_pendulum", "double_pendulum_continuous",
            "talos_left_arm", "lynch_park_2r", "mr_arm"} <= chains


# ------------------------------------------------------------------------------------------------
# the 2R arm of Lynch & Park §9.1, term by term
# ------------------------------------------------------------------------------------------------


def two_r_christoffel(theta, dtheta):
    """Gamma_ijk and C of the 2R arm: with H = m2 L1 L2 sin(theta2), Gamma_112 = Gamma_121 = Gamma_122 = -H,
    Gamma_211 = H, the rest 0 (from eq. 9.86 on the closed-form M)."""
    H = M2 * L1 * L2 * math.sin(theta[1])
    symbols = np.zeros((2, 2, 2))
    symbols[0, 0, 1] = symbols[0, 1, 0] = symbols[0, 1, 1] = -H
    symbols[1, 0, 0] = H
    C = np.array([[-H * dtheta[1], -H * (dtheta[0] + dtheta[1])], [H * dtheta[0], 0.0]])
    return symbols, C


def test_two_r_arm_term_by_term():
    arm = robot("lynch_park_2r")
    for k, (theta, dtheta, ddtheta) in enumerate(zip(*two_r_states(10, seed=9))):
        M, c, g, _ = closed_form(theta, dtheta, ddtheta)
        for formulation in (rd.lagrange_euler_terms, rd.closed_form_terms, rd.dalembert_terms):
            for what, actual, expected in zip(("M", "c", "g"), formulation(arm, theta, dtheta), (M, c, g)):
                assert_close(actual, expected, f"{formulation.__name__} {what}, state {k}", rtol=EXACT)
        symbols, C = two_r_christoffel(theta, dtheta)
        assert_close(rd.christoffel_symbols(arm, theta), symbols, f"Gamma_ijk, state {k}", rtol=EXACT)
        assert_close(rd.christoffel_coriolis_matrix(arm, theta, dtheta), C, f"C, state {k}", rtol=EXACT)


# ------------------------------------------------------------------------------------------------
# refusals and bad inputs
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, reason", [
    ("cartesian_3dof", "joint 'axis_x' of 'cartesian_3dof' is prismatic"),
    ("talos_reduced", "is a tree: joint 'arm_left_1_joint'"),
    ("arm7_gripper", "has mimic joints \\(arm7_finger_joint2\\)"),
    ("arm7_gripper/no-mimic", "joint 'arm7_finger_joint1' of 'arm7_gripper' is prismatic"),
])
def test_dalembert_says_why_it_refuses_a_model(name, reason):
    model = robot(name)
    with pytest.raises(ValueError, match=reason):
        rd.dalembert_terms(model, np.zeros(model.nv), np.zeros(model.nv))


FORMULATIONS = [rd.lagrange_euler_terms, rd.closed_form_terms, rd.christoffel_coriolis_matrix, rd.dalembert_terms]


@pytest.mark.parametrize("formulation", FORMULATIONS, ids=lambda f: f.__name__)
def test_one_finite_state_of_the_right_length(formulation):
    arm = robot("planar_2r")
    with pytest.raises(ValueError, match="not a batch"):
        formulation(arm, np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="2 values"):
        formulation(arm, [0.0, 0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="qd contains NaN"):
        formulation(arm, [0.0, 0.0], [0.0, math.nan])


def test_christoffel_symbols_take_one_finite_state():
    arm = robot("planar_2r")
    with pytest.raises(ValueError, match="not a batch"):
        rd.christoffel_symbols(arm, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="q contains NaN"):
        rd.christoffel_symbols(arm, [math.inf, 0.0])


# ------------------------------------------------------------------------------------------------
# inertia bounds
# ------------------------------------------------------------------------------------------------


def test_inertia_bounds_of_the_planar_2r_arm_are_its_closed_form_extremes():
    """M depends on theta2 only; over a grid holding theta2 = 0 the bounds are the closed form's extremes."""
    model = robot("planar_2r")
    theta2 = np.linspace(-math.pi, math.pi, 721)
    samples = np.column_stack([np.full_like(theta2, 0.3), theta2])
    eigenvalues = np.array([np.linalg.eigvalsh(planar_2r_closed_form(q, [0, 0], [0, 0])[0]) for q in samples])
    assert_close(rd.inertia_bounds(model, samples), (eigenvalues.min(), eigenvalues.max()), "lambda_min, lambda_max",
                 rtol=EXACT)
    # theta2 = 0 (stretched out) holds both extremes: lambda = (4.5 +- sqrt(18.25)) / 2 for m = (2, 1), L = (1, 0.5)
    assert_close(rd.inertia_bounds(model, samples), ((4.5 - math.sqrt(18.25)) / 2, (4.5 + math.sqrt(18.25)) / 2),
                 "closed-form extremes", rtol=EXACT)


@pytest.mark.parametrize("name", ["arm7_gripper", "ur5", "cartesian_3dof"])
def test_inertia_bounds_from_a_count_are_seeded_samples_within_the_limits(name):
    model = robot(name)
    samples = configurations_within_limits(model, 50, seed=4)
    lower, upper = model.position_limits.T
    assert samples.shape == (50, model.nv)
    assert np.all((samples >= np.where(np.isfinite(lower), lower, -math.pi))
                  & (samples <= np.where(np.isfinite(upper), upper, math.pi)))
    bounds = rd.inertia_bounds(model, 50, seed=4)
    assert bounds == rd.inertia_bounds(model, samples) == rd.inertia_bounds(model, 50, seed=4)
    assert not np.array_equal(samples, configurations_within_limits(model, 50, seed=5))
    # against the eigenvalues of the closed-form M (not the core's CRBA, which inertia_bounds uses)
    eigenvalues = np.array([np.linalg.eigvalsh(rd.closed_form_terms(model, q, np.zeros(model.nv))[0])
                            for q in samples])
    assert_close(bounds, (eigenvalues.min(), eigenvalues.max()), f"{name} bounds", rtol=EXACT)
    assert 0 < bounds[0] <= bounds[1]


def test_a_robot_without_moving_joints_is_refused_clearly():
    welded = rd.load_urdf('<robot name="welded"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
                          '<parent link="a"/><child link="b"/></joint></robot>')
    for formulation in FORMULATIONS:
        with pytest.raises(ValueError, match="'welded' has no moving joints"):
            formulation(welded, [], [])
    with pytest.raises(ValueError, match="'welded' has no moving joints"):
        rd.inertia_bounds(welded)


@pytest.mark.parametrize("samples", [0, np.zeros((0, 2)), np.zeros((3, 3)), np.zeros(2)], ids=repr)
def test_inertia_bounds_reject_bad_samples(samples):
    with pytest.raises(ValueError, match="samples"):
        rd.inertia_bounds(robot("planar_2r"), samples)
