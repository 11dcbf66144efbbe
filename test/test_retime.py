"""retime and feedforward (robot_dynamics.trajectories.retime): closed forms on a pendulum, Pinocchio's RNEA
as the oracle of every retimed Panda trajectory at joint_trajectory_controller's 1 kHz, and toppra's duration.

The pendulum: a 1 kg point mass 1 m below a pivot about +y (effort limit 5 N m, velocity limit 2 rad/s):
tau = m g l sin q + (m l^2 + armature) qdd.
"""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.trajectories.check import Trajectory, TrajectoryError, check_trajectory
from robot_dynamics.trajectories.retime import InfeasiblePath, feedforward, retime

PENDULUM = """<robot name="pendulum">
  <link name="base"/>
  <link name="link"><inertial><origin xyz="0 0 -1"/><mass value="1"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="swing" type="revolute"><parent link="base"/><child link="link"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="5" velocity="2"/>{dynamics}</joint>
</robot>"""
G = 9.81
PAYLOAD = ("panda_link7", 2.0, [0.0, 0.0, 0.15], [0.01, 0.0, 0.0, 0.01, 0.0, 0.01])
ARMATURE = dict(zip([f"panda_joint{k}" for k in range(1, 8)], [0.3, 0.3, 0.3, 0.3, 0.1, 0.1, 0.1]))


@pytest.fixture(scope="module")
def pendulum():
    return rd.load_urdf(PENDULUM.format(dynamics=""))


def _line(start, end, names=("swing",)):
    """Two waypoints: a straight path (the spline through two points is the line)."""
    return Trajectory(names, [0.0, 1.0], np.array([start, end], dtype=float).reshape(2, -1))


@pytest.mark.parametrize("distance, armature", [(0.5, 0.0), (0.5, 1.5), (4.0, 0.0)])
def test_bang_bang_duration_in_closed_form(pendulum, distance, armature):
    """Without gravity, torque limit tau and inertia I = m l^2 + armature: full acceleration a = tau / I, then
    the velocity limit v if reached, then full braking: T = 2 sqrt(D / a) if D <= v^2 / a, else D / v + v / a."""
    model = pendulum.with_gravity([0.0, 0.0, 0.0]).with_armature({"swing": armature})
    a, v = 5.0 / (1.0 + armature), 2.0
    expected = 2 * math.sqrt(distance / a) if distance <= v**2 / a else distance / v + v / a
    result = retime(model, _line(-distance / 2, distance / 2), gridpoints=1000, between_points=False)
    assert result.duration_after == pytest.approx(expected, rel=5e-3)
    assert result.duration_before == 1.0
    assert result.binding == [(0, "swing", "velocity" if distance > v**2 / a else "effort")]
    assert np.abs(result.trajectory.effort).max() == pytest.approx(5.0, rel=1e-3)


def test_acceleration_limit_in_closed_form(pendulum):
    """An acceleration limit below what the torque allows: T = 2 sqrt(D / a_max)."""
    model = pendulum.with_gravity([0.0, 0.0, 0.0])
    result = retime(model, _line(0.0, 0.5), acceleration_limits=1.0, gridpoints=1000, between_points=False)
    assert result.duration_after == pytest.approx(2 * math.sqrt(0.5 / 1.0), rel=5e-3)
    assert np.abs(result.trajectory.qdd).max() <= 1.0
    assert result.binding == [(0, "swing", "acceleration")]


def test_effort_margin_scales_the_torque_used(pendulum):
    """With a margin of 0.5 the peak effort is 2.5 N m and the bang-bang takes sqrt(2) times longer."""
    model = pendulum.with_gravity([0.0, 0.0, 0.0])
    full, half = (retime(model, _line(0.0, 0.5), effort_margin=m, gridpoints=1000, between_points=False)
                  for m in (1.0, 0.5))
    assert np.abs(half.trajectory.effort).max() <= 2.5 + 1e-9
    assert half.duration_after == pytest.approx(full.duration_after * math.sqrt(2), rel=5e-3)


def test_gravity_pendulum_passes_the_check_at_1khz(pendulum):
    """Under gravity the retimed swing (points every 1 ms, as joint_trajectory_controller samples) passes
    check_trajectory, the effort of each point is m g l sin q + m l^2 qdd, a limit is nearly reached (less
    the tightening that keeps the controller's quintic within it at the switches: checked at 8 kHz)."""
    trajectory = Trajectory(("swing",), [0.0, 1.0, 2.0], [[0.0], [0.4], [0.2]])
    result = retime(pendulum, trajectory)
    out = result.trajectory
    assert np.allclose(np.diff(out.t)[:-1], 1e-3)
    check = check_trajectory(pendulum, out, rate=1000.0)
    assert check.ok and check.samples == out.t.size
    np.testing.assert_allclose(out.effort[:, 0], G * np.sin(out.q[:, 0]) + out.qdd[:, 0], atol=1e-9)
    assert max(check.peak_effort_fraction["swing"], check.peak_velocity_fraction["swing"]) > 0.85
    between = check_trajectory(pendulum, out, rate=8000.0)
    assert between.ok and between.peak_effort_fraction["swing"] <= 1.0
    assert out.q[0, 0] == pytest.approx(0.0) and out.q[-1, 0] == pytest.approx(0.2)
    assert out.qd[0, 0] == 0.0 and out.qd[-1, 0] == pytest.approx(0.0, abs=1e-12)


def test_friction_is_kept_within_the_limits():
    """URDF damping and Coulomb friction: the result passes check_trajectory with friction, without
    leaving most of the torque unused (the bounds on the friction are conservative, not loose)."""
    model = rd.load_urdf(PENDULUM.format(dynamics='<dynamics damping="1.0" friction="0.5"/>')).with_gravity([0, 0, 0])
    result = retime(model, _line(0.0, 0.5), friction=True, gridpoints=1000, between_points=False)
    check = check_trajectory(model, result.trajectory, friction=True)
    assert check.ok and check.peak_effort_fraction["swing"] > 0.9
    assert result.effort_margin == 1.0  # (within by construction: no limit had to be tightened after)
    assert result.duration_after > retime(model, _line(0.0, 0.5), gridpoints=1000, between_points=False).duration_after


def test_a_pose_held_beyond_the_limit_is_refused_with_joint_time_and_torque(pendulum):
    """Ending at rest at q = 1.2, where m g l sin q = 9.14 N m > 5 N m: no timing helps."""
    with pytest.raises(InfeasiblePath) as refused:
        retime(pendulum, _line(0.0, 1.2))
    assert (refused.value.joint, refused.value.time) == ("swing", 1.0)
    assert refused.value.torque == pytest.approx(G * math.sin(1.2))
    assert "swing" in str(refused.value) and "9.14" in str(refused.value)


def test_a_swing_beyond_reach_is_refused_where_the_reachable_sets_end(pendulum):
    """From 0 to 2.5 rad past the horizontal: beyond q = asin(5 / 9.81) = 0.535 gravity outweighs the motor,
    and the 2 rad/s allowed carry 2 J, far from the 6.5 J the climb to pi / 2 takes."""
    with pytest.raises(InfeasiblePath) as refused:
        retime(pendulum, _line(0.0, 2.5))
    assert refused.value.joint == "swing"
    q = 2.5 * refused.value.time
    assert 0.5 < q < math.pi - 0.5 and refused.value.torque == pytest.approx(G * math.sin(q), rel=1e-3)
    assert abs(refused.value.torque) > 5.0


@pytest.mark.parametrize("kwargs, reason", [
    ({"effort_margin": 0.0}, "effort margin"), ({"effort_margin": 1.5}, "effort margin"),
    ({"acceleration_limits": -1.0}, "acceleration limits"), ({"acceleration_limits": [1.0, 2.0]}, "acceleration limits"),
    ({"rate": 0.0}, "rate"), ({"gridpoints": 1}, "gridpoints"),
])
def test_bad_arguments_are_refused(pendulum, kwargs, reason):
    with pytest.raises(TrajectoryError, match=reason):
        retime(pendulum, _line(0.0, 0.3), **kwargs)


def test_a_path_that_does_not_move_is_refused(pendulum):
    with pytest.raises(TrajectoryError, match="do not move"):
        retime(pendulum, _line(0.3, 0.3))


# ----------------------------------------------------------------------------- Panda, against Pinocchio

def _panda_path(model, waypoints=30, seconds=6.0):
    t = np.linspace(0.0, seconds, waypoints)
    base = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.7])
    q = base + 0.8 * np.sin(np.outer(t / seconds * np.pi, np.arange(1, 8) * 0.37) + np.arange(7))
    return Trajectory(model.joint_names, t, q)


@pytest.fixture(scope="module")
def panda():
    pin = pytest.importorskip("pinocchio")
    from robot_dynamics.tools.benchmarks.robots import panda7_urdf

    urdf = panda7_urdf()
    model = rd.load_urdf(urdf).with_payload(*PAYLOAD).with_armature(ARMATURE)
    oracle = pin.buildModelFromXML(urdf)
    frame = oracle.frames[oracle.getFrameId(PAYLOAD[0])]
    oracle.inertias[frame.parentJoint] += frame.placement.act(pin.Inertia(PAYLOAD[1], np.array(PAYLOAD[2]),
                                                                          _inertia(PAYLOAD[3])))
    oracle.armature[:] = [ARMATURE[name] for name in oracle.names[1:]]
    assert list(oracle.names[1:]) == list(model.joint_names)
    return model, oracle


def _inertia(values):
    ixx, ixy, ixz, iyy, iyz, izz = values
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _rnea(oracle, q, qd, qdd):
    import pinocchio as pin

    data = oracle.createData()
    return np.array([pin.rnea(oracle, data, *state).copy() for state in zip(q, qd, qdd)])


@pytest.mark.parametrize("options", [{}, {"effort_margin": 0.8}, {"acceleration_limits": 6.0}, {"gridpoints": 100}])
def test_panda_retimed_within_the_limits_judged_by_pinocchio(panda, options):
    """Payload and rotor inertia included: at every 1 kHz point Pinocchio's RNEA equals the effort given and
    stays within margin x the limit; velocities within theirs; check_trajectory agrees."""
    model, oracle = panda
    result = retime(model, _panda_path(model), **options)
    out = result.trajectory
    tau = _rnea(oracle, out.q, out.qd, out.qdd)
    np.testing.assert_allclose(out.effort, tau, atol=1e-8 * np.abs(tau).max())
    margin = options.get("effort_margin", 1.0)
    assert np.abs(tau / model.effort_limits).max() <= margin * (1 + 1e-9)
    if "acceleration_limits" in options:  # (a limit binds somewhere: less the tightening at the switches)
        assert np.abs(out.qdd).max() > 0.9 * options["acceleration_limits"]
    else:
        assert np.abs(tau / model.effort_limits).max() > margin * 0.85
    assert np.abs(out.qd / model.velocity_limits).max() <= 1.0
    if "acceleration_limits" in options:
        assert np.abs(out.qdd).max() <= options["acceleration_limits"]
    assert check_trajectory(model, out, rate=1000.0).ok
    assert result.duration_after < result.duration_before and len(result.binding) == 29


def test_panda_between_the_points_the_controllers_spline_stays_within(panda):
    """A controller sampling between the 1 ms points (at 8 kHz here) follows the quintic through them: within
    the limits too; checked at the points only (between_points=False), the quintic overshoots at a switch."""
    model, _ = panda
    check = check_trajectory(model, retime(model, _panda_path(model)).trajectory, rate=8000.0)
    assert max(check.peak_effort_fraction.values()) <= 1 + 1e-6
    assert max(check.peak_velocity_fraction.values()) <= 1 + 1e-6
    points_only = check_trajectory(model, retime(model, _panda_path(model), between_points=False).trajectory, rate=8000.0)
    assert max(points_only.peak_effort_fraction.values()) > 1.005


@pytest.mark.parametrize("gridpoints", [100, 1000])
def test_panda_a_tightening_round_keeps_only_points_a_full_round_repeats(panda, monkeypatch, gridpoints):
    """A round after a tightening recomputes only the points from the first grid point whose timing changed:
    the result is the one recomputing every point, to the bit (and some rounds did keep points)."""
    import robot_dynamics.trajectories.retime as module

    model, _ = panda
    unchanged, kept = module._unchanged, []
    monkeypatch.setattr(module, "_unchanged", lambda *args: kept.append(unchanged(*args)) or kept[-1])
    partial = retime(model, _panda_path(model), gridpoints=gridpoints)
    monkeypatch.setattr(module, "_unchanged", lambda *args: 0)
    full = retime(model, _panda_path(model), gridpoints=gridpoints)
    assert max(kept) > 0
    for name in ("t", "q", "qd", "qdd", "effort"):
        np.testing.assert_array_equal(getattr(partial.trajectory, name), getattr(full.trajectory, name))
    assert (partial.duration_after, partial.effort_margin) == (full.duration_after, full.effort_margin)


def test_panda_duration_within_one_percent_of_toppra(panda):
    """toppra (JointTorqueConstraint with Pinocchio's RNEA, 1000 grid points, the same not-a-knot spline
    through the waypoints at their times) finds the same optimum."""
    toppra = pytest.importorskip("toppra")
    import pinocchio as pin

    model, oracle = panda
    trajectory = _panda_path(model)
    data = oracle.createData()
    path = toppra.SplineInterpolator(trajectory.t, trajectory.q)
    constraints = [toppra.constraint.JointVelocityConstraint(np.stack([-model.velocity_limits, model.velocity_limits], 1)),
                   toppra.constraint.JointTorqueConstraint(lambda q, qd, qdd: pin.rnea(oracle, data, q, qd, qdd),
                                                           np.stack([-model.effort_limits, model.effort_limits], 1),
                                                           np.zeros(7))]
    gridpoints = np.linspace(trajectory.t[0], trajectory.t[-1], 1000)
    theirs = toppra.algorithm.TOPPRA(constraints, path, gridpoints=gridpoints).compute_trajectory(0, 0)
    ours = retime(model, trajectory, gridpoints=1000)
    assert ours.duration_after == pytest.approx(theirs.duration, rel=0.01)


def test_feedforward_efforts_are_pinocchios_rnea(panda):
    """The waypoints' given velocities and accelerations (a quintic trajectory): effort = RNEA there, the
    times and positions unchanged."""
    model, oracle = panda
    path = _panda_path(model, waypoints=12)
    qd, qdd = np.gradient(path.q, path.t, axis=0), np.gradient(np.gradient(path.q, path.t, axis=0), path.t, axis=0)
    trajectory = Trajectory(path.joint_names, path.t, path.q, qd, qdd)
    filled = feedforward(model, trajectory)
    np.testing.assert_allclose(filled.effort, _rnea(oracle, path.q, qd, qdd), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(filled.t, trajectory.t)
    np.testing.assert_array_equal(filled.q, trajectory.q)


def test_feedforward_of_positions_alone_uses_the_controllers_interpolation(pendulum):
    """Positions only: joint_trajectory_controller interpolates linearly, qdd = 0, so the effort is gravity
    plus the segment's constant velocity's (none for one joint): m g l sin q."""
    trajectory = Trajectory(("swing",), [0.0, 1.0, 2.0], [[0.0], [0.3], [0.1]])
    np.testing.assert_allclose(feedforward(pendulum, trajectory).effort[:, 0], G * np.sin([0.0, 0.3, 0.1]), atol=1e-12)


@pytest.mark.parametrize("effort, reason", [(np.zeros((2, 2)), "effort must have one row of 1 values"),
                                            (np.array([[1.0], [np.nan]]), "effort has a missing or non-finite value")])
def test_a_trajectorys_efforts_are_checked_like_its_velocities(effort, reason):
    with pytest.raises(TrajectoryError, match=reason):
        Trajectory(("swing",), [0.0, 1.0], [[0.0], [0.1]], effort=effort)
