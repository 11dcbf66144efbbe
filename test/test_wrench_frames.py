"""The one frame rule at the message boundary, without ROS: a stamped wrench is in its frame_id's axes,
its moment about that frame's origin (REP 103; tf2's doTransform, M' = R M + p x R F).

Oracles: Pinocchio's force action ``SE3.act(Force)`` (doTransform), its frame Jacobians in ``LOCAL``
(``J^T F`` of a wrench in the link's own axes) and ``LOCAL_WORLD_ALIGNED`` (the library's convention);
an applied wrench estimated back by the observer.  The rclpy-free node parts: the simulator's
external_wrench and contact_wrenches, the dynamics node's frame checks, the task-space goals.
"""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.observer import MomentumObserver
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.simulation.simulator import Simulator
from robot_dynamics.tools.benchmarks.robots import panda7_urdf
from robot_dynamics.rigid_body.wrenches import transform_wrench, wrench_in_frame, wrench_joint_torques, wrench_in_world

pin = pytest.importorskip("pinocchio")

Q_PANDA = np.array([0.1, -0.4, 0.2, -2.0, 0.3, 1.8, 0.6])
LINK = "panda_link7"  # rotated against the root at Q_PANDA: its axes are not the world's
# the goal's wrench in panda_link7's own axes: a 20 N force and a 0.3 N m moment, [moment; force]
LOCAL = np.concatenate((0.3 * np.array([0.2, 1.0, -0.5]) / np.linalg.norm([0.2, 1.0, -0.5]),
                        20.0 * np.array([1.0, -0.5, 0.8]) / np.linalg.norm([1.0, -0.5, 0.8])))


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(panda7_urdf())


@pytest.fixture(scope="module")
def oracle():
    """Pinocchio's Panda, its data at Q_PANDA (joints by name: a chain, so the same order) and panda_link7's id."""
    model = pin.buildModelFromXML(panda7_urdf())
    assert list(model.names)[1:] == [f"panda_joint{i}" for i in range(1, 8)]
    data = model.createData()
    pin.forwardKinematics(model, data, Q_PANDA)
    pin.updateFramePlacements(model, data)
    return model, data, model.getFrameId(LINK)


def force(wrench):
    """[moment; force] -> pin.Force (linear first)."""
    return pin.Force(np.asarray(wrench[3:]), np.asarray(wrench[:3]))


def as_wrench(f):
    return np.concatenate((f.angular, f.linear))


def test_transform_wrench_is_tf2s_do_transform_and_pinocchios_force_action():
    rng = np.random.default_rng(30)
    for _ in range(5):
        R, p, wrench = pin.exp3(rng.normal(size=3)), rng.normal(size=3), rng.normal(size=6)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = R, p
        moved = transform_wrench(T, wrench)
        np.testing.assert_allclose(moved, as_wrench(pin.SE3(R, p).act(force(wrench))), atol=1e-12)
        np.testing.assert_allclose(moved[:3], R @ wrench[:3] + np.cross(p, R @ wrench[3:]), atol=1e-12)


def test_the_boundary_helpers_match_pinocchios_local_and_world_aligned_frames(panda, oracle):
    model, data, fid = oracle
    placement = data.oMf[fid]
    T = rd.frame_pose(panda, Q_PANDA, LINK)
    np.testing.assert_allclose(T[:3, :3], placement.rotation, atol=1e-12)
    assert np.abs(T[:3, :3] - np.eye(3)).max() > 0.5  # the test means something: the link's axes are not the world's
    world = wrench_in_world(LOCAL, T)  # LOCAL_WORLD_ALIGNED: the link's origin, the root's axes
    np.testing.assert_allclose(world, as_wrench(pin.SE3(placement.rotation, np.zeros(3)).act(force(LOCAL))), atol=1e-12)
    np.testing.assert_allclose(wrench_in_frame(world, T[:3, 3], T), LOCAL, atol=1e-12)
    # about the root's origin, in its axes: the placement's action on the local wrench
    root = wrench_in_frame(world, T[:3, 3], np.eye(4))
    np.testing.assert_allclose(root, as_wrench(placement.act(force(LOCAL))), atol=1e-12)
    # J^T F: the library's world-aligned Jacobian on the world-aligned wrench = Pinocchio's local one on the local wrench
    J_local = pin.computeFrameJacobian(model, data, Q_PANDA, fid, pin.LOCAL)
    J_aligned = pin.computeFrameJacobian(model, data, Q_PANDA, fid, pin.LOCAL_WORLD_ALIGNED)
    truth = J_local[:3].T @ LOCAL[3:] + J_local[3:].T @ LOCAL[:3]
    np.testing.assert_allclose(J_aligned[:3].T @ world[3:] + J_aligned[3:].T @ world[:3], truth, atol=1e-10)
    np.testing.assert_allclose(wrench_joint_torques(panda, Q_PANDA[None], {LINK: world})[0], truth, atol=1e-10)


def test_a_wrench_in_link7_axes_is_estimated_back_in_those_axes_and_in_the_roots(panda, oracle):
    """The arm held still under the wrench (tau = g - J^T F): r -> J_local^T F_local, and the observer's
    wrench read as a WrenchStamped of panda_link7 is the applied one; of panda_link0, doTransform of it."""
    model, data, fid = oracle
    T = rd.frame_pose(panda, Q_PANDA, LINK)
    world = {LINK: wrench_in_world(LOCAL, T)}
    zeros = np.zeros(panda.nv)
    tau_ext = rd.inverse_dynamics(panda, Q_PANDA, zeros, zeros) - rd.inverse_dynamics(
        panda, Q_PANDA, zeros, zeros, external_wrenches=world)
    command = rd.gravity_torques(panda, Q_PANDA) - tau_ext
    sim = Simulator(panda, q=Q_PANDA, enforce_position_limits=False)
    observer = MomentumObserver(panda, 50.0, frame=LINK)
    observer.update(sim.t, sim.q, sim.qd, command)
    for _ in range(1000):
        sim.step(command, 1e-3, external_wrenches=world)
        r = observer.update(sim.t, sim.q, sim.qd, sim.applied_effort)
    J_local = pin.computeFrameJacobian(model, data, Q_PANDA, fid, pin.LOCAL)
    truth = J_local[:3].T @ LOCAL[3:] + J_local[3:].T @ LOCAL[:3]
    np.testing.assert_allclose(r, truth, atol=1e-6 * np.abs(truth).max())
    np.testing.assert_allclose(observer.wrench_in(), LOCAL, atol=1e-3 * np.abs(LOCAL).max())
    np.testing.assert_allclose(observer.wrench_in(LINK), observer.wrench_in(), atol=0)
    np.testing.assert_allclose(observer.wrench_in("panda_link0"), as_wrench(data.oMf[fid].act(force(LOCAL))),
                               atol=1e-3 * 20.0)
    np.testing.assert_allclose(observer.frame_pose(LINK), T, atol=1e-9)  # (the state moved by 1e-9 at most)


def test_a_frame_no_joint_moves_is_refused_by_the_observer_and_the_node_plan(panda):
    from robot_dynamics.nodes.dynamics.plan import Settings, make_plan

    for frame in ("panda_link0",):
        with pytest.raises(ValueError, match="fixed to the base .*no joint moves it"):
            MomentumObserver(panda, 50.0, frame=frame)
        with pytest.raises(ValueError, match="external_torque.frame 'panda_link0' is fixed to the base"):
            make_plan(panda, Settings(external_torque_enabled=True, external_torque_frame=frame))
    with pytest.raises(ValueError, match="external_torque.wrench_frame 'world' is not a link"):
        make_plan(panda, Settings(external_torque_enabled=True, external_torque_wrench_frame="world"))
    plan = make_plan(panda, Settings(external_torque_enabled=True, external_torque_frame=LINK,
                                     external_torque_wrench_frame="panda_link0"))
    assert (plan.external_torque.frame, plan.external_torque.wrench_frame) == (LINK, "panda_link0")
    assert make_plan(panda, Settings(external_torque_enabled=True, external_torque_frame=LINK)).external_torque.wrench_frame == LINK


def test_the_simulators_external_wrench_is_read_in_its_links_axes(panda, oracle):
    from robot_dynamics.nodes.common.parameters import Rejected
    from robot_dynamics.nodes.simulator.inputs import external_wrench
    from robot_dynamics.nodes.simulator.plan import Settings, make_plan

    _, data, fid = oracle
    plan = make_plan(panda, Settings())
    link, wrench = external_wrench(LINK, LOCAL[:3], LOCAL[3:], plan, Q_PANDA)
    assert link == LINK
    np.testing.assert_allclose(wrench, as_wrench(pin.SE3(data.oMf[fid].rotation, np.zeros(3)).act(force(LOCAL))),
                               atol=1e-12)
    for frame_id, reason in (("world", "not a link of robot"), ("panda_link0", "fixed to the base")):
        with pytest.raises(Rejected, match=reason):
            external_wrench(frame_id, LOCAL[:3], LOCAL[3:], plan, Q_PANDA)


def test_contact_wrenches_are_in_each_links_axes_or_summed_in_the_wrench_frame(panda, oracle):
    from robot_dynamics.nodes.simulator.contact import contact_wrench_messages

    model, data, fid = oracle
    hand = model.getFrameId("panda_hand")
    world = {LINK: wrench_in_world(LOCAL, rd.frame_pose(panda, Q_PANDA, LINK)),
             "panda_hand": np.array([0.1, 0.0, -0.2, 3.0, -4.0, 5.0])}
    messages = dict(contact_wrench_messages(panda, Q_PANDA, world))
    np.testing.assert_allclose(messages[LINK], LOCAL, atol=1e-12)
    rotation = pin.SE3(data.oMf[hand].rotation, np.zeros(3))
    np.testing.assert_allclose(messages["panda_hand"], as_wrench(rotation.actInv(force(world["panda_hand"]))), atol=1e-12)
    [(frame_id, total)] = contact_wrench_messages(panda, Q_PANDA, world, "panda_link0")
    expected = data.oMf[fid].act(force(LOCAL)) + data.oMf[hand].act(force(messages["panda_hand"]))
    assert frame_id == "panda_link0"
    np.testing.assert_allclose(total, as_wrench(expected), atol=1e-12)
    # nothing touches: each link's messages stop; the summed frame reads zero, as a sensor there would
    assert contact_wrench_messages(panda, Q_PANDA, {}) == []
    [(frame_id, total)] = contact_wrench_messages(panda, Q_PANDA, {}, "panda_link0")
    assert frame_id == "panda_link0" and np.array_equal(total, np.zeros(6))


def test_task_space_goals_are_read_in_their_frame_at_the_measured_state():
    from robot_dynamics.nodes.common.parameters import Rejected
    from robot_dynamics.nodes.dynamics.task_space_inputs import TaskSpaceInputs

    arm = rd.load_urdf(str(bundled_urdf("arm7_gripper")))
    q = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.8, 0.02])
    inputs = TaskSpaceInputs(arm)
    with pytest.raises(Rejected, match="no joint state has arrived"):
        inputs.read_pose("arm7_link4", (0.0, 0.0, 0.1), (0.0, 0.0, 0.0, 1.0), 0)
    with pytest.raises(Rejected, match="'world' is not a link of robot"):
        inputs.read_pose("world", (0.0, 0.0, 0.1), (0.0, 0.0, 0.0, 1.0), 0)
    inputs.positions = q
    s = np.sqrt(0.5)
    inputs.read_pose("arm7_link4", (0.1, -0.05, 0.2), (0.0, 0.0, s, s), 0)  # 90 degrees about z, in link 4
    local = np.eye(4)
    local[:3, :3], local[:3, 3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [0.1, -0.05, 0.2]
    target, _ = inputs.target(1, 100)
    np.testing.assert_allclose(target.pose, rd.frame_pose(arm, q, "arm7_link4") @ local, atol=1e-12)
    inputs.positions = q + 0.3  # the goal stays where it was placed
    np.testing.assert_allclose(inputs.target(1, 100)[0].pose, target.pose, atol=0)
    inputs.read_twist("desired_twist", "arm7_link4", (0.1, 0.0, 0.0), (0.0, 0.2, 0.0), 2)
    R = rd.frame_pose(arm, q + 0.3, "arm7_link4")[:3, :3]
    np.testing.assert_allclose(inputs.target(2, 100)[0].twist, np.r_[R @ [0.0, 0.2, 0.0], R @ [0.1, 0.0, 0.0]],
                               atol=1e-12)
    inputs.read_pose(arm.link_names[0], (0.1, 0.2, 0.3), (0.0, 0.0, 0.0, 1.0), 3)  # the root: as given
    np.testing.assert_allclose(inputs.target(3, 100)[0].pose[:3, 3], [0.1, 0.2, 0.3], atol=0)
