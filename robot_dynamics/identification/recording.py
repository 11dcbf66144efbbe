"""Recordings of ``joint_states``: rosbag2 directories (sqlite3 or MCAP) and CSV files.

A recording is kept as one time series per joint and quantity (position, velocity, effort),
because ``sensor_msgs/JointState`` messages may carry only some joints (several publishers
merged on one topic, as the dynamics node merges them by name) and may leave velocity or
effort empty.  :func:`read_recording` reads either format:

* a rosbag2 directory (or its ``.db3``/``.mcap`` file), read with ``rosbags`` (pure Python,
  no ROS installation): every ``sensor_msgs/msg/JointState`` message on ``topic``, stamped by
  its ``header.stamp`` (the bag's receive time if the stamp is zero);
* a CSV file with a ``t`` column and ``q_<joint>``, optional ``qd_<joint>`` and ``tau_<joint>``
  columns (an empty cell means "not in this sample"; ``nan`` is a bad sample); without a ``t``
  column the rows are ``1 / rate`` s apart, and the samples the logger's clock dropped (found by
  :func:`skipped_samples`) are put back in time.
"""

import csv
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..input_files import bag_typestore, check_bag, reading_bag

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

    def for_model(self, names):
        """This recording's series of the joints ``names`` (a model's, in its order), told apart from the rest:
        a recording whose joints are numbered ``0 .. n-1`` (columns ``q_0``, ``tau_0``, as loggers that know
        no names write them) is read in the model's joint order, said in a warning; series of other names
        (``tau_ext_0``, another robot's joints) are left out, said in a warning too."""
        recorded = set(self.series["q"])
        if not recorded & set(names) and recorded == {str(k) for k in range(len(names))}:
            numbered = {str(k): name for k, name in enumerate(names)}
            warnings.warn(f"{self.source}: joints numbered 0..{len(names) - 1}, not named: read as the model's "
                          f"joints in order ({', '.join(f'{k} = {name}' for k, name in list(numbered.items())[:8])}"
                          f"{', ...' if len(names) > 8 else ''})", stacklevel=2)
            for quantity, series in self.series.items():
                self.series[quantity] = {numbered.get(joint, joint): values for joint, values in series.items()}
        others = sorted({f"{quantity}_{joint}" for quantity, series in self.series.items() for joint in series
                         if joint not in names})
        if others:
            warnings.warn(f"{self.source}: column(s) or joint(s) of no joint of the model, left out: "
                          f"{', '.join(others[:8])}{', ...' if len(others) > 8 else ''}", stacklevel=2)
            for quantity, series in self.series.items():
                self.series[quantity] = {joint: values for joint, values in series.items() if joint in names}
        return self


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


MAX_CELLS = 50_000_000     # numbers in one CSV recording (400 MB as floats): longer ones must be split
CHUNK_ROWS = 8_192         # rows parsed per block: the memory of the text held at once is bounded by it
MAX_LINE = 1 << 20         # characters in one CSV row (a row of numbers is far shorter)


def _csv_rows(path, stream):
    """The non-empty rows of a CSV text ``stream``, each line read with a length bound (a file of NUL
    bytes or without line breaks is refused instead of read whole)."""
    def lines():
        while True:
            line = stream.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE or "\0" in line:
                raise RecordingError(f"{path}: not a CSV text file (a line longer than {MAX_LINE} characters or "
                                     "with NUL bytes)")
            yield line

    return (row for row in csv.reader(lines()) if row)


def _numbers(path, rows, width, first_line):
    """(values, absent): (N, width) floats of the CSV's data rows and where a cell was empty, parsed
    CHUNK_ROWS rows at a time."""
    blocks, block, line = [], [], first_line
    for line, row in enumerate(rows, start=first_line):
        if len(row) != width:
            raise RecordingError(f"{path}: row {line} has {len(row)} cells; every row needs {width}, like the header")
        block.append(row)
        if len(block) == CHUNK_ROWS:
            blocks.append(_parse_block(path, block, line))
            block = []
            if len(blocks) * CHUNK_ROWS * width > MAX_CELLS:
                raise RecordingError(f"{path}: more than {MAX_CELLS} numbers: split the recording, or decimate it")
    if block:
        blocks.append(_parse_block(path, block, line))
    if not blocks:
        return np.empty((0, width)), np.empty((0, width), dtype=bool)
    return np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])


def _parse_block(path, rows, last_line):
    cells = np.char.strip(np.array(rows, dtype=str))
    absent = np.char.str_len(cells) == 0
    try:
        return np.where(absent, "nan", cells).astype(float), absent
    except ValueError as error:
        raise RecordingError(f"{path}: not a table of numbers near row {last_line} ({error})") from None


def read_csv(path, rate=None):
    """A CSV recording (module docstring); without a ``t`` column the rows are ``1 / rate`` s apart."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as stream:
            rows = _csv_rows(path, stream)
            header = [cell.strip() for cell in next(rows, [])]
            if not header:
                raise RecordingError(f"{path}: empty file; a CSV recording starts with a header row")
            timed = header[0] == "t"
            if not timed and rate is None:
                raise RecordingError(f"{path}: the header's first column is not 't': give the sampling rate "
                                     "with --rate for a CSV without time column")
            data, absent = _numbers(path, rows, len(header), 2)
    except UnicodeDecodeError as error:
        raise RecordingError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason}); save the CSV as UTF-8") from None
    except csv.Error as error:
        raise RecordingError(f"{path}: not a CSV file ({error})") from None
    if len(data) == 0:
        raise RecordingError(f"{path}: a header but no data rows")
    if not timed:
        data = np.column_stack([_restored_clock(path, header, data, rate), data])
        absent = np.column_stack([np.zeros(len(data), dtype=bool), absent])
        header = ["t"] + header
    recording = Recording(str(path))
    for index, column in enumerate(header[1:], start=1):
        quantity, _, joint = column.partition("_")
        if quantity in QUANTITIES and joint:
            present = ~absent[:, index]
            recording.series[quantity][joint] = (data[present, 0], data[present, index])
    if not recording.series["q"]:
        raise RecordingError(f"{path}: no q_<joint> columns in the header (columns: t, q_<joint>, qd_<joint>, tau_<joint>)")
    return recording


SKIP_TOLERANCE = 0.1  # a step within 10 % of m + 1 times its neighbours' (and along them) skipped m samples
MAX_SKIP = 50         # longer skips are not told from a jerk of the arm by positions alone


def skipped_samples(q):
    """(N,) ints: how many samples the clock dropped just before each row of positions (N, n) taken
    at a uniform rate.  Row ``k`` follows a skip of ``m`` samples when its step ``d_k = q_k - q_k-1``
    is ``m + 1`` times the mean of its neighbours' steps, within ``SKIP_TOLERANCE`` in length and in
    direction (``|d_k - (m + 1) (d_k-1 + d_k+1) / 2| <= SKIP_TOLERANCE |d_k|``): the arm's velocity
    is smooth over three samples, so a step that long is time that passed unrecorded.  Steps of an
    arm at rest (below 1e-9 rad or m) tell nothing."""
    skipped = np.zeros(len(q), dtype=int)
    if len(q) < 4:
        return skipped
    steps = np.diff(q, axis=0)
    neighbours = 0.5 * (steps[:-2] + steps[2:])
    middle = steps[1:-1]
    length, unit = np.linalg.norm(middle, axis=1), np.linalg.norm(neighbours, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(unit > 1e-9, length / unit, 0.0)
    multiple = np.rint(ratio)
    along = np.linalg.norm(middle - multiple[:, None] * neighbours, axis=1) <= SKIP_TOLERANCE * length
    found = (multiple >= 2) & (multiple <= MAX_SKIP + 1) & (np.abs(ratio - multiple) <= SKIP_TOLERANCE * multiple) & along
    skipped[2:-1][found] = (multiple[found] - 1).astype(int)
    return skipped


def _restored_clock(path, header, data, rate):
    """The times of a CSV's rows at ``rate`` Hz, with the samples its clock dropped put back
    (:func:`skipped_samples`, said in a warning)."""
    columns = [index for index, column in enumerate(header) if column.startswith("q_")]
    positions = data[:, columns]
    rows = np.all(np.isfinite(positions), axis=1)
    skipped = np.zeros(len(data), dtype=int)
    skipped[rows] = skipped_samples(positions[rows])
    if skipped.any():
        where = np.flatnonzero(skipped)
        warnings.warn(f"{path}: the clock dropped {int(skipped.sum())} sample(s) in {len(where)} place(s) (rows "
                      f"{', '.join(str(k + 2) for k in where[:8])}{' ...' if len(where) > 8 else ''}: a position step a "
                      "whole multiple of its neighbours'): their time was restored, and they are gaps in the clock",
                      stacklevel=3)
    return (np.arange(len(data)) + np.cumsum(skipped)) / rate


MAX_MESSAGES = 3_600_000   # JointState messages read from one bag (1 h at 1 kHz; about 1 kB of memory each)


def read_rosbag(path, topic="joint_states"):
    """Every JointState on ``topic`` (with or without its leading ``/``) of a rosbag2 bag, read by the rule of
    every command's bags (:func:`robot_dynamics.input_files.check_bag`: its metadata.yaml bounded, without
    YAML aliases; any reader's failure one :class:`RecordingError` naming the bag)."""
    path = Path(path)
    bag = path.parent if path.is_file() else path
    try:
        check_bag(bag)
    except ValueError as error:
        raise RecordingError(str(error)) from None
    with reading_bag(bag, RecordingError):
        samples = _bag_samples(bag, "/" + topic.lstrip("/"))
    return _collect(str(bag), samples)


def _bag_samples(bag, wanted):
    from rosbags.highlevel import AnyReader

    with AnyReader([bag], default_typestore=bag_typestore()) as reader:
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
            if len(samples) >= MAX_MESSAGES:
                raise RecordingError(f"{bag}: more than {MAX_MESSAGES} messages on {wanted}: split the recording")
            msg = reader.deserialize(raw, connection.msgtype)
            stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            t = stamp if stamp > 0 else received_ns * 1e-9
            samples.append((t, tuple(msg.name), {q: np.asarray(getattr(msg, f)) for q, f in _MESSAGE_FIELDS.items()}))
    return samples


def read_recording(path, topic="joint_states", rate=None):
    """A rosbag2 directory/file or a CSV file (module docstring); ``rate`` (Hz) times a CSV without
    a ``t`` column."""
    path = Path(path)
    if not path.exists():
        raise RecordingError(f"no such recording: {path}")
    if path.is_file() and path.suffix.lower() == ".csv":
        return read_csv(path, rate)
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

    typestore = bag_typestore()
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
