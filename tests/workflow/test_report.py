"""The Snakemake HTML report: every figure with a rendered caption, and the claims.

``test_captions_render`` renders every caption of workflow/report/ the way ``snakemake --report``
does (Jinja with ``snakemake.config``, then docutils), for the default and the quick configuration,
without running anything.  The workflow tests run ``snakemake --report`` on the quick run of
``conftest.quick_results`` and read the report's embedded data: the top-level description, the
categories, each figure's caption, and the rendered claims table.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from conftest import REPO, snakemake

from countdp.claims.render import claims_html
from countdp.claims.table import VERDICTS

FIGURES = {  # file stem -> the figure number its caption must name
    "fig01_unconstrained_heatmaps": 1, "fig02_constrained_heatmaps": 2, "fig03_gm_structure": 3,
    "fig04_em_structure": 4, "fig06_properties": 6, "fig07_gm_em_wm_heatmaps": 7, "fig08_wh_combinations": 8,
    "fig09_named_mechanisms_l0": 9, "fig10_adult_L0": 10, "fig11_binomial_L0d1": 11, "fig12_binomial_L0d": 12,
    "fig13_binomial_RMSE": 13,
}
EXTRINSIC = {"fig10_adult_L0", "fig11_binomial_L0d1", "fig12_binomial_L0d", "fig13_binomial_RMSE"}
CATEGORIES = {"Intrinsic (Figures 1-9)", "Extrinsic (Figures 10-13)", "Claims"}
REPORT_DIR = REPO / "workflow" / "report"


# ------------------------------------------------------------------ captions, without a run
def _render(path: Path, config: dict, categories: set[str]) -> str:
    """Jinja + docutils as in snakemake.report; docutils warnings raise."""
    from docutils.core import publish_parts
    from jinja2 import Environment, StrictUndefined

    env = Environment(trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined)
    smk = SimpleNamespace(config=config, output=SimpleNamespace(table="results/tables/some_table.csv"),
                          params=SimpleNamespace(objective="L1"))  # the objective captions read their rule's param
    cats = [SimpleNamespace(name=name) for name in sorted(categories)]
    links = "\n\n" + "\n".join(f".. _{name}: #" for name in [*sorted(categories), "claims.html"]) + "\n"
    text = env.from_string(path.read_text() + links).render(snakemake=smk, categories=cats, files=[])
    return publish_parts(text, writer_name="html", settings_overrides={"halt_level": 2, "report_level": 2})["body"]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # docutils' writer_name, as Snakemake uses it
@pytest.mark.parametrize("configfile", ["config.yaml", "quick.yaml"])
def test_captions_render(configfile):
    config = yaml.safe_load((REPO / "config" / configfile).read_text())
    captions = sorted(REPORT_DIR.glob("*.rst"))
    assert {f"fig{k:02d}.rst" for k in (1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13)} <= {p.name for p in captions}
    for path in captions:
        html = _render(path, config, CATEGORIES | {"Beyond the paper"})
        assert html.strip(), path.name
        assert "{{" not in html and "{%" not in html, path.name
    fig10 = _render(REPORT_DIR / "fig10.rst", config, CATEGORIES)
    assert f"{config['fig10']['repetitions']} repetitions" in fig10 and "standard error" in fig10
    for key in ("fig11", "fig12", "fig13"):
        text = _render(REPORT_DIR / f"{key}.rst", config, CATEGORIES)
        assert f"{config[key]['repetitions']} repetitions" in text and "standard deviation" in text, key


SOLVERS = {  # solver block -> what Figures 1 and 2's captions must say, and must not
    "planner, HiGHS": ({"name": "HIGHS"}, "the general LP, whose backend is set to HIGHS;", ("simplex", "vertex")),
    "planner, Clarabel": ({"name": "CLARABEL"}, "backend is set to CLARABEL;", ("HIGHS", "simplex", "ipm")),
    "planner, HiGHS ipm": ({"name": "HIGHS", "method": "ipm"}, "backend is set to HIGHS ipm;", ("simplex",)),
    "plain HiGHS": ({"name": "HIGHS", "plain": True}, "solved with HIGHS (simplex) alone, a vertex solution",
                    ("planner",)),
    "plain Clarabel": ({"name": "CLARABEL", "plain": True}, "solved with CLARABEL (ipm) alone", ("HIGHS", "vertex")),
}


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
@pytest.mark.parametrize("setting", SOLVERS)
def test_the_lp_captions_state_no_solver_the_run_may_not_use(setting):
    """Only ``solver.plain`` fixes every LP's solver; otherwise the planner chooses each design's path
    and the caption names only the general LP's configured backend.  Once Figure 2 said "HIGHS simplex"
    whatever the planner ran, and the objectives study "HiGHS simplex vertices" whatever
    ``extensions.solver`` was."""
    solver, says, never = SOLVERS[setting]
    config = yaml.safe_load((REPO / "config" / "quick.yaml").read_text())
    config["solver"] = solver
    config["extensions"]["solver"] = solver
    for name in ("fig01.rst", "fig02.rst"):
        text = " ".join(_render(REPORT_DIR / name, config, CATEGORIES).split())
        assert says in text and "the figure's title names the solver and method the designs record" in text, name
        how = text.split("How it was made.", 1)[1].split("the figure's title", 1)[0]
        assert not any(word in how for word in never), (name, how)
    objectives = " ".join(_render(REPORT_DIR / "ext_objectives_rmse.rst", config, CATEGORIES).split())
    assert "HiGHS" not in objectives and "simplex" not in objectives
    assert "recorded in the table's <tt class=\"docutils literal\">solver</tt> column" in objectives


def test_claims_html_is_a_standalone_table():
    table = pd.DataFrame([
        {"id": "a-1", "source": "Lemma 2", "statement": "x < y & z", "paper_value": "1", "our_value": "1",
         "test": "equal", "verdict": "reproduced", "explanation": float("nan")},
        {"id": "b-2", "source": "Figure 9", "statement": "WM reaches GM", "paper_value": "yes", "our_value": "no",
         "test": "LP", "verdict": "differs", "explanation": "only WH alone can"},
    ])
    html = claims_html(table)
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "2 claims:" in html and "1 reproduced" in html and "1 differs" in html and "0 not checkable" in html
    assert "x &lt; y &amp; z" in html and "nan" not in html
    assert '<tr id="b-2" class="differs">' in html and '<a href="#b-2">b-2</a>' in html


# ------------------------------------------------------------------ the report of a quick run
def _embedded(html: str, name: str):
    """A JSON value the report app embeds as ``var {name} = ...;``."""
    match = re.search(rf"^\s*var {name} = (?=[{{\"\[])", html, re.M)
    assert match, f"report has no embedded `var {name}`"
    return json.JSONDecoder().raw_decode(html, match.end())[0]


@pytest.fixture(scope="module")
def report(quick_results, tmp_path_factory) -> dict:
    """``snakemake --report`` on the quick run, written outside the shared run directory."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    done = snakemake(quick_results, "--report", str(out), timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "(ERROR/" not in done.stderr and "(WARNING/" not in done.stderr, done.stderr[-4000:]
    html = out.read_text()
    return {"html": html, "stderr": done.stderr, "description": _embedded(html, "workflow_desc"),
            "results": _embedded(html, "results"), "categories": _embedded(html, "categories"),
            "run": quick_results}


@pytest.mark.workflow
def test_report_embeds_every_figure_with_its_caption(report):
    results, html = report["results"], report["html"]
    for stem, number in FIGURES.items():
        assert stem in html, stem
        for ext in ("png", "pdf"):
            entry = results.get(f"results/figures/{stem}.{ext}")
            assert entry, f"{stem}.{ext} not in the report"
            assert entry["data_uri"].startswith("data:"), stem
            caption = " ".join(entry["caption"].split())
            assert f"Figure {number}" in caption, (stem, caption[:200])
            assert "{{" not in caption and "{%" not in caption, stem
            assert entry["labels"]["figure"] == f"Figure {number}", stem
            if stem in EXTRINSIC:
                assert "repetitions" in caption and "standard" in caption, stem
            else:
                assert "no error bars" in caption, stem
    categories = report["categories"]
    assert CATEGORIES <= set(categories)
    intrinsic = {Path(p).stem for paths in categories["Intrinsic (Figures 1-9)"].values() for p in paths}
    extrinsic = {Path(p).stem for paths in categories["Extrinsic (Figures 10-13)"].values() for p in paths}
    assert intrinsic == set(FIGURES) - EXTRINSIC and extrinsic == EXTRINSIC


@pytest.mark.workflow
def test_report_shows_the_claims_and_describes_the_workflow(report):
    claims = pd.read_csv(report["run"] / "results" / "tables" / "claims.csv")
    counts = claims["verdict"].value_counts()
    entry = report["results"]["results/claims.html"]
    page = base64.b64decode(entry["data_uri"].split(",", 1)[1]).decode()
    assert f"{len(claims)} claims:" in page
    for verdict in VERDICTS:
        assert f"{counts.get(verdict, 0)} {verdict}" in page
    for claim_id in claims["id"]:
        assert f'id="{claim_id}"' in page
    assert "results/tables/claims.csv" in report["results"]
    assert {Path(p).name for paths in report["categories"]["Claims"].values() for p in paths} == {
        "claims.csv", "claims.html"}
    description = report["description"]
    assert "countdp" in description and "Cormode" in description, "Snakefile lacks `report: workflow/report/...`"
    for name in CATEGORIES:
        assert name in description


@pytest.mark.workflow
def test_report_rule_graph_is_a_few_dozen_nodes(report):
    """The report's *Workflow* view draws one node per rule (per level of the DAG): the design sweeps
    are one rule, so it stays a few dozen nodes instead of one per sweep."""
    spec = _embedded(report["html"], "rulegraph_spec")
    nodes = next(d["values"] for d in spec["data"] if d["name"] == "node-data")
    rules = [node["rule"] for node in nodes]
    assert 20 < len(rules) < 60, rules
    assert [r for r in rules if r.startswith("design")] == ["design_sweep"], rules
