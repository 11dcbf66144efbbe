"""robot_dynamics.nodes.common.cdr against rclpy's own deserializer.

rclpy reads every field back exactly: a wrong alignment or length anywhere would shift the fields
after it.  (Byte equality with ``serialize_message`` cannot be asked: its padding bytes are
uninitialised memory.)  The simulator node's tests receive the same bytes over DDS.
"""

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not installed (pip install .[ros])")

from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from robot_dynamics.nodes.common.cdr import JointStateWriter  # noqa: E402

NAME_SETS = [
    [],
    ["a"],
    ["ab", "c"],                                     # strings of every length mod 4 need padding
    ["abc", "abcd", "abcde", "x" * 13],
    [f"panda_joint{i}" for i in range(1, 8)],
    ["gelenk_ä", "关节"],                             # UTF-8: the length counts bytes
]


@pytest.mark.parametrize("names", NAME_SETS, ids=lambda names: f"{len(names)} names")
@pytest.mark.parametrize("frame_id", ["", "base", "world_frame"])
def test_rclpy_reads_back_every_field(names, frame_id):
    rng = np.random.default_rng(len(names))
    n = len(names)
    position, velocity, effort = rng.normal(size=(3, n))
    effort[:1] = [-math.inf][:n]  # the writer copies values, finite or not
    writer = JointStateWriter(names, frame_id)
    for sec, nanosec in ((0, 0), (1_795_000_000, 999_999_999), (-3, 5)):
        msg = deserialize_message(writer.serialize(sec, nanosec, position, velocity, effort), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id) == (sec, nanosec, frame_id)
        assert list(msg.name) == names
        np.testing.assert_array_equal(msg.position, position)
        np.testing.assert_array_equal(msg.velocity, velocity)
        np.testing.assert_array_equal(msg.effort, effort)


@pytest.mark.parametrize("names", NAME_SETS, ids=lambda names: f"{len(names)} names")
def test_efforts_only_leaves_position_and_velocity_empty(names):
    effort = np.arange(len(names)) - 0.5
    writer = JointStateWriter(names, "base", efforts_only=True)
    msg = deserialize_message(writer.serialize(7, 8, None, None, effort), JointState)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id, list(msg.name)) == (7, 8, "base", names)
    assert len(msg.position) == len(msg.velocity) == 0
    np.testing.assert_array_equal(msg.effort, effort)


def test_wrong_length_is_refused():
    writer = JointStateWriter(["a", "b"])
    with pytest.raises(ValueError, match="expected 2 values"):
        writer.serialize(0, 0, np.zeros(3), np.zeros(2), np.zeros(2))
