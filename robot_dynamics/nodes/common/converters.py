"""numpy arrays <-> ROS message fields, at the nodes' message boundary."""

from __future__ import annotations

import array

import numpy as np
from builtin_interfaces.msg import Time
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

__all__ = ["as_float_array", "matrix_msg", "stamp_of"]


def as_float_array(values) -> array.array:
    """Fast ndarray/sequence -> ``array.array('d')`` (what rclpy stores for float64[] fields)."""
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return out


def matrix_msg(matrix) -> Float64MultiArray:
    """A 2-D matrix as a row-major Float64MultiArray with dims ``rows`` and ``cols``."""
    m = np.asarray(matrix, dtype=np.float64)
    rows, cols = m.shape
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label="rows", size=rows, stride=rows * cols),
        MultiArrayDimension(label="cols", size=cols, stride=cols),
    ]
    msg.layout.data_offset = 0
    msg.data = as_float_array(m)
    return msg


def stamp_of(ns: int) -> Time:
    """builtin_interfaces/Time of an integer nanosecond count."""
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))
