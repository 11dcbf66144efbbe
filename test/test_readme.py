"""The README's Python example runs as written, and its claims about the API hold."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_library_example_runs(monkeypatch):
    text = README.read_text()
    section = text[text.index("## The Python library"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(README.parent)  # the example loads urdf/arm7_gripper.urdf
    namespace = {}
    exec(compile(example, "README.md", "exec"), namespace)
    rd, arm = namespace["rd"], namespace["arm"]
    np.testing.assert_allclose(namespace["qdd_back"], namespace["qdd"], atol=1e-9)
    assert namespace["torques"].shape == (10_000, arm.nv)
    assert namespace["J"].shape == (6, arm.nv)
    assert "arm7_finger_joint2" not in arm.joint_names  # the mimic finger is not a coordinate
    assert not np.allclose(rd.gravity_torques(namespace["heavier"], namespace["q"]), namespace["g"])
