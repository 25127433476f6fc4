"""Gong and Meng's Section 3 reproduced: Table 1, Figures 1-3, and MIS against the exact sampler.

* Table 1: a confidential table simulated from their NB(100, .05) (fixed seed) and one
  congenial release of it, drawn by the exact sampler.
* Figure 1: ``tables`` confidential tables x ``releases`` releases by four methods, the
  average L1 and L2 distance to the confidential table per table and method: (a) raw
  double-geometric noise at epsilon = 1 per cell, (b) the same noisy tables projected by
  non-negative L2 onto the invariant set, (c) the conditional (congenial) mechanism from
  epsilon_0 = 0.5 per cell, drawn exactly, (d) raw noise at epsilon = 0.5 per cell.  Raw noise
  is drawn in floats (their Appendix B does the same); (c) uses the exact rational alpha.
* Figure 2: Algorithm 1's acceptance rate against the proposal's epsilon~ on their own
  confidential table (their Table 1, top), and on ours.
* Figure 3: trace plots of their cells 2 (in the proposal index set) and 1 (solved for) at
  the best epsilon~, beside exact i.i.d. draws of the same cells.
* TV: total variation between the cell marginals of MIS draws and of exact draws, at equal
  sample sizes, consecutive and thinned, against exact-vs-exact as the noise floor.

MIS targets the same rational alpha as the exact sampler (as a float), so both aim at one law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from countdp.invariants.block_sums import ConditionalTableSampler
from countdp.invariants.mis import MISProblem, double_geometric, run_mis
from countdp.invariants.projection import NonNegativeProjection
from countdp.studies import gm_setting as gm
from countdp.studies.checks import CHECK_COLUMNS
from countdp.studies.checks import check_row as check
from countdp.values.alpha import alpha_from_epsilon

METHODS = ("raw eps=1", "NNL2 eps=1", "conditional eps0=0.5", "raw eps=0.5")
"""Figure 1's four methods, in their order (a)-(d)."""

PAPER_BEST_EPSILON_TILDE = 0.6
PAPER_BEST_ACCEPTANCE = 0.0168


@dataclass(frozen=True)
class GMSection3Settings:
    """Sizes of the reproduction; :meth:`quick` runs in seconds, the defaults are the paper's sizes."""

    seed: int = 20200819
    tables: int = 20
    releases: int = 100
    epsilon_grid: tuple[float, ...] = (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5)
    acceptance_steps: int = 200_000
    acceptance_chains: int = 4
    trace_steps: int = 10_000
    trace_cells: tuple[int, ...] = (1, 0)
    tv_draws: int = 10_000
    tv_thinning: tuple[int, ...] = (1, 10, 100, 1000)
    floor_replicates: int = 5
    burn_in: int = 1_000

    @classmethod
    def quick(cls) -> GMSection3Settings:
        return cls(tables=2, releases=20, epsilon_grid=(0.4, 0.5, 0.6, 0.7, 0.8, 1.0), acceptance_steps=5_000,
                   acceptance_chains=1, trace_steps=2_000, tv_draws=300, tv_thinning=(1, 20, 400), burn_in=200)


def conditional_alpha():
    """The exact per-cell alpha of the conditional mechanism: the smallest 2**-63 multiple >= e^-0.5."""
    return alpha_from_epsilon(gm.EPSILON_CONDITIONAL)


def conditional_sampler(table: np.ndarray) -> ConditionalTableSampler:
    """The exact sampler of the congenial release of confidential ``table`` (flat, 46 cells)."""
    return ConditionalTableSampler(np.asarray(table).ravel(), gm.block_labels(), gm.invariants(), conditional_alpha())


def mis_problem(table: np.ndarray) -> MISProblem:
    """Algorithm 1's inputs for confidential ``table``: their equalities, index set, and the same alpha."""
    x = np.asarray(table, dtype=np.int64).ravel()
    A, a = gm.equality_system(x)
    return MISProblem(x, A, a, gm.PROPOSAL_INDEX, float(conditional_alpha()))


def table1(confidential: np.ndarray, release: np.ndarray) -> pd.DataFrame:
    """Their Table 1's layout: per table and sex, the 23 age groups, the total, and the under-18 / 18+ split."""
    rows = []
    for name, cells in (("confidential", confidential), ("release", release)):
        grid = gm.as_table(cells)
        for sex, counts in zip(gm.SEXES, grid, strict=True):
            rows.append({"table": name, "sex": sex, **dict(zip(gm.AGE_GROUPS, counts.tolist(), strict=True)),
                         "Total": int(counts.sum()), "under 18": int(counts[:gm.FIRST_VOTING_COLUMN].sum()),
                         "18+": int(counts[gm.FIRST_VOTING_COLUMN:].sum())})
    return pd.DataFrame(rows)


def _distances(releases: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    gap = releases - x[None, :]
    return np.abs(gap).sum(axis=1), np.sqrt((gap**2).sum(axis=1))


def figure1(tables: np.ndarray, releases: int, rng: np.random.Generator,
            samplers: dict[int, ConditionalTableSampler] | None = None) -> tuple[pd.DataFrame, dict]:
    """Average L1 and L2 distance per confidential table and method, and what the checks need.

    Returns ``(table, audit)``; ``audit`` holds whether every conditional release satisfied the
    invariants exactly, the worst NNL2 optimality residual, and whether every NNL2 release was
    no further (L2) from the confidential table than the noisy table it came from.
    """
    projection = NonNegativeProjection(gm.equality_system(tables[0])[0])
    rows, exact_ok, kkt, nonexpansive = [], True, 0.0, True
    for t, x in enumerate(tables):
        sampler = (samplers or {}).get(t) or conditional_sampler(x)
        a = gm.equality_system(x)[1]
        noisy1 = x[None, :] + double_geometric(rng, math.exp(-1.0), (releases, x.size))
        projected = projection.project(noisy1, a)
        conditional = sampler.draw(rng, releases)
        noisy05 = x[None, :] + double_geometric(rng, math.exp(-0.5), (releases, x.size))
        exact_ok &= bool(sampler.system.satisfied(conditional).all())
        kkt = max(kkt, projection.kkt_residual(noisy1, projected, a))
        nonexpansive &= bool((_distances(projected, x)[1] <= _distances(noisy1, x)[1] + 1e-6).all())
        for method, released in zip(METHODS, (noisy1, projected, conditional, noisy05), strict=True):
            l1, l2 = _distances(released, x)
            rows.append({"table": t, "method": method, "releases": releases, "avg_L1": l1.mean(),
                         "avg_L2": l2.mean()})
    audit = {"conditional_satisfy": exact_ok, "nnl2_kkt": kkt, "nnl2_nonexpansive": nonexpansive}
    return pd.DataFrame(rows), audit


def figure2(tables: dict[str, np.ndarray], settings: GMSection3Settings, rng: np.random.Generator) -> pd.DataFrame:
    """Algorithm 1's acceptance rate per epsilon~: ``acceptance_chains`` chains of ``acceptance_steps`` each,
    every one started at the confidential table (one row per chain)."""
    rows = []
    for name, x in tables.items():
        problem = mis_problem(x)
        for eps in settings.epsilon_grid:
            for chain in range(settings.acceptance_chains):
                run = run_mis(problem, eps, problem.center, settings.acceptance_steps, rng,
                              thin=settings.acceptance_steps)
                rows.append({"table": name, "epsilon_tilde": eps, "chain": chain,
                             "acceptance_rate": run.acceptance_rate, "accepted": run.accepted, "steps": run.steps})
    return pd.DataFrame(rows)


def acceptance_summary(fig2: pd.DataFrame) -> pd.DataFrame:
    """Per table and epsilon~: the mean, smallest and largest acceptance rate over the chains."""
    grouped = fig2.groupby(["table", "epsilon_tilde"], sort=False).acceptance_rate
    return grouped.agg(mean="mean", low="min", high="max").reset_index()


def best_epsilon_tilde(fig2: pd.DataFrame, table: str) -> tuple[float, float]:
    """``(epsilon~, mean acceptance)`` with the highest mean acceptance rate over the chains for ``table``."""
    summary = acceptance_summary(fig2)
    sub = summary[summary.table == table]
    best = sub.loc[sub["mean"].idxmax()]
    return float(best.epsilon_tilde), float(best["mean"])


def figure3(sampler: ConditionalTableSampler, epsilon_tilde: float, settings: GMSection3Settings,
            rng: np.random.Generator) -> tuple[pd.DataFrame, bool]:
    """Traces of ``trace_cells`` over ``trace_steps`` MIS steps, and the same cells in as many exact draws.

    Also returns whether every MIS state satisfied the invariants exactly.
    """
    problem = mis_problem(sampler.x)
    chain = run_mis(problem, epsilon_tilde, problem.center, settings.trace_steps, rng).draws
    exact = sampler.draw(rng, settings.trace_steps)
    frames = []
    for source, draws in (("MIS", chain), ("exact", exact)):
        for cell in settings.trace_cells:
            frames.append(pd.DataFrame({"source": source, "cell": cell + 1, "step": np.arange(1, len(draws) + 1),
                                        "value": draws[:, cell]}))
    return pd.concat(frames, ignore_index=True), bool(sampler.system.satisfied(chain).all())


def marginal_tv(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per cell, the total variation distance between the empirical marginals of two samples (rows = tables)."""
    width = int(max(first.max(), second.max())) + 1
    offsets = np.arange(first.shape[1]) * width

    def frequencies(sample: np.ndarray) -> np.ndarray:
        counts = np.bincount((sample + offsets[None, :]).ravel(), minlength=width * sample.shape[1])
        return counts.reshape(sample.shape[1], width) / sample.shape[0]

    return 0.5 * np.abs(frequencies(first) - frequencies(second)).sum(axis=1)


def tv_study(sampler: ConditionalTableSampler, epsilon_tilde: float, settings: GMSection3Settings,
             rng: np.random.Generator) -> tuple[pd.DataFrame, bool]:
    """Cell-marginal TV of MIS (per thinning) and of fresh exact samples, each against one exact sample.

    Every comparison is between ``tv_draws`` tables; MIS keeps every ``thin``-th state after
    ``burn_in`` steps.  The noise floor is ``floor_replicates`` exact-vs-exact comparisons:
    ``floor_mean`` their average (mean over cells), ``floor_high`` the largest.  Also returns
    whether every MIS and exact draw satisfied the invariants exactly.
    """
    problem = mis_problem(sampler.x)
    n = settings.tv_draws
    reference = sampler.draw(rng, n)
    satisfied = bool(sampler.system.satisfied(reference).all())
    rows = []
    for thin in settings.tv_thinning:
        run = run_mis(problem, epsilon_tilde, problem.center, settings.burn_in + thin * n, rng, thin=thin,
                      burn_in=settings.burn_in)
        floors = [marginal_tv(sampler.draw(rng, n), reference) for _ in range(settings.floor_replicates)]
        tv = marginal_tv(run.draws, reference)
        satisfied &= bool(sampler.system.satisfied(run.draws).all())
        rows.append({"thin": thin, "draws": n, "mis_steps": run.steps, "acceptance_rate": run.acceptance_rate,
                     "distinct_states": len(np.unique(run.draws, axis=0)), "tv_mean": tv.mean(), "tv_max": tv.max(),
                     "floor_mean": float(np.mean([f.mean() for f in floors])),
                     "floor_high": float(max(f.mean() for f in floors)),
                     "floor_max": float(max(f.max() for f in floors))})
    return pd.DataFrame(rows), satisfied


def gm_section3_study(settings: GMSection3Settings = GMSection3Settings()) -> dict[str, pd.DataFrame]:
    """Every table of the reproduction, and its checks: keys ``table1``, ``figure1``, ``figure1_medians``,
    ``figure2``, ``figure3``, ``tv``, ``checks``."""
    rng = np.random.default_rng(settings.seed)
    tables = gm.confidential_tables(rng, settings.tables)
    samplers = {0: conditional_sampler(tables[0])}
    release = samplers[0].draw(rng, 1)[0]
    fig1, audit = figure1(tables, settings.releases, rng, samplers)
    fig2 = figure2({"G-M Table 1": gm.GM_CONFIDENTIAL.ravel(), "seeded table 0": tables[0]}, settings, rng)
    best_eps, _ = best_epsilon_tilde(fig2, "G-M Table 1")
    gm_sampler = conditional_sampler(gm.GM_CONFIDENTIAL)
    fig3, chain_ok = figure3(gm_sampler, best_eps, settings, rng)
    tv, tv_ok = tv_study(gm_sampler, best_eps, settings, rng)
    their_release = gm.GM_RELEASE.ravel()
    exact_l1 = np.abs(gm_sampler.draw(rng, settings.tv_draws) - gm_sampler.x[None, :]).sum(axis=1)
    facts = {**audit, "release_satisfies": bool(samplers[0].system.satisfied(release[None, :])[0]),
             "mis_satisfies": chain_ok and tv_ok, "cells": tables.ravel(),
             "their_release_satisfies": bool(gm_sampler.system.satisfied(their_release[None, :])[0]),
             "their_release_l1": int(np.abs(their_release - gm_sampler.x).sum()), "exact_l1": exact_l1}
    medians = fig1.groupby("method", sort=False)[["avg_L1", "avg_L2"]].median().reset_index()
    results = {"table1": table1(tables[0], release), "figure1": fig1, "figure1_medians": medians,
               "figure2": fig2, "figure3": fig3, "tv": tv}
    results["checks"] = gm_section3_checks(results, facts)
    return results


def gm_section3_checks(results: dict[str, pd.DataFrame], facts: dict) -> pd.DataFrame:
    """The statements of their Section 3 (and of our samplers) tested against the results."""
    mean, variance = gm.nb_moments()
    cells = facts["cells"]
    se = math.sqrt(float(variance) / cells.size)
    med = results["figure1_medians"].set_index("method")
    rows = [
        check("G-M Sec 3", "cell law NB(100, .05) has mean 5.26", "5.26", f"{float(mean):.4f} (= 100/19)",
              round(float(mean), 2) == 5.26, "numpy negative_binomial(100, 0.95): 0.05 is the counted event"),
        check("G-M Sec 3", "cell law NB(100, .05) has variance 5.54", "5.54", f"{float(variance):.4f} (= 2000/361)",
              round(float(variance), 2) == 5.54),
        check("G-M Sec 3", "simulated cells match that law (mean within 4 standard errors)", f"{float(mean):.3f}",
              f"{cells.mean():.3f} over {cells.size} cells (variance {cells.var(ddof=1):.3f})",
              abs(cells.mean() - float(mean)) <= 4 * se),
        check("G-M Sec 3", "every conditional release satisfies the invariants exactly", "all",
              "Table 1, Figure 1 and every exact draw", facts["release_satisfies"] and facts["conditional_satisfy"]),
        check("G-M Sec 3", "every MIS state satisfies the invariants exactly", "all", "Figure 3 chain and TV chains",
              facts["mis_satisfies"]),
        check("G-M Sec 3", "their Table 1 release satisfies the invariants of their confidential table", "all",
              f"L1 distance {facts['their_release_l1']}; exact draws have L1 >= it with frequency "
              f"{float((facts['exact_l1'] >= facts['their_release_l1']).mean()):.3f}", facts["their_release_satisfies"],
              "transcription check of both tables"),
        check("G-M Sec 3", "NNL2 releases are projections onto the invariant set (KKT residual <= 1e-7)", "<= 1e-7",
              f"{facts['nnl2_kkt']:.1e}", facts["nnl2_kkt"] <= 1e-7, "polished active-set solutions; real-valued"),
        check("G-M Sec 3", "NNL2 never moves a noisy table further from the confidential one in L2", "always",
              "every release", facts["nnl2_nonexpansive"], "projection onto a convex set containing the truth"),
    ]
    for metric in ("avg_L1", "avg_L2"):
        raw1, nnl2, cond, raw05 = (float(med.loc[m, metric]) for m in METHODS)
        rows.append(check("G-M Figure 1",
                          f"conditional (eps0 = 0.5) lies between raw eps = 1 and raw eps = 0.5 ({metric})",
                          "raw1 < conditional < raw0.5", f"{raw1:.2f} < {cond:.2f} < {raw05:.2f} (medians)",
                          raw1 < cond < raw05))
        rows.append(check("G-M Figure 1", f"NNL2 of eps = 1 is on par with raw eps = 1 ({metric}, medians within 15%)",
                          "on par", f"NNL2 {nnl2:.2f} vs raw {raw1:.2f} ({nnl2 / raw1 - 1:+.1%})",
                          abs(nnl2 / raw1 - 1) <= 0.15))
    rows += _acceptance_checks(results["figure2"]) + _tv_checks(results["tv"])
    return pd.DataFrame(rows, columns=CHECK_COLUMNS)


def _acceptance_checks(fig2: pd.DataFrame) -> list[dict]:
    eps, rate = best_epsilon_tilde(fig2, "G-M Table 1")
    seeded_eps, seeded_rate = best_epsilon_tilde(fig2, "seeded table 0")
    summary = acceptance_summary(fig2).set_index(["table", "epsilon_tilde"]).loc[("G-M Table 1", eps)]
    chains, steps = int(fig2.chain.max()) + 1, int(fig2.steps.iloc[0])
    return [
        check("G-M Figure 2", "the best proposal epsilon~ is 0.6 (on their Table 1)", PAPER_BEST_EPSILON_TILDE,
              f"{eps:g} (seeded table: {seeded_eps:g})", abs(eps - PAPER_BEST_EPSILON_TILDE) <= 0.1 + 1e-9,
              "holds within one grid step of 0.1"),
        check("G-M Figure 2", "the best acceptance rate is about 1.68%", f"{PAPER_BEST_ACCEPTANCE:.2%}",
              f"{rate:.2%} (chains {summary['low']:.2%}-{summary['high']:.2%}; {chains} x {steps} steps; "
              f"seeded table: {seeded_rate:.2%})", 2 / 3 <= rate / PAPER_BEST_ACCEPTANCE <= 3 / 2,
              "holds within a factor 1.5"),
    ]


TV_CLAIMS = ("consecutive MIS draws are far from the exact law (cell-marginal TV > 2 x every floor replicate)",
             "thinning moves MIS towards the exact law (TV at the largest thinning <= half the consecutive TV)",
             "thinned MIS is still distinguishable from exact draws (TV above every exact-vs-exact replicate)")
"""The statements of the TV comparison (beyond the paper), as in the check table."""


def _tv_checks(tv: pd.DataFrame) -> list[dict]:
    first, last = tv.iloc[0], tv.iloc[-1]
    far, closer, still = TV_CLAIMS
    return [
        check("G-M Sec 3 (MIS vs exact)", far, "beyond the paper",
              f"thin {int(first.thin)}: TV {first.tv_mean:.3f}, floor up to {first.floor_high:.3f}",
              first.tv_mean > 2 * first.floor_high),
        check("G-M Sec 3 (MIS vs exact)", closer, "beyond the paper",
              f"thin {int(last.thin)}: {last.tv_mean:.3f} vs thin {int(first.thin)}: {first.tv_mean:.3f}",
              last.tv_mean <= first.tv_mean / 2),
        check("G-M Sec 3 (MIS vs exact)", still, "beyond the paper",
              f"thin {int(last.thin)} ({int(last.mis_steps):,} steps): TV {last.tv_mean:.4f}, "
              f"floor {last.floor_mean:.4f} (up to {last.floor_high:.4f})", last.tv_mean > last.floor_high,
              f"{int(last.draws)} draws per sample"),
    ]
