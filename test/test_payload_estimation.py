"""Payload estimation (robot_dynamics/identification/payload.py), its CLI and demo: against a known payload
the simulator carries and the controller's model does not (the goals of issue 35)."""

import subprocess
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.identification import IdentificationError, RecordingError, design_excitation
from robot_dynamics.identification.payload import estimate_payload, recording_of
from robot_dynamics.identification.recording import write_csv
from robot_dynamics.identification.simulated import record
from robot_dynamics.tools.payload_demo import POSES, held_duration, held_poses, urdf_with_payload

LINK = "arm7_hand"
#: 2.0 kg, 8 cm off the flange axis (z), 5 cm out; inertia about its centre of mass
MASS, COM, INERTIA = 2.0, np.array([0.08, 0.0, 0.05]), (0.006, 0.0005, 0.0, 0.008, 0.0, 0.005)


@pytest.fixture(scope="module")
def arm():
    return rd.load_urdf(bundled_urdf("arm7_gripper"))


@pytest.fixture(scope="module")
def loaded(arm):
    """The simulator's robot: the URDF with one more link, the payload, fixed to the flange."""
    return rd.load_urdf(urdf_with_payload(bundled_urdf("arm7_gripper").read_text(), LINK, MASS, COM, INERTIA))


def _window(run):
    return recording_of(run.joint_names, run.t, run.q, run.qd, run.tau, "simulated")


@pytest.fixture(scope="module")
def held(arm, loaded):
    """Four poses held by computed torque (the model knows no payload), 4 s each, 1.5 s between."""
    return record(loaded, arm, held_poses(POSES, hold=4.0, move=1.5), held_duration(4, 4.0, 1.5), torque_noise=0.01)


def test_the_payload_link_of_the_simulator_is_what_with_payload_adds(arm, loaded):
    q = POSES[3]
    expected = arm.with_payload(LINK, MASS, COM, np.array([[0.006, 0.0005, 0], [0.0005, 0.008, 0], [0, 0, 0.005]]))
    np.testing.assert_allclose(rd.inverse_dynamics(loaded, q, q, q), rd.inverse_dynamics(expected, q, q, q), atol=1e-12)
    assert abs(rd.gravity_torques(loaded, q) - rd.gravity_torques(arm, q)).max() > 1.0  # it weighs


def test_four_held_poses_give_the_mass_within_2_percent_and_the_com_within_5_mm(arm, held):
    result = estimate_payload(_window(held), arm, LINK)
    assert result.mode == "poses" and result.orientations == 4
    assert abs(result.mass - MASS) < 0.02 * MASS
    assert np.linalg.norm(result.com - COM) < 5e-3
    assert np.all(result.sigma[:4] > 0) and result.sigma[0] < 0.01 * MASS


def test_poses_held_still_leave_the_inertia_undetermined_and_say_so(arm, held):
    result = estimate_payload(_window(held), arm, LINK)
    assert not result.inertia_determined and list(result.determined) == [True] * 4 + [False] * 6
    assert np.all(result.inertia == 0)  # (applied as a point mass)
    report = "\n".join(result.report_lines())
    assert "inertia: not determined" in report
    assert "not determined: inertia xx, inertia xy, inertia xz, inertia yy, inertia yz, inertia zz" in report
    assert "mass (+-" in report and "payload.mass" not in report


def test_twenty_seconds_of_excitation_give_the_inertia_within_10_percent(arm, loaded):
    run = record(loaded, arm, design_excitation(arm, iterations=0), 20.0, torque_noise=0.01)
    result = estimate_payload(_window(run), arm, LINK)
    assert result.mode == "motion" and result.inertia_determined
    truth = np.array([[0.006, 0.0005, 0], [0.0005, 0.008, 0], [0, 0, 0.005]])
    for k in range(3):
        assert abs(result.inertia[k, k] - truth[k, k]) < 0.1 * truth[k, k], (k, result.inertia)
    assert np.linalg.norm(result.inertia - truth) < 0.1 * np.linalg.norm(truth)
    assert abs(result.mass - MASS) < 0.02 * MASS and np.linalg.norm(result.com - COM) < 5e-3
    assert np.all(result.determined) and np.all(np.isfinite(result.sigma))
    assert "physically consistent: yes" in "\n".join(result.report_lines())


def test_poses_that_only_turn_about_the_vertical_are_too_few(arm, loaded):
    turned = POSES[[0, 0, 0]].copy()
    turned[:, 0] = [0.0, 0.8, -0.8]  # joint 1's axis is vertical: the hand keeps its orientation to gravity
    run = record(loaded, arm, held_poses(turned, hold=5.0, move=1.0), held_duration(3, 5.0, 1.0))
    with pytest.raises(IdentificationError, match="too few distinct poses.*1 orientation.*at least 2"):
        estimate_payload(_window(run), arm, LINK)


def test_a_window_without_efforts_is_refused_with_the_reason(arm, held):
    with pytest.raises(RecordingError, match="no efforts for joint"):
        estimate_payload(recording_of(held.joint_names, held.t, held.q, held.qd, None), arm, LINK)
    with pytest.raises(IdentificationError, match="every effort is 0"):
        estimate_payload(recording_of(held.joint_names, held.t, held.q, held.qd, 0 * held.tau), arm, LINK)


def test_a_link_on_the_base_or_unknown_is_refused(arm, held):
    with pytest.raises(IdentificationError, match="fixed to the base"):
        estimate_payload(_window(held), arm, "arm7_link0")
    with pytest.raises(IdentificationError, match="unknown payload link 'tool'"):
        estimate_payload(_window(held), arm, "tool")


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "robot_dynamics.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_cli_estimates_the_payload_from_a_csv_recording(tmp_path, held):
    write_csv(tmp_path / "held.csv", held.joint_names, held.t, held.q, held.qd, held.tau)
    done = _cli("estimate-payload", "held.csv", "--urdf", "arm7_gripper", "--link", LINK, cwd=tmp_path)
    _check_cli_answer(done)


def test_cli_estimates_the_payload_from_a_rosbag2_recording(tmp_path, held):
    from robot_dynamics.identification.recording import joint_state_messages, write_rosbag

    write_rosbag(tmp_path / "held_bag", joint_state_messages(held.joint_names, held.t, held.q, held.qd, held.tau),
                 storage="mcap")
    _check_cli_answer(_cli("estimate-payload", "held_bag", "--urdf", "arm7_gripper", "--link", LINK, cwd=tmp_path))


def _check_cli_answer(done):
    assert done.returncode == 0, done.stderr
    mass = float(done.stdout.split("payload.mass ")[1].split()[0])
    assert abs(mass - MASS) < 0.02 * MASS
    assert "payload on arm7_hand from poses held still" in done.stdout and "inertia: not determined" in done.stdout
    assert "payload:\n      link: \"arm7_hand\"" in done.stdout


def test_cli_refuses_a_recording_of_one_orientation_with_the_reason(tmp_path, held):
    still = held.t < 3.5  # the first pose only
    write_csv(tmp_path / "one.csv", held.joint_names, held.t[still], held.q[still], held.qd[still], held.tau[still])
    done = _cli("estimate-payload", "one.csv", "--urdf", "arm7_gripper", "--link", LINK, cwd=tmp_path)
    assert done.returncode == 2
    assert "payload not estimated: too few distinct poses" in done.stderr


def test_demo_payload_estimates_the_3_kg_and_tracks_better_after(tmp_path):
    done = _cli("demo-payload", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before = float(done.stdout.split("before: tracking error RMS ")[1].split()[0])
    after = float(done.stdout.split("after:  tracking error RMS ")[1].split()[0])
    mass = float(done.stdout.split("  mass ")[1].split()[0])
    assert abs(mass - 3.0) < 0.06 and after < before / 10, done.stdout


def test_the_node_refuses_an_estimate_that_payload_parameters_would_refuse(arm):
    from dataclasses import replace

    from robot_dynamics.nodes.dynamics.payload import estimate_window
    from robot_dynamics.nodes.dynamics.plan import Settings, make_plan

    plan = make_plan(arm, replace(Settings(), payload_estimation_enabled=True, payload_link=LINK))
    trajectory = held_poses(POSES, hold=2.0, move=1.0)
    t = np.arange(0.0, held_duration(4, 2.0, 1.0), 0.005)
    q, qd, qdd = (np.array(values) for values in zip(*(trajectory(time) for time in t)))
    far = arm.with_payload(LINK, 0.5, [2.5, 0.0, 0.0], [0.0] * 6)  # its centre of mass beyond the arm's reach
    with pytest.raises(ValueError, match="not plausible: payload.com .* beyond the robot's reach"):
        estimate_window(plan.payload_estimation, plan.plausibility, t, q, qd, rd.inverse_dynamics(far, q, qd, qdd))
    near = arm.with_payload(LINK, 0.5, [0.1, 0.0, 0.0], [0.0] * 6)
    result, _ = estimate_window(plan.payload_estimation, plan.plausibility, t, q, qd, rd.inverse_dynamics(near, q, qd, qdd))
    assert abs(result.mass - 0.5) < 1e-3 and np.linalg.norm(result.com - [0.1, 0, 0]) < 1e-4


def test_a_gap_in_the_windows_clock_is_left_out_not_interpolated(arm, held):
    """Two sessions of held poses 4.5 s apart (joint states not kept in between): the resampling's straight
    line across the gap is no state of the arm (interpolated, it put the mass 6 % off)."""
    t = np.concatenate([held.t, held.t + 25.0])
    twice = [np.concatenate([values, values]) for values in (held.q, held.qd, held.tau)]
    result = estimate_payload(recording_of(held.joint_names, t, *twice), arm, LINK)
    assert abs(result.mass - MASS) < 0.02 * MASS and np.linalg.norm(result.com - COM) < 5e-3
