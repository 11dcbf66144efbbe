"""The simulator's penalty contact (robot_dynamics.simulation.contact) against closed forms."""

import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.simulation.contact import ContactModel
from robot_dynamics.simulation.simulator import Simulator

RADIUS = 0.05


def resting_pendulum(friction=0.0, integrator="rk4"):
    """The 1 kg, 1 m pendulum (swinging about +y) dropped from level onto the floor z = -RADIUS with a
    sphere of RADIUS at its bob; it comes to rest carrying its weight on the floor."""
    model = rd.load_urdf(rd.examples.PENDULUM_URDF)
    contact = ContactModel(planes=[((0, 0, -RADIUS), (0, 0, 2.0))], spheres=[("link", (0, 0, -1), RADIUS)],
                           friction=friction)
    sim = Simulator(model, q=[math.pi / 2 - 0.05], integrator=integrator, contact=contact)
    for _ in range(3000):
        sim.step(np.zeros(1), 1e-3)
    return model, contact, sim


@pytest.mark.parametrize("friction", [0.0, 0.5])
def test_a_pendulum_resting_on_a_plane_carries_its_static_load(friction):
    model, contact, sim = resting_pendulum(friction)
    # Bob and contact point on one vertical: the floor carries m g, and sinks by m g / k (cos q = d, the
    # bob's depth below the pivot's level, since the floor's surface touches the sphere RADIUS lower).
    weight = 9.81
    assert abs(sim.qd[0]) < 1e-6
    assert math.cos(sim.q[0]) == pytest.approx(weight / contact.stiffness, rel=1e-6)
    wrenches = sim.contact_wrenches()
    assert list(wrenches) == ["link"]
    x = -math.sin(sim.q[0])  # the bob's x, and the contact point's; the link origin is the pivot
    expected = np.array([0.0, -x * weight, 0.0, 0.0, 0.0, weight])  # (c - o) x f = (x, 0, z) x (0, 0, F), f
    np.testing.assert_allclose(wrenches["link"], expected, atol=1e-6 * weight)
    # the joint torque of that wrench balances gravity exactly
    torque = -rd.inverse_dynamics(model, sim.q, [0.0], [0.0], external_wrenches=wrenches) + rd.gravity_torques(model, sim.q)
    np.testing.assert_allclose(torque, rd.gravity_torques(model, sim.q), rtol=1e-6)


def test_off_by_default_and_untouched_spheres_change_nothing():
    model = rd.load_urdf(rd.examples.PENDULUM_URDF)
    free, far = Simulator(model, q=[0.3]), Simulator(model, q=[0.3], contact=ContactModel(
        planes=[((0, 0, -5.0), (0, 0, 1))], spheres=[("link", (0, 0, -1), RADIUS)]))
    assert free.contact.enabled is False and free.contact_wrenches() == {}
    for _ in range(500):
        free.step(np.zeros(1), 1e-3)
        far.step(np.zeros(1), 1e-3)
    assert free.q[0] == far.q[0] and free.qd[0] == far.qd[0] and far.contact_wrenches() == {}


def test_a_wall_pushes_never_pulls_and_friction_opposes_sliding():
    model = rd.load_urdf(rd.examples.PENDULUM_URDF)
    # the bob swings through a floor at its lowest point: pushed up, and slowed by friction only with mu > 0
    speeds = {}
    for mu in (0.0, 0.8):
        sim = Simulator(model, q=[0.0], qd=[2.0], contact=ContactModel(
            planes=[((0, 0, -1.0 - RADIUS + 0.002), (0, 0, 1))], spheres=[("link", (0, 0, -1), RADIUS)], friction=mu))
        forces = []
        for _ in range(20):
            sim.step(np.zeros(1), 1e-3)
            forces.append(sim.contact_wrenches().get("link", np.zeros(6)))
        forces = np.array(forces)
        assert forces[:, 5].min() >= 0.0  # never pulls
        if mu:
            assert (forces[forces[:, 5] > 0, 3] > 0).all()  # the bob slides towards -x: friction along +x
        speeds[mu] = sim.qd[0]
    assert speeds[0.8] < speeds[0.0] - 0.01


def test_bad_geometry_is_refused_by_name():
    model = rd.load_urdf(rd.examples.PENDULUM_URDF)
    with pytest.raises(ValueError, match="plane 0"):
        ContactModel(planes=[((0, 0, 0), (0, 0, 0))])
    with pytest.raises(ValueError, match="sphere 0 on 'link'"):
        ContactModel(spheres=[("link", (0, 0), 0.1)])
    with pytest.raises(ValueError, match="stiffness"):
        ContactModel(stiffness=0.0)
    with pytest.raises(ValueError, match="unknown link 'nowhere'"):
        Simulator(model, contact=ContactModel(planes=[((0, 0, 0), (0, 0, 1))], spheres=[("nowhere", (0, 0, 0), 0.0)]))
