"""check-trajectory: hand-made trajectories whose first violations are known in closed form.

The robot is a pendulum (1 kg point mass 1 m below a pivot about +y, effort limit 5 N m, velocity
limit 2 rad/s): tau = m g l sin q + (m l^2 + armature) qdd.
"""

import json
import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cli
from robot_dynamics.trajectories.check import Trajectory, TrajectoryError, check_trajectory, read_trajectory, sample

PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <link name="link"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="link"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="5" velocity="2"/></joint>
</robot>"""
G = 9.81


@pytest.fixture(scope="module")
def pendulum():
    return rd.load_urdf(PENDULUM)


def test_linear_positions_first_effort_violation(pendulum):
    """q from 0 to 1 rad in 1 s, linear: tau = g sin q(t) passes 5 N m at q = asin(5 / g)."""
    check = check_trajectory(pendulum, Trajectory(["swing"], [0.0, 1.0], [[0.0], [1.0]]))
    assert check.interpolation == "linear" and any("linear" in note for note in check.notes)
    (violation,) = check.violations
    crossing = math.asin(5.0 / G)  # s, since q = t
    assert violation.quantity == "effort" and violation.joint == "swing" and violation.limit == 5.0
    assert violation.time == pytest.approx(math.ceil(crossing * 1000) / 1000, abs=1e-12)
    assert violation.value == pytest.approx(G * math.sin(violation.time), rel=1e-9)
    assert check.peak_effort_fraction["swing"] == pytest.approx(G * math.sin(1.0) / 5.0, rel=1e-9)
    assert check.peak_velocity_fraction["swing"] == pytest.approx(0.5)


def test_cubic_first_velocity_violation(pendulum):
    """q from 0 to 2 rad in 1 s, rest to rest (positions + velocities): qd = 12 (s - s^2) passes
    2 rad/s at s = (1 - sqrt(1/3)) / 2."""
    trajectory = Trajectory(["swing"], [0.0, 1.0], [[0.0], [2.0]], qd=[[0.0], [0.0]])
    check = check_trajectory(pendulum, trajectory)
    crossing = (1 - math.sqrt(1 / 3)) / 2
    velocity = [v for v in check.violations if v.quantity == "velocity"]
    assert len(velocity) == 1 and check.interpolation == "cubic"
    assert velocity[0].time == pytest.approx(math.ceil(crossing * 1000) / 1000, abs=1e-12)
    assert velocity[0].value == pytest.approx(12 * (velocity[0].time - velocity[0].time ** 2), rel=1e-9)
    assert check.peak_velocity_fraction["swing"] == pytest.approx(3.0 / 2.0, rel=1e-9)


def test_quintic_with_armature_peak_effort(pendulum):
    """Rest to rest with accelerations (quintic): q = 10 s^3 - 15 s^4 + 6 s^5; tau includes the
    rotor's armature qdd."""
    armature = 0.5
    model = pendulum.with_armature([armature])
    trajectory = Trajectory(["swing"], [0.0, 1.0], [[0.0], [0.3]], qd=[[0.0], [0.0]], qdd=[[0.0], [0.0]])
    t, q, qd, qdd = sample(trajectory, rate=1000)
    s = t
    np.testing.assert_allclose(q[:, 0], 0.3 * (10 * s**3 - 15 * s**4 + 6 * s**5), atol=1e-12)
    np.testing.assert_allclose(qdd[:, 0], 0.3 * (60 * s - 180 * s**2 + 120 * s**3), atol=1e-9)
    check = check_trajectory(model, trajectory)
    tau = G * np.sin(q[:, 0]) + (1.0 + armature) * qdd[:, 0]
    assert check.peak_effort["swing"] == pytest.approx(np.abs(tau).max(), rel=1e-9)
    assert check.ok and check.interpolation == "quintic"


def test_friction_adds_the_urdf_dynamics(pendulum):
    xml = PENDULUM.replace('<axis xyz="0 1 0"/>', '<axis xyz="0 1 0"/><dynamics damping="3" friction="0"/>')
    model = rd.load_urdf(xml)
    trajectory = Trajectory(["swing"], [0.0, 1.0], [[0.0], [0.5]])  # 0.5 rad/s: damping 1.5 N m
    without, with_friction = check_trajectory(model, trajectory), check_trajectory(model, trajectory, friction=True)
    assert with_friction.peak_effort["swing"] == pytest.approx(G * math.sin(0.5) + 1.5, rel=1e-9)
    assert without.peak_effort["swing"] == pytest.approx(G * math.sin(0.5), rel=1e-9)


def test_bad_trajectories_are_refused(pendulum):
    with pytest.raises(TrajectoryError, match="strictly increasing"):
        Trajectory(["swing"], [0.0, 0.0], [[0.0], [1.0]])
    with pytest.raises(TrajectoryError, match="two waypoints"):
        Trajectory(["swing"], [0.0], [[0.0]])
    with pytest.raises(TrajectoryError, match="non-finite"):
        Trajectory(["swing"], [0.0, 1.0], [[0.0], [math.nan]])
    with pytest.raises(TrajectoryError, match="not in the model: elbow"):
        check_trajectory(pendulum, Trajectory(["elbow"], [0.0, 1.0], [[0.0], [1.0]]))


ECHO = """header:
  stamp:
    sec: 0
    nanosec: 0
  frame_id: ''
joint_names:
- swing
points:
- positions:
  - 0.0
  velocities: []
  accelerations: []
  effort: []
  time_from_start:
    sec: 0
    nanosec: 0
- positions:
  - 1.0
  velocities: []
  accelerations: []
  effort: []
  time_from_start:
    sec: 1
    nanosec: 0
---
"""


def _cli(args, capsys):
    status = cli.main(["check-trajectory", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cli_reads_csv_yaml_and_bag_and_exits_by_verdict(tmp_path, capsys):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(PENDULUM)
    (tmp_path / "slow.csv").write_text("t,q_swing\n0,0\n1,0.4\n")
    (tmp_path / "fast.yaml").write_text(ECHO)
    status, out, _ = _cli([str(urdf), str(tmp_path / "slow.csv")], capsys)
    assert status == 0 and "within the effort and velocity limits" in out
    status, out, _ = _cli([str(urdf), str(tmp_path / "fast.yaml"), "--json"], capsys)
    report = json.loads(out)
    assert status == 1 and not report["ok"]
    assert report["violations"][0]["time"] == pytest.approx(0.535) and report["violations"][0]["joint"] == "swing"

    from rosbags.rosbag2 import Writer

    from robot_dynamics.input_files import bag_typestore

    store = bag_typestore()
    JT = store.types["trajectory_msgs/msg/JointTrajectory"]
    Point = store.types["trajectory_msgs/msg/JointTrajectoryPoint"]
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    Duration = store.types["builtin_interfaces/msg/Duration"]
    empty = np.empty(0)
    points = [Point(np.array([q]), empty, empty, empty, Duration(sec, 0)) for q, sec in ((0.0, 0), (1.0, 1))]
    with Writer(tmp_path / "bag", version=9) as writer:
        connection = writer.add_connection("/arm/joint_trajectory", "trajectory_msgs/msg/JointTrajectory", typestore=store)
        writer.write(connection, 1, store.serialize_cdr(JT(Header(Time(0, 0), ""), ["swing"], points),
                                                        "trajectory_msgs/msg/JointTrajectory"))
    trajectory = read_trajectory(tmp_path / "bag")
    assert trajectory.joint_names == ("swing",) and list(trajectory.t) == [0.0, 1.0]
    status, out, _ = _cli([str(urdf), str(tmp_path / "bag"), "--topic", "/arm/joint_trajectory"], capsys)
    assert status == 1 and "VIOLATION at t = 0.5350 s: swing effort" in out


def test_cli_bad_input_exits_2_with_one_line(tmp_path, capsys):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(PENDULUM)
    (tmp_path / "bad.csv").write_text("t,q_swing\n0,0\n0,1\n")
    for args, message in (([str(urdf), str(tmp_path / "none.csv")], "no such trajectory"),
                          ([str(urdf), str(tmp_path / "bad.csv")], "strictly increasing"),
                          ([str(urdf), str(tmp_path / "bad.csv"), "--payload", "nowhere", "1"], "unknown link")):
        status, _, err = _cli(args, capsys)
        assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_payload_adds_its_weight(pendulum, tmp_path, capsys):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(PENDULUM)
    (tmp_path / "slow.csv").write_text("t,q_swing\n0,0\n1,0.4\n")
    status, out, _ = _cli([str(urdf), str(tmp_path / "slow.csv"), "--payload", "link", "0.5", "0", "0", "-1", "--json"],
                          capsys)
    assert json.loads(out)["joints"]["swing"]["peak_effort"] == pytest.approx(1.5 * G * math.sin(0.4), rel=1e-9)


def test_docs_example(tmp_path, capsys):
    """docs/cli.md's plan.csv and its two commands, as the page says: within the limits, then the
    shoulder's violation with 5 kg in the hand."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    plan = re.search(r"```text\n(t,q_arm7_joint1.*?)```", page, re.S).group(1)
    (tmp_path / "plan.csv").write_text(plan)
    commands = re.findall(r"^robot-dynamics (check-trajectory arm7_gripper plan\.csv.*)$", page, re.M)
    assert len(commands) == 2
    status, out, _ = _cli([*commands[0].split()[1:-1], str(tmp_path / "plan.csv")], capsys)
    assert status == 0 and "within the effort and velocity limits" in out
    assert re.search(r"arm7_joint2\s+60\.\d+\s+69\.\d %", out)
    args = commands[1].split()[1:]
    args[args.index("plan.csv")] = str(tmp_path / "plan.csv")
    status, out, _ = _cli(args, capsys)
    report = json.loads(out)
    assert status == 1 and report["violations"][0]["joint"] == "arm7_joint2"
    assert report["violations"][0]["time"] == pytest.approx(1.753) and report["violations"][0]["value"] < -87.0


def _pendulum_files(tmp_path):
    urdf = tmp_path / "pendulum.urdf"
    urdf.write_text(PENDULUM)
    (tmp_path / "slow.csv").write_text("t,q_swing\n0,0\n1,0.4\n")
    return str(urdf), str(tmp_path / "slow.csv")


@pytest.mark.parametrize("payload, reason", [
    (["link", "1e308"], "more than 10 times the robot's mass"),
    (["link", "1", "0", "0", "1e200"], "beyond the robot's reach"),
    (["link", "1", "0", "0", "-1", "1e300", "0", "0", "1e300", "0", "1e300"], "implausible"),
])
def test_a_payload_the_node_would_refuse_is_refused_and_no_verdict_is_given(tmp_path, capsys, payload, reason):
    """Before: peak |tau| nan, "within the effort and velocity limits", exit 0 ("ok": true and a bare
    NaN with --json)."""
    urdf, plan = _pendulum_files(tmp_path)
    for extra in ([], ["--json"]):
        status, out, err = _cli([urdf, plan, "--payload", *payload, *extra], capsys)
        assert status == 2 and out == "" and err.count("\n") == 1, (out, err)
        assert "--payload" in err and reason in err


def test_a_torque_that_is_not_finite_is_an_error_not_a_verdict(pendulum, tmp_path, capsys):
    """Accelerations of 1e308 overflow the quintic's coefficients, of 1e300 the pendulum's torque
    (m l^2 + armature) qdd with an armature of 1e10: no verdict either way."""
    trajectory = Trajectory(["swing"], [0.0, 1.0], [[0.0], [0.0]], qd=[[0.0], [0.0]], qdd=[[1e308], [-1e308]])
    with pytest.raises(TrajectoryError, match="position of swing at t = 0.* is nan.*no verdict"):
        check_trajectory(pendulum, trajectory)
    trajectory = Trajectory(["swing"], [0.0, 1.0], [[0.0], [0.0]], qd=[[0.0], [0.0]], qdd=[[1e300], [1e300]])
    with pytest.raises(TrajectoryError, match="torque of swing at t = 0 s is inf.*no verdict"):
        check_trajectory(pendulum.with_armature([1e10]), trajectory)
    urdf, _ = _pendulum_files(tmp_path)
    (tmp_path / "wild.csv").write_text("t,q_swing,qd_swing,qdd_swing\n0,0,0,1e308\n1,0,0,-1e308\n")
    status, out, err = _cli([urdf, str(tmp_path / "wild.csv"), "--json"], capsys)
    assert status == 2 and out == "" and "wild.csv" in err and "no verdict" in err


def test_a_check_longer_than_one_block_of_samples_finds_the_same_first_violation(pendulum):
    """q from 0 to 1 rad in 200 s (linear): tau = g sin q passes 5 N m at t = 200 asin(5 / g), beyond
    the first block of samples."""
    from robot_dynamics.trajectories.check import CHUNK

    check = check_trajectory(pendulum, Trajectory(["swing"], [0.0, 200.0], [[0.0], [1.0]]))
    crossing = 200 * math.asin(5.0 / G)
    assert check.samples == 200_001 > CHUNK and crossing * 1000 > CHUNK
    (violation,) = check.violations
    assert violation.time == pytest.approx(math.ceil(crossing * 1000) / 1000, abs=1e-9)
    assert check.peak_effort["swing"] == pytest.approx(G * math.sin(1.0), rel=1e-12)


YAML_POINT = "- positions: [{q}]\n  time_from_start: {{sec: {sec}, nanosec: 0}}\n"


@pytest.mark.parametrize("text, reason", [
    ("joint_names: [swing]\npoints:\n- positions: [0.0]\n- positions: [1.0]\n", "point 0 has no time_from_start"),
    ("joint_names: [swing]\npoints:\n- positions: [0.0]\n  time_from_start: 5\n", "time_from_start must be {sec: S"),
    ("joint_names: [swing]\npoints: foo\n", "points must be a list"),
    ("joint_names: [1, 2]\npoints:\n" + YAML_POINT.format(q="0, 0", sec=0), "joint_names must be a list of names"),
    ("joint_names: [swing]\npoints:\n- positions: [zero]\n  time_from_start: {sec: 0}\n", "positions must be a finite"),
    ("joint_names: [swing]\npoints:\n- positions: 0\n  time_from_start: {sec: 0}\n", "positions must be a list"),
    ("joint_names: [swing]\npoints:\n- positions: [0]\n  time_from_start: {sec: 1" + "0" * 400 + "}\n",
     "sec must be a finite number"),
    ("joint_names: [swing]\npoints:\n" + YAML_POINT.format(q=0, sec=0) + YAML_POINT.format(q=1, sec=100_000_000),
     "more than the 86400 s allowed"),
    ("points: [\n", "is not YAML"),
])
def test_a_malformed_yaml_trajectory_is_one_line_naming_the_file(tmp_path, capsys, text, reason):
    """Before: KeyError/AttributeError/TypeError tracebacks (exit 1), or an error without the file."""
    urdf, _ = _pendulum_files(tmp_path)
    (tmp_path / "plan.yaml").write_text(text)
    status, out, err = _cli([urdf, str(tmp_path / "plan.yaml")], capsys)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert str(tmp_path / "plan.yaml") in err and reason in err, err


@pytest.mark.parametrize("rate, reason", [("1e12", "lower --rate"), ("1e7", "lower --rate"), ("0", "positive, finite"),
                                          ("nan", "positive, finite"), ("inf", "positive, finite")])
def test_a_rate_beyond_the_sample_limit_is_refused_before_the_work(tmp_path, capsys, rate, reason):
    """Before: --rate 1e12 an _ArrayMemoryError traceback, --rate 1e7 on a 2 s plan 5.5 GB."""
    urdf, _ = _pendulum_files(tmp_path)
    (tmp_path / "two.csv").write_text("t,q_swing\n0,0\n2,0.4\n")
    try:
        status = cli.main(["check-trajectory", urdf, str(tmp_path / "two.csv"), "--rate", rate])
    except SystemExit as usage_error:  # (argparse: a usage error)
        status = usage_error.code
    err = capsys.readouterr().err
    assert status == 2 and reason in err and err.count("\n") == 1, err


def test_waypoints_spanning_more_than_a_day_are_refused(tmp_path, capsys):
    """Before: waypoints at 0 and 1e8 s gave an _ArrayMemoryError traceback."""
    urdf, _ = _pendulum_files(tmp_path)
    (tmp_path / "long.csv").write_text("t,q_swing\n0,0\n1e8,0.4\n")
    status, out, err = _cli([urdf, str(tmp_path / "long.csv")], capsys)
    assert status == 2 and "long.csv" in err and "86400 s" in err and err.count("\n") == 1
