"""The library page's Python example (docs/library.md) runs as written, and its claims about the API hold."""

import re
from pathlib import Path

import numpy as np

LIBRARY = Path(__file__).resolve().parents[1] / "docs" / "library.md"


def test_python_library_example_runs(monkeypatch):
    text = LIBRARY.read_text()
    section = text[text.index("## The functions"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace = {}
    exec(compile(example, "docs/library.md", "exec"), namespace)
    rd, arm = namespace["rd"], namespace["arm"]
    np.testing.assert_allclose(namespace["qdd_back"], namespace["qdd"], atol=1e-9)
    assert namespace["torques"].shape == (10_000, arm.nv)
    assert namespace["J"].shape == (6, arm.nv)
    assert "arm7_finger_joint2" not in arm.joint_names  # the mimic finger is not a coordinate
    assert not np.allclose(rd.gravity_torques(namespace["heavier"], namespace["q"]), namespace["g"])
