"""notebooks/explore_results.ipynb: committed without outputs, in sync with its generator, and
runs end to end (nbclient, kernel python3 of this interpreter) on the quick workflow's results."""

from __future__ import annotations

import importlib.util

import nbformat
import pandas as pd
import pytest
from conftest import REPO

NOTEBOOKS = REPO / "notebooks"
NOTEBOOK = NOTEBOOKS / "explore_results.ipynb"


def _generator():
    spec = importlib.util.spec_from_file_location("make_notebook", NOTEBOOKS / "make_notebook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebook_is_committed_clean_and_matches_its_generator():
    committed = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(committed)
    code = [cell for cell in committed.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    built = _generator().build()
    assert [(c.cell_type, c.source) for c in committed.cells] == [(c.cell_type, c.source) for c in built.cells], (
        "notebook out of date: run python notebooks/make_notebook.py")


@pytest.mark.workflow
def test_notebook_runs_on_the_quick_results(quick_results, monkeypatch):
    from nbclient import NotebookClient

    results = quick_results / "results"
    monkeypatch.setenv("COUNTDP_RESULTS", str(results))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()

    outputs = [out for cell in notebook.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    text = "".join(out.get("text", "") for out in outputs if out.output_type == "stream")
    images = [out for out in outputs if "image/png" in out.get("data", {})]
    assert len(images) >= 2  # the mechanism heatmap and Figure 10

    assert f"results: {results.resolve()}" in text
    assert "artifact: mechanisms/WM/L0/n=4/alpha=0.91.json" in text
    fig10 = pd.read_csv(results / "tables" / "fig10_adult_L0.csv")
    assert f"fig10 rows: {len(fig10)};" in text
    claims = pd.read_csv(results / "tables" / "claims.csv")
    counts = claims["verdict"].value_counts()
    assert f"claims: {len(claims)}" in text
    assert f"  differs: {counts.get('differs', 0)}" in text and f"  reproduced: {counts.get('reproduced', 0)}" in text
    assert "WM n=15 alpha=0.8" in text and "certified alpha-DP: True | float test: True" in text
    assert "exact test on the release weights: True" in text
    assert "properties: RH=yes" in text and "expected errors at n=15, alpha=0.8:" in text
    shown = "".join(out["data"]["text/html"] for out in outputs if "text/html" in out.get("data", {}))
    for claim_id in claims.loc[claims["verdict"] == "differs", "id"]:  # the differs rows, as a table
        assert f">{claim_id}<" in shown
