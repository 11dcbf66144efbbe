"""What ``robot-dynamics identify`` writes: the identified URDF, the payload parameters, the
parameter table and the validation plot."""

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..description.transmissions import DRAKE_NAMESPACE, SIMPLE_TRANSMISSION, rotors
from .parameters import PARAMETERS_PER_BODY, mass_com_inertia

SUFFIX = "_payload"  # the identified payload's link in identified.urdf: <link><SUFFIX>
ROTOR_SUFFIX = "_identified_rotor"  # a transmission added for an armature the URDF had none for

ET.register_namespace("drake", DRAKE_NAMESPACE)  # written as <drake:rotor_inertia>, as Drake and the loader read it


def _number(value):
    return f"{float(value):.9g}"


def _inertial_element(theta):
    """``<inertial>`` of ten parameters about the link frame's origin: origin at the CoM, axes the link's."""
    mass, com, inertia = mass_com_inertia(theta)
    inertial = ET.Element("inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(map(_number, com)), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_number(max(mass, 0.0)))
    ET.SubElement(inertial, "inertia", **{key: _number(inertia[i, j]) for key, (i, j) in zip(
        ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)))})
    return inertial


def _set_inertial(link, theta):
    for old in link.findall("inertial"):
        link.remove(old)
    if theta is not None:
        link.insert(0, _inertial_element(theta))


def _parse(urdf_path):
    return ET.parse(urdf_path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))


def identified_urdf(urdf_path, estimate, payload_link=None):
    """The input URDF's XML with the identified ``<inertial>``s and ``<dynamics>``.

    Whole-robot identification: each moving body's inertial parameters (its fixed children
    included, as the model folds them) go to the link of its joint, and the fixed children's
    own ``<inertial>`` are removed (their mass is now in that link).  Payload identification:
    the robot is unchanged and the payload is a new link ``<link>_payload`` on a fixed joint.
    """
    problem, model = estimate.problem, estimate.problem.model
    tree = _parse(urdf_path)
    root = tree.getroot()
    links = {link.get("name"): link for link in root.findall("link")}
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    if payload_link is None:
        bodies = estimate.body_parameters()
        body_links = {joints[name].find("child").get("link"): i for i, name in enumerate(model.body_joints)}
        for name in model.link_names:
            if model.frames[name].body >= 0:
                i = body_links.get(name)
                _set_inertial(links[name], None if i is None else bodies[i])
    else:
        link = ET.SubElement(root, "link", name=payload_link + SUFFIX)
        _set_inertial(link, estimate.x[:10])
        joint = ET.SubElement(root, "joint", name=payload_link + SUFFIX + "_joint", type="fixed")
        ET.SubElement(joint, "parent", link=payload_link)
        ET.SubElement(joint, "child", link=payload_link + SUFFIX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the transmissions it skips were warned about when the URDF was loaded
        motors = rotors(root, model)
    if problem.armature_estimated.any():
        _set_armature(root, model, motors, estimate.armature(), problem.armature_estimated)
    if not problem.friction and payload_link is None:  # a rigid-body fit: no friction (pipeline.friction_note)
        for name in model.joint_names:
            dynamics = joints[name].find("dynamics")
            if dynamics is not None:
                dynamics.set("damping", "0")
                dynamics.set("friction", "0")
    if problem.friction:
        damping, friction = estimate.friction()
        joint_damping = _split_viscous_damping(model, motors, damping)
        for name, d, f in zip(model.joint_names, joint_damping, friction):
            dynamics = joints[name].find("dynamics")
            if dynamics is None:
                dynamics = ET.SubElement(joints[name], "dynamics")
            dynamics.set("damping", _number(d))
            dynamics.set("friction", _number(f))
    ET.indent(tree)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _set_armature(root, model, motors, armature, estimated):
    """Each estimated armature written as its rotors' ``J_m`` (armature = sum of gain J_m, gain = r^2).

    Every rotor of a coordinate has its ``J_m`` scaled by the same factor (the gears, and the
    shares of several rotors, kept); rotors with no ``J_m`` yet get equal ones; a coordinate with no
    transmission gets a new SimpleTransmission of ratio 1 whose rotor inertia is the armature.
    """
    for c in np.flatnonzero(estimated):
        own = [motor for motor in motors if motor.coordinate == c]
        before = sum(motor.gain * motor.rotor_inertia for motor in own)
        gains = sum(motor.gain for motor in own)
        if before > 0:
            for motor in own:
                motor.set("rotor_inertia", motor.rotor_inertia * armature[c] / before)
        elif gains > 0:
            for motor in own:
                motor.set("rotor_inertia", armature[c] / gains)
        else:
            joint = model.joint_names[c]
            transmission = ET.SubElement(root, "transmission", name=joint + ROTOR_SUFFIX)
            ET.SubElement(transmission, "type").text = f"transmission_interface/{SIMPLE_TRANSMISSION}"
            ET.SubElement(transmission, "joint", name=joint)
            actuator = ET.SubElement(transmission, "actuator", name=joint + ROTOR_SUFFIX + "_motor")
            ET.SubElement(actuator, "mechanicalReduction").text = "1"
            ET.SubElement(actuator, f"{{{DRAKE_NAMESPACE}}}rotor_inertia", value=_number(armature[c]))


def _split_viscous_damping(model, motors, damping):
    """The joints' ``<dynamics damping>`` for identified viscous damping ``damping`` (the joint's and
    its motors' ``r^2 B_m`` together): the motors keep theirs and the joint gets the rest; where the
    rest would be negative the joint gets 0 and the motors' ``B_m`` are scaled down to the total."""
    motor_damping = np.array(model.motor_damping, dtype=float)
    for c in np.flatnonzero(damping < motor_damping):
        for motor in motors:
            if motor.coordinate == c:
                motor.set("rotor_damping", motor.rotor_damping * damping[c] / motor_damping[c])
    return np.maximum(damping - motor_damping, 0.0)


def payload_yaml(link, theta, node="robot_dynamics"):
    """The dynamics node's ``payload.*`` parameters for ``--params-file`` (floats written as floats)."""
    mass, com, inertia = mass_com_inertia(theta)
    six = [inertia[0, 0], inertia[0, 1], inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]]
    floats = lambda values: "[" + ", ".join(repr(float(v)) for v in values) + "]"  # noqa: E731
    return (f"# the payload identified by robot-dynamics identify; node name {node!r} is the dynamics node's default\n"
            f"{node}:\n  ros__parameters:\n    payload:\n"
            f"      link: \"{link}\"\n      mass: {float(max(mass, 0.0))!r}\n"
            f"      com: {floats(com)}\n      inertia: {floats(six)}\n")


def parameter_table(estimate, validation=None):
    """The text table: condition, base parameters with uncertainties, identified bodies and friction."""
    lines = [f"samples: {estimate.samples} states; condition number of the weighted base regressor: {estimate.condition:.4g}",
             "residual standard deviation per joint: " + ", ".join(
                 f"{name} {s:.4g}" for name, s in zip(estimate.problem.model.joint_names, estimate.joint_sigma)),
             "", "base parameters (least squares, its standard deviation, and the physically consistent estimate; "
                 "the standard deviations allow for residuals correlated over "
                 f"{estimate.correlation_time:.3g} s: Newey-West, docs/identification.md):",
             f"{'least squares':>14} {'std':>11} {'std %':>8} {'consistent':>14}  parameter"]
    for name, value, std, relative, consistent in zip(estimate.base_names, estimate.base_ols, estimate.base_std,
                                                      estimate.relative_std, estimate.base_consistent):
        lines.append(f"{value:14.6g} {std:11.3g} {relative:8.3g} {consistent:14.6g}  {name}")
    model = estimate.problem.model
    if estimate.problem.blocks == len(model.body_joints):
        lines += ["", "identified bodies (physically consistent; inertia about the CoM, body axes):",
                  f"{'body joint':24} {'mass':>10} {'com x':>10} {'com y':>10} {'com z':>10} "
                  f"{'ixx':>10} {'iyy':>10} {'izz':>10} {'ixy':>10} {'ixz':>10} {'iyz':>10}"]
        for joint, theta in zip(model.body_joints, estimate.body_parameters()):
            lines.append(_body_line(joint, theta))
    else:
        lines += ["", "identified payload (physically consistent; inertia about its CoM, link axes):",
                  _body_line("payload", estimate.x[:10])]
    damping, friction = estimate.friction()
    source = lambda identified: "identified" if identified else "URDF"  # noqa: E731
    lines += ["", f"friction ({source(estimate.problem.friction)}; damping: the joint's and its motor's r^2 B_m) "
                  "and armature (r^2 J_m):",
              f"{'joint':24} {'damping':>12} {'coulomb':>12} {'armature':>12}"]
    lines += [f"{name:24} {d:12.5g} {f:12.5g} {a:12.5g} ({source(estimated)})" for name, d, f, a, estimated in zip(
        model.joint_names, damping, friction, estimate.armature(), estimate.problem.armature_estimated)]
    if validation is not None:
        lines += ["", *validation_lines(model.joint_names, validation)]
    return "\n".join(lines) + "\n"


def _body_line(name, theta):
    mass, com, I = mass_com_inertia(theta)
    return (f"{name:24} {mass:10.5g} {com[0]:10.4g} {com[1]:10.4g} {com[2]:10.4g} "
            f"{I[0, 0]:10.4g} {I[1, 1]:10.4g} {I[2, 2]:10.4g} {I[0, 1]:10.3g} {I[0, 2]:10.3g} {I[1, 2]:10.3g}")


def validation_lines(joint_names, validation):
    """RMS torque errors per joint on the validation data, identified and with the input URDF."""
    lines = [f"validation on {validation.label}: RMS torque error per joint",
             f"{'joint':24} {'RMS torque':>11} {'identified':>11} {'%':>7} {'input URDF':>11} {'%':>7}"]
    for j, name in enumerate(joint_names):
        scale = max(validation.rms_torque[j], 1e-300)
        lines.append(f"{name:24} {validation.rms_torque[j]:11.4g} {validation.rms_identified[j]:11.4g} "
                     f"{100 * validation.rms_identified[j] / scale:7.2f} {validation.rms_input[j]:11.4g} "
                     f"{100 * validation.rms_input[j] / scale:7.2f}")
    return lines


def plot_validation(path, joint_names, validation, joint_types=None):
    """:func:`validation_figure` as a PNG to ``path`` (a file name or a binary stream)."""
    import matplotlib.pyplot as plt

    figure = validation_figure(joint_names, validation, joint_types)
    figure.savefig(path, dpi=100, format="png", bbox_inches="tight")
    plt.close(figure)


def validation_figure(joint_names, validation, joint_types=None):
    """Measured vs predicted torques per joint (identified model and input URDF), one panel per joint.
    Each panel's axis carries its unit (N m; N for a prismatic joint of ``joint_types``); the legends
    stand beside the panels, hiding no peak."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(joint_names)
    types = list(joint_types or ["revolute"] * n)
    figure, axes = plt.subplots(n, 1, figsize=(12, 1.8 * n + 1), sharex=True, squeeze=False)
    t = validation.samples.t - validation.samples.t[0]
    for j, (ax, name) in enumerate(zip(axes[:, 0], joint_names)):
        unit = "N" if types[j] == "prismatic" else "N m"
        ax.plot(t, validation.samples.tau[:, j], color="black", lw=1.2, label="measured")
        ax.plot(t, validation.identified[:, j], color="tab:blue", lw=1,
                label=f"identified (RMS error {validation.rms_identified[j]:.3g} {unit})")
        ax.plot(t, validation.input[:, j], color="tab:red", lw=0.8, ls="--",
                label=f"input URDF (RMS error {validation.rms_input[j]:.3g} {unit})")
        ax.set_ylabel(f"{name}\n({unit})", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    axes[-1, 0].set_xlabel("time (s)")
    figure.suptitle(f"joint torques on {validation.label}: measured and predicted")
    figure.tight_layout()
    return figure


MASS_RATIO = 2.0       # an identified mass beyond 2x (or below half) the URDF's is implausible for a CAD URDF
COM_SHIFT = 0.1        # m: an identified centre of mass this far from the URDF's


def plausibility_notes(estimate):
    """One line per moving link whose identified mass or centre of mass is far from the URDF's
    (``MASS_RATIO``, ``COM_SHIFT``), naming the likely causes; [] when every link is plausible."""
    import robot_dynamics as rd

    model = estimate.problem.model
    nominal = rd.inertial_parameters(model)[:PARAMETERS_PER_BODY * len(model.body_joints)].reshape(-1, PARAMETERS_PER_BODY)
    notes = []
    for joint, found, given in zip(model.body_joints, estimate.body_parameters(), nominal):
        mass, com, _ = mass_com_inertia(found)
        mass0, com0, _ = mass_com_inertia(given)
        problems = []
        if mass0 > 0 and not 1 / MASS_RATIO <= mass / mass0 <= MASS_RATIO:
            problems.append(f"mass {mass:.3g} kg against the URDF's {mass0:.3g} kg")
        if np.linalg.norm(com - com0) > COM_SHIFT:
            problems.append(f"centre of mass {1e3 * np.linalg.norm(com - com0):.0f} mm from the URDF's")
        if problems:
            friction = ("friction the viscous + Coulomb law cannot follow (Stribeck, asymmetry)" if estimate.problem.friction
                        else "friction left out (--friction)")
            notes.append(f"the link moved by {joint}: {', '.join(problems)}: implausible for a CAD URDF; likely causes: "
                         f"contact or a load in the recording, a --lock at a wrong position, wrong torque units or sign, "
                         f"{friction}, or a motion that hardly excites it (parameters.txt: what the data see)")
    return notes
