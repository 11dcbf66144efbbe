"""Contact messages of the simulator and dynamics nodes, written straight to their serialized (CDR) form.

A message object costs rclpy a conversion of every field on every publish (a WrenchStamped about as
much as the observer itself); the names and frames never change between messages, so the layout is
written once and each message writes only its stamp and numbers (the encoding of
:mod:`robot_dynamics.nodes.common.cdr`: XCDR1 little endian, fields aligned to their size from the end of the
4-byte encapsulation header).  ``test/test_contact_nodes.py`` reads them back with rclpy.
"""

from __future__ import annotations

import struct

import numpy as np

from .cdr import ENCAPSULATION

__all__ = ["EffortWriter", "WrenchWriter"]


class _Layout:
    """A message being laid out: a payload with XCDR1 alignment."""

    def __init__(self):
        self.payload = bytearray(bytes(8))  # header.stamp: sec, nanosec, written per message

    def align(self, size: int) -> None:
        self.payload.extend(bytes(-len(self.payload) % size))

    def uint32(self, value: int) -> None:
        self.align(4)
        self.payload.extend(struct.pack("<I", value))

    def string(self, text: str) -> None:
        encoded = text.encode()
        self.uint32(len(encoded) + 1)
        self.payload.extend(encoded + b"\x00")

    def doubles(self, count: int) -> int:
        """Room for ``count`` float64 values; their byte offset in the message."""
        if count:
            self.align(8)
        offset = len(ENCAPSULATION) + len(self.payload)
        self.payload.extend(bytes(8 * count))
        return offset

    def message(self) -> bytearray:
        return bytearray(ENCAPSULATION + self.payload)


class EffortWriter:
    """sensor_msgs/JointState with fixed ``names``, no positions or velocities, and ``effort`` per message."""

    def __init__(self, names):
        layout = _Layout()
        layout.string("")  # frame_id
        layout.uint32(len(names))
        for name in names:
            layout.string(name)
        layout.uint32(0)  # position
        layout.uint32(0)  # velocity
        layout.uint32(len(names))
        self._offset, self._size = layout.doubles(len(names)), 8 * len(names)
        self._message = layout.message()

    def serialize(self, sec: int, nanosec: int, effort: np.ndarray) -> bytes:
        """The message with this stamp and these float64 efforts."""
        message = self._message
        struct.pack_into("<iI", message, len(ENCAPSULATION), sec, nanosec)
        data = effort.tobytes() if effort.flags.c_contiguous else np.ascontiguousarray(effort).tobytes()
        if len(data) != self._size:
            raise ValueError(f"expected {self._size // 8} efforts, got {len(data) // 8}")
        message[self._offset:self._offset + self._size] = data
        return bytes(message)


class WrenchWriter:
    """geometry_msgs/WrenchStamped with a fixed ``frame_id``; ``wrench = [moment; force]`` (the library's order)."""

    def __init__(self, frame_id: str):
        layout = _Layout()
        layout.string(frame_id)
        self._offset = layout.doubles(6)  # force x y z, then torque x y z
        self._message = layout.message()

    def serialize(self, sec: int, nanosec: int, wrench) -> bytes:
        message = self._message
        struct.pack_into("<iI", message, len(ENCAPSULATION), sec, nanosec)
        w = np.ascontiguousarray(wrench, dtype="<f8")
        message[self._offset:self._offset + 48] = np.concatenate((w[3:6], w[0:3])).tobytes()
        return bytes(message)
