"""Write notebooks/explore_results.ipynb (outputs cleared).  Run: python notebooks/make_notebook.py

The notebook is generated so that its code stays reviewable here, as plain Python; edit this
file, rerun it, and commit both.  tests/workflow/test_notebook.py executes the notebook against the
results of the quick workflow (COUNTDP_RESULTS points at them).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

NOTEBOOK = Path(__file__).with_name("explore_results.ipynb")

CELLS = [
    ("md", """\
# Exploring the countdp results

A tour of what the pipeline produced for *Constrained Differential Privacy for Count Data*
(Cormode, Kulkarni, Srivastava, ICDE 2018), and of the library behind it:

1. a designed mechanism artifact, as a heatmap, with its certificate and properties;
2. an extrinsic figure (Figure 10, UCI Adult) redrawn from its table;
3. the claims table: verdict counts and the claims that differ from the paper;
4. designing a mechanism for a new (n, α) with `countdp` and evaluating it under a Binomial prior.

Run the workflow first (`snakemake --cores all`, or `--configfile config/quick.yaml` for the small
version). The notebook reads the results directory named by the environment variable
`COUNTDP_RESULTS` (default: `../results`, relative to this notebook)."""),
    ("code", """\
import json
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import countdp
from countdp.evaluate.metrics import binomial_distribution
from countdp.services.artifact import load_certified

RESULTS = Path(os.environ.get("COUNTDP_RESULTS", "../results")).resolve()
assert RESULTS.is_dir(), f"no results directory at {RESULTS}: run the workflow or set COUNTDP_RESULTS"
print("results:", RESULTS)
print("mechanism artifacts:", sum(1 for _ in (RESULTS / "mechanisms").glob("*/*/n=*/alpha=*.json")))
print("tables:", ", ".join(sorted(p.stem for p in (RESULTS / "tables").glob("*.csv"))))"""),
    ("md", """\
## 1. A designed mechanism

Every mechanism is one artifact, `results/mechanisms/{mechanism}/{objective}/n={n}/alpha={alpha}.json`,
with its arrays in the `.npz` beside it (plain `np.load` reads them): the matrix
`P[i, j] = Pr[output i | true count j]` (rows: outputs, columns: inputs) and its release form, integer
weights over 2^62. The JSON says how it was made and holds its float α-DP certificate, the exact
α-DP certificate of the weights and the SHA-256 of the npz. `load_certified` re-runs both checks on
the stored values (and checks the digests and the recorded properties).
We show WM (the LP with weak honesty, row and column monotonicity and symmetry) for n = 4, α = 0.91,
the mechanism of Figure 7 (built by both the default and the quick configuration)."""),
    ("code", """\
artifact = RESULTS / "mechanisms" / "WM" / "L0" / "n=4" / "alpha=0.91.json"
if not artifact.exists():  # another configuration: take any WM design that is there
    artifact = sorted((RESULTS / "mechanisms").glob("WM/L0/n=*/alpha=*.json"))[0]
record = load_certified(artifact)
P = np.asarray(record["matrix"])
print(f"artifact: {artifact.relative_to(RESULTS)}")
print(f"{record['mechanism']} n={record['n']} alpha={record['alpha']} objective={record['objective']} "
      f"value={record['objective_value']:.4f} solver={record['solver']}/{record['method']}")
print("certificate:", json.dumps(record["dp"]))
print(f"alpha exactly {record['alpha_exact']}; release weights over D = 2^{record['released'].K}:",
      json.dumps(record["release"]["certificate"]))
print("properties:", {name: bool(ok) for name, ok in record["properties"].items()})

fig, ax = plt.subplots(figsize=(4.5, 4))
image = ax.imshow(P, cmap="YlOrRd", vmin=P.min(), vmax=P.max())
for (i, j), value in np.ndenumerate(P):
    ax.text(j, i, f"{value:.3f}", ha="center", va="center", fontsize=8)
ax.set(xlabel="input j (true count)", ylabel="output i (reported)",
       title=f"{record['mechanism']}, n = {record['n']}, α = {record['alpha']}")
fig.colorbar(image, ax=ax, label="Pr[output i | input j]")
plt.show()"""),
    ("md", """\
## 2. Figure 10 from its table

Each extrinsic figure is drawn from a tidy table in `results/tables/`. For Figure 10 (UCI Adult)
every row is one (target, group size n, mechanism): `mean` and `se` of the fraction of groups whose
released count is wrong, over `repetitions` random groupings, and `exact`, the expectation computed
from the mechanism's matrix."""),
    ("code", """\
fig10 = pd.read_csv(RESULTS / "tables" / "fig10_adult_L0.csv")
print(f"fig10 rows: {len(fig10)}; targets: {sorted(fig10['target'].unique())}; "
      f"n: {sorted(fig10['n'].unique().tolist())}; repetitions: {fig10['repetitions'].max()}; "
      f"data source: {fig10['data_source'].iloc[0]}")
targets = list(dict.fromkeys(fig10["target"]))
mechanisms = sorted(fig10["mechanism"].unique(), key=lambda m: ("GM", "WM", "WH", "EM", "UM").index(m)
                    if m in ("GM", "WM", "WH", "EM", "UM") else 99)
fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.6), sharey=True, squeeze=False)
for ax, target in zip(axes[0], targets, strict=True):
    sub = fig10[fig10["target"] == target]
    for k, mechanism in enumerate(mechanisms):
        rows = sub[sub["mechanism"] == mechanism].sort_values("n")
        ax.plot(rows["n"], rows["exact"], linewidth=1, color=f"C{k}")
        ax.errorbar(rows["n"], rows["mean"], yerr=rows["se"], fmt="o", markersize=4, capsize=2,
                    color=f"C{k}", label=mechanism)
    ax.set(title=f"{target}, α = {sub['alpha'].iloc[0]}", xlabel="group size n")
    ax.grid(alpha=0.3)
axes[0, 0].set_ylabel("fraction of groups with a wrong count")
fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=len(mechanisms),
           title="markers: mean ± 1 s.e. over the groupings; lines: exact expectation")
fig.tight_layout(rect=(0, 0.16, 1, 1))
plt.show()"""),
    ("md", """\
## 3. The claims table

`results/tables/claims.csv` has one row per statement of the paper, with the paper's value, ours, the
test used and a computed verdict: `reproduced`, `differs` (with an explanation) or `not checkable`."""),
    ("code", """\
claims = pd.read_csv(RESULTS / "tables" / "claims.csv")
counts = claims["verdict"].value_counts()
print(f"claims: {len(claims)}")
for verdict in ("reproduced", "differs", "not checkable"):
    print(f"  {verdict}: {counts.get(verdict, 0)}")
differs = claims.loc[claims["verdict"] == "differs", ["id", "source", "statement", "explanation"]]
with pd.option_context("display.max_colwidth", 120, "display.max_rows", 200):
    display(differs)"""),
    ("md", """\
## 4. Designing a mechanism for a new (n, α)

`countdp.design_named` builds the named mechanisms: GM, EM and UM are closed forms, WM and WH are
linear programs (minimising the uniform-prior L0 error by default). α is exact (`"4/5"`). Every design
comes back with a certificate that its floats are α-DP, and with the integer weights that a release
samples, certified α-DP in exact arithmetic; `countdp.release(design, counts)` draws from exactly those.
`countdp.check_all` checks the seven properties and
`countdp.expected_error` evaluates any mechanism under any input distribution — here Binomial(n, p),
the model of Figures 11-13."""),
    ("code", """\
n, alpha, p = 15, "4/5", 0.3
design = countdp.design_named("WM", n, alpha)
print(f"WM n={design.n} alpha={design.alpha}: design objective {design.objective} = {design.objective_value:.4f} "
      f"(uniform prior, rescaled by (n+1)/n so UM = 1; {design.solver}/{design.method}, "
      f"{design.solve_time * 1000:.0f} ms)")
print("certificate:", design.certificate)
print("certified alpha-DP:", design.certificate.certified,
      "| float test:", countdp.is_alpha_dp(design.matrix, design.alpha),
      "| exact test on the release weights:", design.released.certificate.holds)
print("noisy counts (OS's secure source) for true counts 0, 7, 15:", countdp.release(design, np.array([0, 7, 15])))
checks = countdp.check_all(design.matrix)
print("properties:", ", ".join(f"{name}={'yes' if c.holds else 'no'}" for name, c in checks.items()))

prior = binomial_distribution(n, p)
rows = []
for name in ("GM", "WM", "WH", "EM", "UM"):
    M = design.matrix if name == "WM" else countdp.design_named(name, n, alpha).matrix
    rows.append({"mechanism": name,
                 "L0 (uniform inputs)": countdp.expected_error(M, np.full(n + 1, 1 / (n + 1)), "L0"),
                 f"L0 (Binomial({n}, {p}))": countdp.expected_error(M, prior, "L0"),
                 f"L0,1 (Binomial({n}, {p}))": countdp.expected_error(M, prior, "L0d:1"),
                 f"RMSE (Binomial({n}, {p}))": countdp.expected_error(M, prior, "RMSE")})
errors = pd.DataFrame(rows).set_index("mechanism")
print(f"expected errors at n={n}, alpha={design.alpha}:")
print(errors.round(4).to_string())"""),
]


def build() -> nbformat.NotebookNode:
    cells = [new_markdown_cell(text) if kind == "md" else new_code_cell(text) for kind, text in CELLS]
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def main() -> None:
    notebook = build()
    nbformat.validate(notebook)
    NOTEBOOK.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")
    print(f"wrote {NOTEBOOK}")


if __name__ == "__main__":
    main()
