"""``robot-dynamics external-torques``: the residual over a recording, against simulator truth."""

import csv

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cli
from robot_dynamics.identification.recording import joint_state_messages, write_csv, write_rosbag
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.simulation.simulator import Simulator

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


def in_link_axes(model, q, link, wrench):
    """A world-aligned ``[moment; force]`` about the link's origin, in the link's own axes (a WrenchStamped's)."""
    R = rd.frame_pose(model, q, link)[:3, :3]
    return np.concatenate((R.T @ wrench[:3], R.T @ wrench[3:]))


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
    # the wrench columns as external_wrench_estimate carries them: in arm7_hand's own axes
    np.testing.assert_allclose(table[-1, -3:], in_link_axes(model, q[-1], "arm7_hand", WRENCH)[3:], atol=0.3)
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
    assert cli.main(["external-torques", str(recording), "--urdf", "arm7_gripper"]) == 2
    message = capsys.readouterr().err.strip()
    assert "no efforts" in message and "\n" not in message
    assert cli.main(["external-torques", str(recording), "--urdf", "arm7_gripper", "--frame", "nowhere"]) == 2
    assert "--frame 'nowhere'" in capsys.readouterr().err
    # a frame no joint moves has no wrench (NaN columns before): refused, before the work, with the reason
    assert cli.main(["external-torques", str(tmp_path / "missing.csv"), "--urdf", "arm7_gripper", "--frame",
                     "arm7_link0", "--output", str(tmp_path / "root")]) == 2
    message = capsys.readouterr().err.strip()
    assert "--frame 'arm7_link0' is fixed to the base" in message and "\n" not in message
    assert not (tmp_path / "root").exists()
    assert cli.main(["external-torques", str(tmp_path / "missing.csv"), "--urdf", "arm7_gripper"]) == 2
    assert "no such recording" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["external-torques", str(recording)])
    assert exit_info.value.code == 2


# ------------------------------------------------------------------------- round 3 (issue 31, item 10)

def _refused(capsys, argv, *words):
    """Exit 2 and one error line naming ``words``, no traceback (cli.main returns the status)."""
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("warning: ") for line in lines[:-1]), lines
    for word in words:
        assert word in lines[-1], (word, lines)


def test_outputs_that_cannot_take_the_results_are_refused_before_the_work(tmp_path, capsys, monkeypatch):
    model, t, q, qd, tau, _ = recorded_run(push_from=1e9)
    write_csv(tmp_path / "run.csv", model.joint_names, t[:300], q[:300], qd[:300], tau[:300])
    base = [str(tmp_path / "run.csv"), "--urdf", "arm7_gripper"]
    from robot_dynamics.tools import external_torques as tool

    def no_work(*args, **kwargs):
        raise AssertionError("the observer ran before the output was checked")

    monkeypatch.setattr(tool, "external_torques", no_work)
    (tmp_path / "a_file").write_text("keep me")
    _refused(capsys, ["external-torques", *base, "--output", str(tmp_path / "a_file")], "not a directory")
    assert (tmp_path / "a_file").read_text() == "keep me"
    _refused(capsys, ["external-torques", *base, "--output", str(tmp_path / "a_file" / "sub")], "is a file")
    (tmp_path / "out" / "external_torques.png").mkdir(parents=True)
    _refused(capsys, ["external-torques", *base, "--output", str(tmp_path / "out")], "external_torques.png",
             "not a file")
    monkeypatch.undo()
    _refused(capsys, ["external-torques", *base, "--output", str(tmp_path / "out")], "external_torques.png")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["external_torques.png"]  # no half-written CSV
    _refused(capsys, ["external-torques", *base, "--output", "/proc/nope"], "--output /proc/nope")


def test_an_absurd_effort_is_dropped_not_turned_into_thresholds(tmp_path, capsys):
    model, t, q, qd, tau, _ = recorded_run(push_from=1e9)
    tau = tau.copy()
    tau[1000, 2] = 1e300
    write_csv(tmp_path / "run.csv", model.joint_names, t, q, qd, tau)
    assert cli.main(["external-torques", str(tmp_path / "run.csv"), "--urdf", "arm7_gripper", "--friction",
                     "--output", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "1 of 2001 tau samples of joint 'arm7_joint3'" in captured.err and "implausible" in captured.err
    thresholds = [float(x) for x in captured.out.split("collision.thresholds: [")[1].split("]")[0].split(",")]
    assert np.all(np.isfinite(thresholds)) and max(thresholds) < 1.0, thresholds


def test_the_missing_joint_hint_names_an_option_the_command_has(tmp_path, capsys):
    model, t, q, qd, tau, _ = recorded_run(push_from=1e9)
    write_csv(tmp_path / "run.csv", model.joint_names[:7], t, q[:, :7], qd[:, :7], tau[:, :7])
    _refused(capsys, ["external-torques", str(tmp_path / "run.csv"), "--urdf", "arm7_gripper", "--output",
                      str(tmp_path / "out")], "--lock arm7_finger_joint1=VALUE")
    assert cli.main(["external-torques", str(tmp_path / "run.csv"), "--urdf", "arm7_gripper", "--friction",
                     "--lock", "arm7_finger_joint1=0.02", "--output", str(tmp_path / "out")]) == 0
    assert "r_arm7_finger_joint1" not in (tmp_path / "out" / "external_torques.csv").read_text().splitlines()[0]


def test_a_passive_joint_has_zero_torque_and_needs_no_effort(tmp_path, capsys):
    """The gripper's finger left unactuated (no torque, no effort recorded): --passive gives it
    tau = 0, and the residual is the model's (exact here) on every joint, the finger's included."""
    model = rd.load_urdf(str(bundled_urdf("arm7_gripper")))
    sim = Simulator(model, q=HOME, apply_damping=True, apply_friction=True, enforce_position_limits=False)
    rows = [(sim.t, sim.q, sim.qd, np.zeros(model.nv))]
    for _ in range(1500):
        tau = rd.gravity_torques(model, sim.q) + 40 * (HOME + 0.2 * np.sin(3 * sim.t) - sim.q) - 6 * sim.qd
        tau[7] = 0.0
        sim.step(tau, 1e-3)
        rows.append((sim.t, sim.q, sim.qd, sim.applied_effort))
    t, q, qd, tau = (np.array(column) for column in zip(*rows))
    write_csv(tmp_path / "run.csv", model.joint_names, t, q, qd, tau)
    lines = (tmp_path / "run.csv").read_text().splitlines()
    drop = lines[0].split(",").index("tau_arm7_finger_joint1")
    (tmp_path / "run.csv").write_text("\n".join(",".join(c for k, c in enumerate(line.split(",")) if k != drop)
                                                for line in lines) + "\n")
    _refused(capsys, ["external-torques", str(tmp_path / "run.csv"), "--urdf", "arm7_gripper", "--output",
                      str(tmp_path / "out")], "no efforts for joint(s) arm7_finger_joint1", "--passive arm7_finger_joint1")
    assert cli.main(["external-torques", str(tmp_path / "run.csv"), "--urdf", "arm7_gripper", "--friction", "--gain",
                     "50", "--passive", "arm7_finger_joint1", "--output", str(tmp_path / "out")]) == 0
    _, table = read_table(tmp_path / "out" / "external_torques.csv")
    settled = table[:, 0] > 0.2
    assert np.abs(table[settled, 1:1 + model.nv]).max() < 0.02
    capsys.readouterr()
