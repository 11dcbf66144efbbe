"""The force/torque sensor in the nodes: the dynamics node's compensation, tare and refusals (in process, its
callbacks called directly: test/in_process.py), the parameters refused with reasons, the simulator's true
reading (a Simulator stepped here), and both nodes over ROS: a payload the simulator carries as one more
fixed link, a tare, free motion and a 15 N push at the tool (realtime)."""

import bisect
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.description.robots import bundled_urdf  # noqa: E402
from robot_dynamics.nodes.dynamics.plan import Settings, make_plan  # noqa: E402
from robot_dynamics.nodes.simulator import plan as simulator_plan  # noqa: E402
from robot_dynamics.rigid_body.sensor import ForceTorqueSensor  # noqa: E402
from robot_dynamics.simulation.simulator import Simulator  # noqa: E402

from in_process import Fed  # noqa: E402

FRAME = "arm7_hand"
POSE = np.array([0.3, -0.5, 0.2, -1.8, 0.4, 1.5, -0.7, 0.02])  # the hand tilted: gravity off its axes
PAYLOAD = {"payload.link": "arm7_tcp", "payload.mass": 2.0, "payload.com": [0.08, 0.0, 0.02],
           "payload.inertia": [0.004, 0.0, 0.0, 0.006, 0.0, 0.005]}
G = 9.81


@pytest.fixture(scope="module")
def arm7():
    return bundled_urdf("arm7_gripper").read_text()


def with_payload_link(urdf):
    """arm7_gripper with PAYLOAD as one more fixed link on arm7_tcp: the simulator's robot."""
    link = ('<link name="payload"><inertial><origin xyz="0.08 0 0.02"/><mass value="2"/><inertia ixx="0.004" ixy="0" '
            'ixz="0" iyy="0.006" iyz="0" izz="0.005"/></inertial></link><joint name="payload_joint" type="fixed">'
            '<parent link="arm7_tcp"/><child link="payload"/></joint></robot>')
    return urdf.replace("</robot>", link)


def reading_message(wrench, frame=FRAME, stamp=1.0):
    """A serialized WrenchStamped of ``wrench`` = [moment; force] (the node subscribes it raw)."""
    msg = WrenchStamped()
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(round((stamp % 1) * 1e9))
    f, m = msg.wrench.force, msg.wrench.torque
    m.x, m.y, m.z, f.x, f.y, f.z = (float(x) for x in wrench)
    return serialize_message(msg)


def as_array(msg):
    w = msg.wrench
    return np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])


@pytest.fixture
def fed(arm7):
    fed = Fed({"robot_description": arm7, "ft_sensor.frame": FRAME, "ft_sensor.range": [200.0, 20.0], **PAYLOAD})
    fed.compensated = fed.record(fed.node._ft_sensor._publisher, lambda data: as_array(deserialize_message(data, WrenchStamped)))
    fed.names = list(fed.node._plan.model.joint_names)
    yield fed
    fed.close()


def sensor_of(fed):
    return ForceTorqueSensor(fed.node._plan.model, FRAME, payload=("arm7_tcp", 2.0, (0.08, 0.0, 0.02),
                                                                 (0.004, 0.0, 0.0, 0.006, 0.0, 0.005)))


def test_a_reading_of_gravity_inertia_and_a_push_is_compensated_to_the_push(fed):
    """Moving with constant acceleration: the raw reading is the tool side's weight and inertia (the core's,
    at the true acceleration) plus a push; the node's estimate of the acceleration from the velocities
    gives back the push within 1e-6."""
    sensor, qdd = sensor_of(fed), np.linspace(-1.0, 1.0, 8)
    push = np.array([0.3, -0.2, 0.1, 10.0, -4.0, 6.0])
    for k in range(30):
        t = 0.002 * k
        q, qd = POSE + 0.5 * qdd * t * t, qdd * t
        fed.state(q, qd, names=fed.names, stamp=100.0 + t)
        fed.node._ft_sensor._on_wrench(reading_message(sensor.reading(q, qd, qdd) + push, stamp=100.0 + t))
    assert len(fed.compensated) >= 25  # (the first states give no acceleration estimate yet)
    np.testing.assert_allclose(fed.compensated[-1], push, atol=1e-6)


def test_a_reading_that_arrives_before_its_joint_state_waits_for_it(fed):
    """The topics arrive in either order: a reading stamped after the newest joint state is compensated when
    the state of its stamp comes, at that state (here the arm's acceleration changed at that step: the older
    state would be 1.5 rad/s^2 off on every joint), and gives back the push within 1e-6."""
    sensor, push = sensor_of(fed), np.array([0.3, -0.2, 0.1, 10.0, -4.0, 6.0])
    before, after, dt = np.linspace(-1.0, 1.0, 8), np.linspace(0.5, -1.0, 8), 0.002
    q, qd = POSE.copy(), np.zeros(8)
    for k in range(10):  # constant acceleration ``before``
        fed.state(q, qd, names=fed.names, stamp=100.0 + dt * k)
        q, qd = q + qd * dt + 0.5 * before * dt * dt, qd + before * dt
    q_last, qd_last = q - qd * dt + 0.5 * before * dt * dt, qd - before * dt  # (the state stamped 100.018)
    q, qd = q_last + qd_last * dt + 0.5 * after * dt * dt, qd_last + after * dt  # step 10: ``after``
    fed.node._ft_sensor._on_wrench(reading_message(sensor.reading(q, qd, after) + push, stamp=100.0 + dt * 10))
    assert fed.compensated == []  # (waiting for its state)
    fed.state(q, qd, names=fed.names, stamp=100.0 + dt * 10)
    assert len(fed.compensated) == 1
    np.testing.assert_allclose(fed.compensated[-1], push, atol=1e-6)


def test_tare_in_a_tilted_pose_takes_the_bias_and_not_the_tools_weight(fed):
    sensor = sensor_of(fed)
    bias = np.array([0.05, -0.1, 0.02, 3.0, -2.0, 1.5])
    still = np.zeros(8)
    for k in range(20):
        fed.state(POSE, still, names=fed.names, stamp=200.0 + 0.002 * k)
        fed.node._ft_sensor._on_wrench(reading_message(sensor.reading(POSE, still, still) + bias, stamp=200.0 + 0.002 * k))
    assert np.linalg.norm(fed.compensated[-1] - bias) < 1e-9  # before the tare: the bias remains
    response = fed.node._ft_sensor._on_tare(Trigger.Request(), Trigger.Response())
    assert response.success, response.message
    np.testing.assert_allclose(fed.node._ft_sensor._compensation.bias, bias, atol=1e-9)
    fed.state(POSE, still, names=fed.names, stamp=200.04)
    fed.node._ft_sensor._on_wrench(reading_message(sensor.reading(POSE, still, still) + bias, stamp=200.04))
    np.testing.assert_allclose(fed.compensated[-1], 0.0, atol=1e-9)


def test_tare_while_moving_or_without_readings_is_refused(fed):
    response = fed.node._ft_sensor._on_tare(Trigger.Request(), Trigger.Response())
    assert not response.success and "compensated readings" in response.message
    sensor, qd = sensor_of(fed), np.full(8, 0.2)
    for k in range(20):
        fed.state(POSE, qd, names=fed.names, stamp=300.0 + 0.002 * k)
        fed.node._ft_sensor._on_wrench(reading_message(sensor.reading(POSE, qd, 0 * qd), stamp=300.0 + 0.002 * k))
    response = fed.node._ft_sensor._on_tare(Trigger.Request(), Trigger.Response())
    assert not response.success and "moved" in response.message
    assert not fed.node._ft_sensor._compensation.bias.any()


@pytest.mark.parametrize("wrench, frame, reason", [
    ([0.0, 0.0, math.nan, 0.0, 0.0, 5.0], FRAME, "not finite"),
    ([0.0, 0.0, 0.0, math.inf, 0.0, 5.0], FRAME, "not finite"),
    ([0.0, 0.0, 0.0, 0.0, 0.0, 5.0], "arm7_link7", "not the sensor's frame"),
    ([0.0, 0.0, 0.0, 0.0, 0.0, 5.0], "", "not the sensor's frame"),
    ([0.0, 0.0, 0.0, 0.0, 250.0, 5.0], FRAME, "fy = 250 is beyond the sensor's range 200"),
    ([0.0, 21.0, 0.0, 0.0, 0.0, 5.0], FRAME, "ty = 21 is beyond the sensor's range 20"),
])
def test_bad_readings_are_refused_and_said_never_compensated(fed, wrench, frame, reason):
    still = np.zeros(8)
    for k in range(3):
        fed.state(POSE, still, names=fed.names, stamp=400.0 + 0.002 * k)
    fed.node._ft_sensor._on_wrench(reading_message(wrench, frame=frame, stamp=400.004))
    assert fed.compensated == []
    assert fed.said(reason), fed.logs
    fed.node._ft_sensor._on_wrench(reading_message([0.0] * 5 + [5.0], stamp=400.004))  # a good one still goes through
    assert len(fed.compensated) == 1


def test_a_truncated_message_and_a_stale_state_are_refused(fed):
    fed.node._ft_sensor._on_wrench(reading_message([0.0] * 6)[:30])
    assert fed.said("truncated"), fed.logs
    fed.node._ft_sensor._on_wrench(reading_message([0.0] * 6))
    assert fed.said("no joint states yet"), fed.logs
    still = np.zeros(8)
    for k in range(3):
        fed.state(POSE, still, names=fed.names, stamp=500.0 + 0.002 * k)
    fed.node._ft_sensor._on_wrench(reading_message([0.0] * 6, stamp=500.5))
    assert fed.said("the nearest joint state is stamped -0.4960 s from the reading"), fed.logs  # (another clock?)
    fed.wait(0.15)  # beyond state_timeout
    fed.node._ft_sensor._on_wrench(reading_message([0.0] * 6, stamp=500.004))
    assert fed.said("not compensated: position older than state_timeout"), fed.logs
    assert fed.compensated == []


@pytest.mark.parametrize("frame, reason", [("arm7_link7", "moving joint"), ("nowhere", "not a link"),
                                           ("arm7_link0", "root link")])
def test_a_sensor_frame_that_is_not_a_fixed_joints_link_is_refused_by_both_nodes(arm7, frame, reason):
    model = rd.load_urdf(arm7)
    with pytest.raises(ValueError, match=f"ft_sensor.frame: .*{reason}"):
        make_plan(model, Settings(ft_sensor_frame=frame))
    with pytest.raises(ValueError, match=f"ft_sensor.frame: .*{reason}"):
        simulator_plan.make_plan(model, simulator_plan.Settings(ft_sensor_frame=frame))


@pytest.mark.parametrize("field, value, reason", [
    ("ft_sensor_range", [1.0, 2.0, 3.0], "2 values"), ("ft_sensor_range", [-1.0, 2.0], "> 0"),
    ("ft_sensor_acceleration_filter", -0.1, "in \\[0, 1\\]")])
def test_bad_dynamics_node_parameters_are_refused_with_the_reason(field, value, reason):
    from robot_dynamics.nodes.dynamics.plan import coerce_setting
    with pytest.raises(ValueError, match=reason):
        coerce_setting(field, value)


@pytest.mark.parametrize("field, value, reason", [
    ("ft_sensor_bias", [1.0, 2.0], "6 values"), ("ft_sensor_noise", [-0.1], ">= 0"), ("ft_sensor_noise", [1, 2, 3], "two")])
def test_bad_simulator_parameters_are_refused_with_the_reason(field, value, reason):
    with pytest.raises(ValueError, match=reason):
        simulator_plan.coerce_setting(field, value)


def test_the_simulator_reads_the_payload_link_a_push_on_the_tool_and_its_bias(arm7):
    """The simulator's truth, at rest under gravity-holding torques: the hand, fingers and the payload link
    read as their weight along gravity, a push on arm7_tcp adds itself (moment about the sensor), plus bias."""
    model = rd.load_urdf(with_payload_link(arm7))
    s = simulator_plan.Settings(ft_sensor_frame=FRAME, ft_sensor_bias=(1.0, 2.0, 3.0, 0.1, 0.2, 0.3))
    plan = simulator_plan.make_plan(model, s)
    push = np.array([0.0, 0.0, 0.0, 15.0, 0.0, 0.0])  # world axes, at arm7_tcp's origin
    sim = Simulator(plan.model, POSE, np.zeros(8))
    still = np.zeros(8)
    sim.applied_effort = rd.inverse_dynamics(plan.model, POSE, still, still, external_wrenches={"arm7_tcp": push})
    np.testing.assert_allclose(sim.acceleration(POSE, still, sim.applied_effort, {"arm7_tcp": push}), 0.0, atol=1e-9)
    reading, problem = plan.ft_sensor.at_state(sim, {"arm7_tcp": push}, plan.plausibility)
    assert problem == ""
    T = rd.frame_pose(plan.model, POSE, FRAME)
    tcp = rd.frame_pose(plan.model, POSE, "arm7_tcp")[:3, 3]
    mass = 0.7 + 0.05 + 0.05 + 2.0
    force = T[:3, :3].T @ (np.array([0.0, 0.0, -G * mass]) + push[3:])
    np.testing.assert_allclose(reading[3:], force + [1.0, 2.0, 3.0], atol=1e-6)
    lever = T[:3, :3].T @ (tcp - T[:3, 3])
    moment_of_push = np.cross(lever, T[:3, :3].T @ push[3:])
    sim.applied_effort = rd.gravity_torques(plan.model, POSE)
    without_push = plan.ft_sensor.at_state(sim, {}, plan.plausibility)[0]
    np.testing.assert_allclose(reading[:3] - without_push[:3], moment_of_push, atol=1e-9)


# --- both nodes over ROS ----------------------------------------------------------------------------------------
AMPLITUDE, FREQUENCY = 0.3, 0.5  # rad, Hz: the free motion of every arm joint
PUSH = np.array([15.0, 0.0, 0.0])  # N on arm7_tcp, its (= the hand's) axes
TCP_IN_HAND = np.array([0.0, 0.0, 0.11])
WEIGHT = 2.0 * G


@pytest.fixture(scope="module")
def loop(tmp_path_factory, arm7):
    """The simulator carries the payload as one more fixed link beyond the sensor (with a bias and noise on the
    sensor); the dynamics node knows it as payload.*, follows desired_state by computed torque and compensates."""
    from std_msgs.msg import Float64MultiArray  # noqa: F401
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from ros_helpers import NodeProcess, RosHarness, write_params

    tmp = tmp_path_factory.mktemp("ft_sensor")
    sim_params = write_params(tmp / "sim.yaml", {
        "robot_description": with_payload_link(arm7), "initial_positions": POSE.tolist(), "apply_damping": False,
        "apply_friction": False, "publish_rate": 1000.0, "command_timeout": 0.05, "on_command_timeout": "hold_position",
        "publish_clock": True, "ft_sensor.frame": FRAME, "ft_sensor.bias": [1.0, -2.0, 3.0, 0.1, 0.2, -0.3],
        "ft_sensor.noise": 0.02,
    })
    dyn_params = write_params(tmp / "dyn.yaml", {
        "robot_description": arm7, "command_source": "computed", "publish_mass_matrix": False,
        "ft_sensor.frame": FRAME, "ft_sensor.range": [200.0, 20.0], **PAYLOAD,
        # a test process that a loaded machine pauses for more than the default 0.1 s between two desired
        # states must not make effort_command hold gravity meanwhile (the arm pushed at POSE would float away)
        "desired_timeout": 1.0,
    })
    harness = RosHarness("ft_probe")
    simulator = NodeProcess("simulator_node", tmp / "sim.log", sim_params)
    dynamics = NodeProcess("dynamics_node", tmp / "dyn.log", dyn_params)
    compensated = harness.collect(WrenchStamped, "ft_sensor/wrench_compensated", qos=10)
    states = harness.collect(JointState, "joint_states")
    wrench = harness.publisher(WrenchStamped, "external_wrench")
    desired = harness.publisher(JointTrajectory, "desired_state")
    names = list(rd.load_urdf(arm7).joint_names)
    motion = {"start": None}

    def publish_desired():
        t0 = motion["start"]
        t = 0.0 if t0 is None else time.monotonic() - t0
        w = 2 * math.pi * FREQUENCY
        shape = np.r_[np.ones(7), 0.0] * AMPLITUDE  # (the finger stays)
        ramp = min(t, 1.0)  # (from rest: a sine whose amplitude grows over a second, then steady)
        point = JointTrajectoryPoint(positions=(POSE + ramp * shape * np.sin(w * t)).tolist(),
                                     velocities=(ramp * shape * w * np.cos(w * t)).tolist(),
                                     accelerations=(-ramp * shape * w * w * np.sin(w * t)).tolist())
        desired.publish(JointTrajectory(joint_names=names, points=[point]))

    timer = harness.node.create_timer(0.002, publish_desired)
    try:
        compensated.wait_for(timeout=90.0, what="ft_sensor/wrench_compensated from the dynamics node")
        # (the probe may discover the simulator's joint_states later than the dynamics node's readings)
        states.wait_for(timeout=30.0, what="joint_states from the simulator")
        harness.wait_for_subscriber(wrench)
        yield dict(harness=harness, compensated=compensated, wrench=wrench, motion=motion, tmp=tmp,
                   simulator=simulator, dynamics=dynamics, states=states, model=rd.load_urdf(arm7))
    finally:
        harness.node.destroy_timer(timer)
        for process in (dynamics, simulator):
            assert process.stop() == 0, process.log()
        harness.close()


def force_of(msg):
    f = msg.wrench.force
    return np.array([f.x, f.y, f.z])


def push(loop, force):
    msg = WrenchStamped()
    msg.header.frame_id = "arm7_tcp"
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = map(float, force)
    for _ in range(3):  # (the simulator's subscription is best effort)
        loop["wrench"].publish(msg)
        time.sleep(0.005)


def hand_state(loop):
    msg = loop["states"].messages[-1]
    values = dict(zip(msg.name, msg.position))
    return np.array([values[n] for n in loop["model"].joint_names])


def stamp(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def settled(loop, timeout=30.0):
    """Wait until the arm is at rest: over the last 0.2 s of joint states (200 states at 1 kHz spanning 0.2 s of
    simulated time, the last one just in: not a paused stream's last ones) it moved less than 1e-4 rad."""
    deadline = time.monotonic() + timeout
    while True:
        messages, arrived = loop["states"].messages[-200:], loop["states"].times[-1:]
        if len(messages) == 200 and stamp(messages[-1]) - stamp(messages[0]) > 0.19 and arrived[0] > time.monotonic() - 0.1:
            q = np.array([[dict(zip(m.name, m.position))[n] for n in loop["model"].joint_names] for m in messages])
            if np.ptp(q, axis=0).max() < 1e-4:
                return stamp(messages[-1])
        assert time.monotonic() < deadline, "the arm did not come to rest"
        time.sleep(0.1)


def readings_over(loop, seconds, count, timeout=60.0):
    """The compensated readings that arrive from now on over at least ``seconds`` of wall time (the desired
    motion's clock) and until there are at least ``count`` of them (a loaded machine may pause the graph)."""
    collector, since = loop["compensated"], time.monotonic()
    time.sleep(seconds)
    collector.wait_count(count, since, timeout, "compensated readings")
    return collector.messages[bisect.bisect_left(collector.times, since):]


def readings_from_now(loop, count, timeout=20.0):
    """The next ``count`` compensated readings to arrive (a loaded machine may pause the graph for a moment:
    counted, not timed)."""
    collector, since = loop["compensated"], time.monotonic()
    deadline = since + timeout
    while True:
        readings = [m for t, m in zip(collector.times, collector.messages) if t >= since]
        if len(readings) >= count:
            return readings[:count]
        assert time.monotonic() < deadline, f"{len(readings)} compensated readings in {timeout:g} s ({count} wanted)"
        time.sleep(0.02)


@pytest.mark.realtime
def test_over_ros_tare_then_free_motion_then_a_15_N_push(loop):
    """The issue's goals over ROS: after a tare at rest, the compensated reading while the arm moves freely
    (every joint 0.3 rad at 0.5 Hz) with the 2 kg payload is within 2 % of the payload's weight (RMS), and
    a 15 N push at the tool held still reads within 3 % of the push (moment: about the sensor's origin)."""
    harness = loop["harness"]
    now = stamp(loop["states"].messages[-1])  # (held at POSE by computed torque: 1 s of simulated time, at rest)
    loop["states"].wait_for(lambda m: stamp(m) >= now + 1.0, timeout=30.0, what="1 s of simulated time at POSE")
    settled(loop)
    response = harness.call(Trigger, "/robot_dynamics/tare_ft_sensor", Trigger.Request())
    assert response.success, response.message
    # readings compensated before the tare may still be on their way (the subscription keeps 10): only those
    # stamped 50 ms of simulated time after the newest one already here count
    tared = stamp(loop["compensated"].messages[-1]) + 0.05
    still = np.array([force_of(m) for m in readings_from_now(loop, 250) if stamp(m) > tared])
    assert len(still) >= 150 and np.abs(still.mean(axis=0)).max() < 0.05, still.mean(axis=0)  # the bias is gone

    loop["motion"]["start"] = time.monotonic()
    time.sleep(2.0)  # (steady amplitude from 1 s on)
    moving = np.array([force_of(m) for m in readings_over(loop, 3.0, 1000)])
    rms = float(np.sqrt((np.linalg.norm(moving, axis=1) ** 2).mean()))
    print(f"\nfree motion: {len(moving)} compensated readings, RMS |force| {rms:.4f} N = {100 * rms / WEIGHT:.2f} % "
          f"of the payload's weight")
    free_motion = (len(moving), rms)

    loop["motion"]["start"] = None  # back to POSE, held
    time.sleep(2.0)
    settled(loop)  # (the push's world direction is taken from the hand at rest)
    hand = lambda: rd.frame_pose(loop["model"], hand_state(loop), FRAME)[:3, :3]  # noqa: E731
    pushed_along = hand() @ PUSH  # (world axes: the simulator holds the push there while the arm gives way)
    pushed_at = stamp(loop["states"].messages[-1])
    push(loop, PUSH)
    try:
        # (the arm gives way a little and comes to rest: 1.5 s of simulated time, then at rest)
        loop["states"].wait_for(lambda m: stamp(m) >= pushed_at + 1.5, timeout=30.0, what="1.5 s simulated after the push")
        settled(loop)
        held = readings_from_now(loop, 500)
        force = np.array([force_of(m) for m in held]).mean(axis=0)
        moment = np.array([[m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z] for m in held]).mean(axis=0)
        expected = hand().T @ pushed_along
    finally:
        push(loop, (0.0, 0.0, 0.0))
    error = np.linalg.norm(force - expected)
    print(f"15 N push: compensated force {np.round(force, 3)} N (true {np.round(expected, 3)}), error {error:.4f} N = "
          f"{100 * error / 15:.2f} %; moment {np.round(moment, 4)} N m (true {np.round(np.cross(TCP_IN_HAND, expected), 4)})")
    assert free_motion[0] > 300 and free_motion[1] <= 0.02 * WEIGHT, free_motion
    assert error <= 0.03 * 15.0
    assert np.linalg.norm(moment - np.cross(TCP_IN_HAND, expected)) <= 0.03 * np.linalg.norm(np.cross(TCP_IN_HAND, PUSH))
