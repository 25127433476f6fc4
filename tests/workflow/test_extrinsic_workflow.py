"""Figures 10-13 end to end on config/quick.yaml; same seed -> identical results at --cores 1 and 2.

Uses the session fixtures of tests/conftest.py (temporary copies of the repository, results/
of the checkout never touched): ``quick_results`` ran the whole quick workflow with
``--cores 2``; ``quick_results_resumed`` ran it with ``--cores 1`` (interrupted part-way and
resumed, which tests/workflow/test_resume.py checks separately).  Every CSV under results/ and the
claims must be byte-identical between the two, with no column left out (tables carry no
timings: jobs log them), and every mechanism JSON identical except for its wall-clock timing
fields (conftest.TIMING_FIELDS: ``solve_time``, ``build_time``), which are cut out before comparing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import timing_columns, without_timing

TABLES = [
    "results/tables/fig10_adult_L0.csv",
    "results/tables/fig11_binomial_L0d1.csv",
    "results/tables/fig12_binomial_L0d.csv",
    "results/tables/fig13_binomial_RMSE.csv",
    "results/tables/extrinsic_findings.csv",
]
FIGURES = [t.replace("tables", "figures").replace(".csv", ext) for t in TABLES[:4] for ext in (".pdf", ".png")]
SIDECAR = "results/data/adult_targets.json"

pytestmark = pytest.mark.workflow


def _relative(root: Path, pattern: str) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "results").rglob(pattern) if p.is_file()}


def test_quick_extrinsic_outputs(quick_results):
    work = quick_results
    for t in TABLES + FIGURES + [SIDECAR]:
        assert (work / t).stat().st_size > 0, t
    sidecar = json.loads((work / SIDECAR).read_text())
    assert sidecar["source"] == "snapshot" and sidecar["rows_train"] == 32561
    assert sidecar["sha256"] == "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
    fig10 = pd.read_csv(work / TABLES[0])
    assert set(fig10["data_source"]) == {"snapshot"}
    assert {"mechanism", "mean", "se", "sd", "exact", "repetitions"} <= set(fig10.columns)
    findings = pd.read_csv(work / TABLES[-1])
    assert {"figure", "finding", "scope", "criterion", "value", "holds"} <= set(findings.columns)


# Verdicts that follow from theory at the quick config's parameters, whatever the sampled data:
# UM reports uniformly, so its error is n/(n+1) for any data; at alpha = 0.91, p = 0.5 the exact
# L0,d of GM exceeds EM's by more than 0.1 at every d <= 2 and GM's L0,1 exceeds WM's and EM's by
# about 0.2; RMSE grows with n for every mechanism at p = 0.5; and the quick config has one fig11
# alpha, so "WM and GM converge at lower alpha" cannot be checked.
KNOWN_VERDICTS = [
    ("fig10", "UM's error ~= n/(n+1)", "Adult gender", True),
    ("fig10", "UM's error ~= n/(n+1)", "Adult income", True),
    ("fig10", "UM's error ~= n/(n+1)", "Adult young", True),
    ("fig11", "constrained mechanisms beat GM for spread inputs (p = 0.5)", "alpha=0.91", True),
    ("fig11", "lower alpha: WM and GM converge", "one alpha", None),
    ("fig12", "balanced p: EM beats GM at every d", "p=0.5", True),
    ("fig13", "RMSE increases with group size", "p=0.5", True),
]


@pytest.mark.parametrize("figure,finding,scope,verdict", KNOWN_VERDICTS)
def test_quick_findings_give_the_verdicts_theory_predicts(quick_results, figure, finding, scope, verdict):
    findings = pd.read_csv(quick_results / TABLES[-1])
    row = findings[(findings.figure == figure) & (findings.finding == finding) & findings.scope.str.contains(scope)]
    assert len(row) == 1, findings[["figure", "finding", "scope"]].to_string()
    holds = row.holds.iloc[0]
    assert (pd.isna(holds) if verdict is None else bool(holds) is verdict), row.to_dict("records")


def test_every_csv_identical_across_core_counts(quick_results, quick_results_resumed):
    """Every table (results/tables/**.csv), evaluation and data CSV, and the claims, byte for byte."""
    two, one = quick_results, quick_results_resumed["path"]
    names = _relative(two, "*.csv") | {"results/claims.md"}
    assert names == _relative(one, "*.csv") | {"results/claims.md"}
    assert any(n.startswith("results/tables/") for n in names)
    differ = [n for n in sorted(names) if (two / n).read_bytes() != (one / n).read_bytes()]
    assert not differ, f"differ between --cores 2 and --cores 1 (resumed): {differ}"


def test_no_table_has_a_timing_column(quick_results):
    """Wall-clock timings belong in the job logs, never in a CSV (they would break byte-identity)."""
    work = quick_results
    timed = {n: cols for n in sorted(_relative(work, "*.csv")) if (cols := timing_columns((work / n).read_bytes()))}
    assert not timed, f"timing columns in tables: {timed}"


def test_extension_logs_record_the_timings(quick_results):
    """The timings that used to be table columns (ext_subsets*, ext_minimax) are in the job logs."""
    logs = quick_results / "results/logs/extensions"
    for study in ("subsets", "minimax"):
        text = (logs / f"ext_{study}.log").read_text()
        assert "solve_time=" in text and f"results/tables/ext_{study}.csv:" in text, text[:2000]
    for study in ("baselines", "prior", "objectives", "derivability", "checks"):
        assert f"ext_{study}: computed in " in (logs / f"ext_{study}.log").read_text()


def test_mechanism_artifacts_identical_across_core_counts(quick_results, quick_results_resumed):
    """Every mechanism JSON: the same matrix, certificate and metadata; only timing fields may differ."""
    two, one = quick_results, quick_results_resumed["path"]
    names = _relative(two, "*.json")
    mechanisms = sorted(n for n in names if n.startswith("results/mechanisms/"))
    assert mechanisms and names == _relative(one, "*.json")
    differ = []
    for name in mechanisms:
        a, b = (without_timing(json.loads((root / name).read_text())) for root in (two, one))
        if a != b:
            differ.append(name)
    assert not differ, f"mechanism artifacts differ between --cores 2 and --cores 1: {differ[:10]}"
