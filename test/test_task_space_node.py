"""dynamics_node with ``command_source: task_space``: the node in its own process, real DDS.

- without a desired pose, effort_command holds gravity and the diagnostics say why;
- with desired_pose, desired_twist and desired_accel, computed_torques and effort_command equal
  the library's task_control.task_space_torque at the measured state (both laws);
- a desired pose, twist and acceleration given in another link's frame are placed at the measured state
  (the torque equals the library's for the goal moved into the root frame); a frame_id that is no link is
  refused with the reason;
- a stale pose makes effort_command hold gravity again; the diagnostics carry the task-space error.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.description.robots import bundled_urdf  # noqa: E402
from robot_dynamics.control.task_controller import TaskSpaceSettings, TaskTarget, task_space_torque  # noqa: E402

from ros_helpers import DISCOVERY_TIMEOUT, RosHarness, publish_until, wait_until  # noqa: E402
from test_dynamics_node import OUTPUT_QOS, STALE, Rig, joint_state, new_stamp, status_text  # noqa: E402

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402

FRAME = "arm7_tcp"
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.8, 0.02])
QD = np.array([0.1, -0.05, 0.02, 0.1, -0.1, 0.05, 0.2, 0.0])


@pytest.fixture(scope="module")
def harness():
    h = RosHarness("task_space_node_tests")
    yield h
    h.close()


@pytest.fixture(scope="module")
def diagnostics(harness):
    return harness.collect(DiagnosticArray, "/diagnostics", OUTPUT_QOS)


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(str(bundled_urdf("arm7_gripper")))


@pytest.fixture(scope="module")
def rig(harness, tmp_path_factory, diagnostics):
    tmp = tmp_path_factory.mktemp("task")
    params = {"robot_description": bundled_urdf("arm7_gripper").read_text(), "command_source": "task_space",
              "task_space.frame": FRAME, "task_space.kp": 400.0, "task_space.kd": 40.0,
              "task_space.posture": [float(v) for v in Q0]}
    rig = Rig(harness, tmp, "/task", params)
    rig.pose = harness.publisher(PoseStamped, "/task/desired_pose")
    rig.twist = harness.publisher(TwistStamped, "/task/desired_twist")
    rig.accel = harness.publisher(AccelStamped, "/task/desired_accel")
    try:
        rig.wait_ready()
        for pub in (rig.pose, rig.twist, rig.accel):
            harness.wait_for_subscriber(pub)
        rig.proc.wait_log("loaded robot", timeout=30.0)
        yield rig
    finally:
        code = rig.proc.stop()
        print(rig.proc.log())
    assert code == 0, "the node did not exit cleanly on SIGINT"


def pose_msg(T, frame_id="arm7_link0"):
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in T[:3, 3])
    R = T[:3, :3]  # a quaternion of R (R is a proper rotation near the identity's neighbourhood here)
    w = 0.5 * np.sqrt(max(1.0 + np.trace(R), 1e-12))
    x, y, z = (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)
    msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z, msg.pose.orientation.w = x, y, z, w
    return msg


def motion_msg(kind, value, frame_id="arm7_link0"):
    msg = TwistStamped() if kind == "twist" else AccelStamped()
    body = msg.twist if kind == "twist" else msg.accel
    body.angular.x, body.angular.y, body.angular.z = (float(v) for v in value[:3])
    body.linear.x, body.linear.y, body.linear.z = (float(v) for v in value[3:])
    msg.header.frame_id = frame_id
    return msg


def test_without_a_desired_pose_effort_command_holds_gravity(rig, model, diagnostics):
    state = joint_state(model.joint_names, Q0, QD)
    g = rd.gravity_torques(model, Q0)
    publish_until(lambda: rig.states.publish(state), rig.command, lambda m: np.allclose(m.data, g, atol=1e-9),
                  what="effort_command = g(q)")
    rig.diag_after(diagnostics, "inputs", "no desired_pose yet", publish=lambda: rig.states.publish(state))


@pytest.mark.parametrize("mode", ["computed_torque", "impedance"])
def test_task_space_torque_matches_the_library(rig, model, diagnostics, mode):
    rig.set_ok(**{"task_space.mode": mode})
    start = rd.frame_pose(model, Q0, FRAME)
    target = start.copy()
    target[:3, 3] += [0.01, -0.02, 0.015]
    twist, accel = np.array([0.0, 0.0, 0.1, 0.05, 0.0, 0.0]), np.array([0.0, 0.2, 0.0, 0.0, 0.1, 0.0])
    settings = TaskSpaceSettings(FRAME, mode, kp=400.0, kd=40.0, rest=Q0, posture_kp=10.0, posture_kd=2.0)
    expected = task_space_torque(model, settings, Q0, QD, TaskTarget(target, twist, accel)).torque
    state = joint_state(model.joint_names, Q0, QD, stamp=new_stamp())

    def send():
        rig.pose.publish(pose_msg(target))
        rig.twist.publish(motion_msg("twist", twist))
        rig.accel.publish(motion_msg("accel", accel))
        rig.states.publish(state)

    rig.expect(send, rig.computed, state.header.stamp, expected, atol=1e-6)
    limits = np.where(np.isfinite(model.effort_limits), model.effort_limits, np.inf)
    publish_until(send, rig.command, lambda m: np.allclose(m.data, np.clip(expected, -limits, limits), atol=1e-6),
                  what="effort_command = the task-space torque")
    text = rig.diag_after(diagnostics, "task space", "position error (m)", publish=send)
    assert f"mode={mode}" in status_text(text, rig.fqn, "task space")


def test_pose_in_a_frame_that_is_no_link_is_refused(rig, model, diagnostics):
    rig.diag_after(diagnostics, "task space", "'world' is not a link of robot",
                   publish=lambda: rig.pose.publish(pose_msg(np.eye(4), frame_id="world")))


def test_goals_in_another_links_frame_are_placed_at_the_measured_state(rig, model):
    """desired_pose, desired_twist and desired_accel in arm7_link4's frame (rotated against the root at Q0):
    the torque is the library's for the goal moved into the root frame at the state measured when it came."""
    rig.set_ok(**{"task_space.mode": "computed_torque"})
    link = "arm7_link4"
    T = rd.frame_pose(model, Q0, link)
    assert np.abs(T[:3, :3] - np.eye(3)).max() > 0.5
    local = np.linalg.inv(T) @ rd.frame_pose(model, Q0, FRAME)  # the tool's pose in link 4, moved a little
    local[:3, 3] += [0.01, -0.02, 0.015]
    twist, accel = np.array([0.0, 0.0, 0.1, 0.05, 0.0, 0.0]), np.array([0.0, 0.2, 0.0, 0.0, 0.1, 0.0])
    R = T[:3, :3]
    rotated = lambda v: np.r_[R @ v[:3], R @ v[3:]]  # noqa: E731
    settings = TaskSpaceSettings(FRAME, "computed_torque", kp=400.0, kd=40.0, rest=Q0, posture_kp=10.0, posture_kd=2.0)
    expected = task_space_torque(model, settings, Q0, QD, TaskTarget(T @ local, rotated(twist), rotated(accel))).torque
    old = task_space_torque(model, settings, Q0, QD, TaskTarget(local, twist, accel)).torque  # read in root axes
    assert np.abs(expected - old).max() > 1.0  # the test tells the two readings apart
    state = joint_state(model.joint_names, Q0, QD, stamp=new_stamp())

    def send():
        rig.states.publish(state)  # the state that places the goals
        rig.pose.publish(pose_msg(local, frame_id=link))
        rig.twist.publish(motion_msg("twist", twist, frame_id=link))
        rig.accel.publish(motion_msg("accel", accel, frame_id=link))
        rig.states.publish(state)

    rig.expect(send, rig.computed, state.header.stamp, expected, atol=1e-6)


def test_stale_pose_holds_gravity(rig, model, diagnostics):
    rig.pose.publish(pose_msg(rd.frame_pose(model, Q0, FRAME)))
    time.sleep(STALE)
    state = joint_state(model.joint_names, Q0, QD)
    g = rd.gravity_torques(model, Q0)
    publish_until(lambda: rig.states.publish(state), rig.command, lambda m: np.allclose(m.data, g, atol=1e-9),
                  what="effort_command = g(q) after the pose went stale")
    rig.diag_after(diagnostics, "task space", "desired_pose is stale", publish=lambda: rig.states.publish(state))
    assert not rig.computed.find(lambda m: m.header.stamp == state.header.stamp)


@pytest.mark.realtime
def test_the_desired_inputs_are_subscribed_only_while_command_source_is_task_space(rig):
    count = lambda: [rig.h.node.count_subscribers(f"/task/{t}") for t in ("desired_pose", "desired_twist", "desired_accel")]  # noqa: E731
    assert count() == [1, 1, 1]
    rig.set_ok(command_source="computed")
    try:
        wait_until(lambda: count() == [0, 0, 0], DISCOVERY_TIMEOUT, "the desired_pose/twist/accel subscriptions gone")
    finally:
        rig.set_ok(command_source="task_space")
    wait_until(lambda: count() == [1, 1, 1], DISCOVERY_TIMEOUT, "the desired_pose/twist/accel subscriptions back")


@pytest.mark.realtime  # three nodes in a closed loop at 500 Hz: alone (under load it starves, as its summary says)
def test_task_space_demo_closes_the_loop_over_ros(tmp_path):
    """robot-dynamics demo --task-space: simulator, dynamics node (task_space) and trajectory publisher
    (Cartesian circle) as processes; the tool follows the 5 cm circle (the summary's RMS error includes
    the topics' latency and a loaded machine's lost messages: a loose bound)."""
    import os
    import re
    import subprocess
    import sys

    pytest.importorskip("matplotlib", reason="the demo's plot needs matplotlib")
    output = tmp_path / "task_space.png"
    done = subprocess.run([sys.executable, "-m", "robot_dynamics.cli", "demo", "--task-space", "--duration", "6",
                           "--output", str(output), "--log-dir", str(tmp_path / "logs"), "--quiet",
                           "--domain-id", os.environ["ROS_DOMAIN_ID"]], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    rms = float(re.search(r"position error  RMS ([\d.]+) mm", done.stdout).group(1))
    rotation = float(re.search(r"rotation error  RMS ([\d.]+) mrad", done.stdout).group(1))
    assert rms < 5.0 and rotation < 20.0, done.stdout
    assert output.is_file() and output.stat().st_size > 20_000
    assert "Traceback" not in done.stderr


def test_task_space_inputs_refuse_what_is_not_a_pose():
    """The rclpy-free checks: frame, quaternion norm, finiteness, plausibility; a refused message changes nothing."""
    from robot_dynamics.nodes.common.parameters import Rejected
    from robot_dynamics.nodes.dynamics.task_space_inputs import TaskSpaceInputs

    inputs = TaskSpaceInputs(rd.load_urdf(str(bundled_urdf("arm7_gripper"))))
    base = "arm7_link0"
    inputs.read_pose(base, (0.1, 0.2, 0.3), (0.0, 0.0, 0.0, 1.0), 0)
    for frame, position, orientation, reason in (
            ("world", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), "not a link of robot"),
            ("arm7_link3", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), "no joint state has arrived"),
            (base, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 2.0), "not a unit quaternion"),
            (base, (float("nan"), 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), "not finite"),
            (base, (1e6, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), "not believed")):
        with pytest.raises(Rejected, match=reason):
            inputs.read_pose(frame, position, orientation, 1)
    target, notes = inputs.target(10, 100)
    np.testing.assert_array_equal(target.pose[:3, 3], [0.1, 0.2, 0.3])
    assert notes == [] and np.array_equal(target.twist, np.zeros(6))
    assert inputs.target(200, 100)[0] is None  # stale
    with pytest.raises(Rejected, match="not believed"):
        inputs.read_twist("desired_twist", base, (0.0, 0.0, 0.0), (5e3, 0.0, 0.0), 1)


def test_task_plan_names_the_parameter_it_refuses():
    """compile_task: no frame, an unknown frame, more directions than joints are refused by name."""
    from robot_dynamics.nodes.dynamics.plan import Settings, make_plan

    planar = rd.load_urdf(str(bundled_urdf("planar_2r")))
    for values, reason in (({}, "needs task_space.frame"), ({"task_frame": "nowhere"}, "is not a link"),
                           ({"task_frame": planar.link_names[-1]}, "at most as many directions as joints")):
        with pytest.raises(ValueError, match=reason):
            make_plan(planar, Settings(command_source="task_space", **values))
    plan = make_plan(planar, Settings(command_source="task_space", task_frame=planar.link_names[-1],
                                      task_directions=("x", "z")))
    assert plan.task.axes == ("x", "z") and list(plan.task.rows) == [3, 5]
