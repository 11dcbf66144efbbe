"""Plausible outputs and parameters of the nodes under rclpy (issue 23 items 3 and 4), the nodes
in this process on the test harness's executor (no process start-up, no discovery wait):

- dynamics_node: an absurd desired acceleration gives no computed torques (they reached 7.5e304),
  the reason in /diagnostics; absurd parameters refused with the reason; lock_torque_parameters
  refuses every torque-shaping change (and a new robot_description) and, off, accepts them;
- simulator_node: the elastic arm of docs/motors.md with on_command_timeout brake, never commanded,
  stays where it started (it went non-finite at 0.42 s); a state that went absurd before going
  non-finite is not published (it used to be, as the "last finite state"); absurd parameters
  refused with the reason.
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.nodes.dynamics.node import DynamicsNode  # noqa: E402
from robot_dynamics.nodes.simulator.node import SimulatorNode  # noqa: E402
from robot_dynamics.nodes.common.safety import Plausibility  # noqa: E402
from robot_dynamics.description.robots import urdf_file  # noqa: E402

from ros_helpers import RosHarness, publish_until, wait_until  # noqa: E402

NAMESPACES = itertools.count()
QOS = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
ARM7 = urdf_file("arm7_gripper").read_text()
PLANAR = urdf_file("planar_2r").read_text()


@pytest.fixture(scope="module")
def harness():
    h = RosHarness("plausible_probe")
    yield h
    h.close()


class InProcess:
    """A node of ``node_class`` in ``namespace``, in the harness's context, spun by its own executor
    in a thread (stopped before the node is destroyed: no callback of a destroyed node ever runs)."""

    def __init__(self, harness, node_class, namespace, params):
        self.h = harness
        self.node = node_class(namespace=namespace, context=harness.context,
                               parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.executor = SingleThreadedExecutor(context=harness.context)
        self.executor.add_node(self.node)
        self.running = True
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()
        self.ns = namespace
        wait_until(lambda: self.node._plan is not None, 30.0, f"{node_class.__name__}'s robot model")

    def topic(self, name):
        return f"{self.ns}/{name}"

    def set(self, **values):
        """``SetParametersResult`` per value, each set on its own as the parameter service does."""
        return [self.node.set_parameters_atomically([Parameter(k.replace("payload_", "payload."), value=v)])
                for k, v in values.items()]

    def _spin(self):
        while self.running and self.h.context.ok():
            self.executor.spin_once(timeout_sec=0.02)

    def close(self):
        self.running = False
        self.thread.join(10.0)
        self.executor.remove_node(self.node)
        self.node.destroy_node()


def status_of(array, suffix):
    return next((s for s in array.status if s.name.endswith(f": {suffix}")), None)


# --- dynamics_node ---------------------------------------------------------------------------------
@pytest.fixture
def dynamics(harness, request):
    params = {"robot_description": ARM7, "state_timeout": 0.5, "desired_timeout": 0.5,
              "command_source": "computed", **getattr(request, "param", {})}
    node = InProcess(harness, DynamicsNode, f"/plausible_{next(NAMESPACES)}", params)
    yield node
    node.close()


def test_absurd_desired_accelerations_give_no_computed_torques(harness, dynamics):
    model = rd.load_urdf(ARM7)
    computed = harness.collect(JointState, dynamics.topic("computed_torques"), QOS)
    command = harness.collect(Float64MultiArray, dynamics.topic("effort_command"), QOS)
    gravity = harness.collect(JointState, dynamics.topic("gravity_torques"), QOS)
    diagnostics = harness.collect(DiagnosticArray, "/diagnostics", QOS)
    states = harness.publisher(JointState, dynamics.topic("joint_states"))
    accelerations = harness.publisher(Float64MultiArray, dynamics.topic("desired_accelerations"))
    q = np.clip(np.full(model.nv, 0.2), model.position_limits[:, 0], model.position_limits[:, 1])
    state = JointState(name=list(model.joint_names), position=q.tolist(), velocity=[0.0] * model.nv)

    def publish(qdd):
        accelerations.publish(Float64MultiArray(data=[qdd] * model.nv))
        states.publish(state)

    publish_until(lambda: publish(1.0), computed, lambda m: True, what="computed torques of a sane input")
    since = time.monotonic()
    array = publish_until(lambda: publish(1e12), diagnostics,
                          lambda m: m.status and "not plausible" in status_of(m, "outputs").message
                          and status_of(m, "outputs").name.startswith(dynamics.node.get_fully_qualified_name()),
                          what="the outputs status saying why", since=since, timeout=15.0)
    text = status_of(array, "outputs").message
    assert "not publishing computed_torques: not plausible: torques above 1000 times" in text
    late = time.monotonic()
    publish_until(lambda: publish(1e12), gravity, lambda m: True, since=late, what="gravity torques meanwhile")
    held = publish_until(lambda: publish(1e12), command, lambda m: True, since=late, what="effort_command meanwhile")
    np.testing.assert_allclose(held.data, rd.gravity_torques(model, q), atol=1e-9)  # the gravity hold
    assert "effort_command holds gravity" in text
    for m in computed.messages:
        assert np.abs(m.effort).max() < 1e7, m.effort  # (1e12 x the mass matrix was published before)
    for m in command.messages:
        assert np.abs(m.data).max() <= 87.0


def test_absurd_dynamics_parameters_are_refused_with_the_reason(dynamics):
    tcp = "arm7_tcp"
    cases = {
        "gravity": ([0.0, 0.0, 1e300], "more than 10 g"),
        "kp": (1e300, "kp and kd too large"),
        "armature": ([1e300] * 8, "mass matrix entry (arm7_joint1, arm7_joint1) = 1e+300"),
    }
    for name, (value, reason) in cases.items():
        (result,) = dynamics.set(**{name: value})
        assert not result.successful and reason in result.reason, (name, result.reason)
    (link, mass, com) = dynamics.set(payload_link=tcp, payload_mass=1e4, payload_com=[1e150, 0.0, 0.0])
    assert link.successful and not mass.successful and "more than 10 times the robot's mass" in mass.reason
    assert not com.successful and "beyond the robot's reach" in com.reason
    assert all(r.successful for r in dynamics.set(payload_mass=2.0, payload_com=[0.0, 0.0, 0.1], kp=400.0))


TORQUE_SHAPING = {"gravity": [0.0, 0.0, -9.80665], "kp": 50.0, "kd": 10.0, "payload_link": "arm7_tcp",
                  "payload_mass": 1.0, "command_source": "gravity", "compensate_friction": True,
                  "friction_velocity": 0.02, "armature": [0.1] * 8, "joints": [], "max_position_error": 0.5,
                  "state_timeout": 0.2, "robot_description": ARM7}


@pytest.mark.parametrize("dynamics", [{"lock_torque_parameters": True}], indirect=True)
def test_lock_torque_parameters_refuses_every_torque_shaping_change(dynamics):
    for name, value in TORQUE_SHAPING.items():
        (result,) = dynamics.set(**{name: value})
        assert not result.successful, name
        assert result.reason == (f"{name.replace('payload_', 'payload.')} is read-only: lock_torque_parameters is "
                                 "true (the parameters that shape the torques are fixed at start)"), result.reason
    assert all(r.successful for r in dynamics.set(publish_mass_matrix=False, publish_bias_torques=False))
    (result,) = dynamics.set(lock_torque_parameters=False)
    assert not result.successful  # the lock itself is set at start only
    assert dynamics.node.get_parameter("kp").value == 100
    # a new description (from the topic) is ignored: the model loaded first stays
    base = dynamics.node._base
    dynamics.node._on_urdf(ARM7.replace('name="arm7_gripper"', 'name="other"', 1), "topic /robot_description")
    assert dynamics.node._base is base


def test_without_the_lock_the_same_changes_are_accepted(dynamics):
    assert dynamics.node.get_parameter("lock_torque_parameters").value is False
    for name, value in TORQUE_SHAPING.items():
        (result,) = dynamics.set(**{name: value})
        assert result.successful, (name, result.reason)


# --- simulator_node --------------------------------------------------------------------------------
def simulator(harness, namespace, **params):
    return InProcess(harness, SimulatorNode, namespace, {"real_time_factor": 0.0, "publish_clock": True,
                                                         "publish_rate": 100.0, **params})


def test_a_never_commanded_elastic_arm_with_brake_stays_where_it_started(harness):
    """docs/motors.md's elastic planar 2R, on_command_timeout brake, no command ever: 3 s simulated,
    every published state within twice the springs' static sag (K^-1 g(q0), 0.022 rad) of the start."""
    q0 = [0.3, -0.2]
    sim = simulator(harness, "/elastic_brake", robot_description=PLANAR, motor_joint_names=["theta1", "theta2"],
                    armature=[0.5, 0.5], joint_stiffness=[1500.0, 1500.0], on_command_timeout="brake",
                    initial_positions=q0)
    try:
        states = harness.collect(JointState, sim.topic("joint_states"), QOS)
        states.wait_for(lambda m: m.header.stamp.sec >= 3, timeout=60.0, what="3 s of simulated joint_states")
        assert not sim.node._failure
        positions = np.array([m.position[:2] for m in states.messages])
        assert len(positions) > 20  # (as fast as possible: the publisher's history drops some)
        # the springs take the weight at once: at most twice their static deflection K^-1 g(q0) on the way
        sag = np.abs(rd.gravity_torques(rd.load_urdf(PLANAR), np.array(q0)) / 1500.0).max()
        assert np.abs(positions - q0).max() < 2 * sag
        settled = [m.velocity[:2] for m in states.messages if m.header.stamp.sec >= 2]
        assert settled and np.abs(settled).max() < 0.05
    finally:
        sim.close()


def test_an_absurd_last_finite_state_is_not_published(harness):
    """A wrench of 1e6 N: the state is absurd (finite) after one step, its mass matrix singular a few steps later.
    Nothing absurd is published, the "last finite state" neither; the status says why."""
    model = rd.load_urdf(ARM7)
    sim = simulator(harness, "/absurd", robot_description=ARM7, gravity=[0.0, 0.0, 0.0])
    try:
        states = harness.collect(JointState, sim.topic("joint_states"), QOS)
        diagnostics = harness.collect(DiagnosticArray, "/diagnostics", QOS)
        states.wait_for(what="the first joint_states")
        wrench = WrenchStamped()
        wrench.header.frame_id = "arm7_tcp"
        wrench.wrench.force.x = 1e6
        publisher = harness.publisher(WrenchStamped, sim.topic("external_wrench"))
        fqn = sim.node.get_fully_qualified_name()
        array = publish_until(lambda: publisher.publish(wrench), diagnostics,
                              lambda m: (status_of(m, "simulation") is not None
                                         and status_of(m, "simulation").name.startswith(fqn)
                                         and "integration stopped" in status_of(m, "simulation").message),
                              timeout=20.0, what="the simulation status saying it stopped")
        text = status_of(array, "simulation").message
        assert "the last finite state is not plausible" in text
        assert "publishing nothing until ~/reset" in text
        states.wait_quiet(0.5, timeout=10.0)  # (states published before the stop may still be on their way)
        count = len(states.messages)
        time.sleep(0.3)
        assert len(states.messages) == count, "a state was published after the integration stopped"
        believed = Plausibility(model)
        for m in states.messages:  # (coordinates first)
            assert believed.state_problem(np.array(m.position[:model.nv]), np.array(m.velocity[:model.nv])) == ""
    finally:
        sim.close()


def test_absurd_simulator_parameters_are_refused_with_the_reason(harness):
    sim = simulator(harness, "/absurd_parameters", robot_description=PLANAR, real_time_factor=1.0)
    try:
        cases = {
            "gravity": ([0.0, 0.0, 1e30], "more than 10 g"),
            "joint_stiffness": ([1e300, 1e300], "too fast to integrate at any physics_rate"),
            "initial_velocities": ([1e300, 0.0], "velocities above 1000 rad/s (m/s): theta1=1e+300"),
            "physics_rate": (1.0, "physics_rate 1 Hz is too slow for the drives' brake loop"),
        }
        assert sim.set(armature=[0.5, 0.5])[0].successful  # (joint_stiffness needs rotors)
        for name, (value, reason) in cases.items():
            (result,) = sim.set(**{name: value})
            assert not result.successful and reason in result.reason, (name, result.reason)
    finally:
        sim.close()
