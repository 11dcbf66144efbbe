"""The trajectory filter and the trajectory publisher's playback as processes on a ROS graph: a
trajectory in, the filtered one out (check: unchanged; feedforward: the inverse-dynamics effort;
retime: within the limits); malformed or infeasible ones never forwarded, the reason on
/diagnostics; the publisher's desired_state sampled as the check interpolates."""

import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.trajectories.check import Trajectory, check_trajectory, interpolate

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from ros_helpers import START_TIMEOUT, NodeProcess, RosHarness, publish_until, ros_env  # noqa: E402
from robot_dynamics.tools import processes  # noqa: E402
from test_trajectory_filter import ARM, path_points, point  # noqa: E402

PAYLOAD = 3.0


def message(points, names=ARM, stamp=None):
    msg = JointTrajectory()
    msg.joint_names = list(names)
    if stamp is not None:
        msg.header.stamp = stamp
    msg.points = [JointTrajectoryPoint(positions=p.positions, velocities=p.velocities, accelerations=p.accelerations,
                                       time_from_start=Duration(sec=p.time_from_start.sec,
                                                                nanosec=p.time_from_start.nanosec)) for p in points]
    return msg


def as_trajectory(msg):
    t = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points]
    fields = [np.array([list(getattr(p, key)) for p in msg.points]) for key in ("positions", "velocities", "accelerations")]
    return Trajectory(msg.joint_names, t, *(f if f.size else None for f in fields)), np.array([list(p.effort)
                                                                                              for p in msg.points])


def diagnosed(collector, text, since):
    return collector.wait_for(lambda m: any(text in s.message for s in m.status), timeout=10.0, since=since,
                              what=f"/diagnostics saying {text!r}")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    harness = RosHarness("filter_probe")
    out = harness.collect(JointTrajectory, "/filter/trajectory_out", qos=10)
    diagnostics = harness.collect(DiagnosticArray, "/diagnostics", qos=10)
    publisher = harness.publisher(JointTrajectory, "/filter/trajectory_in")
    process = NodeProcess("trajectory_filter", tmp_path_factory.mktemp("filter") / "filter.log", namespace="/filter",
                          ros_args=["-p", "mode:=check", "-p", "payload.link:=arm7_link7", "-p",
                                    f"payload.mass:={PAYLOAD}"], extra_args=["--urdf", "arm7_gripper"])
    try:
        process.wait_log("filter warmed up", timeout=60.0)
        harness.wait_for_subscriber(publisher)
        harness.wait_for_publisher("/filter/trajectory_out")
        # sent again until answered: the answer is lost until the filter's publisher has discovered ours
        feasible = message(path_points(4.0))
        publish_until(lambda: publisher.publish(feasible), out, lambda m: True, timeout=60.0, period=1.0,
                      what="the first answer on trajectory_out")
        out.wait_quiet()
        yield harness, publisher, out, diagnostics, process
    finally:
        code = process.stop()
        harness.close()
        assert code == 0, process.log()


def send(publisher, out, msg, forwarded=True, timeout=10.0):
    """Publish ``msg``; the message forwarded (None: nothing within 2 s, as expected)."""
    since = time.monotonic()
    publisher.publish(msg)
    if not forwarded:
        time.sleep(2.0)
        assert not [m for m, t in zip(out.messages, out.times) if t >= since], "a refused trajectory was forwarded"
        return None
    return out.wait_for(timeout=timeout, since=since, what="trajectory_out")


def test_check_mode_forwards_a_feasible_trajectory_unchanged_and_refuses_the_rest(graph):
    harness, publisher, out, diagnostics, process = graph
    arm = rd.load_urdf(bundled_urdf("arm7_gripper")).with_payload("arm7_link7", PAYLOAD, (0, 0, 0), (0,) * 6)
    slow = message(path_points(4.0))
    forwarded = send(publisher, out, slow)
    assert forwarded.joint_names == slow.joint_names and len(forwarded.points) == len(slow.points)
    for a, b in zip(forwarded.points, slow.points):
        assert list(a.positions) == list(b.positions) and list(a.velocities) == list(b.velocities)
        assert a.time_from_start == b.time_from_start and not len(a.effort)
    fast = path_points(0.5)
    assert not check_trajectory(arm, as_trajectory(message(fast))[0]).ok  # (the oracle: beyond a limit)
    since = time.monotonic()
    send(publisher, out, message(fast), forwarded=False)
    diagnosed(diagnostics, "beyond the limits: arm7_joint", since)
    broken = message(path_points(4.0))
    broken.points[2].positions[3] = float("nan")
    since = time.monotonic()
    send(publisher, out, broken, forwarded=False)
    status = diagnosed(diagnostics, "non-finite positions value (nan) for arm7_joint4", since)
    assert "not forwarded" in next(s.message for s in status.status if "nan" in s.message)
    send(publisher, out, message(path_points(4.0), names=ARM[:6] + ["wrist"]), forwarded=False)
    process.wait_log("joints ['wrist'] are not joints of robot 'arm7_gripper'")
    assert process.running()


def test_parameters_are_checked_and_feedforward_fills_the_inverse_dynamics_effort(graph):
    harness, publisher, out, diagnostics, process = graph
    results = harness.set_parameters("/filter/trajectory_filter", {"mode": "fast"})
    assert not results[0].successful and "mode must be one of check, feedforward, retime" in results[0].reason
    results = harness.set_parameters("/filter/trajectory_filter", {"payload.mass": -1.0})
    assert not results[0].successful
    results = harness.set_parameters("/filter/trajectory_filter", {"mode": "feedforward", "payload.mass": 1.5})
    assert all(r.successful for r in results), results
    pytest.importorskip("robot_dynamics.trajectories.retime")
    forwarded = send(publisher, out, message(path_points(4.0)))
    trajectory, effort = as_trajectory(forwarded)
    model = rd.load_urdf(bundled_urdf("arm7_gripper")).with_payload("arm7_link7", 1.5, (0, 0, 0), (0,) * 6)
    q = np.column_stack([trajectory.q, np.zeros(len(trajectory.t))])  # the finger, not in the trajectory: at 0
    qd = np.column_stack([trajectory.qd, np.zeros(len(trajectory.t))])
    qdd = np.column_stack([trajectory.qdd, np.zeros(len(trajectory.t))])
    np.testing.assert_allclose(effort, rd.inverse_dynamics(model, q, qd, qdd)[:, :7], atol=1e-9)
    harness.set_parameters("/filter/trajectory_filter", {"mode": "check", "payload.mass": PAYLOAD})


def test_retime_mode_makes_the_too_fast_path_feasible(graph):
    pytest.importorskip("robot_dynamics.trajectories.retime")
    harness, publisher, out, diagnostics, process = graph
    assert harness.set_parameters("/filter/trajectory_filter", {"mode": "retime"})[0].successful
    fast = message(path_points(0.5))
    forwarded = send(publisher, out, fast, timeout=20.0)
    trajectory, effort = as_trajectory(forwarded)
    model = rd.load_urdf(bundled_urdf("arm7_gripper")).with_payload("arm7_link7", PAYLOAD, (0, 0, 0), (0,) * 6)
    verdict = check_trajectory(model, trajectory)
    assert verdict.ok, verdict.violations
    assert not check_trajectory(model, as_trajectory(fast)[0]).ok  # (the input is beyond a limit)
    from robot_dynamics.trajectories.retime import retime

    expected = retime(model, as_trajectory(fast)[0]).trajectory  # the library's answer, in this process
    np.testing.assert_allclose(trajectory.t, expected.t, atol=1e-9)
    np.testing.assert_allclose(trajectory.q, expected.q, atol=1e-12)
    np.testing.assert_allclose(effort, expected.effort, atol=1e-9)
    np.testing.assert_allclose(trajectory.q[0], fast.points[0].positions, atol=1e-9)
    np.testing.assert_allclose(trajectory.q[-1], fast.points[-1].positions, atol=1e-6)
    harness.set_parameters("/filter/trajectory_filter", {"mode": "check"})


def test_the_publisher_plays_a_joint_trajectory_as_the_check_interpolates_it(tmp_path):
    harness = RosHarness("playback_probe")
    desired = harness.collect(JointTrajectory, "/play/desired_state", qos=1000)  # (a second at 200 Hz, kept)
    diagnostics = harness.collect(DiagnosticArray, "/diagnostics", qos=10)
    publisher = harness.publisher(JointTrajectory, "/play/joint_trajectory")
    process = NodeProcess("trajectory_publisher", tmp_path / "publisher.log", namespace="/play",
                          ros_args=["-p", "rate:=200.0", "-p", "amplitude:=0.0"], extra_args=["--urdf", "arm7_gripper"])
    try:
        process.wait_log("trajectory for", timeout=START_TIMEOUT)
        harness.wait_for_subscriber(publisher)
        desired.wait_for(timeout=START_TIMEOUT, what="desired_state (its publisher matched to the test's reader)")
        points = path_points(1.0)
        start = harness.node.get_clock().now().nanoseconds + 2_000_000_000  # (time for the message to arrive)
        msg = message(points)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(start, 1_000_000_000)
        publisher.publish(msg)
        end = desired.wait_for(lambda m: m.header.stamp.sec * 10**9 + m.header.stamp.nanosec > start + 1.2e9,
                               timeout=15.0, what="desired_state after the trajectory's end")
        oracle, _ = as_trajectory(msg)
        played = [m for m in desired.messages if start <= m.header.stamp.sec * 10**9 + m.header.stamp.nanosec <= start + 1e9]
        assert len(played) > 20  # (of 200: the publisher's timer skips ticks a loaded machine delays)
        times = np.array([(m.header.stamp.sec * 10**9 + m.header.stamp.nanosec - start) * 1e-9 for m in played])
        q, qd, qdd = interpolate(oracle, times)
        for k, m in enumerate(played):
            assert list(m.joint_names)[:7] == ARM
            np.testing.assert_allclose(m.points[0].positions[:7], q[k], atol=1e-9)
            np.testing.assert_allclose(m.points[0].velocities[:7], qd[k], atol=1e-9)
            np.testing.assert_allclose(m.points[0].accelerations[:7], qdd[k], atol=1e-7)
        np.testing.assert_allclose(end.points[0].positions[:7], points[-1].positions, atol=1e-12)  # the end, held
        assert not any(end.points[0].velocities)
        since = time.monotonic()
        bad = message(path_points(1.0), names=ARM[:6] + ["arm7_joint1"])
        publisher.publish(bad)
        diagnosed(diagnostics, "joint_trajectory message rejected: duplicate joint names ['arm7_joint1']", since)
        late = message(path_points(1.0))  # started 10 s ago, 1 s long: as JTC, refused (not a jump to its end)
        late.header.stamp.sec, late.header.stamp.nanosec = divmod(harness.node.get_clock().now().nanoseconds - 10**10,
                                                                  10**9)
        since = time.monotonic()
        publisher.publish(late)
        diagnosed(diagnostics, "ends 1 s later, in the past", since)
        assert desired.messages[-1].points[0].positions[:7] == end.points[0].positions[:7]  # still the end held
    finally:
        code = process.stop()
        harness.close()
    assert code == 0, process.log()


DOCS = Path(__file__).resolve().parents[1] / "docs" / "trajectory_filter.md"


def doc_commands():
    """The commands of docs/trajectory_filter.md's bash blocks (continuation lines joined), and its yaml block."""
    text = DOCS.read_text()
    blocks = [re.sub(r"\\\n\s*", " ", block) for block in re.findall(r"```bash\n(.*?)```", text, re.S)]
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()], \
        re.findall(r"```yaml\n(.*?)```", text, re.S)


def doc_process(command, log_path):
    """A command of the page as a process: its first word from this venv, a trailing ``&`` dropped."""
    words = shlex.split(command.removesuffix("&").strip())
    return NodeProcess(words[0], log_path, extra_args=words[1:]) if words[0] == "trajectory_filter" else \
        processes.NodeProcess(words[0], [str(Path(sys.executable).with_name(words[0]))] + words[1:], ros_env(),
                              log_path)


@pytest.mark.realtime  # (the page's 1 kHz simulation graph, as test_sim's: alone, not beside another worker)
def test_docs_commands_run(tmp_path, monkeypatch):
    """docs/trajectory_filter.md's commands as written: the filter answering on a controller's topic, and
    the chain planner -> filter -> publisher -> dynamics node -> simulator taking the arm to the goal."""
    commands, (hold,) = doc_commands()
    assert len(commands) == 3 and "joint_trajectory_controller" in commands[0]
    harness = RosHarness("docs_probe")
    controller = harness.collect(JointTrajectory, "/joint_trajectory_controller/joint_trajectory", qos=10)
    planner = harness.publisher(JointTrajectory, "/trajectory_in")
    desired = harness.collect(JointTrajectory, "/desired_state", qos=10)
    states = harness.collect(JointState, "/joint_states")
    running = []
    try:
        running.append(doc_process(commands[0], tmp_path / "filter.log"))
        running[-1].wait_log("filter warmed up", timeout=90.0)
        harness.wait_for_subscriber(planner)
        harness.wait_for_publisher("/joint_trajectory_controller/joint_trajectory")
        move = message(path_points(0.5))
        answer = publish_until(lambda: planner.publish(move), controller, lambda m: True, timeout=60.0,
                               period=2.0, what="the first answer on joint_trajectory")
        assert len(answer.points) > 100 and len(answer.points[-1].effort) == 7  # retimed, efforts filled
        assert running.pop().stop() == 0

        (tmp_path / "hold.yaml").write_text(hold)
        monkeypatch.chdir(tmp_path)  # (the page's commands run where hold.yaml is)
        for k, command in enumerate(commands[1:]):
            running.append(doc_process(command, tmp_path / f"chain{k}.log"))
            if k == 0:  # the graph's trajectory publisher is up once the loop is closed
                desired.wait_for(timeout=120.0, what="desired_state of the simulation graph")
        running[-1].wait_log("filter warmed up", timeout=90.0)
        harness.wait_for_subscriber(planner)
        home = np.array(desired.messages[-1].points[0].positions[:7])
        goal = home + np.array([0.8, 0.4, 0.0, 0.6, 0.5, -0.4, 0.3])
        plan = message([point(0.125 * k, home + s * (goal - home)) for k, s in enumerate(np.linspace(0, 1, 5))])
        # (the filter's answer is lost while its publisher and the publisher's joint_trajectory have not
        # discovered each other: sent again until the reference moves)
        for _ in range(20):
            since = time.monotonic()
            planner.publish(plan)
            try:
                desired.wait_for(lambda m: np.abs(np.array(m.points[0].positions[:7]) - home).max() > 1e-3,
                                 timeout=3.0, since=since, what="the reference on its way")
                break
            except AssertionError:
                continue
        try:
            states.wait_for(lambda m: np.abs(np.array(m.position[:7]) - goal).max() < 2e-3, timeout=20.0,
                            what="the arm at the goal")
        except AssertionError:
            raise AssertionError(f"the arm is {np.array(states.messages[-1].position[:7]) - goal} from the goal, the "
                                 f"desired state {np.array(desired.messages[-1].points[0].positions[:7]) - goal}") from None
        np.testing.assert_allclose(desired.messages[-1].points[0].positions[:7], goal, atol=1e-9)
    finally:
        for process in reversed(running):
            process.stop()
        harness.close()


def test_the_latency_benchmark_prints_its_table(capsys):
    """A tiny run of tools/benchmarks/trajectory_filter.py (its figures are docs/trajectory_filter.md's)."""
    from robot_dynamics.tools.benchmarks import trajectory_filter as benchmark

    import os

    assert benchmark.main(["--trials", "3", "--domain-id", os.environ["ROS_DOMAIN_ID"]]) == 0  # (the tests' domain)
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.split()[:1] and line.split()[0] in benchmark.MODES}
    assert set(rows) == set(benchmark.MODES)
    assert rows["check"][1] == "50" and int(rows["retime"][1]) > 1000  # points out: unchanged; a point per ms
    assert all(float(value) > 0 for row in rows.values() for value in row[2:7])
