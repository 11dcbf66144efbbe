"""What :func:`robot_dynamics.warm_up.warm_up` compiles, counted (never timed): from an empty
numba cache, each of the package's kernels for one signature, in one of the two processes that compile
(the second one's read back from the cache) and none of numba's slice-copy error messages (their string
formatting alone cost ~2.5 s of a cold start); on the second start nothing, everything comes from
the cache. And the stamp that says a part is compiled (``warm_up.compiled``)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robot_dynamics.warm_up import PARTS

# Runs in a fresh interpreter (numba keeps what it compiled for the life of a process) and prints
# every compilation numba reports: (function, its module, argument types).
RECORD = """
import json, os, sys
from numba.core import event

compiled = []

class Record(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        compiled.append((func.__qualname__, func.__module__, str(ev.data["args"])))

    def on_end(self, ev):
        pass

event.register("numba:compile", Record())
if os.environ.get("SECOND_PROCESS_FAILS"):
    sys.executable = "/bin/false"  # what warm_up starts as its second process exits at once
from robot_dynamics.warm_up import compiled as stamped, warm_up
before = stamped(*sys.argv[1:])
warm_up(*sys.argv[1:])
if os.environ.get("THEN_ADAPTIVE_STEP"):  # what a simulator node on the adaptive integrator does next
    import numpy as np
    from robot_dynamics import examples, load_urdf
    from robot_dynamics.simulation import Simulator
    arm = load_urdf(examples.TWO_LINK_URDF)
    Simulator(arm, [0.3, -0.2], integrator="adaptive").step(np.zeros(arm.nv), 1e-3)
print(json.dumps([before, stamped(*sys.argv[1:]), compiled]))
"""

# Row readers called with a literal column offset: numba compiles one version per offset (as many
# as the layout has fields), each a few lines.
PER_OFFSET = {"vec", "store", "rotation", "inertia"}


def compiled(parts, cache, **environment):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **environment)
    done = subprocess.run([sys.executable, "-c", RECORD, *parts], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    before, after, kernels = json.loads(done.stdout)
    assert after, "warm_up did not stamp its parts as compiled"
    return before, [tuple(entry) for entry in kernels]


def test_every_kernel_compiles_once_then_loads_from_the_cache(tmp_path):
    stamped, first = compiled(PARTS, tmp_path)
    assert not stamped  # an empty cache
    ours = [name for name, module, _ in first if module.startswith("robot_dynamics")]
    assert {"step", "_mass", "_inverse"} <= set(ours)
    # the second process's kernels come through the cache: the forward dynamics with its Newton-Euler
    # (the one the step, the inverse dynamics and the bias forces call), gravity's own (compiled
    # knowing that qd and qdd are zero, dynamics._NONE), the Coriolis matrix and the regressor; none
    # is compiled here as well
    assert not {"forward_state", "newton_euler", "_gravity", "_coriolis", "_regressor"} & set(ours)
    extra = sorted(name for name in set(ours) - PER_OFFSET if ours.count(name) > 1)
    assert not extra, f"compiled for more than one signature: {extra}"
    slice_copies = [entry for entry in first if "raise_with_shape_context" in entry[0]]
    assert not slice_copies, f"a slice copy in the compiled code compiles numba's message: {slice_copies}"
    assert compiled(PARTS, tmp_path) == (True, [])  # the second start loads everything from the cache


def test_processes_that_start_on_a_cold_cache_together_compile_one_after_the_other(tmp_path):
    """Two nodes started by hand at once on an empty cache: one compiles (with its second process), the
    other waits for the cache's compile lock and then loads everything from the cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    processes = [subprocess.Popen([sys.executable, "-c", RECORD, "dynamics_node"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    compiled_by = []
    for process in processes:
        out, err = process.communicate(timeout=900)
        assert process.returncode == 0, err
        _, _, kernels = json.loads(out)
        compiled_by.append({name for name, module, _ in kernels if module.startswith("robot_dynamics")})
    assert sorted(map(bool, compiled_by)) == [False, True], compiled_by
    assert "_bias" in compiled_by[0] | compiled_by[1]


def test_the_dynamics_node_part_leaves_mass_matrix_and_gravity_to_the_second_process(tmp_path):
    _, first = compiled(["dynamics_node"], tmp_path)
    ours = {name for name, module, _ in first if module.startswith("robot_dynamics")}
    assert {"_bias", "newton_euler", "friction_torques"} <= ours
    assert not {"_mass", "composite_rigid_body", "_gravity"} & ours


def test_without_the_second_process_this_one_compiles_everything(tmp_path):
    stamped, first = compiled(["simulator"], tmp_path, SECOND_PROCESS_FAILS="1")
    assert not stamped
    ours = [name for name, module, _ in first if module.startswith("robot_dynamics")]
    assert {"step", "forward_state", "newton_euler", "_gravity", "_mass"} <= set(ours)
    assert ours.count("newton_euler") == 2  # gravity's own, and the one the step's forward dynamics calls
    extra = sorted(name for name in set(ours) - PER_OFFSET - {"newton_euler"} if ours.count(name) > 1)
    assert not extra, f"compiled for more than one signature: {extra}"
    # the adaptive integrator runs the same compiled step: nothing left to compile for it
    assert compiled(["simulator"], tmp_path, THEN_ADAPTIVE_STEP="1") == (True, [])


# Prints the second process's pid, then compiles (the test kills this process meanwhile).
ORPHAN = """
from robot_dynamics import warm_up

start = warm_up._Helper.__init__

def started(self, jobs):
    start(self, jobs)
    print(self.process.pid, flush=True)

warm_up._Helper.__init__ = started
warm_up.warm_up("simulator")
"""


def running(pid):
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def test_the_second_process_ends_soon_after_the_first(tmp_path):
    """As when a node is killed during its warm-up: it exits at once, without stopping the second process."""
    first = subprocess.Popen([sys.executable, "-c", ORPHAN], env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)),
                             stdout=subprocess.PIPE, text=True)
    try:
        second = int(first.stdout.readline())
        assert running(second)
    finally:
        first.kill()
        first.wait()
    deadline = time.monotonic() + 5.0
    while running(second) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(second), "the second process outlived the first"


def test_the_second_process_exits_cleanly_after_its_jobs(tmp_path):
    """Its jobs done, it exits with status 0 while the first still holds its standard input open
    (a thread blocked reading it once made Python abort at exit)."""
    second = subprocess.Popen([sys.executable, "-m", "robot_dynamics.warm_up", "--aside", "gravity_torques"],
                              env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert second.stdout.readline() == "gravity_torques\n"
        assert second.wait(timeout=60) == 0, second.stderr.read()
    finally:
        second.kill()
        second.communicate()


def _live_members(group):
    """The processes of process group ``group`` that still run (zombies left out: they wait for
    their parent, or PID 1, to reap them)."""
    members = []
    for entry in os.listdir("/proc"):
        try:
            state, _, pgrp = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == group and state not in ("Z", "X"):
            members.append(int(entry))
    return members


@pytest.mark.parametrize("phase", ["importing", "compiling"])
def test_a_ctrl_c_ends_the_launchs_compile_step_at_once_and_quietly(phase, tmp_path):
    """What the simulation launch runs on a cold cache (python -m robot_dynamics_executables), interrupted
    as a terminal's Ctrl-C does (the whole process group) while Python imports the package
    (PYTHONPROFILEIMPORTTIME shows numba's first modules in) or once the second process compiles:
    status 130 (INTERRUPTED), no traceback, no process left."""
    from robot_dynamics_executables import INTERRUPTED

    log = open(tmp_path / "compile.log", "w+")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPROFILEIMPORTTIME="1")
    first = subprocess.Popen([sys.executable, "-m", "robot_dynamics_executables", "simulator"], env=env,
                             stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline and first.poll() is None:
            if phase == "importing" and " numba.core.config\n" in Path(log.name).read_text():
                break
            if phase == "compiling" and any("--aside" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
                                            for pid in _live_members(first.pid) if pid != first.pid):
                break
            time.sleep(0.02)
        assert first.poll() is None, Path(log.name).read_text()[-2000:]
        os.killpg(first.pid, signal.SIGINT)
        assert first.wait(timeout=10) == INTERRUPTED, Path(log.name).read_text()[-2000:]
        assert "Traceback" not in Path(log.name).read_text()
        deadline = time.monotonic() + 10.0
        while _live_members(first.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _live_members(first.pid), "a compiling process outlived the Ctrl-C"
    finally:
        first.kill()
        first.wait()
        log.close()


def test_a_compiled_stamp_counts_only_for_these_sources_this_numba_and_this_python(tmp_path, monkeypatch):
    """What simulation.launch.py asks (warm_up.compiled) before it compiles the kernels for its nodes."""
    from robot_dynamics import jit_cache

    monkeypatch.setattr(jit_cache, "cache_directory", lambda: tmp_path)
    assert not jit_cache.has_compiled_stamp("simulator")
    jit_cache.write_compiled_stamp("simulator")
    assert jit_cache.has_compiled_stamp("simulator") and not jit_cache.has_compiled_stamp("library")
    with monkeypatch.context() as other:
        other.setattr(jit_cache.numba, "__version__", "0.0.1")  # another numba ignores the cached kernels
        assert not jit_cache.has_compiled_stamp("simulator")
    (tmp_path / jit_cache.FINGERPRINT_FILE).write_text("other sources")
    jit_cache.drop_stale_kernels()  # as at import after an update: the kernels and the stamps go
    assert not jit_cache.has_compiled_stamp("simulator")
    assert not list(tmp_path.glob(jit_cache.COMPILED_STAMP.format(part="*")))
