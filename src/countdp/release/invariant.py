"""Congenial release of a table: every group's noisy count, conditioned on the published total.

``countdp release ... --invariant total`` releases each row's count through its group size's
certified mechanism, conditioned on the noisy counts summing exactly to the true total of the
column (Gong and Meng's congenial privacy); ``--invariant-by COLUMN`` keeps one total per value
of ``COLUMN`` instead.  The totals themselves are published exactly, so the guarantee is about
*invariant neighbours*: two tables with the same group sizes and totals that differ in two people's
records, one person of one group losing the counted attribute and one of another group gaining it.

A partition that the conditioned release cannot protect is refused before anything is drawn,
naming it: a partition of one group (its published total *is* its count) and a partition whose
total is 0 or the sum of its sizes (the total fixes every count in it).  Such partitions have no
invariant neighbours, so a guarantee computed over their neighbours would be vacuous.

The noise is drawn exactly from the conditional distribution of the integer weights
(:class:`countdp.invariants.group_total.GroupTotalSampler`: no MCMC, no float in a decision).  The
guarantee is computed on those weights, never assumed: :func:`countdp.invariants.guarantee.proven_bound`
for each partition, or the exact worst ratio by enumeration when the partition is small enough.  The
column is charged the worst partition's epsilon (partitions hold disjoint groups, so they compose in
parallel).  A dry run publishes no total, so it states the bound that holds for every total
(:func:`column_invariant` with ``public_only``), which depends on the public group sizes alone.

Each partition's draw is padded to a deadline set by the same draw on public counts
(:func:`run_padded`).  This narrows what its running time says about the counts but does not
remove it: the sampler's number of big-number operations is fixed by the public sizes and total,
their operands' magnitudes are not (docs/threat-model.md states the limit).

The counts of an invariant column are held in memory (8 bytes a row) between the two passes,
since a partition's draw needs all its rows at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from countdp.invariants.group_total import GroupTotalSampler, RandomBits
from countdp.invariants.guarantee import InvariantGuarantee, exact_worst_ratio, proven_bound, target_alpha
from countdp.invariants.windows import public_counts
from countdp.release.tables import TableSource, integer_values

EXACT_GROUPS = 6
"""Partitions of at most this many groups get the exact worst ratio (enumeration) when it is small enough."""
NEIGHBOURS = ("invariant neighbours: two tables with the same group sizes and the same published totals that differ "
              "in two people's records, one person of one group losing the counted attribute and one person of "
              "another group of the same partition gaining it (one count down by one, another up by one): the "
              "nearest tables that keep the totals; the totals themselves are released exactly")


@dataclass(frozen=True)
class ColumnInvariant:
    """One count column's partitions (row indices, in order), each partition's mechanisms (one per row)
    and its proven guarantee."""

    partitions: list[np.ndarray]
    mechanisms: list[list]
    guarantees: list[InvariantGuarantee]
    totals: list[int]
    names: list[str] | None = None
    public_only: bool = False

    @property
    def worst(self) -> InvariantGuarantee:
        """The guarantee of the whole column: its weakest partition."""
        return max(self.guarantees, key=lambda g: g.ratio)

    def to_dict(self, by: str | None) -> dict:
        worst = self.worst
        return {"invariant": "total" if by is None else f"total within each value of {by!r}",
                "partitions": len(self.partitions), "neighbours": NEIGHBOURS,
                "guarantee": worst.to_dict(), "guarantee_kind": "exact worst ratio (enumerated)"
                if worst.kind == "exact" else "proven upper bound on the worst ratio",
                "exact_partitions": sum(g.kind == "exact" for g in self.guarantees),
                "sampler": "exact conditional distribution of the integer weights (divide and conquer over the "
                           "groups; no MCMC, no float in a decision); its number of big-number operations is fixed "
                           "by the public group sizes and totals, their running time is not (docs/threat-model.md)"}

    def published_totals(self, by: str | None) -> list[dict]:
        """The totals this column publishes exactly: one per partition, with its ``--invariant-by`` value."""
        if self.names is None:
            return [{"total": total} for total in self.totals]
        return [{by: name, "total": total} for name, total in zip(self.names, self.totals, strict=True)]


def read_columns(source: TableSource, counts: list[str], size: str | None,
                 by: str | None) -> tuple[dict[str, np.ndarray], np.ndarray | None, np.ndarray | None]:
    """Whole columns of the table: each count column and the group sizes as int64, the partition
    column's values as text (the first pass has checked every row already)."""
    values: dict[str, list] = {name: [] for name in counts}
    sizes: list = []
    labels: list = []
    row = 1
    for batch in source.batches(list(dict.fromkeys(counts + [c for c in (size, by) if c]))):
        for name in counts:
            values[name].append(integer_values(batch.column(name), name, "count", row))
        if size:
            sizes.append(integer_values(batch.column(size), size, "group size", row))
        if by:
            text = batch.column(by).cast("string").to_pylist()
            blank = [k for k, v in enumerate(text) if v is None or not v.strip()]
            if blank:
                raise ValueError(f"row {row + blank[0]}, column {by!r}: no value to partition by")
            labels.append(np.asarray(text, dtype=object))
        row += batch.num_rows
    joined = {name: np.concatenate(parts) for name, parts in values.items()}
    return joined, np.concatenate(sizes) if size else None, np.concatenate(labels) if by else None


def _guarantee(mechanisms: list, total: int) -> InvariantGuarantee:
    """The exact worst ratio for a small partition, else the proven bound."""
    if len(mechanisms) <= EXACT_GROUPS:
        try:
            return exact_worst_ratio(mechanisms, [m.n for m in mechanisms], total)
        except ValueError:  # too many datasets to enumerate: the bound stands
            pass
    return proven_bound(mechanisms, total)


def _partitions(count: int, labels: np.ndarray | None) -> tuple[list[np.ndarray], list[str] | None]:
    """Row indices of each partition (in order of their label) and the labels, or one partition of every row."""
    if labels is None:
        return [np.arange(count)], None
    names, inverse = np.unique(labels.astype(str), return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1), names.tolist()


def unprotected(partitions: list[np.ndarray], sizes: list[np.ndarray], totals: list[int] | None,
                names: list[str] | None, by: str | None) -> str | None:
    """Why some partitions cannot be released conditioned on their totals, naming them, or ``None``.

    A lone group's total is its count; a total of 0 or of the partition's whole size fixes every
    count.  Neither has an invariant neighbour to protect it.  ``totals=None`` checks the lone groups
    alone (the public structure), as a dry run does.
    """
    def named(picks: list[int]) -> str:
        shown = [f"{by}={names[p]!r}" if names is not None else "the table" for p in picks[:5]]
        return ", ".join(shown) + (f" and {len(picks) - 5} more" if len(picks) > 5 else "")

    lone = [p for p, members in enumerate(partitions) if len(members) == 1]
    if lone:
        return (f"{len(lone)} partition(s) hold a single group ({named(lone)}): the published total would be its "
                "count; merge such groups into larger partitions")
    if totals is None:
        return None
    pinned = [p for p, (total, n) in enumerate(zip(totals, sizes, strict=True)) if total in (0, int(n.sum()))]
    if pinned:
        return (f"{len(pinned)} partition(s) have a total of 0 or of their whole size ({named(pinned)}): the "
                "published total would fix every count in them")
    return None


def column_invariant(released: list, size_index: np.ndarray | None, counts: np.ndarray,
                     labels: np.ndarray | None, by: str | None = None, public_only: bool = False) -> ColumnInvariant:
    """Partitions of one count column and their guarantees; ``released[s]``: the weights of size index s.

    ``ValueError`` (naming the partitions) for a partition that cannot be protected (:func:`unprotected`).
    ``public_only`` (a dry run): each partition's bound for every total, from its public sizes alone.
    """
    partitions, names = _partitions(len(counts), labels)
    mechanisms = [[released[0 if size_index is None else int(size_index[r])] for r in members]
                  for members in partitions]
    sizes = [np.array([m.n for m in chosen], dtype=np.int64) for chosen in mechanisms]
    totals = [int(counts[members].sum()) for members in partitions]
    problem = unprotected(partitions, sizes, None if public_only else totals, names, by)
    if problem is not None:
        raise ValueError(f"--invariant: {problem}")
    if public_only:
        guarantees = [proven_bound(chosen) for chosen in mechanisms]
        return ColumnInvariant(partitions, mechanisms, guarantees, [], names, True)
    guarantees = [_guarantee(chosen, total) for chosen, total in zip(mechanisms, totals, strict=True)]
    return ColumnInvariant(partitions, mechanisms, guarantees, totals, names)


@dataclass(frozen=True)
class TimingSettings:
    """How a conditioned draw hides its running time: ``pad_factor`` times the time of the same draw on
    public counts (the same group sizes and total), measured just before."""

    pad_factor: float = 2.0


def run_padded(work, calibrate, factor: float):
    """``work()``, returning only once ``factor`` times the duration of ``calibrate()`` (run first) has passed.

    The draw's work is fixed by public quantities except for the speed of single big-number
    operations on the counts' values; padding the draw to a deadline set by the same draw on
    public counts hides that, unless the real draw overruns the deadline.
    """
    start = time.perf_counter()
    calibrate()
    deadline = start + factor * (time.perf_counter() - start)
    result = work()
    time.sleep(max(0.0, deadline - time.perf_counter()))
    return result


def conditioned_draw(counts: np.ndarray, invariant: ColumnInvariant, rng: object,
                     timing: TimingSettings = TimingSettings()) -> np.ndarray:
    """Every row's noisy count: each partition drawn from its conditional distribution, keeping its total,
    and returned no sooner than its padded deadline (:func:`run_padded`)."""
    source = RandomBits(rng)
    out = np.empty(len(counts), dtype=np.int64)
    for members, mechanisms, total in zip(invariant.partitions, invariant.mechanisms, invariant.totals, strict=True):
        sizes = np.array([m.n for m in mechanisms])
        out[members] = run_padded(lambda: GroupTotalSampler(mechanisms, counts[members]).draw(source),  # noqa: B023
                                  lambda: GroupTotalSampler(mechanisms, public_counts(sizes, total)).draw(),  # noqa: B023
                                  timing.pad_factor)
    return out


def choose_alpha(sizes: np.ndarray, labels: np.ndarray | None, mechanism: str, target) -> Fraction:
    """The per-group alpha whose conditioned release meets ``target`` in every partition, for every total
    (the largest any partition needs; :func:`countdp.invariants.guarantee.target_alpha`, GM or EM).

    It is chosen from the public group sizes alone, so neither the alpha nor the mechanisms depend on
    a confidential total.
    """
    partitions, _ = _partitions(len(sizes), labels)
    return max(target_alpha(sizes[members].tolist(), mechanism, target).alpha for members in partitions)


__all__ = ["EXACT_GROUPS", "NEIGHBOURS", "ColumnInvariant", "TimingSettings", "choose_alpha", "column_invariant",
           "conditioned_draw", "public_counts", "read_columns", "run_padded",
           "unprotected"]
