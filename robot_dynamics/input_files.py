"""The one rule for opening a file that a user, a command-line option or a node parameter names.

A URDF given by path (``load_urdf``, ``--urdf``, every CLI command) and ``trajectory_publisher``'s
``excitation_file`` are read by :func:`read_text_file` only: a regular file (a FIFO with no writer
would block the reader for ever, ``/dev/zero`` would be read until memory runs out, a directory or
a socket means a slip), of at most a size per kind of file, UTF-8 text. The file is opened without
blocking and checked through the open descriptor, so a path swapped between a check and the read
changes nothing.

A YAML file someone names (``check-trajectory``'s JointTrajectory, a bag's ``metadata.yaml``) is read
by :func:`read_yaml_file`: the same rule, then parsed without anchors and aliases (a 700-byte
"billion laughs" file expands to gigabytes through them; no ROS message or bag needs them) and with
at most :data:`MAX_YAML_NODES` values, so that parsing stays within a few hundred megabytes and
seconds. A rosbag2 bag someone names is checked by :func:`check_bag` before a bag reader opens it
(its ``metadata.yaml`` read as above, its ``.db3``/``.mcap`` files regular), and read inside
:func:`reading_bag`, which turns whatever a damaged bag makes the reader raise into one error naming it.

>>> read_text_file("/dev/zero", MAX_URDF_BYTES, "URDF")
Traceback (most recent call last):
...
ValueError: URDF '/dev/zero' is not a regular file (a character device)
"""

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["MAX_EXCITATION_BYTES", "MAX_TRAJECTORY_BYTES", "MAX_URDF_BYTES", "MAX_YAML_NODES", "check_bag",
           "check_regular_file", "read_text_file", "read_yaml_file", "reading_bag"]

MAX_URDF_BYTES = 16 * 1024 * 1024
"""A URDF larger than this is refused (the largest real ones are about 1 MB)."""

MAX_EXCITATION_BYTES = 64 * 1024 * 1024
"""An excitation CSV larger than this is refused (``robot-dynamics excite arm7_gripper --duration 60``
writes 9 MB: this allows about 7 minutes of it)."""

MAX_TRAJECTORY_BYTES = 16 * 1024 * 1024
"""A planned trajectory file (CSV or YAML) larger than this is refused (a MoveIt plan is a few kB; this
holds about 30 000 waypoints of 7 joints as ``ros2 topic echo`` prints them)."""

MAX_YAML_NODES = 200_000
"""A YAML file with more values (scalars, lists, maps) than this is refused before they are built (PyYAML
builds about 1 kB and 20-50 us a value; a JointTrajectory of 1000 points of 7 joints has 32 000)."""

MAX_BAG_METADATA_BYTES = 1024 * 1024
"""A bag's ``metadata.yaml`` larger than this is refused (``ros2 bag record`` writes a few kB)."""

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _open_regular(path, max_bytes, shown):
    """A read-only descriptor of the regular file ``path`` of at most ``max_bytes`` bytes (``None``: any
    size), opened without blocking; ``ValueError`` naming ``shown`` otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ValueError(f"cannot open {shown}: {error.strerror}") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise ValueError(f"{shown} is not a regular file ({kind})")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(descriptor)
        raise ValueError(f"{shown} has {info.st_size} bytes, more than the {max_bytes} allowed")
    return descriptor


def check_regular_file(path, max_bytes=None, what="file"):
    """``ValueError`` unless ``path`` is a regular file (of at most ``max_bytes`` bytes when given), for a
    file another library will open (a bag's database): checked without blocking, as
    :func:`read_text_file` does."""
    os.close(_open_regular(path, max_bytes, f"{what} {str(path)!r}"))


def read_text_file(path, max_bytes, what="file"):
    """The UTF-8 text of the regular file ``path`` of at most ``max_bytes`` bytes; ``ValueError``
    naming ``what``, the path and the reason otherwise (module docstring)."""
    shown = f"{what} {str(path)!r}"
    descriptor = _open_regular(path, max_bytes, shown)
    with open(descriptor, "rb") as stream:
        try:
            data = stream.read(max_bytes + 1)  # (a file that grew since the check is cut short here)
        except OSError as error:
            raise ValueError(f"cannot read {shown}: {error.strerror}") from None
    if len(data) > max_bytes:
        raise ValueError(f"{shown} has more than the {max_bytes} bytes allowed")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{shown} is not UTF-8 text (byte {error.start})") from None


def read_yaml_file(path, max_bytes, what="file"):
    """The documents of the YAML file ``path`` (a list; empty documents left out), read by
    :func:`read_text_file` and parsed safely without anchors or aliases, with at most
    :data:`MAX_YAML_NODES` values; ``ValueError`` naming ``what``, the path and the reason otherwise."""
    import yaml

    shown = f"{what} {str(path)!r}"
    text = read_text_file(path, max_bytes, what)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        nodes = 0
        for event in yaml.parse(text, Loader=loader):  # (events only: nothing is built yet)
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise ValueError(f"{shown} uses YAML anchors or aliases (&, *), which are not accepted")
            if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if nodes > MAX_YAML_NODES:
                    raise ValueError(f"{shown} holds more than {MAX_YAML_NODES} YAML values")
        return [document for document in yaml.load_all(text, Loader=loader) if document is not None]
    except yaml.YAMLError as error:
        reason = " ".join(str(error).split())
        raise ValueError(f"{shown} is not YAML ({reason[:200]})") from None
    except RecursionError:
        raise ValueError(f"{shown} nests its values too deeply") from None


def check_bag(bag):
    """``ValueError`` naming ``bag`` unless it is a directory with a ``metadata.yaml`` that
    :func:`read_yaml_file` accepts and whose ``.db3``/``.mcap`` files are regular files."""
    bag = Path(bag)
    if not (bag / "metadata.yaml").is_file():
        raise ValueError(f"{bag}: no metadata.yaml: a rosbag2 bag is the directory ros2 bag record wrote "
                         "(a lone .db3/.mcap file needs its metadata.yaml beside it)")
    read_yaml_file(bag / "metadata.yaml", MAX_BAG_METADATA_BYTES, "bag metadata")
    for entry in bag.iterdir():
        if entry.suffix.lower() in (".db3", ".mcap"):
            check_regular_file(entry, None, "bag file")


@contextlib.contextmanager
def reading_bag(bag, error=ValueError):
    """Reading the bag ``bag``: any exception but ``error`` (rosbags, sqlite3, yaml and the CDR decoder
    raise many types on a damaged bag) becomes one ``error`` naming the bag and the reader's reason."""
    try:
        yield
    except error:
        raise
    except MemoryError:
        raise error(f"{bag}: too large to read into memory") from None
    except Exception as exc:  # noqa: BLE001 - see the docstring
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise error(f"{bag}: not a readable rosbag2 bag ({type(exc).__name__}: {detail[:200]})") from None


def bag_typestore():
    """rosbags' message definitions for the bags we read and write (JointState and JointTrajectory are the
    same in every ROS 2 distribution)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_HUMBLE)
