"""sensor_msgs/JointState written straight to its serialized (CDR) form, for the nodes' hot paths.

Publishing a message object costs rclpy a conversion of every field, the joint names included, on
every call: about 40 us per ``joint_states`` message inside the simulator's loop, as much as two
rk4 steps of Panda-7.  The names and the frame never change between messages, so
:class:`JointStateWriter` lays the message out once and afterwards writes only the stamp and the
three arrays into it; ``Publisher.publish`` accepts the bytes as they are.

The layout is ROS 2's default encoding (OMG XCDR version 1, little endian, as rmw_fastrtps writes
it): a 4-byte encapsulation header ``00 01 00 00``, then the fields in declaration order, each
aligned to its own size counted from the end of that header; a string is its length including the
terminating NUL (uint32) and the bytes; a sequence is its element count (uint32) and the elements.
``test/test_cdr.py`` checks the result against rclpy's own deserializer.
"""

from __future__ import annotations

import struct

import numpy as np

ENCAPSULATION = b"\x00\x01\x00\x00"  # CDR, little endian


class JointStateWriter:
    """Serialized sensor_msgs/JointState messages with fixed ``names`` and ``frame_id``.

    >>> import numpy as np
    >>> writer = JointStateWriter(["shoulder", "elbow"])
    >>> data = writer.serialize(12, 500, np.array([0.1, 0.2]), np.zeros(2), np.array([1.0, -1.0]))
    >>> from rclpy.serialization import deserialize_message
    >>> from sensor_msgs.msg import JointState
    >>> msg = deserialize_message(data, JointState)
    >>> msg.name, msg.header.stamp.sec, list(msg.effort)
    (['shoulder', 'elbow'], 12, [1.0, -1.0])
    """

    def __init__(self, names, frame_id: str = "", efforts_only: bool = False):
        """``efforts_only``: position and velocity are empty (the dynamics node's torque outputs);
        :meth:`serialize` then takes ``None`` for them."""
        self.count = len(names)
        counts = (0, 0, self.count) if efforts_only else (self.count,) * 3
        payload = bytearray()

        def align(size: int) -> None:
            payload.extend(bytes(-len(payload) % size))

        def uint32(value: int) -> None:
            align(4)
            payload.extend(struct.pack("<I", value))

        def string(text: str) -> None:
            encoded = text.encode()
            uint32(len(encoded) + 1)
            payload.extend(encoded + b"\x00")

        payload.extend(bytes(8))  # header.stamp: sec (int32), nanosec (uint32), written per message
        string(frame_id)
        uint32(self.count)
        for name in names:
            string(name)
        self._arrays = []  # (0 position, 1 velocity or 2 effort, its byte offset in the message), non-empty ones
        for which, count in enumerate(counts):
            uint32(count)
            if count:
                align(8)
                self._arrays.append((which, len(ENCAPSULATION) + len(payload)))
            payload.extend(bytes(8 * count))
        self._message = bytearray(ENCAPSULATION + payload)

    def serialize(self, sec: int, nanosec: int, position, velocity, effort) -> bytes:
        """The message with this stamp and these (``count``,) float64 arrays, ready for ``publish``."""
        message = self._message
        struct.pack_into("<iI", message, len(ENCAPSULATION), sec, nanosec)
        size = 8 * self.count
        arrays = (position, velocity, effort)
        for which, offset in self._arrays:
            data = np.ascontiguousarray(arrays[which], dtype="<f8").tobytes()
            if len(data) != size:  # a slice of another size would shift every later field
                raise ValueError(f"expected {self.count} values per array, got {len(data) // 8}")
            message[offset:offset + size] = data
        return bytes(message)
