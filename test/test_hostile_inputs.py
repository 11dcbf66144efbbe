"""The dynamics and simulator nodes attacked as an adversary on the ROS graph would: descriptions
that are paths (a FIFO among them), absurd inputs, parameter changes that would silence every
output, names a megabyte long, invalid params files, a flood of messages. Real DDS, the nodes in
their own processes; every case checks what the node still does, not only what it refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.nodes.common.safety import MAX_TEXT  # noqa: E402

from ros_helpers import NodeProcess, RosHarness, publish_until, ros_env, write_params  # noqa: E402
from test_dynamics_node import (  # noqa: E402
    LATCHED, OUTPUT_QOS, TOL, Rig, efforts, joint_state, status_text, two_link,
)

NAMES = ["shoulder", "elbow"]
Q, QD = np.array([0.4, -0.7]), np.array([0.3, -1.2])


@pytest.fixture(scope="module")
def harness():
    h = RosHarness("hostile_tests")
    yield h
    h.close()


@pytest.fixture(scope="module")
def diagnostics(harness):
    return harness.collect(DiagnosticArray, "/diagnostics", OUTPUT_QOS)


@pytest.fixture(scope="module")
def rig(harness, tmp_path_factory):
    """two_link from the topic; the params file misspells a parameter."""
    tmp = tmp_path_factory.mktemp("hostile")
    description = harness.publisher(String, "/hostile/robot_description", LATCHED)
    description.publish(String(data=two_link()))
    rig = Rig(harness, tmp, "/hostile", {"comand_source": "gravity"})
    rig.description = description
    try:
        rig.wait_ready()
        rig.proc.wait_log("loaded robot 'two_link' from topic", timeout=30.0)
        yield rig
    finally:
        code = rig.proc.stop()
        print(rig.proc.log())
    assert code == 0


def gravity_answer(rig, model=None):
    out = rig.roundtrip(joint_state(NAMES, Q, QD))
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(model or rd.load_urdf(two_link()), Q), atol=TOL)


def test_a_misspelled_parameter_is_named_with_the_closest_known_name(rig):
    rig.proc.wait_log("unknown parameter 'comand_source' ignored (did you mean 'command_source'?)")


def test_paths_on_the_description_topic_are_never_opened(rig, diagnostics):
    """A path (to a real URDF), a FIFO and /dev/zero are refused at once as not XML; the node keeps
    its model and answers (a FIFO used to freeze it, /dev/zero to take 4 GB)."""
    # a short directory: the node quotes at most 80 characters of a bad description, and pytest's
    # tmp_path under xdist is longer than that
    tmp_path = Path(tempfile.mkdtemp(prefix="rd-"))
    try:
        heavier = tmp_path / "heavier.urdf"
        heavier.write_text(two_link(mass_fore=3.0))
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        for path in (heavier, fifo, "/dev/zero"):
            assert len(repr(str(path))) <= 80
            rig.description.publish(String(data=str(path)))
            arr = rig.diag_after(diagnostics, "model", f"got '{path}'")
            text = status_text(arr, rig.fqn, "model")
            assert "must be URDF XML text" in text and "keeping the previous model 'two_link'" in text
            gravity_answer(rig)
    finally:
        rig.description.publish(String(data=two_link()))
        shutil.rmtree(tmp_path)


def test_huge_desired_inputs_never_stop_the_gravity_command(rig, diagnostics):
    """command_source gravity: desired accelerations of 1e308 or desired positions of 1e307 make
    the computed torques non-finite; gravity_torques, effort_command and mass_matrix go on."""
    rig.set_ok(command_source="gravity")
    g = rd.gravity_torques(rd.load_urdf(two_link()), Q)
    try:
        huge = [
            lambda: rig.accelerations.publish(Float64MultiArray(data=[1e308, 1e308])),
            lambda: rig.desired.publish(JointTrajectory(
                joint_names=NAMES, points=[JointTrajectoryPoint(positions=[1e307, 1e307])])),
        ]
        for send_desired in huge:
            msg = joint_state(NAMES, Q, QD)
            n_mass = len(rig.mass.messages)

            def send():
                send_desired()
                rig.states.publish(msg)

            rig.expect(send, rig.gravity, msg.header.stamp, g)
            rig.command.wait_for(lambda m: np.allclose(m.data, g, atol=TOL), what="effort_command = gravity")
            publish_until(send, rig.mass, lambda m: len(rig.mass.messages) > n_mass, what="mass_matrix")
            rig.diag_after(diagnostics, "outputs", "not publishing computed_torques", publish=send)
            assert not rig.computed.find(lambda m: m.header.stamp == msg.header.stamp)
    finally:
        rig.set_ok(command_source="none")


def test_effort_command_is_held_within_the_effort_limits(rig):
    """computed_torques carries the raw torque, effort_command the saturated one (limit 100 N m)."""
    rig.set_ok(command_source="computed")
    try:
        msg = joint_state(NAMES, Q, QD)
        qdd = np.array([1e4, 0.0])

        def send():
            rig.accelerations.publish(Float64MultiArray(data=qdd.tolist()))
            rig.states.publish(msg)

        model = rd.load_urdf(two_link())
        raw = rd.inverse_dynamics(model, Q, QD, qdd)
        out = rig.expect(send, rig.computed, msg.header.stamp, raw, atol=1e-6)
        assert np.abs(efforts(out)).max() > 100.0
        held = np.clip(raw, -100.0, 100.0)
        rig.command.wait_for(lambda m: np.allclose(m.data, held, atol=1e-6), what="saturated effort_command")
        rig.proc.wait_log("effort_command saturated to the URDF effort limits of ['shoulder'")
    finally:
        rig.set_ok(command_source="none")


def test_a_large_tracking_error_makes_effort_command_hold_gravity(rig):
    """max_position_error: a desired position 2 rad away (a restarted controller, a jump in the
    trajectory) gives gravity on effort_command, not the computed torques, and says so."""
    model = rd.load_urdf(two_link())
    far = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(positions=(Q + [0.1, 2.0]).tolist())])
    near = JointTrajectory(joint_names=NAMES, points=[JointTrajectoryPoint(positions=(Q + [0.1, 0.2]).tolist())])
    rig.set_ok(command_source="computed", max_position_error=0.5)
    try:
        for desired, expected in ((far, rd.gravity_torques(model, Q)), (near, None)):
            msg = joint_state(NAMES, Q, QD)

            def send():
                rig.desired.publish(desired)
                rig.states.publish(msg)

            a = 100.0 * (desired.points[0].positions - Q) - 20.0 * QD
            tau = rd.inverse_dynamics(model, Q, QD, a)
            rig.expect(send, rig.computed, msg.header.stamp, tau, atol=1e-6)  # computed_torques: the law
            held = np.clip(tau if expected is None else expected, -100.0, 100.0)
            publish_until(send, rig.command, lambda m: np.allclose(m.data, held, atol=1e-6),
                          what="effort_command")
        rig.proc.wait_log("position error 2 of 'elbow' beyond max_position_error 0.5: effort_command holds gravity")
    finally:
        rig.set_ok(command_source="none", max_position_error=0.0)


def test_implausible_joint_states_are_rejected(rig, diagnostics):
    for q, qd, text in (([0.4, 1e5], QD, "positions more than 10000 beyond the joint limits"),
                        (Q, [0.3, 1e3], "J above 10 times the robot's energy scale")):
        bad = joint_state(NAMES, q, qd)
        rig.rejected_then_sentinel(bad, joint_state(NAMES, Q, QD), text, diagnostics)
    gravity_answer(rig)


def test_parameter_changes_that_would_silence_the_outputs_are_refused(rig):
    fixed = ("<robot name='still'><link name='a'/><link name='b'/>"
             "<joint name='j' type='fixed'><parent link='a'/><child link='b'/></joint></robot>")
    cases = [
        ({"gravity": [1e308, 0.0, 0.0]}, "more than 10 g"),
        ({"robot_description": "not a urdf <"}, "must be URDF XML text"),
        ({"robot_description": fixed}, "no moving joints"),
        ({"payload.mass": -1.0}, ""),  # rclpy's own range check: logged too
    ]
    for values, reason in cases:
        (result,) = rig.set(**values)
        assert not result.successful and reason in result.reason, (values, result.reason)
    rig.proc.wait_log("parameter change of payload.mass rejected: Parameter payload.mass out of range")
    rig.proc.wait_log("parameter change of gravity rejected: gravity [1e+308")
    # a payload of 1e4 kg 1e200 m away: the last of the three values is refused
    rig.set_ok(payload_com=[1e200, 0.0, 0.0], payload_mass=1e4)
    try:
        (result,) = rig.set(payload_link=rd.load_urdf(two_link()).link_names[-1])
        assert not result.successful and "more than 10 times the robot's mass" in result.reason, result.reason
    finally:
        rig.set_ok(payload_com=[0.0, 0.0, 0.0], payload_mass=0.0)
    assert rig.h.get_parameters(rig.fqn, ["robot_description"]) == [""]
    gravity_answer(rig)


def test_long_names_are_cut_in_logs_and_diagnostics(rig, diagnostics):
    """1000 duplicated 200-character names, and a 1 MB name: refused, the log lines and the
    diagnostics stay short."""
    long_names = [("n" * 199 + str(i % 10)) for i in range(1000)]
    big = "x" * 1_000_000
    for names in (long_names, [big, big]):
        bad = joint_state(names, np.zeros(len(names)))
        arr = rig.diag_after(diagnostics, "inputs", "duplicate joint names", publish=lambda b=bad: rig.states.publish(b))
        assert max(len(s.message) for s in arr.status) <= MAX_TEXT
        assert max(len(kv.value) for s in arr.status for kv in s.values) <= MAX_TEXT
    rig.states.publish(joint_state(NAMES, Q, QD))
    longest = max(len(line) for line in rig.proc.log().splitlines())
    assert longest < MAX_TEXT + 200, longest
    gravity_answer(rig)


def test_a_valid_description_message_ignored_for_the_parameter_is_said(rig):
    rig.set_ok(robot_description=two_link(mass_fore=2.0))
    try:
        gravity_answer(rig, rd.load_urdf(two_link(mass_fore=2.0)))
        rig.description.publish(String(data=two_link(mass_fore=3.0)))
        rig.proc.wait_log("is ignored: the node's parameter robot_description is set")
        gravity_answer(rig, rd.load_urdf(two_link(mass_fore=2.0)))
    finally:
        rig.set_ok(robot_description="")
    gravity_answer(rig, rd.load_urdf(two_link(mass_fore=3.0)))  # the topic's newest
    rig.description.publish(String(data=two_link()))


# --- start-up: one rule, FATAL and exit status 2 ---------------------------------------------------
FLOATING = two_link().replace('<joint name="shoulder" type="continuous">', '<joint name="shoulder" type="floating">')
NAN_MASS = two_link().replace('<mass value="1"/>', '<mass value="nan"/>', 1)


@pytest.mark.parametrize("executable, content, text", [
    ("dynamics_node", "/**:\n  ros__parameters:\n    gravity: [0.0, 0.0\n", "params file"),
    ("dynamics_node", "/**:\n  ros__parameters:\n    gravity: [0.0, 0, -9.81]\n", "Sequence should be of same type"),
    ("dynamics_node", {"robot_description": two_link(), "payload.link": "nope"}, "payload.link 'nope'"),
    ("dynamics_node", {"robot_description": two_link(), "joints": ["nope"]}, "nope"),
    ("dynamics_node", {"robot_description": FLOATING}, "floating"),
    ("dynamics_node", {"robot_description": NAN_MASS}, "mass"),
    ("dynamics_node", {"robot_description": "/etc/passwd"}, "must be URDF XML text"),
    ("simulator_node", {"robot_description": two_link(), "initial_positions": [0.1]}, "initial_positions has 1"),
    ("simulator_node", {"robot_description": two_link(), "initial_velocities": [1e300, 0.0]}, "not plausible"),
    ("dynamics_node", {"robot_description": two_link(), "command_source": "task_space", "task_space.frame": "tip",
                       "task_space.directions": ["x", "z"], "task_space.posture": [1e300, 1e300]},
     "task_space.posture must lie within the joint limits"),
    ("simulator_node", {"robot_description": two_link(), "contact.links": ["tip"],
                        "contact.planes": [0.0, 0.0, 1e300, 0.0, 0.0, 1.0]}, "beyond 10 times the robot's reach"),
], ids=["yaml", "mixed-list", "payload-link", "joints", "floating", "nan-mass", "path", "initial-positions",
        "initial-velocities", "task-space-posture", "contact-plane"])
def test_invalid_start_up_parameters_end_the_node_with_status_2(tmp_path, executable, content, text):
    if isinstance(content, str):
        params_file = tmp_path / "bad.yaml"
        params_file.write_text(content)
    else:
        params_file = write_params(tmp_path / "bad.yaml", content)
    proc = NodeProcess(executable, tmp_path / "bad.log", params_file, namespace="/startup")
    try:
        code = proc.process.wait(60.0)
    finally:
        proc.stop()
    log = proc.log()
    assert code == 2, log
    assert "FATAL" in log and text in log and "Traceback" not in log, log


# --- a flood ---------------------------------------------------------------------------------------
@pytest.mark.realtime  # it loads both cores for 10 s, and its timing needs them
def test_after_a_flood_the_node_answers_at_once_and_stops_on_sigint(tmp_path):
    """Three processes publish joint states and desired states flat out for 10 s; then the node
    answers within 50 ms (median of 50 round trips; the first within 1 s) and exits with status 0
    within 1 s of SIGINT."""
    env = ros_env()
    cmd = [sys.executable, "-m", "robot_dynamics.tools.benchmarks.soak", "--flood", "--duration", "10"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    result = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in out.stdout.splitlines() if ": " in line}
    assert float(result["first answer (ms)"]) < 1000, result
    assert float(result["p50 after (ms)"]) < 50, result
    assert float(result["SIGINT to exit (s)"]) < 1.0, result
    assert result["exit status"] == "0", result


def test_the_soak_benchmark_prints_a_line_per_window():
    """The soak of docs/benchmarks.md, 3 s instead of 600: a line per window, the losses counted."""
    cmd = [sys.executable, "-m", "robot_dynamics.tools.benchmarks.soak", "--duration", "3", "--every", "1",
           "--rate", "200"]
    out = subprocess.run(cmd, env=ros_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 3, out.stdout
    for row in rows:
        t, rss, sent, p50, p99, worst, lost = (float(x) for x in row.strip("| ").split(" | "))
        assert sent == 200 and 0 <= lost <= sent and 50 < rss < 2000 and 0 < p50 <= p99 <= worst
    assert "lost " in out.stdout.splitlines()[-1]


# --- a peer killed in the closed loop --------------------------------------------------------------
@pytest.mark.realtime  # a closed loop over DDS
def test_kill_9_of_the_controller_brakes_the_simulated_arm(harness, diagnostics, tmp_path):
    """simulator_node (brake on a stale command, velocity limits) and dynamics_node (gravity
    command) close the loop; kill -9 of the dynamics node: the arm stops where it is instead of
    falling; a restarted dynamics node takes over again."""
    from sensor_msgs.msg import JointState

    q0 = [0.4, -0.7]
    params = write_params(tmp_path / "loop.yaml", {
        "robot_description": two_link(), "command_source": "gravity", "initial_positions": q0,
        "on_command_timeout": "brake", "enforce_velocity_limits": True, "command_timeout": 0.1,
    })
    sim = NodeProcess("simulator_node", tmp_path / "sim.log", params, namespace="/killed")
    dyn = NodeProcess("dynamics_node", tmp_path / "dyn.log", params, namespace="/killed")
    states = harness.collect(JointState, "/killed/joint_states")
    commands = harness.collect(Float64MultiArray, "/killed/effort_command", OUTPUT_QOS)
    try:
        commands.wait_for(timeout=60.0, what="the controller's first effort_command")
        dyn.wait_log("loaded robot 'two_link'", timeout=30.0)
        # the simulator takes the commands too (discovery runs each way on its own): only then can they go stale
        diagnostics.wait_for(lambda a: any(
            s.name == "/killed/robot_dynamics_simulator: simulation"
            and any(kv.key == "never commanded" and kv.value == "[]" for kv in s.values) for s in a.status),
            timeout=30.0, what="the simulator's diagnostics: every joint commanded")
        dyn.process.kill()
        dyn.process.wait(10.0)
        sim.wait_log("no effort command for ['shoulder', 'elbow']", timeout=30.0)
        killed_at = len(states.messages)
        states.wait_for(lambda m: len(states.messages) > killed_at + 500, timeout=30.0, what="2 s more of states")
        after = states.messages[killed_at:]
        q = np.array([m.position for m in after])
        qd = np.array([m.velocity for m in after])
        assert np.abs(qd).max() <= 1.0, np.abs(qd).max()  # (zero torque: it falls, faster than 2 rad/s)
        assert np.abs(q[-1] - q0).max() < 0.2, q[-1]
        assert np.abs(qd[-50:]).max() < 0.05, qd[-50:]
        restarted = NodeProcess("dynamics_node", tmp_path / "dyn2.log", params, namespace="/killed")
        try:
            since = time.monotonic()
            commands.wait_for(timeout=60.0, since=since, what="effort_command from the restarted controller")
        finally:
            assert restarted.stop() == 0
    finally:
        dyn.stop()
        sim_code = sim.stop()
        print(sim.log())
    assert sim_code == 0
