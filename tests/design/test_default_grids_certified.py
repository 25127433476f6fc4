"""Every mechanism artifact the DEFAULT config builds carries a valid DP certificate.

The artifact list comes from the workflow itself: parsing it on config/config.yaml (in a
temporary copy of the repository, through a Snakefile that includes it and prints
``needed_mechanism_paths()``) names every ``results/mechanisms/...json`` a full run would
write (about 1,500: all closed forms GM/EM/UM and every LP of Figures 1, 2, 6, 8, 9 and of the
extrinsic sweeps, n up to 40).  Each is designed in-process exactly as the design rule does
(:func:`countdp.studies.sweeps.design_artifact`, HiGHS simplex) and its JSON is read back: the
certificate must say ``certified: true`` with ``tolerance: 0``, ``max_violation`` 0, a repair
``lambda <= 1e-7``, and the stored floats must pass the float alpha-DP test (``is_alpha_dp``,
no tolerance) and an independent recomputation of the inequalities.  The release weights
must carry the exact alpha the config gave and pass the exact test, re-checked here with
Python integers.  All of them are designed (no sampling): the whole grid takes about 60 s on
an idle core.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import copy_workflow, snakemake

from countdp.privacy.certify import COLUMN_SUM_TOL, MAX_REPAIR_LAMBDA, is_alpha_dp
from countdp.studies.records import objective_from_slug
from countdp.studies.sweeps import design_artifact
from countdp.values.alpha import alpha_text, exact_alphas_in
from tests.helpers.artifact_files import read_file, write_file

ARTIFACT = re.compile(r"results/mechanisms/(?P<mechanism>[^/\s]+)/(?P<objective>[^/\s]+)/"
                      r"n=(?P<n>\d+)/alpha=(?P<alpha>[^/\s]+)\.json")
CLOSED_FORMS = ("GM", "EM", "UM")

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def default_artifacts(tmp_path_factory) -> list[str]:
    work = copy_workflow(tmp_path_factory.mktemp("default") / "repo")
    # the sweeps' artifacts are params of rule design_sweep, which a dry run does not print: a
    # Snakefile that includes the workflow prints the paths its studies need as it is parsed
    (work / "list_designs.smk").write_text('include: "Snakefile"\n\nimport sys\n\n'
                                           'print("\\n".join(needed_mechanism_paths()), file=sys.stderr)\n')
    dry = snakemake(work, "-s", "list_designs.smk", "-n", "--cores", "1", configfile="config/config.yaml",
                    timeout=600)
    assert dry.returncode == 0, dry.stderr[-3000:]
    paths = sorted({m.group(0) for m in ARTIFACT.finditer(dry.stdout + dry.stderr)})
    assert not (work / "results").exists()
    return paths


def _independent_dp(P: np.ndarray, alpha: float) -> bool:
    """alpha-DP written out entry by entry (the paper's definition), not via countdp.privacy.certify."""
    rows, cols = P.shape
    for i in range(rows):
        for j in range(cols - 1):
            if alpha * P[i, j + 1] > P[i, j] or alpha * P[i, j] > P[i, j + 1]:
                return False
    return bool((P >= 0).all() and (P <= 1).all() and (np.abs(P.sum(axis=0) - 1) <= COLUMN_SUM_TOL).all())


def _python_int_dp(weights: list[list[int]], alpha: str, D: int) -> bool:
    p, q = map(int, alpha.split("/"))
    N = len(weights)
    sums = all(sum(weights[i][j] for i in range(N)) == D for j in range(N))
    return sums and all(p * r[j + 1] <= q * r[j] and p * r[j] <= q * r[j + 1] for r in weights for j in range(N - 1))


def test_default_grid_is_what_the_figures_need(default_artifacts):
    kinds = Counter((ARTIFACT.match(p)["mechanism"], ARTIFACT.match(p)["objective"]) for p in default_artifacts)
    assert len(default_artifacts) > 1000
    for pair in [("GM", "L0"), ("EM", "L0"), ("UM", "L0"), ("WM", "L0"), ("WH", "L0"), ("LP-none", "L2"),
                 ("LP-none", "L1"), ("LP-none", "L0d1"), ("LP-RH+RM+CH+CM+F+WH+S", "L2"), ("LP-RM+CM+WH+S", "L0")]:
        assert kinds[pair] >= 1, pair
    assert max(int(ARTIFACT.match(p)["n"]) for p in default_artifacts) >= 40


def test_every_default_artifact_is_certified(default_artifacts, tmp_path):
    exact = exact_alphas_in(yaml.safe_load(Path("config/config.yaml").read_text()))
    failures = []
    for k, path in enumerate(default_artifacts):
        m = ARTIFACT.match(path)
        mechanism, n, alpha = m["mechanism"], int(m["n"]), m["alpha"]
        solver = "closed-form" if mechanism in CLOSED_FORMS else "HIGHS/simplex"
        out = tmp_path / f"{k}.json"
        design_artifact(mechanism, m["objective"], n, alpha, solver, out, alpha_text(exact[alpha]))
        record, P, W = read_file(out)
        dp, release = record["dp"], record["release"]
        ok = (
            record["mechanism"] == mechanism and record["n"] == n and repr(record["alpha"]) == alpha
            and record["objective"] == objective_from_slug(m["objective"]) and P.shape == (n + 1, n + 1)
            and dp["certified"] is True and dp["tolerance"] == 0 and dp["max_violation"] == 0
            and dp["repair_lambda"] <= MAX_REPAIR_LAMBDA
            and is_alpha_dp(P, float(alpha)) and _independent_dp(P, float(alpha))
            and record["alpha_exact"] == alpha_text(exact[alpha]) and release["denominator"] == 2**62
            and release["certificate"]["holds"] is True
            and _python_int_dp(W.tolist(), record["alpha_exact"], release["denominator"])
            and abs(release["certificate"]["objective_change"]) <= 1e-9
        )
        if not ok:
            failures.append((path, dp))
        out.unlink()
        out.with_suffix(".npz").unlink()
    assert not failures, failures[:5]


# ---------------------------------------------------------------- consumers read certified artifacts
def _tamper(path: Path) -> None:
    """Break one DP inequality by about 1e-7 (solver-error size) and keep ``certified: true`` (the file's
    digests re-recorded, so that the float DP test is what must catch it)."""
    record, P, _ = read_file(path)
    P = P.copy()
    P[0, 1] = P[0, 0] / record["alpha"] * (1 + 1e-6)  # alpha * P[0, 1] > P[0, 0]
    P[:, 1] /= P[:, 1].sum()
    write_file(path, record, matrix=P)


def test_loaders_refuse_an_uncertified_artifact(tmp_path):
    from countdp.evaluate.experiments import load_mechanisms
    from countdp.services.artifact import load_certified
    from countdp.studies.records import load_matrix_records

    path = tmp_path / "WM.json"
    design_artifact("WM", "L0", 4, "0.91", "HIGHS/simplex", path)
    assert load_certified(path)["dp"]["certified"]
    _tamper(path)
    assert not is_alpha_dp(read_file(path)[1], 0.91)
    for load in (load_certified, lambda p: load_matrix_records([p]), lambda p: load_mechanisms([["WM", 4, p]], 0.91)):
        with pytest.raises(ValueError, match="WM.json: mechanism is not certified"):
            load(str(path))


def test_loaders_refuse_tampered_release_weights(tmp_path):
    """The float matrix intact, one weight moved so that one DP inequality breaks by a single unit."""
    from countdp.evaluate.experiments import load_mechanisms
    from countdp.services.artifact import load_certified, load_design

    path = tmp_path / "WM.json"
    design_artifact("WM", "L0", 4, "0.91", "HIGHS/simplex", path)
    record, _, W = read_file(path)
    W = W.copy()
    # the least value of W[0][1] that breaks 91 W[0][1] <= 100 W[0][0], mass taken from W[1][1]
    target = (100 * int(W[0, 0])) // 91 + 1
    W[1, 1] -= target - W[0, 1]
    W[0, 1] = target
    write_file(path, record, weights=W)  # digests re-recorded: the exact test must catch it
    for load in (load_certified, load_design, lambda p: load_mechanisms([["WM", 4, p]], 0.91)):
        with pytest.raises(ValueError, match="WM.json: release weights are not alpha-DP"):
            load(str(path))


def test_tables_figures_and_evaluations_refuse_a_tampered_artifact(quick_results, tmp_path):
    """A copy of the quick run with one artifact tampered: every job that reads it fails, naming it."""
    import shutil

    work = tmp_path / "repo"
    shutil.copytree(quick_results, work, symlinks=True, ignore=shutil.ignore_patterns("figures", "logs"))
    artifact = "results/mechanisms/WM/L0/n=4/alpha=0.91.json"
    _tamper(work / artifact)
    consumers = ["results/tables/fig07_truthful.csv", "results/figures/fig07_gm_em_wm_heatmaps.png",
                 "results/evaluations/binomial/fig11/L0d1/n=4/alpha=0.91/summary.csv"]
    done = snakemake(work, "--cores", "1", "--keep-going", "--forcerun", "fig07_tables", "fig07_figure",
                     "eval_fig11_binomial", "--allowed-rules", "fig07_tables", "fig07_figure", "eval_fig11_binomial",
                     "--", *consumers)
    text = done.stdout + done.stderr
    assert done.returncode != 0
    for rule in ("fig07_tables", "fig07_figure", "eval_fig11_binomial"):
        assert f"Error in rule {rule}" in text, text[-3000:]
    assert text.count(f"{artifact}: mechanism is not certified") >= 3, text[-3000:]
