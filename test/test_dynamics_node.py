"""End-to-end tests of the ``dynamics_node`` executable: real rclpy, real DDS, the node in its own
process, a test node in this process.

Three node processes serve the whole module (one per robot_description source), each in its own
namespace, plus one short-lived process that must refuse an invalid parameter file. Tests that
share a process restore what they change. Every output is identified by the stamp of the joint
state it was computed from, so "nothing was published from that message" is checked exactly:
a rejected message is followed by a good one (a sentinel) from the same publisher, and once the
sentinel's answer is in, the rejected message's answer can no longer come.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.tools.benchmarks.robots import example_robot_path, panda7_urdf  # noqa: E402

from ros_helpers import (  # noqa: E402
    NodeProcess,
    RosHarness,
    START_TIMEOUT,
    publish_until,
    wait_until,
    write_params,
)

OUTPUT_QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TIMEOUT = 0.3  # state_timeout and desired_timeout of the test nodes, s
STALE = 0.6  # sleeping this long makes anything older than TIMEOUT (a safe direction to sleep in)
TOL = 1e-9

_stamps = itertools.count(1)


def new_stamp() -> Time:
    return Time(sec=1000 + next(_stamps), nanosec=123)


def same_stamp(a: Time, b: Time) -> bool:
    return a.sec == b.sec and a.nanosec == b.nanosec


def joint_state(names, q=None, qd=None, stamp=None):
    msg = JointState()
    msg.header.stamp = stamp if stamp is not None else new_stamp()
    msg.name = list(names)
    if q is not None:
        msg.position = [float(x) for x in q]
    if qd is not None:
        msg.velocity = [float(x) for x in qd]
    return msg


def efforts(msg) -> np.ndarray:
    return np.asarray(msg.effort, dtype=float)


def by_name(msg, names) -> np.ndarray:
    """The efforts of a JointState output in the order ``names``."""
    index = {n: i for i, n in enumerate(msg.name)}
    return np.array([msg.effort[index[n]] for n in names])


def as_matrix(msg) -> np.ndarray:
    rows, cols = msg.layout.dim
    assert (rows.label, cols.label) == ("rows", "cols")
    assert rows.stride == rows.size * cols.size and cols.stride == cols.size
    return np.asarray(msg.data, dtype=float).reshape(rows.size, cols.size)


class Rig:
    """One dynamics_node process plus the test node's endpoints in the node's namespace."""

    def __init__(self, harness: RosHarness, tmp_path, namespace: str, params: dict):
        self.h = harness
        self.ns = namespace
        self.fqn = f"{namespace}/robot_dynamics"
        params = {"state_timeout": TIMEOUT, "desired_timeout": TIMEOUT, **params}
        params_file = write_params(tmp_path / f"params{namespace.replace('/', '_')}.yaml", params)
        self.proc = NodeProcess("dynamics_node", tmp_path / f"node{namespace.replace('/', '_')}.log",
                                params_file, namespace=namespace)
        topic = lambda name: f"{namespace}/{name}"  # noqa: E731
        self.gravity = harness.collect(JointState, topic("gravity_torques"), OUTPUT_QOS)
        self.bias = harness.collect(JointState, topic("bias_torques"), OUTPUT_QOS)
        self.computed = harness.collect(JointState, topic("computed_torques"), OUTPUT_QOS)
        self.mass = harness.collect(Float64MultiArray, topic("mass_matrix"), OUTPUT_QOS)
        self.command = harness.collect(Float64MultiArray, topic("effort_command"), OUTPUT_QOS)
        self.states = harness.publisher(JointState, topic("joint_states"))
        self.states2 = harness.publisher(JointState, topic("joint_states"))  # a second publisher
        self.accelerations = harness.publisher(Float64MultiArray, topic("desired_accelerations"))
        self.desired = harness.publisher(JointTrajectory, topic("desired_state"))
        self.outputs = [self.gravity, self.bias, self.computed, self.mass, self.command]

    def wait_ready(self):
        self.h.wait_for_subscriber(self.states, START_TIMEOUT)  # (the process starts first: a loaded CI took > 15 s)
        for pub in (self.states2, self.accelerations, self.desired):
            self.h.wait_for_subscriber(pub)
        wait_until(lambda: self.h.node.count_publishers(f"{self.ns}/gravity_torques") > 0, 15.0,
                   "the node's gravity_torques publisher")

    def roundtrip(self, msg: JointState, collector=None, timeout=10.0):
        """Publish ``msg`` (again, until answered) and return the answer stamped like it."""
        collector = collector or self.gravity
        return publish_until(lambda: self.states.publish(msg), collector,
                             lambda m: same_stamp(m.header.stamp, msg.header.stamp), timeout=timeout,
                             what=f"an answer to the joint state stamped {msg.header.stamp.sec}")

    def answered(self, stamp) -> list:
        return [m for c in (self.gravity, self.bias, self.computed) for m in c.find(
            lambda m: same_stamp(m.header.stamp, stamp))]

    def rejected_then_sentinel(self, bad: JointState, good: JointState, diag_text: str, diagnostics):
        """``bad`` is rejected (the diagnostics say ``diag_text``) and nothing is stamped like it."""
        self.diag_after(diagnostics, "inputs", diag_text, publish=lambda: self.states.publish(bad))
        self.roundtrip(good)
        assert self.answered(bad.header.stamp) == [], "an output was computed from a rejected message"

    def diag_after(self, diagnostics, suffix, text, publish=None, timeout=15.0):
        """The first diagnostics from now on whose status ``suffix`` contains ``text``
        (calling ``publish()`` every 0.3 s meanwhile, if given)."""
        since = time.monotonic()
        predicate = lambda m: text in status_text(m, self.fqn, suffix)  # noqa: E731
        what = f"diagnostics {suffix!r} saying {text!r}"
        if publish is None:
            return diagnostics.wait_for(predicate, timeout=timeout, what=what, since=since)
        return publish_until(publish, diagnostics, predicate, timeout=timeout, period=0.3, what=what, since=since)

    def expect(self, publish, collector, stamp, expected, atol=TOL, timeout=10.0):
        """Call ``publish()`` until ``collector`` has an output stamped ``stamp`` equal to
        ``expected``. (Inputs on different topics may arrive in any order, and an input of an
        earlier repetition may still be fresh: waiting for the right value, not the first one,
        keeps the test free of timing luck; a wrong value still fails, by timeout.)"""
        expected = np.asarray(expected, dtype=float)
        match = lambda m: same_stamp(m.header.stamp, stamp)  # noqa: E731
        try:
            return publish_until(publish, collector, lambda m: match(m) and np.allclose(efforts(m), expected, atol=atol),
                                 timeout=timeout)
        except AssertionError:
            got = [efforts(m) for m in collector.find(match)]
            raise AssertionError(f"expected {expected}, got {got}") from None

    def set(self, **values):
        values = {k.replace("payload_", "payload."): v for k, v in values.items()}
        return self.h.set_parameters(self.fqn, values)

    def set_ok(self, **values):
        results = self.set(**values)
        assert all(r.successful for r in results), [r.reason for r in results]


def status_text(array_msg, fqn, suffix) -> str:
    """Message + values of the node's diagnostic status ``suffix`` (model/inputs/outputs)."""
    for status in array_msg.status:
        if status.name == f"{fqn}: {suffix}":
            return status.message + " | " + " | ".join(f"{kv.key}={kv.value}" for kv in status.values)
    return ""


def status_level(array_msg, fqn, suffix):
    for status in array_msg.status:
        if status.name == f"{fqn}: {suffix}":
            return status.level
    return None


@pytest.fixture(scope="module")
def harness():
    h = RosHarness("dynamics_node_tests")
    yield h
    h.close()


@pytest.fixture(scope="module")
def diagnostics(harness):
    return harness.collect(DiagnosticArray, "/diagnostics", OUTPUT_QOS)


# =================================================================================================
# Panda-7 from example-robot-data, description from the node's own parameter
# =================================================================================================
PANDA = [f"panda_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def panda_model():
    return rd.load_urdf(panda7_urdf())


@pytest.fixture(scope="module")
def panda(harness, tmp_path_factory, diagnostics):
    tmp = tmp_path_factory.mktemp("panda")
    rig = Rig(harness, tmp, "/panda", {"robot_description": panda7_urdf()})
    try:
        rig.wait_ready()
        rig.proc.wait_log("loaded robot 'panda' from parameter", timeout=30.0)
        yield rig
    finally:
        code = rig.proc.stop()
        print(rig.proc.log())
    assert code == 0, "the node did not exit cleanly on SIGINT"


def random_state(rng, n, scale=1.0):
    return rng.uniform(-scale, scale, n), rng.uniform(-scale, scale, n)


def test_panda_outputs_match_core_and_pinocchio(panda, panda_model):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(0)
    q, qd = random_state(rng, 7)
    msg = joint_state(PANDA, q, qd)
    g_msg = panda.roundtrip(msg)
    b_msg = panda.bias.wait_for(lambda m: same_stamp(m.header.stamp, msg.header.stamp))
    assert g_msg.name == PANDA and b_msg.name == PANDA
    g, h, M = rd.gravity_torques(panda_model, q), rd.bias_forces(panda_model, q, qd), rd.mass_matrix(panda_model, q)
    np.testing.assert_allclose(efforts(g_msg), g, atol=TOL)
    np.testing.assert_allclose(efforts(b_msg), h, atol=TOL)
    m_msg = panda.mass.wait_for(lambda m: np.allclose(as_matrix(m), M, atol=TOL), what="M(q) on mass_matrix")
    assert [d.size for d in m_msg.layout.dim] == [7, 7]

    # Pinocchio, matched by joint name
    pmodel = pin.buildModelFromXML(panda7_urdf())
    pdata = pmodel.createData()
    names = list(pmodel.names)[1:]
    assert sorted(names) == sorted(PANDA)
    perm = [PANDA.index(n) for n in names]  # pinocchio index -> our index
    pq, pqd = q[perm], qd[perm]
    pin_g = pin.computeGeneralizedGravity(pmodel, pdata, pq)
    pin_M = np.triu(pin.crba(pmodel, pdata, pq))
    pin_M = pin_M + np.triu(pin_M, 1).T
    pin_h = pin.rnea(pmodel, pdata, pq, pqd, np.zeros(7))
    np.testing.assert_allclose(by_name(g_msg, names), pin_g, atol=1e-8)
    np.testing.assert_allclose(by_name(b_msg, names), pin_h, atol=1e-8)
    np.testing.assert_allclose(as_matrix(m_msg)[np.ix_(perm, perm)], pin_M, atol=1e-8)


def test_panda_computed_torque_law(panda, panda_model):
    """tau = M (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + h, against the core and Pinocchio."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(1)
    q, qd = random_state(rng, 7)
    q_d, qd_d = random_state(rng, 7)
    qdd_d = rng.uniform(-2, 2, 7)
    kp = np.array([100.0, 90, 80, 70, 60, 50, 40])
    panda.set_ok(kp=kp.tolist(), kd=15.0, command_source="computed")
    try:
        order = rng.permutation(7)  # desired_state is matched by name: send it scrambled
        point = JointTrajectoryPoint(positions=q_d[order].tolist(), velocities=qd_d[order].tolist(),
                                     accelerations=qdd_d[order].tolist())
        traj = JointTrajectory(joint_names=[PANDA[i] for i in order], points=[point])
        msg = joint_state(PANDA, q, qd)

        def send():
            panda.desired.publish(traj)
            panda.states.publish(msg)

        a = qdd_d + 15.0 * (qd_d - qd) + kp * (q_d - q)
        expected = rd.inverse_dynamics(panda_model, q, qd, a)
        np.testing.assert_allclose(
            expected, rd.mass_matrix(panda_model, q) @ a + rd.bias_forces(panda_model, q, qd), atol=1e-9)
        c_msg = panda.expect(send, panda.computed, msg.header.stamp, expected, atol=1e-8)
        # effort_command is held within the URDF effort limits (computed_torques carries the raw value)
        limit = panda_model.effort_limits
        held = np.clip(expected, -limit, limit)
        assert not np.array_equal(held, expected)
        panda.command.wait_for(lambda m: np.allclose(m.data, held, atol=1e-8), what="effort_command = clipped tau")
        panda.proc.wait_log("effort_command saturated to the URDF effort limits of ['panda_joint2'")

        pmodel = pin.buildModelFromXML(panda7_urdf())
        names = list(pmodel.names)[1:]
        perm = [PANDA.index(n) for n in names]
        pin_tau = pin.rnea(pmodel, pmodel.createData(), q[perm], qd[perm], a[perm])
        np.testing.assert_allclose(by_name(c_msg, names), pin_tau, atol=1e-8)

        # positions only: set-point regulation, qd_d = 0 and qdd_d = 0
        traj_q = JointTrajectory(joint_names=PANDA, points=[JointTrajectoryPoint(positions=q_d.tolist())])
        msg_q = joint_state(PANDA, q, qd)

        def send_q():
            panda.desired.publish(traj_q)
            panda.states.publish(msg_q)

        a_q = -15.0 * qd + kp * (q_d - q)
        panda.expect(send_q, panda.computed, msg_q.header.stamp, rd.inverse_dynamics(panda_model, q, qd, a_q),
                     atol=1e-8)

        # accelerations only: pure feed-forward M qdd_d + h, from desired_accelerations (output order)
        msg2 = joint_state(PANDA, q, qd)

        def send2():
            panda.accelerations.publish(Float64MultiArray(data=qdd_d.tolist()))
            panda.states.publish(msg2)

        panda.expect(send2, panda.computed, msg2.header.stamp, rd.inverse_dynamics(panda_model, q, qd, qdd_d),
                     atol=1e-8)
    finally:
        panda.set_ok(kp=100.0, kd=20.0, command_source="none")


def test_scrambled_names_and_unknown_joints(panda, panda_model):
    rng = np.random.default_rng(2)
    q, qd = random_state(rng, 7)
    order = rng.permutation(7)
    names = [PANDA[i] for i in order] + ["not_a_joint"]
    # an unknown joint is ignored, even with a NaN
    msg = joint_state(names, [*q[order], math.nan], [*qd[order], math.inf])
    out = panda.roundtrip(msg)
    assert out.name == PANDA  # output order = model order
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)
    out = panda.bias.wait_for(lambda m: same_stamp(m.header.stamp, msg.header.stamp))
    np.testing.assert_allclose(efforts(out), rd.bias_forces(panda_model, q, qd), atol=TOL)


def test_partial_messages_from_two_publishers_are_merged(panda, panda_model):
    rng = np.random.default_rng(3)
    q, qd = random_state(rng, 7)
    arm = joint_state(PANDA[:4], q[:4], qd[:4])
    wrist = joint_state(PANDA[4:], q[4:], qd[4:])

    def send():
        panda.states.publish(arm)
        panda.states2.publish(wrist)

    panda.expect(send, panda.bias, wrist.header.stamp, rd.bias_forces(panda_model, q, qd))
    # position-only and velocity-only messages merge too
    pos_only = joint_state(PANDA, q)
    vel_only = joint_state(PANDA, qd=2 * qd)

    def send2():
        panda.states.publish(pos_only)
        panda.states2.publish(vel_only)

    panda.expect(send2, panda.bias, vel_only.header.stamp, rd.bias_forces(panda_model, q, 2 * qd))


def test_payload_changed_at_runtime(panda, panda_model):
    rng = np.random.default_rng(4)
    q, _ = random_state(rng, 7)
    inertia = [0.01, 0.0, 0.0, 0.02, 0.0, 0.015]
    loaded = panda_model.with_payload("panda_hand", 2.5, [0.01, 0.0, 0.08], inertia)
    panda.set_ok(payload_link="panda_hand", payload_mass=2.5, payload_com=[0.01, 0.0, 0.08], payload_inertia=inertia)
    try:
        out = panda.roundtrip(joint_state(PANDA, q, np.zeros(7)))
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(loaded, q), atol=TOL)
        assert not np.allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=1e-3)
        msg = joint_state(PANDA, q, np.zeros(7))
        panda.roundtrip(msg)
        panda.mass.wait_for(lambda m: np.allclose(as_matrix(m), rd.mass_matrix(loaded, q), atol=TOL),
                            what="the mass matrix with the payload")
        # gravity (the mounting) changes at runtime too
        panda.set_ok(gravity=[0.0, 9.81, 0.0])
        out = panda.roundtrip(joint_state(PANDA, q, np.zeros(7)))
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(loaded.with_gravity([0, 9.81, 0]), q), atol=TOL)
    finally:
        panda.set_ok(payload_link="", payload_mass=0.0, gravity=[0.0, 0.0, -9.81])
    out = panda.roundtrip(joint_state(PANDA, q, np.zeros(7)))
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)


def test_robot_description_parameter_reloads_at_runtime(panda, panda_model):
    """Setting the node's own robot_description parameter replaces the model (source 1)."""
    rng = np.random.default_rng(12)
    q, _ = random_state(rng, 7)
    xml = panda7_urdf()
    link7 = xml.index('<link name="panda_link7">')
    start = xml.index('<mass value="', link7) + len('<mass value="')
    end = xml.index('"', start)
    heavier_xml = xml[:start] + str(float(xml[start:end]) + 2.0) + xml[end:]
    heavier = rd.load_urdf(heavier_xml)
    try:
        panda.set_ok(robot_description=heavier_xml)
        expected = rd.gravity_torques(heavier, q)
        assert not np.allclose(expected, rd.gravity_torques(panda_model, q), atol=1e-3)
        publish_until(lambda: panda.states.publish(joint_state(PANDA, q, np.zeros(7))), panda.gravity,
                      lambda m: np.allclose(efforts(m), expected, atol=TOL), what="gravity of the new description")
    finally:
        panda.set_ok(robot_description=xml)
    expected = rd.gravity_torques(panda_model, q)
    publish_until(lambda: panda.states.publish(joint_state(PANDA, q, np.zeros(7))), panda.gravity,
                  lambda m: np.allclose(efforts(m), expected, atol=TOL), what="gravity of the original description")


def test_bad_parameter_values_are_rejected_with_a_reason(panda):
    cases = {
        "kp": ([1.0, 2.0, 3.0], "kp has 3 values"),
        "kd": ([-1.0], "non-negative"),
        "command_source": ("torque", "command_source must be one of"),
        "payload.link": ("no_such_link", "not a link"),
        "gravity": ([0.0, math.nan, -9.81], "finite"),
        "payload.inertia": ([-1.0, 0.0, 0.0, 1.0, 0.0, 1.0], "positive semi-definite"),
        "payload.mass": (-1.0, ""),  # outside the descriptor's range: rclpy's own reason
        "joints": (["panda_joint1", "panda_joint1"], "duplicate"),
        "state_timeout": (0.0, ""),
    }
    before = panda.h.get_parameters(panda.fqn, list(cases))
    for name, (value, reason) in cases.items():
        (result,) = panda.h.set_parameters(panda.fqn, {name: value})
        assert not result.successful, name
        assert result.reason and reason in result.reason, (name, result.reason)
    after = panda.h.get_parameters(panda.fqn, list(cases))
    assert before == after
    (result,) = panda.h.set_parameters(panda.fqn, {"joints": ["panda_joint1", "finger"]})
    assert not result.successful and "finger" in result.reason


def test_wrongly_typed_parameters_are_rejected_and_the_node_stays_up(panda, panda_model):
    """joints, kp and kd accept several ROS types; any other type is refused with a reason (it used
    to raise inside the parameter callback and kill the node)."""
    cases = [
        ("joints", 5), ("joints", "panda_joint1"), ("joints", [1, 2]),
        ("kp", [True, False]), ("kp", "100"), ("kd", ["20.0"]),
    ]
    before = panda.h.get_parameters(panda.fqn, ["joints", "kp", "kd"])
    for name, value in cases:
        (result,) = panda.h.set_parameters(panda.fqn, {name: value})
        assert not result.successful, (name, value)
        assert "must be a list of" in result.reason, (name, value, result.reason)
    assert panda.proc.running(), "the node died"
    assert panda.h.get_parameters(panda.fqn, ["joints", "kp", "kd"]) == before
    q, qd = random_state(np.random.default_rng(15), 7)
    out = panda.roundtrip(joint_state(PANDA, q, qd))
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)


def test_publish_flags_switch_mass_matrix_and_bias_torques_off(panda, panda_model):
    rng = np.random.default_rng(16)
    panda.set_ok(publish_mass_matrix=False, publish_bias_torques=False)
    try:
        panda.roundtrip(good_state(rng))  # (anything published before the change is in by now)
        n_mass = len(panda.mass.messages)
        q, qd = random_state(rng, 7)
        msg = joint_state(PANDA, q, qd)
        out = panda.roundtrip(msg)
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)
        panda.roundtrip(good_state(rng))  # (sentinel)
        assert panda.bias.find(lambda m: same_stamp(m.header.stamp, msg.header.stamp)) == []
        assert len(panda.mass.messages) == n_mass
    finally:
        panda.set_ok(publish_mass_matrix=True, publish_bias_torques=True)
    msg = good_state(rng)
    panda.roundtrip(msg, panda.bias)


def test_parameter_description_takes_precedence_over_the_topic(panda, panda_model):
    """Source 1 (own parameter) beats source 2 (topic); emptying the parameter falls back to the topic."""
    rng = np.random.default_rng(17)
    q, _ = random_state(rng, 7)
    xml = panda7_urdf()
    link7 = xml.index('<link name="panda_link7">')
    start = xml.index('<mass value="', link7) + len('<mass value="')
    end = xml.index('"', start)
    heavier_xml = xml[:start] + str(float(xml[start:end]) + 3.0) + xml[end:]
    heavier = rd.load_urdf(heavier_xml)
    expected_heavier = rd.gravity_torques(heavier, q)
    assert not np.allclose(expected_heavier, rd.gravity_torques(panda_model, q), atol=1e-3)
    topic = panda.h.publisher(String, f"{panda.ns}/robot_description", LATCHED)
    try:
        topic.publish(String(data=heavier_xml))
        panda.h.wait_for_subscriber(topic)
        time.sleep(STALE)  # the latched message has long arrived (waiting longer can only hide a bug)
        out = panda.roundtrip(joint_state(PANDA, q, np.zeros(7)))
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)
        panda.set_ok(robot_description="")
        panda.proc.wait_log("loaded robot 'panda' from topic")
        publish_until(lambda: panda.states.publish(joint_state(PANDA, q, np.zeros(7))), panda.gravity,
                      lambda m: np.allclose(efforts(m), expected_heavier, atol=TOL),
                      what="gravity of the topic's model")
    finally:
        panda.set_ok(robot_description=xml)
        panda.h.node.destroy_publisher(topic)
    publish_until(lambda: panda.states.publish(joint_state(PANDA, q, np.zeros(7))), panda.gravity,
                  lambda m: np.allclose(efforts(m), rd.gravity_torques(panda_model, q), atol=TOL),
                  what="gravity of the parameter's model again")


def test_output_order_and_effort_command_gravity(panda, panda_model):
    rng = np.random.default_rng(5)
    q, qd = random_state(rng, 7)
    order = PANDA[::-1]
    # a desired input given for one output order is dropped when the order changes
    panda.set_ok(desired_timeout=60.0)
    try:
        first = joint_state(PANDA, q, qd)

        def send_first():
            panda.accelerations.publish(Float64MultiArray(data=[0.5] * 7))
            panda.states.publish(first)

        publish_until(send_first, panda.computed, lambda m: same_stamp(m.header.stamp, first.header.stamp))
        panda.set_ok(joints=order, command_source="gravity")
        after = joint_state(PANDA, q, qd)
        panda.roundtrip(after)
        panda.roundtrip(joint_state(PANDA, q, qd), panda.bias)  # (sentinel)
        assert panda.computed.find(lambda m: same_stamp(m.header.stamp, after.header.stamp)) == []
    finally:
        panda.set_ok(desired_timeout=TIMEOUT)
    try:
        out = panda.roundtrip(joint_state(PANDA, q, qd))
        assert out.name == order
        g = rd.gravity_torques(panda_model, q)
        np.testing.assert_allclose(efforts(out), g[::-1], atol=TOL)
        panda.command.wait_for(lambda m: np.allclose(m.data, g[::-1], atol=TOL), what="effort_command = g")
        M = rd.mass_matrix(panda_model, q)
        panda.mass.wait_for(lambda m: np.allclose(as_matrix(m), M[::-1, ::-1], atol=TOL), what="M in output order")
        # desired_accelerations are in the output order
        qdd = rng.uniform(-1, 1, 7)
        msg = joint_state(PANDA, q, qd)

        def send():
            panda.accelerations.publish(Float64MultiArray(data=qdd[::-1].tolist()))
            panda.states.publish(msg)

        panda.expect(send, panda.computed, msg.header.stamp, rd.inverse_dynamics(panda_model, q, qd, qdd)[::-1],
                     atol=1e-8)
    finally:
        panda.set_ok(joints=[], command_source="none")


# --- safety ----------------------------------------------------------------------------------------
def good_state(rng):
    q, qd = random_state(rng, 7)
    return joint_state(PANDA, q, qd)


def test_non_finite_inputs_are_rejected(panda, diagnostics):
    rng = np.random.default_rng(6)
    q, qd = random_state(rng, 7)
    q[2] = math.nan
    panda.rejected_then_sentinel(joint_state(PANDA, q, qd), good_state(rng),
                                 "non-finite position of ['panda_joint3']", diagnostics)
    q, qd = random_state(rng, 7)
    qd[5] = -math.inf
    panda.rejected_then_sentinel(joint_state(PANDA, q, qd), good_state(rng),
                                 "non-finite velocity of ['panda_joint6']", diagnostics)


def test_wrong_length_and_duplicate_names_are_rejected(panda, diagnostics):
    rng = np.random.default_rng(7)
    q, qd = random_state(rng, 7)
    bad = joint_state(PANDA, q[:6], qd)
    panda.rejected_then_sentinel(bad, good_state(rng), "7 names but 6 positions", diagnostics)
    bad = joint_state(PANDA, q, qd)
    bad.effort = [0.0] * 3  # unused by the node, but the message is malformed
    panda.rejected_then_sentinel(bad, good_state(rng), "7 velocities and 3 efforts", diagnostics)
    names = PANDA[:6] + ["panda_joint2"]
    panda.rejected_then_sentinel(joint_state(names, q, qd), good_state(rng),
                                 "duplicate joint names ['panda_joint2']", diagnostics)


def test_missing_joint_beyond_state_timeout(panda, panda_model, diagnostics):
    rng = np.random.default_rng(8)
    panda.roundtrip(good_state(rng))
    time.sleep(STALE)  # every joint is now older than state_timeout
    q, qd = random_state(rng, 7)
    partial = joint_state(PANDA[:6], q[:6], qd[:6])  # panda_joint7 missing
    # the diagnostics name the joint (and only it: the others are refreshed by the partial messages)
    arr = panda.diag_after(diagnostics, "inputs", "older than state_timeout",
                           publish=lambda: panda.states.publish(partial))
    text = status_text(arr, panda.fqn, "inputs")
    assert "panda_joint7 (" in text and "panda_joint6 (" not in text, text
    assert status_level(arr, panda.fqn, "inputs") == DiagnosticStatus.ERROR
    panda.roundtrip(joint_state(PANDA, q, qd))  # sentinel
    assert panda.answered(partial.header.stamp) == []
    # while the state is fresh, a partial message completes it (fresh for 30 s: however long a loaded machine
    # takes between the sentinel and it)
    panda.set_ok(state_timeout=30.0)
    try:
        out = panda.roundtrip(joint_state(PANDA[6:], [0.3], [0.0]))
    finally:
        panda.set_ok(state_timeout=TIMEOUT)
    q2 = q.copy()
    q2[6] = 0.3
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q2), atol=TOL)


def test_missing_velocity_blocks_bias_and_computed_torques_but_not_gravity(panda, panda_model, diagnostics):
    rng = np.random.default_rng(14)
    panda.set_ok(desired_timeout=60.0)
    try:
        q, qd = random_state(rng, 7)
        msg = joint_state(PANDA, q, qd)

        def send():
            panda.accelerations.publish(Float64MultiArray(data=[0.2] * 7))
            panda.states.publish(msg)

        publish_until(send, panda.computed, lambda m: same_stamp(m.header.stamp, msg.header.stamp))
        time.sleep(STALE)  # velocities (and positions) now stale; the desired input is still fresh
        positions_only = joint_state(PANDA, q)
        out = panda.roundtrip(positions_only)  # gravity needs no velocity
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(panda_model, q), atol=TOL)
        panda.diag_after(diagnostics, "inputs", "velocity older than state_timeout",
                         publish=lambda: panda.states.publish(positions_only))
        panda.roundtrip(joint_state(PANDA, q, qd), panda.computed)  # (sentinel)
        for collector in (panda.bias, panda.computed):
            assert collector.find(lambda m: same_stamp(m.header.stamp, positions_only.header.stamp)) == []
    finally:
        panda.set_ok(desired_timeout=TIMEOUT)


def test_stale_or_bad_desired_input_gives_no_computed_torques(panda, diagnostics):
    rng = np.random.default_rng(9)
    panda.set_ok(command_source="computed")
    try:
        msg = good_state(rng)

        def send():
            panda.accelerations.publish(Float64MultiArray(data=[0.1] * 7))
            panda.states.publish(msg)

        publish_until(send, panda.computed, lambda m: same_stamp(m.header.stamp, msg.header.stamp))
        time.sleep(STALE)  # the desired input is now stale
        stale = good_state(rng)
        panda.roundtrip(stale)  # gravity is still published ...
        panda.roundtrip(good_state(rng), panda.bias)  # (sentinel)
        # ... but no computed torques
        assert panda.computed.find(lambda m: same_stamp(m.header.stamp, stale.header.stamp)) == []
        panda.diag_after(diagnostics, "inputs", "stale", publish=lambda: panda.states.publish(good_state(rng)))

        # malformed desired inputs are rejected, not used
        for bad, text in [
            (Float64MultiArray(data=[0.1] * 6), "6 values, expected 7"),
            (Float64MultiArray(data=[0.1] * 6 + [math.nan]), "non-finite acceleration of ['panda_joint7']"),
        ]:
            probe = good_state(rng)

            def send_bad(bad=bad, probe=probe):
                panda.accelerations.publish(bad)
                panda.states.publish(probe)

            panda.diag_after(diagnostics, "inputs", text, publish=send_bad)
            panda.roundtrip(good_state(rng), panda.bias)  # (sentinel)
            assert panda.computed.find(lambda m: same_stamp(m.header.stamp, probe.header.stamp)) == []
        point = JointTrajectoryPoint(positions=[0.0] * 7)
        for traj, text in [
            (JointTrajectory(joint_names=PANDA[:6], points=[JointTrajectoryPoint(positions=[0.0] * 6)]),
             "joints ['panda_joint7'] missing"),
            (JointTrajectory(joint_names=PANDA, points=[point, point]), "2 points, expected exactly one"),
            (JointTrajectory(joint_names=PANDA + ["panda_joint3"], points=[JointTrajectoryPoint(positions=[0.0] * 8)]),
             "duplicate joint names ['panda_joint3']"),
            (JointTrajectory(joint_names=PANDA, points=[JointTrajectoryPoint(positions=[0.0] * 6 + [math.inf])]),
             "non-finite positions of ['panda_joint7']"),
            (JointTrajectory(joint_names=PANDA, points=[JointTrajectoryPoint(velocities=[0.0] * 3)]),
             "3 velocities for 7 joint names"),
        ]:
            probe = good_state(rng)

            def send_bad(traj=traj, probe=probe):
                panda.desired.publish(traj)
                panda.states.publish(probe)

            panda.diag_after(diagnostics, "inputs", text, publish=send_bad)
            panda.roundtrip(good_state(rng), panda.bias)  # (sentinel)
            assert panda.computed.find(lambda m: same_stamp(m.header.stamp, probe.header.stamp)) == []
    finally:
        panda.set_ok(command_source="none")


def test_diagnostics_report_model_rates_and_compute_time(panda, diagnostics):
    rng = np.random.default_rng(10)
    arr = panda.diag_after(diagnostics, "outputs", "compute time max (us)=",
                           publish=lambda: panda.states.publish(good_state(rng)))
    assert "compute time max (us)=-" not in status_text(arr, panda.fqn, "outputs")
    arr = diagnostics.wait_for(lambda m: status_text(m, panda.fqn, "model") != "")
    assert "robot=panda" in status_text(arr, panda.fqn, "model")
    assert status_level(arr, panda.fqn, "model") == DiagnosticStatus.OK


def test_nothing_non_finite_was_published(panda):
    """Over everything this module's Panda node published (with pytest-xdist: on this worker)."""
    panda.roundtrip(good_state(np.random.default_rng(13)))
    for collector in panda.outputs:
        for m in collector.find(lambda m: True):
            values = m.effort if isinstance(m, JointState) else m.data
            assert np.isfinite(np.asarray(values, dtype=float)).all()


# =================================================================================================
# Two-link arm, description from the latched robot_description topic: hot reload, bad URDFs
# =================================================================================================
def two_link(mass_fore=1.0, elbow="elbow"):
    """Lynch & Park's 2R arm with joint friction, a continuous shoulder, a forearm of ``mass_fore`` kg,
    the elbow renamed."""
    head, tail = rd.examples.TWO_LINK_URDF.rsplit('<mass value="1"/>', 1)  # the last one is the forearm's
    xml = head + f'<mass value="{mass_fore}"/>' + tail
    limit = '<limit lower="-3.14" upper="3.14" effort="100" velocity="5"/>'
    assert xml.count(limit) == 2
    xml = xml.replace(limit, limit + '<dynamics damping="0.5" friction="0.2"/>')
    xml = xml.replace('<joint name="shoulder" type="revolute">', '<joint name="shoulder" type="continuous">')
    return xml.replace('joint name="elbow"', f'joint name="{elbow}"')


@pytest.fixture(scope="module")
def two_link_rig(harness, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("topic")
    description = harness.publisher(String, "/arm/robot_description", LATCHED)
    description.publish(String(data=two_link()))
    rig = Rig(harness, tmp, "/arm", {"compensate_friction": True, "friction_velocity": 0.05})
    rig.description = description
    try:
        rig.wait_ready()
        rig.proc.wait_log("loaded robot 'two_link' from topic", timeout=30.0)
        yield rig
    finally:
        code = rig.proc.stop()
        print(rig.proc.log())
    assert code == 0


def test_topic_source_hot_reload_and_bad_descriptions(two_link_rig, diagnostics):
    rig = two_link_rig
    names = ["shoulder", "elbow"]
    model = rd.load_urdf(two_link())
    np.testing.assert_allclose(model.damping, [0.5, 0.5])
    q, qd = np.array([0.4, -0.7]), np.array([0.3, -1.2])
    out = rig.roundtrip(joint_state(names, q, qd))
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(model, q), atol=TOL)

    # compensate_friction: viscous + smoothed Coulomb on top of M qdd_d + h
    rig.set_ok(command_source="computed")
    msg = joint_state(names, q, qd)
    qdd_d = np.array([0.5, -0.25])

    def send():
        rig.accelerations.publish(Float64MultiArray(data=qdd_d.tolist()))
        rig.states.publish(msg)

    friction = 0.5 * qd + 0.2 * np.tanh(qd / 0.05)
    tau = rd.inverse_dynamics(model, q, qd, qdd_d) + friction
    rig.expect(send, rig.computed, msg.header.stamp, tau)
    rig.command.wait_for(lambda m: np.allclose(m.data, tau, atol=TOL), what="effort_command = computed")
    rig.set_ok(command_source="none")

    # the position error of a continuous joint is wrapped to [-pi, pi): 2 pi - 0.1 ahead is 0.1 behind
    assert model.joint_types == ("continuous", "revolute")
    q_d = np.array([q[0] + 2 * np.pi - 0.1, q[1] + 0.2])
    traj = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(positions=q_d.tolist())])
    msg = joint_state(names, q, qd)

    def send_traj():
        rig.desired.publish(traj)
        rig.states.publish(msg)

    a = 100.0 * np.array([-0.1, 0.2]) - 20.0 * qd  # default kp = 100, kd = 20; qd_d = 0
    rig.expect(send_traj, rig.computed, msg.header.stamp, rd.inverse_dynamics(model, q, qd, a) + friction)

    # hot reload: a heavier forearm on the topic replaces the model
    heavier = rd.load_urdf(two_link(mass_fore=3.0))
    rig.description.publish(String(data=two_link(mass_fore=3.0)))
    expected = rd.gravity_torques(heavier, q)
    assert not np.allclose(expected, rd.gravity_torques(model, q))
    publish_until(lambda: rig.states.publish(joint_state(names, q, qd)), rig.gravity,
                  lambda m: np.allclose(efforts(m), expected, atol=TOL), what="gravity of the reloaded model")

    # a description that fails to load keeps the previous model
    rig.description.publish(String(data='<robot name="broken"><link name="a"/><joint name="j" type="revolute">'))
    arr = rig.diag_after(diagnostics, "model", "failed to load")
    assert "keeping the previous model 'two_link'" in status_text(arr, rig.fqn, "model")
    assert status_level(arr, rig.fqn, "model") == DiagnosticStatus.WARN
    out = rig.roundtrip(joint_state(names, q, qd))
    np.testing.assert_allclose(efforts(out), expected, atol=TOL)

    # a description with other joints: accepted (output order = model order), but nothing is
    # published until every new joint has a fresh state; the diagnostics name the missing joint
    rig.description.publish(String(data=two_link(mass_fore=3.0, elbow="elbow2")))
    rig.proc.wait_log("changes the joints (removed ['elbow'], added ['elbow2']")
    old = joint_state(names, q, qd)
    rig.rejected_then_sentinel(old, joint_state(["shoulder", "elbow2"], q, qd), "never received for ['elbow2']",
                               diagnostics)
    out = rig.roundtrip(joint_state(["shoulder", "elbow2"], q, qd))
    assert out.name == ["shoulder", "elbow2"]
    np.testing.assert_allclose(efforts(out), expected, atol=TOL)

    # with an explicit output order, a description lacking one of those joints is refused
    rig.set_ok(joints=["elbow2", "shoulder"])
    rig.description.publish(String(data=two_link(mass_fore=1.0, elbow="elbow")))
    arr = rig.diag_after(diagnostics, "model", "does not fit the parameters")
    assert "['elbow2']" in status_text(arr, rig.fqn, "model")
    out = rig.roundtrip(joint_state(["shoulder", "elbow2"], q, qd))
    assert out.name == ["elbow2", "shoulder"]
    np.testing.assert_allclose(efforts(out), expected[::-1], atol=TOL)

    # ... until the parameters fit it: then that (newest) description is loaded
    rig.set_ok(joints=["elbow", "shoulder"])
    rig.proc.wait_log("added ['elbow']")
    out = rig.roundtrip(joint_state(names, q, qd))
    assert out.name == ["elbow", "shoulder"]
    np.testing.assert_allclose(efforts(out), rd.gravity_torques(model, q)[::-1], atol=TOL)


# =================================================================================================
# Full Panda (mimic finger), description from robot_state_publisher's parameter
# =================================================================================================
@pytest.fixture(scope="module")
def remote_rig(harness, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remote")
    rig = Rig(harness, tmp, "/remote", {})
    try:
        rig.wait_ready()
        yield rig
    finally:
        rig.proc.stop()
        print(rig.proc.log())


def test_node_source_waits_then_fetches(remote_rig, diagnostics):
    rig = remote_rig
    xml = example_robot_path("panda").read_text()
    model = rd.load_urdf(xml)
    assert "panda_finger_joint2" in model.mimic_joints
    names = list(model.joint_names)  # 7 arm joints + panda_finger_joint1
    rng = np.random.default_rng(11)
    q, qd = random_state(rng, len(names), 0.02)
    msg = joint_state(names, q, qd)

    # no model yet: joint states arrive, nothing is published, and the node says what it waits for
    since = time.monotonic()
    arr = publish_until(lambda: rig.states.publish(msg), diagnostics,
                        lambda m: "joint_states rate (Hz)=" in status_text(m, rig.fqn, "inputs")
                        and "joint_states rate (Hz)=0.0" not in status_text(m, rig.fqn, "inputs"),
                        timeout=15.0, period=0.2, what="diagnostics counting joint states", since=since)
    assert "waiting for robot_description" in status_text(arr, rig.fqn, "model")
    assert "/remote/robot_state_publisher" in status_text(arr, rig.fqn, "model")
    assert "do not match" not in status_text(arr, rig.fqn, "model")
    rig.proc.wait_log("waiting for robot_description")

    # a description published volatile (a common slip) never reaches the latched subscription: named
    volatile = rig.h.publisher(String, "/remote/robot_description", 10)
    text = status_text(rig.diag_after(diagnostics, "model", "do not match"), rig.fqn, "model")
    assert f"publishers: 1, of which ['{rig.h.node.get_fully_qualified_name()}'] do not match" in text, text
    rig.h.node.destroy_publisher(volatile)
    assert rig.gravity.messages == [] and rig.mass.messages == []

    # a robot_state_publisher that takes the request but never answers (it hangs, then goes away):
    # the node asks again instead of waiting for that answer forever
    mute_context = Context()
    rclpy.init(context=mute_context)
    try:
        mute = rclpy.create_node("robot_state_publisher", namespace="/remote", context=mute_context,
                                 parameter_overrides=[Parameter("robot_description", value=xml)])
        mute.declare_parameter("robot_description", "")
        try:  # (never spun)
            rig.diag_after(diagnostics, "model", "no answer from /remote/robot_state_publisher/get_parameters",
                           timeout=20.0)
        finally:
            mute.destroy_node()
    finally:
        mute_context.try_shutdown()
    assert rig.gravity.messages == []

    rsp = rig.h.add_node("robot_state_publisher", namespace="/remote",
                         parameter_overrides=[Parameter("robot_description", value=xml)])
    rsp.declare_parameter("robot_description", "")
    try:
        rig.proc.wait_log("loaded robot 'panda' from node robot_state_publisher", timeout=30.0)
        out = rig.roundtrip(msg)
        assert out.name == names
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(model, q), atol=TOL)

        # mimic joints are checked against their master, and otherwise ignored
        with_mimic = joint_state(names + ["panda_finger_joint2"], [*q, q[-1] + 0.01], [*qd, 0.0])
        rig.diag_after(diagnostics, "inputs", "panda_finger_joint2", publish=lambda: rig.states.publish(with_mimic))
        out = rig.roundtrip(with_mimic)
        np.testing.assert_allclose(efforts(out), rd.gravity_torques(model, q), atol=TOL)
    finally:
        rig.h.remove_node(rsp)


def test_sigterm_exits_cleanly(remote_rig):
    remote_rig.proc.process.terminate()
    assert remote_rig.proc.process.wait(15.0) == 0


@pytest.mark.parametrize("params, text", [
    ({"command_source": "torque"}, "command_source must be one of"),
    ({"payload.mass": 2}, "'payload.mass' to '2' of type 'INTEGER', expecting type 'DOUBLE'"),  # rclpy's check
    ({"robot_description": 5}, "'robot_description' to '5' of type 'INTEGER', expecting type 'STRING'"),
])
def test_invalid_parameter_file_is_refused(tmp_path, params, text):
    params_file = write_params(tmp_path / "bad.yaml", params)
    proc = NodeProcess("dynamics_node", tmp_path / "bad.log", params_file, namespace="/bad")
    try:
        code = proc.process.wait(30.0)
    finally:
        proc.stop()
    assert code == 2, proc.log()
    assert text in proc.log() and "Traceback" not in proc.log(), proc.log()
