"""The sidecar: what guarantee a released table carries, and how it was made.

Written beside every table release as ``<table>.release.json`` and committed with it.  It
records the countdp version and the time (UTC); the output's SHA-256; for every count column
its exact alpha, the epsilon asked for and the epsilon guaranteed; the total by sequential
composition (alphas multiply, epsilons add, exact rationals); the unit of privacy in words and
the threat model it is stated under; where the randomness came from; and for every column and
group size the mechanism and the SHA-256 of the integer weights that were sampled (the same
digest a mechanism file records, so an entry names its file), or, for sizes held as structure,
the structure's table, the sizes it served, its parameters and its structural certificate.

**Nothing in it depends on a confidential value except through the noise** (the threat model,
docs/threat-model.md).  It holds no digest, total or statistic of the input: the number of rows
and the group sizes are public under the unit of privacy, the output's digest is a digest of the
published noisy table, and an invariant release states the totals it publishes exactly.  The
input's digest stays with the curator, in the ledger entry.  A seeded release claims no
guarantee: its seed regenerates the noise.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from fractions import Fraction

import numpy as np

from countdp.release.records import UNIT as RECORDS_UNIT
from countdp.services.arrays import weights_digest
from countdp.structural.catalogue import STAND_IN_REASON, weakly_honest_from
from countdp.structural.form import REPRESENTATION
from countdp.values.alpha import alpha_text, epsilon_upper_bound, rational_text

FORMAT = "countdp-release/2"
THREAT_MODEL = ("docs/threat-model.md: the adversary knows every record but one person's, reads the table and "
                "this sidecar and every line the release printed; the ledger, the cache, the logs and the input "
                "stay with the curator")
SEEDED = ("none: a seeded release is for experiments only; its seed, recorded under randomness, regenerates "
          "the noise, so the noisy counts protect nobody")
UNIT_OF_PRIVACY = (
    "one person's bit in one group's count: each row is a group of people, the groups are disjoint, and a person "
    "adds 0 or 1 to their own group's count in each count column. Rows compose in parallel (disjoint groups); the "
    "count columns compose sequentially (the same people appear in every column).")


INVARIANT_UNIT = (
    "invariant neighbours: tables with the same group sizes and published totals that differ in two people's records, "
    "one person of one group losing the counted attribute and one of another group (same partition) gaining it. Each "
    "row is a group of people, the totals of the count columns (within each partition) are released exactly, and the "
    "count columns compose sequentially (the same people appear in every column).")


def column_epsilon(alpha: Fraction, requested: Fraction | None) -> Fraction:
    """The epsilon a column spends, exactly: the epsilon asked for, or a rational bound >= ln(1/alpha)."""
    return requested if requested is not None else epsilon_upper_bound(alpha)


def levels_guarantee(column) -> dict:
    """A multi-level column: each level's alpha, and what any set of levels reveals together."""
    return {"levels": [{"noisy_column": name, "alpha_exact": alpha_text(alpha), "epsilon_guaranteed": -math.log(alpha)}
                       for name, alpha in zip(column.noisy_columns, column.levels, strict=True)],
            "collusion": "levels are drawn as a Markov chain (Gupte-Sundararajan): level 1 from GM(n, alpha_1), each "
                         "next level from a certified transition of the one before, so any set of levels together "
                         "is alpha-DP for the smallest alpha in the set, and all of them together for alpha_1; the "
                         "column is charged alpha_1's epsilon once",
            "certified": "each level's marginal and the collusion bound are checked exactly on the integer weights "
                         "sampled (mechanisms[].levels_certificate)"}


def guarantee(columns, invariants=None, invariant_by: str | None = None, records: bool = False) -> dict:
    """Per-column and total privacy, by sequential composition over the count columns.

    An invariant column's alpha is the one computed for the conditioned release
    (:mod:`countdp.release.invariant`), not the per-group mechanisms' alpha.  ``records``: the table was
    grouped from person records, whose unit of privacy the sidecar states (:data:`countdp.release.records.UNIT`).
    """
    rows, alpha_total, epsilon_total, guaranteed = [], Fraction(1), Fraction(0), 0.0
    for k, column in enumerate(columns):
        alpha, spent = column.alpha, column_epsilon(column.alpha, column.epsilon_requested)
        if invariants is not None:
            alpha, spent = invariants[k].worst.alpha, invariants[k].worst.epsilon_bound
        alpha_total *= alpha
        epsilon_total += spent
        guaranteed += -math.log(alpha)
        rows.append({"count_column": column.count_column, "noisy_column": column.noisy_column,
                     "alpha_exact": alpha_text(alpha),
                     "epsilon_requested": None if column.epsilon_requested is None
                     else rational_text(column.epsilon_requested),
                     "epsilon_guaranteed": -math.log(alpha), "epsilon_spent": rational_text(spent)})
        if column.levels:
            rows[-1]["levels"] = levels_guarantee(column)
        if invariants is not None:
            rows[-1]["per_group_alpha"] = alpha_text(column.alpha)
            rows[-1]["invariant"] = invariants[k].to_dict(invariant_by)
            rows[-1]["published_totals"] = invariants[k].published_totals(invariant_by)
    unit = INVARIANT_UNIT if invariants is not None else RECORDS_UNIT if records else UNIT_OF_PRIVACY
    return {"unit_of_privacy": unit, "columns": rows,
            "alpha_total": alpha_text(alpha_total), "epsilon_total": rational_text(epsilon_total),
            "epsilon_total_guaranteed": guaranteed,
            "composition": "sequential over count columns: the alphas multiply and the epsilons add (exact "
                           "rationals); epsilon_total is the sum of each column's epsilon_spent, an upper bound "
                           "of -ln(alpha_total)"}


def mechanism_rows(request, validated, mechanisms) -> list[dict]:
    """One entry per count column and matrix, or per structural table: the mechanism, the rows that
    used it, and the digest of what was sampled (a matrix's integer weights, a structure's tables).

    A structural table serves a range of sizes, so its entry gives the sizes it served (how many,
    the smallest and the largest) and carries the structural certificate, which covers them all.
    """
    out = []
    sizes, rows_per_size = validated.sizes, validated.rows_per_size
    for k, column in enumerate(request.columns):
        designs = mechanisms[k]
        structural = np.array([d.released.representation == REPRESENTATION for d in designs], dtype=bool)
        for s in np.flatnonzero(~structural).tolist():
            out.append(_matrix_entry(column, designs[s], int(sizes[s]), int(rows_per_size[s])))
        served = np.flatnonzero(structural)
        if not served.size:
            continue
        ids = np.array([id(designs[s].released) for s in served.tolist()], dtype=np.int64)
        _, first, table = np.unique(ids, return_index=True, return_inverse=True)
        table = table.reshape(-1)
        rows = np.bincount(table, weights=rows_per_size[served], minlength=first.size)
        count = np.bincount(table, minlength=first.size)
        for t in np.argsort(first).tolist():
            members = served[table == t]
            entry = _structural_entry(column, designs[served[first[t]]])
            entry.update(rows=int(rows[t]), sizes_served=int(count[t]), n_min=int(sizes[members].min()),
                         n_max=int(sizes[members].max()))
            out.append(entry)
    return out


def _matrix_entry(column, design, n: int, rows: int) -> dict:
    if column.levels:
        return _levels_entry(column, design, n, rows)
    released = design.released
    entry = {"count_column": column.count_column, "n": n, "rows": rows, "mechanism": design.mechanism,
             "objective": design.objective, "alpha_exact": alpha_text(released.alpha), "representation": "matrix",
             "release_weights_sha256": weights_digest(released.weights),
             "exact_certificate": released.certificate.to_dict()}
    method = getattr(design, "method", None)  # a design of this run or the cache (a chain's levels have none)
    if method is not None:
        optimality = getattr(design, "extra", {}).get("optimality", {})
        entry.update(method=method, optimal_proven=bool(optimality.get("certified")) if optimality else None)
    return entry


def _levels_entry(column, design, n: int, rows: int) -> dict:
    """A ``--levels`` size's entry: its chain (matrix or structural), the digest of what is sampled, its certificate."""
    chain = design.chain
    structural = getattr(chain, "structural", False)
    representation = ("structural chain (level 1 from GM's structural form, then one keep-or-renoise table per "
                      "level; no matrix)" if structural else "matrix chain (level 1, then one transition per level)")
    return {"count_column": column.count_column, "n": n, "rows": rows, "mechanism": design.mechanism,
            "objective": design.objective, "alpha_exact": alpha_text(chain.alpha), "representation": representation,
            "K": chain.K, "release_weights_sha256": chain.digest(), "levels_certificate": chain.certify().to_dict()}


def _structural_entry(column, design) -> dict:
    form = design.released
    record = form.describe()
    entry = {"count_column": column.count_column, "mechanism": design.mechanism, "objective": design.objective,
             "alpha_exact": alpha_text(form.alpha), "representation": REPRESENTATION, "structure": record,
             "release_weights_sha256": record["tables_sha256"], "structural_certificate": form.certify().to_dict()}
    if design.mechanism != form.mechanism:
        entry["stand_in"] = {"form": form.mechanism, "weakly_honest_from_n": weakly_honest_from(form),
                             "argument": STAND_IN_REASON}
    return entry


def _seeded(request, invariants) -> dict:
    """A seeded release's guarantee: none; the totals an invariant release published all the same."""
    if invariants is None:
        return {"claimed": SEEDED}
    return {"claimed": SEEDED, "published_totals": {c.count_column: inv.published_totals(request.invariant_by)
                                                    for c, inv in zip(request.columns, invariants, strict=True)}}


def _input(request, rows: int) -> dict:
    """The sidecar's ``input``: the file's path, or what a table that is not a file is (its records: how
    they were grouped and counted), and the number of rows (groups) released."""
    if request.records is not None:
        return {"records": request.records, "rows": rows}
    if request.source is not None:
        return {**request.source.description, "rows": rows}
    return {"path": str(request.input), "rows": rows}


def sidecar_record(request, validated, mechanisms, randomness, output_sha256: str, output_columns: list[str],
                   commit: str, debit: dict | None, version: str, invariants=None) -> dict:
    """The whole sidecar of a committed release."""
    return {
        "format": FORMAT,
        "countdp_version": version,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": list(request.command),
        "threat_model": THREAT_MODEL,
        "guarantee": guarantee(request.columns, invariants, request.invariant_by, request.records is not None)
        if randomness.secure
        else _seeded(request, invariants),
        "randomness": randomness.describe(),
        "input": _input(request, validated.rows),
        "output": {"path": None if request.table_path is None else str(request.table_path), "sha256": output_sha256,
                   "columns": output_columns,
                   "kept_columns": validated.kept},
        "mechanisms_from": str(request.mechanism_file) if request.mechanism_file else
                           {"mechanism": request.mechanism, "objective": request.objective,
                            "size_column": request.size_column, "cache": str(request.cache)},
        "mechanisms": mechanism_rows(request, validated, mechanisms),
        "budget": debit,
        "commit": commit,
    }


__all__ = ["FORMAT", "INVARIANT_UNIT", "SEEDED", "THREAT_MODEL", "UNIT_OF_PRIVACY", "column_epsilon", "guarantee",
           "levels_guarantee", "sidecar_record"]
