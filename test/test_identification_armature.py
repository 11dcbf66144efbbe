"""Identification of the armature (reflected rotor inertia r^2 J_m) on a geared arm of our own: which
armatures the data can separate from the links' inertia, the estimate against the simulated real
robot, and identified.urdf writing it back through the <transmission>s (gear ratios kept)."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import design_excitation, identify, read_trajectory_csv, write_csv
from robot_dynamics.identification.excitation import identified_regressor, random_states
from robot_dynamics.identification.identify import full_problem, rms, structural_base
from robot_dynamics.identification.parameters import base_parameter_names
from robot_dynamics.identification.report import identified_urdf, parameter_table
from robot_dynamics.identification.simulated import perturbed_urdf, record
from test_identification import read_recording_from_arrays

# A yaw-pitch-pitch arm.  Its three transmissions use each way the loader reads a gear ratio: Drake's
# <drake:gear_ratio>, <mechanicalReduction> in the actuator, and in the transmission itself; the
# shoulder's motor also has viscous damping r^2 B_m = 0.5.
GEARED_ARM = """<?xml version="1.0"?>
<robot name="geared_arm" xmlns:drake="http://drake.mit.edu">
  <link name="base"/>
  <joint name="yaw" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-2.8" upper="2.8" effort="200" velocity="2"/>
    <dynamics damping="0.2" friction="0.3"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0.01 0 0.15"/><mass value="3"/>
      <inertia ixx="0.025" ixy="0" ixz="0" iyy="0.025" iyz="0" izz="0.006"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="upper"/><child link="arm"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="200" velocity="2"/>
    <dynamics damping="0.2" friction="0.3"/>
  </joint>
  <link name="arm">
    <inertial><origin xyz="0.2 0 0.01"/><mass value="2"/>
      <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.028" iyz="0" izz="0.028"/></inertial>
  </link>
  <joint name="elbow" type="revolute">
    <parent link="arm"/><child link="forearm"/><origin xyz="0.4 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="100" velocity="2"/>
    <dynamics damping="0.2" friction="0.3"/>
  </joint>
  <link name="forearm">
    <inertial><origin xyz="0.15 0.01 0"/><mass value="1"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.008" iyz="0" izz="0.008"/></inertial>
  </link>
  <transmission name="yaw_drive">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="yaw"/>
    <actuator name="yaw_motor"><drake:gear_ratio value="100"/><drake:rotor_inertia value="3e-5"/></actuator>
  </transmission>
  <transmission name="shoulder_drive">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="shoulder"><hardwareInterface>hardware_interface/EffortJointInterface</hardwareInterface></joint>
    <actuator name="shoulder_motor"><mechanicalReduction>50</mechanicalReduction>
      <drake:rotor_inertia value="8e-5"/><drake:rotor_damping value="2e-4"/></actuator>
  </transmission>
  <transmission name="elbow_drive">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="elbow"/>
    <mechanicalReduction>30</mechanicalReduction>
    <actuator name="elbow_motor"><drake:rotor_inertia value="5e-5"/></actuator>
  </transmission>
</robot>
"""
URDF_ARMATURE = [0.3, 0.2, 0.045]               # r^2 J_m: 100^2 3e-5, 50^2 8e-5, 30^2 5e-5
REAL_ARMATURE = {"yaw": 0.36, "shoulder": 0.15, "elbow": 0.055}


def without_transmissions(xml, *joints):
    root = ET.fromstring(xml)
    for transmission in root.findall("transmission"):
        if transmission.find("joint").get("name") in joints:
            root.remove(transmission)
    return ET.tostring(root, encoding="unicode")


@pytest.fixture(scope="module")
def geared(tmp_path_factory):
    path = tmp_path_factory.mktemp("geared") / "geared_arm.urdf"
    path.write_text(GEARED_ARM)
    return path, rd.load_urdf(path)


@pytest.fixture(scope="module")
def geared_run(geared):
    """The real robot: masses, centres of mass, inertias and friction off as in the walk-through, and
    rotor inertias off by 20-25 %; 20 s at 500 Hz with 1 % effort noise."""
    path, model = geared
    real = rd.load_urdf(perturbed_urdf(path, seed=3)).with_armature(REAL_ARMATURE)
    excitation = design_excitation(model, period=5.0, iterations=5)
    return real, record(real, model, excitation, 20.0, torque_noise=0.01, seed=1)


def test_the_controller_compensates_the_motors_damping_too(geared):
    """The shoulder motor's damping r^2 B_m = 0.5 acts on the joint like the joint's own 0.2 (Spong
    Ex. 6.1): the simulator applies both, and the computed-torque law with friction compensation
    (the dynamics node's compensate_friction) adds both, so with the exact model the loop tracks to
    the integration's error (left out, the shoulder and elbow lag by ~2e-3 rad)."""
    _, model = geared
    np.testing.assert_allclose(model.viscous_damping, [0.2, 0.7, 0.2])
    excitation = design_excitation(model, period=5.0, iterations=0)
    run = record(model, model, excitation, 5.0, torque_noise=0.0, position_noise=0.0)
    q_desired = np.array([excitation(t)[0] for t in run.t])
    assert np.sqrt(np.mean((run.q - q_desired) ** 2, axis=0)).max() < 1e-4


def _truth(real, samples):
    """The real robot's torques, noise-free, at ``samples`` (its Coulomb term low-passed like tau)."""
    return (rd.inverse_dynamics(real, samples.q, samples.qd, samples.qdd)
            + real.viscous_damping * samples.qd + real.friction * samples.coulomb)


def test_the_armature_is_estimated_where_the_urdf_has_one_or_everywhere_with_armature(geared):
    """The first joint's rotor and its link turn alike (both add to tau_1 a multiple of qdd_1), and so
    does the shoulder's rotor with the arm's inertia about the shoulder axis, which no other joint
    feels: only their sums are identifiable.  The elbow's is a base parameter of its own."""
    path, model = geared
    np.testing.assert_allclose(model.armature, URDF_ARMATURE, rtol=1e-12)
    problem = full_problem(model, friction=False)
    expressions = base_parameter_names(problem.names, *structural_base(problem))
    assert "armature elbow" in expressions
    assert "armature shoulder" not in expressions and "armature yaw" not in expressions
    assert any("armature shoulder" in e and "Iyy shoulder" in e for e in expressions)
    assert all("Izz yaw" in e for e in expressions if "armature yaw" in e)

    partly = rd.load_urdf(without_transmissions(GEARED_ARM, "elbow"))
    assert [name for name in full_problem(partly, friction=False).names if name.startswith("armature")] == [
        "armature yaw", "armature shoulder"]
    assert [name for name in full_problem(partly, friction=False, armature=True).names
            if name.startswith("armature")] == ["armature yaw", "armature shoulder", "armature elbow"]

    # the excitation's regressor has the estimated rotors' columns, qdd of their coordinates
    q, qd, qdd = random_states(partly, 4)
    Y = identified_regressor(partly, q, qd, qdd, rotors=[0, 1])
    assert Y.shape == (4 * 3, 30 + 2)
    np.testing.assert_array_equal(Y[:, 30:], np.column_stack([np.where(np.arange(12) % 3 == c, qdd.ravel(), 0)
                                                              for c in (0, 1)]))


def test_armature_identified_on_a_geared_arm(geared, geared_run):
    path, model = geared
    real, run = geared_run
    estimate, check = identify(read_recording_from_arrays(run), model, friction=True)
    armature = estimate.armature()
    assert estimate.problem.armature_estimated.all()
    # the separable one within 3 %, every combination holding an armature within 4 of its standard deviations
    assert abs(armature[2] - REAL_ARMATURE["elbow"]) < 0.03 * REAL_ARMATURE["elbow"]
    independent, dependent, K = structural_base(estimate.problem)
    real_x = np.concatenate([rd.inertial_parameters(real), real.viscous_damping, real.friction])
    real_base = real_x[independent] + K @ real_x[dependent]
    with_rotor = [k for k, name in enumerate(estimate.base_names) if "armature" in name]
    assert len(with_rotor) == 4
    error = np.abs(estimate.base_consistent - real_base)[with_rotor]
    assert np.all(error < 4 * estimate.base_std[with_rotor]), (error, estimate.base_std[with_rotor])
    assert np.all(armature >= 0)
    # held-out torques within 1 % of each joint's RMS torque, against the noise-free truth and the measurement
    assert np.all(rms(check.identified - _truth(real, check.samples)) < 0.01 * check.rms_torque)
    assert np.all(check.rms_identified < 0.01 * check.rms_torque)
    assert np.all(check.rms_input > 5 * check.rms_identified)
    table = parameter_table(estimate, check)
    assert "armature" in table and f"{armature[2]:12.5g} (identified)" in table


def test_identified_urdf_writes_the_armature_back_through_the_transmissions(tmp_path, geared, geared_run):
    """Loading identified.urdf gives the identified armature (r^2 J_m, each gear ratio kept) and
    viscous damping (the motor keeps its r^2 B_m, the joint gets the rest)."""
    path, model = geared
    _, run = geared_run
    estimate, _ = identify(read_recording_from_arrays(run), model, friction=True)
    xml = identified_urdf(path, estimate)
    back = rd.load_urdf(xml)
    np.testing.assert_allclose(back.armature, estimate.armature(), rtol=1e-8)
    np.testing.assert_allclose(rd.inertial_parameters(back)[:30], estimate.body_parameters().ravel(), rtol=1e-8, atol=1e-12)
    damping, friction = estimate.friction()
    np.testing.assert_allclose(back.damping + back.motor_damping, damping, rtol=1e-8)
    np.testing.assert_allclose(back.motor_damping, model.motor_damping)
    np.testing.assert_allclose(back.friction, friction, rtol=1e-8)
    root = ET.fromstring(xml)
    drake = "{http://drake.mit.edu}"
    shoulder = root.find("transmission[@name='shoulder_drive']/actuator")
    assert shoulder.findtext("mechanicalReduction") == "50"
    assert float(shoulder.find(drake + "rotor_inertia").get("value")) == pytest.approx(estimate.armature()[1] / 50**2, rel=1e-8)
    assert root.find("transmission[@name='yaw_drive']/actuator/" + drake + "gear_ratio").get("value") == "100"
    assert "xmlns:drake=\"http://drake.mit.edu\"" in xml and "ns0:" not in xml


def test_armature_everywhere_for_a_urdf_without_transmissions(tmp_path, geared_run):
    """``armature=True`` (``--armature``) on the URDF without its transmissions: every joint's armature
    estimated (prior 0), written as a new transmission of ratio 1 per joint."""
    real, run = geared_run
    bare_xml = without_transmissions(GEARED_ARM, "yaw", "shoulder", "elbow")
    bare = rd.load_urdf(bare_xml)
    assert not bare.armature.any()
    estimate, check = identify(read_recording_from_arrays(run), bare, friction=True, armature=True)
    assert estimate.problem.armature_estimated.all()
    assert abs(estimate.armature()[2] - REAL_ARMATURE["elbow"]) < 0.03 * REAL_ARMATURE["elbow"]
    assert np.all(rms(check.identified - _truth(real, check.samples)) < 0.01 * check.rms_torque)
    without, check_without = identify(read_recording_from_arrays(run), bare, friction=True)
    assert not without.problem.armature_estimated.any() and not without.armature().any()
    assert check_without.rms_identified[2] > 3 * check.rms_identified[2]  # the elbow's rotor has nowhere else to go

    source = tmp_path / "bare.urdf"
    source.write_text(bare_xml)
    xml = identified_urdf(source, estimate)
    back = rd.load_urdf(xml)
    np.testing.assert_allclose(back.armature, estimate.armature(), rtol=1e-8)
    added = ET.fromstring(xml).findall("transmission")
    assert [t.get("name") for t in added] == ["yaw_identified_rotor", "shoulder_identified_rotor", "elbow_identified_rotor"]
    assert all(t.findtext("actuator/mechanicalReduction") == "1" for t in added)


def test_cli_identify_armature(tmp_path, geared_run):
    from test_identification import _cli

    _, run = geared_run
    (tmp_path / "bare.urdf").write_text(without_transmissions(GEARED_ARM, "yaw", "shoulder", "elbow"))
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    done = _cli("identify", "run.csv", "--urdf", "bare.urdf", "--friction", "--armature", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "out" / "parameters.txt").read_text()
    assert table.count("(identified)") == 3 and "armature elbow" in table
    assert np.all(rd.load_urdf(tmp_path / "out" / "identified.urdf").armature > 0)
    done = _cli("identify", "run.csv", "--urdf", "bare.urdf", "--armature", "--payload", "forearm", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "identify the robot (with --armature) first" in done.stderr
    done = _cli("excite", "bare.urdf", "--duration", "5", "--period", "5", "--armature", "--output", "excitation.csv",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "condition number of the base regressor" in done.stdout and read_trajectory_csv(tmp_path / "excitation.csv").duration == 5
