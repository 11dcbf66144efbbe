"""``robot-dynamics demo-contact``: the run's story holds, in numbers."""

import numpy as np
import pytest

from robot_dynamics import cli
from robot_dynamics.tools import contact_demo


@pytest.fixture(scope="module")
def run():
    return contact_demo.run(duration=3.0, approach_time=2.5, threshold=1.5)  # the impact alone stays below


def test_touch_estimate_collision_and_gravity_hold(run):
    touching = np.linalg.norm(run.force, axis=1) > 0
    assert touching.any()
    first = np.argmax(touching)
    assert np.abs(run.residual[:first]).max() < 0.01  # free motion, exact model: no external torque
    assert not run.collision[:first].any()
    detected = np.argmax(run.collision)
    assert run.collision.any() and 0.05 < run.t[detected] - run.t[first] < 1.0  # the servo presses, then it fires
    assert run.holding[detected:].all() and not run.holding[:detected].any()
    # pressing (after one observer time constant past the impact, before the hold): the estimate follows the truth
    settled = touching & ~run.holding & (run.t > run.t[first] + 5 / contact_demo.GAIN)
    assert settled.sum() > 100
    error = np.linalg.norm(run.estimate[settled] - run.force[settled], axis=1)
    assert error.max() < 0.05 * np.linalg.norm(run.force[settled], axis=1).max() + 0.05
    # the gravity hold stops the push: 0.5 s later the tool no longer presses
    assert np.linalg.norm(run.force[min(detected + 500, len(run.t) - 1)]) < 0.5


def test_summary_and_plot(run, tmp_path, monkeypatch):
    """The summary's first lines, and the figure draws the run's own numbers: the true and estimated force,
    every joint's residual, the thresholds, the detection's time, and the zoom around the impact."""
    lines = contact_demo.summary_lines(run)
    assert lines[0].startswith("tool touched the wall at t = ")
    assert lines[1].startswith("collision declared at t = ") and "arm7_joint" in lines[1]
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    saved = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda figure, *a, **k: (saved.append(figure), savefig(figure, *a, **k)))
    contact_demo.plot(tmp_path / "demo.png", run)
    assert (tmp_path / "demo.png").stat().st_size > 10_000
    (figure,) = saved
    magnitude = np.linalg.norm(run.force, axis=1)
    touch, detection, peak = contact_demo.impact(run)
    for column in (0, 1):
        forces, torques, flags = figure.axes[column], figure.axes[2 + column], figure.axes[4 + column]
        drawn = {line.get_label(): line for line in forces.get_lines()}
        np.testing.assert_array_equal(drawn["true contact force |f| (simulator)"].get_ydata(), magnitude)
        np.testing.assert_array_equal(drawn["estimated |f| (momentum observer)"].get_ydata(),
                                      np.linalg.norm(run.estimate, axis=1))
        residuals = {line.get_label(): line.get_ydata() for line in torques.get_lines()}
        for i, name in enumerate(run.names):
            np.testing.assert_array_equal(residuals[name], run.residual[:, i])
        assert residuals[f"threshold ±{run.threshold:g} N m"][0] == run.threshold
        declared = [line for line in flags.get_lines() if np.all(line.get_xdata() == run.t[detection])]
        assert len(declared) == 1  # the detection marked where the detector fired
    np.testing.assert_allclose(figure.axes[1].get_xlim(), (run.t[touch] - 0.02, run.t[max(peak, detection)] + 0.1))


def test_the_summary_gives_the_impact_peak_beside_the_force_at_detection(run):
    """The impact's spike is reported with its time, not only the (smaller) force when the
    collision was declared: both are the simulator's true force at those samples."""
    import re

    magnitude = np.linalg.norm(run.force, axis=1)
    touch, detection, peak = contact_demo.impact(run)
    assert magnitude[peak] == magnitude[touch:touch + 200].max()  # the largest force of the impact's first 0.2 s
    assert detection is not None and magnitude[peak] > 2 * magnitude[detection]  # the spike, not the press
    text = "\n".join(contact_demo.summary_lines(run))
    said = re.search(r"impact peak: true force ([\d.]+) N at t = ([\d.]+) s", text)
    assert said, text
    assert float(said.group(1)) == pytest.approx(magnitude[peak], abs=0.005)
    assert float(said.group(2)) == pytest.approx(run.t[peak], abs=5e-4)
    if detection is not None:
        at_detection = float(re.search(r"at that instant the true force was ([\d.]+) N", text).group(1))
        assert at_detection == pytest.approx(magnitude[detection], abs=0.005)


def test_bad_argument_is_one_line(capsys):
    assert cli.main(["demo-contact", "--duration", "0", "--no-plot"]) == 1
    error = capsys.readouterr().err.strip()
    assert "must be positive" in error and "\n" not in error
