"""docs/identification.md, run as a reader would: its walk-through in order, and its benchmark."""

import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from test_docs import blocks, commands, reader_env

PAGE = Path(__file__).resolve().parents[1] / "docs" / "identification.md"
BENCHMARK = ".venv/bin/python -m robot_dynamics.identification.benchmark"


def _steps():
    """The page's bash commands and python examples, in the page's order."""
    found = [(start, "bash", command) for start, block in blocks(PAGE, "bash") for command in commands(block)]
    found += [(start, "python", code) for start, code in blocks(PAGE, "python")]
    return [(kind, text) for _, kind, text in sorted(found, key=lambda step: step[0]) if text != BENCHMARK]


def test_walk_through(tmp_path):
    printed = {}
    for kind, text in _steps():
        argv = ["bash", "-c", text] if kind == "bash" else [sys.executable, "-c", text]
        done = subprocess.run(argv, cwd=tmp_path, env=reader_env(), capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{text}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        printed[text] = done.stdout

    identify_output = next(out for text, out in printed.items() if text.startswith("robot-dynamics identify recording"))
    table = [line.split() for line in identify_output.splitlines() if line.startswith("arm7_")]
    identified, urdf = np.array([[float(row[3]), float(row[5])] for row in table]).T
    assert len(table) == 8
    assert np.all(identified[:7] < 1.0), identify_output       # % of each joint's RMS torque, held out
    assert np.all(urdf > 3 * identified), identify_output

    tracking = next(out for text, out in printed.items() if "tracking error" in text)
    errors = dict(re.findall(r"^(\w+): RMS tracking error ([\d.]+) mrad", tracking, re.M))
    assert float(errors["identified"]) < 0.5 * float(errors["URDF"]), tracking

    payload = yaml.safe_load((tmp_path / "payload" / "payload.yaml").read_text())["robot_dynamics"]["ros__parameters"]
    assert abs(payload["payload"]["mass"] - 1.3) < 0.013
    assert np.linalg.norm(np.subtract(payload["payload"]["com"], [0.01, -0.02, 0.05])) < 3e-3
    for name in ("identified.urdf", "parameters.txt", "validation.png"):
        assert (tmp_path / "identified" / name).stat().st_size > 0


def test_benchmark_prints_its_tables():
    from robot_dynamics.identification.benchmark import main

    assert BENCHMARK in PAGE.read_text()
    out = io.StringIO()
    assert main(["--duration", "12", "--iterations", "0"], out=out) == 0
    text = out.getvalue()
    rows = [line.split() for line in text.splitlines() if re.match(r"arm7_\w+ +[\d.]+ ", line)]
    assert len(rows) == 8 and all(float(row[1]) < float(row[3]) for row in rows), text
    assert re.search(r"identify [\d.]+ s", text) and re.search(r"mass error [\d.]+ %", text), text
    assert re.search(r"design the excitation \(robot-dynamics excite\) [\d.]+ s; condition number over one period [\d.]+", text), text
