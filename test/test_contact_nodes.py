"""Contact over real ROS 2 topics: the dynamics node's external torques, wrench estimate, collision and
reaction against the simulator node's applied wrench, bad efforts, and the simulator's contact_wrenches.
Every wrench is a WrenchStamped as ROS reads it: in header.frame_id's axes, moment about its origin (the
wrench applied to panda_link7 in its own axes, the estimate in them or, with external_torque.wrench_frame,
in the root's: tf2's doTransform of it).

Processes: simulator_node (Panda-7 at rest, no damping or friction) with a dynamics_node that holds it
still by computed torque and estimates the external torques; a second dynamics_node fed by this test
(bad efforts); a simulator_node with a pendulum resting on a floor.  Accuracy and timing goals are
measured in process (test_collision.py) and, for the 20 N case, here over the topics too.
"""

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.tools.benchmarks.robots import panda7_urdf  # noqa: E402

from ros_helpers import Collector, NodeProcess, RosHarness, publish_in_step, wait_until, write_params  # noqa: E402

HOME = [0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6]
LINK = "panda_link7"  # rotated against the root at HOME: its axes are not the world's
START_TIMEOUT = 60.0
TIMEOUT = 30.0  # s, for what a loaded machine may delay (a test's own tolerances are on values, never on time)
DYNAMICS = "/robot_dynamics"
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(panda7_urdf())


@pytest.fixture(scope="module")
def harness():
    ros = RosHarness("contact_probe")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def loop(tmp_path_factory, harness, model):
    """Simulator + dynamics node in closed loop, the desired state HOME published at 100 Hz."""
    tmp = tmp_path_factory.mktemp("contact")
    sim_params = write_params(tmp / "sim.yaml", {
        "robot_description": panda7_urdf(), "initial_positions": HOME, "apply_damping": False,
        "apply_friction": False, "publish_rate": 1000.0,
        # the drives hold HOME until the dynamics node commands: the loop starts from rest
        "command_timeout": 0.05, "on_command_timeout": "hold_position",
        "publish_clock": True,  # stamps in simulated time: never re-anchored when a busy machine makes it lag
    })
    dyn_params = write_params(tmp / "dyn.yaml", {
        "robot_description": panda7_urdf(), "command_source": "computed", "publish_mass_matrix": False,
        "external_torque.enabled": True, "external_torque.frame": LINK,
        "external_torque.gain": 50.0,  # the simulator's exact velocities allow more than the default's 10 1/s
        "collision.thresholds": [100.0] * 7, "collision.reaction": "gravity",
        # the desired state is HOME, constant: a test process that a loaded machine pauses for more than the
        # default 0.1 s between two of its messages must not make effort_command hold gravity meanwhile
        "desired_timeout": 2.0,
    })
    simulator = NodeProcess("simulator_node", tmp / "sim.log", sim_params)
    dynamics = NodeProcess("dynamics_node", tmp / "dyn.log", dyn_params)
    states = harness.collect(JointState, "joint_states")
    torques = harness.collect(JointState, "external_torques", qos=10)
    wrenches = harness.collect(WrenchStamped, "external_wrench_estimate", qos=10)
    commands = harness.collect(Float64MultiArray, "effort_command", qos=10)
    flags = harness.collect(Bool, "collision", qos=LATCHED)
    desired = harness.publisher(JointTrajectory, "desired_state")
    wrench = harness.publisher(WrenchStamped, "external_wrench")
    point = JointTrajectoryPoint(positions=HOME, velocities=[0.0] * 7, accelerations=[0.0] * 7)
    timer = harness.node.create_timer(0.01, lambda: desired.publish(
        JointTrajectory(joint_names=list(model.joint_names), points=[point])))
    try:
        torques.wait_for(timeout=START_TIMEOUT, what="external_torques from the dynamics node")
        harness.wait_for_subscriber(wrench)
        yield dict(simulator=simulator, dynamics=dynamics, states=states, torques=torques, wrenches=wrenches,
                   commands=commands, flags=flags, wrench=wrench, tmp=tmp)
    finally:
        harness.node.destroy_timer(timer)
        for process in (dynamics, simulator):
            assert process.stop() == 0, process.log()


def send_wrench(publisher, force, moment=(0.0, 0.0, 0.0)):
    """The wrench on LINK in its own axes, sent three times (the simulator's subscription is best effort)."""
    msg = WrenchStamped()
    msg.header.frame_id = LINK
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = map(float, force)
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = map(float, moment)
    for _ in range(3):
        publisher.publish(msg)
        time.sleep(0.005)


def by_name(msg, names, field="position"):
    values = dict(zip(msg.name, getattr(msg, field)))
    return np.array([values[n] for n in names])


def key(msg):
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def seconds(msg):
    """The stamp in s (the loop's simulator stamps with /clock: simulated time)."""
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def paired(loop, topic, after, predicate=lambda m: True, timeout=TIMEOUT):
    """The first message on ``topic`` stamped at or after ``after`` (simulated s) satisfying ``predicate``,
    and the joint state of its stamp (the state it was computed from), waited for however long a loaded
    machine takes: ``(message, state)``."""
    found = []

    def look():
        states = {key(m): m for m in loop["states"].messages[-5000:]}
        for m in loop[topic].messages[-2000:]:
            if seconds(m) >= after and predicate(m) and key(m) in states:
                found.append((m, states[key(m)]))
                return True
        return False
    wait_until(look, timeout, f"{topic} stamped from {after:.3f} s on, with the joint state of its stamp", period=0.05)
    return found[0]


FORCE = np.array([12.0, -10.0, 12.5]) * 20.0 / np.linalg.norm([12.0, -10.0, 12.5])  # 20 N, LINK's axes
MOMENT = np.array([0.0, 0.3, 0.0])  # 0.3 N m, LINK's axes


@pytest.mark.realtime  # (alone: under load the node drops joint states, and the observer sees gaps)
def test_20_N_and_0_3_N_m_in_link7_axes_are_estimated_as_torques_and_as_a_wrench(loop, model):
    """The issue's goals over ROS: external_torques within 2 % + 0.02 N m of J^T F with the local Jacobian and
    the wrench estimate's force within 3 % in the link's axes, the arm held by computed torque in the
    simulator (run alone, as a realtime test)."""
    send_wrench(loop["wrench"], FORCE, MOMENT)
    try:
        estimate_checked(loop, model, FORCE, MOMENT)
    finally:
        send_wrench(loop["wrench"], (0, 0, 0))


@pytest.mark.realtime
def test_the_wrench_frame_parameter_expresses_the_estimate_in_the_root_as_do_transform(loop, harness, model):
    """external_torque.wrench_frame: panda_link0: the same estimate in the root's axes about its origin,
    tf2's doTransform of the applied wrench (M' = R M + p x R F) within 3 %."""
    results = harness.set_parameters(DYNAMICS, {"external_torque.wrench_frame": "panda_link0"})
    assert all(r.successful for r in results), [r.reason for r in results]
    send_wrench(loop["wrench"], FORCE, MOMENT)
    try:
        rest = at_rest_under(loop, model, FORCE, MOMENT)
        # 0.2 s of simulated time later; judged against the state it was computed from (same stamp)
        estimate, state = paired(loop, "wrenches", rest + 0.2, lambda m: m.header.frame_id == "panda_link0")
        q = by_name(state, model.joint_names)
        T = rd.frame_pose(model, q, LINK)
        R, p = T[:3, :3], T[:3, 3]
        expected = np.concatenate((R @ MOMENT + np.cross(p, R @ FORCE), R @ FORCE))
        w = estimate.wrench
        got = np.array([w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y, w.force.z])
        assert np.linalg.norm(got[3:] - expected[3:]) <= 0.03 * np.linalg.norm(expected[3:]), (got, expected)
        assert np.linalg.norm(got[:3] - expected[:3]) <= 0.03 * np.linalg.norm(expected[:3]), (got, expected)
    finally:
        send_wrench(loop["wrench"], (0, 0, 0))
        harness.set_parameters(DYNAMICS, {"external_torque.wrench_frame": ""})


def test_a_frame_no_joint_moves_is_refused_with_the_reason(loop, harness):
    """external_torque.frame on the base gave NaN estimates: refused, and the estimate stays on LINK."""
    for name, value, reason in (("external_torque.frame", "panda_link0", "is fixed to the base (no joint moves it)"),
                                ("external_torque.wrench_frame", "world", "is not a link of robot")):
        [result] = harness.set_parameters(DYNAMICS, {name: value})
        assert not result.successful and reason in result.reason, result.reason
    t0 = time.monotonic()
    estimate = loop["wrenches"].wait_for(lambda m: True, since=t0, timeout=TIMEOUT, what="an estimate after the refusal")
    assert estimate.header.frame_id == LINK and math.isfinite(estimate.wrench.force.x)


def at_rest_under(loop, model, force, moment=(0.0, 0.0, 0.0), timeout=TIMEOUT):
    """Wait (sending the wrench again, its subscription is best effort) until the arm has given way to the
    force and come to rest: over the last 0.2 s of joint states it moved less than 1e-4 rad; the stamp
    (simulated s) of the last of them."""
    deadline = time.monotonic() + timeout
    while True:
        states = loop["states"].messages[-200:]
        if len(states) == 200:
            q = np.array([by_name(m, model.joint_names) for m in states])
            if np.abs(q[-1] - HOME).max() > 0.01 and np.ptp(q, axis=0).max() < 1e-4:
                return seconds(states[-1])
        if time.monotonic() > deadline:
            raise AssertionError(f"the arm did not come to rest under {force} N within {timeout} s: moved {np.ptp(q, axis=0).max() if len(states) == 200 else None} rad over the last 0.2 s, {np.abs(q[-1] - HOME).max() if len(states) == 200 else None} from HOME")
        send_wrench(loop["wrench"], force, moment)
        time.sleep(0.1)


def estimate_checked(loop, model, force, moment):
    rest = at_rest_under(loop, model, force, moment)
    # 10 observer time constants more (0.2 s of simulated time); the state it was computed from (same stamp), and
    # the wrench estimate of that state (a state whose estimate a loaded machine dropped on its way here is skipped)
    estimates = {}

    def estimated(m):
        if key(m) not in estimates:
            estimates.update((key(w), w) for w in loop["wrenches"].messages[-2000:])
        return key(m) in estimates

    msg, state = paired(loop, "torques", rest + 0.2, estimated)
    assert list(msg.name) == list(model.joint_names)
    q = by_name(state, model.joint_names)
    truth = rd.jacobian(model, q, LINK, reference="local").T @ np.concatenate((moment, force))
    r = np.array(msg.effort)
    assert np.abs(q - HOME).max() > 0.01  # the arm gives way a little under the force
    assert np.all(np.abs(r - truth) <= 0.02 * np.abs(truth) + 0.02), (r, truth)
    estimate = estimates[key(msg)]
    assert estimate.header.frame_id == LINK
    f = estimate.wrench.force
    assert np.linalg.norm(np.array([f.x, f.y, f.z]) - force) <= 0.03 * np.linalg.norm(force)
    assert loop["flags"].messages[-1].data is False


@pytest.mark.realtime
def test_a_30_N_step_is_a_collision_and_the_reaction_holds_gravity_until_reset(loop, harness, model):
    # the gravity hold's torques, stamped as the state they hold: effort_command (unstamped) is paired with
    # the state it was computed from through them
    gravity = Collector()
    subscription = harness.node.create_subscription(JointState, "gravity_torques", gravity, 10)
    try:
        collision_and_gravity_hold(loop, harness, model, gravity)
    finally:
        harness.node.destroy_subscription(subscription)
        harness.set_parameters(DYNAMICS, {"collision.thresholds": [100.0] * 7})  # (the loop's again)


def collision_and_gravity_hold(loop, harness, model, gravity):
    results = harness.set_parameters(DYNAMICS, {"collision.thresholds": [2.0] * 7})
    assert all(r.successful for r in results), [r.reason for r in results]
    loop["states"].wait_count(500, time.monotonic(), what="joint states (0.5 s simulated at 1 kHz)")
    t0 = time.monotonic()
    send_wrench(loop["wrench"], (0.0, 30.0, 0.0))
    loop["flags"].wait_for(lambda m: m.data, timeout=TIMEOUT, what="collision true", since=t0)
    refused = harness.call(Trigger, f"{DYNAMICS}/reset_collision", Trigger.Request())
    assert not refused.success and "still beyond" in refused.message
    t1 = time.monotonic()
    send_wrench(loop["wrench"], (0, 0, 0))  # the arm floats free under the gravity hold (the simulator has no damping)
    loop["flags"].wait_for(lambda m: not m.data, timeout=TIMEOUT, what="collision false", since=t1)
    log = loop["dynamics"].wait_log("collision over at t =")
    assert "beyond collision.thresholds; reaction gravity" in log and "peak |external torque|" in log
    # the collision is over, the reaction holds: effort_command is the gravity hold of the measured state
    t2 = time.monotonic()
    loop["commands"].wait_for(lambda m: True, since=t2, timeout=TIMEOUT, what="effort_command after the collision")
    found = []

    def held():  # an effort_command after the collision, the gravity_torques of the same g, its state by stamp
        states = {key(m): m for m in loop["states"].messages[-5000:]}
        holds = [m for m in gravity.messages[-200:] if key(m) in states]
        for data in reversed(loop["commands"].messages[-50:]):
            command = np.array(data.data)
            match = next((m for m in reversed(holds) if np.allclose(m.effort, command, rtol=0, atol=1e-12)), None)
            if match is not None:
                found.append((command, states[key(match)]))
                return True
        return False
    wait_until(held, TIMEOUT, "an effort_command equal to a gravity_torques message stamped as a received joint state")
    command, state = found[0]
    g = rd.gravity_torques(model, by_name(state, model.joint_names))
    assert np.abs(command - g).max() < 0.1, (command, g)
    # the loop's thresholds again before the release (the reaction stays latched until ~/reset_collision): the
    # return from wherever the arm floated meanwhile, a torque step as large as the test was slow to get here,
    # would otherwise be judged at 2 N m, and its transient alone latched the gravity hold again under load
    results = harness.set_parameters(DYNAMICS, {"collision.thresholds": [100.0] * 7})
    assert all(r.successful for r in results), [r.reason for r in results]
    released = harness.call(Trigger, f"{DYNAMICS}/reset_collision", Trigger.Request())
    assert released.success and "released" in released.message
    t3 = time.monotonic()
    released_at = seconds(loop["states"].wait_for(since=t3, timeout=TIMEOUT, what="a joint state after the release"))
    # computed torque again: back home 3 s of simulated time later
    state = loop["states"].wait_for(lambda m: seconds(m) >= released_at + 3.0, since=t3, timeout=TIMEOUT * 2,
                                    what="3 s of simulated time after the release")
    assert loop["states"].times[-1] > t3
    np.testing.assert_allclose(by_name(state, model.joint_names), HOME, atol=5e-3)


@pytest.fixture(scope="module")
def fed(tmp_path_factory, harness, model):
    """A dynamics node in namespace /fed that only this test feeds with joint states."""
    tmp = tmp_path_factory.mktemp("fed")
    params = write_params(tmp / "dyn.yaml", {"robot_description": panda7_urdf(), "external_torque.enabled": True})
    process = NodeProcess("dynamics_node", tmp / "dyn.log", params, namespace="fed")
    states = harness.publisher(JointState, "/fed/joint_states")
    torques = harness.collect(JointState, "/fed/external_torques", qos=10)
    gravity = harness.collect(JointState, "/fed/gravity_torques", qos=10)
    diagnostics = harness.collect(DiagnosticArray, "/diagnostics", qos=10)
    try:
        harness.wait_for_subscriber(states, timeout=START_TIMEOUT)
        yield dict(process=process, states=states, torques=torques, gravity=gravity, diagnostics=diagnostics)
    finally:
        assert process.stop() == 0, process.log()


def test_bad_efforts_publish_nothing_and_say_why(fed, model):
    names = list(model.joint_names)
    g = rd.gravity_torques(model, HOME)

    def send(effort, t):
        msg = JointState(name=names, position=HOME, velocity=[0.0] * 7, effort=effort)
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int((t % 1) * 1e9)
        fed["states"].publish(msg)

    # missing efforts: the other outputs come, external_torques not
    def stream(effort, seconds, start):
        for k in range(int(seconds / 0.002)):
            send(effort, start + 0.002 * k)
            time.sleep(0.002)
        return start + seconds

    t = stream([], 1.0, 100.0)
    fed["gravity"].wait_for(timeout=TIMEOUT, what="gravity_torques (the dynamics node published nothing)")
    assert not fed["torques"].messages
    fed["process"].wait_log("effort never received")
    # held with the holding torque: r = 0
    t = stream(list(g), 1.0, t)
    fed["torques"].wait_for(timeout=TIMEOUT)
    assert np.abs(np.array(fed["torques"].messages[-1].effort)).max() < 1e-6
    # a NaN effort: refused by name, nothing from it
    count = len(fed["torques"].messages)
    bad = list(g)
    bad[2] = math.nan
    t = stream(bad, 0.3, t)
    fed["process"].wait_log("non-finite effort of ['panda_joint3']")
    # stale: positions keep coming, efforts stop; after state_timeout (0.1 s) nothing more is published
    t = stream(list(g), 0.3, t)
    count = len(fed["torques"].messages)
    t = stream([], 1.0, t)
    fed["process"].wait_log("effort older than state_timeout")
    assert len(fed["torques"].messages) - count < 0.15 / 0.002  # at most the messages within state_timeout

    def contact_status(array):
        return any(s.name.endswith(": external_torque") and "effort" in s.message for s in array.status)
    fed["diagnostics"].wait_for(contact_status, timeout=TIMEOUT, what="a contact diagnostics status about efforts")


def test_a_gap_in_the_state_stamps_restarts_the_observer(fed, model):
    """States missing for longer than state_timeout (stamps jump 0.5 s, as when a simulator stops publishing
    states it does not believe): the torque over the gap is unknown, so the observer starts over and says so,
    instead of holding the last effort over the gap and reporting the momentum change as external torque."""
    names = list(model.joint_names)
    g = rd.gravity_torques(model, HOME)

    def send(position, t):
        msg = JointState(name=names, position=position, velocity=[0.0] * 7, effort=list(g))
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int((t % 1) * 1e9)
        fed["states"].publish(msg)

    def stream(position, stamps):  # (in step with the node's answers: none dropped from its queue)
        def publish(k):
            send(position, stamps[k])
            time.sleep(0.002)
        answers = fed["gravity"].messages
        publish_in_step(publish, stamps, lambda: seconds(answers[-1]) if answers else -math.inf, timeout=TIMEOUT)

    t = 300.0
    stream(HOME, t + 0.002 * np.arange(300))  # held still with its holding torque: r = 0
    fed["torques"].wait_for(lambda m: m.header.stamp.sec == 300, timeout=TIMEOUT, what="external torques at t = 300 s")
    # 0.5 s later the arm is elsewhere, at rest: a different holding torque over an unknown gap
    moved = list(np.array(HOME) + 0.2)
    g = rd.gravity_torques(model, moved)
    stream(moved, t + 1.1 + 0.002 * np.arange(100))
    last = fed["torques"].wait_for(lambda m: m.header.stamp.sec == 301 and m.header.stamp.nanosec > 250_000_000,
                                   timeout=TIMEOUT, what="external torques after the gap")
    assert np.abs(np.array(last.effort)).max() < 1e-6
    fed["process"].wait_log("external torques restarted: 0.50")


def test_the_simulator_publishes_the_true_contact_wrench(tmp_path_factory, harness):
    """A pendulum resting on a floor (test_contact.py's closed form) through simulator_node's parameters: the
    wrench on the link in the link's own axes (about 90 degrees from the root's), then with contact.wrench_frame
    the root's, moved about its origin."""
    tmp = tmp_path_factory.mktemp("pendulum")
    params = write_params(tmp / "sim.yaml", {
        "robot_description": rd.examples.PENDULUM_URDF, "initial_positions": [math.pi / 2 - 0.05],
        "contact.planes": [0.0, 0.0, -0.05, 0.0, 0.0, 1.0], "contact.links": ["link"],
        "contact.spheres": [0.0, 0.0, -1.0, 0.05], "apply_damping": False, "apply_friction": False,
    })
    process = NodeProcess("simulator_node", tmp / "sim.log", params, namespace="pendulum")
    wrenches = harness.collect(WrenchStamped, "/pendulum/contact_wrenches", qos=10)
    states = harness.collect(JointState, "/pendulum/joint_states", qos=10)
    pendulum = rd.load_urdf(rd.examples.PENDULUM_URDF)

    def vectors(msg):
        w = msg.wrench
        return np.array([w.torque.x, w.torque.y, w.torque.z]), np.array([w.force.x, w.force.y, w.force.z])

    try:
        wrenches.wait_for(timeout=START_TIMEOUT, what="contact_wrenches")
        states.wait_count(1500, time.monotonic(), timeout=TIMEOUT * 2, what="joint states (3 s simulated at 500 Hz)")  # at rest
        found = []

        def latest_pair():  # the last wrench, and the state of its stamp
            by_stamp = {key(m): m for m in states.messages[-500:]}
            found[:] = [(m, by_stamp[key(m)]) for m in wrenches.messages[-200:] if key(m) in by_stamp][-1:]
            return bool(found)
        wait_until(latest_pair, TIMEOUT, "a contact wrench stamped as a received joint state")
        last, state = found[0]
        assert last.header.frame_id == "link"
        R = rd.frame_pose(pendulum, state.position, "link")[:3, :3]
        moment, force = vectors(last)
        assert abs(force[2]) < 1.0  # in the link's axes: the floor's push is along the link's x, not its z
        # in world axes: the floor's 9.81 N up; (c - o) x f = (0, -x f_z, 0) at x ~ -1
        np.testing.assert_allclose(R @ force, [0.0, 0.0, 9.81], atol=1e-2)
        np.testing.assert_allclose(R @ moment, [0.0, 9.81, 0.0], atol=0.02)
        t0 = time.monotonic()
        harness.set_parameters("/pendulum/robot_dynamics_simulator", {"contact.wrench_frame": "base"})
        last = wrenches.wait_for(lambda m: m.header.frame_id == "base", since=t0, timeout=TIMEOUT, what="a wrench in base")
        moment, force = vectors(last)  # the link's origin is the root's: the moment moves by nothing
        np.testing.assert_allclose(force, [0.0, 0.0, 9.81], atol=1e-2)
        np.testing.assert_allclose(moment, [0.0, 9.81, 0.0], atol=0.02)
        [refused] = harness.set_parameters("/pendulum/robot_dynamics_simulator", {"contact.wrench_frame": "world"})
        assert not refused.successful and "is not a link of robot" in refused.reason
    finally:
        assert process.stop() == 0, process.log()
    wait_until(lambda: True)
