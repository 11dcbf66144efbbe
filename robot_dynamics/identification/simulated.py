"""A simulated "real robot" for trying identification without hardware.

:func:`record` plays a trajectory on :class:`~robot_dynamics.simulation.simulator.Simulator` (viscous and
Coulomb friction on) with the dynamics node's computed-torque law computed from a controller
model, and returns what a ``joint_states`` recording of the robot would hold: positions,
velocities and the applied efforts, each with Gaussian sensor noise.
"""

from dataclasses import dataclass

import numpy as np

import robot_dynamics as rd
from robot_dynamics.control import laws as control
from robot_dynamics.rigid_body.friction import DEFAULT_FRICTION_VELOCITY as FRICTION_VELOCITY, friction_torques
from robot_dynamics.simulation.simulator import Simulator

DEFAULT_GAINS = (400.0, 40.0)   # kp 1/s^2, kd 1/s: critically damped at 20 rad/s
SUBSTEPS = 4                    # simulator steps per control period (the friction's tanh is stiff)


@dataclass(frozen=True)
class SimulatedRecording:
    """(N,) times and (N, n) positions, velocities and efforts in ``joint_names`` order."""

    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    tau: np.ndarray


def computed_torque(model, q, qd, desired, gains=DEFAULT_GAINS):
    """The dynamics node's computed-torque law with friction compensation (``compensate_friction``),
    from ``model``: :func:`robot_dynamics.control.laws.computed_torque` plus
    :func:`robot_dynamics.rigid_body.friction.friction_torques`."""
    q_d, qd_d, qdd_d = desired
    kp, kd = gains
    tau = control.computed_torque(rd.mass_matrix(model, q), rd.bias_forces(model, q, qd), qdd_d,
                                  control.position_error(q_d, q), qd_d - qd, kp, kd)
    return tau + friction_torques(model.viscous_damping, model.friction, FRICTION_VELOCITY, qd)


def record(robot, controller, trajectory, duration, rate=500.0, torque_noise=0.01, position_noise=1e-5, seed=0):
    """Play ``trajectory`` (callable ``t -> (q, qd, qdd)``) on ``robot`` for ``duration`` s at ``rate`` Hz.

    ``torque_noise`` is the effort noise's standard deviation as a fraction of each joint's RMS
    effort; ``position_noise`` that of the positions (rad or m), a tenth of it on the velocities
    per control period.
    """
    dt = 1.0 / rate
    count = int(round(duration * rate)) + 1
    q0, _, _ = trajectory(0.0)
    sim = Simulator(robot, q=q0, apply_damping=True, apply_friction=True)
    t = np.arange(count) * dt
    q, qd, tau = np.empty((count, robot.nv)), np.empty((count, robot.nv)), np.empty((count, robot.nv))
    for k in range(count):
        q[k], qd[k] = sim.q, sim.qd
        tau[k] = computed_torque(controller, sim.q, sim.qd, trajectory(t[k]))
        for _ in range(SUBSTEPS):
            sim.step(tau[k], dt / SUBSTEPS)
        tau[k] = sim.applied_effort
    # tau[k] is held over [t_k, t_k + dt]: an effort sensor sampling at t_k sees the mean of the two
    # efforts held around it; stamping tau[k] at t_k instead lags it half a period, which biases
    # the fit (a torque lag of dt/2 looks like viscous damping through dg/dq qd)
    tau[1:] = (tau[1:] + tau[:-1]) / 2
    rng = np.random.default_rng(seed)
    noisy_tau = tau + rng.normal(size=tau.shape) * torque_noise * np.sqrt(np.mean(tau**2, axis=0))
    noisy_q = q + rng.normal(size=q.shape) * position_noise
    noisy_qd = qd + rng.normal(size=qd.shape) * position_noise * rate / 10
    return SimulatedRecording(tuple(robot.joint_names), t, noisy_q, noisy_qd, noisy_tau)


def perturbed_urdf(urdf_path, seed=0, mass=0.2, com=0.02, inertia=0.3, friction=1.5):
    """The URDF's XML with every link's mass and inertia scaled by ``1 +- mass``/``1 +- inertia``
    (uniformly random), its centre of mass moved by up to ``com`` m per axis, and each joint's
    ``<dynamics>`` damping and friction scaled by ``friction``: a robot that the URDF describes
    badly, and still a physically consistent one."""
    import xml.etree.ElementTree as ET

    rng = np.random.default_rng(seed)
    root = ET.parse(urdf_path).getroot()
    for inertial in root.iter("inertial"):
        factor = 1 + rng.uniform(-mass, mass)
        element = inertial.find("mass")
        element.set("value", repr(float(element.get("value")) * factor))
        origin = inertial.find("origin")
        if origin is None:
            origin = ET.SubElement(inertial, "origin")
        xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()]) + rng.uniform(-com, com, 3)
        origin.set("xyz", " ".join(map(repr, xyz.tolist())))
        element, factor = inertial.find("inertia"), 1 + rng.uniform(-inertia, inertia)
        if element is not None:
            for key, value in element.attrib.items():
                element.set(key, repr(float(value) * factor))
    for dynamics in root.iter("dynamics"):
        for key in ("damping", "friction"):
            if key in dynamics.attrib:
                dynamics.set(key, repr(float(dynamics.get(key)) * friction))
    return ET.tostring(root, encoding="unicode")
