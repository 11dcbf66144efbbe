"""numba's ``njit`` for this package, caching each kernel on disk where no stale kernel can be found.

numba checks a cached kernel against its own source file only, but our kernels compile into
themselves functions and constants of other modules (``dynamics._inverse`` inlines
``kernels.newton_euler``, which calls ``spatial``'s operations). So every kernel is cached in a
directory named after a hash of all the core modules' sources (:func:`cache_directory`): after any
change to them the kernels are looked for in a new, empty directory and compile afresh. Only numba's
public setting for where it caches (``numba.config.CACHE_DIR``, ``NUMBA_CACHE_DIR``) is used, and only
while a kernel is declared: numba's cache of anyone else's functions is left where numba puts it.
A kernel compiled for several literal arguments (a row reader's column offset) is not cached at all
(:func:`uncached`): every cached kernel has one version, which several processes may save at once.

Directories of older sources are left behind; ``robot-dynamics compile`` removes them.
"""

import functools
import hashlib
import os
import tempfile
from pathlib import Path

import numba

PACKAGE = Path(__file__).parent
#: subpackages without compiled code: their sources are not part of the kernels' key
ADAPTERS = ("cli", "identification", "nodes", "tools")
KEY_LENGTH = 16  # hex digits of the sources' sha256 in the directory name
PREFIX = "kernels-"

#: every kernel declared with :func:`njit` or :func:`inline`, in declaration order
KERNELS = []


def compiled_sources():
    """The source files whose change must recompile the kernels: every module of the package outside
    :data:`ADAPTERS` (the compiled ones and what they read: constants, inlined callees)."""
    return sorted(path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).parts[0] not in ADAPTERS)


def source_key():
    """sha256 (its first :data:`KEY_LENGTH` hex digits) of :func:`compiled_sources`, names included."""
    digest = hashlib.sha256()
    for path in compiled_sources():
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:KEY_LENGTH]


def cache_root():
    """Where the kernel directories go: ``NUMBA_CACHE_DIR`` if set, else the package's ``__pycache__``
    (numba's own default), else ``$XDG_CACHE_HOME/robot_dynamics`` (``~/.cache``) where that is not writable."""
    if numba.config.CACHE_DIR:
        return Path(numba.config.CACHE_DIR) / "robot_dynamics"
    in_tree = PACKAGE / "__pycache__"
    if os.access(in_tree if in_tree.is_dir() else PACKAGE, os.W_OK):
        return in_tree
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "robot_dynamics"


@functools.cache
def cache_directory():
    """The directory of this package's compiled kernels, named after :func:`source_key`; None if it
    cannot be written (then the kernels compile in every process, as numba does without a cache)."""
    directory = cache_root() / f"{PREFIX}{source_key()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
    except OSError:
        return None
    return directory


def _declare(function, options):
    directory = cache_directory()
    if directory is None:
        kernel = numba.njit(**options)(function)
    else:
        previous, numba.config.CACHE_DIR = numba.config.CACHE_DIR, str(directory)
        try:  # (numba reads CACHE_DIR when it makes the kernel's cache, here)
            kernel = numba.njit(cache=True, **options)(function)
        finally:
            numba.config.CACHE_DIR = previous
    KERNELS.append(kernel)
    return kernel


def njit(function):
    """``numba.njit(cache=True)``, cached in :func:`cache_directory`."""
    return _declare(function, {})


def inline(function):
    """``numba.njit(cache=True, inline="always")``: compiled into its callers, cached in :func:`cache_directory`."""
    return _declare(function, {"inline": "always"})


def uncached(function):
    """``numba.njit`` without the disk cache, for a small kernel called with literal arguments (a row
    reader's column offset), of which numba compiles one version per literal. numba's cache index of
    a kernel is not locked between processes: two of them saving two versions of one kernel at once
    (the workers of :func:`robot_dynamics.compiling.compile_parts`) could point one version at the
    other's code. A cached kernel therefore has one version; these few lines are compiled into each
    caller, and a caller loaded from the cache needs none of them."""
    kernel = numba.njit(function)
    KERNELS.append(kernel)
    return kernel


def compiled_count():
    """How many signatures of this package's kernels this process has compiled rather than loaded from
    the cache (numba's ``stats.cache_misses``; with no cache, every one it has)."""
    if cache_directory() is None:
        return sum(len(kernel.signatures) for kernel in KERNELS)
    return sum(sum(kernel.stats.cache_misses.values()) for kernel in KERNELS)
