"""No program of the package leaves processes behind, whatever ends it: ``robot-dynamics demo``
ended by SIGTERM (a service manager, ``timeout``) or SIGKILL (a crash, the OOM killer) in the middle
of its closed loop leaves no node running; a child started through
:mod:`robot_dynamics.tools.processes` ends when the thread that started it ends.

Every program under test runs in a session of its own: its processes are found, and killed in
the end, by that session's id only (other tests run nodes on the same machine)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robot_dynamics import child_processes

GONE_TIMEOUT = 15.0  # s: a node ends within STOP_GRACE (4 s) of SIGTERM; more on a busy machine


def session_members(session):
    """PIDs of the live (not zombie) processes of session ``session``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        state, sid = fields[0], int(fields[3])
        if sid == session and state != "Z":
            members.append(int(entry.name))
    return members


def wait_gone(session, timeout=GONE_TIMEOUT):
    """The session's processes still alive after ``timeout`` s (polling), as ``{pid: command line}``."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_members(session)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    names = {}
    for pid in left:
        try:
            names[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
        except OSError:
            pass
    return names


def kill_session(session):
    """SIGKILL whatever is left of the session (its processes, and only those)."""
    for pid in session_members(session):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _demo_command():
    script = Path(sys.executable).with_name("robot-dynamics")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "robot_dynamics.cli"]


@pytest.mark.realtime  # three nodes in a closed loop
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGKILL, -signal.SIGKILL)],
                         ids=["SIGTERM", "SIGKILL"])
def test_the_demo_ended_mid_run_leaves_no_node_running(tmp_path, sig, status):
    pytest.importorskip("rclpy", reason="the demo needs ROS 2 (pip install .[ros])")
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as err:
        demo = subprocess.Popen([*_demo_command(), "demo", "--duration", "120", "--no-pd", "--no-plot",
                                 "--robot", "planar_2r", "--log-dir", str(tmp_path / "logs"),
                                 "--domain-id", os.environ["ROS_DOMAIN_ID"]],
                                stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    session = demo.pid
    try:
        deadline = time.monotonic() + 120.0
        while "[computed torque] [" not in stderr.read_text(errors="replace"):  # the closed loop runs
            assert demo.poll() is None, stderr.read_text(errors="replace")
            assert time.monotonic() < deadline, stderr.read_text(errors="replace")
            time.sleep(0.1)
        nodes = [pid for pid in session_members(session) if pid != demo.pid]
        assert len(nodes) >= 3, nodes  # simulator_node, dynamics_node, trajectory_publisher
        demo.send_signal(sig)
        code = demo.wait(30.0)
        left = wait_gone(session)
        assert not left, f"still running after the demo ended: {left}"
        assert code == status, stderr.read_text(errors="replace")
    finally:
        kill_session(session)
        demo.wait()
    if sig == signal.SIGTERM:
        assert "robot-dynamics demo: terminated" in stderr.read_text(errors="replace")
        assert "Traceback" not in stderr.read_text(errors="replace")


ORPHAN_MAKER = """
import sys, time
from robot_dynamics.tools import processes
child = processes.NodeProcess("sleeper", [sys.executable, "-c", "import time; time.sleep(120)"], None, sys.argv[1])
print(child.pid, flush=True)
time.sleep(120)
"""


def test_a_child_of_a_killed_parent_ends(tmp_path):
    """A NodeProcess's parent SIGKILLed: the child gets SIGTERM (prctl PR_SET_PDEATHSIG) and ends."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_MAKER, str(tmp_path / "child.log")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        child = int(parent.stdout.readline())
        assert child in session_members(parent.pid)
        parent.kill()
        parent.wait(10.0)
        assert not wait_gone(parent.pid), "the child outlived its parent"
    finally:
        kill_session(parent.pid)
        parent.wait()


def test_the_death_signal_is_set_before_the_child_runs():
    """The child's own view: /proc/self/status of a child started with :func:`child_processes.die_with_parent`."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    script = "import ctypes, signal; s = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); print(s.value)"
    out = subprocess.run([sys.executable, "-c", script], preexec_fn=child_processes.die_with_parent(),
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == str(int(signal.SIGTERM)), out
