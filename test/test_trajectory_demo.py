"""``robot-dynamics demo-trajectory``: the run's story holds, in numbers (robot_dynamics.tools.trajectory_demo)."""

import re

import numpy as np
import pytest

from robot_dynamics import cli
from robot_dynamics.tools import trajectory_demo as demo_module
from robot_dynamics.trajectories.check import check_trajectory, sample


@pytest.fixture(scope="module")
def demo():
    return demo_module.run()


def test_the_planner_keeps_its_velocity_and_acceleration_limits_and_breaks_a_torque_limit(demo):
    model = demo_module.arm_with_payload()
    planner = demo.planner
    index = [model.joint_names.index(name) for name in demo_module.JOINTS]
    # its waypoints, as a planner guarantees them (the controller's quintic between them may pass them
    # where the acceleration switches)
    assert np.all(np.abs(planner.qd) <= demo_module.VELOCITY_SHARE * model.velocity_limits[index] + 1e-9)
    assert np.all(np.abs(planner.qdd) <= demo_module.PLANNER_ACCELERATION * (1 + 1e-9))
    assert np.abs(planner.qdd / demo_module.PLANNER_ACCELERATION).max() == pytest.approx(1.0)  # at the limit
    _, _, qd, _ = sample(planner)
    assert np.all(np.abs(qd) <= model.velocity_limits[index])
    assert not demo.planner_check.ok
    over = [v for v in demo.planner_check.violations if v.quantity == "effort"]
    assert over and all(abs(v.value) > v.limit for v in over)
    assert max(demo.planner_check.peak_effort_fraction[v.joint] for v in over) > 1.03


def test_the_retimed_trajectory_keeps_the_path_and_the_margin(demo):
    model = demo_module.arm_with_payload()
    retimed = demo.retimed.trajectory
    assert demo.retimed_check.ok
    peaks = [demo.retimed_check.peak_effort_fraction[name] for name in demo_module.JOINTS]
    assert max(peaks) <= demo_module.EFFORT_MARGIN + 1e-6
    assert max(peaks) > demo_module.EFFORT_MARGIN - 0.03  # time-optimal: some joint works near its margin
    # on the planner's path, a straight line in joint space: q - START is parallel to GOAL - START
    d = demo_module.GOAL - demo_module.START
    along = (retimed.q - demo_module.START) @ d / (d @ d)
    np.testing.assert_allclose(retimed.q, demo_module.START + np.outer(along, d), atol=1e-9)
    assert along[0] == pytest.approx(0.0, abs=1e-12) and along[-1] == pytest.approx(1.0, abs=1e-12)
    assert demo.retimed.duration_after > demo.planner.t[-1]  # slower where the torque runs out
    assert check_trajectory(model, retimed).ok


def test_tracking_saturates_with_the_planner_timing_only(demo):
    planner, retimed = demo.runs
    assert planner.saturated > 0.01 and planner.ratio.max() > 1.0
    assert retimed.saturated == 0.0 and retimed.ratio.max() <= 1.0
    assert retimed.worst_error < planner.worst_error / 5
    # the saturation starts where the check said the planner's timing needs more than a limit
    first = min(v.time for v in demo.planner_check.violations if v.quantity == "effort")
    assert planner.t[np.argmax((planner.ratio > 1.0).any(axis=1))] == pytest.approx(first, abs=0.01)


def test_summary_plot_and_command(demo, tmp_path):
    text = "\n".join(demo_module.summary_lines(demo))
    joint = max(demo.planner_check.peak_effort_fraction, key=demo.planner_check.peak_effort_fraction.get)
    said = re.search(rf"beyond the torque limit: {joint} from t = ([\d.]+) s, (-?[\d.]+) N m against 87; at worst "
                     rf"(\d+)% of it", text)
    assert said, text
    assert int(said.group(3)) == round(100 * demo.planner_check.peak_effort_fraction[joint])
    assert "retimed" in text and "within the limits" in text
    pytest.importorskip("matplotlib")
    assert demo_module.plot(demo, tmp_path / "demo.png").stat().st_size > 10_000
    args = cli.build_parser().parse_args(["demo-trajectory", "--no-plot"])
    assert args.run is cli.demos.run_trajectory_demo


def test_the_command_prints_the_summary_and_writes_the_plot(tmp_path):
    """``.venv/bin/robot-dynamics demo-trajectory`` as the README shows it, in a fresh directory."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("matplotlib")
    script = Path(sys.executable).with_name("robot-dynamics")
    done = subprocess.run([str(script), "demo-trajectory"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "beyond the torque limit: arm7_joint2" in done.stdout and "within the limits" in done.stdout
    assert (tmp_path / "out" / "robot_dynamics_trajectory_demo.png").stat().st_size > 10_000
