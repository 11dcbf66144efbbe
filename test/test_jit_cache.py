"""numba's cache never serves a kernel compiled from older sources (:mod:`robot_dynamics.jit_cache`):
numba checks a cached kernel against its own file only, and ours inline functions of other modules."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import robot_dynamics as rd

# in a fresh interpreter: which package it imported, and the two-link arm's gravity torques
GRAVITY = """
import json, robot_dynamics as rd
arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
print(json.dumps([rd.__file__, rd.gravity_torques(arm, [0.1, 0.2]).tolist()]))
"""


def gravity(source, cache):
    env = dict(os.environ, PYTHONPATH=str(source), NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", GRAVITY], env=env, cwd=source, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    package, torques = json.loads(done.stdout.splitlines()[-1])
    assert Path(package).is_relative_to(source)
    return np.array(torques)


def test_a_change_to_an_inlined_module_is_compiled_into_its_callers(tmp_path):
    """Newton-Euler (kernels.py) edited to double every joint torque: the gravity torques (dynamics.py,
    unchanged, cached with the old Newton-Euler inside) double too."""
    source, cache = tmp_path / "source", tmp_path / "cache"
    shutil.copytree(Path(rd.__file__).parent, source / "robot_dynamics", ignore=shutil.ignore_patterns("__pycache__"))
    arm = rd.load_urdf(rd.examples.TWO_LINK_URDF)
    first = gravity(source, cache)
    np.testing.assert_allclose(first, rd.gravity_torques(arm, [0.1, 0.2]), rtol=1e-12)
    np.testing.assert_allclose(gravity(source, cache), first, rtol=1e-12)  # (from the cache)
    kernels = source / "robot_dynamics" / "kernels.py"
    text = kernels.read_text()
    last_line = "    to_coordinates(topology, bodies, joints[:, 3], tau)\n"
    assert text.count(last_line) == 1
    kernels.write_text(text.replace(last_line, "    joints[:, 3] *= 2.0\n" + last_line))
    np.testing.assert_allclose(gravity(source, cache), 2 * first, rtol=1e-12)


def test_every_module_with_cached_kernels_is_in_the_fingerprint():
    from robot_dynamics.jit_cache import COMPILED_MODULES

    package = Path(rd.__file__).parent
    cached = {path.stem for path in package.rglob("*.py") if "numba.njit(cache=True" in path.read_text()}
    assert cached == set(COMPILED_MODULES)


def test_every_cached_kernel_saves_under_the_lock(tmp_path, monkeypatch):
    """Two processes saving signatures of one kernel at once (warm_up's) take turns (jit_cache.LockedSaves)."""
    import numba
    from numba.core.registry import CPUDispatcher

    from robot_dynamics import jit_cache

    for name in jit_cache.COMPILED_MODULES:
        module = sys.modules[f"robot_dynamics.{name}"]
        kernels = [value for value in vars(module).values()
                   if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__]
        assert kernels and all(isinstance(kernel._cache, jit_cache.LockedSaves) for kernel in kernels), name

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    held = []

    def flock(file, operation):
        held.append((Path(file.name).name, operation, sorted(p.name for p in tmp_path.rglob("*.nbi"))))

    monkeypatch.setattr(jit_cache.fcntl, "flock", flock)
    twice = numba.njit(cache=True)(lambda x: 2 * x)
    twice._cache = jit_cache.LockedSaves(twice.py_func)
    assert twice(3) == 6 and twice(1.5) == 3.0  # two signatures, two saves
    assert [(name, operation) for name, operation, _ in held] == [(jit_cache.SAVE_LOCK, jit_cache.fcntl.LOCK_EX)] * 2
    assert held[0][2] == [] and len(held[1][2]) == 1  # each taken before its save wrote the index
    assert len(list(tmp_path.rglob("*.nbc"))) == 2
