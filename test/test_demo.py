"""``robot-dynamics demo``: the analysis on synthetic data, and one short real run (2 s per loop)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics.tools.demo import analysis, figure


def synthetic_run(label, error=0.01, rate=500.0, duration=2.0, lag=0.0007):
    """A run whose joint-state stamps share the wall clock with the desired stamps."""
    run = analysis.Run(label=label, joint_names=("a", "b"))
    t0_mono, t0_wall = 1000.0, 1.7e9
    for k in range(int(duration * rate)):
        t = k / rate
        q_d = np.array([np.sin(t), 0.5 * np.cos(2 * t)])
        qd_d = np.array([np.cos(t), -np.sin(2 * t)])
        qdd_d = np.array([-np.sin(t), -2 * np.cos(2 * t)])
        run.desired.add(t0_mono + t + lag, t0_wall + t, (q_d, qd_d, qdd_d))
        t_state = t + 0.5 / rate  # between two desired points: needs the extrapolation
        q = np.array([np.sin(t_state), 0.5 * np.cos(2 * t_state)]) - error
        run.state.add(t0_mono + t_state + lag, t0_wall + t_state, (q, qd_d, np.array([1.0, 2.0])))
        run.torques.add(t0_mono + t_state + lag + 0.001, t0_wall + t_state, np.zeros(2))
    run.start, run.end = t0_mono, t0_mono + duration + 1
    return run


def test_analyse_measures_rms_error_rates_and_latency(monkeypatch):
    run = synthetic_run("ct", error=0.01)
    monkeypatch.setattr(analysis, "_clock_of", lambda run: "stamp")
    metrics = analysis.analyse(run)
    np.testing.assert_allclose(metrics.rms_error, [0.01, 0.01], rtol=1e-3)
    assert metrics.rms_total == pytest.approx(0.01, rel=1e-3)
    assert metrics.max_error == pytest.approx(0.01, rel=1e-2)
    assert metrics.state_rate == pytest.approx(1000 / 3.0, rel=1e-3)
    assert metrics.latency_ms[0] == pytest.approx(1.0, abs=1e-6)


def test_a_whole_turn_of_a_continuous_joint_is_no_tracking_error(monkeypatch):
    """The control law turns a continuous joint the short way: a loop that settles a turn away
    tracks (the launch tests saw it after a double pendulum swung over the top before its controller
    started); the same turn on another joint is an error of 2 pi."""
    run = synthetic_run("ct", error=0.0)
    run.state.values = [(q + np.array([2 * np.pi, 0.0]), qd, effort) for q, qd, effort in run.state.values]
    monkeypatch.setattr(analysis, "_clock_of", lambda run: "stamp")
    assert analysis.analyse(run, continuous=np.array([True, False])).rms_total < 1e-5
    np.testing.assert_allclose(analysis.analyse(run).rms_error, [2 * np.pi, 0.0], atol=1e-5)


def test_desired_positions_are_extrapolated_between_points():
    run = synthetic_run("ct", error=0.0)
    times = np.asarray(run.state.stamp)
    q_d = analysis.desired_at(run.desired, times, "stamp")
    exact = np.stack([np.sin(times - 1.7e9), 0.5 * np.cos(2 * (times - 1.7e9))], axis=1)
    assert np.abs(q_d - exact).max() < 1e-6  # second-order extrapolation over 1 ms


def test_summary_and_plot(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import robot_dynamics as rd
    from robot_dynamics.description.robots import bundled_urdf

    monkeypatch.setattr(analysis, "_clock_of", lambda run: "stamp")
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    runs = [synthetic_run("computed torque", 1e-4), synthetic_run("PD only", 3e-2)]
    ct, pd = (analysis.analyse(run) for run in runs)
    lines = analysis.summary_lines(model, bundled_urdf("planar_2r"), ct, pd, runs, [])
    text = "\n".join(lines)
    assert "RMS error (arm joints) computed torque: 1.000e-04 rad" in text
    assert "300x larger" in text
    path = figure.plot([ct, pd], list(model.joint_names), tmp_path / "plot.png", "test", model.joint_types)
    assert path.stat().st_size > 10_000
    assert "STARVED" not in text  # computed_torques as often as joint states, 1 ms after them


def test_the_summary_says_when_the_loop_starved(monkeypatch):
    """computed_torques for every other joint state, 5 ms after it (joint states 3 ms apart): both
    said, with what it does to the figures."""
    import robot_dynamics as rd
    from robot_dynamics.description.robots import bundled_urdf

    monkeypatch.setattr(analysis, "_clock_of", lambda run: "stamp")
    run = synthetic_run("computed torque", 1e-4)
    run.torques = analysis.Series()
    for k, (received, stamp) in enumerate(zip(run.state.received, run.state.stamp)):
        if k % 2 == 0:
            run.torques.add(received + 0.005, stamp, np.zeros(2))
    ct = analysis.analyse(run)
    text = "\n".join(analysis.summary_lines(rd.load_urdf(bundled_urdf("planar_2r")), "f", ct, None, [run], []))
    assert re.search(r"STARVED +computed torque: computed_torques 167 Hz for joint_states 333 Hz: .* 50 %", text), text
    assert "latency p50 5.00 ms is beyond the 3.00 ms period of the joint states" in text
    assert "tracking errors below are those of a starved loop" in text


@pytest.mark.parametrize("types, position, torque", [
    (["revolute"] * 6, "position (rad)", "torque (N m)"),
    (["revolute", "prismatic"], "position (rad; b: m)", "torque (N m; b: N)"),
    (["prismatic", "prismatic"], "position (m)", "torque (N)")])
def test_the_plot_labels_each_axis_with_the_units_of_its_joints(types, position, torque):
    """A UR5 (six revolute joints) has no gripper to label in metres."""
    names = ["a", "b", "c", "d", "e", "f"][:len(types)]
    assert figure.unit_label("position", names, types, "rad", "m") == position
    assert figure.unit_label("torque", names, types, "N m", "N") == torque


# --------------------------------------------------------------------------------- the real demo

def _demo_command():
    script = Path(sys.executable).with_name("robot-dynamics")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "robot_dynamics.cli"]


@pytest.mark.realtime
def test_short_demo_prints_the_summary_and_writes_the_plot(tmp_path):
    pytest.importorskip("rclpy", reason="the demo needs ROS 2 (pip install .[ros])")
    pytest.importorskip("matplotlib", reason="the demo needs matplotlib")
    output = tmp_path / "demo.png"
    # the exported ROS_DOMAIN_ID, which the demo honours: this test worker's own (conftest.py), so
    # parallel test workers never meet it
    done = subprocess.run([*_demo_command(), "demo", "--duration", "2", "--output", str(output),
                           "--log-dir", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    out = done.stdout
    assert f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} (the exported ROS_DOMAIN_ID; this machine only)" in out
    assert "robot_dynamics demo: summary" in out
    assert re.search(r"model\s+arm7_gripper .*8 coordinates", out)
    assert re.search(r"rates\s+joint_states \d+ Hz", out)
    assert re.search(r"latency\s+joint_states -> computed_torques.*p50 [\d.]+ ms", out)
    ct = float(re.search(r"computed torque: ([\d.e+-]+) rad", out).group(1))
    pd = float(re.search(r"PD only: +([\d.e+-]+) rad", out).group(1))
    assert ct < pd, out  # the model-based loop tracks better (by ~100x on a quiet machine, see the README)
    assert f"plot         {output.resolve()}" in out
    assert output.is_file() and output.stat().st_size > 20_000
    assert "Traceback" not in done.stderr


@pytest.mark.realtime
def test_demo_from_an_empty_numba_cache(tmp_path):
    """The first demo after installing: nothing compiled yet. The documented command (docs/cli.md),
    with numba's cache in an empty directory (NUMBA_CACHE_DIR replaces the __pycache__ folders for
    this process and the nodes it starts): the demo compiles the kernels once, says so, and the
    nodes then start from that cache within the demo's start-up limit and compile nothing of their
    own (numba's NUMBA_DEBUG_CACHE reports every kernel a node compiles and saves): a kernel the
    warm-up missed would compile inside the control loop, seconds without commands."""
    pytest.importorskip("rclpy", reason="the demo needs ROS 2 (pip install .[ros])")
    pytest.importorskip("matplotlib", reason="the demo needs matplotlib")
    documented = "robot-dynamics demo --duration 2 --no-pd --robot planar_2r"
    assert documented in (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    cache = tmp_path / "numba_cache"
    cache.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_DEBUG_CACHE="1")
    logs = tmp_path / "logs"
    command = _demo_command() + documented.split()[1:] + ["--domain-id", os.environ["ROS_DOMAIN_ID"],
                                                          "--log-dir", str(logs)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "compiling the dynamics kernels" in done.stderr
    compiled = float(re.search(r"dynamics kernels ready in ([\d.]+) s", done.stderr).group(1))
    assert list(cache.rglob("*.nbi")), "nothing was compiled into the empty cache"
    assert "robot_dynamics demo: summary" in done.stdout and "model        planar_2r" in done.stdout
    assert (tmp_path / "out" / "robot_dynamics_demo.png").is_file()
    node_logs = {path.name: path.read_text() for path in logs.rglob("*.log")}
    assert {"dynamics_node.log", "simulator_node.log", "trajectory_publisher.log"} <= set(node_logs)
    for name, text in node_logs.items():
        assert "[cache] data loaded" in text or name == "trajectory_publisher.log", name
        compiled_here = [line for line in text.splitlines() if line.startswith("[cache] data saved")]
        assert not compiled_here, f"{name} compiled kernels the demo's warm-up had not: {compiled_here}"
    print(f"cold compile in the demo: {compiled:.1f} s")


@pytest.mark.parametrize("args, message", [
    (["--duration", "0"], "--duration must be positive"),
    (["--domain-id", "233"], "--domain-id '233': ROS 2 accepts the integers 0-232"),
    (["--task-space", "--radius", "2"], "--radius must be in (0, 1] m"),
])
def test_the_demo_refuses_a_bad_argument_with_exit_status_2(tmp_path, args, message):
    pytest.importorskip("rclpy", reason="the demo needs ROS 2 (pip install .[ros])")
    done = subprocess.run([*_demo_command(), "demo", "--robot", "planar_2r", "--log-dir", str(tmp_path / "logs"),
                           *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "logs").exists()


@pytest.mark.realtime
def test_the_demo_refuses_a_domain_where_a_graph_runs_before_it_starts_a_node(tmp_path):
    """Something already publishes /joint_states on the demo's domain (the tests' own): the demo
    says so and ends with status 1 without starting a node of its own there (no node log)."""
    pytest.importorskip("rclpy", reason="the demo needs ROS 2 (pip install .[ros])")
    from sensor_msgs.msg import JointState

    from ros_helpers import RosHarness

    harness = RosHarness("foreign_graph")
    try:
        harness.publisher(JointState, "/joint_states")
        done = subprocess.run([*_demo_command(), "demo", "--duration", "2", "--no-pd", "--no-plot", "--robot",
                               "planar_2r", "--log-dir", str(tmp_path / "logs")],
                              capture_output=True, text=True, timeout=240)
    finally:
        harness.close()
    assert done.returncode == 1, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert not list((tmp_path / "logs").rglob("*.log")), "the demo started nodes on a domain already in use"
    assert (f"a graph already runs in namespace / on ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}"
            in done.stderr), done.stderr
    assert "--isolated" in done.stderr and "node logs kept" not in done.stderr


def test_stamps_are_used_when_both_topics_share_a_clock():
    run = synthetic_run("ct")
    assert analysis._clock_of(run) == "stamp"
    run.desired.stamp = [s + 5.0 for s in run.desired.stamp]  # e.g. sim time against wall time
    assert analysis._clock_of(run) == "received"
