"""The trajectory publisher: its trajectory (robot_dynamics.nodes.trajectory_publisher.plan, no ROS) and the
node (a process) under use_sim_time: it loads the robot before any /clock, then publishes on it."""

import itertools
import time

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.nodes.trajectory_publisher.plan import PARAMETERS, Settings, coerce_setting, make_trajectory
from robot_dynamics.description.robots import bundled_urdf


def test_trajectory_derivatives_ramp_and_limits():
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    home = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02)
    trajectory = make_trajectory(arm, Settings(home_positions=home, amplitude=(0.3,), frequency=(0.5,),
                                                  phase=tuple(0.4 * k for k in range(8)), ramp_time=1.0))
    # the finger (0..0.04 m around 0.02) cannot swing 0.3: reduced to 95 % of the room, with a note
    assert trajectory.amplitude[-1] == pytest.approx(0.019) and "arm7_finger_joint1" in trajectory.notes[0]
    q, qd, qdd = trajectory.at(0.0)
    np.testing.assert_allclose(q, home, atol=1e-15)
    np.testing.assert_allclose(qd, 0.0, atol=1e-15)
    h = 1e-6
    for t in (0.3, 0.999, 1.5, 7.0):  # on the ramp, across its end, after it
        q, qd, qdd = trajectory.at(t)
        np.testing.assert_allclose((trajectory.at(t + h)[0] - trajectory.at(t - h)[0]) / (2 * h), qd, atol=1e-6)
        np.testing.assert_allclose((trajectory.at(t + h)[1] - trajectory.at(t - h)[1]) / (2 * h), qdd, atol=2e-5)
    # the ramp ends smoothly: no jump in the desired acceleration (it would kick the computed torque)
    np.testing.assert_allclose(trajectory.at(1.0 - 1e-9)[2], trajectory.at(1.0 + 1e-9)[2], atol=1e-6)
    np.testing.assert_allclose(trajectory.at(0.0)[2], 0.0, atol=1e-15)
    assert np.all(np.abs(np.array([trajectory.at(t)[0] for t in np.linspace(0, 20, 400)]) - home)
                  <= np.abs(trajectory.amplitude) + 1e-12)


def test_quintic_ramp_closed_form():
    # s(u) = 10 u^3 - 15 u^4 + 6 u^5 (not a cosine): at u = 1/2, s = 1/2, s' = 15/8 / T, s'' = 0
    model = rd.load_urdf(rd.examples.PENDULUM_URDF)
    T, a, w = 2.0, 0.1, 2 * np.pi * 0.5
    trajectory = make_trajectory(model, Settings(amplitude=(a,), frequency=(0.5,), phase=(np.pi / 2,),
                                                    ramp_time=T))
    q, qd, qdd = trajectory.at(1.0)  # u = 1/2, sin(w t + pi/2) = cos(w t) = cos(pi) = -1
    assert q[0] == pytest.approx(-a / 2, abs=1e-15)
    assert qd[0] == pytest.approx(a * (15 / 8 / T * -1 + 0.5 * w * -np.sin(np.pi)), abs=1e-12)
    assert qdd[0] == pytest.approx(a * (0.0 - 2 * 15 / 8 / T * w * np.sin(np.pi) + 0.5 * w * w), abs=1e-12)


def test_parameters_declare_every_setting_with_its_default():
    defaults = Settings()
    assert sorted(p.field for p in PARAMETERS) == sorted(defaults.__dataclass_fields__)
    for p in PARAMETERS:
        assert coerce_setting(p.field, p.default) == getattr(defaults, p.field), p.name
    with pytest.raises(ValueError, match="amplitude must be >= 0"):
        coerce_setting("amplitude", [0.1, -0.1])
    with pytest.raises(ValueError, match="rate must be > 0"):
        coerce_setting("rate", 0.0)


def test_under_sim_time_it_loads_the_robot_at_once_and_publishes_on_the_clock(tmp_path):
    pytest.importorskip("rclpy")
    from builtin_interfaces.msg import Time
    from rosgraph_msgs.msg import Clock
    from trajectory_msgs.msg import JointTrajectory

    from ros_helpers import START_TIMEOUT, NodeProcess, RosHarness, publish_until

    harness = RosHarness("trajectory_probe")
    desired = harness.collect(JointTrajectory, "/sim/desired_state", qos=10)
    clock = harness.publisher(Clock, "/clock")
    process = NodeProcess("trajectory_publisher", tmp_path / "trajectory.log", namespace="/sim",
                          ros_args=["-p", "use_sim_time:=true", "-p", "rate:=50.0"],
                          extra_args=["--urdf", "planar_2r"])
    try:
        # the robot is loaded without any /clock (the description source runs on the steady clock)
        log = process.wait_log("trajectory for ['theta1', 'theta2']", timeout=START_TIMEOUT)
        assert "use_sim_time is true: waiting for /clock" in log
        assert not desired.messages  # nothing is published before the first /clock
        harness.wait_for_subscriber(clock)
        ticks = itertools.count(1)  # 10 ms of simulated time each from 100 s, until a desired state comes back

        def tick():
            sec, nanosec = divmod(100 * 10**9 + next(ticks) * 10_000_000, 10**9)
            clock.publish(Clock(clock=Time(sec=sec, nanosec=nanosec)))

        msg = publish_until(tick, desired, lambda m: True, timeout=30.0, period=0.01, what="desired_state after /clock")
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec  # a time of the simulated clock
        assert stamp > 100 * 10**9 and stamp % 10_000_000 == 0, stamp
        assert list(msg.joint_names) == ["theta1", "theta2"]
        assert len(msg.points) == 1 and len(msg.points[0].accelerations) == 2
    finally:
        code = process.stop()
        harness.close()
    assert code == 0, process.log()


def test_with_autostart_false_it_publishes_nothing_until_restart_then_starts_at_home_at_rest(tmp_path):
    """What ``robot-dynamics sim`` starts it with: the node is up (robot loaded, ~/restart offered) but
    silent; ~/restart starts the motion at the home pose, at rest (the quintic ramp)."""
    pytest.importorskip("rclpy")
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory

    from ros_helpers import START_TIMEOUT, NodeProcess, RosHarness

    harness = RosHarness("autostart_probe")
    desired = harness.collect(JointTrajectory, "/waiting/desired_state", qos=10)
    process = NodeProcess("trajectory_publisher", tmp_path / "trajectory.log", namespace="/waiting",
                          ros_args=["-p", "autostart:=false", "-p", "rate:=100.0", "-p", "home_positions:=[0.5, -0.4]",
                                    "-p", "amplitude:=[0.3]"],
                          extra_args=["--urdf", "planar_2r"])
    try:
        process.wait_log("trajectory for ['theta1', 'theta2']", timeout=START_TIMEOUT)
        harness.wait_for_publisher("/waiting/desired_state")
        time.sleep(1.0)  # a second of its 100 Hz: nothing
        assert not desired.messages
        answer = harness.call(Trigger, "/waiting/trajectory_publisher/restart", Trigger.Request())
        assert answer.success and answer.message == "the trajectory starts from the home pose"
        first = desired.wait_for(timeout=5.0, what="desired_state after ~/restart").points[0]
        # its first tick is t = 0 of the ramp: at home, at rest
        np.testing.assert_allclose(first.positions, [0.5, -0.4], atol=1e-12)
        np.testing.assert_allclose(list(first.velocities) + list(first.accelerations), 0.0, atol=1e-12)
        answer = harness.call(Trigger, "/waiting/trajectory_publisher/restart", Trigger.Request())
        assert answer.message == "the trajectory starts again from the home pose"
    finally:
        code = process.stop()
        harness.close()
    assert code == 0, process.log()


@pytest.mark.parametrize("shape", ["line", "circle"])
def test_cartesian_mode_pose_twist_and_acceleration_are_consistent(shape):
    """The frame starts at its home pose at rest; the twist and the acceleration are the exact
    derivatives of the position (central differences) on the ramp, across its end and after it; the
    circle keeps its radius about a centre one radius from the start, in the plane normal to the axis."""
    arm = rd.load_urdf(bundled_urdf("arm7_gripper"))
    home = (0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.8, 0.02)
    trajectory = make_trajectory(arm, Settings(home_positions=home, ramp_time=1.0, cartesian_shape=shape,
                                               cartesian_frame="arm7_tcp", cartesian_size=0.05,
                                               cartesian_frequency=0.25, cartesian_axis=(0.0, 0.0, 2.0)))
    start = rd.frame_pose(arm, np.array(home), "arm7_tcp")
    pose, twist, accel = trajectory.at(0.0)
    np.testing.assert_allclose(pose, start, atol=1e-15)
    np.testing.assert_allclose(twist, 0.0, atol=1e-15)
    np.testing.assert_allclose(accel, 0.0, atol=1e-15)
    h = 1e-6
    for t in (0.3, 0.999, 1.0, 1.5, 3.7):
        pose, twist, accel = trajectory.at(t)
        np.testing.assert_allclose(pose[:3, :3], start[:3, :3], atol=1e-15)  # the orientation is held
        np.testing.assert_allclose(twist[:3], 0.0, atol=1e-15)
        velocity = (trajectory.at(t + h)[0][:3, 3] - trajectory.at(t - h)[0][:3, 3]) / (2 * h)
        np.testing.assert_allclose(velocity, twist[3:], atol=1e-8)
        np.testing.assert_allclose((trajectory.at(t + h)[1] - trajectory.at(t - h)[1]) / (2 * h), accel, atol=1e-6)
        offset = pose[:3, 3] - start[:3, 3]
        assert abs(offset[2]) < 1e-15 if shape == "circle" else abs(offset[0]) + abs(offset[1]) < 1e-15
        if shape == "circle":
            centre = start[:3, 3] - [0.05, 0.0, 0.0]
            assert np.linalg.norm(pose[:3, 3] - centre) == pytest.approx(0.05, abs=1e-12)
    with pytest.raises(ValueError, match="cartesian.frame"):
        make_trajectory(arm, Settings(cartesian_shape=shape))
    with pytest.raises(ValueError, match="cartesian.shape must be"):
        coerce_setting("cartesian_shape", "square")
