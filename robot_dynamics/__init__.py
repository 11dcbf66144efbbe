"""robot_dynamics: rigid-body dynamics of robot arms from URDF (importable without ROS).

Conventions: ``q, qd, qdd, tau`` have shape ``(..., n)`` in ``model.joint_names`` order; SI
units; spatial vectors ``[angular; linear]``; ``model.gravity`` is the physical gravitational
acceleration (default ``(0, 0, -9.81)``) and the holding torque is ``+gravity_torques(q)``.

Importing the package loads none of its modules: each name below loads its module (and numba,
with the kernels numba has cached) when first used, so that a program that only needs part of
it, a node's ``--help``, or a launch file starts at once.
"""

import importlib

#: the public names and the module of each
_PUBLIC = {
    "RobotModel": "rigid_body.model", "URDFError": "description.urdf", "load_urdf": "description.urdf",
    **dict.fromkeys(("Data", "compute_terms", "GRAVITY", "BIAS", "MASS", "WORLD", "MOMENTUM"), "rigid_body.data"),
    **dict.fromkeys(("inverse_dynamics", "gravity_torques", "bias_forces", "mass_matrix", "coriolis_matrix",
                     "forward_dynamics"), "rigid_body.dynamics"),
    **dict.fromkeys(("frame_pose", "jacobian", "kinetic_energy", "potential_energy", "operational_space_inertia"),
                    "rigid_body.kinematics"),
    **dict.fromkeys(("frame_velocity", "frame_acceleration", "jacobian_derivative_times_rate", "task_space_bias"),
                    "rigid_body.task_space"),
    "regressor": "rigid_body.regression", "inertial_parameters": "rigid_body.regression",
    **dict.fromkeys(("lagrange_euler_terms", "closed_form_terms", "christoffel_symbols", "christoffel_coriolis_matrix",
                     "dalembert_terms", "inertia_bounds"), "rigid_body.formulations"),
    **dict.fromkeys(("elastic_forward_dynamics", "elastic_inverse_dynamics", "elastic_energy"), "rigid_body.elastic"),
}
__all__ = [*_PUBLIC, "examples"]


def __getattr__(name):
    if name == "examples":
        return importlib.import_module(".description.examples", __name__)
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    globals()[name] = value  # (found directly from now on)
    return value


def __dir__():
    return sorted({*globals(), *__all__})
