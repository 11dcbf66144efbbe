"""The real robots the benchmarks and tests measure: URDFs shipped by example-robot-data."""

import re
from importlib import metadata
from pathlib import Path

ROBOT_FILES = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "double_pendulum": "double_pendulum_description/urdf/double_pendulum.urdf",
    "double_pendulum_continuous": "double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "pr2": "pr2_description/urdf/pr2.urdf",
    "talos_left_arm": "talos_data/robots/talos_left_arm.urdf",
    "talos_reduced": "talos_data/robots/talos_reduced.urdf",
    "talos_full_v2": "talos_data/robots/talos_full_v2.urdf",
}


def example_robot_path(name):
    """Path of an example-robot-data URDF (the package installs them under its cmeel prefix)."""
    distribution = metadata.distribution("example-robot-data")
    suffix = "/robots/" + ROBOT_FILES[name]
    for file in distribution.files or ():
        if str(file).endswith(suffix):
            return Path(distribution.locate_file(file))
    raise FileNotFoundError(f"example-robot-data has no {ROBOT_FILES[name]}")


def fix_joints(xml, names):
    """The URDF text with the named joints turned into fixed joints (their mimic tags dropped)."""
    for name in names:
        pattern = re.compile(r'(<joint\b[^>]*\bname="%s"[^>]*>)(.*?)(</joint>)' % re.escape(name), re.S)
        match = pattern.search(xml)
        if match is None:
            raise ValueError(f"joint {name!r} not found")
        head = re.sub(r'type="[^"]*"', 'type="fixed"', match.group(1))
        body = re.sub(r"<mimic\b[^>]*/>", "", match.group(2))
        xml = xml[: match.start()] + head + body + match.group(3) + xml[match.end():]
    return xml


def panda7_urdf():
    """Panda with its two finger joints made fixed: the 7-joint arm the benchmarks quote."""
    return fix_joints(example_robot_path("panda").read_text(), ["panda_finger_joint1", "panda_finger_joint2"])
