"""Every command shown in README.md and docs/*.md is run: here, or by the test named for it.

The commands are read from the pages' fenced ``bash`` blocks (one command per line, ``\\``
continuations joined, ``#`` comments dropped), the examples from their ``python`` blocks. A command
is either

- run here: the quick ones (:data:`RUN_HERE`), a block's commands in order in one shell, in a
  directory holding ``my_robot.urdf`` (a copy of a bundled robot) and ``.venv`` (this
  interpreter's environment), as a reader in a fresh clone would after ``./dev``; or
- named in :data:`RUN_ELSEWHERE`, with the test that runs it (that test must exist).

A page added to docs/ is held to the same rule (and must be linked from the README). Python
examples run as scripts in that directory, unless :data:`PYTHON_ELSEWHERE` names their test.
"""

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.description.robots import bundled_urdf

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent

#: Commands this test runs itself: quick, self-contained (regular expressions, matched from the start).
RUN_HERE = [
    r"(\.venv/bin/)?robot-dynamics (?!demo|bench|sim)",    # everything but the demo, sim and the benchmarks
    r"(\.venv/bin/)?[a-z_]+_node --help$",
    r"source \.venv/bin/activate$",
]

#: Commands run by another test: command -> "path[::test function]" (relative to the repository).
RUN_ELSEWHERE = {
    "./dev demo": "test/test_demo.py::test_demo_from_an_empty_numba_cache",
    "./dev test": ".ci/run",
    "./dev launch-test": "dev",  # the last part of ./dev test (see docs/testing.md), run by .ci/run
    "robot-dynamics demo --duration 2 --no-pd --robot planar_2r": "test/test_demo.py::test_demo_from_an_empty_numba_cache",
    "ROS_DOMAIN_ID=171 robot-dynamics demo --duration 2 --no-pd --robot planar_2r":
        "test/test_demo.py::test_short_demo_prints_the_summary_and_writes_the_plot",  # (on the tests' own domain)
    # sim runs until Ctrl-C: test_sim.py starts it, checks the loop and the hold, and interrupts it
    ".venv/bin/robot-dynamics sim": "test/test_sim.py::test_sim_closes_the_loop_holds_the_start_pose_and_leaves_nothing_after_ctrl_c",
    ".venv/bin/robot-dynamics sim --robot my_robot.urdf --namespace arm --no-trajectory":
        "test/test_sim.py::test_sim_without_trajectory_in_a_namespace_holds_the_arm",
    "robot-dynamics sim --robot planar_2r --duration 10": "test/test_sim.py::test_sim_stops_by_itself_after_its_duration",
    "robot-dynamics sim --sim-time --namespace left --robot ur5_robot.urdf":
        "test/test_sim.py::test_two_arms_side_by_side_each_on_its_own_clock",
    "robot-dynamics sim --sim-time --namespace right --robot arm7_gripper":
        "test/test_sim.py::test_two_arms_side_by_side_each_on_its_own_clock",
    "./dev test test/test_plots.py -k validation": "test/test_cli.py::test_dev_test_runs_a_subset_and_prints_pytests_help_once",
    ".venv/bin/dynamics_node --urdf my_robot.urdf": "test/test_docs.py::test_your_own_robot_in_three_steps",
    "robot-dynamics demo-payload": "test/test_payload_estimation.py::test_demo_payload_estimates_the_3_kg_and_tracks_better_after",
    "robot-dynamics estimate-payload held.csv --urdf arm7_gripper --link arm7_hand":
        "test/test_payload_estimation.py::test_cli_estimates_the_payload_from_a_csv_recording",
    "ros2 service call /robot_dynamics/estimate_payload std_srvs/srv/Trigger":
        "test/test_payload_node.py::test_the_service_refuses_without_efforts_then_estimates_and_publishes_the_payload",
    ".venv/bin/dynamics_node --urdf my_robot.urdf --executor events": "test/test_docs.py::test_your_own_robot_in_three_steps",
    ".venv/bin/dynamics_node --ros-args --params-file my_robot.yaml":
        "test/test_dynamics_node.py::test_panda_outputs_match_core_and_pinocchio",
    ".venv/bin/simulator_node --urdf my_robot.urdf": "test/test_node_command_line.py::test_urdf_option_reads_a_file_or_a_bundled_robot",
    ".venv/bin/simulator_node --ros-args --params-file config/simulator.yaml --params-file my_robot.yaml":
        "test/test_launch_graphs.py::test_simulation_graph_closes_the_computed_torque_loop",
    # the benchmarks take minutes: their arguments' way to each benchmark is tested, and a tiny scaling run
    "robot-dynamics bench core": "test/test_cli.py::test_bench_runs_each_benchmark_main_with_the_given_arguments",
    "robot-dynamics bench node --duration 10": "test/test_cli.py::test_bench_runs_each_benchmark_main_with_the_given_arguments",
    "robot-dynamics bench node --duration 10 --executor events":
        "test/test_cli.py::test_bench_runs_each_benchmark_main_with_the_given_arguments",
    "robot-dynamics bench simulator --duration 10":
        "test/test_cli.py::test_bench_runs_each_benchmark_main_with_the_given_arguments",
    "python -m robot_dynamics.tools.benchmarks.soak --flood --duration 10":
        "test/test_hostile_inputs.py::test_after_a_flood_the_node_answers_at_once_and_stops_on_sigint",
    "python -m robot_dynamics.tools.benchmarks.soak --duration 600 --every 30":
        "test/test_hostile_inputs.py::test_the_soak_benchmark_prints_a_line_per_window",
    "OPENBLAS_NUM_THREADS=1 robot-dynamics bench scaling":
        "test/test_cli.py::test_bench_scaling_tiny_run_prints_the_tables_and_writes_the_plot",
    # the ROS 2 workspace route: test_colcon.py copies the checkout into src/ (for the clone) and builds it
    "mkdir -p ~/ws/src && cd ~/ws/src": "test/test_colcon.py::test_colcon_installs_the_ros_layout",
    "git clone <this repository> robot_dynamics": "test/test_colcon.py::test_colcon_installs_the_ros_layout",
    "cd ~/ws": "test/test_colcon.py::test_colcon_installs_the_ros_layout",
    "cd ~/ws/src && git clone <this repository> robot_dynamics && cd ~/ws":
        "test/test_colcon.py::test_colcon_installs_the_ros_layout",
    "colcon build --packages-select robot_dynamics": "test/test_colcon.py::test_colcon_installs_the_ros_layout",
    "source install/setup.bash": "test/test_colcon.py::test_installed_dynamics_node_publishes_gravity_torques",
    "colcon build --packages-select robot_dynamics && source install/setup.bash":
        "test/test_colcon.py::test_installed_dynamics_node_publishes_gravity_torques",
    # motors and gears: the command needs the URDF the page shows, the demo takes a while
    "robot-dynamics info geared_link.urdf": "test/test_motors.py::test_docs_commands_run",
    "robot-dynamics demo-elastic --output out/robot_dynamics_elastic_demo.png": "test/test_motors.py::test_docs_commands_run",
    # ros2 launch: test_launch.py includes the launch file with these arguments in a launch service, as `ros2 launch` does
    "ros2 launch robot_dynamics dynamics.launch.py urdf:=/path/to/my_robot.urdf":
        "test/test_launch.py::test_dynamics_launch_turns_joint_states_into_gravity_torques",
    "ros2 launch robot_dynamics dynamics.launch.py urdf:=arm7_gripper":
        "test/test_launch.py::test_dynamics_launch_turns_joint_states_into_gravity_torques",
    "ros2 launch robot_dynamics dynamics.launch.py urdf:=planar_2r namespace:=arm use_sim_time:=true":
        "test/test_launch.py::test_dynamics_launch_turns_joint_states_into_gravity_torques",
    "ros2 launch robot_dynamics simulation.launch.py":
        "test/test_launch.py::test_simulation_launch_closes_the_computed_torque_loop_on_every_bundled_robot",
    "ros2 launch robot_dynamics simulation.launch.py urdf:=planar_2r":
        "test/test_launch.py::test_simulation_launch_closes_the_computed_torque_loop_on_every_bundled_robot",
    "ros2 launch robot_dynamics simulation.launch.py urdf:=planar_2r command_source:=gravity":
        "test/test_launch.py::test_gravity_only_commands_the_holding_torques_of_the_measured_state",
    # identification: one walk-through, each step on the files of the one before
    "robot-dynamics excite arm7_gripper --duration 60 --output excitation.csv":
        "test/test_identification_docs.py::test_walk_through",
    "robot-dynamics identify recording --urdf arm7_gripper --friction --output identified":
        "test/test_identification_docs.py::test_walk_through",
    "robot-dynamics identify payload_recording.csv --urdf arm7_gripper --payload arm7_hand --output payload":
        "test/test_identification_docs.py::test_walk_through",
    # check-trajectory: the page's plan.csv is written first, and the second command's exit status is 1
    "robot-dynamics check-trajectory arm7_gripper plan.csv": "test/test_check_trajectory.py::test_docs_example",
    "robot-dynamics check-trajectory arm7_gripper plan.csv --payload arm7_hand 5.0 --json":
        "test/test_check_trajectory.py::test_docs_example",
    ".venv/bin/robot-dynamics demo-trajectory": "test/test_trajectory_demo.py::test_the_command_prints_the_summary_and_writes_the_plot",
    # the trajectory filter: its page's commands as written, a trajectory through each
    "trajectory_filter --urdf arm7_gripper --ros-args -p payload.link:=arm7_hand -p payload.mass:=3.0 "
    "-r trajectory_out:=/joint_trajectory_controller/joint_trajectory": "test/test_trajectory_filter_node.py::test_docs_commands_run",
    "robot-dynamics sim --params hold.yaml &": "test/test_trajectory_filter_node.py::test_docs_commands_run",
    "trajectory_filter --urdf arm7_gripper --ros-args -r trajectory_out:=joint_trajectory -p effort_margin:=0.8":
        "test/test_trajectory_filter_node.py::test_docs_commands_run",
    # retime: the page's plan.csv is check-trajectory's; the benchmark's table is checked on a short run
    "robot-dynamics retime arm7_gripper plan.csv --payload arm7_hand 5.0 --output retimed.yaml --plot retimed.png":
        "test/test_retime_cli.py::test_docs_example",
    "robot-dynamics bench retime": "test/test_retime_cli.py::test_bench_retime_prints_its_table",
    "robot-dynamics bench retime --repeat 40": "test/test_retime_cli.py::test_bench_retime_prints_its_table",
    ".venv/bin/python -m robot_dynamics.identification.benchmark":
        "test/test_identification_docs.py::test_benchmark_prints_its_tables",
}

#: Python examples run by another test: a line of the example -> "path::test function".
PYTHON_ELSEWHERE = {
    "rclpy.init()": "test/test_docs.py::test_your_own_robot_in_three_steps",  # needs the node of step 2
    "from robot_dynamics.identification": "test/test_identification_docs.py::test_walk_through",  # in order
}


def blocks(path, language):
    """(first line number, text) of every fenced block of ``language`` in ``path``."""
    found, inside, start, lines = [], False, 0, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not inside and line.strip() == f"```{language}":
            inside, start, lines = True, number + 1, []
        elif inside and line.strip() == "```":
            found.append((start, "\n".join(lines) + "\n"))
            inside = False
        elif inside:
            lines.append(line)
    return found


def commands(block):
    """The commands of a bash block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    result = []
    for line in joined.splitlines():
        line = re.sub(r"(^|\s+)#.*$", "", line).strip()
        if line:
            result.append(re.sub(r"\s+", " ", line))
    return result


def runs_here(command):
    return any(re.match(pattern, command) for pattern in RUN_HERE)


def all_commands():
    return [(path, start, command) for path in PAGES for start, block in blocks(path, "bash")
            for command in commands(block)]


@pytest.fixture
def reader_dir(tmp_path):
    """A directory like a fresh clone after ./dev (config/, urdf/, launch/, .venv), with the reader's
    own robot in it."""
    (tmp_path / "my_robot.urdf").write_text(bundled_urdf("planar_2r").read_text())
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    for folder in ("config", "urdf", "launch"):
        (tmp_path / folder).symlink_to(REPO / folder)
    return tmp_path


def reader_env():
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return env


# ----------------------------------------------------------------------------------------- the rule

def test_every_command_is_run_here_or_by_a_named_test():
    missing = [f"{path.relative_to(REPO)}:{start}: {command}" for path, start, command in all_commands()
               if command not in RUN_ELSEWHERE and not runs_here(command)]
    assert not missing, ("commands shown in the docs that no test runs (run them in RUN_HERE, or name the "
                         "test that runs each in RUN_ELSEWHERE of test/test_docs.py):\n" + "\n".join(missing))


@pytest.mark.parametrize("where", sorted(set(RUN_ELSEWHERE.values()) | set(PYTHON_ELSEWHERE.values())))
def test_the_tests_named_for_commands_exist(where):
    path, _, function = where.partition("::")
    assert (REPO / path).is_file(), where
    if function:
        assert re.search(rf"^def {re.escape(function)}\(", (REPO / path).read_text(), re.M), where


def test_every_page_is_linked_from_the_readme_and_every_link_resolves():
    readme = README.read_text()
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, f"docs/{page.name} is not linked from README.md"
    for path in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if not re.match(r"[a-z]+://", target):
                assert (path.parent / target).exists(), f"{path.relative_to(REPO)} links to missing {target}"


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"\bissue \d|review fix|\(issue", text, re.I), f"{page.name} reads like a development log"


# -------------------------------------------------------------------------------- run them

def _quick_blocks():
    found = []
    for path in PAGES:
        for start, block in blocks(path, "bash"):
            here = [command for command in commands(block) if command not in RUN_ELSEWHERE and runs_here(command)]
            if here:
                found.append(pytest.param(here, id=f"{path.name}:{start}"))
    return found


@pytest.mark.parametrize("block", _quick_blocks())
def test_quick_commands_run(block, reader_dir):
    script = "set -e\n" + "\n".join(block) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=reader_dir, env=reader_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{block}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


def _python_examples():
    return [pytest.param(code, id=f"{path.name}:{start}") for path in PAGES for start, code in blocks(path, "python")
            if not any(line in code for line in PYTHON_ELSEWHERE)]


@pytest.mark.parametrize("code", _python_examples())
def test_python_examples_run(code, reader_dir):
    done = subprocess.run([sys.executable, "-c", code], cwd=reader_dir, env=reader_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"


@pytest.mark.parametrize("executor", ["", " --executor events"])
def test_your_own_robot_in_three_steps(reader_dir, executor):
    """README's steps 2 and 3, as written: the node on my_robot.urdf, the Python client; and step 2
    with the EventsExecutor, as docs/dynamics_node.md shows it."""
    (step2,), = (commands(block) for _, block in blocks(README, "bash") if "dynamics_node" in block)
    step2 += executor
    step3, = (code for _, code in blocks(README, "python") if "rclpy.init()" in code)
    model = rd.load_urdf(reader_dir / "my_robot.urdf")
    env = reader_env()
    env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"]
    log = open(reader_dir / "node.log", "wb")
    node = subprocess.Popen(["bash", "-c", f"exec {step2}"], cwd=reader_dir, env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while b"loaded robot" not in (reader_dir / "node.log").read_bytes():
            assert node.poll() is None and time.monotonic() < deadline, (reader_dir / "node.log").read_text()
            time.sleep(0.1)
        client = subprocess.run([sys.executable, "-c", step3.replace("range(30)", "range(300)")], cwd=reader_dir,
                                env=env, capture_output=True, text=True, timeout=120)
        assert client.returncode == 0, client.stderr
        printed = [ast.literal_eval(line) for line in client.stdout.splitlines() if line.startswith("{")]
        assert printed, f"no gravity torques printed:\n{client.stdout}\n{client.stderr}"
        expected = rd.gravity_torques(model, np.full(model.nv, 0.1))
        np.testing.assert_allclose([printed[-1][name] for name in model.joint_names], expected, rtol=1e-9)
    finally:
        node.send_signal(2)
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
        log.close()
    assert node.returncode == 0, (reader_dir / "node.log").read_text()


# ------------------------------------------------------------------ measured figures in one place

_NUMBER = r"\d[\d.,]*(?:\s*[–-]\s*\d[\d.,]*)?"
#: what only docs/benchmarks.md may quote: a time in µs, a ratio to Pinocchio, a real-time factor
MEASURED_FIGURES = [
    re.compile(_NUMBER + r"\s*[µμ]s\b"),
    re.compile(_NUMBER + r"\s*(?:×|x|times)\s+(?:(?:of|slower than|faster than|as fast as)\s+)?Pinocchio"),
    re.compile(_NUMBER + r"\s*(?:×|times)\s+real[ -]time"),
]


def measured_figures(text):
    """The speed figures ``text`` quotes (each match of :data:`MEASURED_FIGURES`)."""
    return [match.group(0) for pattern in MEASURED_FIGURES for match in pattern.finditer(text)]


def test_speed_figures_are_quoted_only_in_benchmarks():
    """Measured speed drifts between runs: docs/benchmarks.md states each figure with its command and anchor,
    and every other page links to it instead of repeating a number that would go stale."""
    quoted = {path.name: found for path in PAGES if path.name != "benchmarks.md"
              if (found := measured_figures(path.read_text()))}
    assert quoted == {}
    assert len(measured_figures((REPO / "docs" / "benchmarks.md").read_text())) > 20  # (the figures are there)


def test_a_quoted_speed_figure_is_found():
    text = ("The Coriolis matrix costs ~5× Pinocchio, 11.7 µs (20.0 µs with contact); a plain RNEA is ~270× "
            "slower than Pinocchio, the compiled loops within ~1–3× of Pinocchio's; Panda-7 25–43× real time, "
            "7.8–11.3 times real time. A 5 × 5 matrix, 10 × the robot's mass, 1 kHz and 100 ms are no such figures.")
    assert measured_figures(text) == ["11.7 µs", "20.0 µs", "5× Pinocchio", "270× slower than Pinocchio",
                                      "1–3× of Pinocchio", "25–43× real time", "7.8–11.3 times real time"]
