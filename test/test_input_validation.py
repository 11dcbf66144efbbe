"""Input checks of every public function (``batches.as_states``, ``kernels.finite``): NaN, inf, wrong
lengths, bad wrenches and unknown frames are ValueErrors naming the problem."""

import numpy as np
import pytest

import robot_dynamics as rd

from test_urdf import arm


# ------------------------------------------------------------------------------------------------
# input validation
# ------------------------------------------------------------------------------------------------


def _functions(model):
    n = model.nv
    ok = np.full(n, 0.1)
    return {
        "inverse_dynamics": lambda q, v, a: rd.inverse_dynamics(model, q, v, a),
        "gravity_torques": lambda q, v, a: rd.gravity_torques(model, q),
        "bias_forces": lambda q, v, a: rd.bias_forces(model, q, v),
        "mass_matrix": lambda q, v, a: rd.mass_matrix(model, q),
        "coriolis_matrix": lambda q, v, a: rd.coriolis_matrix(model, q, v),
        "forward_dynamics": lambda q, v, a: rd.forward_dynamics(model, q, v, a),
        "frame_pose": lambda q, v, a: rd.frame_pose(model, q, "fore"),
        "jacobian": lambda q, v, a: rd.jacobian(model, q, "fore"),
        "jacobian_local": lambda q, v, a: rd.jacobian(model, q, "fore", reference="local"),
        "kinetic_energy": lambda q, v, a: rd.kinetic_energy(model, q, v),
        "potential_energy": lambda q, v, a: rd.potential_energy(model, q),
        "regressor": lambda q, v, a: rd.regressor(model, q, v, a),
    }, ok


INPUT_FUNCTIONS = [
    "inverse_dynamics", "gravity_torques", "bias_forces", "mass_matrix", "coriolis_matrix", "forward_dynamics",
    "frame_pose", "jacobian", "jacobian_local", "kinetic_energy", "potential_energy", "regressor",
]


@pytest.mark.parametrize("function", INPUT_FUNCTIONS)
@pytest.mark.parametrize("bad", ["nan", "inf", "short", "long", "batch_nan"])
def test_bad_q_raises_value_error(function, bad):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    q = {
        "nan": np.array([np.nan, 0.1]),
        "inf": np.array([0.1, -np.inf]),
        "short": np.array([0.1]),
        "long": np.array([0.1, 0.2, 0.3]),
        "batch_nan": np.array([[0.1, 0.2], [0.3, np.nan]]),
    }[bad]
    v = ok if bad != "batch_nan" else np.tile(ok, (2, 1))
    with pytest.raises(ValueError):
        fns[function](q, v, v)


@pytest.mark.parametrize("function", ["inverse_dynamics", "bias_forces", "coriolis_matrix", "forward_dynamics",
                                      "kinetic_energy", "regressor"])
@pytest.mark.parametrize("bad", ["nan", "short"])
def test_bad_velocity_raises_value_error(function, bad):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    v = np.array([0.1, np.nan]) if bad == "nan" else np.array([0.1])
    with pytest.raises(ValueError):
        fns[function](ok, v, ok)


@pytest.mark.parametrize("function", ["inverse_dynamics", "forward_dynamics", "regressor"])
def test_bad_third_argument_raises_value_error(function):
    model = rd.load_urdf(arm())
    fns, ok = _functions(model)
    for bad in (np.array([np.inf, 0.0]), np.array([0.0, 0.0, 0.0])):
        with pytest.raises(ValueError):
            fns[function](ok, ok, bad)


def test_bad_external_wrench_raises_value_error():
    model = rd.load_urdf(arm())
    ok = np.full(2, 0.1)
    for wrench in ([np.nan, 0, 0, 0, 0, 0], [1, 2, 3]):
        with pytest.raises(ValueError):
            rd.inverse_dynamics(model, ok, ok, ok, external_wrenches={"fore": wrench})
        with pytest.raises(ValueError):
            rd.forward_dynamics(model, ok, ok, ok, external_wrenches={"fore": wrench})


def test_unknown_frame_is_named():
    model = rd.load_urdf(arm())
    for call in (
        lambda: rd.frame_pose(model, [0.1, 0.2], "hand"),
        lambda: rd.jacobian(model, [0.1, 0.2], "hand"),
        lambda: rd.inverse_dynamics(model, [0.1, 0.2], [0, 0], [0, 0], external_wrenches={"hand": np.zeros(6)}),
    ):
        with pytest.raises((ValueError, KeyError), match="hand"):
            call()
    with pytest.raises(ValueError):
        rd.jacobian(model, [0.1, 0.2], "fore", reference="body")
