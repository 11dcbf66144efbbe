"""The simulator node over real ROS 2 topics: the node in its own process, this test as a peer.

One simulator process (Panda-7, at the home pose, no damping/friction) serves the interface
tests; each test resets it and sets the parameters it needs (zero gravity where a motion is
compared with M^-1 tau, so nothing but the command moves the arm).  A second process checks
``real_time_factor: 0`` with ``publish_clock``.  Checked:

- joint_states: the model's joints, ~publish_rate, the initial state exactly after ~/reset;
- effort_command (``joints`` order, the parameter reorders it) and effort_command_named (by
  name, any subset): the applied effort is what was commanded, and the arm accelerates along
  M(q)^-1 tau (cosine > 0.99);
- effort saturation at the URDF limit (87 N m) shown in joint_states.effort, and not when
  enforce_effort_limits is false;
- rejection of non-finite, wrong-length and unknown-name commands and of bad wrenches: a warning
  in the log, nothing changes;
- command_timeout: a stale command becomes zero torque, warned once;
- external_wrench on the link header.frame_id, in its axes (ROS's rule): the arm accelerates along
  M^-1 J_local^T F (not along the world-aligned reading); a zero wrench clears it; a link fixed to the
  base is refused with the reason;
- ~/pause freezes time and state; ~/reset restores the initial state;
- an absurd wrench (1e300 N) makes the state non-finite: integration stops, /diagnostics says so
  (ERROR), joint_states keep coming, finite, with a frozen stamp; ~/reset recovers;
- real_time_factor 0 runs faster than real time; /clock is the stamps' time base;
- elastic joints (joint_stiffness, armature): motor_states with the stamps of joint_states, the
  motors at the links after ~/reset, the springs deflected under gravity.
"""

import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")

# Rates, real-time factors and timeouts of a simulator running in real time: measured alone.
pytestmark = pytest.mark.realtime

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import SetBool, Trigger  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.tools.benchmarks.robots import panda7_urdf  # noqa: E402

from ros_helpers import (  # noqa: E402
    WAIT_TIMEOUT, Collector, NodeProcess, RosHarness, publish_until, wait_until, write_params,
)

NODE = "/robot_dynamics_simulator"
HOME = [0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]
START_TIMEOUT = 45.0  # s: Python start-up, numba cache load, discovery, on a busy 2-core machine


def stamp(msg):
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def level(status):
    """A DiagnosticStatus level as an int (rclpy gives the byte field as bytes)."""
    return status.level if isinstance(status.level, int) else ord(status.level)


class Received:
    """A message and the monotonic time this process received it."""

    __slots__ = ("t", "msg")

    def __init__(self, msg):
        self.t, self.msg = time.monotonic(), msg


def collect(harness, msg_type, topic, qos=None):
    """A ros_helpers Collector of :class:`Received` messages."""
    from rclpy.qos import qos_profile_sensor_data

    collector = Collector()
    harness.node.create_subscription(msg_type, topic, lambda m: collector(Received(m)),
                                     qos if qos is not None else qos_profile_sensor_data)
    return collector


@pytest.fixture(scope="module")
def model():
    return rd.load_urdf(panda7_urdf())


@pytest.fixture(scope="module")
def harness():
    ros = RosHarness("simulator_probe")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def simulator(tmp_path_factory, harness):
    """The simulator process, and the collectors of its outputs."""
    tmp = tmp_path_factory.mktemp("simulator")
    params = write_params(tmp / "params.yaml", {
        "robot_description": panda7_urdf(), "initial_positions": HOME,
        "apply_damping": False, "apply_friction": False, "command_timeout": 0.0,
    })
    process = NodeProcess("simulator_node", tmp / "simulator.log", params)
    states = collect(harness, JointState, "joint_states")
    diagnostics = collect(harness, DiagnosticArray, "/diagnostics", qos=10)
    try:
        states.wait_for(timeout=START_TIMEOUT, what="joint_states from the simulator")
        yield process, states, diagnostics
    finally:
        code = process.stop()
        assert code == 0, f"simulator exited with {code}:\n{process.log()}"


class Rig:
    """Publishers and helpers around the shared simulator."""

    def __init__(self, harness, simulator, model):
        self.harness, self.model = harness, model
        self.process, self.states, self.diagnostics = simulator
        self.command = harness.publisher(Float64MultiArray, "effort_command")
        self.named = harness.publisher(JointState, "effort_command_named")
        self.wrench = harness.publisher(WrenchStamped, "external_wrench")
        for publisher in (self.command, self.named, self.wrench):
            harness.wait_for_subscriber(publisher)

    def set(self, **values):
        results = self.harness.set_parameters(NODE, values)
        assert all(r.successful for r in results), [r.reason for r in results]

    def reset(self):
        response = self.harness.call(Trigger, f"{NODE}/reset", Trigger.Request())
        assert response.success, response.message
        return response

    def pause(self, on):
        response = self.harness.call(SetBool, f"{NODE}/pause", SetBool.Request(data=on))
        assert response.success
        return response

    def after(self, t0, predicate=lambda m: True, timeout=30.0, what="joint_states"):
        """The first joint_states message received after monotonic time t0 satisfying predicate."""
        return self.states.wait_for(lambda r: r.t > t0 and predicate(r.msg), timeout=timeout, what=what).msg

    def since(self, t0):
        return [r.msg for r in self.states.messages if r.t > t0]

    def latest(self, settle=0.05):
        time.sleep(settle)
        return self.states.messages[-1].msg

    def counted(self, count, since, what="joint_states"):
        """The first ``count`` joint_states received after monotonic time ``since`` (500 per second of
        simulated time: counted, not timed, however long a loaded machine pauses the graph)."""
        return [r.msg for r in self.states.wait_count(count, since, what=what)]

    def frozen(self, since, count=50, timeout=30.0):
        """``count`` joint_states in a row with one stamp, received after ``since``: the state a paused or
        stopped simulation keeps publishing (waited for: messages published before may still be on their way)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.since(since)[-count:]
            if len(run) == count and len({stamp(m) for m in run}) == 1:
                return run
            assert time.monotonic() < deadline, (f"no {count} joint_states in a row with one stamp within {timeout} s "
                                                 f"(the last stamps {[stamp(m) for m in run[-5:]]})")
            time.sleep(0.02)

    def send_named(self, names, efforts):
        self.named.publish(JointState(name=list(names), effort=[float(e) for e in efforts]))

    def send_wrench(self, link, force=(0, 0, 0), torque=(0, 0, 0)):
        msg = WrenchStamped()
        msg.header.frame_id = link
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = map(float, force)
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = map(float, torque)
        self.wrench.publish(msg)

    def by_name(self, msg, field="position"):
        values = dict(zip(msg.name, getattr(msg, field)))
        return np.array([values[n] for n in self.model.joint_names])

    def simulation_status(self, predicate, timeout=30.0, what="a simulation status"):
        def matching(array):
            return any(s.name.endswith(": simulation") and predicate(s) for s in array.status)
        t0 = time.monotonic()
        array = self.diagnostics.wait_for(lambda r: r.t > t0 and matching(r.msg), timeout=timeout, what=what).msg
        return next(s for s in array.status if s.name.endswith(": simulation"))


@pytest.fixture
def rig(harness, simulator, model):
    rig = Rig(harness, simulator, model)
    rig.set(gravity=[0.0, 0.0, -9.81], joints=[], enforce_effort_limits=True, command_timeout=0.0)
    rig.pause(False)
    rig.send_wrench("panda_hand")  # none
    rig.reset()
    yield rig
    rig.send_wrench("panda_hand")


# ------------------------------------------------------------------------------------------------

def test_joint_states_rate_names_and_the_initial_state(rig, model):
    rig.set(gravity=[0.0, 0.0, 0.0])  # (falling with its motors off, the wrist soon spins beyond belief: not published)
    t0 = time.monotonic()
    rig.reset()
    first = rig.after(t0, lambda m: np.array_equal(rig.by_name(m), HOME), what="the initial state")
    assert list(first.name) == list(model.joint_names)
    np.testing.assert_array_equal(rig.by_name(first, "velocity"), np.zeros(7))
    np.testing.assert_array_equal(rig.by_name(first, "effort"), np.zeros(7))
    rig.simulation_status(lambda s: True)
    status = rig.simulation_status(lambda s: True)  # a whole diagnostics period after the reset
    rate = float(dict((kv.key, kv.value) for kv in status.values)["joint_states per second"])
    assert 450 < rate < 550, f"joint_states at {rate:.0f} Hz (the node's count), publish_rate 500"
    window = [r.msg for r in rig.states.messages if r.t > t0 + 0.2]
    assert len(window) > 100, f"{len(window)} joint_states over a whole diagnostics period"
    spacing = np.diff([stamp(m) for m in window])
    assert np.median(spacing) == pytest.approx(0.002, abs=1e-6)
    assert spacing.min() > 0
    assert all(np.isfinite(m.position).all() for m in window)


def test_effort_command_is_applied_and_accelerates_along_m_inverse_tau(rig, model):
    rig.set(gravity=[0.0, 0.0, 0.0])
    tau = np.array([0.2, -0.3, 0.1, 0.2, 0.03, -0.02, 0.01])  # ~1 rad/s^2: small motion, M(q) ~ M(home)
    rig.reset()
    t0 = time.monotonic()

    def publish():
        rig.command.publish(Float64MultiArray(data=tau.tolist()))

    applied = publish_until(publish, rig.states, lambda r: r.t > t0 and np.array_equal(rig.by_name(r.msg, "effort"), tau),
                            timeout=WAIT_TIMEOUT, what="joint_states with the command applied").msg
    # 0.3 s of simulated time under the command (its stamps), however long the machine takes for it
    msg = publish_until(publish, rig.states, lambda r: stamp(r.msg) >= stamp(applied) + 0.3, timeout=30.0,
                        what="0.3 s of simulated time under the command").msg
    np.testing.assert_array_equal(rig.by_name(msg, "effort"), tau)
    qd = rig.by_name(msg, "velocity")
    expected = np.linalg.solve(rd.mass_matrix(model, HOME), tau)
    cosine = qd @ expected / np.linalg.norm(qd) / np.linalg.norm(expected)
    assert cosine > 0.99, f"velocity {qd} not along M^-1 tau {expected}"


def test_effort_saturation_is_shown_in_joint_states(rig):
    rig.set(gravity=[0.0, 0.0, 0.0])
    command = [1000.0, -1000.0, 0.0, 0.0, 50.0, 0.0, -5.0]
    rig.command.publish(Float64MultiArray(data=command))
    effort = rig.by_name(rig.after(time.monotonic(), lambda m: m.effort[0] != 0.0), "effort")
    np.testing.assert_array_equal(effort, [87.0, -87.0, 0.0, 0.0, 12.0, 0.0, -5.0])
    rig.set(enforce_effort_limits=False)
    rig.reset()  # (the saturated torques spin the wrist beyond belief within 0.1 s: nothing published then)
    command = [200.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    rig.command.publish(Float64MultiArray(data=command))
    effort = rig.by_name(rig.after(time.monotonic(), lambda m: m.effort[0] > 100), "effort")
    np.testing.assert_array_equal(effort, command)


def test_named_commands_set_the_joints_they_name(rig):
    rig.set(gravity=[0.0, 0.0, 0.0])
    rig.send_named(["panda_joint7", "panda_joint2"], [1.5, -2.0])
    msg = rig.after(time.monotonic(), lambda m: m.effort[6] != 0.0, what="the named command")
    np.testing.assert_array_equal(rig.by_name(msg, "effort"), [0, -2.0, 0, 0, 0, 0, 1.5])
    rig.send_named(["panda_joint1"], [0.5])  # another subset: merged
    msg = rig.after(time.monotonic(), lambda m: m.effort[0] != 0.0)
    np.testing.assert_array_equal(rig.by_name(msg, "effort"), [0.5, -2.0, 0, 0, 0, 0, 1.5])


def test_joints_parameter_orders_effort_command_and_joint_states(rig, model):
    rig.set(gravity=[0.0, 0.0, 0.0], joints=list(reversed(model.joint_names)))
    rig.command.publish(Float64MultiArray(data=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    msg = rig.after(time.monotonic(), lambda m: m.effort[0] == 1.0)
    assert list(msg.name) == list(reversed(model.joint_names))
    np.testing.assert_array_equal(rig.by_name(msg, "effort"), [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    results = rig.harness.set_parameters(NODE, {"joints": ["panda_joint1", "no_such_joint"]})
    assert not results[0].successful and "no_such_joint" in results[0].reason


def test_bad_inputs_are_rejected_with_a_warning_and_change_nothing(rig):
    rig.set(gravity=[0.0, 0.0, 0.0])
    good = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    rig.command.publish(Float64MultiArray(data=good))
    rig.after(time.monotonic(), lambda m: m.effort[0] == 1.0)
    rig.command.publish(Float64MultiArray(data=[math.nan] + good[1:]))
    rig.command.publish(Float64MultiArray(data=good[:6]))
    rig.send_named(["panda_joint1", "panda_finger_joint1"], [5.0, 5.0])
    rig.send_named(["panda_joint1"], [math.inf])
    rig.send_wrench("no_such_link", force=(1, 0, 0))
    rig.send_wrench("panda_hand", force=(math.nan, 0, 0))
    log = rig.process.wait_log("effort_command message rejected")
    wait_until(lambda: all(text in rig.process.log() for text in (
        "effort_command_named message rejected", "external_wrench message rejected")), what="rejection warnings")
    log = rig.process.log()
    assert "non-finite effort for ['panda_joint1']" in log or "values, expected 7" in log
    assert "unknown joints ['panda_finger_joint1']" in log or "non-finite effort" in log
    status = rig.simulation_status(lambda s: True)
    assert dict((kv.key, kv.value) for kv in status.values)["external wrenches"] == "[]"
    time.sleep(0.1)
    msg = rig.latest()
    np.testing.assert_array_equal(rig.by_name(msg, "effort"), good)
    assert np.isfinite(msg.position).all() and np.isfinite(msg.velocity).all()


def test_command_timeout_zeroes_a_stale_command_and_warns_once(rig):
    rig.set(gravity=[0.0, 0.0, 0.0], command_timeout=0.2)
    rig.send_named(["panda_joint3"], [1.0])
    rig.after(time.monotonic(), lambda m: m.effort[2] == 1.0, what="the command")
    msg = rig.after(time.monotonic(), lambda m: m.effort[2] == 0.0, timeout=30.0, what="zero torque after the timeout")
    assert np.all(np.asarray(msg.effort) == 0.0)
    log = rig.process.wait_log("no effort command for ['panda_joint3'] in the last 0.2 s")
    assert log.count("no effort command for ['panda_joint3']") == 1


def test_external_wrench_accelerates_along_the_jacobian_transpose(rig, model):
    rig.set(gravity=[0.0, 0.0, 0.0])
    wrench = np.array([0.0, 0.05, 0.0, 0.0, 0.0, 1.0])  # [moment; force] in panda_link7's axes, about its origin
    rig.reset()  # (drops every wrench: the wrench is sent after it)
    t0 = time.monotonic()
    start = rig.after(t0, what="joint_states after ~/reset")
    # 0.2 s of simulated time (stamps) after the reset, the wrench having moved the arm (without it, with
    # zero gravity and no command, every velocity stays exactly 0), however long the machine takes for it
    moved = publish_until(lambda: rig.send_wrench("panda_link7", force=wrench[3:], torque=wrench[:3]), rig.states,
                          lambda r: r.t > t0 and stamp(r.msg) >= stamp(start) + 0.2 and any(r.msg.velocity),
                          timeout=30.0, period=0.02, what="0.2 s of simulated time with the arm moved by the wrench")
    qd = rig.by_name(moved.msg, "velocity")
    M = rd.mass_matrix(model, HOME)
    expected = np.linalg.solve(M, rd.jacobian(model, HOME, "panda_link7", reference="local").T @ wrench)
    world_read = np.linalg.solve(M, rd.jacobian(model, HOME, "panda_link7").T @ wrench)  # the old reading
    cosine = lambda a, b: a @ b / np.linalg.norm(a) / np.linalg.norm(b)  # noqa: E731
    assert cosine(expected, world_read) < 0.5  # the link's axes are not the world's: the readings differ
    assert cosine(qd, expected) > 0.99, f"velocity {qd} not along M^-1 J_local^T F {expected}"
    status = rig.simulation_status(lambda s: "panda_link7" in dict((kv.key, kv.value) for kv in s.values)
                                   .get("external wrenches", ""), what="the wrench in the diagnostics")
    assert level(status) == 0
    # on the base: moves nothing, refused (sent until said: the log throttles a reason said moments ago,
    # such as the earlier test's unknown frame_id, for LOG_THROTTLE s)
    deadline = time.monotonic() + 10.0
    while "'panda_link0' is fixed to the base (no joint moves it)" not in rig.process.log():
        assert time.monotonic() < deadline, rig.process.log()
        rig.send_wrench("panda_link0", force=(1.0, 0.0, 0.0))
        time.sleep(0.2)
    rig.send_wrench("panda_link7")  # a zero wrench removes it
    rig.simulation_status(lambda s: dict((kv.key, kv.value) for kv in s.values).get("external wrenches") == "[]",
                          what="the wrench cleared")


def test_pause_freezes_and_reset_restores_the_initial_state(rig):
    rig.pause(True)
    frozen = rig.frozen(time.monotonic(), count=20)[-1]  # (messages published before the pause may still arrive)
    t0 = time.monotonic()
    for later in rig.counted(150, t0, "joint_states while paused"):  # 0.3 s of the paused node's publishing
        assert stamp(later) == stamp(frozen)
        np.testing.assert_array_equal(later.position, frozen.position)
    rig.pause(False)
    t1 = time.monotonic()
    moving = rig.after(t1, lambda m: stamp(m) > stamp(frozen) + 0.1, what="time to run again")
    assert not np.array_equal(moving.position, frozen.position)  # zero torque: the arm falls
    # 0.05 s of simulated time more (stamps), however long the machine takes for it
    fallen = rig.after(t1, lambda m: stamp(m) >= stamp(moving) + 0.05, what="0.05 s of simulated time after the resume")
    assert np.abs(rig.by_name(fallen) - HOME).max() > 1e-2
    rig.pause(True)  # (paused, the reset state is published until resumed: a best-effort reader cannot miss it)
    t0 = time.monotonic()
    rig.reset()
    rig.after(t0, lambda m: np.abs(rig.by_name(m) - HOME).max() < 1e-12, what="the initial state after ~/reset")
    rig.pause(False)


def test_non_finite_state_stops_integration_reports_it_and_reset_recovers(rig):
    rig.send_wrench("panda_hand", force=(1e300, 1e300, 0.0))
    status = rig.simulation_status(lambda s: level(s) == 2, what="an ERROR status")
    assert "integration stopped" in status.message and "non-finite" in status.message
    rig.process.wait_log("Integration stopped")
    recent = rig.frozen(time.monotonic(), count=50)  # the stale state keeps its stamp, and keeps coming
    for msg in recent:
        assert np.isfinite(msg.position).all() and np.isfinite(msg.velocity).all() and np.isfinite(msg.effort).all()
    rig.reset()  # also drops the wrench
    t0 = time.monotonic()
    rig.simulation_status(lambda s: level(s) == 0, what="OK after the reset")
    first = rig.after(t0)
    later = rig.after(time.monotonic(), lambda m: stamp(m) > stamp(first) + 0.05)
    assert np.isfinite(later.position).all()


def test_parameters_change_live_and_bad_values_are_rejected(rig):
    rig.set(gravity=[0.0, 0.0, 0.0])  # (falling, the wrist would soon spin beyond belief: an ERROR status)
    rig.set(integrator="euler", physics_rate=2000.0)
    status = rig.simulation_status(lambda s: "euler at 2000 Hz" in str([kv.value for kv in s.values]),
                                   what="the new integrator in the diagnostics")
    assert level(status) in (0, 1)
    rig.set(integrator="rk4", physics_rate=1000.0)
    for name, value in (("integrator", "leapfrog"), ("physics_rate", -5.0), ("gravity", [0.0, 1.0]),
                        ("initial_positions", [0.0, 1.0])):
        results = rig.harness.set_parameters(NODE, {name: value})
        assert not results[0].successful, f"{name}={value!r} accepted"
    assert not rig.harness.set_parameters(NODE, {"publish_clock": True})[0].successful  # read-only


def test_as_fast_as_possible_with_clock(harness, tmp_path):
    """real_time_factor 0 and publish_clock: /clock starts at 0, is the stamps' time, and runs faster than the wall."""
    params = write_params(tmp_path / "fast.yaml", {
        "robot_description": panda7_urdf(), "initial_positions": HOME, "real_time_factor": 0.0,
        "publish_clock": True, "gravity": [0.0, 0.0, 0.0],
    })
    namespace = "/fast"
    clock = collect(harness, Clock, "/clock", qos=10)
    states = collect(harness, JointState, f"{namespace}/joint_states")
    process = NodeProcess("simulator_node", tmp_path / "fast.log", params, namespace=namespace)
    try:
        first = states.wait_for(timeout=START_TIMEOUT, what="joint_states of the fast simulator").msg
        assert stamp(first) < 1000.0  # simulated time from 0, not the wall clock (~1.8e9 s)
        t0, s0 = time.monotonic(), stamp(states.messages[-1].msg)
        time.sleep(2.0)
        s1 = stamp(states.messages[-1].msg)
        factor = (s1 - s0) / (time.monotonic() - t0)
        assert factor > 2.0, f"real_time_factor 0 ran at only {factor:.1f}x real time"
        ticks = [r.msg.clock.sec + r.msg.clock.nanosec * 1e-9 for r in clock.messages]
        assert np.all(np.diff(ticks) > 0)
        stamps = np.array([stamp(r.msg) for r in states.messages])
        # both on the 2 ms publish grid of simulated time, over the same span (at ~10 kHz this
        # process drops many of either, so the sets are compared by grid and span, not equality)
        for series in (np.array(ticks), stamps):
            assert np.allclose(series / 0.002, np.round(series / 0.002), atol=1e-6)
        assert len(ticks) > 100 and ticks[0] < stamps[-1] and stamps[0] < ticks[-1]
    finally:
        code = process.stop()
        assert code == 0, f"simulator exited with {code}:\n{process.log()}"


def test_elastic_joints_publish_motor_states(harness, tmp_path):
    """joint_stiffness: motor_states comes with every joint_states (same stamp and names), the motors
    start at the links, and under gravity the springs deflect: the motors lead the sagging links."""
    from robot_dynamics.description.robots import bundled_urdf

    params = write_params(tmp_path / "elastic.yaml", {
        "robot_description": bundled_urdf("planar_2r").read_text(), "armature": [0.5, 0.5],
        "joint_stiffness": [400.0, 400.0], "apply_damping": False, "apply_friction": False, "command_timeout": 0.0,
    })
    namespace = "/elastic"
    states = collect(harness, JointState, f"{namespace}/joint_states")
    motors = collect(harness, JointState, f"{namespace}/motor_states")
    process = NodeProcess("simulator_node", tmp_path / "elastic.log", params, namespace=namespace)
    try:
        first = motors.wait_for(timeout=START_TIMEOUT, what="motor_states of the elastic simulator").msg
        assert list(first.name) == ["theta1", "theta2"]
        node = f"{namespace}/robot_dynamics_simulator"
        assert harness.call(SetBool, f"{node}/pause", SetBool.Request(data=True)).success
        assert harness.call(Trigger, f"{node}/reset", Trigger.Request()).success
        # paused: the reset state keeps being published (0.3 s of it, counted: the subscriptions keep at most
        # a few older messages); the motors against the links of the same stamp
        reset = motors.wait_count(150, time.monotonic(), what="motor_states while paused")[-1].msg
        link = states.wait_for(lambda r: stamp(r.msg) == stamp(reset), timeout=30.0,
                               what="the joint_states of the reset motor_states' stamp").msg
        np.testing.assert_array_equal(reset.position, link.position)  # relaxed
        assert harness.call(SetBool, f"{node}/pause", SetBool.Request(data=False)).success
        motors.wait_count(250, time.monotonic(), what="motor_states after the resume")  # >= 0.5 s simulated at 500 Hz
        by_stamp = {stamp(r.msg): r.msg for r in states.messages}
        pairs = [(r.msg, by_stamp[stamp(r.msg)]) for r in motors.messages if stamp(r.msg) in by_stamp]
        assert len(pairs) > 50  # every motor_states has the stamp of a joint_states
        motor, link = pairs[-1]
        assert np.abs(np.subtract(motor.position, link.position)).max() > 1e-3  # the springs carry the arm
        assert np.all(np.isfinite(motor.position)) and np.all(np.isfinite(motor.velocity))
    finally:
        code = process.stop()
        assert code == 0, f"simulator exited with {code}:\n{process.log()}"
