"""numba's on-disk cache of our kernels, kept true to the source.

numba checks a cached kernel against its own file only, but our kernels inline functions of other
modules (``dynamics._inverse`` compiles ``kernels.newton_euler`` into itself): after an update that
changes ``kernels.py`` alone, the cached inverse dynamics would still run the old Newton-Euler. So a
fingerprint of every compiled module's source is kept beside the cache, and when the sources differ
from it the package's cached kernels are dropped; they compile again, once.
"""

import hashlib
import warnings
from pathlib import Path

from numba.core.caching import FunctionCache

#: the modules with compiled (``cache=True``) functions, all in this directory
COMPILED_MODULES = ("control", "dynamics", "kernels", "kinematics", "regressor", "simulation", "spatial")
FINGERPRINT_FILE = "robot_dynamics-sources.sha256"
#: written by :func:`mark_compiled` once a warm-up part has compiled; dropped with the kernels
COMPILED_STAMP = "robot_dynamics-compiled-{part}"


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
                      f"delete its {', '.join(COMPILED_MODULES)} files by hand", RuntimeWarning, stacklevel=2)


def mark_compiled(part: str) -> None:
    """Note in the cache that the kernels of warm-up part ``part`` are in it (nothing if it is not writable)."""
    cache = cache_directory()
    if cache is not None:
        try:
            (cache / COMPILED_STAMP.format(part=part)).touch()
        except OSError:
            pass


def is_compiled(part: str) -> bool:
    """Whether the cache holds the kernels of warm-up part ``part`` (compiled from these sources)."""
    cache = cache_directory()
    return cache is not None and (cache / COMPILED_STAMP.format(part=part)).is_file()
