"""A design sweep job (workflow/lib/jobs_design.py) shows each long design's stages on stderr, as
``countdp design`` does, every line labelled with the design it belongs to; quick and reused designs
show only their summary line."""

from __future__ import annotations

import logging

from jobs_design import sweep

from countdp import progress


def _run_sweep(tmp_path, mechanism: str, objective: str, ns: list[int]) -> None:
    paths = [str(tmp_path / f"{mechanism}-{n}.json") for n in ns]
    solver = "closed-form" if mechanism == "GM" else "HIGHS/auto"
    sweep(mechanism, objective, "0.91", ns, solver, paths, str(tmp_path / f"{mechanism}.log"), "91/100",
          str(tmp_path / f"{mechanism}.sweep.json"), "test-version")


def test_a_long_design_shows_its_stages_labelled(tmp_path, capsys, monkeypatch):
    """With the delay set to 0 every design is 'long': the reduced LP's HiGHS run and the
    certification appear, labelled with the design, before the design's summary line."""
    monkeypatch.setattr(progress, "STAGE_DELAY", 0.0)
    level = logging.getLogger("countdp").level
    _run_sweep(tmp_path, "WM", "L2", [30])
    lines = capsys.readouterr().err.splitlines()
    staged = [line for line in lines if line.startswith("countdp: WM L2 n=30 alpha=0.91: [")]
    assert any("HiGHS simplex" in line for line in staged), lines
    assert any("certifying alpha-DP" in line for line in staged), lines
    summary = next(i for i, line in enumerate(lines) if line.startswith(str(tmp_path / "WM-30.json")))
    assert lines.index(staged[-1]) < summary
    assert logging.getLogger("countdp").level == level and not logging.getLogger("countdp").handlers


def test_quick_and_reused_designs_show_only_their_summaries(tmp_path, capsys):
    for _ in range(2):  # designed, then reused
        _run_sweep(tmp_path, "GM", "L0", [4, 5])
        _run_sweep(tmp_path, "WM", "L0", [3])
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 5 and not [line for line in err if line.startswith("countdp")], err
    assert sum(": reused (" in line for line in err) == 3
