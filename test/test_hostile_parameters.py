"""Run-time parameters that would make a computation fail (issue 31 items 1 and 8), the nodes in this
process on the test harness's executor:

- dynamics_node: task-space postures beyond the joint limits, task-space gains the plausibility rule
  does not believe and the root link as the controlled frame are refused with the reason (a posture
  of 1e300 used to end the node from its parameter callback); a computation failing in a parameter
  check or while installing a plan refuses the change or keeps the old plan, never raises; a bad
  posture in a params file ends the node at start naming it, from the topic it is said, not
  "waiting for robot_description";
- simulator_node: contact planes and spheres beyond the robot's size, and more spheres or planes
  than keep it real-time, are refused; links and spheres resized together; ~/reset recovers a
  stopped integration; no contact wrench beyond the plausibility rule is published.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.nodes.dynamics.node import DynamicsNode  # noqa: E402
from robot_dynamics.nodes.dynamics.plan import Settings, make_plan  # noqa: E402
from robot_dynamics.nodes.common.safety import Plausibility  # noqa: E402
from robot_dynamics.rigid_body.task_space import task_rows  # noqa: E402

from ros_helpers import wait_until  # noqa: E402
from test_plausible_nodes import ARM7, NAMESPACES, InProcess, harness  # noqa: E402,F401 (a fixture)

FRAME = "arm7_tcp"
TASK = {"command_source": "task_space", "task_space.frame": FRAME}


# --- dynamics_node: task space -----------------------------------------------------------------------
def test_task_space_parameters_beyond_the_model_are_refused_with_the_reason():
    model = rd.load_urdf(ARM7)
    task = {"command_source": "task_space", "task_frame": FRAME}
    cases = [
        ({"task_posture": (1e300,) * 8}, "arm7_joint1=1e+300 outside [-2.9, 2.9]"),
        ({"task_posture": (100.0,) * 8}, "task_space.posture must lie within the joint limits"),
        ({"task_posture": (1e10,) * 8}, "arm7_joint2=1e+10 outside [-1.76, 1.76]"),
        ({"task_posture": (0.0,) * 8}, "arm7_joint4=0 outside [-3.07, -0.07]"),
        ({"task_kp": (1e300,)}, "task_space.kp and task_space.kd too large"),
        ({"task_kd": (0.0, 0.0, 0.0, 0.0, 0.0, 1e300)}, "unit velocity error along rz"),
        ({"task_mode": "impedance", "task_stiffness": (1e300,) * 6}, "task_space.stiffness and task_space.damping too large"),
        ({"task_mode": "impedance", "task_damping": (1.0,) * 5 + (1e300,)}, "along rz"),
        ({"task_posture_kp": 1e6}, "task_space.posture_kp and task_space.posture_kd too large"),
        ({"task_frame": "arm7_link0"}, "'arm7_link0' is the root link or fixed to it: no joint moves it"),
    ]
    for values, reason in cases:
        with pytest.raises(ValueError, match=reason.replace("[", r"\[").replace("+", r"\+")):
            make_plan(model, Settings(**{**task, **values}))
    # under another command source, a posture is checked when set, not when the source switches
    with pytest.raises(ValueError, match="task_space.posture must lie within the joint limits"):
        make_plan(model, Settings(command_source="gravity", task_posture=(1e300,) * 8))
    inside = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.02)
    assert np.allclose(make_plan(model, Settings(**task, task_posture=inside)).task.rest, inside)


def test_the_task_space_gain_bound_is_the_joint_space_rule():
    """kp + kd just under the bound accepted, just over refused: the bound is where ``J^T Lambda e_i
    (kp + kd)`` at the rest pose (middle of the limits, Lambda = (J M^-1 J^T)^-1) reaches 1000 times a
    joint's torque scale, the bound of the joint-space ``M_ii (kp + kd)``."""
    model = rd.load_urdf(ARM7)
    low, high = model.position_limits.T
    rest = 0.5 * (low + high)
    J = rd.jacobian(model, rest, FRAME)[task_rows(("x", "y", "z", "rx", "ry", "rz"))]
    M = rd.mass_matrix(model, rest)
    demand = J.T @ np.linalg.inv(J @ np.linalg.solve(M, J.T))  # column i: the torque per unit of (kp + kd) along i
    largest = 1.0 / (np.abs(demand) / Plausibility(model).torque[:, None]).max()
    for factor, accepted in ((0.99, True), (1.01, False)):
        settings = Settings(command_source="task_space", task_frame=FRAME, task_kp=(factor * largest - 1.0,),
                            task_kd=(1.0,))
        if accepted:
            make_plan(model, settings)
        else:
            with pytest.raises(ValueError, match="task_space.kp and task_space.kd too large"):
                make_plan(model, settings)


@pytest.fixture
def task_node(harness):  # noqa: F811
    node = InProcess(harness, DynamicsNode, f"/hostile_parameters_{next(NAMESPACES)}",
                     {"robot_description": ARM7, **TASK})
    yield node
    node.close()


def set_one(node, name, value):
    (result,) = [node.node.set_parameters_atomically([Parameter(name, value=value)])]
    return result


def test_a_posture_that_broke_the_law_is_refused_and_the_node_goes_on(task_node):
    for value in ([1e300] * 8, [100.0] * 8, [1e20] * 8):
        result = set_one(task_node, "task_space.posture", value)
        assert not result.successful and "task_space.posture must lie within the joint limits" in result.reason
    for name, value in (("task_space.kp", 1e300), ("task_space.kd", 1e300), ("task_space.stiffness", [1e300] * 6),
                        ("task_space.damping", [1e300] * 6)):
        result = set_one(task_node, name, value)
        assert not result.successful and "too large" in result.reason, (name, result.reason)
    result = set_one(task_node, "task_space.frame", "arm7_link0")
    assert not result.successful and "no joint moves it" in result.reason
    assert set_one(task_node, "command_source", "gravity").successful
    result = set_one(task_node, "task_space.posture", [1e300] * 8)
    assert not result.successful and "outside [-2.9, 2.9]" in result.reason
    assert set_one(task_node, "command_source", "task_space").successful
    assert task_node.node._plan.task.frame == FRAME and task_node.thread.is_alive()


def test_a_failing_computation_refuses_the_change_or_keeps_the_plan(task_node, monkeypatch):
    node = task_node.node
    plan = node._plan

    def fails(*args):
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(node, "make_plan", fails)
    result = set_one(task_node, "kp", 50.0)
    assert not result.successful
    assert result.reason == "computing with these parameters failed (ZeroDivisionError: injected)"
    assert node.get_parameter("kp").value == 100 and node._plan is plan
    monkeypatch.undo()

    def install_fails(*args):
        raise np.linalg.LinAlgError("Eigenvalues did not converge")

    monkeypatch.setattr(node, "install", install_fails)
    set_one(task_node, "kp", 50.0)  # (accepted by the checks: installing it fails)
    assert node._plan is plan and node._settings.kp == plan.settings.kp
    level, text = node._model_status
    assert "computing with these parameters failed (LinAlgError: Eigenvalues did not converge)" in text
    assert "keeping the previous model 'arm7_gripper'" in text


def test_a_bad_posture_at_start_is_named_never_waited_on(harness):  # noqa: F811
    posture = [Parameter("task_space.posture", value=[1e300] * 8)]
    overrides = [Parameter(k, value=v) for k, v in {"robot_description": ARM7, **TASK}.items()] + posture
    with pytest.raises(SystemExit) as ended:
        node = DynamicsNode(namespace="/bad_posture_file", context=harness.context, parameter_overrides=overrides)
        node.destroy_node()
    assert ended.value.code == 2
    # the same posture with the description from the topic: the model status names it
    overrides = [Parameter(k, value=v) for k, v in TASK.items()] + posture
    node = DynamicsNode(namespace="/bad_posture_topic", context=harness.context, parameter_overrides=overrides)
    try:
        node._on_urdf(ARM7, "topic /robot_description")
        _, level, text, _ = node.model_status()
        assert node._plan is None and "waiting" not in text
        assert "robot 'arm7_gripper' from topic /robot_description does not fit the parameters: " \
               "task_space.posture must lie within the joint limits" in text
    finally:
        node.destroy_node()


# --- simulator_node: contact -------------------------------------------------------------------------
FLOOR = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def contact_settings(**values):
    from robot_dynamics.nodes.simulator.plan import Settings as SimulatorSettings

    return SimulatorSettings(**{"contact_planes": tuple(FLOOR), "contact_links": ("arm7_tcp",),
                                "contact_spheres": (0.0, 0.0, 0.0, 0.02), **values})


def test_contact_parameters_beyond_the_robot_are_refused_with_the_reason():
    from robot_dynamics.nodes.simulator.plan import coerce_setting, make_plan as make_simulation

    model = rd.load_urdf(ARM7)  # reach 1.709 m (robot_size): planes within 17.09 m of the root
    cases = [
        ({"contact_planes": (0.0, 0.0, 1e300, 0.0, 0.0, 1.0)}, "beyond 10 times the robot's reach (17.09 m)"),
        ({"contact_planes": (0.0, 0.0, 17.2, 0.0, 0.0, 1.0)}, "is 17.2 m from the root"),
        ({"contact_spheres": (0.0, 0.0, 0.0, 1e300)}, "radius 1e+300: the centre must lie within the robot's reach"),
        ({"contact_spheres": (0.0, 0.0, 1.8, 0.01)}, "within the robot's reach (1.709 m) of its link"),
        ({"contact_links": ("arm7_tcp",) * 9, "contact_spheres": (0.0, 0.0, 0.0, 0.01) * 9,
          "contact_planes": tuple(FLOOR) * 8}, "9 contact spheres and 8 planes make 72 pairs, more than 64"),
        # a plane the arm starts 1 m inside: 1e7 N on the tool at the initial state (and after every ~/reset)
        ({"contact_planes": (0.0, 0.0, 1.5, 0.0, 0.0, 1.0), "contact_stiffness": 1e7},
         "at the initial state, contact wrench on arm7_tcp"),
    ]
    for values, reason in cases:
        with pytest.raises(ValueError, match=reason.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
            make_simulation(model, contact_settings(**values))
    for name, count, width in (("contact_spheres", 10_000, 4), ("contact_planes", 65, 6), ("contact_links", 65, 1)):
        value = ["arm7_tcp"] * count if width == 1 else [0.0] * (width * count)
        with pytest.raises(ValueError, match=f"has {count} entries, more than 64"):
            coerce_setting(name, value)
    plan = make_simulation(model, contact_settings(contact_planes=tuple(FLOOR) * 4, contact_links=("arm7_tcp",) * 16,
                                                   contact_spheres=(0.0, 0.0, 0.0, 0.01) * 16))
    assert plan.contact.enabled and len(plan.contact.spheres) == 16 and len(plan.contact.planes) == 4


def test_contact_wrenches_beyond_the_rule_are_not_believed():
    """1000 times the robot's weight (17.8 kg: 174.6 kN) and that force at its reach (1.709 m)."""
    from robot_dynamics.nodes.simulator.contact import plausible_wrenches

    check = Plausibility(rd.load_urdf(ARM7))
    force = 1000 * 9.80665 * 17.8
    believed, problem = plausible_wrenches(check, {"a": np.array([0, 0, 0, 0, 0, 0.99 * force]),
                                                   "b": np.array([0, 0, 0, 0, 0, 1.01 * force]),
                                                   "c": np.array([0, 0, 1.01 * force * 1.7094405, 0, 0, 0]),
                                                   "d": np.array([0, 0, 0, 1e304, 0, 0])})
    assert list(believed) == ["a"] and problem.startswith("contact wrench on b [0.0, 0.0, 0.0, 0.0, 0.0, 176")


def simulator_node(harness, namespace, **params):  # noqa: F811
    from robot_dynamics.nodes.simulator.node import SimulatorNode

    return InProcess(harness, SimulatorNode, namespace, {
        "robot_description": ARM7, "real_time_factor": 0.0, "publish_clock": True, "publish_rate": 100.0,
        "gravity": [0.0, 0.0, 0.0], "contact.planes": FLOOR, "contact.links": ["arm7_tcp"],
        "contact.spheres": [0.0, 0.0, 0.0, 0.02], **params})


def test_contact_links_and_spheres_resize_one_parameter_at_a_time(harness):  # noqa: F811
    sim = simulator_node(harness, f"/contact_resize_{next(NAMESPACES)}")
    try:
        assert sim.node._plan.contact.enabled
        assert set_one(sim, "contact.links", ["arm7_tcp", "arm7_hand"]).successful
        assert not sim.node._plan.contact.enabled  # mismatched: no contact until the spheres follow
        assert set_one(sim, "contact.spheres", [0.0, 0.0, 0.0, 0.02, 0.0, 0.0, 0.05, 0.03]).successful
        contact = sim.node._plan.contact
        assert contact.enabled and [s[0] for s in contact.spheres] == ["arm7_tcp", "arm7_hand"]
        assert [s[2] for s in contact.spheres] == [0.02, 0.03]
        both = sim.node.set_parameters_atomically([Parameter("contact.links", value=["arm7_hand"] * 3),
                                                   Parameter("contact.spheres", value=[0.0, 0.0, 0.0, 0.01] * 3)])
        assert both.successful and len(sim.node._plan.contact.spheres) == 3  # (set together: checked together)
        assert set_one(sim, "contact.spheres", []).successful  # a point at each link's origin
        assert set_one(sim, "contact.links", []).successful and not sim.node._plan.contact.enabled
        result = set_one(sim, "contact.links", ["nowhere"])
        assert not result.successful and "are not links of robot 'arm7_gripper'" in result.reason
    finally:
        sim.close()


def test_an_absurd_plane_is_refused_and_reset_recovers(harness):  # noqa: F811
    from std_srvs.srv import Trigger
    from sensor_msgs.msg import JointState
    from geometry_msgs.msg import WrenchStamped
    from test_plausible_nodes import QOS

    sim = simulator_node(harness, f"/contact_reset_{next(NAMESPACES)}")
    try:
        wrenches = harness.collect(WrenchStamped, sim.topic("contact_wrenches"), QOS)
        states = harness.collect(JointState, sim.topic("joint_states"), QOS)
        states.wait_for(what="the first joint_states")
        for name, value in (("contact.planes", [0.0, 0.0, 1e300, 0.0, 0.0, 1.0]),
                            ("contact.spheres", [0.0, 0.0, 0.0, 1e300])):
            result = set_one(sim, name, value)
            assert not result.successful and "reach" in result.reason, result.reason
        # a stop that can still happen: 1e6 N on the tool (the state goes absurd, then non-finite)
        push = WrenchStamped()
        push.header.frame_id = "arm7_tcp"
        push.wrench.force.x = 1e6
        publisher = harness.publisher(WrenchStamped, sim.topic("external_wrench"))
        wait_until(lambda: (publisher.publish(push), bool(sim.node._failure))[1], 20.0, "the integration to stop")
        answer = harness.call(Trigger, f"{sim.node.get_fully_qualified_name()}/reset", Trigger.Request())
        assert answer.success
        since = time.monotonic()
        states.wait_for(lambda m: m.header.stamp.sec >= 1, since=since, timeout=30.0, what="1 s simulated after ~/reset")
        assert not sim.node._failure
        bound = 1000 * 9.80665 * 17.8
        for m in list(wrenches.messages):
            force = np.array([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z])
            assert np.linalg.norm(force) <= bound, force
    finally:
        sim.close()
