"""numba's cache never serves a kernel compiled from older sources (:mod:`robot_dynamics.jit`): numba
checks a cached kernel against its own file only, and ours inline functions of other modules."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np

import robot_dynamics as rd
from robot_dynamics import jit

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
    kernels = source / "robot_dynamics" / "rigid_body" / "kernels.py"
    text = kernels.read_text()
    last_line = "    to_coordinates(topology, bodies, joints[:, 3], tau)\n"
    assert text.count(last_line) == 1
    kernels.write_text(text.replace(last_line, "    joints[:, 3] *= 2.0\n" + last_line))
    np.testing.assert_allclose(gravity(source, cache), 2 * first, rtol=1e-12)


def test_every_kernel_is_declared_through_jit_in_a_module_of_the_key():
    """Every numba kernel of the package, found by importing each module, is one of jit.KERNELS (declared
    through jit.njit/jit.inline, so cached in the directory keyed by the sources), and is defined in a
    module whose source is part of that key (numba alone would check only the kernel's own file)."""
    import importlib
    import inspect

    from numba.core.registry import CPUDispatcher

    package = Path(rd.__file__).parent
    kernels = {}
    for path in jit.compiled_sources():
        module = importlib.import_module("robot_dynamics." + ".".join(path.relative_to(package).with_suffix("").parts))
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                kernels[f"{module.__name__}.{name}"] = value
    declared = {id(kernel) for kernel in jit.KERNELS}
    assert {"robot_dynamics.rigid_body.kernels.newton_euler", "robot_dynamics.rigid_body.dynamics._coriolis"} <= set(kernels)
    assert [name for name, kernel in kernels.items() if id(kernel) not in declared] == []
    sources = set(jit.compiled_sources())
    assert [k for k in jit.KERNELS if Path(inspect.getsourcefile(k.py_func)) not in sources] == []
    assert not [path for path in sources if path.relative_to(package).parts[0] in jit.ADAPTERS]


def test_kernels_are_cached_in_the_directory_of_these_sources_and_numbas_setting_is_left_as_it_was():
    from robot_dynamics.rigid_body import dynamics

    directory = jit.cache_directory()
    assert directory.name == f"{jit.PREFIX}{jit.source_key()}"
    assert Path(dynamics._gravity.stats.cache_path).is_relative_to(directory)
    assert numba.config.CACHE_DIR == os.environ.get("NUMBA_CACHE_DIR", "")
    other = numba.njit(cache=True)(lambda x: x + 1)
    assert not Path(other.stats.cache_path).is_relative_to(directory)
