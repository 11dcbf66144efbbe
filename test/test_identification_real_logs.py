"""What real robots' recordings need (issue 27): joints the log lacks (--lock), honest validation
(--holdout, the repeat-period warning, several recordings), standard deviations that cover the
true error, drive realities (time stamps, effort signs, torque offsets, no velocities, no time
column), and what the data can and cannot see."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import DriveSettings, design_excitation, identify, read_recording, write_csv
from robot_dynamics.identification.identify import full_problem, structural_base
from robot_dynamics.identification.recording import Recording, RecordingError
from robot_dynamics.identification.simulated import record
from robot_dynamics.identification.validation import Holdout, parse_holdout, repeat_period
from robot_dynamics.description.robots import bundled_urdf

PLANAR = bundled_urdf("planar_2r")
SLIDER = """<joint name="slide" type="prismatic"><parent link="link2"/><child link="slider"/>
  <origin xyz="0.5 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="10" velocity="1"/></joint>
  <link name="slider"><inertial><origin xyz="0.05 0 0"/><mass value="0.4"/>
  <inertia ixx="1e-3" ixy="0" ixz="0" iyy="2e-3" iyz="0" izz="2e-3"/></inertial></link>
</robot>"""


@pytest.fixture(scope="module")
def planar():
    return rd.load_urdf(PLANAR)


@pytest.fixture(scope="module")
def excitation(planar):
    return design_excitation(planar, period=5.0, iterations=5)


@pytest.fixture(scope="module")
def run(planar, excitation):
    return record(planar, planar, excitation, 20.0, torque_noise=0.01, seed=1)


def _cli(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "robot-dynamics"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _recording(joint_names, t, q, qd, tau, source="sim"):
    recording = Recording(source)
    for j, name in enumerate(joint_names):
        for quantity, values in (("q", q), ("qd", qd), ("tau", tau)):
            if values is not None:
                recording.series[quantity][name] = (t, values[:, j])
    return recording


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return identify(*args, **kwargs)


# ------------------------------------------------------------------------------------- --lock

def test_a_locked_joint_is_folded_like_a_fixed_joint_at_its_position(tmp_path):
    urdf = tmp_path / "slider.urdf"
    urdf.write_text(PLANAR.read_text().replace("</robot>", SLIDER))
    full = rd.load_urdf(urdf)
    locked = rd.load_urdf(urdf, locks={"slide": 0.15})
    assert locked.joint_names == ("theta1", "theta2")
    rng = np.random.default_rng(0)
    for _ in range(5):
        q, qd, qdd = rng.normal(size=(3, 2))
        np.testing.assert_allclose(rd.inverse_dynamics(locked, q, qd, qdd),
                                   rd.inverse_dynamics(full, np.r_[q, 0.15], np.r_[qd, 0], np.r_[qdd, 0])[:2], atol=1e-12)
        np.testing.assert_allclose(rd.mass_matrix(locked, q), rd.mass_matrix(full, np.r_[q, 0.15])[:2, :2], atol=1e-12)
    arm = rd.load_urdf("arm7_gripper", locks={"arm7_finger_joint1": 0.03})  # its mimic follower is held too
    assert arm.nv == 7 and "arm7_finger_joint1" not in arm.joint_names
    with pytest.raises(rd.URDFError, match="cannot lock joint 'nope'"):
        rd.load_urdf(urdf, locks={"nope": 0.0})


def test_identify_with_lock_and_the_hint_when_a_joint_is_missing(tmp_path, planar, excitation):
    urdf = tmp_path / "slider.urdf"
    urdf.write_text(PLANAR.read_text().replace("</robot>", SLIDER))
    real = rd.load_urdf(urdf, locks={"slide": 0.1})
    run = record(real, real, excitation, 20.0, torque_noise=0.01, seed=2)
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    done = _cli("identify", "run.csv", "--urdf", urdf, "--output", "out", cwd=tmp_path)
    assert done.returncode == 2 and "no positions for joint(s) slide" in done.stderr
    assert "--lock slide=VALUE" in done.stderr
    done = _cli("identify", "run.csv", "--urdf", urdf, "--lock", "slide=0.1", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    identified = rd.load_urdf(tmp_path / "out" / "identified.urdf", locks={"slide": 0.1})
    q, qd, qdd = excitation(np.linspace(0, 5, 50))
    np.testing.assert_allclose(rd.inverse_dynamics(identified, q, qd, qdd), rd.inverse_dynamics(real, q, qd, qdd),
                               atol=0.01 * np.abs(rd.inverse_dynamics(real, q, qd, qdd)).max())
    assert "what the data see" in done.stdout
    # collision.yaml names the recorded joints: the dynamics node on identified.urdf (which keeps the
    # slide) takes its thresholds, one per joint of the recording
    import yaml
    from robot_dynamics.nodes.dynamics.plan import PARAMETERS, Settings, coerce_setting, make_plan

    parameters = yaml.safe_load((tmp_path / "out" / "collision.yaml").read_text())["robot_dynamics"]["ros__parameters"]
    assert parameters["joints"] == list(run.joint_names)
    fields = {parameter.name: parameter.field for parameter in PARAMETERS}
    flat = {"joints": parameters["joints"], **{f"{group}.{key}": value for group in ("external_torque", "collision")
                                               for key, value in parameters[group].items()}}
    plan = make_plan(rd.load_urdf(tmp_path / "out" / "identified.urdf"),
                     Settings(**{fields[name]: coerce_setting(fields[name], value) for name, value in flat.items()}))
    np.testing.assert_allclose(plan.external_torque.thresholds, parameters["collision"]["thresholds"])


# ------------------------------------------------------------------------------------ validation

def test_holdout_values():
    assert parse_holdout("last") == Holdout("last", 0.25)
    assert parse_holdout("first:0.3") == Holdout("first", 0.3)
    assert parse_holdout("0.2") == Holdout("last", 0.2)
    assert parse_holdout("kfold:4") == Holdout("kfold", 0.25, 4)
    for bad in ("kfold:1", "kfold:x", "middle", "1.5", "nan", "last:0"):
        with pytest.raises(RecordingError, match="--holdout"):
            parse_holdout(bad)


def test_holdout_first_last_and_kfold_predict_unseen_data(planar, run):
    recording = _recording(run.joint_names, run.t, run.q, run.qd, run.tau)
    last = _quiet(recording, planar, holdout=Holdout("last", 0.25))[1]
    first = _quiet(recording, planar, holdout=Holdout("first", 0.25))[1]
    assert last.samples.t[0] > first.samples.t[-1]
    folds = _quiet(recording, planar, holdout=parse_holdout("kfold:4"))[1]
    assert len(folds.samples.t) > 3 * len(last.samples.t)  # every sample predicted once, by a fit without it
    for check in (last, first, folds):
        assert np.all(check.rms_identified < 0.03 * check.rms_torque)


def test_a_held_out_part_that_repeats_the_excitation_is_warned_about(tmp_path, planar, excitation, run):
    recording = _recording(run.joint_names, run.t, run.q, run.qd, run.tau)
    with pytest.warns(UserWarning, match=r"repeat the excitation.s period of (4\.99|5\.0)\d* s \(detected"):  # 24 ms grid
        identify(recording, planar)
    t = np.linspace(0, 5, 2501)
    assert abs(repeat_period(t, excitation(t)[0])[0] or 0) < 1e-9  # one period: no repeat to find
    long_period = design_excitation(planar, period=20.0, iterations=3)
    once = record(planar, planar, long_period, 20.0, torque_noise=0.01, seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        identify(_recording(once.joint_names, once.t, once.q, once.qd, once.tau), planar)
    assert not [w for w in caught if "repeat" in str(w.message)]
    with pytest.warns(UserWarning, match="period of 5 s \\(from the excitation file\\)"):
        identify(recording, planar, period=5.0)


def test_several_recordings_with_their_own_torque_offsets(planar, excitation, run):
    other = record(planar, planar, excitation, 20.0, torque_noise=0.01, seed=7)
    offsets = np.array([[0.0, -0.6], [0.4, 0.2]])
    recordings = [_recording(r.joint_names, r.t, r.q, r.qd, r.tau + offset, f"day{k}")
                  for k, (r, offset) in enumerate(zip((run, other), offsets))]
    estimate, check = _quiet(recordings, planar, offsets=True)
    found = estimate.offsets()
    np.testing.assert_allclose(found[:, 1], offsets[:, 1], atol=0.03)
    # theta1's offset common to both days is confounded with its gravity (it hardly turns): only the
    # difference between the days is sharp there
    np.testing.assert_allclose(found[1] - found[0], offsets[1] - offsets[0], atol=0.03)
    assert "day0" in check.label and "day1" in check.label
    without, check_without = _quiet(recordings, planar)
    gain = check_without.rms_identified / check.rms_identified
    assert np.all(gain > 1.5), gain  # the offsets lower the held-out error


# ------------------------------------------------------------------------------- uncertainty

def test_two_sigma_covers_the_true_error_at_about_the_nominal_rate(planar, excitation):
    """Torques with correlated noise (3 % of each joint's RMS torque, correlation time 0.1 s, like a
    drive's ripple) on an exact motion: over 20 noise draws the base parameters' errors fall within
    their stated 2 sigma about 95 % of the time (white-residual sigmas cover about half)."""
    t = np.arange(0, 20.0, 0.002)
    q, qd, qdd = excitation(t)
    clean = rd.inverse_dynamics(planar, q, qd, qdd)
    independent, dependent, K = structural_base(full_problem(planar, False))
    theta = rd.inertial_parameters(planar)
    truth = theta[independent] + K @ theta[dependent]
    decay = np.exp(-0.002 / 0.1)
    z = []
    for seed in range(20):
        white = np.random.default_rng(seed).normal(size=clean.shape)
        noise = np.empty_like(white)
        noise[0] = white[0]
        for k in range(1, len(t)):
            noise[k] = decay * noise[k - 1] + np.sqrt(1 - decay**2) * white[k]
        tau = clean + 0.03 * np.sqrt(np.mean(clean**2, axis=0)) * noise
        estimate = _quiet(_recording(planar.joint_names, t, q, qd, tau), planar)[0]
        z.append((estimate.base_ols - truth) / estimate.base_std)
    coverage = np.mean(np.abs(np.array(z)) < 2)
    assert 0.85 <= coverage <= 0.995, coverage


def test_the_headline_is_the_same_on_every_run(tmp_path, run):
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    first, second = (_cli("identify", "run.csv", "--urdf", "planar_2r", "--output", name, cwd=tmp_path)
                     for name in ("a", "b"))
    assert first.stdout.splitlines()[0] == second.stdout.splitlines()[0]
    assert "known within +-10 % (2 sigma, from residuals correlated over" in first.stdout


# --------------------------------------------------------------------------------- drive realities

def test_repeated_and_jittered_time_stamps_are_reported_and_handled(planar, run):
    rng = np.random.default_rng(3)
    keep = np.sort(np.concatenate([np.arange(len(run.t)), rng.choice(len(run.t), len(run.t) * 6 // 100)]))
    jitter = run.t + rng.uniform(-0.4, 0.4, len(run.t)) * 0.002  # a logger's clock around the 2 ms robot period
    recording = _recording(run.joint_names, jitter[keep], run.q[keep], run.qd[keep], run.tau[keep])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, check = identify(recording, planar)
    messages = " ".join(str(w.message) for w in caught)
    assert "repeat the previous time stamp: the repeats were dropped" in messages
    assert "interpolated onto a uniform grid" in messages
    assert np.all(check.rms_identified < 0.03 * check.rms_torque)


def test_a_flipped_effort_sign_is_named_and_undone(tmp_path, planar, run):
    tau = run.tau * [1, -1]
    with pytest.warns(UserWarning, match="torques of theta2 run against.*--effort-sign theta2=-1"):
        identify(_recording(run.joint_names, run.t, run.q, run.qd, tau), planar)
    signs = DriveSettings(effort_sign=np.array([1.0, -1.0]))
    flipped = _quiet(_recording(run.joint_names, run.t, run.q, run.qd, tau), planar, drive=signs)[0]
    reference = _quiet(_recording(run.joint_names, run.t, run.q, run.qd, run.tau), planar)[0]
    np.testing.assert_allclose(flipped.base_ols, reference.base_ols, rtol=1e-9, atol=1e-12)
    write_csv(tmp_path / "flip.csv", run.joint_names, run.t, run.q, run.qd, tau)
    done = _cli("identify", "flip.csv", "--urdf", "planar_2r", "--effort-sign", "theta2=-1", "--output", "o", cwd=tmp_path)
    assert done.returncode == 0 and "run against" not in done.stderr


def test_positions_only_at_100_hz_without_a_time_column(tmp_path, planar, excitation):
    slow = record(planar, planar, excitation, 20.0, rate=100.0, torque_noise=0.01, seed=4)
    path = tmp_path / "positions.csv"
    columns = [f"q_{n}" for n in slow.joint_names] + [f"tau_{n}" for n in slow.joint_names]
    np.savetxt(path, np.column_stack([slow.q, slow.tau]), delimiter=",", header=",".join(columns), comments="")
    done = _cli("identify", "positions.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path)
    assert done.returncode == 2 and "give the sampling rate with --rate" in done.stderr
    done = _cli("identify", "positions.csv", "--urdf", "planar_2r", "--rate", "100", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    recording = read_recording(path, rate=100.0)
    _, check = _quiet(recording, planar)
    assert np.all(check.rms_identified < 0.05 * check.rms_torque)


def test_effort_sign_for_every_joint_or_by_name(planar):
    from robot_dynamics.identification.drive import parse_effort_signs

    np.testing.assert_array_equal(parse_effort_signs(planar, ["-1"]), [-1, -1])
    np.testing.assert_array_equal(parse_effort_signs(planar, ["theta2=-1"]), [1, -1])
    for bad in (["2"], ["elbow=-1"], ["theta1=x"]):
        with pytest.raises(RecordingError, match="--effort-sign"):
            parse_effort_signs(planar, bad)


def test_the_excitation_file_gives_the_period(tmp_path, excitation, run):
    from robot_dynamics.identification import write_trajectory_csv

    write_trajectory_csv(tmp_path / "excitation.csv", excitation, 20.0, 100.0)
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    done = _cli("identify", "run.csv", "--urdf", "planar_2r", "--excitation", "excitation.csv", "--output", "o",
                cwd=tmp_path)
    assert done.returncode == 0 and "period of 5 s (from the excitation file)" in done.stderr


def test_the_missing_plot_warning_names_the_plot_extra(tmp_path, run, monkeypatch, capsys):
    from robot_dynamics import cli

    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["identify", "run.csv", "--urdf", "planar_2r", "--output", "p"]) == 0
    assert "pip install 'robot_dynamics[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "p" / "validation.png").exists() and (tmp_path / "p" / "identified.urdf").exists()
