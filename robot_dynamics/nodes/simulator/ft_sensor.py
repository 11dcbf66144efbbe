"""The simulator node's force/torque sensor (no rclpy): ``ft_sensor.*`` -> the true reading published on ``ft_sensor/wrench``.

With ``ft_sensor.frame`` (a link attached by a fixed joint) the node publishes, with every
``joint_states``, the wrench that joint truly transmits as a sensor there reads it
(:class:`robot_dynamics.rigid_body.sensor.ForceTorqueSensor`): the weight and inertia of every link
beyond it at the simulated state and acceleration, plus the contact and ``external_wrench`` wrenches
acting beyond it, plus ``ft_sensor.bias`` and Gaussian noise of ``ft_sensor.noise``; a WrenchStamped in
the sensor's frame (its axes, moment about its origin), stamped as joint_states. A payload the
controller does not know is one more fixed link beyond the sensor in the simulator's URDF.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ...rigid_body.kinematics import frame_pose
from ...rigid_body.sensor import ForceTorqueSensor, sensor_problem
from ..common.contact_messages import WrenchWriter
from ..common.parameters import Parameter, float_list
from ..common.safety import cut

__all__ = ["FT_PARAMETERS", "FT_TOPICS", "FtSensorFields", "SimulatedSensor", "coerce_ft", "simulated_sensor"]


@dataclass(frozen=True)
class FtSensorFields:
    """The simulator Settings' ``ft_sensor.*`` fields (:data:`FT_PARAMETERS`)."""

    ft_sensor_frame: str = ""
    ft_sensor_bias: tuple = (0.0,) * 6
    ft_sensor_noise: tuple = (0.0,)


FT_PARAMETERS = (
    Parameter("ft_sensor.frame", "", "Link of a simulated force/torque sensor, attached by a fixed joint: publishes "
              "ft_sensor/wrench, the wrench that joint transmits (links beyond it, contact, external_wrench); "
              "empty = none.", "string", field="ft_sensor_frame"),
    Parameter("ft_sensor.bias", [0.0] * 6, "The sensor's bias, added to every reading: fx fy fz (N) tx ty tz (N m), "
              "sensor axes.", field="ft_sensor_bias"),
    Parameter("ft_sensor.noise", 0.0, "Standard deviation of the Gaussian noise on every reading: one number (N and "
              "N m) or two (force N, moment N m); 0 = none.", field="ft_sensor_noise"),
)

FT_TOPICS = (
    ("ft_sensor/wrench", "geometry_msgs/WrenchStamped", "out", "with ft_sensor.frame: the true reading of the "
     "sensor there (+ bias, noise), frame_id that link, with each joint_states"),
)


def coerce_ft(field: str, value):
    """An ``ft_sensor.*`` Settings field's value; ValueError names the parameter and the problem."""
    param = field.replace("ft_sensor_", "ft_sensor.")
    if field == "ft_sensor_frame":
        return str(value)
    if field == "ft_sensor_bias":
        return float_list(param, value, 6, strict=False)
    if field == "ft_sensor_noise":
        sigma = float_list(param, value, scalar=True, strict=False)
        if len(sigma) not in (1, 2) or any(s < 0 for s in sigma):
            raise ValueError(f"{param} must be one or two numbers >= 0 (force N, moment N m), got {list(sigma)}")
        return sigma
    raise KeyError(field)


class SimulatedSensor:
    """The truth of the sensor of the settings on one model; :meth:`reading` per published state."""

    def __init__(self, model, s, seed=None):
        self.model = model
        self.sensor = ForceTorqueSensor(model, s.ft_sensor_frame)
        self.frame = s.ft_sensor_frame
        fx, fy, fz, tx, ty, tz = s.ft_sensor_bias
        self.bias = np.array([tx, ty, tz, fx, fy, fz])  # [moment; force]
        noise = s.ft_sensor_noise
        self.sigma = np.array([noise[-1]] * 3 + [noise[0]] * 3)
        self._rng = np.random.default_rng(seed)
        self._writer = WrenchWriter(self.frame)

    def truth(self, q, qd, qdd, wrenches) -> np.ndarray:
        """The transmitted wrench as the sensor reads it, ``[moment; force]`` in its frame: the tool side's
        weight and inertia at ``(q, qd, qdd)`` plus the wrenches ``{link: [moment; force]}`` (world-aligned,
        moment about the link's origin: contact and external_wrench) on links beyond the sensor."""
        reading = self.sensor.reading(q, qd, qdd)
        beyond = {link: w for link, w in wrenches.items() if link in self.sensor.links}
        if beyond:
            origins = {link: frame_pose(self.model, q, link)[:3, 3] for link in beyond}
            reading += self.sensor.external_reading(frame_pose(self.model, q, self.frame), beyond, origins)
        return reading

    def reading(self, q, qd, qdd, wrenches) -> np.ndarray:
        """:meth:`truth` plus the bias and the noise."""
        noise = self._rng.standard_normal(6) * self.sigma if self.sigma.any() else 0.0
        return self.truth(q, qd, qdd, wrenches) + self.bias + noise


    def at_state(self, sim, external, plausibility) -> tuple:
        """``(reading, '')`` at the simulator ``sim``'s state under its applied effort, contact and the
        ``external`` wrenches; ``(None, reason)`` when it cannot be computed or is not believed."""
        try:
            motors = {} if sim.joint_stiffness is None else {"motor_q": sim.motor_q, "motor_qd": sim.motor_qd}
            qdd = sim.acceleration(sim.q, sim.qd, sim.applied_effort, external or None, **motors)
        except ValueError as exc:
            return None, f"not publishing ft_sensor/wrench: {exc}"
        qdd = qdd[0] if isinstance(qdd, tuple) else qdd
        wrenches = dict(external)
        for link, wrench in sim.contact_wrenches().items():
            wrenches[link] = wrenches[link] + wrench if link in wrenches else wrench
        reading = self.reading(sim.q, sim.qd, qdd, wrenches)
        problem = plausibility.wrench_problem(reading, f"the {self.frame} sensor's reading")
        return (None, f"not publishing ft_sensor/wrench: {problem}") if problem else (reading, "")


    def publish(self, publisher, sim, external, plausibility, sec: int, nanosec: int, problem) -> None:
        """:meth:`at_state` on ``publisher`` (ft_sensor/wrench, serialized), stamped ``sec, nanosec``; a
        reading that cannot be published is said through ``problem(kind, text, now_ns)``."""
        reading, why = self.at_state(sim, external, plausibility)
        if why:
            problem("ft_sensor", cut(why), time.monotonic_ns())
        else:
            publisher.publish(self._writer.serialize(sec, nanosec, reading))


def simulated_sensor(model, s):
    """The :class:`SimulatedSensor` of settings ``s``, None when off; ValueError names the problem."""
    if not s.ft_sensor_frame:
        return None
    problem = sensor_problem(model, s.ft_sensor_frame)
    if problem:
        raise ValueError(f"ft_sensor.frame: {problem}")
    return SimulatedSensor(model, s)
