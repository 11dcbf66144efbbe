"""``robot-dynamics external-torques``: the residual over a recording, against simulator truth."""

import csv

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cli
from robot_dynamics.identification.recording import joint_state_messages, write_csv, write_rosbag
from robot_dynamics.robots import bundled_urdf
from robot_dynamics.simulation import Simulator

HOME = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6, 0.02])
WRENCH = np.array([0.0, 0.0, 0.0, 5.0, -8.0, 15.0])


def recorded_run(push_from):
    """arm7_gripper swinging under a PD around HOME (URDF friction on) for 2 s at 1 kHz, a wrench on
    arm7_hand from ``push_from`` s on; (t, q, qd, applied effort, true J^T F at the end)."""
    model = rd.load_urdf(str(bundled_urdf("arm7_gripper")))
    sim = Simulator(model, q=HOME, apply_damping=True, apply_friction=True, enforce_position_limits=False)
    rows = [(sim.t, sim.q, sim.qd, np.zeros(model.nv))]
    for _ in range(2000):
        t = sim.t
        tau = rd.gravity_torques(model, sim.q) + 40 * (HOME + 0.2 * np.sin(3 * t) - sim.q) - 6 * sim.qd
        sim.step(tau, 1e-3, external_wrenches={"arm7_hand": WRENCH} if t >= push_from else None)
        rows.append((sim.t, sim.q, sim.qd, sim.applied_effort))
    t, q, qd, tau = (np.array(column) for column in zip(*rows))
    truth = rd.jacobian(model, sim.q, "arm7_hand").T @ WRENCH
    return model, t, q, qd, tau, truth


def read_table(path):
    with open(path) as stream:
        rows = list(csv.reader(stream))
    return rows[0], np.array(rows[1:], dtype=float)


def test_csv_recording_residual_thresholds_and_wrench(tmp_path, capsys):
    model, t, q, qd, tau, truth = recorded_run(push_from=1.0)
    recording = tmp_path / "run.csv"
    write_csv(recording, model.joint_names, t, q, qd, tau)
    status = cli.main(["external-torques", str(recording), "--urdf", "arm7_gripper", "--friction", "--gain", "100",
                       "--frame", "arm7_hand", "--output", str(tmp_path / "out")])
    assert status == 0
    printed = capsys.readouterr().out
    header, table = read_table(tmp_path / "out" / "external_torques.csv")
    assert header[:2] == ["t", "r_arm7_joint1"] and header[-1] == "fz_arm7_hand"
    r = table[:, 1:1 + model.nv]
    # the push, estimated back (the arm swings: the estimate lags the moving J^T F by about 1/K_O = 10 ms)
    np.testing.assert_allclose(r[-1], truth, atol=0.03 * np.abs(truth).max())
    np.testing.assert_allclose(table[-1, -3:], WRENCH[3:], atol=0.3)
    assert np.abs(r[(table[:, 0] > 0.1) & (table[:, 0] < 1.0)]).max() < 0.02  # no contact yet: the model is exact
    assert "collision.thresholds: [" in printed and "suggested threshold" in printed


def test_without_friction_the_residual_shows_the_model_error_in_a_rosbag(tmp_path, capsys):
    model, t, q, qd, tau, _ = recorded_run(push_from=1e9)  # no contact
    bag = tmp_path / "bag"
    write_rosbag(bag, joint_state_messages(model.joint_names, t, q, qd, tau))
    for friction in ([], ["--friction"]):
        assert cli.main(["external-torques", str(bag), "--urdf", "arm7_gripper", *friction,
                         "--output", str(tmp_path / f"out{len(friction)}")]) == 0
    _, without = read_table(tmp_path / "out0" / "external_torques.csv")
    _, with_friction = read_table(tmp_path / "out1" / "external_torques.csv")
    settled = without[:, 0] > 0.2
    # the friction the URDF gives (0.2-0.5 N m Coulomb) is what an observer without it reads as contact
    assert np.abs(without[settled, 1:1 + model.nv]).max() > 0.15
    assert np.abs(with_friction[settled, 1:1 + model.nv]).max() < 0.02
    capsys.readouterr()


def test_bad_input_is_one_line(tmp_path, capsys):
    model, t, q, qd, tau, _ = recorded_run(push_from=1e9)
    recording = tmp_path / "run.csv"
    write_csv(recording, model.joint_names, t, q, qd)  # no efforts
    assert cli.main(["external-torques", str(recording), "--urdf", "arm7_gripper"]) == 1
    message = capsys.readouterr().err.strip()
    assert "no efforts" in message and "\n" not in message
    assert cli.main(["external-torques", str(recording), "--urdf", "arm7_gripper", "--frame", "nowhere"]) == 1
    assert "--frame 'nowhere'" in capsys.readouterr().err
    # a frame no joint moves has no wrench (NaN columns before): refused, before the work, with the reason
    assert cli.main(["external-torques", str(tmp_path / "missing.csv"), "--urdf", "arm7_gripper", "--frame",
                     "arm7_link0", "--output", str(tmp_path / "root")]) == 1
    message = capsys.readouterr().err.strip()
    assert "--frame 'arm7_link0' is fixed to the base" in message and "\n" not in message
    assert not (tmp_path / "root").exists()
    assert cli.main(["external-torques", str(tmp_path / "missing.csv"), "--urdf", "arm7_gripper"]) == 1
    assert "no such recording" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["external-torques", str(recording)])
    assert exit_info.value.code == 2
