"""Identification: parameterisations, excitation, recordings (bags and CSV), the estimate, the
files written, and every kind of bad input."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import (
    IdentificationError, RecordingError, design_excitation, identify, joint_state_messages, read_recording,
    read_trajectory_csv, write_csv, write_rosbag, write_trajectory_csv,
)
from robot_dynamics.identification import excitation as ex
from robot_dynamics.identification.identify import _joint_sigma, _joint_triangles, _triangle, full_problem, structural_base
from robot_dynamics.identification.parameters import (
    base_columns, condition_number, is_physically_consistent, log_cholesky_jacobian, log_cholesky_of_parameters, mass_com_inertia,
    parameters_of_log_cholesky, pseudo_inertia,
)
from robot_dynamics.identification.report import identified_urdf, payload_yaml
from robot_dynamics.identification.simulated import perturbed_urdf, record
from robot_dynamics.rigid_body.model import inertial_parameters_about_origin
from robot_dynamics.description.robots import bundled_urdf

PLANAR = bundled_urdf("planar_2r")


@pytest.fixture(scope="module")
def planar():
    return rd.load_urdf(PLANAR)


@pytest.fixture(scope="module")
def planar_excitation(planar):
    return design_excitation(planar, period=5.0, iterations=5)


@pytest.fixture(scope="module")
def planar_run(planar, planar_excitation, tmp_path_factory):
    """The planar 2R, perturbed and with friction its URDF lacks, recorded for 20 s at 500 Hz."""
    with_friction = tmp_path_factory.mktemp("real") / "planar_with_friction.urdf"
    with_friction.write_text(PLANAR.read_text().replace("</joint>", '<dynamics damping="0.3" friction="0.4"/></joint>'))
    real = rd.load_urdf(perturbed_urdf(with_friction, seed=3))
    np.testing.assert_allclose(real.damping, 0.45)
    return real, record(real, planar, planar_excitation, 20.0, torque_noise=0.01, seed=1)


def _csv(tmp_path, run, name="run.csv", **columns):
    path = tmp_path / name
    write_csv(path, run.joint_names, run.t, columns.get("q", run.q), columns.get("qd", run.qd), columns.get("tau", run.tau))
    return path


# ------------------------------------------------------------------------------- parameterisations

def test_log_cholesky_maps_any_vector_to_a_consistent_body_and_back():
    rng = np.random.default_rng(0)
    for _ in range(20):
        phi = rng.normal(size=10)
        theta = parameters_of_log_cholesky(phi)
        assert is_physically_consistent(theta)
        np.testing.assert_allclose(log_cholesky_of_parameters(theta, floor=0), phi, atol=1e-8)
        mass, com, inertia = mass_com_inertia(theta)
        principal = np.linalg.eigvalsh(inertia)
        assert mass > 0 and principal[0] >= -1e-12 and principal[2] <= principal[0] + principal[1] + 1e-12


def test_log_cholesky_jacobian_matches_finite_differences():
    phi = np.random.default_rng(1).normal(size=10)
    step = 1e-6
    numeric = np.column_stack([(parameters_of_log_cholesky(phi + step * e) - parameters_of_log_cholesky(phi - step * e))
                               / (2 * step) for e in np.eye(10)])
    np.testing.assert_allclose(log_cholesky_jacobian(phi), numeric, atol=1e-7)


@pytest.mark.parametrize("samples", [3, 40])  # fewer and more samples than columns
def test_triangular_factors_give_the_weighted_least_squares_of_all_rows(samples):
    """The estimate's fits on R (p + 1 rows) equal those on the N n rows: each joint's residual
    deviation, and the weighted fit's minimiser and residual norm."""
    rng = np.random.default_rng(4)
    n, columns = 3, [0, 2, 3]
    A, z = rng.normal(size=(samples * n, 5)), rng.normal(size=samples * n)
    R_joints = _joint_triangles(A, z, n)
    sigma = _joint_sigma(R_joints, columns, samples)
    fit = np.linalg.lstsq(A[:, columns], z, rcond=None)[0]
    np.testing.assert_allclose(sigma, np.sqrt(np.mean((z - A[:, columns] @ fit).reshape(samples, n) ** 2, axis=0)))
    weights = np.tile(1 / sigma, samples)
    A_w, z_w = A * weights[:, None], z * weights
    R_w = _triangle(R_joints / sigma[:, None, None])
    assert R_w.shape == (6, 6) and np.allclose(np.tril(R_w, -1), 0)
    x = np.linalg.lstsq(R_w[:, :-1], R_w[:, -1], rcond=None)[0]
    np.testing.assert_allclose(x, np.linalg.lstsq(A_w, z_w, rcond=None)[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(R_w[:, :-1] @ x - R_w[:, -1]), np.linalg.norm(A_w @ x - z_w))
    np.testing.assert_allclose(np.linalg.svd(R_w, compute_uv=False), np.linalg.svd(np.column_stack([A_w, z_w]), compute_uv=False)[:6])


def test_pseudo_inertia_is_the_second_moment_of_point_masses():
    """J = sum m [r; 1][r; 1]^T for point masses; an impossible body (triangle inequality) is refused."""
    points = [(1.0, np.array([0.1, 0.2, -0.3])), (2.0, np.array([-0.4, 0.0, 0.5]))]
    theta = sum(inertial_parameters_about_origin(m, r, np.zeros((3, 3))) for m, r in points)
    expected = sum(m * np.outer(np.append(r, 1), np.append(r, 1)) for m, r in points)
    np.testing.assert_allclose(pseudo_inertia(theta), expected, atol=1e-12)
    rod_violating = inertial_parameters_about_origin(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    assert is_physically_consistent(theta) and not is_physically_consistent(rod_violating)


def test_base_parameters_reproduce_the_torques(planar):
    """tau = Y theta = Y1 (theta1 + K theta2) at states the decomposition never saw."""
    problem = full_problem(planar, friction=False)
    independent, dependent, K = structural_base(problem)
    q, qd, qdd = ex.random_states(planar, 50, seed=7)
    Y = rd.regressor(planar, q, qd, qdd)[..., :20].reshape(-1, 20)  # the bodies' columns (no rotors)
    theta = rd.inertial_parameters(planar)[:20]
    np.testing.assert_allclose(Y[:, independent] @ (theta[independent] + K @ theta[dependent]), Y @ theta, atol=1e-10)
    assert np.linalg.matrix_rank(Y) == len(independent) < 20
    assert base_columns(Y)[0].size == len(independent)


# ------------------------------------------------------------------------------------ excitation

def assert_within_limits(model, q, qd, qdd):
    """Positions within the range, speeds and accelerations within the design's margin of their
    limits; returns the limits."""
    lower, upper, speed, accel = ex.joint_limits(model)
    margin = ex.DEFAULT_MARGIN * (1 + 1e-5)
    assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9)
    assert np.all(np.abs(qd) <= margin * speed) and np.all(np.abs(qdd) <= margin * accel)
    return lower, upper, speed, accel

def test_excitation_starts_and_ends_at_rest_within_the_limits(planar, planar_excitation):
    e = planar_excitation
    for t in (0.0, e.period, 3 * e.period):
        _, qd, qdd = e(t)
        np.testing.assert_allclose(qd, 0, atol=1e-12)
        np.testing.assert_allclose(qdd, 0, atol=1e-12)
    t = np.linspace(0, e.period, 5001)
    q, qd, qdd = e(t)
    lower, upper, speed, accel = assert_within_limits(planar, q, qd, qdd)
    # the derivatives are those of q, and the trajectory uses its limits (one of them binds per joint)
    np.testing.assert_allclose(np.gradient(q, t, axis=0)[1:-1], qd[1:-1], atol=1e-4)
    np.testing.assert_allclose(np.gradient(qd, t, axis=0)[1:-1], qdd[1:-1], atol=1e-3)
    used = np.max([(q.max(0) - q.min(0)) / (upper - lower), np.abs(qd).max(0) / speed, np.abs(qdd).max(0) / accel], axis=0)
    np.testing.assert_allclose(used, ex.DEFAULT_MARGIN, rtol=1e-2)


def test_excitation_optimisation_lowers_the_condition_number(planar):
    independent = structural_base(full_problem(planar, friction=False))[0]
    start = design_excitation(planar, period=5.0, iterations=0)
    optimised = design_excitation(planar, period=5.0, iterations=10)
    assert ex.regressor_condition(planar, optimised, independent) < ex.regressor_condition(planar, start, independent)


def test_excitation_cost_gradient_matches_central_differences(planar):
    """The design's chain-rule gradient of log cond (SVD, regressor, states) against central
    differences of the cost, on the planar arm with its rotors' columns."""
    limits = ex.joint_limits(planar)
    rotors = ex.estimated_armature(planar, every_joint=True)
    random = ex.random_states(planar, 40)
    independent = base_columns(ex.identified_regressor(planar, *random, rotors))[0]
    _, cost, cost_and_gradient = ex._design_problem(planar, 5.0, limits, 0.9, independent, rotors)
    x = np.random.default_rng(5).normal(size=2 * planar.nv * 3)
    value, gradient = cost_and_gradient(x)
    h = 1e-6
    central = [(cost(x + h * e) - cost(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    assert value == pytest.approx(cost(x), rel=1e-12)
    np.testing.assert_allclose(gradient, central, atol=1e-5 * np.abs(central).max())
    A = ex.identified_regressor(planar, *random, rotors)[:, independent]
    log_condition, dA = ex._log_condition_and_gradient(A)
    dA_random = np.random.default_rng(6).normal(size=A.shape)
    assert log_condition == pytest.approx(np.log(condition_number(A)))
    assert np.sum(dA * dA_random) == pytest.approx(
        (np.log(condition_number(A + h * dA_random)) - np.log(condition_number(A - h * dA_random))) / (2 * h), rel=1e-5)


def test_a_range_bound_joint_plays_its_series_faster_within_its_limits():
    """The gripper finger (4 cm, 0.2 m/s) at the arm's pace would use an eighth of its speed; it plays
    its harmonics twice as fast (1 Hz at most), the same positions, still within every limit."""
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    e = design_excitation(arm, iterations=0)
    t = np.linspace(0, e.period, 20001)
    q, qd, qdd = e(t)
    lower, upper, speed, accel = assert_within_limits(arm, q, qd, qdd)
    for values in e(0.0)[1:] + e(e.period)[1:]:
        np.testing.assert_allclose(values, 0, atol=1e-12)
    harmonics = [list(np.flatnonzero(e.a[j] ** 2 + e.b[j] ** 2) + 1) for j in range(arm.nv)]
    assert harmonics[:7] == [[1, 2, 3, 4, 5]] * 7 and harmonics[7] == [2, 4, 6, 8, 10]
    assert harmonics[7][-1] / e.period == ex.FASTEST_HARMONIC
    assert np.abs(qd[:, 7]).max() > 0.3 * speed[7]
    np.testing.assert_allclose(q[:, 7].max() - q[:, 7].min(), ex.DEFAULT_MARGIN * (upper[7] - lower[7]), rtol=1e-3)


def test_excitation_limits_are_overridable_and_checked(planar):
    slow = design_excitation(planar, period=5.0, iterations=0, velocity_limits={"theta1": 0.2})
    assert np.abs(slow(np.linspace(0, 5, 2000))[1][:, 0]).max() <= 0.2 * ex.DEFAULT_MARGIN * (1 + 1e-5)
    with pytest.raises(ex.ExcitationError, match="unknown joint 'nope'"):
        design_excitation(planar, velocity_limits={"nope": 1.0})
    with pytest.raises(ex.ExcitationError, match="at least 2 harmonics"):
        design_excitation(planar, harmonics=1)


def test_trajectory_csv_round_trip(tmp_path, planar_excitation):
    path = tmp_path / "excitation.csv"
    write_trajectory_csv(path, planar_excitation, 10.0, 200.0)
    sampled = read_trajectory_csv(path)
    assert sampled.joint_names == planar_excitation.joint_names and sampled.duration == pytest.approx(10.0)
    for exact, read in zip(planar_excitation(2.5), sampled(2.5)):
        np.testing.assert_allclose(read, exact, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------------------------ recordings

@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bags_in_both_formats_read_back_as_written(tmp_path, planar_run, storage):
    _, run = planar_run
    rows = slice(0, 500)
    write_rosbag(tmp_path / "bag", joint_state_messages(run.joint_names, run.t[rows], run.q[rows], run.qd[rows],
                                                        run.tau[rows]), storage=storage)
    recording = read_recording(tmp_path / "bag")
    for quantity, values in (("q", run.q), ("qd", run.qd), ("tau", run.tau)):
        for j, name in enumerate(run.joint_names):
            t, read = recording.series[quantity][name]
            np.testing.assert_allclose(t, run.t[rows], atol=1e-9)
            np.testing.assert_array_equal(read, values[rows, j])
    with pytest.raises(RecordingError, match="no topic '/states'.*JointState topics in the bag: /joint_states"):
        read_recording(tmp_path / "bag", topic="states")


def test_partial_messages_from_two_publishers_identify_like_merged_ones(tmp_path, planar, planar_run):
    """One driver per joint, interleaved and offset by 1 ms, the second without velocities."""
    _, run = planar_run
    (a, b) = run.joint_names
    messages = []
    for k in range(len(run.t)):
        messages.append((run.t[k], [a], [run.q[k, 0]], [run.qd[k, 0]], [run.tau[k, 0]]))
        messages.append((run.t[k] + 1e-3, [b], [run.q[k, 1]], [], [run.tau[k, 1]]))
    write_rosbag(tmp_path / "split", messages, storage="mcap")
    merged, check = identify(read_recording(_csv(tmp_path, run)), planar, friction=True)
    split, _ = identify(read_recording(tmp_path / "split"), planar, friction=True)
    difference = split.predict(check.samples) - merged.predict(check.samples)
    assert np.all(np.sqrt(np.mean(difference**2, axis=0)) < 0.005 * check.rms_torque)
    assert np.all(check.rms_identified < 0.02 * check.rms_torque)


# ------------------------------------------------------------------------------------ the estimate

def test_identification_recovers_the_real_robot(tmp_path, planar, planar_run):
    real, run = planar_run
    estimate, check = identify(read_recording(_csv(tmp_path, run)), planar, friction=True)
    # the torques of the real robot, noise-free, at the validation states (its Coulomb term low-passed like tau)
    s = check.samples
    truth = rd.inverse_dynamics(real, s.q, s.qd, s.qdd) + real.damping * s.qd + real.friction * s.coulomb
    assert np.all(np.sqrt(np.mean((check.identified - truth) ** 2, axis=0)) < 0.01 * check.rms_torque)
    assert np.all(check.rms_identified < 0.02 * check.rms_torque)
    assert np.all(check.rms_input > 3 * check.rms_identified)
    damping, friction = estimate.friction()
    np.testing.assert_allclose(damping, real.damping, rtol=0.1)
    np.testing.assert_allclose(friction, real.friction, rtol=0.1)
    assert all(is_physically_consistent(theta) for theta in estimate.body_parameters())
    assert estimate.condition < 1e3 and np.all(estimate.base_std > 0)


def test_payload_on_the_arm_is_found_within_1_percent_and_3_mm():
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    tool = (1.3, np.array([0.01, -0.02, 0.05]), [0.004, 1e-4, -1e-4, 0.005, 5e-5, 0.003])
    run = record(arm.with_payload("arm7_hand", *tool), arm, design_excitation(arm, iterations=0), 20.0,
                 torque_noise=0.015)
    recording = read_recording_from_arrays(run)
    estimate, check = identify(recording, arm, payload="arm7_hand")
    mass, com, _ = mass_com_inertia(estimate.x[:10])
    assert abs(mass - tool[0]) < 0.01 * tool[0]
    assert np.linalg.norm(com - tool[1]) < 3e-3
    assert np.all(check.rms_identified < 0.02 * check.rms_torque) and np.all(check.rms_input[:7] > check.rms_identified[:7])


def read_recording_from_arrays(run):
    from robot_dynamics.identification.recording import Recording

    recording = Recording("simulated")
    for quantity, values in (("q", run.q), ("qd", run.qd), ("tau", run.tau)):
        recording.series[quantity] = {name: (run.t, values[:, j]) for j, name in enumerate(run.joint_names)}
    return recording


# -------------------------------------------------------------------------------- files written

def test_identified_urdf_loads_here_and_in_pinocchio_with_the_identified_dynamics(tmp_path):
    pin = pytest.importorskip("pinocchio")
    path = bundled_urdf("arm7_gripper")
    arm = rd.load_urdf(path)
    real = rd.load_urdf(perturbed_urdf(path, seed=2))
    run = record(real, arm, design_excitation(arm, iterations=0), 20.0, torque_noise=0.01)
    estimate, _ = identify(read_recording_from_arrays(run), arm, friction=True)
    out = tmp_path / "identified.urdf"
    out.write_text(identified_urdf(path, estimate))
    ours = rd.load_urdf(out)
    damping, friction = estimate.friction()
    np.testing.assert_allclose(ours.damping, damping, rtol=1e-8)
    np.testing.assert_allclose(ours.friction, friction, rtol=1e-8)
    np.testing.assert_allclose(rd.inertial_parameters(ours)[:90], estimate.body_parameters().ravel(), atol=1e-8)

    model = pin.buildModelFromUrdf(str(out))
    data = model.createData()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-1, 1, arm.nv) for _ in range(3))
        q[-1] = 0.02  # the finger (its mimic twin follows)
        by_name = {name: k for k, name in enumerate(ours.joint_names)}
        mimic = {name: (by_name[master], m, o) for name, (master, m, o) in ours.mimic_joints.items()}
        qp, vp, ap = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        for joint_id in range(1, model.njoints):
            name, joint = model.names[joint_id], model.joints[joint_id]
            k, m, o = (by_name[name], 1.0, 0.0) if name in by_name else mimic[name]
            qp[joint.idx_q], vp[joint.idx_v], ap[joint.idx_v] = m * q[k] + o, m * qd[k], m * qdd[k]
        tau_pin = pin.rnea(model, data, qp, vp, ap)
        expected = np.zeros(arm.nv)
        for joint_id in range(1, model.njoints):
            name = model.names[joint_id]
            k, m, _ = (by_name[name], 1.0, 0.0) if name in by_name else mimic[name]
            expected[k] += m * tau_pin[model.joints[joint_id].idx_v]
        np.testing.assert_allclose(rd.inverse_dynamics(ours, q, qd, qdd), expected, rtol=1e-7, atol=1e-9)


def test_payload_yaml_holds_the_dynamics_nodes_parameters():
    import yaml

    from robot_dynamics.nodes.dynamics.plan import PARAMETERS, Settings, coerce_setting, make_plan

    theta = inertial_parameters_about_origin(1.5, [0.01, 0.02, 0.03], np.diag([0.01, 0.02, 0.025]))
    values = yaml.safe_load(payload_yaml("arm7_hand", theta))["robot_dynamics"]["ros__parameters"]["payload"]
    names = {parameter.name: parameter.field for parameter in PARAMETERS}
    fields = {names[f"payload.{key}"]: coerce_setting(names[f"payload.{key}"], value) for key, value in values.items()}
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    plan = make_plan(arm, Settings(**fields))
    q = np.full(arm.nv, 0.3)
    expected = arm.with_payload("arm7_hand", 1.5, [0.01, 0.02, 0.03], np.diag([0.01, 0.02, 0.025]))
    np.testing.assert_allclose(rd.gravity_torques(plan.model, q), rd.gravity_torques(expected, q), rtol=1e-12)
    assert all(isinstance(value, float) for value in [values["mass"], *values["com"], *values["inertia"]])


# ----------------------------------------------------------------------------------- bad input

def test_bad_recordings_are_refused_with_what_to_do(tmp_path, planar, planar_run):
    _, run = planar_run
    no_effort = tmp_path / "no_effort.csv"
    write_csv(no_effort, run.joint_names, run.t, run.q, run.qd)
    with pytest.raises(RecordingError, match=r"no efforts for joint\(s\) theta1, theta2.*fills 'effort'"):
        identify(read_recording(no_effort), planar)
    one_joint = tmp_path / "one_joint.csv"
    write_csv(one_joint, run.joint_names[:1], run.t, run.q[:, :1], run.qd[:, :1], run.tau[:, :1])
    with pytest.raises(RecordingError, match=r"no positions for joint\(s\) theta2"):
        identify(read_recording(one_joint), planar)
    with pytest.raises(IdentificationError, match="too short"):
        identify(read_recording(_short(tmp_path, run, slice(0, 40))), planar)
    still = np.tile(run.q[:1], (len(run.t), 1))
    with pytest.raises(IdentificationError, match="condition number is .* record an excitation"):
        identify(read_recording(_csv(tmp_path, run, "still.csv", q=still, qd=0 * still)), planar)
    with pytest.raises(IdentificationError, match="unknown payload link 'tool'.*link2"):
        identify(read_recording(_csv(tmp_path, run)), planar, payload="tool")
    with pytest.raises(RecordingError, match="no such recording"):
        read_recording(tmp_path / "missing")


def _short(tmp_path, run, rows):
    path = tmp_path / "short.csv"
    write_csv(path, run.joint_names, run.t[rows], run.q[rows], run.qd[rows], run.tau[rows])
    return path


def test_nan_samples_are_dropped_with_a_warning(tmp_path, planar, planar_run):
    _, run = planar_run
    tau = run.tau.copy()
    tau[100:110, 1] = np.nan
    with pytest.warns(UserWarning, match=r"10 of \d+ tau samples of joint 'theta2' are NaN"):
        _, check = identify(read_recording(_csv(tmp_path, run, tau=tau)), planar, friction=True)
    assert np.all(np.isfinite(check.identified)) and np.all(check.rms_identified < 0.02 * check.rms_torque)


# ----------------------------------------------------------------------------------- command line

def _cli(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "robot-dynamics"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def test_cli_identify_writes_the_files_and_errors_are_one_line(tmp_path, planar_run):
    _, run = planar_run
    write_rosbag(tmp_path / "bag", joint_state_messages(run.joint_names, run.t, run.q, run.qd, run.tau))
    done = _cli("identify", "bag", "--urdf", "planar_2r", "--friction", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "RMS torque error per joint" in done.stdout and "theta2" in done.stdout
    for name in ("identified.urdf", "parameters.txt", "validation.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    rd.load_urdf(tmp_path / "out" / "identified.urdf")
    write_csv(tmp_path / "no_effort.csv", run.joint_names, run.t, run.q)
    done = _cli("identify", "no_effort.csv", "--urdf", "planar_2r", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no efforts" in done.stderr



# ----------------------------------------------------------------- the trajectory publisher plays it

def test_trajectory_publisher_plays_the_excitation_file(tmp_path, planar, planar_excitation):
    from robot_dynamics.nodes.trajectory_publisher.plan import Settings, coerce_setting, make_trajectory

    path = tmp_path / "excitation.csv"
    write_trajectory_csv(path, planar_excitation, 10.0, 1000.0)
    played = make_trajectory(planar, Settings(excitation_file=coerce_setting("excitation_file", str(path))))
    assert played.names == list(planar.joint_names) and "start pose" in played.notes[0]
    for t in (0.0, 1.2345, 7.5):
        for exact, sent in zip(planar_excitation(t), played.at(t)):
            np.testing.assert_allclose(sent, exact, atol=2e-5)
    np.testing.assert_allclose(played.at(20.0)[0], planar_excitation(10.0)[0], atol=1e-8)  # held at the end, at rest
    np.testing.assert_allclose(played.at(20.0)[1], 0, atol=1e-8)
    with pytest.raises(ValueError, match="excitation_file: .*missing.csv"):
        make_trajectory(planar, Settings(excitation_file=str(tmp_path / "missing.csv")))
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    with pytest.raises(ValueError, match="theta1"):
        make_trajectory(arm, Settings(excitation_file=str(path)))
