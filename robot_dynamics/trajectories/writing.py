"""Writing a joint trajectory in the formats :mod:`.reading` reads: a CSV file (``t, q_<joint>...`` and
``qd_``, ``qdd_``, ``tau_`` columns where given) or a ``JointTrajectory`` as ``ros2 topic echo`` prints it
(YAML; ``effort`` filled where given), chosen by the file's extension (:func:`write_trajectory`).

A file is written whole or not at all: into a temporary file beside it, then renamed over it.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np

from .trajectory import TrajectoryError

__all__ = ["write_trajectory", "csv_text", "yaml_text"]

_COLUMNS = (("q", "q"), ("qd", "qd"), ("qdd", "qdd"), ("tau", "effort"))
_FIELDS = (("positions", "q"), ("velocities", "qd"), ("accelerations", "qdd"), ("effort", "effort"))


def csv_text(trajectory):
    """The CSV text: a header row ``t, q_<joint>..., qd_<joint>..., qdd_<joint>..., tau_<joint>...`` (the
    quantities given), then a row per point; every number as Python's shortest repr (read back exactly)."""
    parts = [(prefix, getattr(trajectory, name)) for prefix, name in _COLUMNS if getattr(trajectory, name) is not None]
    header = ["t"] + [f"{prefix}_{joint}" for prefix, _ in parts for joint in trajectory.joint_names]
    table = np.column_stack([trajectory.t] + [values for _, values in parts])
    return "\n".join([",".join(header)] + [",".join(map(repr, row)) for row in table.tolist()]) + "\n"


def _duration(seconds):
    """``{sec, nanosec}`` of a ``builtin_interfaces/Duration`` (nanoseconds rounded, carried into seconds)."""
    sec = math.floor(seconds)
    nanosec = round((seconds - sec) * 1e9)
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return sec, nanosec


def yaml_text(trajectory, frame_id=""):
    """The YAML of a ``trajectory_msgs/JointTrajectory`` as ``ros2 topic echo`` prints it (header stamp 0:
    "start now"), ending with ``---``; quantities not given are empty lists, as in the message."""
    lines = ["header:", "  stamp:", "    sec: 0", "    nanosec: 0", f"  frame_id: '{frame_id}'", "joint_names:"]
    lines += [f"- {name}" for name in trajectory.joint_names]
    lines.append("points:")
    given = [(field, getattr(trajectory, name)) for field, name in _FIELDS]
    for k, t in enumerate(trajectory.t.tolist()):
        for index, (field, values) in enumerate(given):
            lead = "- " if index == 0 else "  "
            if values is None:
                lines.append(f"{lead}{field}: []")
            else:
                lines.append(f"{lead}{field}:")
                lines += [f"  - {value!r}" for value in values[k].tolist()]
        sec, nanosec = _duration(t)
        lines += ["  time_from_start:", f"    sec: {sec}", f"    nanosec: {nanosec}"]
    return "\n".join(lines) + "\n---\n"


def write_trajectory(path, trajectory):
    """Write ``trajectory`` to ``path``: ``.csv`` (:func:`csv_text`) or ``.yaml``/``.yml`` (:func:`yaml_text`);
    TrajectoryError for another extension or a directory that cannot be written."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        text = csv_text(trajectory)
    elif suffix in (".yaml", ".yml"):
        if trajectory.t[0] < 0:
            raise TrajectoryError(f"{path}: a JointTrajectory's time_from_start cannot be negative ({trajectory.t[0]:g} s)")
        text = yaml_text(trajectory)
    else:
        raise TrajectoryError(f"{path}: give a .csv or .yaml file to write")
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(temporary, 0o644)  # (mkstemp's 0600 would hide the file from other users)
        os.replace(temporary, path)
    except OSError as error:
        if "temporary" in locals() and os.path.exists(temporary):
            os.unlink(temporary)
        raise TrajectoryError(f"{path}: cannot be written ({error.strerror or error})") from None
