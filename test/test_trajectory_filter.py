"""The trajectory filter's settings, its reading of a received JointTrajectory and its modes
(robot_dynamics.nodes.trajectory_filter.plan, robot_dynamics.nodes.common.joint_trajectory; no ROS),
and the trajectory publisher's playback of one (robot_dynamics.nodes.trajectory_publisher.playback)."""

from types import SimpleNamespace

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf
from robot_dynamics.nodes.common.joint_trajectory import MAX_POINTS, read_joint_trajectory
from robot_dynamics.nodes.common.parameters import Rejected
from robot_dynamics.nodes.trajectory_filter.plan import (
    PARAMETERS, Settings, coerce_setting, filter_trajectory, make_plan,
)
from robot_dynamics.nodes.trajectory_publisher.playback import make_playback
from robot_dynamics.trajectories.check import Trajectory, TrajectoryError, check_trajectory, interpolate

ARM = [f"arm7_joint{k}" for k in range(1, 8)]
HOME = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.9, 0.8])


@pytest.fixture(scope="module")
def arm():
    return rd.load_urdf(bundled_urdf("arm7_gripper"))


def point(t, positions, velocities=(), accelerations=(), effort=()):
    """A stand-in for trajectory_msgs/JointTrajectoryPoint (the fields the readers use)."""
    return SimpleNamespace(positions=list(positions), velocities=list(velocities), accelerations=list(accelerations),
                           effort=list(effort), time_from_start=SimpleNamespace(sec=int(t), nanosec=int(round((t % 1) * 1e9))))


def path_points(duration, count=5, swing=0.8):
    """A quintic-interpolated path of the arm's 7 joints from HOME, ``count`` points over ``duration`` s, at rest
    at both ends (velocities and accelerations of a smooth time law)."""
    s = np.linspace(0.0, 1.0, count)
    shape = np.array([1.0, 0.6, -0.8, 0.7, 1.0, -0.5, 1.0]) * swing
    blend = 10 * s**3 - 15 * s**4 + 6 * s**5
    rate = (30 * s**2 - 60 * s**3 + 30 * s**4) / duration
    accel = (60 * s - 180 * s**2 + 120 * s**3) / duration**2
    return [point(duration * u, HOME + b * shape, r * shape, a * shape) for u, b, r, a in zip(s, blend, rate, accel)]


def test_parameters_declare_every_setting_with_its_default_and_refuse_bad_values():
    defaults = Settings()
    assert sorted(p.field for p in PARAMETERS) == sorted(defaults.__dataclass_fields__)
    for p in PARAMETERS:
        assert coerce_setting(p.field, p.default) == getattr(defaults, p.field), p.name
    assert {p.name for p in PARAMETERS} >= {"gravity", "payload.link", "payload.mass", "payload.com", "payload.inertia"}
    for field, value, reason in (("mode", "fast", "mode must be one of check, feedforward, retime"),
                                 ("effort_margin", 0.0, "effort_margin must be > 0"),
                                 ("effort_margin", 1.5, "<= 1"),
                                 ("acceleration_limit", [5.0, -1.0], "acceleration_limit must be > 0"),
                                 ("acceleration_limit", [float("nan")], "must be finite"),
                                 ("gravity", [0.0, -9.81], "gravity must have 3 values"),
                                 ("payload_inertia", [1, 0, 0, -1, 0, 1], "positive semi-definite"),
                                 ("friction", "yes", "friction must be true or false")):
        with pytest.raises(ValueError, match=reason):
            coerce_setting(field, value)


def test_plan_applies_payload_and_gravity_and_refuses_what_does_not_fit(arm):
    plan = make_plan(arm, Settings(payload_link="arm7_link7", payload_mass=3.0))
    q = np.concatenate([HOME, [0.02]])
    expected = arm.with_payload("arm7_link7", 3.0, (0, 0, 0), (0,) * 6)
    np.testing.assert_allclose(rd.gravity_torques(plan.model, q), rd.gravity_torques(expected, q), atol=1e-12)
    assert not np.allclose(rd.gravity_torques(plan.model, q), rd.gravity_torques(arm, q))
    with pytest.raises(ValueError, match="payload.link 'nowhere' is not a link"):
        make_plan(arm, Settings(payload_link="nowhere", payload_mass=1.0))
    with pytest.raises(ValueError, match="acceleration_limit has 2 values"):
        make_plan(arm, Settings(acceleration_limit=(1.0, 2.0)))
    assert make_plan(arm, Settings(acceleration_limit=(4.0,))).acceleration_limits.tolist() == [4.0] * arm.nv


def test_a_received_trajectory_is_read_as_the_controller_interpolates_it(arm):
    points = path_points(2.0)
    trajectory, effort = read_joint_trajectory(arm, ARM, points)
    assert trajectory.interpolation == "quintic" and effort is None
    np.testing.assert_allclose(trajectory.t, np.linspace(0, 2.0, 5))
    np.testing.assert_allclose(trajectory.q[-1], points[-1].positions)
    linear, _ = read_joint_trajectory(arm, ARM, [point(p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec,
                                                       p.positions) for p in points])
    assert linear.interpolation == "linear"


@pytest.mark.parametrize("change, reason", [
    (lambda names, points: (names[:-1] + ["elbow"], points), "joints \\['elbow'\\] are not joints of robot"),
    (lambda names, points: (names[:-1] + ["arm7_finger_joint2"], points), "mimic another joint"),
    (lambda names, points: (names[:-1] + [names[0]], points), "duplicate joint names"),
    (lambda names, points: (names, points[:1]), "1 point\\(s\\): at least two"),
    (lambda names, points: (names, [points[0], point(1.0, [0.0] * 6)] + points[2:]), "point 1 has 6 positions for 7"),
    (lambda names, points: (names, [points[0], point(1.0, [float("nan")] * 7)]), "non-finite positions value"),
    (lambda names, points: (names, [points[0], point(1.0, points[1].positions, [float("inf")] * 7)]),
     "non-finite velocities value \\(inf\\) for arm7_joint1"),
    (lambda names, points: (names, [points[0], point(1.0, points[1].positions)]),
     "point 1 has 0 velocities for 7 joints \\(velocities must be empty in every point"),
    (lambda names, points: (names, [points[1], points[0]]), "strictly increasing"),
    (lambda names, points: (names, [point(0.0, HOME), point(1.0, [3.5, *HOME[1:]])]),
     "point 1 puts arm7_joint1 at 3.5, outside its limits \\[-2.9, 2.9\\]"),
    (lambda names, points: (names, [point(k * 1e-3, HOME) for k in range(MAX_POINTS + 1)]), "more than the 10000"),
])
def test_a_malformed_trajectory_is_refused_with_the_reason(arm, change, reason):
    names, points = change(list(ARM), path_points(2.0))
    with pytest.raises(Rejected, match=reason):
        read_joint_trajectory(arm, names, points)


def test_check_mode_forwards_a_feasible_trajectory_and_refuses_the_same_path_when_too_fast(arm):
    plan = make_plan(arm, Settings(mode="check", payload_link="arm7_link7", payload_mass=3.0))
    slow, _ = read_joint_trajectory(arm, ARM, path_points(4.0))
    fast, _ = read_joint_trajectory(arm, ARM, path_points(0.5))
    assert check_trajectory(plan.model, slow).ok and not check_trajectory(plan.model, fast).ok  # the oracle
    assert filter_trajectory(plan, slow).trajectory is None  # forwarded unchanged
    with pytest.raises(Rejected, match="beyond the limits: arm7_joint"):
        filter_trajectory(plan, fast)
    # the margin: a trajectory using more than effort_margin of a limit is refused
    peak = max(f for f in check_trajectory(plan.model, slow).peak_effort_fraction.values() if f is not None)
    tight = make_plan(arm, Settings(mode="check", payload_link="arm7_link7", payload_mass=3.0,
                                    effort_margin=0.9 * peak))
    with pytest.raises(Rejected, match="beyond effort_margin"):
        filter_trajectory(tight, slow)


def test_playback_samples_as_the_check_interpolates_and_holds_the_end(arm):
    names = list(arm.joint_names)  # the publisher's joints: the 7 arm joints and the finger
    current = (np.concatenate([HOME + 0.1, [0.01]]), np.zeros(8), np.zeros(8))
    points = path_points(2.0)
    for p in points:  # the trajectory starts 0.5 s after it arrives: reached from the current reference
        p.time_from_start.nanosec += 500_000_000
    playback = make_playback(arm, names, ARM, points, current)
    oracle = Trajectory(ARM, np.concatenate([[0.0], np.linspace(0.5, 2.5, 5)]),
                        np.vstack([current[0][:7], [p.positions for p in points]]),
                        np.vstack([np.zeros(7), [p.velocities for p in points]]),
                        np.vstack([np.zeros(7), [p.accelerations for p in points]]))
    times = np.linspace(0.0, 2.5, 37)
    expected = interpolate(oracle, times)
    for k, t in enumerate(times):
        q, qd, qdd = playback.at(t)
        np.testing.assert_allclose(q[:7], expected[0][k], atol=1e-12)
        np.testing.assert_allclose(qd[:7], expected[1][k], atol=1e-12)
        np.testing.assert_allclose(qdd[:7], expected[2][k], atol=1e-9)
        assert q[7] == 0.01 and qd[7] == 0.0  # the finger, not in the trajectory: held
    np.testing.assert_allclose(playback.at(0.0)[0][:7], current[0][:7])
    q, qd, qdd = playback.at(9.0)  # after the end: its positions, at rest
    np.testing.assert_allclose(q[:7], points[-1].positions)
    assert not qd.any() and not qdd.any()
    with pytest.raises(Rejected, match="not among the joints this publisher publishes"):
        make_playback(arm, ARM[:6], ARM, path_points(2.0), (np.zeros(6),) * 3)


@pytest.mark.parametrize("empty", [(), (3,), (2, 3), (1, 2, 3), (0, 3)])
def test_the_serialized_joint_trajectory_is_what_rclpy_reads(empty):
    """joint_trajectory_bytes against rclpy's deserializer: every field of every point, alignment
    included (odd numbers of joints and names of every length shift the layout from point to point)."""
    pytest.importorskip("rclpy")
    from rclpy.serialization import deserialize_message
    from trajectory_msgs.msg import JointTrajectory

    from robot_dynamics.nodes.common.trajectory_cdr import joint_trajectory_bytes

    rng = np.random.default_rng(3)
    for count, names in ((7, ["a", "bb", "ccc", "dddd", "eeeee", "f", "gg"]), (1, ["q"]), (3, ["x", "yy", "zzz"])):
        t = np.sort(rng.uniform(0, 3, 9))
        arrays = [None if k in empty else rng.normal(size=(9, count)) for k in range(4)]
        msg = deserialize_message(joint_trajectory_bytes(7, 123, "base_link", names, t, arrays), JointTrajectory)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (7, 123, "base_link")
        assert list(msg.joint_names) == names and len(msg.points) == 9
        for k, p in enumerate(msg.points):
            for values, got in zip(arrays, (p.positions, p.velocities, p.accelerations, p.effort)):
                assert list(got) == ([] if values is None else values[k].tolist())
            assert p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec == pytest.approx(t[k], abs=1e-9)


@pytest.mark.parametrize("mode", ["check", "feedforward", "retime"])
def test_a_trajectory_too_long_for_the_rate_is_refused_before_any_work(arm, mode):
    plan = make_plan(arm, Settings(mode=mode, rate=1000.0))
    trajectory, _ = read_joint_trajectory(arm, ARM, path_points(3000.0))  # (50 min: 3 million samples at 1 kHz)
    with pytest.raises(Rejected, match="3000 s at rate 1000 Hz is more than the 100000 samples"):
        filter_trajectory(plan, trajectory)


def test_the_config_file_holds_the_nodes_defaults():
    yaml = pytest.importorskip("yaml")
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "config" / "trajectory_filter.yaml").read_text()
    values = yaml.safe_load(text)["/**"]["ros__parameters"]
    declared = {p.name: p for p in PARAMETERS}
    assert set(values) - {"robot_description_node"} <= set(declared)
    assert len(values) >= len(declared) - 1  # (every one but lock_torque_parameters, set at start only)
    for name, value in values.items():
        if name in declared:
            assert coerce_setting(declared[name].field, value) == getattr(Settings(), declared[name].field), name


def test_retime_mode_takes_a_finer_grid_when_the_default_one_is_too_coarse(arm, monkeypatch):
    """Should retime find its default grid too coarse for the limits to hold between its points (it raises
    'give more grid points'), the filter retimes once more on a grid 4 times finer."""
    from robot_dynamics.trajectories import retime as retime_module

    real, calls = retime_module.retime, []

    def coarse_once(model, trajectory, gridpoints=retime_module.DEFAULT_GRIDPOINTS, **options):
        calls.append(gridpoints)
        if len(calls) == 1:
            raise TrajectoryError("after 6 tightenings the timing still exceeds a limit between grid points "
                                  "(by 0.367 %): give more grid points")
        return real(model, trajectory, gridpoints=gridpoints, **options)

    monkeypatch.setattr(retime_module, "retime", coarse_once)
    plan = make_plan(arm, Settings(mode="retime", payload_link="arm7_hand", payload_mass=3.0))
    trajectory, _ = read_joint_trajectory(arm, ARM, path_points(0.5))
    out = filter_trajectory(plan, trajectory)
    assert calls == [retime_module.DEFAULT_GRIDPOINTS, 4 * retime_module.DEFAULT_GRIDPOINTS]
    assert check_trajectory(plan.model, out.trajectory).ok
    np.testing.assert_allclose(out.effort, out.trajectory.effort)


def test_check_mode_holds_the_efforts_a_trajectory_carries_to_the_limits(arm):
    """A feed-forward forwarded unchanged must not ask a motor for more than its limit (times the margin)."""
    plan = make_plan(arm, Settings(mode="check", effort_margin=0.5))
    points = path_points(4.0)
    trajectory, _ = read_joint_trajectory(arm, ARM, points)
    fine = np.full((5, 7), 5.0)  # N m: within half of 12 and of 87
    assert filter_trajectory(plan, trajectory, fine).trajectory is None
    absurd = fine.copy()
    absurd[3, 4] = 6.5  # arm7_joint5: more than half its 12 N m
    with pytest.raises(Rejected, match="point 3 gives arm7_joint5 an effort of 6.5, beyond effort_margin 0.5 times "
                                       "its limit 12"):
        filter_trajectory(plan, trajectory, absurd)
    absurd[3, 4] = 1e300
    with pytest.raises(Rejected, match="an effort of 1e\\+300"):
        filter_trajectory(plan, trajectory, absurd)
