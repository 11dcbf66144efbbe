"""Identification from recorded data: from a ``joint_states`` recording to a calibrated URDF and payload.

The path (see docs/identification.md): :func:`design_excitation` (an excitation trajectory),
a recording (:func:`read_recording`: rosbag2 or CSV), :func:`identify` (base parameters,
friction, physically consistent estimates, validation), and the files of :mod:`.report`.
Importable without ROS; ``rosbags`` reads and writes the bags.
"""

from .excitation import ExcitationError, FourierExcitation, design_excitation, read_trajectory_csv, write_trajectory_csv
from .identify import Estimate, IdentificationError
from .pipeline import DriveSettings, Validation, identify
from .recording import Recording, RecordingError, joint_state_messages, read_recording, write_csv, write_rosbag

__all__ = [
    "ExcitationError", "FourierExcitation", "design_excitation", "read_trajectory_csv", "write_trajectory_csv",
    "DriveSettings", "Estimate", "IdentificationError", "Validation", "identify",
    "Recording", "RecordingError", "joint_state_messages", "read_recording", "write_csv", "write_rosbag",
]
