"""robot_dynamics: rigid-body dynamics of robot arms from URDF (importable without ROS).

Conventions: ``q, qd, qdd, tau`` have shape ``(..., n)`` in ``model.joint_names`` order; SI
units; spatial vectors ``[angular; linear]``; ``model.gravity`` is the physical gravitational
acceleration (default ``(0, 0, -9.81)``) and the holding torque is ``+gravity_torques(q)``.
"""

from .jit_cache import drop_stale_kernels, lock_cache_saves

drop_stale_kernels()  # before any kernel loads from numba's cache

from . import examples
from .elastic import elastic_energy, elastic_forward_dynamics, elastic_inverse_dynamics
from .dynamics import bias_forces, coriolis_matrix, forward_dynamics, gravity_torques, inverse_dynamics, mass_matrix
from .formulations import (
    christoffel_coriolis_matrix, christoffel_symbols, closed_form_terms, dalembert_terms, inertia_bounds, lagrange_euler_terms,
)
from .kinematics import frame_pose, jacobian, kinetic_energy, operational_space_inertia, potential_energy
from .model import RobotModel
from .regressor import inertial_parameters, regressor
from .task_space import frame_acceleration, frame_velocity, jacobian_derivative_times_rate, task_space_bias
from .urdf import URDFError, load_urdf

lock_cache_saves()  # every compiled module is imported by now (this imports the simulator's too)

__all__ = [
    "RobotModel", "URDFError", "load_urdf",
    "inverse_dynamics", "gravity_torques", "bias_forces", "mass_matrix", "coriolis_matrix", "forward_dynamics",
    "frame_pose", "jacobian", "kinetic_energy", "potential_energy", "operational_space_inertia",
    "frame_velocity", "frame_acceleration", "jacobian_derivative_times_rate", "task_space_bias",
    "regressor", "inertial_parameters",
    "lagrange_euler_terms", "closed_form_terms", "christoffel_symbols", "christoffel_coriolis_matrix", "dalembert_terms",
    "inertia_bounds",
    "elastic_forward_dynamics", "elastic_inverse_dynamics", "elastic_energy",
    "examples",
]
