"""numba's on-disk cache of our kernels, kept true to the source.

numba checks a cached kernel against its own file only, but our kernels inline functions of other
modules (``dynamics._inverse`` compiles ``kernels.newton_euler`` into itself): after an update that
changes ``kernels.py`` alone, the cached inverse dynamics would still run the old Newton-Euler. So a
fingerprint of every compiled module's source is kept beside the cache, and when the sources differ
from it the package's cached kernels are dropped; they compile again, once.
"""

import hashlib
import importlib
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numba
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

try:
    import fcntl
except ImportError:  # not POSIX: saves go unlocked, as numba's own
    fcntl = None

#: the modules with compiled (``cache=True``) functions, all in this directory
COMPILED_MODULES = (
    "cholesky", "contact", "control", "dynamics", "equations_of_motion", "integrators", "kernels", "kinematics",
    "observer", "regressor", "spatial", "wrenches",
)
FINGERPRINT_FILE = "robot_dynamics-sources.sha256"
#: written by :func:`write_compiled_stamp` once a warm-up part has compiled; dropped with the kernels
COMPILED_STAMP = "robot_dynamics-compiled-{part}"
#: the lock file in the cache directory that :class:`LockedSaves` holds while it saves a kernel
SAVE_LOCK = "robot_dynamics-save.lock"
#: the lock file in the cache directory that :func:`compiling_alone` holds
COMPILE_LOCK = "robot_dynamics-compile.lock"


def source_fingerprint() -> str:
    """sha256 of the compiled modules' sources."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in COMPILED_MODULES:
        digest.update((here / f"{name}.py").read_bytes())
    return digest.hexdigest()


def cache_directory() -> Path | None:
    """Where numba caches this package's kernels (``NUMBA_CACHE_DIR``, the package's
    ``__pycache__`` or the user's cache, numba's choice); None if nowhere is writable."""
    try:
        return Path(FunctionCache(cache_directory).cache_path)
    except RuntimeError:  # numba found no writable place: it compiles without caching
        return None


def drop_stale_kernels() -> None:
    """Delete the cached kernels if they were compiled from other sources than these."""
    cache = cache_directory()
    if cache is None:
        return
    stamp = cache / FINGERPRINT_FILE
    try:
        fingerprint = source_fingerprint()
        if stamp.is_file() and stamp.read_text() == fingerprint:
            return
        for name in COMPILED_MODULES:
            for path in cache.glob(f"{name}.*.nb[ic]"):
                path.unlink(missing_ok=True)
        for path in cache.glob(COMPILED_STAMP.format(part="*")):
            path.unlink(missing_ok=True)
        partial = stamp.with_suffix(".partial")
        partial.write_text(fingerprint)
        partial.replace(stamp)
    except OSError as exc:
        warnings.warn(f"robot_dynamics: cannot check numba's cache in {cache} ({exc}); after an update, "
                      f"delete its {', '.join(COMPILED_MODULES)} and {COMPILED_STAMP.format(part='*')} files "
                      "by hand", RuntimeWarning, stacklevel=2)


def _compiled_stamp_text() -> str:
    """What a part's stamp holds: whatever makes numba or this module drop its cached kernels (our
    sources' fingerprint, the compiled modules' modification times and sizes, numba's and Python's
    versions), so a stamp left beside dropped kernels never counts."""
    here = Path(__file__).parent
    stats = [(here / f"{name}.py").stat() for name in COMPILED_MODULES]
    return " ".join([source_fingerprint(), f"numba {numba.__version__}", f"python {sys.version_info[:2]}",
                     *(f"{stat.st_mtime} {stat.st_size}" for stat in stats)])


def write_compiled_stamp(part: str) -> None:
    """Note in the cache that the kernels of warm-up part ``part`` are in it (nothing if it is not writable)."""
    cache = cache_directory()
    if cache is not None:
        try:
            (cache / COMPILED_STAMP.format(part=part)).write_text(_compiled_stamp_text())
        except OSError:
            pass


def has_compiled_stamp(part: str) -> bool:
    """Whether the cache holds the kernels of warm-up part ``part``, compiled from these sources by
    this numba and Python."""
    cache = cache_directory()
    try:
        return cache is not None and (cache / COMPILED_STAMP.format(part=part)).read_text() == _compiled_stamp_text()
    except OSError:
        return False


class LockedSaves(FunctionCache):
    """numba's on-disk cache of one kernel, saving under a lock on the cache directory.

    numba rewrites a kernel's index file without one. ``warm_up`` compiles in two processes, which
    may save two signatures of one kernel at the same moment (``kernels.vec`` has one per column
    offset): both could then name their code the same data file, and the index would point one
    signature at the other's code.  Under the lock, each save reads the index the last one wrote.
    """

    def save_overload(self, sig, data):
        if fcntl is None:
            return super().save_overload(sig, data)
        self._impl.locator.ensure_cache_path()  # (a new cache directory exists only from the first save)
        with _held(Path(self._cache_path) / SAVE_LOCK):
            return super().save_overload(sig, data)


@contextmanager
def compiling_alone():
    """Hold the cache's compile lock for the block: processes that find the cache cold compile into it
    one after the other (two nodes started together by hand), each then loading what the ones before
    compiled, instead of all compiling the same kernels at once on the same cores.  A process that
    dies releases it.  Without a cache (or ``fcntl``) it holds nothing."""
    cache = cache_directory()
    if cache is None or fcntl is None:
        yield
        return
    try:
        cache.mkdir(parents=True, exist_ok=True)  # (numba makes it only at its first save)
    except OSError:
        pass
    with _held(cache / COMPILE_LOCK):
        yield


@contextmanager
def _held(path):
    """An exclusive lock on the file ``path`` for the block; none where it cannot be had (a file
    system without locks, a directory not writable): then the block runs unlocked, as numba's own."""
    try:
        lock = open(path, "a")
    except OSError:
        yield
        return
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        except OSError:
            pass
        yield


def lock_cache_saves() -> None:
    """Give every cached kernel of :data:`COMPILED_MODULES` a :class:`LockedSaves` cache (at import,
    before anything compiles)."""
    for name in COMPILED_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and type(value._cache) is FunctionCache:
                value._cache = LockedSaves(value.py_func)
