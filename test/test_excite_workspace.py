"""``robot-dynamics excite`` before a real run: the workspace warning, --scale / --max-amplitude, and
files written with the user's usual permissions (the umask's, not mkstemp's 0600)."""

import os
import re

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics import cli
from robot_dynamics.identification import excitation as ex


@pytest.fixture(scope="module")
def designed():
    model = rd.load_urdf("planar_2r")
    return model, ex.design_excitation(model, period=4.0, harmonics=3, iterations=2)


def test_scaling_shrinks_every_swing_and_keeps_the_ends_at_rest(designed):
    model, excitation = designed
    t = np.linspace(0.0, excitation.period, 2001)
    q, qd, qdd = excitation(t)
    half = ex.scaled(excitation, 0.5)
    q2, qd2, qdd2 = half(t)
    np.testing.assert_allclose(q2 - half.q0, 0.5 * (q - excitation.q0), atol=1e-12)
    np.testing.assert_allclose(qd2, 0.5 * qd, atol=1e-12)
    np.testing.assert_allclose([qd2[0], qdd2[0], qd2[-1]], np.zeros((3, model.nv)), atol=1e-9)  # at rest at both ends
    capped = ex.scaled(excitation, 1.0, max_amplitude=0.1)
    amplitude = np.abs(capped(t)[0] - capped.q0).max(axis=0)
    assert amplitude.max() == pytest.approx(0.1, rel=1e-3) and (amplitude <= 0.1 + 1e-9).all()
    with pytest.raises(ex.ExcitationError, match="--scale 1.5"):
        ex.scaled(excitation, 1.5)


def test_the_swept_box_is_the_tool_paths_bounds(designed):
    """planar_2r's tip at the joint angles q: the box of the frame's positions, the largest of the links'."""
    model, excitation = designed
    frame, low, high = ex.swept_box(model, excitation)
    q, _, _ = excitation(np.linspace(0.0, excitation.period, 500))
    tip = rd.frame_pose(model, q, frame)[..., :3, 3]
    np.testing.assert_allclose(low, tip.min(axis=0))
    np.testing.assert_allclose(high, tip.max(axis=0))
    for other in model.link_names:
        _, l2, h2 = ex.swept_box(model, excitation, other)
        assert np.linalg.norm(h2 - l2) <= np.linalg.norm(high - low) + 1e-12
    reach = np.abs(np.concatenate([low, high])).max()
    lengths = np.linalg.norm(rd.frame_pose(model, np.zeros(model.nv), frame)[:3, 3])  # straight arm: full reach
    assert reach <= lengths + 1e-9


def test_excite_warns_about_the_workspace_and_writes_with_the_umask(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        output = tmp_path / "excitation.csv"
        status = cli.main(["excite", "planar_2r", "--duration", "4", "--period", "4", "--harmonics", "3",
                           "--output", str(output), "--scale", "0.5"])
    finally:
        os.umask(old)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert oct(output.stat().st_mode & 0o777) == oct(0o644)
    warning = re.search(r"warning: workspace: the joints swing by up to ([\d.]+) rad \((\w+);.* sweeps x ([-+\d.]+)\.\.",
                        captured.err)
    assert warning, captured.err
    swings = {line.split()[0]: float(line.split()[4]) for line in captured.out.splitlines()[3:]}
    assert float(warning.group(1)) == pytest.approx(max(swings.values()), abs=0.01)
    assert "--scale" in captured.err and "self-collision is not checked" in captured.err


@pytest.mark.parametrize("option", [["--scale", "1.5"], ["--scale", "nan"], ["--max-amplitude", "-1"],
                                    ["--tool", "nowhere"]])
def test_excite_refuses_its_workspace_options_before_any_work(tmp_path, capsys, monkeypatch, option):
    """Checked with the other options, before the trajectory is designed (which may take seconds)."""
    def designed(*args, **kwargs):
        raise AssertionError("the excitation was designed before the options were checked")

    monkeypatch.setattr(ex, "design_excitation", designed)
    status = cli.main(["excite", "planar_2r", "--duration", "4", "--period", "4", "--output",
                       str(tmp_path / "excitation.csv"), *option])
    err = capsys.readouterr().err
    assert status == 2 and option[0] in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "excitation.csv").exists()
