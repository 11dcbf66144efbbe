"""The shared real log (issue 36): a KUKA LBR Med7 moving freely, 100 Hz, no time column, the
drive's torque sign opposite to the URDF's, two samples dropped by the clock in this 40 s slice
(test/data/med7/README.md).  Identification beats the nominal URDF on held-out data, the observer's
residual with the identified model is below KUKA's own external-torque estimate on most joints,
and the dropped samples are found."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robot_dynamics.identification import read_recording

DATA = Path(__file__).parent / "data" / "med7"
LOG, URDF = DATA / "med7_40s.csv", DATA / "med7dock.urdf"
JOINTS = [f"A{k}" for k in range(1, 8)]
READ = ["--rate", "100", "--effort-sign", "-1"]


def _cli(*args, cwd):
    return subprocess.run([str(Path(sys.executable).parent / "robot-dynamics"), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _columns(prefix):
    table = np.genfromtxt(LOG, delimiter=",", names=True)
    return np.column_stack([table[f"{prefix}_{name}"] for name in JOINTS])


def _table(stdout, first_column):
    """{joint: [numbers]} of the rows of the printed table whose header holds ``first_column``."""
    rows, inside = {}, False
    for line in stdout.splitlines():
        words = line.split()
        if inside and words and words[0] in JOINTS:
            rows[words[0]] = [float(w) for w in words[1:] if w not in ("N", "m")]
        elif inside and rows:
            break
        inside = inside or first_column in line
    return rows


def test_the_dropped_samples_are_found_and_the_clock_restored():
    from robot_dynamics.identification.recording import skipped_samples

    q = _columns("q")
    assert np.flatnonzero(skipped_samples(q)).tolist() == [1063, 2820]  # where the README says
    with pytest.warns(UserWarning, match="the clock dropped 2 sample"):
        recording = read_recording(LOG, rate=100.0)
    t = recording.series["q"]["A1"][0]
    steps = np.round(np.diff(t) * 100).astype(int)
    assert steps.tolist().count(2) == 2 and set(steps) == {1, 2} and np.flatnonzero(steps == 2).tolist() == [1062, 2819]


def test_a_smooth_recording_has_no_skips_and_every_simulated_drop_is_found():
    from robot_dynamics.identification.recording import skipped_samples

    t = np.arange(0, 20, 0.01)
    q = np.column_stack([0.5 * np.sin(0.7 * t + k) + 1e-6 * np.random.default_rng(k).normal(size=len(t))
                         for k in range(3)])
    assert not skipped_samples(q).any()
    kept = np.delete(np.arange(len(t)), [300, 301, 1200])
    found = skipped_samples(q[kept])
    assert {int(k): int(found[k]) for k in np.flatnonzero(found)} == {300: 2, 1198: 1}


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    """identify --friction on the slice: fit on the first 75 %, validated on the last 25 %."""
    where = tmp_path_factory.mktemp("med7")
    done = _cli("identify", LOG, "--urdf", URDF, *READ, "--friction", "--output", "out", cwd=where)
    assert done.returncode == 0, done.stderr
    return where, done


def test_identification_beats_the_nominal_urdf_on_held_out_data(identified):
    _, done = identified
    errors = _table(done.stdout, "RMS torque")
    assert sorted(errors) == JOINTS
    for name, (measured, ours, _, nominal, _) in errors.items():
        assert ours < nominal, (name, ours, nominal)
    assert sum(ours < 0.5 * nominal for _, ours, _, nominal, _ in errors.values()) >= 5
    assert "Traceback" not in done.stderr and all(line.startswith("warning: ") for line in done.stderr.splitlines())


def test_without_friction_the_urdfs_friction_is_left_out_and_said(tmp_path):
    done = _cli("identify", LOG, "--urdf", URDF, *READ, "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "the URDF's friction (damping up to 10, friction up to 0.1 on A1" in done.stderr
    assert "times those its URDF model needs" not in done.stderr  # the units check is not fooled by friction
    urdf = (tmp_path / "out" / "identified.urdf").read_text()
    assert 'damping="10.0"' not in urdf and urdf.count('damping="0"') == 7


def test_the_observer_with_the_identified_model_beats_kukas_estimate_on_most_joints(identified):
    where, _ = identified
    done = _cli("external-torques", LOG, "--urdf", "out/identified.urdf", *READ, "--friction", "--output", "et",
                cwd=where)
    assert done.returncode == 0, done.stderr
    assert "gaps in the clock: 2 (the observer restarted after each)" in done.stdout
    assert "the clock dropped 2 sample(s)" in done.stderr
    table = np.genfromtxt(where / "et" / "external_torques.csv", delimiter=",", names=True)
    r = np.column_stack([table[f"r_{name}"] for name in JOINTS])
    kuka = _columns("ext")
    held = slice(3 * len(kuka) // 4, None)  # the part the model was not fitted on
    ours = np.sqrt(np.nanmean(r[-len(kuka[held]):] ** 2, axis=0))
    theirs = np.sqrt(np.mean(kuka[held] ** 2, axis=0))
    assert np.sum(ours <= theirs) >= 5, (ours.round(3), theirs.round(3))
    thresholds = [float(x) for x in done.stdout.split("collision.thresholds: [")[1].split("]")[0].split(",")]
    assert max(thresholds) <= 3.0, thresholds


def _held_out_check(where, urdf, gain, thresholds, held, output):
    """(largest |r| / threshold, false collisions) on the rows ``held(t)`` of the whole fixture: the observer run over
    all of it with ``urdf`` at ``gain`` (external-torques), counted as the node's CollisionDetector counts them."""
    from robot_dynamics.control.collision import DEFAULT_MIN_DURATION, DEFAULT_RELEASE, CollisionDetector

    done = _cli("external-torques", LOG, "--urdf", urdf, *READ, "--friction", "--gain", gain, "--output", output,
                cwd=where)
    assert done.returncode == 0, done.stderr
    table = np.genfromtxt(where / output / "external_torques.csv", delimiter=",", names=True)
    t, r = table["t"], np.column_stack([table[f"r_{name}"] for name in JOINTS])
    judged = held(t) & (t >= t[0] + 5 / gain) & np.isfinite(r).all(axis=1)  # after five time constants
    detector = CollisionDetector(np.asarray(thresholds), DEFAULT_RELEASE, DEFAULT_MIN_DURATION)
    events = sum(detector.update(float(t[k]), r[k]) is True for k in np.flatnonzero(judged))
    return float(np.max(np.abs(r[judged]) / thresholds)), events


def _the_node_takes(parameters, urdf):
    """collision.yaml's parameters, flattened as ``--params-file`` flattens them, make the dynamics node's plan."""
    import robot_dynamics as rd
    from robot_dynamics.nodes.dynamics.plan import PARAMETERS, Settings, coerce_setting, make_plan

    names = {parameter.name: parameter.field for parameter in PARAMETERS}
    flat = {f"{group}.{key}": value for group, values in parameters.items() if isinstance(values, dict)
            for key, value in values.items()}
    flat["joints"] = parameters["joints"]
    plan = make_plan(rd.load_urdf(urdf), Settings(**{names[name]: coerce_setting(names[name], value)
                                                     for name, value in flat.items()}))
    np.testing.assert_allclose(plan.external_torque.thresholds, flat["collision.thresholds"])
    assert plan.external_torque.sign.tolist() == [-1.0] * 7 and plan.external_torque.settings.external_torque_friction


def test_cross_validated_thresholds_hold_on_held_out_data_where_in_sample_ones_do_not(tmp_path):
    """identify's collision thresholds (blocked cross-validation over the data it fits) against the
    in-sample ones (external-torques on those same data with the identified URDF), both judged on the
    held-out first 25 % of the fixture (fit on the last 30 s).  On the fixture's default split (fit on the
    first 30 s) the cross-validated thresholds still give one false collision (A2 at 1.16 x its threshold;
    the in-sample ones reach 2.6 x): 30 s of motion cover too few poses, docs/contact.md gives the figures."""
    import yaml

    done = _cli("identify", LOG, "--urdf", URDF, *READ, "--friction", "--holdout", "first", "--output", "out",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    parameters = yaml.safe_load((tmp_path / "out" / "collision.yaml").read_text())["robot_dynamics"]["ros__parameters"]
    observer, thresholds = parameters["external_torque"], parameters["collision"]["thresholds"]
    assert observer["enabled"] and observer["friction"] and observer["effort_sign"] == [-1.0] * 7
    assert len(thresholds) == 7 and max(thresholds) < 5.0, thresholds  # a few N m, not the tens of a dropped sample
    assert "0 false collision(s) with these thresholds" in done.stdout
    assert "gaps in the clock: 2 (the observer restarted after each" in done.stdout  # the fixture's two drops
    _the_node_takes(parameters, tmp_path / "out" / "identified.urdf")
    first_quarter = lambda t: t < t[0] + 0.25 * (t[-1] - t[0])  # noqa: E731
    ratio, events = _held_out_check(tmp_path, "out/identified.urdf", observer["gain"], thresholds, first_quarter, "cv")
    assert events == 0 and ratio < 1.0, (ratio, events)

    # the old procedure: thresholds from external-torques over the data the model was fitted on (the last 75 %)
    lines = LOG.read_text().splitlines()
    (tmp_path / "fit.csv").write_text("\n".join(lines[:1] + lines[1 + len(lines[1:]) // 4:]) + "\n")
    fit = _cli("external-torques", "fit.csv", "--urdf", "out/identified.urdf", *READ, "--friction", "--output", "fit",
               cwd=tmp_path)
    assert fit.returncode == 0, fit.stderr
    in_sample = [float(x) for x in fit.stdout.split("collision.thresholds: [")[1].split("]")[0].split(",")]
    gain = float(fit.stdout.split("external_torque.gain: ")[1].split()[0])
    ratio, events = _held_out_check(tmp_path, "out/identified.urdf", gain, in_sample, first_quarter, "in_sample")
    assert events >= 1 and ratio > 1.0, (ratio, events)  # what the cross-validation is for
