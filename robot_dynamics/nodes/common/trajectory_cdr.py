"""trajectory_msgs/JointTrajectory written straight to its serialized (CDR) form (no rclpy).

A retimed trajectory has a point per millisecond: building 2 000 ``JointTrajectoryPoint`` objects
and letting rclpy convert them takes 70-100 ms, twice the filter's whole budget. The points all
have the same fields, so their bytes are laid out at once with numpy.

The encoding is :mod:`~robot_dynamics.nodes.common.cdr`'s (XCDR version 1, little endian: each field
aligned to its own size counted from the end of the 4-byte encapsulation header; a string is its
length with the NUL and its bytes; a sequence its count and its elements, a sequence of float64
aligned to 8 only when it has elements). ``test/test_trajectory_filter.py`` checks the result
against rclpy's own deserializer.
"""

from __future__ import annotations

import struct

import numpy as np

from .cdr import ENCAPSULATION

__all__ = ["joint_trajectory_bytes"]


def _point_layout(start: int, counts) -> tuple:
    """``(size, offsets of the four float64 arrays (None if empty), offset of time_from_start)`` of a
    JointTrajectoryPoint starting at ``start`` (an offset after the encapsulation header), relative to it."""
    pos, offsets = start, []
    for count in counts:
        pos += -pos % 4 + 4  # the count
        if count:
            pos += -pos % 8
            offsets.append(pos - start)
            pos += 8 * count
        else:
            offsets.append(None)
    pos += -pos % 4
    duration = pos - start
    return pos + 8 - start, offsets, duration


def joint_trajectory_bytes(sec: int, nanosec: int, frame_id: str, names, t: np.ndarray, arrays) -> bytes:
    """The serialized JointTrajectory of ``names``, stamp ``(sec, nanosec)``, ``frame_id``, points at
    times ``t`` (N,) s from the start with ``arrays`` = (positions, velocities, accelerations, effort),
    each (N, len(names)) or None (empty in every point)."""
    head = bytearray(struct.pack("<iI", sec, nanosec))

    def string(text: str) -> None:
        head.extend(bytes(-len(head) % 4))
        encoded = text.encode()
        head.extend(struct.pack("<I", len(encoded) + 1) + encoded + b"\x00")

    string(frame_id)
    head.extend(bytes(-len(head) % 4) + struct.pack("<I", len(names)))
    for name in names:
        string(name)
    head.extend(bytes(-len(head) % 4) + struct.pack("<I", t.size))
    counts = [0 if a is None else len(names) for a in arrays]
    starts, pos = np.empty(t.size, dtype=np.int64), len(head)
    layouts = {}
    for k in range(t.size):  # (a point's layout depends only on its start modulo 8: two at most)
        layout = layouts.get(pos % 8) or layouts.setdefault(pos % 8, _point_layout(pos, counts))
        starts[k] = pos
        pos += layout[0]
    body = np.zeros(pos, dtype=np.uint8)
    body[:len(head)] = np.frombuffer(bytes(head), dtype=np.uint8)
    seconds = np.floor(t).astype(np.int64)
    nanoseconds = np.minimum(np.round((t - seconds) * 1e9).astype(np.int64), 999_999_999)
    duration = np.empty((t.size, 2), dtype="<u4")
    duration[:, 0], duration[:, 1] = seconds.astype("<i4").view("<u4"), nanoseconds
    for residue, (size, offsets, at) in layouts.items():
        rows = np.flatnonzero(starts % 8 == residue)
        base = starts[rows][:, None]
        pos = 0
        for count, offset, values in zip(counts, offsets, arrays):  # the counts, then the values
            pos += -(pos + residue) % 4
            body[base + pos + np.arange(4)] = np.frombuffer(struct.pack("<I", count), dtype=np.uint8)
            pos += 4
            if count:
                data = np.ascontiguousarray(values[rows], dtype="<f8").view(np.uint8)
                body[base + offset + np.arange(8 * count)] = data
                pos = offset + 8 * count
        body[base + at + np.arange(8)] = duration[rows].view(np.uint8)
    return ENCAPSULATION + body.tobytes()
