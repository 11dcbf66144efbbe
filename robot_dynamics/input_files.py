"""The one rule for opening a file that a user, a command-line option or a node parameter names.

A URDF given by path (``load_urdf``, ``--urdf``, every CLI command) and ``trajectory_publisher``'s
``excitation_file`` are read by :func:`read_text_file` only: a regular file (a FIFO with no writer
would block the reader for ever, ``/dev/zero`` would be read until memory runs out, a directory or
a socket means a slip), of at most a size per kind of file, UTF-8 text. The file is opened without
blocking and checked through the open descriptor, so a path swapped between a check and the read
changes nothing.

>>> read_text_file("/dev/zero", MAX_URDF_BYTES, "URDF")
Traceback (most recent call last):
...
ValueError: URDF '/dev/zero' is not a regular file (a character device)
"""

import os
import stat

__all__ = ["MAX_EXCITATION_BYTES", "MAX_URDF_BYTES", "read_text_file"]

MAX_URDF_BYTES = 16 * 1024 * 1024
"""A URDF larger than this is refused (the largest real ones are about 1 MB)."""

MAX_EXCITATION_BYTES = 64 * 1024 * 1024
"""An excitation CSV larger than this is refused (``robot-dynamics excite arm7_gripper --duration 60``
writes 9 MB: this allows about 7 minutes of it)."""

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read_text_file(path, max_bytes, what="file"):
    """The UTF-8 text of the regular file ``path`` of at most ``max_bytes`` bytes; ``ValueError``
    naming ``what``, the path and the reason otherwise (module docstring)."""
    shown = f"{what} {str(path)!r}"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ValueError(f"cannot open {shown}: {error.strerror}") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise ValueError(f"{shown} is not a regular file ({kind})")
    if info.st_size > max_bytes:
        os.close(descriptor)
        raise ValueError(f"{shown} has {info.st_size} bytes, more than the {max_bytes} allowed")
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
