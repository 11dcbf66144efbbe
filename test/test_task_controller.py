"""The two task-space laws (control.operational_space_torque, control.cartesian_impedance_torque,
through task_control.task_space_torque) in closed loop with the library's Simulator, exact model.

- computed torque tracks a 5 cm circle at 0.25 Hz to <= 1 mm RMS and <= 0.01 rad;
- impedance under a constant external wrench at the frame settles at K^-1 F (within 5 %);
- the posture torque, projected on the null space, moves the joints and not the frame
  (task error change <= 1e-6 m), and adds no frame acceleration at a single state (J M^-1 N = 0);
- near and at a singular pose the torque stays bounded and the diagnostic says so;
- fewer than six joints: the position alone is controlled.
"""

import functools
import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.simulation.simulator import Simulator
from robot_dynamics.control.task_controller import TaskSpaceSettings, TaskTarget, default_axes, task_space_torque
from robot_dynamics.rigid_body.task_space import damped_task_inertia, task_rows

FRAME = "arm7_tcp"
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.8, 0.02])
DT = 1e-3


@functools.lru_cache(maxsize=None)
def arm():
    return rd.load_urdf(str(bundled_urdf("arm7_gripper")))


def circle(start, radius, frequency, t):
    """A circle in the horizontal plane through ``start`` (its centre ``radius`` behind it along x):
    position, velocity, acceleration."""
    w = 2 * math.pi * frequency
    centre = start[:3, 3] - [radius, 0.0, 0.0]
    c, s = math.cos(w * t), math.sin(w * t)
    p = centre + radius * np.array([c, s, 0.0])
    v = radius * w * np.array([-s, c, 0.0])
    a = -radius * w * w * np.array([c, s, 0.0])
    pose = start.copy()
    pose[:3, 3] = p
    return TaskTarget(pose, np.concatenate([np.zeros(3), v]), np.concatenate([np.zeros(3), a]))


def test_computed_torque_tracks_a_circle():
    model = arm()
    start = rd.frame_pose(model, Q0, FRAME)
    settings = TaskSpaceSettings(FRAME, "computed_torque", kp=400.0, kd=40.0, rest=Q0)
    first = circle(start, 0.05, 0.25, 0.0)
    qd0 = np.linalg.pinv(rd.jacobian(model, Q0, FRAME)) @ first.twist  # start on the circle's velocity
    sim = Simulator(model, Q0, qd0)
    position, rotation = [], []
    for k in range(4000):  # one turn
        target = circle(start, 0.05, 0.25, sim.t)
        result = task_space_torque(model, settings, sim.q, sim.qd, target)
        assert not result.damped
        position.append(np.linalg.norm(result.error[3:]))
        rotation.append(np.linalg.norm(result.error[:3]))
        sim.step(result.torque, DT)
    end = rd.frame_pose(model, sim.q, FRAME)[:3, 3]
    assert np.linalg.norm(end - start[:3, 3]) < 2e-3  # the loop closed: back at the start after one turn
    assert math.sqrt(np.mean(np.square(position))) <= 1e-3
    assert max(rotation) <= 0.01


def test_impedance_yields_by_the_compliance_under_a_constant_wrench():
    model = arm()
    start = rd.frame_pose(model, Q0, FRAME)
    stiffness = np.array([400.0, 600.0, 800.0, 40.0, 40.0, 40.0])
    settings = TaskSpaceSettings(FRAME, "impedance", stiffness=stiffness, rest=Q0)
    force = np.array([4.0, -3.0, 6.0])
    sim = Simulator(model, Q0)
    target = TaskTarget(start)
    for _ in range(3000):
        result = task_space_torque(model, settings, sim.q, sim.qd, target)
        sim.step(result.torque, DT, external_wrenches={FRAME: np.concatenate([np.zeros(3), force])})
    offset = rd.frame_pose(model, sim.q, FRAME)[:3, 3] - start[:3, 3]
    expected = force / stiffness[:3]
    np.testing.assert_allclose(offset, expected, rtol=0.0, atol=0.05 * np.abs(expected).min())
    assert np.linalg.norm(sim.qd) < 1e-3  # settled


def test_impedance_with_critical_damping_is_not_oscillating():
    """damping empty = critical: a step of 1 cm comes back without overshooting by more than 5 %."""
    model = arm()
    start = rd.frame_pose(model, Q0, FRAME)
    settings = TaskSpaceSettings(FRAME, "impedance", stiffness=[500.0, 500.0, 500.0, 50.0, 50.0, 50.0], rest=Q0)
    target = start.copy()
    target[2, 3] += 0.01
    sim = Simulator(model, Q0)
    heights = []
    for _ in range(2000):
        result = task_space_torque(model, settings, sim.q, sim.qd, TaskTarget(target))
        sim.step(result.torque, DT)
        heights.append(rd.frame_pose(model, sim.q, FRAME)[2, 3] - start[2, 3])
    assert max(heights) <= 0.0105
    assert abs(heights[-1] - 0.01) < 5e-4


def test_null_space_posture_moves_the_joints_not_the_frame():
    """Computed torque: the frame's acceleration is commanded exactly, whatever the posture torque.
    (The impedance law leaves the posture motion's Jdot qd to its spring: the frame moves a little.)"""
    mode = "computed_torque"
    model = arm()
    start = rd.frame_pose(model, Q0, FRAME)
    rest = Q0 + np.array([0.4, 0.0, -0.4, 0.0, 0.0, 0.0, 0.0, 0.0])
    settings = TaskSpaceSettings(FRAME, mode, kp=400.0, kd=40.0, stiffness=[2000.0] * 3 + [200.0] * 3,
                                 rest=rest, posture_kp=20.0, posture_kd=5.0)
    sim = Simulator(model, Q0)
    errors = []
    for _ in range(2000):  # 1 s at 2 kHz: the torque held over a step leaves O(dt^2) in the frame
        result = task_space_torque(model, settings, sim.q, sim.qd, TaskTarget(start))
        errors.append(np.linalg.norm(result.error[3:]))
        sim.step(result.torque, DT / 2)
    assert np.linalg.norm(sim.q[[0, 2]] - Q0[[0, 2]]) > 0.05, "the posture did not move"
    assert max(errors) - errors[0] <= 1e-6


def test_null_space_torque_adds_no_frame_acceleration():
    model = arm()
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = Q0 + rng.uniform(-0.3, 0.3, model.nv) * [1, 1, 1, 1, 1, 1, 1, 0]
        J, M = rd.jacobian(model, q, FRAME), rd.mass_matrix(model, q)
        torque = rng.normal(size=model.nv)
        projected = control.null_space_torque(J, damped_task_inertia(J, M), torque)
        assert np.abs(J @ np.linalg.solve(M, projected)).max() < 1e-9 * np.abs(torque).max()
        assert np.abs(projected - torque).max() > 1e-3  # it did project


@pytest.mark.parametrize("mode", ["computed_torque", "impedance"])
def test_singular_pose_gives_bounded_torques_and_says_so(mode):
    """The elbow stretched (joint 4 -> 0, joints 2 and 6 at 0): J loses rank at q4 = 0."""
    model = arm()
    settings = TaskSpaceSettings(FRAME, mode, kp=400.0, kd=40.0, rest=Q0)
    peaks = {}
    for q4 in (-1.0, -1e-2, -1e-4, -1e-6, 0.0):
        q = np.array([0.0, 0.0, 0.0, q4, 0.0, 0.0, 0.0, 0.02])
        qd = np.full(model.nv, 0.3)
        target = rd.frame_pose(model, q, FRAME)
        target[:3, 3] += [0.02, 0.01, -0.02]  # partly along the lost direction
        result = task_space_torque(model, settings, q, qd, TaskTarget(target))
        assert np.all(np.isfinite(result.torque))
        peaks[q4] = np.abs(result.torque).max()
        if q4 == 0.0:
            assert result.damped and result.conditioning == pytest.approx(0.0, abs=1e-12)
        if q4 == -1.0:
            assert not result.damped
    assert max(peaks.values()) < 20 * peaks[-1.0], peaks  # no blow-up towards the singularity


def test_arm_with_fewer_than_six_joints_controls_the_position():
    model = rd.load_urdf(str(bundled_urdf("cartesian_3dof")))
    assert default_axes(model.nv) == ("x", "y", "z")
    frame = model.link_names[-1]
    q0 = np.zeros(model.nv)
    start = rd.frame_pose(model, q0, frame)
    target = start.copy()
    target[:3, 3] += [0.05, -0.03, 0.02]
    settings = TaskSpaceSettings(frame, "computed_torque", axes=default_axes(model.nv), kp=100.0, kd=20.0)
    sim = Simulator(model, q0, enforce_position_limits=False)
    for _ in range(2000):
        result = task_space_torque(model, settings, sim.q, sim.qd, TaskTarget(target))
        sim.step(result.torque, DT)
    np.testing.assert_allclose(rd.frame_pose(model, sim.q, frame)[:3, 3], target[:3, 3], atol=1e-4)


def test_settings_refuse_bad_values():
    with pytest.raises(ValueError, match="mode"):
        TaskSpaceSettings(FRAME, "admittance")
    with pytest.raises(ValueError, match="directions"):
        TaskSpaceSettings(FRAME, axes=("x", "w"))
    with pytest.raises(ValueError, match="kp"):
        TaskSpaceSettings(FRAME, kp=[1.0, 2.0])
    assert list(TaskSpaceSettings(FRAME, axes=("z", "rx"), kp=[1, 2, 3, 4, 5, 6]).kp) == [3.0, 4.0]
    with pytest.raises(ValueError, match="stiffness"):
        TaskSpaceSettings(FRAME, stiffness=[-1.0] * 6)
    assert list(task_rows(("z", "rx"))) == [5, 0]


@pytest.mark.parametrize("mode", ["computed_torque", "impedance"])
def test_the_one_pass_data_gives_the_same_torque(mode):
    """task_space_torque on a Data filled by compute_terms (the dynamics node's path) == computed afresh."""
    from robot_dynamics.rigid_body.data import BIAS, GRAVITY, MASS, WORLD, Data, compute_terms

    model = arm()
    data = Data(model)
    rng = np.random.default_rng(5)
    settings = TaskSpaceSettings(FRAME, mode, rest=Q0)
    for _ in range(5):
        q, qd = Q0 + rng.uniform(-0.3, 0.3, model.nv) * [1, 1, 1, 1, 1, 1, 1, 0], rng.uniform(-1, 1, model.nv)
        target = rd.frame_pose(model, q, FRAME)
        target[:3, 3] += rng.uniform(-0.02, 0.02, 3)
        goal = TaskTarget(target, rng.normal(size=6), rng.normal(size=6))
        compute_terms(data, q, qd, GRAVITY | BIAS | MASS | WORLD)
        np.testing.assert_allclose(task_space_torque(model, settings, q, qd, goal, data).torque,
                                   task_space_torque(model, settings, q, qd, goal).torque, rtol=1e-9, atol=1e-9)
