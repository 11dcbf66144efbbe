"""The node executables' command line (robot_dynamics.nodes.common.command_line): ``--help`` from the
parameter declarations, ``--urdf``, and a clean exit (status 0) on SIGINT/SIGTERM in every phase,
the signal sent twice to the whole process group as a terminal's Ctrl-C and then ros2 launch do."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from robot_dynamics.nodes.dynamics import plan as dynamics_plan
from robot_dynamics.nodes.simulator import plan as simulator_plan
from robot_dynamics.nodes.trajectory_filter import plan as filter_plan
from robot_dynamics.nodes.trajectory_publisher import plan as trajectory_plan
from robot_dynamics.nodes.common.command_line import EXECUTABLES, help_text, read_urdf
from robot_dynamics.nodes.common.parameters import DESCRIPTION_PARAMETERS
from robot_dynamics.description.robots import bundled_urdf

PLANS = {"dynamics_node": dynamics_plan, "simulator_node": simulator_plan, "trajectory_publisher": trajectory_plan,
         "trajectory_filter": filter_plan}


def run(argv, timeout=60.0, **kwargs):
    from ros_helpers import ros_env

    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=ros_env(), **kwargs)


def executable(name):
    from robot_dynamics.tools import processes

    return processes.executable(name)


@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_help_lists_every_parameter_with_its_default_and_every_topic(name):
    result = run(executable(name) + ["--help"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"usage: {name} [-h] [--urdf FILE_OR_ROBOT] [--executor {{single,events}}] [--ros-args ...]")
    assert f"default {EXECUTABLES[name].executor} (docs/benchmarks.md)" in " ".join(out.split())
    assert "starting" not in result.stderr  # nothing started
    plan = PLANS[name]
    for p in (*DESCRIPTION_PARAMETERS, *plan.PARAMETERS):
        line = next((line for line in out.splitlines() if line.startswith(f"  {p.name} (")), None)
        assert line is not None, f"{p.name} missing from --help:\n{out}"
        assert "default " in line
    for topic, kind, direction, _ in plan.TOPICS:
        assert any(line.split()[:3] == [direction, topic, kind + ":"] for line in out.splitlines()), topic
    assert help_text(EXECUTABLES[name]) in out


def test_help_shows_the_defaults_as_a_params_file_writes_them():
    text = help_text(EXECUTABLES["dynamics_node"])
    assert "  gravity (double_array, read-only with lock_torque_parameters; default [0.0, 0.0, -9.81])" in text
    assert "  friction_velocity (double, 1e-06 .. 10, read-only with lock_torque_parameters; default 0.01)" in text
    assert "  publish_mass_matrix (bool; default true)" in text
    assert '  command_source (string, read-only with lock_torque_parameters; default "none")' in text
    assert "  lock_torque_parameters (bool, read-only; default false)" in text
    assert "  robot_description (string, read-only with lock_torque_parameters; " in text
    text = help_text(EXECUTABLES["simulator_node"])
    assert "  publish_clock (bool, read-only; default false)" in text
    assert "lock_torque_parameters" not in text  # (the simulator has no lock)
    assert "  ~/reset  std_srvs/Trigger" in text


def test_urdf_option_reads_a_file_or_a_bundled_robot(tmp_path):
    assert read_urdf("planar_2r") == bundled_urdf("planar_2r").read_text()
    own = tmp_path / "mine.urdf"
    own.write_text(bundled_urdf("cartesian_3dof").read_text())
    assert read_urdf(str(own)) == own.read_text()
    with pytest.raises(ValueError, match="no bundled robot of that name"):
        read_urdf("no_such_robot")
    result = run(executable("dynamics_node") + ["--urdf", str(tmp_path / "missing.urdf")])
    assert result.returncode == 2 and "dynamics_node: --urdf: no URDF file" in result.stderr, result.stderr
    result = run(executable("simulator_node") + ["--bogus"])
    assert result.returncode == 2 and "unrecognized arguments: --bogus" in result.stderr, result.stderr
    result = run(executable("dynamics_node") + ["--executor", "multi"])
    assert result.returncode == 2 and "--executor: invalid choice: 'multi'" in result.stderr, result.stderr

    from ros_helpers import NodeProcess

    process = NodeProcess("simulator_node", tmp_path / "simulator.log", namespace="/own_file",
                          extra_args=["--urdf", str(own)])
    try:
        process.wait_log("simulating robot 'cartesian_3dof' from parameter", timeout=60.0)
    finally:
        code = process.stop()
    assert code == 0, process.log()


def test_executor_option_reaches_the_spin_loop(monkeypatch):
    pytest.importorskip("rclpy")
    from robot_dynamics.nodes.common import command_line, runner

    used = []

    def run_node(node_class, args=None, *, executor="single", **kwargs):
        used.append((node_class.__name__, executor))
        return 0

    monkeypatch.setattr(runner, "run_node", run_node)
    for name in ("simulator_node", "dynamics_node"):
        for argv in ([], ["--executor", "single"], ["--executor", "events"]):
            assert command_line.main(name, argv) == 0
    assert used == [("SimulatorNode", "events"), ("SimulatorNode", "single"), ("SimulatorNode", "events"),
                    ("DynamicsNode", "single"), ("DynamicsNode", "single"), ("DynamicsNode", "events")]


def test_dynamics_node_runs_on_a_bundled_robot_with_one_option(tmp_path):
    from ros_helpers import NodeProcess

    process = NodeProcess("dynamics_node", tmp_path / "node.log", namespace="/urdf_option",
                          extra_args=["--urdf", "planar_2r"])
    try:
        log = process.wait_log("loaded robot 'planar_2r' from parameter", timeout=60.0)
        assert log.splitlines()[0].startswith("[dynamics_node] starting: loading the dynamics kernels")
    finally:
        code = process.stop()
    assert code == 0, process.log()


def test_dynamics_node_under_sim_time_loads_the_robot_before_any_clock(tmp_path):
    from ros_helpers import NodeProcess

    process = NodeProcess("dynamics_node", tmp_path / "node.log", namespace="/no_clock",
                          ros_args=["-p", "use_sim_time:=true"], extra_args=["--urdf", "planar_2r"])
    try:
        log = process.wait_log("loaded robot 'planar_2r' from parameter", timeout=60.0)
        assert "use_sim_time is true: stamps follow /clock" in log
    finally:
        code = process.stop()
    assert code == 0, process.log()


def _start(name, tmp_path, env_extra=None, args=()):
    from ros_helpers import ros_env

    env = ros_env()
    env.update(env_extra or {})
    log = open(tmp_path / f"{name}.log", "w+b")
    proc = subprocess.Popen(executable(name) + list(args) + ["--ros-args", "-r", f"__ns:=/sig{os.getpid()}"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    return proc, log


def _log_text(log):
    log.flush()
    log.seek(0)
    return log.read().decode(errors="replace")


def _wait_for(log, proc, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in _log_text(log):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    raise AssertionError(f"{text!r} not in the log:\n{_log_text(log)}")


def _ctrl_c_twice(proc, sig):
    """Ctrl-C in a terminal signals the whole process group; ros2 launch then signals again."""
    os.killpg(proc.pid, sig)
    time.sleep(0.05)
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        return proc.wait(20.0)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_exit_0_on_a_double_signal_while_spinning(name, sig, tmp_path):
    proc, log = _start(name, tmp_path, args=["--urdf", "planar_2r"])
    _wait_for(log, proc, "from parameter", 60.0)
    code = _ctrl_c_twice(proc, sig)
    assert code == 0, _log_text(log)
    assert "Traceback" not in _log_text(log)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_exit_0_on_a_double_signal_while_compiling_the_kernels(sig, tmp_path):
    # an empty numba cache: the node compiles its kernels (tens of seconds) when the signals come
    proc, log = _start("simulator_node", tmp_path, {"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    _wait_for(log, proc, "starting: loading the dynamics kernels", 30.0)
    time.sleep(2.0)  # past the imports and rclpy.init, inside the compilation
    assert proc.poll() is None and "dynamics kernels ready in" not in _log_text(log)
    code = _ctrl_c_twice(proc, sig)
    assert code == 0, _log_text(log)
    assert "Traceback" not in _log_text(log)


@pytest.mark.parametrize("delay", [0.0, 0.3])
def test_exit_0_on_a_double_signal_at_start_up(delay, tmp_path):
    # from the executable's first line on (importing rclpy, the node, rclpy.init, loading the kernels)
    proc, log = _start("dynamics_node", tmp_path)
    _wait_for(log, proc, "[dynamics_node] starting", 30.0)
    time.sleep(delay)
    code = _ctrl_c_twice(proc, signal.SIGINT)
    assert code == 0, _log_text(log)
    assert "Traceback" not in _log_text(log)


@pytest.mark.parametrize("name", sorted(EXECUTABLES))
def test_exit_0_on_a_double_signal_while_python_imports(name, tmp_path):
    # Python reports each import as it ends (PYTHONPROFILEIMPORTTIME): the signals come once the entry
    # module is in and Python imports the rest (the command line, numba for the kernels, rclpy)
    proc, log = _start(name, tmp_path, {"PYTHONPROFILEIMPORTTIME": "1"})
    _wait_for(log, proc, " robot_dynamics_executables\n", 30.0)
    _wait_for(log, proc, " numba.core.config\n" if EXECUTABLES[name].part else " rclpy\n", 30.0)
    assert "from parameter" not in _log_text(log)
    code = _ctrl_c_twice(proc, signal.SIGINT)
    assert code == 0, _log_text(log)[-3000:]
    assert "Traceback" not in _log_text(log)


# the main thread stuck where a signal handler cannot end it (a lock that is never released, as a
# middleware call that never returns)
STUCK = """
import signal, threading
from robot_dynamics.nodes.common.runner import stop_handler
signal.signal(signal.SIGINT, stop_handler([]))
print("stuck", flush=True)
lock = threading.Lock()
lock.acquire()
lock.acquire()
"""


def _stop_a_script(script, ready, signals, grace):
    """Run ``script``, wait for its line ``ready``, then send it ``signals`` 50 ms apart: its exit status,
    its stderr and the seconds from the first signal to its exit (given up ``grace`` + 15 s after it)."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == ready
        signalled = time.monotonic()
        for k, sig in enumerate(signals):
            time.sleep(0.05 if k else 0.0)
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=grace + 15.0)
        return proc.returncode, err, time.monotonic() - signalled
    finally:
        proc.kill()


def test_a_process_stuck_after_the_stop_signal_ends_with_every_threads_stack():
    from robot_dynamics.nodes.common.runner import STOP_GRACE

    code, err, seconds = _stop_a_script(STUCK, "stuck\n", [signal.SIGINT], STOP_GRACE)
    assert code == 1, err
    assert STOP_GRACE <= seconds < STOP_GRACE + 10.0
    assert f"Timeout (0:00:0{STOP_GRACE:g})!" in err
    assert 'File "<string>", line 8' in err  # the main thread's stack, at the second acquire


# the start goes on past the stop signal: the code its SystemExit lands in swallows it (as numpy.random's C
# extension does while numba imports it)
SWALLOWED = """
import time
import robot_dynamics_executables
robot_dynamics_executables.stop_on_signals()
try:
    print("starting", flush=True)
    while True:
        time.sleep(0.01)
except SystemExit:
    pass
while True:  # the start goes on
    time.sleep(0.01)
"""


def test_a_stop_signal_swallowed_during_the_start_still_ends_the_process_with_status_0():
    from robot_dynamics_executables import SWALLOWED_STOP_GRACE as STOP_GRACE

    code, err, seconds = _stop_a_script(SWALLOWED, "starting\n", [signal.SIGINT, signal.SIGINT], STOP_GRACE)
    assert code == 0, err
    assert STOP_GRACE <= seconds < STOP_GRACE + 10.0
    assert f"still running {STOP_GRACE:g} s after the stop signal" in err and "Traceback" not in err


def test_a_stop_signal_inside_a_c_extensions_import_is_still_a_clean_stop(monkeypatch):
    """The stop handler's SystemExit raised while Python imports a C extension (rclpy's, about 0.3 s after a
    node starts on a busy machine) comes out of that import as an ImportError caused by it: exit 0 all the
    same, no traceback."""
    import types

    import robot_dynamics_executables as entry

    def main(name, load_kernels):
        try:
            raise SystemExit(0)  # (what _stop_now raises)
        except SystemExit as stop:
            raise ImportError("initialization failed") from stop

    monkeypatch.setitem(sys.modules, "robot_dynamics.nodes.common.command_line", types.SimpleNamespace(main=main))
    monkeypatch.setattr(entry, "stop_on_signals", lambda: None)
    with pytest.raises(SystemExit) as stopped:
        entry._run("dynamics_node")
    assert stopped.value.code == 0
    assert stopped.value.__suppress_context__


def test_an_import_error_of_its_own_still_fails_the_node(monkeypatch):
    import types

    import robot_dynamics_executables as entry

    def main(name, load_kernels):
        raise ImportError("no module named rclpy")

    monkeypatch.setitem(sys.modules, "robot_dynamics.nodes.common.command_line", types.SimpleNamespace(main=main))
    monkeypatch.setattr(entry, "stop_on_signals", lambda: None)
    with pytest.raises(ImportError, match="no module named rclpy"):
        entry._run("dynamics_node")
