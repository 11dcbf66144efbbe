"""Recordings of ``joint_states``: rosbag2 directories (sqlite3 or MCAP) and CSV files.

A recording is kept as one time series per joint and quantity (position, velocity, effort),
because ``sensor_msgs/JointState`` messages may carry only some joints (several publishers
merged on one topic, as the dynamics node merges them by name) and may leave velocity or
effort empty.  :func:`read_recording` reads either format:

* a rosbag2 directory (or its ``.db3``/``.mcap`` file), read with ``rosbags`` (pure Python,
  no ROS installation): every ``sensor_msgs/msg/JointState`` message on ``topic``, stamped by
  its ``header.stamp`` (the bag's receive time if the stamp is zero);
* a CSV file with a ``t`` column and ``q_<joint>``, optional ``qd_<joint>`` and ``tau_<joint>``
  columns (an empty cell means "not in this sample"; ``nan`` is a bad sample).
"""

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

QUANTITIES = ("q", "qd", "tau")
_MESSAGE_FIELDS = {"q": "position", "qd": "velocity", "tau": "effort"}
JOINT_STATE = "sensor_msgs/msg/JointState"


class RecordingError(ValueError):
    """A recording that cannot be read, or lacks what identification needs."""


@dataclass
class Recording:
    """``series[quantity][joint] = (t, values)``, quantity in ``QUANTITIES``; times in seconds."""

    source: str
    series: dict = field(default_factory=lambda: {quantity: {} for quantity in QUANTITIES})

    @property
    def joint_names(self):
        return tuple(self.series["q"])


def _collect(source, samples):
    """A :class:`Recording` from ``(t, names, {quantity: values})`` samples, ``names`` a tuple.

    Messages naming the same joints in the same order are stacked into one array (one column
    per joint) rather than read value by value: a recording is mostly such messages."""
    groups = {}  # (quantity, names) -> message indices, times, values
    for index, (t, names, values) in enumerate(samples):
        for quantity, array in values.items():
            if len(array) == 0:
                continue
            if len(array) != len(names):
                raise RecordingError(f"{source}: a message at t = {t:.6f} s has {len(names)} names but "
                                     f"{len(array)} {_MESSAGE_FIELDS[quantity]} values")
            group = groups.setdefault((quantity, names), ([], [], []))
            for column, value in zip(group, (index, t, array)):
                column.append(value)
    parts = {quantity: {} for quantity in QUANTITIES}
    for (quantity, names), (indices, times, rows) in groups.items():
        rows = np.array(rows, dtype=float)
        for column, name in enumerate(names):
            parts[quantity].setdefault(name, []).append((indices, times, rows[:, column]))
    recording = Recording(source)
    for quantity, joints in parts.items():
        for name, pieces in joints.items():
            indices, times, values = (np.concatenate(part) for part in zip(*pieces))
            times = times.astype(float)
            order = np.lexsort((indices, times))  # by time, then in message order
            recording.series[quantity][name] = (times[order], values[order])
    return recording


def read_csv(path):
    """A CSV recording (module docstring)."""
    path = Path(path)
    with open(path, newline="") as stream:
        rows = [row for row in csv.reader(stream) if row]
    if not rows or rows[0][:1] != ["t"]:
        raise RecordingError(f"{path}: a CSV recording starts with a header row whose first column is 't'")
    header = rows[0]
    if any(len(row) != len(header) for row in rows[1:]):
        raise RecordingError(f"{path}: every row needs {len(header)} cells, like the header")
    cells = np.char.strip(np.array(rows[1:], dtype=str).reshape(-1, len(header)))
    absent = np.char.str_len(cells) == 0
    try:
        data = np.where(absent, "nan", cells).astype(float)
    except ValueError as error:
        raise RecordingError(f"{path}: not a table of numbers ({error})") from None
    recording = Recording(str(path))
    for index, column in enumerate(header[1:], start=1):
        quantity, _, joint = column.partition("_")
        if quantity in QUANTITIES and joint:
            present = ~absent[:, index]
            recording.series[quantity][joint] = (data[present, 0], data[present, index])
    if not recording.series["q"]:
        raise RecordingError(f"{path}: no q_<joint> columns in the header")
    return recording


def _typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)  # JointState is the same in every ROS 2 distribution


def read_rosbag(path, topic="joint_states"):
    """Every JointState on ``topic`` (with or without its leading ``/``) of a rosbag2 bag."""
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2 import ReaderError

    path = Path(path)
    bag = path.parent if path.is_file() else path
    wanted = "/" + topic.lstrip("/")
    try:
        with AnyReader([bag], default_typestore=_typestore()) as reader:
            connections = [c for c in reader.connections if c.topic == wanted]
            if not connections:
                available = sorted({c.topic for c in reader.connections if c.msgtype == JOINT_STATE})
                raise RecordingError(f"{bag}: no topic {wanted!r}; JointState topics in the bag: "
                                     f"{', '.join(available) or 'none'} (choose one with --topic)")
            wrong = [c for c in connections if c.msgtype != JOINT_STATE]
            if wrong:
                raise RecordingError(f"{bag}: {wanted} carries {wrong[0].msgtype}, not {JOINT_STATE}")
            samples = []
            for connection, received_ns, raw in reader.messages(connections=connections):
                msg = reader.deserialize(raw, connection.msgtype)
                stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
                t = stamp if stamp > 0 else received_ns * 1e-9
                samples.append((t, tuple(msg.name), {q: np.asarray(getattr(msg, f)) for q, f in _MESSAGE_FIELDS.items()}))
    except ReaderError as error:
        raise RecordingError(f"{bag}: not a readable rosbag2 bag ({error})") from None
    return _collect(str(bag), samples)


def read_recording(path, topic="joint_states"):
    """A rosbag2 directory/file or a CSV file (module docstring)."""
    path = Path(path)
    if not path.exists():
        raise RecordingError(f"no such recording: {path}")
    if path.is_file() and path.suffix.lower() == ".csv":
        return read_csv(path)
    if path.is_dir() or path.suffix.lower() in (".db3", ".mcap"):
        return read_rosbag(path, topic)
    raise RecordingError(f"{path}: give a rosbag2 directory, a .db3/.mcap file or a .csv file")


def write_csv(path, joint_names, t, q, qd=None, tau=None):
    """A CSV recording from arrays of shape (N, n) (qd and tau optional)."""
    blocks = [("q", q), ("qd", qd), ("tau", tau)]
    header = ["t"] + [f"{quantity}_{name}" for quantity, values in blocks if values is not None for name in joint_names]
    data = np.column_stack([t] + [values for _, values in blocks if values is not None])
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        writer.writerows([[f"{value:.10g}" for value in row] for row in data])


def write_rosbag(path, messages, storage="sqlite3", topic="/joint_states"):
    """A rosbag2 bag of JointState messages ``(t, names, position, velocity, effort)`` (empty lists allowed).

    ``storage`` is ``"sqlite3"`` or ``"mcap"``: the two formats ``ros2 bag record`` writes.
    """
    from rosbags.rosbag2 import StoragePlugin, Writer

    typestore = _typestore()
    JointState = typestore.types[JOINT_STATE]
    Header, Time = typestore.types["std_msgs/msg/Header"], typestore.types["builtin_interfaces/msg/Time"]
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    with Writer(Path(path), version=9, storage_plugin=plugin) as writer:
        connection = writer.add_connection("/" + topic.lstrip("/"), JOINT_STATE, typestore=typestore)
        for t, names, position, velocity, effort in messages:
            ns = int(round(t * 1e9))
            msg = JointState(Header(Time(ns // 10**9, ns % 10**9), ""), list(names),
                             *(np.asarray(v, dtype=np.float64) for v in (position, velocity, effort)))
            writer.write(connection, ns, typestore.serialize_cdr(msg, JOINT_STATE))


def joint_state_messages(joint_names, t, q, qd=None, tau=None):
    """``(t, names, position, velocity, effort)`` per row of (N, n) arrays, for :func:`write_rosbag`."""
    empty = np.empty(0)
    for k in range(len(t)):
        yield (t[k], joint_names, q[k], qd[k] if qd is not None else empty, tau[k] if tau is not None else empty)
