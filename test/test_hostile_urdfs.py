"""URDF numbers that overflow double precision, and URDF meanings the model cannot keep: each refused
at load with a URDFError naming the joint or transmission and the value, or warned about; never a
traceback, never a model that prints nan or inf as if fine."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import robot_dynamics as rd

LIMIT = '<limit lower="-2" upper="2" effort="10" velocity="2"/>'
DRAKE = ' xmlns:drake="http://drake.mit.edu"'


def _link(name, mass="1", x="0.5"):
    return (f'<link name="{name}"><inertial><origin xyz="{x} 0 0"/><mass value="{mass}"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')


def _joint(name, parent, child, kind="revolute", extra=""):
    axis = '<axis xyz="1 0 0"/>' if kind == "prismatic" else '<axis xyz="0 1 0"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="1 0 0"/>{axis}{"" if kind == "continuous" else LIMIT}{extra}</joint>')


def chain(j2=None, j3=None, transmission="", kinds=("revolute", "revolute", "revolute"), namespace=DRAKE, mass="1",
          x="0.5"):
    """Three joints j1 -> j2 -> j3; ``j2``/``j3``: their <mimic> multiplier of the joint before."""
    mimic = [f'<mimic joint="j{k}" multiplier="{m}"/>' if m is not None else "" for k, m in ((1, j2), (2, j3))]
    return (f'<robot name="chain"{namespace}><link name="base"/>{_link("l1", mass, x)}{_link("l2")}{_link("l3")}'
            + _joint("j1", "base", "l1", kinds[0]) + _joint("j2", "l1", "l2", kinds[1], mimic[0])
            + _joint("j3", "l2", "l3", kinds[2], mimic[1]) + transmission + "</robot>")


def transmission(body, joint="j1"):
    return (f'<transmission name="t1"><type>transmission_interface/SimpleTransmission</type><joint name="{joint}"/>'
            f'<actuator name="m1">{body}</actuator></transmission>')


OVERFLOWING = {
    "reduction-1e200": (chain(transmission=transmission("<mechanicalReduction>1e200</mechanicalReduction>")),
                        "transmission 't1' of joint 'j1' has the gear ratio <mechanicalReduction> 1e+200"),
    "ratio-1e150-rotor-1e10": (chain(transmission=transmission(
        '<drake:gear_ratio value="1e150"/><drake:rotor_inertia value="1e10"/>')),
        "transmission 't1' of joint 'j1' has the gear ratio <drake:gear_ratio> 1e+150"),
    "rotor-1e300": (chain(transmission=transmission('<drake:gear_ratio value="1e6"/><drake:rotor_inertia value="1e300"/>')),
                    "transmission 't1': the armature r^2 J_m of 'j1' overflows (gear factor r^2 = 1e+12, J_m = 1e+300"),
    "mimic-chain-1e200x1e200": (chain(j2="1e200", j3="1e200"), "joint 'j2' follows 'j1' with the factor 1e+200"),
    "mimic-chain-1e4x1e4": (chain(j2="1e4", j3="1e4"),
                            "joint 'j3' follows 'j1' with the factor 1e+08 (through its chain of couplings)"),
    "multiplier-1e300": (chain(j2="1e300"), "joint 'j2' follows 'j1' with the factor 1e+300 (its <mimic> multiplier)"),
    "mass-1e307-at-1000-m": (chain(mass="1e307", x="1000"), "the mass matrix overflows at q = 0: joint 'j1'"),
}


@pytest.mark.parametrize("urdf, text", OVERFLOWING.values(), ids=OVERFLOWING.keys())
def test_overflowing_values_are_refused_at_load_naming_the_joint_and_value(urdf, text):
    with pytest.raises(rd.URDFError) as error:
        rd.load_urdf(urdf)
    assert text in str(error.value)


@pytest.mark.parametrize("name", ["reduction-1e200", "ratio-1e150-rotor-1e10", "mimic-chain-1e200x1e200",
                                  "multiplier-1e300"])
def test_info_says_one_line_and_never_prints_nan(tmp_path, name):
    urdf, text = OVERFLOWING[name]
    path = tmp_path / "robot.urdf"
    path.write_text(urdf)
    done = subprocess.run([sys.executable, "-m", "robot_dynamics.cli", "info", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and text in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_the_largest_factors_allowed_load_with_finite_dynamics():
    model = rd.load_urdf(chain(j2="1e3", j3="1e3", transmission=transmission(
        '<drake:gear_ratio value="-1e6"/><drake:rotor_inertia value="1e-6"/>')))
    assert model.couplings["j3"] == ((("j1", 1e6),), 0.0)
    assert model.armature[0] == pytest.approx(1e6)  # (1e6)^2 1e-6
    assert np.all(np.isfinite(rd.mass_matrix(model, np.zeros(1))))


# --- item 8: meanings the model cannot keep ----------------------------------------------------------

def test_a_coupling_a_whole_turn_of_a_continuous_joint_moves_is_warned_about():
    """A wrapped angle of j1 (theta and theta - 2 pi) would give j2 two angles, hence two gravity torques; a
    lead screw (a prismatic joint following a continuous one) is real, so it is a warning, not a refusal."""
    with pytest.warns(UserWarning, match=r"joint 'j2' follows the continuous joint 'j1' with the factor 0.5: a whole "
                                         r"turn of 'j1' moves 'j2' by 180 degrees, so its position must be the "
                                         r"multi-turn angle, never wrapped into \[-pi, pi\)"):
        model = rd.load_urdf(chain(j2="0.5", kinds=("continuous", "continuous", "revolute")))
    q = np.full(model.nv, 0.3)
    turned = q + 2 * np.pi * (np.array(model.joint_names) == "j1")
    assert np.abs(rd.gravity_torques(model, turned) - rd.gravity_torques(model, q)).max() > 1.0  # two torques
    with pytest.warns(UserWarning, match="joint 'j2' follows the continuous joint 'j1' with the factor 1: a whole "
                                         "turn of 'j1' moves 'j2' by 6.28319 m"):
        rd.load_urdf(chain(j2="1", kinds=("continuous", "prismatic", "revolute")))
    # through a chain: j3 = 0.5 * 3 * j1
    with pytest.warns(UserWarning, match="joint 'j3' follows the continuous joint 'j1' with the factor 1.5"):
        rd.load_urdf(chain(j2="3", j3="0.5", kinds=("continuous", "revolute", "revolute")))


def test_couplings_a_whole_turn_keeps_load_without_a_warning():
    for multiplier, kinds in (("2", ("continuous", "continuous", "revolute")), ("-1", ("continuous", "revolute", "revolute")),
                              ("0.5", ("revolute", "continuous", "revolute"))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = rd.load_urdf(chain(j2=multiplier, kinds=kinds))
        if kinds[0] == "continuous":  # the same torque a whole turn of j1 later
            q = np.full(model.nv, 0.3)
            turned = q + 2 * np.pi * (np.array(model.joint_names) == "j1")
            np.testing.assert_allclose(rd.gravity_torques(model, turned), rd.gravity_torques(model, q), atol=1e-12)


def test_a_gear_ratio_of_zero_with_a_rotor_is_warned_about():
    with pytest.warns(UserWarning, match="transmission 't1' of joint 'j1' has the gear ratio 0 with a rotor: a motor "
                                         "that does not turn reflects nothing, so its rotor is ignored"):
        model = rd.load_urdf(chain(transmission=transmission('<drake:gear_ratio value="0"/><drake:rotor_inertia value="1e-4"/>')))
    assert model.armature.tolist() == [0.0, 0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ratio of 0 without a rotor loses nothing: quiet
        rd.load_urdf(chain(transmission=transmission("<mechanicalReduction>0</mechanicalReduction>")))


def test_drake_tags_without_their_namespace_are_warned_about():
    plain = transmission('<gear_ratio value="100"/><rotor_inertia value="1e-4"/>')
    with pytest.warns(UserWarning, match=r"transmission 't1' has <gear_ratio>, <rotor_inertia> without the drake: "
                                         "namespace: not read"):
        model = rd.load_urdf(chain(transmission=plain, namespace=""))
    assert model.armature.tolist() == [0.0, 0.0, 0.0]
    read = rd.load_urdf(chain(transmission=plain.replace("<gear_ratio", "<drake:gear_ratio")
                              .replace("<rotor_inertia", "<drake:rotor_inertia")))
    assert read.armature[0] == pytest.approx(100**2 * 1e-4)


# --- the node -----------------------------------------------------------------------------------------

def test_the_node_ends_with_a_fatal_line_naming_the_transmission(tmp_path):
    pytest.importorskip("rclpy")
    from ros_helpers import NodeProcess, write_params

    params = write_params(tmp_path / "params.yaml", {"robot_description": OVERFLOWING["reduction-1e200"][0]})
    process = NodeProcess("dynamics_node", tmp_path / "node.log", params, namespace="/overflow")
    try:
        code = process.process.wait(60.0)
    finally:
        process.stop()
    log = process.log()
    assert code == 2, log
    fatal = [line for line in log.splitlines() if "FATAL" in line]
    assert fatal and "transmission 't1' of joint 'j1' has the gear ratio <mechanicalReduction> 1e+200" in fatal[0], log
    assert "Traceback" not in log
