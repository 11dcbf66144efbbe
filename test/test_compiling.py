"""``robot-dynamics compile`` (:mod:`robot_dynamics.compiling`), counted, never timed: from an empty numba
cache each of the package's kernels compiles for one signature and none of numba's slice-copy error
messages (their string formatting alone cost ~2.5 s of a cold start); the second time nothing compiles,
everything comes from the cache. The command's output, its parts, the directories of older sources it
removes, and a Ctrl-C that ends it at once and quietly."""

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robot_dynamics.compiling import ALL, COLD_SECONDS, PARTS, WORKERS_VARIABLE, cold_time, default_workers, parts_of

# Runs in a fresh interpreter (numba keeps what it compiled for the life of a process) and prints what
# compile_parts returned and every compilation numba reports in this process: (function, its module,
# argument types). One process (conftest's ROBOT_DYNAMICS_COMPILE_WORKERS) unless a test gives more: numba
# reports only what its own process compiles.
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
from robot_dynamics.compiling import compile_parts
count = compile_parts(sys.argv[1:])
if os.environ.get("THEN_ADAPTIVE_STEP"):  # what a simulator node on the adaptive integrator does next
    import numpy as np
    from robot_dynamics import examples, load_urdf
    from robot_dynamics.simulation.simulator import Simulator
    arm = load_urdf(examples.TWO_LINK_URDF)
    Simulator(arm, [0.3, -0.2], integrator="adaptive").step(np.zeros(arm.nv), 1e-3)
print(json.dumps([count, compiled]))
"""

# Row readers called with a literal column offset: numba compiles one version per offset (as many
# as the layout has fields), each a few lines.
PER_OFFSET = {"vec", "store", "rotation", "inertia"}


def compiled(parts, cache, **environment):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), **environment)
    done = subprocess.run([sys.executable, "-c", RECORD, *parts], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    count, kernels = json.loads(done.stdout)
    return count, [tuple(entry) for entry in kernels]


def test_every_kernel_compiles_once_then_loads_from_the_cache(tmp_path):
    count, first = compiled([ALL], tmp_path)
    ours = [name for name, module, _ in first if module.startswith("robot_dynamics")]
    assert count == len(ours) and {"step", "_mass", "_inverse", "_gravity", "_coriolis", "_regressor"} <= set(ours)
    # one Newton-Euler for gravity, inverse dynamics and the F/T sensor (a read-only constant state would be a second)
    extra = sorted(name for name in set(ours) - PER_OFFSET if ours.count(name) > 1)
    assert not extra, f"compiled for more than one signature: {extra}"
    slice_copies = [entry for entry in first if "raise_with_shape_context" in entry[0]]
    assert not slice_copies, f"a slice copy in the compiled code compiles numba's message: {slice_copies}"
    # each cached kernel has one version on disk (jit.uncached: the row readers, one per offset, are
    # not cached), so that compile workers saving the same kernel at once save the same thing
    versions = collections.Counter(path.name.rsplit(".", 2)[0] for path in tmp_path.rglob("*.nbc"))
    assert versions and max(versions.values()) == 1, versions.most_common(3)
    assert not PER_OFFSET & {name.split("-")[0].rsplit(".", 1)[-1] for name in versions}
    assert compiled([ALL], tmp_path) == (0, [])  # the second time everything loads from the cache


def test_workers_share_the_compile_and_leave_every_kernel_in_the_cache(tmp_path):
    """Two workers (what robot-dynamics compile uses on two cores) compile most kernels, this process the
    example arm's first; then a new process finds every kernel in the cache."""
    count, here = compiled([ALL], tmp_path, **{WORKERS_VARIABLE: "2"})
    ours = [name for name, module, _ in here if module.startswith("robot_dynamics")]
    assert "_mass" in ours and "step" not in ours and count > 2 * len(ours)
    assert compiled([ALL], tmp_path) == (0, [])


def test_the_simulator_part_is_everything_the_simulator_node_calls(tmp_path):
    count, first = compiled(["simulator"], tmp_path)
    ours = {name for name, module, _ in first if module.startswith("robot_dynamics")}
    assert count and {"step", "forward_state", "_gravity", "_mass"} <= ours
    assert not {"_coriolis", "_regressor", "_bias"} & ours  # the library's and the dynamics node's
    # the adaptive integrator runs the same compiled step: nothing left to compile for it
    assert compiled(["simulator"], tmp_path, THEN_ADAPTIVE_STEP="1") == (0, [])


def test_the_loop_parts_leave_the_estimators_to_a_node_that_switches_them_on(tmp_path):
    """``sim`` and the demo compile the parts of a closed loop; the observer's and the F/T sensor's kernels
    are the ``estimators`` part, which a node compiles when its settings switch them on."""
    count, first = compiled(["dynamics_node", "simulator"], tmp_path)
    estimators = {"_observe", "_residual_step", "_compensate", "_reading"}
    assert count and not estimators & {name for name, _, _ in first}
    count, then = compiled(["estimators"], tmp_path)
    assert count and estimators <= {name for name, _, _ in then}


def test_how_many_workers_a_compile_starts(monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "3")
    assert default_workers() == 3
    monkeypatch.delenv(WORKERS_VARIABLE)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_workers() == min(cores, 4)
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(WORKERS_VARIABLE, bad)
        with pytest.warns(UserWarning, match=f"{WORKERS_VARIABLE}='{bad}' ignored"):
            assert default_workers() == min(cores, 4)


def test_parts_and_their_figures():
    assert parts_of([]) == parts_of([ALL]) == tuple(PARTS)
    assert parts_of(["simulator", "dynamics_node"]) == ("dynamics_node", "simulator")
    with pytest.raises(ValueError, match="unknown part 'gpu'"):
        parts_of(["gpu"])
    assert set(COLD_SECONDS) == {*PARTS, ALL}
    assert max(COLD_SECONDS[part] for part in PARTS) <= COLD_SECONDS[ALL] <= sum(COLD_SECONDS[part] for part in PARTS)
    # several parts share kernels: at least the largest, at most the sum (and never more than all)
    both = (COLD_SECONDS["simulator"], min(COLD_SECONDS[ALL], COLD_SECONDS["simulator"] + COLD_SECONDS["dynamics_node"]))
    assert cold_time(["dynamics_node", "simulator"]).startswith(f"about {both[0]}-{both[1]} s on a free two-core machine")
    assert cold_time([ALL]).startswith(f"about {COLD_SECONDS[ALL]} s")


def _robot_dynamics(*argv, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONUNBUFFERED="1")
    return [sys.executable, "-m", "robot_dynamics_executables", *argv], env


def test_the_compile_command_says_what_it_did_and_removes_the_kernels_of_older_sources(tmp_path):
    command, env = _robot_dynamics("compile", "dynamics_node", cache=tmp_path)
    older = tmp_path / "robot_dynamics" / "kernels-0123456789abcdef"
    (older / "robot_dynamics_0").mkdir(parents=True)
    (older / "robot_dynamics_0" / "kernels.newton_euler-1.py311.nbi").write_bytes(b"old")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"removed {older} (kernels of older sources)" and not older.exists()
    assert lines[1].startswith("compiling the kernels of dynamics_node into ")
    assert f"about {COLD_SECONDS['dynamics_node']} s on a free two-core machine" in lines[1]
    assert lines[2].startswith("compiled ") and " kernel signatures in " in lines[2]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith("nothing to compile: loaded from the cache in ")
    done = subprocess.run(_robot_dynamics("compile", "gpu", cache=tmp_path)[0], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert "'gpu'" in done.stderr


def _live_members(group):
    """The processes of process group ``group`` that still run (zombies left out)."""
    members = []
    for entry in os.listdir("/proc"):
        try:
            state, _, pgrp = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == group and state not in ("Z", "X"):
            members.append(int(entry))
    return members


def _children(pid):
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize("phase", ["importing", "compiling", "in workers"])
def test_a_ctrl_c_ends_the_compile_step_at_once_and_quietly(phase, tmp_path):
    """What the launch files run (python -m robot_dynamics_executables compile PART), interrupted as a
    terminal's Ctrl-C does (the whole process group) while Python imports numba (PYTHONPROFILEIMPORTTIME
    shows its first modules in), once it compiles (its first line out), or once its workers run: status
    130, no traceback, no process left (the workers within a second: they end with their parent)."""
    from robot_dynamics_executables import INTERRUPTED

    log = open(tmp_path / "compile.log", "w+")
    command, env = _robot_dynamics("compile", "simulator", cache=tmp_path / "cache")
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    env[WORKERS_VARIABLE] = "2" if phase == "in workers" else "1"
    first = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120.0
        sign = " numba.core.config\n" if phase == "importing" else "compiling the kernels of simulator"
        while time.monotonic() < deadline and first.poll() is None and sign not in Path(log.name).read_text():
            time.sleep(0.02)
        if phase == "compiling":
            time.sleep(1.0)  # inside the compile
        while phase == "in workers" and time.monotonic() < deadline and first.poll() is None \
                and len(_children(first.pid)) < 2:
            time.sleep(0.02)
        if phase == "in workers":
            workers = _children(first.pid)
            assert len(workers) >= 2, Path(log.name).read_text()[-2000:]
            time.sleep(1.0)  # inside their compile
        assert first.poll() is None, Path(log.name).read_text()[-2000:]
        os.killpg(first.pid, signal.SIGINT)
        assert first.wait(timeout=10) == INTERRUPTED, Path(log.name).read_text()[-2000:]
        gone = time.monotonic() + 1.0
        while _live_members(first.pid) and time.monotonic() < gone:
            time.sleep(0.02)
        assert "Traceback" not in Path(log.name).read_text()
        assert not _live_members(first.pid), "a process outlived the Ctrl-C"
    finally:
        first.kill()
        first.wait()
        log.close()


def test_the_docs_state_the_figures_of_the_code():
    """docs/benchmarks.md's table of cold compile times is COLD_SECONDS, the figures' one statement."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text()
    section = text.split("### First start: compiling the kernels", 1)[1].split("\n## ", 1)[0]
    rows = {cells[0]: float(cells[-1]) for line in section.splitlines() if line.startswith("| ")
            for cells in [[cell.strip() for cell in line.strip("|").split("|")]] if cells[0] in COLD_SECONDS}
    assert rows == COLD_SECONDS
