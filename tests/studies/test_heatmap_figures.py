"""Figures 1 and 2's heatmaps: the title says which solver designed them, and cell text and tick
labels adapt to n (a small n as the paper draws it; a large n without run-together labels)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.mechanisms.closed_forms import geometric
from countdp.plots import intrinsic
from countdp.plots.canvas import drawing


def _drawn_axes(ns: list[int]) -> list:
    """Figures 1 and 2's heatmaps (:func:`countdp.plots.intrinsic.heatmap_panels`, drawn, not saved)
    of GM at each n, side by side."""
    records = [{"matrix": geometric(n, 2 / 3), "objective": "L1", "n": n, "objective_value": 1.0, "alpha": 2 / 3,
                "solver": "HIGHS", "method": "simplex"} for n in ns]
    with drawing(intrinsic.paper_theme()):
        fig = intrinsic.heatmap_panels.__wrapped__(records, "Test")  # the drawing, before it is saved
        fig.canvas.draw()
    assert fig.texts[0].get_text() == "Test, α = 2/3; solved with HiGHS simplex"
    return fig.axes[:len(ns)]


def test_small_n_keeps_every_label_and_cell_text():
    ax = _drawn_axes([4, 4, 4, 7])[3]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(k) for k in range(8)]
    cell_text = [t for t in ax.texts if t.get_text()]
    assert len(cell_text) == 64 and {t.get_fontsize() for t in cell_text} == {5.0}  # as drawn before


@pytest.mark.parametrize("n", [30, 200, 1024])
def test_large_n_thins_ticks_and_drops_cell_text(n):
    ax = _drawn_axes([n, 20])[0]
    labels = [int(t.get_text()) for t in ax.get_xticklabels()]
    assert labels[0] == 0 and len(labels) <= intrinsic.TICK_LABELS
    step = labels[1] - labels[0]
    assert step in (2, 5, 10, 20, 50, 100, 200) and np.all(np.diff(labels) == step)
    assert not [t for t in ax.texts if t.get_text()]
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False)), "tick labels overlap"


def test_title_names_the_recorded_solver_and_method():
    records = [{"solver": "CLARABEL", "method": "ipm"}, {"solver": "HIGHS", "method": "simplex"},
               {"solver": "CLARABEL", "method": "ipm"}]
    assert intrinsic.solved_with(records) == "Clarabel interior point, HiGHS simplex"
    assert intrinsic.solved_with([{"solver": "HIGHS", "method": "simplex"}]) == "HiGHS simplex"
    assert intrinsic.solved_with([{}]) == ""
