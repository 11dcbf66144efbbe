"""The figures the commands write: units on every axis, legends that hide no data."""

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from robot_dynamics.identification.report import plot_validation, validation_figure  # noqa: E402


def _validation(n=3, samples=400):
    t = np.linspace(0.0, 4.0, samples)
    tau = np.stack([10 * (j + 1) * np.sin(2 * np.pi * 0.5 * t + j) for j in range(n)], axis=1)
    tau[samples // 20] = 60.0  # a peak near the start, where a legend in the upper corner would sit
    return SimpleNamespace(label="hold-out", samples=SimpleNamespace(t=t, tau=tau), identified=tau * 1.01,
                           input=tau * 0.8, rms_identified=np.full(n, 0.1), rms_input=np.full(n, 2.0))


def test_validation_plot_has_units_and_its_legends_cover_no_data(tmp_path):
    figure = validation_figure(["shoulder", "elbow", "slide"], _validation(), ["revolute", "revolute", "prismatic"])
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    labels = [ax.get_ylabel() for ax in figure.axes]
    assert labels == ["shoulder\n(N m)", "elbow\n(N m)", "slide\n(N)"]
    assert "RMS error 0.1 N" in figure.axes[2].get_legend().get_texts()[1].get_text()
    for ax in figure.axes:
        legend = ax.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(ax.get_window_extent(renderer)), "a legend covers a panel's data"
    plot_validation(tmp_path / "validation.png", ["shoulder", "elbow", "slide"], _validation())
    assert (tmp_path / "validation.png").stat().st_size > 10_000
