"""The ``robot-dynamics`` command-line tool: printed values against the library, one-line errors."""

import json
import math
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cli
from robot_dynamics.cli import bench, info
from robot_dynamics.description.robots import bundled_urdf


def run(capsys, *argv):
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(status, out, err, *fragments, code=1):
    assert status == code
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


# ---------------------------------------------------------------------------------------- robots

def test_robots_lists_the_bundled_robots(capsys):
    status, out, _ = run(capsys, "robots")
    assert status == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names == ["arm7_gripper", "cartesian_3dof", "five_bar", "five_bar_decoupled", "planar_2r"]
    assert str(bundled_urdf("planar_2r")) in out


# ------------------------------------------------------------------------------------------ info

def test_info_table_lists_joints_in_model_order_with_limits_and_masses(capsys):
    status, out, err = run(capsys, "info", "arm7_gripper")
    assert status == 0, err
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    assert "8 coordinates" in out and "total mass 21.800 kg" in out and "17.800 kg moving" in out
    rows = [line.split() for line in out.splitlines() if line[:2].strip().isdigit() and len(line.split()) == 10]
    assert [row[1] for row in rows] == list(model.joint_names)
    assert [row[2] for row in rows] == list(model.joint_types)
    for row, (lower, upper), effort in zip(rows, model.position_limits, model.effort_limits):
        assert float(row[3]) == pytest.approx(lower, rel=1e-3)
        assert float(row[4]) == pytest.approx(upper, rel=1e-3)
        assert float(row[6]) == pytest.approx(effort, rel=1e-3)
    assert "arm7_finger_joint2 = 1 * arm7_finger_joint1 + 0" in out
    assert "no warnings" in out


def test_info_json_matches_the_model(capsys):
    status, out, _ = run(capsys, "info", str(bundled_urdf("planar_2r")), "--json")
    assert status == 0
    report = json.loads(out)
    assert report["robot"] == "planar_2r"
    assert [j["name"] for j in report["joints"]] == ["theta1", "theta2"]
    assert [j["type"] for j in report["joints"]] == ["continuous", "continuous"]
    assert report["joints"][0]["lower"] is None and report["joints"][0]["effort"] is None  # no limits
    assert report["total_mass"] == pytest.approx(3.0)
    assert report["link_masses"]["link1"] == {"mass": 2.0, "moved_by": "theta1"}
    assert report["warnings"] == []
    assert any("point masses" in note for note in report["notes"])


def test_info_shows_joints_coupled_to_several_coordinates(capsys):
    # Spong's five-bar cut open: q3 = q1 - q2 and q4 = q2 - q1 + pi follow both coordinates
    status, out, err = run(capsys, "info", "five_bar")
    assert status == 0, err
    assert "q3 = 1 * q1 + -1 * q2 + 0" in out and "q4 = 1 * q2 + -1 * q1 + 3.14159" in out
    status, out, _ = run(capsys, "info", "five_bar", "--json")
    report = json.loads(out)
    assert report["mimic_joints"] == {}  # none follows a single coordinate
    assert report["coupled_joints"]["q3"] == {"masters": {"q1": 1.0, "q2": -1.0}, "offset": 0.0}
    assert report["coupled_joints"]["q4"]["masters"] == {"q1": -1.0, "q2": 1.0}
    assert report["coupled_joints"]["q4"]["offset"] == pytest.approx(math.pi)
    assert [j["mimicked_by"] for j in report["joints"]] == [["q3", "q4"], ["q3", "q4"]]


def test_info_prints_the_inertia_bounds_of_seeded_samples(capsys, tmp_path):
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    lambda_min, lambda_max = rd.inertia_bounds(model, info.INERTIA_SAMPLES, seed=0)
    status, out, err = run(capsys, "info", "planar_2r")
    assert status == 0, err
    assert f"lambda_min = {lambda_min:.6g}, lambda_max = {lambda_max:.6g}" in out
    assert f"over {info.INERTIA_SAMPLES} random configurations within the limits, seed 0" in out
    # M of the 2R arm is extreme when stretched out (theta2 = 0): lambda = (4.5 -+ sqrt(18.25)) / 2
    assert lambda_min == pytest.approx((4.5 - 18.25**0.5) / 2, rel=1e-3)
    assert lambda_max == pytest.approx((4.5 + 18.25**0.5) / 2, rel=1e-4)
    status, out, _ = run(capsys, "info", "planar_2r", "--json")
    assert json.loads(out)["inertia_bounds"] == {
        "lambda_min": lambda_min, "lambda_max": lambda_max, "samples": info.INERTIA_SAMPLES, "seed": 0}
    welded = tmp_path / "welded.urdf"
    welded.write_text('<robot name="w"><link name="a"/><link name="b"/><joint name="j" type="fixed">'
                      '<parent link="a"/><child link="b"/></joint></robot>')
    status, out, err = run(capsys, "info", str(welded))
    assert status == 0 and "inertia bounds: none (no moving joints)" in out, err


def test_info_reports_load_warnings_and_suspicious_inertias(capsys, tmp_path):
    urdf = tmp_path / "bad.urdf"
    urdf.write_text("""<robot name="bad">
      <link name="base"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
      <link name="a"><inertial><mass value="2"/>
        <inertia ixx="50" ixy="0" ixz="0" iyy="50" iyz="0" izz="50"/></inertial></link>
      <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
      <link name="b"/>
    </robot>""")
    status, out, err = run(capsys, "info", str(urdf))
    assert status == 0, err
    warnings = [line for line in out.splitlines() if line.startswith("WARNING:")]
    assert any("'j2'" in line and "no mass" in line for line in warnings), out  # from rd.load_urdf
    assert any("'a'" in line and "radius of gyration" in line for line in warnings), out


# -------------------------------------------------------------------------------- gravity / M

def test_gravity_table_and_json_match_the_library(capsys):
    model = rd.load_urdf(bundled_urdf("arm7_gripper"))
    q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.5, 0.7, 0.02])
    expected = rd.gravity_torques(model, q)
    status, out, err = run(capsys, "gravity", "arm7_gripper", "--q", *map(str, q))
    assert status == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    for name, value in zip(model.joint_names, expected):
        assert float(rows[name][2]) == pytest.approx(value, rel=1e-6, abs=1e-9)
    status, out, _ = run(capsys, "gravity", "arm7_gripper", "--q", ",".join(map(str, q)), "--json")
    report = json.loads(out)
    assert report["joint_names"] == list(model.joint_names)
    np.testing.assert_allclose(report["q"], q)
    np.testing.assert_allclose(report["gravity_torques"], expected, rtol=1e-12, atol=1e-12)


def test_named_configuration_leaves_other_joints_at_zero(capsys):
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    status, out, _ = run(capsys, "gravity", "planar_2r", "--q", "theta2=0.5", "--json")
    assert status == 0
    np.testing.assert_allclose(json.loads(out)["gravity_torques"], rd.gravity_torques(model, [0.0, 0.5]))


def test_mass_matrix_table_and_json_match_the_library(capsys):
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    status, out, _ = run(capsys, "mass-matrix", "planar_2r", "--q", "theta1=0.3", "theta2=-1.2", "--json")
    assert status == 0
    M = rd.mass_matrix(model, [0.3, -1.2])
    np.testing.assert_allclose(json.loads(out)["mass_matrix"], M, rtol=1e-12)
    status, out, _ = run(capsys, "mass-matrix", "planar_2r", "--q", "0.3", "-1.2")
    assert status == 0
    rows = [line.split()[2:] for line in out.splitlines() if line.startswith("[")]
    np.testing.assert_allclose(np.array(rows, dtype=float), M, rtol=1e-4)


def test_no_mimic_makes_the_second_finger_a_coordinate(capsys):
    status, out, _ = run(capsys, "mass-matrix", "arm7_gripper", "--no-mimic", "--json",
                         "--q", "arm7_joint4=-1", "arm7_finger_joint2=0.01")
    assert status == 0
    report = json.loads(out)
    assert report["joint_names"][-1] == "arm7_finger_joint2" and len(report["q"]) == 9


def test_configuration_outside_the_limits_is_computed_with_a_warning(capsys):
    status, out, err = run(capsys, "gravity", "arm7_gripper")  # q = 0: joint4 is outside [-3.07, -0.07]
    assert status == 0 and out
    assert "arm7_joint4 = 0 is outside its limits" in err


# ---------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("argv, fragments", [
    (["info", "no_such_robot"], ["no_such_robot", "bundled robots: arm7_gripper"]),
    (["gravity", "planar_2r", "--q", "1"], ["2 joints", "1 values"]),
    (["gravity", "planar_2r", "--q", "1", "x"], ["--q", "'x'"]),
    (["gravity", "planar_2r", "--q", "1", "nan"], ["non-finite", "theta2"]),
    (["gravity", "planar_2r", "--q", "theta3=1"], ["unknown joint 'theta3'"]),
    (["gravity", "planar_2r", "--q", "theta1=1", "theta1=2"], ["given twice"]),
    (["gravity", "planar_2r", "--q", "theta1=1", "2"], ["not a mix"]),
    (["mass-matrix", "arm7_gripper", "--q", "arm7_finger_joint2=0.01"], ["mimics 'arm7_finger_joint1'"]),
    (["mass-matrix", "five_bar", "--q", "q3=0.1"], ["joint 'q3' follows 'q1', 'q2'"]),
    (["demo", "--robot", "no_such_robot", "--no-plot"], ["no_such_robot"]),
])
def test_bad_arguments_are_one_line_errors(capsys, argv, fragments):
    assert_one_line_error(*run(capsys, *argv), *fragments)


def test_a_bad_argument_of_the_demo_is_exit_status_2(capsys):
    assert_one_line_error(*run(capsys, "demo", "--duration", "0"), "--duration must be positive", code=2)


def test_bad_urdf_files_are_one_line_errors(capsys, tmp_path):
    broken = tmp_path / "broken.urdf"
    broken.write_text("<robot name='r'><link name='a'>")
    assert_one_line_error(*run(capsys, "info", str(broken)), "broken.urdf", "not well-formed")
    loop = tmp_path / "two_roots.urdf"
    loop.write_text("<robot name='r'><link name='a'/><link name='b'/></robot>")
    assert_one_line_error(*run(capsys, "gravity", str(loop)), "several root links")
    assert_one_line_error(*run(capsys, "info", str(tmp_path / "missing.urdf")), "missing.urdf")
    assert_one_line_error(*run(capsys, "info", str(tmp_path)), "is not a file")


def test_usage_errors_are_one_line_with_status_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["info"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "URDF" in err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["frobnicate"])
    assert exit_info.value.code == 2


# ----------------------------------------------------------------------------------------- bench

def test_bench_runs_each_benchmark_main_with_the_given_arguments(capsys, monkeypatch):
    calls = []

    def fake_loader(name):
        return types.SimpleNamespace(__file__=f"bench_{name}.py", main=lambda argv: calls.append((name, argv)))

    monkeypatch.setattr(bench, "load_benchmark", fake_loader)
    assert cli.main(["bench", "--duration", "1", "--quick"]) == 0
    assert calls == [(name, ["--duration", "1", "--quick"]) for name in ("core", "node", "simulator", "scaling", "contact", "contact_count",
                                                                           "ft_sensor", "retime", "trajectory_filter")]
    calls.clear()
    assert cli.main(["bench", "node"]) == 0
    assert calls == [("node", [])]
    calls.clear()
    assert cli.main(["bench", "node", "--duration", "10"]) == 0  # the form the docs show
    assert calls == [("node", ["--duration", "10"])]
    calls.clear()
    assert cli.main(["bench", "node", "--duration", "10", "--executor", "events"]) == 0
    assert calls == [("node", ["--duration", "10", "--executor", "events"])]
    with pytest.raises(SystemExit) as exit_info:  # options go to benchmarks only
        cli.main(["gravity", "planar_2r", "--duration", "1"])
    assert exit_info.value.code == 2
    assert "== benchmark node" in capsys.readouterr().out


def test_bench_modules_are_found_with_a_main():
    for name in bench.BENCHMARKS:
        assert callable(bench.load_benchmark(name).main)


def test_bench_scaling_tiny_run_prints_the_tables_and_writes_the_plot(capsys, tmp_path):
    plot = tmp_path / "plots" / "scaling.png"
    status = cli.main(["bench", "scaling", "--sizes", "2", "3", "--fit-from", "2", "--repeat", "1",
                       "--min-time", "0", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert status == 0
    assert "| Lagrange-Euler, 4x4 (D, h, c) | chain |" in out and "| n^4 (128/3 n^4 mult.) |" in out
    exponent_rows = [line for line in out.splitlines() if line.startswith("| inverse dynamics") and "n (132n" in line]
    assert len(exponent_rows) == 1 and "| - |" not in exponent_rows[0]  # fitted for chains and trees
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot: {plot.resolve()}" in out


def test_missing_or_unknown_benchmark_is_a_one_line_error(capsys, monkeypatch):
    assert_one_line_error(*run(capsys, "bench", "gpu"), "unknown benchmark 'gpu'")
    monkeypatch.setattr(bench, "BENCHMARKS", bench.BENCHMARKS + ("nonexistent",))
    assert_one_line_error(*run(capsys, "bench", "nonexistent"), "benchmark 'nonexistent' not found")


# ----------------------------------------------------------------------------- console script

def test_console_script_runs_in_a_subprocess():
    script = shutil.which("robot-dynamics", path=str(Path(sys.executable).parent)) or shutil.which("robot-dynamics")
    command = [script] if script else [sys.executable, "-m", "robot_dynamics.cli"]
    done = subprocess.run([*command, "gravity", "planar_2r", "--q", "0.3", "0.2", "--json"],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    model = rd.load_urdf(bundled_urdf("planar_2r"))
    np.testing.assert_allclose(json.loads(done.stdout)["gravity_torques"], rd.gravity_torques(model, [0.3, 0.2]))
    done = subprocess.run([*command, "info", "nope"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_first_use_compiles_a_commands_kernels_first_and_says_so(tmp_path):
    """From an empty numba cache (the first use after installing) a command says so as soon as it finds
    a kernel missing, then compiles every kernel it calls: numba (NUMBA_DEBUG_CACHE) saves none after "ready", so
    none compiles silently inside the command's own calls.  A command whose kernels are cached by then
    compiles nothing and says nothing of it."""
    from robot_dynamics.identification import read_trajectory_csv, write_csv
    from robot_dynamics.identification.simulated import record

    script = Path(sys.executable).parent / "robot-dynamics"
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMBA_DEBUG_CACHE="1", PYTHONUNBUFFERED="1")

    def first_use(*argv, compiles):
        done = subprocess.run([str(script), *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)  # (one stream: the lines in order)
        assert done.returncode == 0, done.stdout
        lines = done.stdout.splitlines()
        saved = [k for k, line in enumerate(lines) if line.startswith("[cache] data saved")]
        if compiles:  # (numba's cache lines of the first kernel come before the first line of ours)
            said = next(k for k, line in enumerate(lines) if not line.startswith("[cache] "))
            assert lines[said].startswith("compiling the dynamics kernels (not in numba's cache yet: "), lines[:3]
            ready = next(k for k, line in enumerate(lines) if line.startswith("the dynamics kernels ready in "))
            assert saved and max(saved) < ready, f"{argv[0]} compiled after its compile step: {lines[max(saved)]}"
        else:
            assert not saved and not any(line.startswith("compiling the dynamics") for line in lines), done.stdout

    first_use("info", "arm7_gripper", compiles=True)
    first_use("gravity", "planar_2r", "--q", "0.3", "0.2", compiles=False)
    first_use("mass-matrix", "arm7_gripper", compiles=False)
    first_use("excite", "planar_2r", "--duration", "10", "--output", "excitation.csv", compiles=True)
    first_use("demo-elastic", "--duration", "0.2", "--no-plot", compiles=True)
    planar = rd.load_urdf(bundled_urdf("planar_2r"))
    trajectory = read_trajectory_csv(tmp_path / "excitation.csv")
    run = record(planar, planar, trajectory, trajectory.duration, torque_noise=0.01, seed=1)
    write_csv(tmp_path / "recording.csv", run.joint_names, run.t, run.q, run.qd, run.tau)
    # (its collision thresholds run the observer: the estimators' part, which no command before compiled)
    first_use("identify", "recording.csv", "--urdf", "planar_2r", "--output", "identified", compiles=True)


def test_help_and_the_nodes_import_none_of_scipys_solvers():
    """``--help`` answers at once: the command-line parser and the node executables import neither
    scipy's optimisers, filters nor integrators (scipy.signal alone takes 0.6 s to import), which
    identification and the adaptive integrator import where they call them."""
    pytest.importorskip("rclpy", reason="the nodes need ROS 2 (pip install .[ros])")
    code = ("import sys; from robot_dynamics import cli; cli.build_parser(); "
            "from robot_dynamics.nodes.dynamics import node; from robot_dynamics.nodes.simulator import node; "
            "from robot_dynamics.nodes.trajectory_publisher import node; "
            "print(sorted(m for m in sys.modules if m.startswith(('scipy.optimize', 'scipy.signal', "
            "'scipy.integrate', 'scipy.stats', 'scipy.linalg'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_dev_test_runs_a_subset_and_prints_pytests_help_once():
    """``./dev test --help`` is pytest's help, once (the script's two pytest phases printed it twice);
    ``./dev test FILE -k NAME`` (docs/testing.md) runs only that subset."""
    repo = Path(__file__).resolve().parents[1]
    venv = repo / ".venv"
    if not list(venv.glob(".installed-*")):
        pytest.skip("./dev's .venv is not set up in this checkout")
    env = dict(os.environ, ROBOT_DYNAMICS_VENV=str(venv))
    done = subprocess.run([str(repo / "dev"), "test", "--help"], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("usage: ") == 1 and "-k EXPRESSION" in done.stdout
    done = subprocess.run([str(repo / "dev"), "test", "test/test_plots.py", "-k", "validation"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout and "launch tests not run (pytest arguments given)" in done.stdout
