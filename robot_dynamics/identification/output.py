"""Writing results all or nothing: every file is rendered in memory first, then written beside its
destination under a temporary name and moved into place, so a failure (a full disk, a path that
is a file) leaves no half-written result behind."""

import os
import shutil
import tempfile
from pathlib import Path


class OutputError(ValueError):
    """An output path that cannot take the results."""


def _nearest_existing(path):
    path = Path(os.path.abspath(path))
    while not path.exists():
        path = path.parent
    return path


def check_directory(path, option="--output", names=()):
    """Refuse, before any work, an output directory that is a file or cannot be created or written, or
    that holds something other than a file under one of the result ``names``."""
    path = Path(path)
    clashes = [name for name in names if (path / name).exists() and not (path / name).is_file()]
    if clashes:
        raise OutputError(f"{option} {path}: {path / clashes[0]} exists and is not a file")
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path}: exists and is not a directory")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise OutputError(f"{option} {path}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: cannot write in {existing} (permission denied)")
    try:  # a probe: /proc, a read-only mount or a full disk pass the permission bits
        os.rmdir(tempfile.mkdtemp(prefix=".probe.", dir=existing))
    except OSError as error:
        raise OutputError(f"{option} {path}: cannot write in {existing} ({error.strerror})") from None


def check_file(path, option="--output"):
    """Refuse, before any work, an output file that is a directory or whose directory cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{option} {path}: is a directory; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: no directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputError(f"{option} {path}: cannot write there (permission denied)")
    try:  # a probe, as in check_directory
        handle, probe = tempfile.mkstemp(prefix=".probe.", dir=parent)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise OutputError(f"{option} {path}: cannot write ({error.strerror})") from None


def _usual_mode(directory=False):
    """The mode a new file (or directory) gets from the user's umask (mkstemp and mkdtemp give 0600/0700)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if directory else 0o666) & ~umask


def write_file(path, write, option="--output"):
    """``write(stream)`` into a temporary file beside ``path``, then moved onto ``path``."""
    path = Path(path)
    check_file(path, option)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
    except OSError as error:  # e.g. /proc: a directory that lets nothing be created in it
        raise OutputError(f"{option} {path}: cannot write ({error.strerror})") from None
    try:
        with os.fdopen(handle, "w", newline="") as stream:
            write(stream)
        os.chmod(temporary, _usual_mode())
        os.replace(temporary, path)
    except OSError as error:
        raise OutputError(f"{option} {path}: cannot write ({error.strerror})") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def write_directory(path, files, option="--output"):
    """``files`` ({name: bytes}) into directory ``path``: all written to a temporary directory beside
    it, then moved in (the whole directory at once when ``path`` does not exist yet)."""
    path = Path(path)
    check_directory(path, option, files)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    except OSError as error:
        raise OutputError(f"{option} {path}: cannot write ({error.strerror})") from None
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        if not path.exists():
            os.chmod(staging, _usual_mode(directory=True))
            os.replace(staging, path)
        else:
            for name in files:
                os.replace(staging / name, path / name)
    except OSError as error:
        raise OutputError(f"{option} {path}: cannot write ({error.strerror})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
