"""The package builds with colcon as an ament_python package, and the installed node runs.

This is the ROS 2 workspace route of the README: ``colcon build`` of a workspace holding a copy
of this package, then the ``dynamics_node`` that colcon installed under
``install/robot_dynamics/lib/robot_dynamics`` (where ``ros2 run`` looks) publishes gravity
torques equal to the core library's.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from ros_helpers import RosHarness, publish_until, ros_env, write_params

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FILES = ("setup.py", "setup.cfg", "package.xml", "resource", "robot_dynamics", "robot_dynamics_executables.py",
                 "launch", "config", "urdf")
COLCON = Path(sys.executable).with_name("colcon")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    if not COLCON.is_file():
        pytest.skip("colcon is not installed next to this interpreter (pip install .[test])")
    root = tmp_path_factory.mktemp("ws")
    source = root / "src" / "robot_dynamics"
    source.mkdir(parents=True)
    for name in PACKAGE_FILES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(path, source / name)
    build = subprocess.run([str(COLCON), "build"], cwd=root, env=ros_env(), capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    return root


def _in_workspace(workspace, command):
    """Run a shell command with the workspace's install/setup.bash sourced; its stdout."""
    return subprocess.run(["bash", "-c", f"source install/setup.bash && {command}"], cwd=workspace, env=ros_env(),
                          capture_output=True, text=True, check=True).stdout


def test_colcon_installs_the_ros_layout(workspace):
    prefix = workspace / "install" / "robot_dynamics"
    imported = _in_workspace(workspace, f"{sys.executable} -c 'import robot_dynamics; print(robot_dynamics.__file__)'")
    assert Path(imported.strip()).is_relative_to(prefix), imported
    for executable in ("dynamics_node", "simulator_node", "trajectory_publisher"):
        assert (prefix / "lib" / "robot_dynamics" / executable).is_file(), executable
    share = prefix / "share" / "robot_dynamics"
    assert (share / "package.xml").is_file()
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "robot_dynamics").is_file()
    for folder, pattern in (("launch", "*.launch.py"), ("config", "*.yaml"), ("urdf", "*.urdf")):
        assert sorted(p.name for p in (share / folder).glob(pattern)) == sorted(
            p.name for p in (REPO / folder).glob(pattern)
        ), folder


def test_installed_dynamics_node_publishes_gravity_torques(workspace, tmp_path):
    from sensor_msgs.msg import JointState

    urdf = rd.examples.TWO_LINK_URDF
    model = rd.load_urdf(urdf)
    params = write_params(tmp_path / "params.yaml", {"robot_description": urdf})
    node = workspace / "install" / "robot_dynamics" / "lib" / "robot_dynamics" / "dynamics_node"
    command = f"source install/setup.bash && exec {node} --ros-args --params-file {params}"
    log = open(tmp_path / "node.log", "wb")
    process = subprocess.Popen(["bash", "-c", command], cwd=workspace, env=ros_env(), stdout=log, stderr=subprocess.STDOUT)
    harness = RosHarness("colcon_check")
    try:
        gravity = harness.collect(JointState, "gravity_torques")
        states = harness.publisher(JointState, "joint_states")
        q = np.array([0.3, -0.4])
        state = JointState(name=list(model.joint_names), position=q.tolist(), velocity=[0.0, 0.0])

        def publish():
            state.header.stamp = harness.node.get_clock().now().to_msg()
            states.publish(state)

        message = publish_until(publish, gravity, lambda m: len(m.effort) == 2, timeout=120.0,
                                what="gravity torques from the colcon-installed node")
        np.testing.assert_allclose(message.effort, rd.gravity_torques(model, q), atol=1e-9)
    finally:
        harness.close()
        process.send_signal(2)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
