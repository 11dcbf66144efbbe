"""robot-dynamics retime: the pendulum of test_retime (1 kg at 1 m about +y, 5 N m, 2 rad/s) and the bundled arm;
what it writes is read back and checked, and what it refuses is one line with its exit status."""

import math
import re

import numpy as np
import pytest

from robot_dynamics import cli
from robot_dynamics.trajectories.check import check_trajectory, read_trajectory

PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <link name="link"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="link"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="5" velocity="2"/></joint>
</robot>"""
G = 9.81
PLAN = """t,q_arm7_joint1,q_arm7_joint2,q_arm7_joint4,qd_arm7_joint1,qd_arm7_joint2,qd_arm7_joint4
0.0,0.0,0.0,-1.5,0.0,0.0,0.0
1.0,0.4,0.6,-1.2,0.5,0.5,0.3
2.0,0.8,1.2,-0.9,0.0,0.0,0.0
"""


def _cli(args, capsys):
    status = cli.main(["retime", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "pendulum.urdf").write_text(PENDULUM)
    (tmp_path / "swing.csv").write_text("t,q_swing\n0,0\n1,0.4\n2,0.2\n")
    (tmp_path / "plan.csv").write_text(PLAN)
    return tmp_path


@pytest.mark.parametrize("suffix", [".yaml", ".csv"])
def test_the_output_reads_back_and_passes_the_check(files, capsys, suffix):
    """The retimed file, read as check-trajectory reads it: within the limits, efforts m g l sin q + m l^2 qdd,
    the durations and the binding joint printed."""
    output = files / f"retimed{suffix}"
    status, out, err = _cli([files / "pendulum.urdf", files / "swing.csv", "--output", output], capsys)
    assert status == 0, err
    given, retimed = re.search(r"duration: ([\d.]+) s given, ([\d.]+) s retimed", out).groups()
    assert float(given) == 2.0 and float(retimed) < 1.2
    assert re.search(r"segments 1-2 .*: swing (effort|velocity)", out)
    trajectory = read_trajectory(output)
    assert trajectory.t[-1] == pytest.approx(float(retimed), abs=1e-3)
    np.testing.assert_allclose(trajectory.effort[:, 0], G * np.sin(trajectory.q[:, 0]) + trajectory.qdd[:, 0], atol=1e-6)
    import robot_dynamics as rd

    assert check_trajectory(rd.load_urdf(PENDULUM), trajectory).ok


def test_the_csv_columns(files, capsys):
    output = files / "retimed.csv"
    assert _cli([files / "pendulum.urdf", files / "swing.csv", "-o", output], capsys)[0] == 0
    assert output.read_text().splitlines()[0] == "t,q_swing,qd_swing,qdd_swing,tau_swing"


def test_the_yaml_is_a_joint_trajectory_as_ros2_topic_echo_prints_it(files, capsys):
    output = files / "retimed.yaml"
    assert _cli([files / "pendulum.urdf", files / "swing.csv", "-o", output], capsys)[0] == 0
    text = output.read_text()
    assert text.startswith("header:\n  stamp:\n    sec: 0\n    nanosec: 0\n  frame_id: ''\njoint_names:\n- swing\npoints:\n")
    assert "  effort:\n  - " in text and "  time_from_start:\n    sec: 0\n    nanosec: 1000000\n" in text
    assert text.endswith("---\n")


def test_feedforward_only_keeps_the_timing(files, capsys):
    """Positions alone: the controller interpolates linearly (qdd = 0), so the efforts are m g l sin q."""
    output = files / "filled.csv"
    status, out, _ = _cli([files / "pendulum.urdf", files / "swing.csv", "--feedforward-only", "-o", output], capsys)
    assert status == 0 and "efforts filled at 3 waypoints" in out and "2.000 s" in out
    trajectory = read_trajectory(output)
    np.testing.assert_array_equal(trajectory.t, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(trajectory.effort[:, 0], G * np.sin([0.0, 0.4, 0.2]), atol=1e-12)


def test_an_acceleration_limit_and_a_margin_slow_it(files, capsys):
    """1 rad/s^2 binds before the 5 N m: 'swing acceleration' and |qdd| <= 1 in the file."""
    output = files / "slow.csv"
    status, out, _ = _cli([files / "pendulum.urdf", files / "swing.csv", "--acceleration-limit", "1",
                           "--effort-margin", "0.9", "-o", output], capsys)
    assert status == 0 and "swing acceleration" in out
    trajectory = read_trajectory(output)
    assert np.abs(trajectory.qdd).max() <= 1.0 and np.abs(trajectory.effort).max() <= 4.5


def test_a_payload_slows_the_arm(files, capsys):
    """The bundled arm's plan with 5 kg in the hand (beyond its shoulder's limit as planned, docs/cli.md):
    retimed within 87 N m with the payload; slower than without it."""
    import robot_dynamics as rd

    free = _cli(["arm7_gripper", files / "plan.csv"], capsys)
    status, out, err = _cli(["arm7_gripper", files / "plan.csv", "--payload", "arm7_hand", "5.0", "-o",
                             files / "loaded.yaml"], capsys)
    assert status == 0 and free[0] == 0, err
    duration = lambda text: float(re.search(r"([\d.]+) s retimed", text).group(1))  # noqa: E731
    assert duration(out) > duration(free[1])
    from robot_dynamics.description.robots import urdf_file

    model = rd.load_urdf(urdf_file("arm7_gripper")).with_payload("arm7_hand", 5.0, [0, 0, 0], [0] * 6)
    check = check_trajectory(model, read_trajectory(files / "loaded.yaml"))
    assert check.ok and check.peak_effort_fraction["arm7_joint2"] > 0.95


def test_an_infeasible_path_exits_1_naming_joint_time_and_torque(files, capsys):
    (files / "high.csv").write_text("t,q_swing\n0,0\n1,1.2\n")
    status, out, err = _cli([files / "pendulum.urdf", files / "high.csv", "-o", files / "never.csv"], capsys)
    assert status == 1 and out == "" and not (files / "never.csv").exists()
    assert len(err.strip().splitlines()) == 1 and "infeasible" in err
    assert "t = 1 s" in err and "swing needs 9.14" in err and "5 N m" in err


@pytest.mark.parametrize("args, reason", [
    (["--output", "out.txt"], "give a .csv or .yaml file"),
    (["--plot", "out.txt"], "give a .png"),
    (["--acceleration-limit", "1", "2"], "give one value or 1"),
    (["--payload", "nowhere", "1"], "unknown link"),
    (["--output", "/nonexistent/retimed.csv"], "not a directory this user can write to"),
    (["--gridpoints", "1"], "gridpoints must be from 2"),
    (["--rate", "1e7"], "more than the 4000000 points allowed"),
])
def test_bad_input_exits_2_with_one_line(files, capsys, args, reason):
    status, out, err = _cli([files / "pendulum.urdf", files / "swing.csv", *args], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and reason in err


@pytest.mark.parametrize("args", [["--effort-margin", "1.5"], ["--effort-margin", "0"], ["--acceleration-limit", "-1"]])
def test_bad_option_values_are_usage_errors(files, capsys, args):
    with pytest.raises(SystemExit) as stopped:
        _cli([files / "pendulum.urdf", files / "swing.csv", *args], capsys)
    assert stopped.value.code == 2


def test_a_missing_trajectory_exits_2(files, capsys):
    status, _, err = _cli([files / "pendulum.urdf", files / "nothing.csv"], capsys)
    assert status == 2 and "no such trajectory" in err


def test_the_plot_is_written(files, capsys):
    pytest.importorskip("matplotlib")
    status, out, _ = _cli([files / "pendulum.urdf", files / "swing.csv", "--plot", files / "retime.png"], capsys)
    assert status == 0 and (files / "retime.png").read_bytes()[:4] == b"\x89PNG"


def test_docs_example(tmp_path, capsys):
    """docs/trajectories.md's retime command on docs/cli.md's plan.csv: what the page says it prints."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "trajectories.md").read_text()
    command = re.search(r"^robot-dynamics (retime arm7_gripper plan\.csv .*)$", page, re.M).group(1).split()[1:]
    (tmp_path / "plan.csv").write_text(PLAN)
    args = [str(tmp_path / a) if a in ("plan.csv", "retimed.yaml", "retimed.png") else a for a in command]
    if "--plot" in args:
        pytest.importorskip("matplotlib")
    status, out, _ = _cli(args, capsys)
    assert status == 0
    printed = re.search(r"duration: 2\.000 s given, ([\d.]+) s retimed", out).group(1)
    assert f"{printed} s" in page and math.isclose(float(printed), read_trajectory(tmp_path / "retimed.yaml").t[-1],
                                                    abs_tol=1e-3)


def test_bench_retime_prints_its_table(capsys):
    """The benchmark's rows, one run each: ours and toppra + Pinocchio find durations within 1 % at 1000 grid
    points, and ours is within the limits as Pinocchio judges it."""
    pytest.importorskip("toppra")
    pytest.importorskip("pinocchio")
    from robot_dynamics.cli import bench

    assert bench.run_benchmarks(["retime"], ["--repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = {(m.group(1).strip(), int(m.group(2))): (float(m.group(4)), float(m.group(5)))
            for m in re.finditer(r"^(\S.*?)\s+(100|1000)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)}
    ours, theirs = rows["ours, retime (1 kHz out)", 1000], rows["toppra + Pinocchio", 1000]
    assert ours[0] == pytest.approx(theirs[0], rel=0.01) and ours[1] <= 1.0
    assert rows["ours, solve", 100][1] <= 1.0
