"""SROS2 with the ROS 2 wheels of PyPI (docs/security.md): their Fast DDS is built without the DDS
security plugins, so a node under ``ROS_SECURITY_ENABLE=true`` cannot start. It must say so in one
FATAL line, with status 2, never a traceback; and the doc's claim about the wheels is checked here:
should wheels with security come, this test fails and the doc's route can be tested instead."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")

from robot_dynamics.tools import processes  # noqa: E402

from ros_helpers import ros_env  # noqa: E402

ENCLAVE = "/robot_dynamics/dynamics_node"
#: the files rmw_fastrtps reads from an enclave's directory
ENCLAVE_FILES = ("identity_ca.cert.pem", "cert.pem", "key.pem", "permissions_ca.cert.pem", "governance.p7s",
                 "permissions.p7s")


@pytest.mark.parametrize("enclave, text", [
    (False, "the security settings: failed to initialize rcl: SECURITY ERROR: directory"),  # Enforce, no enclave
    (True, "the middleware cannot create the node: error creating node: This Fast DDS version doesn't have the "
           "security libraries"),  # these wheels
], ids=["no-enclave", "enclave"])
def test_a_node_under_enforce_ends_with_one_fatal_line_naming_the_cause(tmp_path, enclave, text):
    keystore = tmp_path / "keystore"
    directory = keystore / "enclaves" / ENCLAVE.strip("/")
    directory.mkdir(parents=True)
    if enclave:
        for name in ENCLAVE_FILES:  # (their content is never read: the middleware stops before)
            (directory / name).write_text("placeholder\n")
    else:
        directory.rmdir()
    env = dict(ros_env(), ROS_SECURITY_ENABLE="true", ROS_SECURITY_STRATEGY="Enforce", ROS_SECURITY_KEYSTORE=str(keystore))
    argv = processes.executable("dynamics_node") + ["--urdf", "planar_2r", "--ros-args", "--enclave", ENCLAVE,
                                                    "-r", "__ns:=/secure"]
    node = processes.NodeProcess("dynamics_node", argv, env, tmp_path / "node.log")
    try:
        code = node.process.wait(60.0)
    finally:
        node.stop()
    log = node.log_path.read_text(errors="replace")
    assert code == 2, log
    fatal = [line for line in log.splitlines() if line.startswith("[FATAL]")]
    assert len(fatal) == 1 and text in fatal[0], log
    assert "Traceback" not in log, log
