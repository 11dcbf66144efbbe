"""Paths that name no ordinary file, given where the package opens a file on someone's word: a URDF
path, ``trajectory_publisher``'s ``excitation_file`` (one rule, :mod:`robot_dynamics.input_files`),
and excitation files that hold no trajectory (one sample, times out of order, NaN)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import ExcitationError, read_trajectory_csv
from robot_dynamics.input_files import bag_typestore, read_text_file
from robot_dynamics.nodes.trajectory_publisher.plan import Settings, make_trajectory

HEADER = "t,q_theta1,q_theta2,qd_theta1,qd_theta2,qdd_theta1,qdd_theta2\n"
ROW = "{t},0.1,0.2,0,0,0,0\n"


def excitation(tmp_path, times, name="excitation.csv"):
    path = tmp_path / name
    path.write_text(HEADER + "".join(ROW.format(t=t) for t in times))
    return path


def returns_within(call, timeout, release=None):
    """``call()``'s result or exception, from a thread given ``timeout`` s; AssertionError if it blocks
    (``release()`` then unblocks it, so that no thread is left behind)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if release is not None:
            release()
        thread.join(timeout)
        raise AssertionError(f"blocked for more than {timeout} s")
    return outcome


def test_an_excitation_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)

    def release():  # a writer that closes at once: the blocked reader gets end-of-file
        with open(fifo, "w"):
            pass

    outcome = returns_within(lambda: read_trajectory_csv(fifo), 10.0, release)
    error = outcome.get("error")
    assert isinstance(error, ExcitationError) and "is not a regular file (a FIFO)" in str(error), outcome


ZERO = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))  # 2 GiB: /dev/zero read whole would take all
from robot_dynamics.identification import read_trajectory_csv
try:
    read_trajectory_csv("/dev/zero")
except Exception as error:
    print(type(error).__name__, error)
"""


def test_an_excitation_file_that_is_dev_zero_is_refused_at_once():
    out = subprocess.run([sys.executable, "-c", ZERO], capture_output=True, text=True, timeout=120)
    assert "ExcitationError excitation file '/dev/zero' is not a regular file (a character device)" in out.stdout, out


@pytest.mark.parametrize("times, text", [
    ([0.0], "1 sample(s); a trajectory needs at least two"),
    ([], "0 sample(s)"),
    ([0.0, 0.002, 0.001, 0.003], "the times must increase, but sample 3 has t = 0.001 after t = 0.002"),
    ([0.0, 0.0], "sample 2 has t = 0 after t = 0"),
    ([0.0, "nan", 0.004], "sample 2 has a value that is not a finite number"),
], ids=["one-row", "header-only", "shuffled", "repeated", "nan"])
def test_an_excitation_file_without_a_trajectory_is_refused_with_the_reason(tmp_path, times, text):
    """A one-row file used to give NaN in every field of every desired_state message."""
    path = excitation(tmp_path, times)
    with pytest.raises(ExcitationError, match="excitation.csv") as error:
        read_trajectory_csv(path)
    assert text in str(error.value)
    planar = rd.load_urdf("planar_2r")
    with pytest.raises(ValueError, match="excitation_file: .*" + text.split(";")[0].replace("(", r"\(").replace(")", r"\)")):
        make_trajectory(planar, Settings(excitation_file=str(path)))


def test_a_two_row_excitation_file_plays_finite_values(tmp_path):
    played = make_trajectory(rd.load_urdf("planar_2r"), Settings(excitation_file=str(excitation(tmp_path, [0, 1]))))
    for t in (-1.0, 0.0, 0.5, 2.0):
        assert all(np.all(np.isfinite(values)) for values in played.at(t))


def test_files_past_the_size_limit_are_refused_before_reading(tmp_path):
    big = tmp_path / "big.urdf"
    with open(big, "wb") as stream:
        stream.truncate(17 * 1024 * 1024)  # sparse: nothing is written
    with pytest.raises(rd.URDFError, match=r"URDF file '.*big.urdf' has 17825792 bytes, more than the 16777216 allowed"):
        rd.load_urdf(big)
    with pytest.raises(ValueError, match="more than the 10 allowed"):
        read_text_file(excitation(tmp_path, [0, 1]), 10)


def test_directories_and_binary_files_are_refused_with_the_reason(tmp_path):
    with pytest.raises(ValueError, match=r"is not a regular file \(a directory\)"):
        read_text_file(tmp_path, 1000)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"t,q_a\n\xff\xfe\n")
    with pytest.raises(ExcitationError, match=r"is not UTF-8 text \(byte 6\)"):
        read_trajectory_csv(binary)


# --- the node ----------------------------------------------------------------------------------------

def _publisher(tmp_path, excitation_file, name):
    from ros_helpers import NodeProcess, write_params

    params = write_params(tmp_path / f"{name}.yaml", {"excitation_file": str(excitation_file)})
    return NodeProcess("trajectory_publisher", tmp_path / f"{name}.log", params, namespace=f"/{name}",
                       extra_args=["--urdf", "planar_2r"])


@pytest.mark.parametrize("kind", ["fifo", "one-row"])
def test_a_start_up_excitation_file_that_holds_no_trajectory_ends_the_node_with_status_2(tmp_path, kind):
    """A FIFO used to block the node for ever; a one-row file to publish NaN."""
    pytest.importorskip("rclpy")
    if kind == "fifo":
        path = tmp_path / "fifo.csv"
        os.mkfifo(path)
        text = "is not a regular file (a FIFO)"
    else:
        path, text = excitation(tmp_path, [0.0]), "1 sample(s); a trajectory needs at least two"
    process = _publisher(tmp_path, path, kind.replace("-", "_"))
    try:
        code = process.process.wait(60.0)
    finally:
        process.stop()
        if kind == "fifo" and process.running():
            with open(path, "w"):  # (unblock it, should it still wait)
                pass
    log = process.log()
    assert code == 2, log
    assert "FATAL" in log and "excitation_file" in log and text in log and "Traceback" not in log, log


def test_excitation_file_is_read_only_at_run_time(tmp_path):
    """Any process on the domain could otherwise point the node at a FIFO (its parameter service and
    desired_state stopped) or /dev/zero (read until memory runs out)."""
    pytest.importorskip("rclpy")
    from trajectory_msgs.msg import JointTrajectory

    from ros_helpers import RosHarness

    played = excitation(tmp_path, [0.0, 1.0])
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    harness = RosHarness("excitation_probe")
    desired = harness.collect(JointTrajectory, "/read_only/desired_state", qos=10)
    process = _publisher(tmp_path, played, "read_only")
    try:
        desired.wait_for(timeout=60.0, what="desired_state from the excitation file")
        for path in (fifo, "/dev/zero"):
            (result,) = harness.set_parameters("/read_only/trajectory_publisher", {"excitation_file": str(path)})
            assert not result.successful and "read-only" in result.reason, result.reason
        assert harness.get_parameters("/read_only/trajectory_publisher", ["excitation_file"]) == [str(played)]
        count = len(desired.messages)
        desired.wait_for(lambda m: len(desired.messages) > count + 10, what="desired_state going on")
        assert np.isfinite(desired.messages[-1].points[0].positions).all()
    finally:
        code = process.stop()
        harness.close()
    assert code == 0, process.log()


# ------------------------------------------------------------------ check-trajectory's inputs

MEMORY_BOUND = 1 << 30  # bytes: every input is checked, or refused, below this


def check_trajectory_process(*args, timeout=300):
    """(exit status, stderr, peak resident memory in bytes) of ``robot-dynamics check-trajectory ARGS``
    in a process of its own (its own ``ru_maxrss``, printed after the command by the wrapper)."""
    wrapper = ("import resource, sys\nfrom robot_dynamics import cli\nstatus = cli.main(sys.argv[1:])\n"
               "sys.stdout.write(f'\\nmaxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
               "raise SystemExit(status)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, "check-trajectory", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    peak = int(done.stdout.rsplit("maxrss ", 1)[1]) * 1024 if "maxrss " in done.stdout else None
    return done.returncode, done.stderr, peak


def refused_in_one_line(status, err, *words):
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


ALIAS_BOMB = "\n".join(["a: &a [0, 0, 0, 0, 0, 0, 0, 0, 0]"] + [
    f"{chr(98 + k)}: &{chr(98 + k)} [" + ", ".join([f"*{chr(97 + k)}"] * 9) + "]" for k in range(9)] + [
    "joint_names: [theta1, theta2]", "points:", "- positions: [*i, *i]", "  time_from_start: {sec: 0}",
    "- positions: [1.0, 1.0]", "  time_from_start: {sec: 1}"]) + "\n"


def test_a_yaml_alias_bomb_is_refused_at_once_in_bounded_memory(tmp_path):
    """Before: MemoryError (numpy expanding 2 x 9^9 aliased values, 6 GB)."""
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB) < 1000
    status, err, peak = check_trajectory_process("planar_2r", tmp_path / "bomb.yaml")
    refused_in_one_line(status, err, str(tmp_path / "bomb.yaml"), "anchors or aliases")
    assert peak < MEMORY_BOUND


def test_a_trajectory_file_past_the_size_limit_or_sparse_is_refused_at_once(tmp_path):
    """Before: a 2 GiB sparse file read into memory (MemoryError); a 74 MB YAML parsed for 290 s."""
    from robot_dynamics.input_files import MAX_TRAJECTORY_BYTES

    for name in ("sparse.csv", "sparse.yaml"):
        with open(tmp_path / name, "wb") as stream:
            stream.truncate(2 << 30)
        status, err, peak = check_trajectory_process("planar_2r", tmp_path / name, timeout=60)
        refused_in_one_line(status, err, str(tmp_path / name), f"more than the {MAX_TRAJECTORY_BYTES} allowed")
        assert peak < MEMORY_BOUND


def test_a_trajectory_at_the_size_or_value_limit_is_refused_in_bounded_memory(tmp_path):
    """The worst files within the size limit: as many points as fit in MAX_TRAJECTORY_BYTES (refused
    for too many YAML values), as many as MAX_YAML_NODES allows (parsed, then refused for the samples
    they span), a million CSV rows (refused for too many waypoints). Before: 1e6 points in 74 MB took
    290 s and 7.5 GB, then MemoryError."""
    from robot_dynamics.input_files import MAX_TRAJECTORY_BYTES, MAX_YAML_NODES

    point = "- positions: [0, 0]\n  time_from_start: {sec: %d}\n"  # 9 YAML values
    header = "joint_names: [theta1, theta2]\npoints:\n"
    files = {"full.yaml": (MAX_TRAJECTORY_BYTES - 100) // len(point % 100_000), "values.yaml": MAX_YAML_NODES // 9 - 2}
    for name, count in files.items():
        (tmp_path / name).write_text(header + "".join(point % k for k in range(count)))
    (tmp_path / "rows.csv").write_text("t,q_theta1,q_theta2\n" + "".join(f"{k},0,0\n" for k in range(1_000_000)))
    for name, reason in (("full.yaml", "YAML values"), ("values.yaml", "lower --rate"), ("rows.csv", "waypoints")):
        status, err, peak = check_trajectory_process("planar_2r", tmp_path / name)
        refused_in_one_line(status, err, name, "more than", reason)
        assert peak < MEMORY_BOUND, f"{name}: {peak / 1e6:.0f} MB"


def test_the_largest_check_allowed_stays_in_bounded_memory(tmp_path):
    """MAX_SAMPLES samples of the seven arm joints: checked block by block (before: --rate 1e7 on a
    2 s plan took 5.5 GB)."""
    from robot_dynamics.trajectories.check import MAX_SAMPLES

    joints = [f"arm7_joint{k}" for k in range(1, 8)]
    (tmp_path / "plan.csv").write_text(",".join(["t"] + [f"q_{j}" for j in joints]) + "\n0" + ",0" * 7 + "\n2"
                                       + ",0.1" * 7 + "\n")
    status, err, peak = check_trajectory_process("arm7_gripper", tmp_path / "plan.csv", "--rate", MAX_SAMPLES / 2 - 1)
    assert status == 0 and "Traceback" not in err, err
    assert peak < MEMORY_BOUND, f"{peak / 1e6:.0f} MB"


def test_a_trajectory_fifo_is_refused_without_blocking(tmp_path, capsys):
    from robot_dynamics import cli

    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)

    def release():
        with open(fifo, "w"):
            pass

    outcome = returns_within(lambda: cli.main(["check-trajectory", "planar_2r", str(fifo)]), 10.0, release)
    assert outcome.get("value") == 2 and "is not a regular file (a FIFO)" in capsys.readouterr().err


def _bag(path, storage):
    from rosbags.rosbag2 import StoragePlugin, Writer

    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3) as writer:
        writer.add_connection("/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                              typestore=bag_typestore())
    return next(p for p in path.iterdir() if p.suffix in (".mcap", ".db3"))


@pytest.mark.parametrize("damage", ["empty directory", "garbage mcap", "garbage db3", "lone garbage mcap",
                                    "metadata alias bomb"])
def test_a_damaged_trajectory_bag_is_one_line_naming_it(tmp_path, capsys, damage):
    """Before: tracebacks from rosbags (and an empty directory)."""
    from robot_dynamics import cli

    bag = tmp_path / "bag"
    if damage == "empty directory":
        bag.mkdir()
        target, words = bag, ("no metadata.yaml",)
    elif damage == "lone garbage mcap":
        bag.mkdir()
        target, words = bag / "plan.mcap", ("no metadata.yaml",)
        target.write_bytes(b"\x89MCAP0\r\n" + os.urandom(4000))
    elif damage == "metadata alias bomb":
        _bag(bag, "mcap")
        (bag / "metadata.yaml").write_text(ALIAS_BOMB)
        target, words = bag, ("anchors or aliases",)
    else:
        target = _bag(bag, damage.split()[1])
        target.write_bytes(os.urandom(4000))
        words = ("not a readable rosbag2 bag",)
    status = cli.main(["check-trajectory", "planar_2r", str(target)])
    refused_in_one_line(status, capsys.readouterr().err, str(bag), *words)


@pytest.mark.parametrize("command", ["identify", "external-torques"])
def test_a_recording_bag_whose_metadata_is_an_alias_bomb_is_refused_in_bounded_memory(tmp_path, command):
    """identify and external-torques read bags by the rule check-trajectory does (input_files.check_bag):
    before, rosbags parsed metadata.yaml with its aliases, unbounded."""
    bag = tmp_path / "bag"
    _bag(bag, "mcap")
    (bag / "metadata.yaml").write_text(ALIAS_BOMB)
    wrapper = ("import resource, sys\nfrom robot_dynamics import cli\nstatus = cli.main(sys.argv[1:])\n"
               "sys.stdout.write(f'\\nmaxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
               "raise SystemExit(status)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, command, str(bag), "--urdf", "planar_2r", "--output",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    refused_in_one_line(done.returncode, done.stderr, str(bag), "anchors or aliases")
    assert int(done.stdout.rsplit("maxrss ", 1)[1]) * 1024 < MEMORY_BOUND
    assert not (tmp_path / "out").exists()
