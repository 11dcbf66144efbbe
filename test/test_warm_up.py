"""What :func:`robot_dynamics.warm_up.warm_up` compiles, counted (never timed): from an empty
numba cache, each of the package's kernels for one signature (the gravity torques' in the helper
process, read back from the cache) and none of numba's slice-copy error messages (their string
formatting alone cost ~2.5 s of a cold start); on the second start nothing, everything comes from
the cache."""

import json
import os
import subprocess
import sys

from robot_dynamics.warm_up import PARTS

# Runs in a fresh interpreter (numba keeps what it compiled for the life of a process) and prints
# every compilation numba reports: (function, its module, argument types).
RECORD = """
import json, sys
from numba.core import event

compiled = []

class Record(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        compiled.append((func.__qualname__, func.__module__, str(ev.data["args"])))

    def on_end(self, ev):
        pass

event.register("numba:compile", Record())
from robot_dynamics.warm_up import warm_up
warm_up(*sys.argv[1:])
print(json.dumps(compiled))
"""

# Row readers called with a literal column offset: numba compiles one version per offset (as many
# as the layout has fields), each a few lines.
PER_OFFSET = {"vec", "store", "rotation", "inertia"}


def compiled(parts, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", RECORD, *parts], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    return [tuple(entry) for entry in json.loads(done.stdout)]


def test_every_kernel_compiles_once_then_loads_from_the_cache(tmp_path):
    first = compiled(PARTS, tmp_path)
    ours = [name for name, module, _ in first if module.startswith("robot_dynamics")]
    assert {"_step", "composite_rigid_body", "forward_state", "newton_euler"} <= set(ours)
    # gravity's own Newton-Euler (compiled knowing that qd and qdd are zero, dynamics._NONE) comes
    # from the helper process through the cache
    assert "_gravity" not in ours
    extra = sorted(name for name in set(ours) - PER_OFFSET if ours.count(name) > 1)
    assert not extra, f"compiled for more than one signature: {extra}"
    slice_copies = [entry for entry in first if "raise_with_shape_context" in entry[0]]
    assert not slice_copies, f"a slice copy in the compiled code compiles numba's message: {slice_copies}"
    assert compiled(PARTS, tmp_path) == []  # the second start loads everything from the cache
