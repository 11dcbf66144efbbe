"""``robot-dynamics demo-payload``: the arm is given a payload its model does not know; estimate it, apply it.

In process (no ROS, no other process): the simulator's robot is ``arm7_gripper``'s URDF with one more
link, ``payload``, fixed to ``arm7_hand`` (:func:`urdf_with_payload`: ``--mass`` kg, centre of mass
``--offset`` m off the flange axis and 5 cm out); the controller's model is the plain URDF. Both
closed loops are the dynamics node's computed-torque law at 500 Hz
(:func:`robot_dynamics.identification.simulated.record`, friction on):

1. before: the arm follows a smooth motion (:data:`TRACKING`) with the model that knows no payload;
2. the arm holds the four poses :data:`POSES` (:data:`HOLD` s each, :data:`MOVE` s between them), and
   :func:`robot_dynamics.identification.payload.estimate_payload` fits the payload from those joint
   states and efforts, what ``~/estimate_payload`` does over its window;
3. after: the same motion with the model carrying the estimate (``RobotModel.with_payload``, what
   setting ``payload.*`` does in the node).

It prints the estimate's report, and the tracking errors before and after.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

ROBOT, LINK = "arm7_gripper", "arm7_hand"
#: four poses that tilt arm7_hand into four orientations relative to gravity (each pair >= 20 deg apart)
POSES = np.array([[0.0, 0.3, 0.0, -1.8, 0.0, 2.1, 0.8, 0.02],
                  [0.0, 0.3, 0.0, -1.8, 0.0, 1.0, 0.8, 0.02],
                  [0.0, 0.3, 0.0, -1.8, 1.5, 2.1, -0.7, 0.02],
                  [0.5, -0.2, 0.0, -2.2, -1.2, 1.5, 2.0, 0.02]])
HOLD, MOVE = 5.0, 1.5  # s
TRACKING_SECONDS = 4.0
PAYLOAD_INERTIA = (0.006, 0.0, 0.0, 0.008, 0.0, 0.005)  # kg m^2 about its centre of mass


def urdf_with_payload(xml: str, link: str, mass: float, com, inertia, name: str = "payload") -> str:
    """The URDF ``xml`` with a link ``name`` (``mass`` kg, centre of mass ``com`` in ``link``'s frame, ``inertia``
    ixx ixy ixz iyy iyz izz about it) fixed to ``link``: a payload only the simulator knows."""
    root = ET.fromstring(xml)
    if not any(element.get("name") == link for element in root.iter("link")):
        raise ValueError(f"no link {link!r} in the URDF")
    body = ET.SubElement(root, "link", name=name)
    inertial = ET.SubElement(body, "inertial")
    ET.SubElement(inertial, "origin", xyz=" ".join(repr(float(v)) for v in com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=repr(float(mass)))
    ET.SubElement(inertial, "inertia", **{key: repr(float(v)) for key, v in
                                          zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), inertia)})
    joint = ET.SubElement(root, "joint", name=f"{name}_joint", type="fixed")
    ET.SubElement(joint, "parent", link=link)
    ET.SubElement(joint, "child", link=name)
    ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
    return ET.tostring(root, encoding="unicode")


def held_poses(poses, hold=HOLD, move=MOVE):
    """``t -> (q, qd, qdd)``: each pose held ``hold`` s, a quintic (at rest at both ends) of ``move`` s between."""
    poses = np.asarray(poses, dtype=float)
    zeros = np.zeros(poses.shape[1])

    def trajectory(t):
        k = min(int(t // (hold + move)), len(poses) - 1)
        s = t - k * (hold + move)
        if s < hold or k == len(poses) - 1:
            return poses[k], zeros, zeros
        u = (s - hold) / move
        a, b = poses[k], poses[k + 1]
        return (a + (b - a) * (10 * u**3 - 15 * u**4 + 6 * u**5), (b - a) * (30 * u**2 - 60 * u**3 + 30 * u**4) / move,
                (b - a) * (60 * u - 180 * u**2 + 120 * u**3) / move**2)

    return trajectory


def held_duration(count, hold=HOLD, move=MOVE):
    return count * hold + (count - 1) * move


def tracking(t):
    """The motion tracked before and after: joints 1, 2, 4 and 6 swing about the first pose (at rest at t = 0)."""
    amplitude = np.array([0.4, 0.3, 0.0, 0.4, 0.0, 0.5, 0.0, 0.0])
    w = 2 * np.pi * 0.5
    return (POSES[0] + amplitude * (1 - np.cos(w * t)), amplitude * w * np.sin(w * t), amplitude * w * w * np.cos(w * t))


def add_arguments(parser):
    parser.add_argument("--mass", type=float, default=3.0, metavar="KG", help="the payload's mass (default 3)")
    parser.add_argument("--offset", type=float, default=0.08, metavar="M",
                        help="its centre of mass off the flange axis, m (default 0.08)")


def tracking_error(robot, controller):
    """(RMS, largest) position error, rad, of the computed-torque loop on :func:`tracking`."""
    from ..identification.simulated import record

    run = record(robot, controller, tracking, TRACKING_SECONDS, torque_noise=0.0, position_noise=0.0)
    error = np.array([tracking(t)[0] for t in run.t]) - run.q
    return float(np.sqrt(np.mean(error[:, :7] ** 2))), float(np.abs(error[:, :7]).max())


def run_demo(args, out, err):
    import robot_dynamics as rd

    from ..compiling import compile_and_report
    from ..description.robots import bundled_urdf
    from ..identification.payload import estimate_payload, recording_of
    from ..identification.simulated import record

    if not (math.isfinite(args.mass) and 0 < args.mass <= 20):
        raise ValueError(f"--mass must be in (0, 20] kg, got {args.mass}")
    if not (math.isfinite(args.offset) and abs(args.offset) <= 0.3):
        raise ValueError(f"--offset must be within 0.3 m, got {args.offset}")
    compile_and_report(("dynamics_node", "simulator", "library"), "the dynamics kernels", lambda line: err.write(line + "\n"))
    path = bundled_urdf(ROBOT)
    com = (args.offset, 0.0, 0.05)
    controller = rd.load_urdf(path)
    robot = rd.load_urdf(urdf_with_payload(path.read_text(), LINK, args.mass, com, PAYLOAD_INERTIA))
    out.write(f"robot_dynamics demo-payload: {ROBOT} given {args.mass:g} kg at {list(com)} m in {LINK} (the simulator's "
              "URDF has it as a fixed link; the controller's model does not), computed torque at 500 Hz\n")
    before = tracking_error(robot, controller)
    out.write(f"  before: tracking error RMS {before[0]:.2e} rad, largest {before[1]:.2e} rad\n")
    run = record(robot, controller, held_poses(POSES), held_duration(len(POSES)))
    out.write(f"  holding {len(POSES)} poses ({HOLD:g} s each, {MOVE:g} s between) ...\n")
    result = estimate_payload(recording_of(run.joint_names, run.t, run.q, run.qd, run.tau, "the held poses"),
                              controller, LINK)
    for line in result.report_lines():
        out.write(f"  {line}\n")
    out.write(f"  error: mass {100 * (result.mass / args.mass - 1):+.2f} %, centre of mass "
              f"{1000 * np.linalg.norm(result.com - com):.2f} mm\n")
    after = tracking_error(robot, controller.with_payload(LINK, result.mass, result.com, result.inertia))
    out.write(f"  after:  tracking error RMS {after[0]:.2e} rad, largest {after[1]:.2e} rad "
              f"({before[0] / max(after[0], 1e-12):.0f} times smaller)\n")
    return 0
