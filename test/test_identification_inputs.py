"""identify and excite on bad input (issue 23, items 5 and 6): every failure is one line naming
the input and the problem, exit status 2, nothing written; readers with a memory bound; units
slips in recordings found and named."""

import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification import (
    DriveSettings, RecordingError, design_excitation, identify, joint_state_messages, read_recording, write_csv, write_rosbag,
)
from robot_dynamics.identification.simulated import record
from robot_dynamics.description.robots import bundled_urdf

PLANAR = bundled_urdf("planar_2r")


@pytest.fixture(scope="module")
def planar():
    return rd.load_urdf(PLANAR)


@pytest.fixture(scope="module")
def run(planar):
    """The planar 2R recorded for 20 s at 500 Hz through its own URDF (1 % effort noise)."""
    return record(planar, planar, design_excitation(planar, period=5.0, iterations=5), 20.0, torque_noise=0.01, seed=1)


def _cli(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "robot-dynamics"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _refused(done, *words):
    """Exit 2, one error line on stderr (after any warnings), naming each of ``words``."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr and all(line.startswith("warning: ") for line in lines[:-1]), done.stderr
    for word in words:
        assert word in lines[-1], (word, done.stderr)


def _bag(tmp_path, run, storage):
    write_rosbag(tmp_path / "bag", joint_state_messages(run.joint_names, run.t, run.q, run.qd, run.tau), storage=storage)
    return tmp_path / "bag"


def _damage_truncated_mcap(bag):
    data = next(bag.glob("*.mcap"))
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])


def _damage_garbled_sqlite(bag):
    data = next(bag.glob("*.db3"))
    raw = bytearray(data.read_bytes())
    raw[100:4000] = b"\xa5" * 3900
    data.write_bytes(bytes(raw))


def _damage_truncated_sqlite(bag):
    data = next(bag.glob("*.db3"))
    data.write_bytes(data.read_bytes()[:1000])


def _damage_garbage_metadata(bag):
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: [: {\n")


def _damage_missing_metadata(bag):
    (bag / "metadata.yaml").unlink()


@pytest.mark.parametrize("storage, damage, words", [
    ("mcap", _damage_truncated_mcap, ("not a readable rosbag2 bag",)),
    ("sqlite3", _damage_garbled_sqlite, ("not a readable rosbag2 bag",)),
    ("sqlite3", _damage_truncated_sqlite, ("not a readable rosbag2 bag",)),
    ("mcap", _damage_garbage_metadata, ("metadata.yaml' is not YAML",)),
    ("sqlite3", _damage_missing_metadata, ("no metadata.yaml",)),
])
def test_damaged_bags_are_one_line_errors_and_nothing_is_written(tmp_path, run, storage, damage, words):
    damage(_bag(tmp_path, run, storage))
    done = _cli("identify", "bag", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path)
    _refused(done, "bag", *words)
    assert not (tmp_path / "out").exists()


def test_bad_csv_files_are_one_line_errors(tmp_path):
    (tmp_path / "header.csv").write_text("t,q_theta1,q_theta2,tau_theta1,tau_theta2\n")
    (tmp_path / "latin1.csv").write_bytes("t,q_theta1\n0,1\n".encode() + "1,2 \u00b0\n".encode("latin-1"))
    (tmp_path / "ragged.csv").write_text("t,q_theta1\n0,1\n1\n")
    (tmp_path / "words.csv").write_text("t,q_theta1\n0,one\n")
    (tmp_path / "empty.csv").write_text("")
    for name, words in (("header.csv", ("a header but no data rows",)), ("latin1.csv", ("not UTF-8",)),
                        ("ragged.csv", ("row 3 has 1 cells",)), ("words.csv", ("not a table of numbers",)),
                        ("empty.csv", ("empty file",))):
        _refused(_cli("identify", name, "--urdf", "planar_2r", "--output", "out", cwd=tmp_path), name, *words)
    assert not (tmp_path / "out").exists()


def test_a_huge_sparse_csv_is_refused_in_bounded_memory(tmp_path):
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as stream:
        stream.truncate(2 << 30)  # 2 GiB of NUL bytes, sparse: no disk used
    tracemalloc.start()
    with pytest.raises(RecordingError, match="huge.csv: not a CSV text file"):
        read_recording(huge)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20e6  # one bounded line, not the file
    _refused(_cli("identify", huge, "--urdf", "planar_2r", cwd=tmp_path), "huge.csv", "not a CSV text file")


def test_a_long_csv_is_read_in_memory_proportional_to_its_numbers(tmp_path, run):
    rows = 100_000  # 7 columns: 5.6 MB of float64
    t = np.arange(rows) / 500.0
    q = np.tile(run.q, (rows // len(run.t) + 1, 1))[:rows]
    path = tmp_path / "long.csv"
    write_csv(path, run.joint_names, t, q, q, q)
    tracemalloc.start()
    recording = read_recording(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(recording.series["q"]["theta1"][0]) == rows
    assert peak < 4 * rows * 7 * 8, peak / 1e6  # the numbers, their copies per joint and one block of text


@pytest.mark.parametrize("cutoff", ["0", "-5", "nan", "inf"])
def test_bad_cutoffs_are_refused_before_reading(tmp_path, run, cutoff):
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    _refused(_cli("identify", "run.csv", "--urdf", "planar_2r", "--cutoff", cutoff, "--output", "out", cwd=tmp_path),
             f"--cutoff {cutoff}", "positive, finite")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("gain", ["0", "-5", "nan", "inf"])
def test_bad_observer_gains_are_refused_before_reading(tmp_path, gain):
    _refused(_cli("identify", "missing.csv", "--urdf", "planar_2r", "--gain", gain, "--output", "out", cwd=tmp_path),
             f"--gain {gain}", "positive, finite")
    assert not (tmp_path / "out").exists()


def test_thresholds_the_data_cannot_give_are_left_out_and_said(tmp_path, run):
    """At K_O = 0.5 1/s the observer settles in 10 s, longer than any of the five 3 s blocks of the fit."""
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    done = _cli("identify", "run.csv", "--urdf", "planar_2r", "--gain", "0.5", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: no collision thresholds: no block of the fit data lasts 10 s without a gap" in done.stderr
    assert not (tmp_path / "out" / "collision.yaml").exists() and "collision.thresholds" not in done.stdout
    done = _cli("identify", "run.csv", "--urdf", "planar_2r", "--gain", "10", "--output", "out10", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "K_O 10 1/s (--gain)" in done.stdout and (tmp_path / "out10" / "collision.yaml").exists()


def test_output_that_cannot_take_the_results_is_refused_and_nothing_is_half_written(tmp_path, run):
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    (tmp_path / "a_file").write_text("keep me")
    _refused(_cli("identify", "run.csv", "--urdf", "planar_2r", "--output", "a_file", cwd=tmp_path),
             "--output a_file", "not a directory")
    assert (tmp_path / "a_file").read_text() == "keep me"
    _refused(_cli("identify", "run.csv", "--urdf", "planar_2r", "--output", "a_file/sub", cwd=tmp_path),
             "--output a_file/sub", "a_file is a file, not a directory")
    (tmp_path / "out" / "parameters.txt").mkdir(parents=True)  # a directory where a result file goes
    _refused(_cli("identify", "run.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path),
             "parameters.txt", "not a file")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["parameters.txt"]  # no identified.urdf
    assert not list(tmp_path.glob(".out.*"))  # no staging left behind


@pytest.mark.parametrize("option, value, words", [
    ("--period", "inf", ("--period inf", "positive, finite")),
    ("--period", "0", ("--period 0", "positive, finite")),
    ("--duration", "1e7", ("--duration 1e+07 s", "rows, over the")),
    ("--duration", "nan", ("--duration nan", "positive, finite")),
    ("--rate", "-1", ("--rate -1", "positive, finite")),
    ("--harmonics", "0", ("--harmonics 0",)),
    ("--margin", "2", ("--margin 2",)),
    ("--output", ".", ("--output .", "is a directory")),
])
def test_excite_refuses_bad_values_in_one_line_without_writing(tmp_path, option, value, words):
    args = {"--duration": "10", "--output": "x.csv", option: value}
    done = _cli("excite", "planar_2r", *[item for pair in args.items() for item in pair], cwd=tmp_path)
    _refused(done, *words)
    assert not (tmp_path / "x.csv").exists()


# ----------------------------------------------------------------------------------- units slips

def test_positions_in_degrees_are_refused_naming_the_slip(tmp_path, planar, run):
    write_csv(tmp_path / "deg.csv", run.joint_names, run.t, np.degrees(run.q), np.degrees(run.qd), run.tau)
    done = _cli("identify", "deg.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path)
    _refused(done, "deg.csv", "looks to be in degrees", "--position-unit deg")
    assert not (tmp_path / "out").exists()
    done = _cli("identify", "deg.csv", "--urdf", "planar_2r", "--position-unit", "deg", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_torques_in_millinewton_metres_are_refused_naming_the_slip(tmp_path, planar, run):
    write_csv(tmp_path / "mnm.csv", run.joint_names, run.t, run.q, run.qd, 1000 * run.tau)
    with pytest.raises(RecordingError, match="1e\\+03 times those the URDF model needs.*mN m instead of N m.*"
                                             "--effort-scale 0.001"):
        identify(read_recording(tmp_path / "mnm.csv"), planar)
    done = _cli("identify", "mnm.csv", "--urdf", "planar_2r", "--effort-scale", "0.001", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rd.load_urdf(tmp_path / "out" / "identified.urdf")
    reference = identify(read_recording(_plain(tmp_path, run)), planar)[0]
    scaled = identify(read_recording(tmp_path / "mnm.csv"), planar, drive=DriveSettings(effort_scale=1e-3))[0]
    np.testing.assert_allclose(scaled.base_ols, reference.base_ols, rtol=1e-6, atol=1e-9)


def _plain(tmp_path, run):
    path = tmp_path / "plain.csv"
    write_csv(path, run.joint_names, run.t, run.q, run.qd, run.tau)
    return path


# ------------------------------------------------------------------------- round 3 (issue 31, item 11)

@pytest.mark.parametrize("holdout", ["first:0.0001", "last:0.0001", "last:0.9999"])
def test_a_holdout_that_leaves_too_few_samples_is_refused_naming_the_option(tmp_path, run, holdout):
    write_csv(tmp_path / "run.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    done = _cli("identify", "run.csv", "--urdf", "planar_2r", "--holdout", holdout, "--output", "out", cwd=tmp_path)
    _refused(done, f"--holdout {holdout}", "samples")
    assert not (tmp_path / "out").exists()


def test_a_lock_on_a_joint_the_recording_moves_or_beyond_its_limits_is_refused(tmp_path):
    arm = rd.load_urdf("arm7_gripper")
    t = np.arange(0, 1, 0.01)
    q = np.tile(arm.position_limits.mean(axis=1).clip(-1, 1), (len(t), 1))
    q[:, 0] = 0.5 + 0.3 * np.sin(t)  # joint 1 moves
    write_csv(tmp_path / "run.csv", arm.joint_names, t, q, None, np.zeros_like(q))
    done = _cli("identify", "run.csv", "--urdf", "arm7_gripper", "--lock", "arm7_joint1=0.5", "--output", "out",
                cwd=tmp_path)
    _refused(done, "--lock arm7_joint1=0.5", "moves", "run.csv")
    done = _cli("identify", "run.csv", "--urdf", "arm7_gripper", "--lock", "arm7_finger_joint1=5", "--output", "out",
                cwd=tmp_path)
    _refused(done, "--lock arm7_finger_joint1=5", "limits [0, 0.04]")
    assert not (tmp_path / "out").exists()


def test_one_absurd_position_or_effort_is_dropped_and_said_and_the_fit_unchanged(tmp_path, planar, run):
    reference = identify(read_recording(_plain(tmp_path, run)), planar)[0]
    for column, value in (("q", 1e300), ("tau", 1e300), ("tau", 1e9)):
        q, tau = run.q.copy(), run.tau.copy()
        (q if column == "q" else tau)[len(q) // 2, 1] = value
        write_csv(tmp_path / "bad.csv", run.joint_names, run.t, q, run.qd, tau)
        done = _cli("identify", "bad.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Warning" not in done.stderr and "overflow" not in done.stderr
        assert f"1 of {len(run.t)} {column} samples of joint 'theta2'" in done.stderr and "implausible" in done.stderr
        found = rd.load_urdf(tmp_path / "out" / "identified.urdf")
        reference_urdf = identified_model(tmp_path, run)
        np.testing.assert_allclose(rd.inertial_parameters(found), rd.inertial_parameters(reference_urdf),
                                   rtol=0.02, atol=1e-3)
    assert reference.samples > 0


def identified_model(tmp_path, run, cache={}):
    if "model" not in cache:
        done = _cli("identify", _plain(tmp_path, run), "--urdf", "planar_2r", "--output", "ref", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        cache["model"] = rd.load_urdf(tmp_path / "ref" / "identified.urdf")
    return cache["model"]


def test_excite_to_an_unwritable_place_is_one_line(tmp_path):
    _refused(_cli("excite", "planar_2r", "--duration", "5", "--output", "/proc/nope.csv", cwd=tmp_path),
             "--output /proc/nope.csv", "cannot write")


# ------------------------------------------------------------------ units check, plausibility (issue 36)

def test_one_joint_in_other_units_is_refused_as_the_docs_say(tmp_path, run):
    tau = run.tau.copy()
    tau[:, 1] *= 100  # theta2's drive reports N cm, theta1's N m (the median over the joints is 10: not refused)
    write_csv(tmp_path / "mixed.csv", run.joint_names, run.t, run.q, run.qd, tau)
    _refused(_cli("identify", "mixed.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path),
             "mixed.csv", "the torques of theta2 are", "times those its URDF model needs")
    assert not (tmp_path / "out").exists()


def test_implausible_links_are_warned_about_with_the_likely_causes(tmp_path, run):
    """Torques 2.5 times the URDF model's (a load, a contact, a units slip the 3x warning misses):
    the identified links come out heavier (the base parameters 2.5 times), and that is said, one line per link."""
    write_csv(tmp_path / "heavy.csv", run.joint_names, run.t, run.q, run.qd, 2.5 * run.tau)
    done = _cli("identify", "heavy.csv", "--urdf", "planar_2r", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "implausible for a CAD URDF" in line]
    assert notes and all(line.startswith("warning: the link moved by theta") for line in notes), done.stderr
    assert any(": mass " in line for line in notes) and "contact or a load in the recording" in notes[0]
    plain = _cli("identify", _plain(tmp_path, run), "--urdf", "planar_2r", "--output", "out2", cwd=tmp_path)
    assert plain.returncode == 0 and "implausible for a CAD URDF" not in plain.stderr


def test_joints_numbered_by_a_logger_are_read_in_the_model_s_order_and_other_columns_left_out(tmp_path, planar, run):
    """A logger's q_0, tau_0 columns (the Med7 log's) are the model's joints in order, said; tau_ext_0 names
    no joint: left out, said. A recording that names any model joint is read by name only."""
    from robot_dynamics.identification.samples import resample

    numbered = tmp_path / "numbered.csv"
    header = ["t"] + [f"{quantity}_{k}" for quantity in ("q", "tau") for k in range(2)] + ["tau_ext_0", "tau_ext_1"]
    rows = np.column_stack([run.t, run.q, run.tau, np.zeros_like(run.tau)])
    numbered.write_text(",".join(header) + "\n" + "\n".join(",".join(f"{x:.17g}" for x in row) for row in rows))
    with pytest.warns(UserWarning) as said:
        t, q, _, tau = resample(read_recording(numbered), planar)
    text = " ".join(str(w.message) for w in said)
    assert f"0 = {planar.joint_names[0]}, 1 = {planar.joint_names[1]}" in text and "tau_ext_0, tau_ext_1" in text
    np.testing.assert_allclose(q, np.array([np.interp(t, run.t, run.q[:, j]) for j in range(2)]).T, atol=1e-9)
    np.testing.assert_allclose(tau, np.array([np.interp(t, run.t, run.tau[:, j]) for j in range(2)]).T, atol=1e-9)
    named = tmp_path / "named.csv"  # one joint named, the other numbered: no guessing
    header = ["t", f"q_{planar.joint_names[0]}", "q_1", f"tau_{planar.joint_names[0]}", "tau_1"]
    named.write_text(",".join(header) + "\n" + "\n".join(",".join(f"{x:.17g}" for x in row)
                                                         for row in np.column_stack([run.t, run.q, run.tau])))
    with pytest.raises(RecordingError, match=f"no positions for joint.*{planar.joint_names[1]}"):
        resample(read_recording(named), planar)
