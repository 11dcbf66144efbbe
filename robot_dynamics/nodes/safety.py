"""Guards of the nodes against hostile or absurd input (no rclpy).

- :func:`description_text`: a robot_description is URDF XML text of bounded size, never a path
  (a node never opens a file somebody named on the ROS graph);
- :func:`cut`: text of bounded length for logs and ``/diagnostics`` (a 1 MB joint name must not
  become a 1 MB log line);
- :class:`Plausibility`: positions within the joint limits plus a margin, velocities within a
  multiple of the velocity limits (a reading beyond them is a broken sensor or an attack, not a
  robot state);
- :func:`check_outputs_finite`: a model whose outputs at a reference state are not finite (gravity
  1e308, a payload far away) is refused before it replaces a working one;
- :func:`closest_name`: the known name a misspelled one most likely meant.
"""

from __future__ import annotations

import difflib
import math

import numpy as np

from ..model import given_limits

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_TEXT", "POSITION_MARGIN", "VELOCITY_FACTOR", "Plausibility",
           "check_outputs_finite", "closest_name", "cut", "description_text"]

#: largest robot_description accepted, characters (the biggest real URDFs are a few hundred kB)
MAX_DESCRIPTION_CHARS = 10_000_000
#: longest text of one log line or diagnostic string, characters
MAX_TEXT = 1000
#: how far beyond its limits (rad or m) a joint position is still believed: half a turn (a
#: calibration offset or a test state is believed; 1e5 rad or 1e20 m is not)
POSITION_MARGIN = math.pi
#: how many times its velocity limit a joint velocity may reach and still be believed
VELOCITY_FACTOR = 5.0


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` shortened to at most ``limit`` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    tail = f"... [{len(text) - limit} more characters]"
    return text[: max(limit - len(tail), 0)] + tail


def description_text(xml) -> str:
    """``xml`` if it is usable as a robot_description: a string that starts (after white space)
    with ``<`` and has at most :data:`MAX_DESCRIPTION_CHARS` characters; ``ValueError`` with the
    reason otherwise. A node never reads a file named by a description: a path is refused."""
    if not isinstance(xml, str):
        raise ValueError(f"robot_description must be URDF XML text, not {type(xml).__name__}")
    if len(xml) > MAX_DESCRIPTION_CHARS:
        raise ValueError(f"robot_description has {len(xml)} characters, more than the limit {MAX_DESCRIPTION_CHARS}")
    start = xml.lstrip()[:1]
    if start != "<":
        raise ValueError(
            f"robot_description must be URDF XML text (starting with '<'), got {cut(repr(xml), 80)}; "
            "the nodes never open files: give a file with --urdf FILE or in a params file")
    return xml


class Plausibility:
    """Limits beyond which a joint state is not believed: positions outside
    ``[lower - POSITION_MARGIN, upper + POSITION_MARGIN]`` and speeds above ``VELOCITY_FACTOR``
    times the velocity limit (joints without a limit in the URDF, or with 0, are not limited)."""

    def __init__(self, model):
        self.names = model.joint_names
        low, high = model.position_limits[:, 0], model.position_limits[:, 1]
        unset = low >= high  # (a URDF <limit> without lower and upper reads as 0, 0)
        self.low = np.where(unset, -np.inf, low - POSITION_MARGIN)
        self.high = np.where(unset, np.inf, high + POSITION_MARGIN)
        self.speed = VELOCITY_FACTOR * given_limits(model.velocity_limits)

    def problem(self, index: np.ndarray, position, velocity) -> str:
        """The reason the values of the model joints ``index`` are not believed, '' when they are."""
        parts = []
        if position is not None:
            bad = (position < self.low[index]) | (position > self.high[index])
            if bad.any():
                parts.append("positions beyond the joint limits by more than "
                             f"{POSITION_MARGIN:.4g}: {self._list(index, position, bad)}")
        if velocity is not None:
            bad = np.abs(velocity) > self.speed[index]
            if bad.any():
                parts.append(f"velocities above {VELOCITY_FACTOR:g} times the velocity limit: "
                             f"{self._list(index, velocity, bad)}")
        return "; ".join(parts)

    def _list(self, index, values, bad) -> str:
        return cut(", ".join(f"{self.names[index[i]]}={values[i]:.4g}" for i in np.flatnonzero(bad)), 300)


def reference_state(model) -> np.ndarray:
    """A configuration inside the joint limits (0 clipped into them)."""
    low, high = model.position_limits[:, 0], model.position_limits[:, 1]
    return np.clip(np.zeros(model.nv), low, high)


def check_outputs_finite(model, what: str) -> None:
    """``ValueError`` unless ``model`` has a coordinate and finite gravity torques and mass matrix at
    a configuration within its limits (``what`` names the settings that made the model)."""
    import robot_dynamics as rd

    if model.nv == 0:
        raise ValueError(f"robot {model.name!r} has no moving joints: there is nothing to compute")
    q = reference_state(model)
    with np.errstate(all="ignore"):
        g = rd.gravity_torques(model, q)
        M = rd.mass_matrix(model, q)
    if not (np.isfinite(g).all() and np.isfinite(M).all()):
        raise ValueError(f"{what} would make the gravity torques or the mass matrix non-finite")


def closest_name(name: str, known) -> str:
    """The entry of ``known`` closest to ``name``, '' when none is close."""
    match = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return match[0] if match else ""
