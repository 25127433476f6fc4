"""Empirical privacy audit of table releases, through the release engine the CLI runs.

The exact certificates prove each mechanism's integer weights alpha-DP; they do not see the
plumbing between a table and its noisy counts (row and column indexing, the size -> mechanism
lookup, the merged sampling table, the levels chain, the conditioned draw).  This module tests
that plumbing as a black box, in the style of statistical DP testers (DP-Sniper, Bichsel et al.
2021; DP-Auditorium): it releases many tables of neighbouring data through
:func:`~countdp.release.engine.prepare` and :func:`~countdp.release.engine.write_release` (Parquet
written and read back, as ``countdp release`` does) and bounds the privacy loss from the outputs.

**Many releases from one table.**  Each row of a table is one group, released with its own
64-bit word (:mod:`countdp.release.draws`), so a table whose *block* of rows is repeated ``m``
times holds ``m`` independent releases of that block.  A :class:`Form` lists the datasets (one
block each), the *units* read from a block (cells of noisy columns, an output tuple coded in
mixed radix) and the neighbouring pairs ``(dataset, dataset', unit)`` to test.  A conditioned
release (``--invariant-by``) numbers the replicates in its partition column, so each replicate is
its own partition; ``--invariant total`` has one partition per table, so it takes one table per
release (about 20 ms each), or a few written tables and the engine's draw repeated on the prepared
table (``full_tables`` of :func:`audit_form`).

**The bound** (:func:`bound_privacy_loss`).  For each dataset ``i`` and event ``E`` (a set of
outputs) one-sided Clopper-Pearson bounds ``L(E|i) <= Pr[E|i] <= U(E|i)``
(:func:`countdp.privacy.audit_events.clopper_pearson`) are taken at level ``delta / B``, where
``B`` counts every bound used, fixed before any draw: two per (fixed event, dataset in a pair),
and two per (pair, direction) for the DP-Sniper event.  The fixed events are single outputs (and
for one-dimensional units prefixes and suffixes, :func:`countdp.privacy.audit_events.event_masks`)
over the whole output space, known before sampling.  The DP-Sniper event of each pair and
direction is the top-k outputs by likelihood ratio, ranked on the first quarter of the draws, k
chosen on the second, and bounded on the second half only.  ``epsilon_LB = max ln(L(E|i) / U(E|i'))``
over all tests, both directions.

**Why it is sound.**  Given the data, a fixed event's count is Binomial(m, Pr[E|i]) (the rows'
words are independent), and a DP-Sniper event is a function of the first half only, so its count
on the second half is Binomial given the event.  Each bound therefore fails with probability at
most ``delta / B``, and by the union bound (whatever their dependence) all hold together with
probability at least ``1 - delta``.  When they all hold, a release that is epsilon-DP for these
neighbours gives ``L(E|i) <= Pr[E|i] <= e^epsilon Pr[E|i'] <= e^epsilon U(E|i')``, so
``epsilon_LB <= epsilon``: a correct form is flagged with probability at most ``delta``, for any
number of draws, events or outputs, even where the DP inequalities are tight (GM).

Seeded :class:`~countdp.release.draws.Randomness` makes an audit reproducible; the map from words
to outputs is the same function as on the secure path, so the seeded audit audits that code.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from countdp.privacy.audit_events import clopper_pearson, event_masks
from countdp.release.draws import Randomness
from countdp.release.engine import draw_conditioned, prepare, write_release
from countdp.release.request import ColumnPrivacy, ReleaseRequest

DEFAULT_DELTA = 1e-6
"""Family-wise false-positive rate: a correct form fails the audit with probability at most this."""
MIN_MASS = 0.01
"""Share of the draws an event needs under both datasets to enter the point estimate (not the bound): at
10^6 draws, 10^4 of them, so that each empirical log-ratio is within about 0.015 of the truth."""


@dataclass(frozen=True)
class LossBound:
    """What the samples say about the privacy loss: ``lower_bound`` holds with probability ``1 - delta``.

    ``estimate``: the largest empirical ``ln(p/q)`` over fixed events holding at least
    :data:`MIN_MASS` of the draws under both datasets, and over the DP-Sniper events on their held-out
    draws (``nan`` if none); ``samples``: the fewest draws of any dataset; ``bounds``: ``B`` of the union
    bound; ``worst``: the test attaining ``lower_bound``.
    """

    estimate: float
    lower_bound: float
    samples: int
    bounds: int
    delta: float
    worst: str


def _log_ratio(low: np.ndarray, up: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(low) - np.log(up)


def _sniper_event(rank: tuple[np.ndarray, np.ndarray], choose: tuple[np.ndarray, np.ndarray],
                  level: float) -> np.ndarray:
    """The top-k outputs by ``Pr[o|a] / Pr[o|b]`` estimated on the histograms ``rank``, with k chosen on the
    histograms ``choose`` (other draws, so that the outputs' luck in ranking does not choose k) as the one
    with the largest ratio lower bound."""
    (ra, rb), (ca, cb) = rank, choose
    order = np.argsort(-((ra + 0.5) / ra.sum()) / ((rb + 0.5) / rb.sum()), kind="stable")
    low, _ = clopper_pearson(np.cumsum(ca[order])[:-1], int(ca.sum()), level)
    _, up = clopper_pearson(np.cumsum(cb[order])[:-1], int(cb.sum()), level)
    mask = np.zeros(ra.size, dtype=bool)
    mask[order[:int(np.argmax(_log_ratio(low, up))) + 1]] = True
    return mask


def bound_privacy_loss(samples: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]], n_outputs: int, *,
                       thresholds: bool = False, delta: float = DEFAULT_DELTA) -> LossBound:
    """Bound the privacy loss between neighbouring datasets from their outputs (module docstring).

    ``samples[i]``: the output codes (integers in ``0..n_outputs-1``) released on dataset ``i``;
    ``pairs``: the neighbouring ``(i, i')``, tested in both directions; ``thresholds`` adds the
    prefix and suffix events (for outputs that are one count, in order).
    """
    masks = event_masks(n_outputs, "all" if thresholds else "outputs")
    used = sorted({i for pair in pairs for i in pair})
    bounds = 2 * masks.shape[0] * len(used) + 4 * len(pairs)
    level = delta / bounds
    draws = {i: np.asarray(samples[i], dtype=np.int64) for i in used}
    for i, s in draws.items():
        if s.size < 4 or s.min() < 0 or s.max() >= n_outputs:
            raise ValueError(f"dataset {i}: need at least 4 outputs, each in 0..{n_outputs - 1}")
    hist = {i: np.bincount(s, minlength=n_outputs) for i, s in draws.items()}
    hits = {i: masks.astype(np.int64) @ h for i, h in hist.items()}
    cp = {i: clopper_pearson(hits[i], draws[i].size, level) for i in used}
    best, worst, estimate = -math.inf, "", -math.inf
    for i, j in pairs:
        for a, b in ((i, j), (j, i)):
            ratio = _log_ratio(cp[a][0], cp[b][1])
            e = int(np.argmax(ratio))
            if ratio[e] > best:
                best, worst = float(ratio[e]), f"datasets {a} vs {b}, outputs {np.flatnonzero(masks[e]).tolist()}"
            enough = (hits[a] >= MIN_MASS * draws[a].size) & (hits[b] >= MIN_MASS * draws[b].size)
            if enough.any():
                p, q = hits[a][enough] / draws[a].size, hits[b][enough] / draws[b].size
                estimate = max(estimate, float(np.max(np.log(p / q))))
            ratio, event, held_out = _sniper_test(draws[a], draws[b], n_outputs, level)
            estimate = max(estimate, held_out)
            if ratio > best:
                best, worst = ratio, f"datasets {a} vs {b}, held-out DP-Sniper event of {event} output(s)"
    return LossBound(estimate if estimate > -math.inf else math.nan, max(0.0, best),
                     min(s.size for s in draws.values()), bounds, delta, worst)


def _sniper_test(a: np.ndarray, b: np.ndarray, n_outputs: int, level: float) -> tuple[float, int, float]:
    """``ln(L/U)`` of the DP-Sniper event chosen on the first halves (ranked on the first quarter, its size
    chosen on the second), bounded on the second halves only; its size; its empirical ``ln(p/q)`` there."""
    quarters = [[np.bincount(s[k * (s.size // 4):(k + 1) * (s.size // 4)], minlength=n_outputs) for k in (0, 1)]
                for s in (a, b)]
    mask = _sniper_event((quarters[0][0], quarters[1][0]), (quarters[0][1], quarters[1][1]), level)
    ha, hb = 2 * (a.size // 4), 2 * (b.size // 4)
    hit_a, hit_b = int(mask[a[ha:]].sum()), int(mask[b[hb:]].sum())
    low, _ = clopper_pearson(hit_a, a.size - ha, level)
    _, up = clopper_pearson(hit_b, b.size - hb, level)
    held_out = math.log(hit_a * (b.size - hb) / (hit_b * (a.size - ha))) if hit_a and hit_b else -math.inf
    return float(_log_ratio(low, up)), int(mask.sum()), held_out


# ---------------------------------------------------------------------------------------------
# Release forms and the engine


@dataclass(frozen=True)
class Form:
    """A release form to audit: ``blocks[d]`` is dataset d's block of rows (column -> values), repeated
    in every replicate; ``units[u]`` the cells ``(row in block, noisy column, outputs)`` read as one
    output; ``pairs`` the neighbours ``(d, d', u)``; ``request`` the :class:`ReleaseRequest` fields
    besides the paths and seed; ``declared`` the epsilon the form promises (``None``: the guarantee
    the engine computes, ``prepared.epsilon``); ``partition``: a column numbering the replicates
    (``--invariant-by``); ``one_per_table``: one replicate per table (``--invariant total``)."""

    name: str
    request: dict
    blocks: tuple[dict, ...]
    units: tuple[tuple[tuple[int, str, int], ...], ...]
    pairs: tuple[tuple[int, int, int], ...]
    declared: float | None
    partition: str | None = None
    one_per_table: bool = False
    thresholds: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", all(len(u) == 1 for u in self.units))

    @property
    def n_outputs(self) -> int:
        return max(math.prod(radix for _, _, radix in unit) for unit in self.units)

    def codes(self, noisy: dict[str, np.ndarray], rows: int) -> list[np.ndarray]:
        """Each unit's output codes (mixed radix over its cells), one per replicate."""
        out = []
        for unit in self.units:
            code = np.zeros(noisy[unit[0][1]].size // rows, dtype=np.int64)
            for row, column, radix in unit:
                code = code * radix + noisy[column].reshape(-1, rows)[:, row]
            out.append(code)
        return out


@dataclass(frozen=True)
class FormResult:
    """One form's audit: its declared epsilon, the engine's epsilon, the bound and the time taken."""

    form: str
    declared: float
    engine_epsilon: float
    bound: LossBound
    seconds: float

    @property
    def passed(self) -> bool:
        return self.bound.lower_bound <= self.declared


def released_columns(request: ReleaseRequest, mechanism_for, seed: int) -> tuple[dict[str, np.ndarray], object]:
    """Release ``request`` as ``countdp release`` does (prepare, then write Parquet and its sidecar with a
    seeded :class:`Randomness`), and read the noisy columns back; returns them with the prepared release."""
    prepared = prepare(request, mechanism_for)
    names = [name for column in prepared.request.columns for name in column.noisy_columns]
    write_release(prepared, Randomness(seed, len(names)), "empirical-audit")
    table = pq.read_table(request.out, columns=names)
    return {name: table.column(name).to_numpy() for name in names}, prepared


def replicate_table(form: Form, block: dict, replicates: int, path: Path) -> None:
    """Write ``block`` repeated ``replicates`` times to the Parquet ``path`` (numbered in the form's partition
    column, if it has one): each repetition is one independent release of the block."""
    columns = {name: np.tile(np.asarray(values, dtype=np.int64), replicates) for name, values in block.items()}
    if form.partition is not None:
        rows = len(next(iter(block.values())))
        columns[form.partition] = np.repeat(np.arange(replicates, dtype=np.int64), rows)
    pq.write_table(pa.table(columns), path)


def _cache(form: Form, folder: Path) -> Path | None:
    """A mechanism cache inside ``folder`` for forms that design per group size (as ``--cache`` gives it)."""
    levels = form.request["columns"][0].levels
    return None if levels or "mechanism_file" in form.request else folder / "mechanisms"


def conditioned_columns(prepared, words: int) -> dict[str, np.ndarray]:
    """The noisy columns of one more release of an invariant table already prepared: the draw
    :func:`~countdp.release.engine.write_release` makes (:func:`~countdp.release.engine.draw_conditioned`)
    before it streams the rows, whose values it then copies into the table row for row."""
    names = [column.noisy_columns[0] for column in prepared.request.columns]
    draw_conditioned(prepared, Randomness(words, len(names)))
    return dict(zip(names, prepared.conditioned, strict=True))


def _dataset(form: Form, d: int, mechanisms: Callable, folder: Path, samples: int, seed: int,
             full_tables: int | None = None) -> tuple:
    """Dataset ``d``'s output codes per unit, and the epsilon its release charges.

    A form with one release per table writes ``full_tables`` whole tables (all of them if ``None``);
    the rest are drawn from the last of them, prepared once (see :func:`audit_form`).
    """
    rows = len(next(iter(form.blocks[d].values())))
    tables = samples if form.one_per_table else 1
    written = tables if full_tables is None else min(tables, max(full_tables, 1))
    parts, epsilon, prepared = [], 0.0, None
    for t in range(tables):
        words = seed * 1_000_003 + d * tables + t  # every table its own seed: independent datasets
        if t >= written:
            parts.append(form.codes(conditioned_columns(prepared, words), rows))
            continue
        source, out = folder / f"{form.name}-{d}.parquet", folder / f"{form.name}-{d}-released.parquet"
        replicate_table(form, form.blocks[d], 1 if form.one_per_table else samples, source)
        request = ReleaseRequest(input=source, out=out, seed=words, overwrite=True, cache=_cache(form, folder),
                                 **form.request)
        noisy, prepared = released_columns(request, mechanisms(request), words)
        parts.append(form.codes(noisy, rows))
        epsilon = max(epsilon, float(prepared.epsilon))
    return [np.concatenate(codes) for codes in zip(*parts, strict=True)], epsilon


def audit_form(form: Form, mechanisms: Callable, folder: Path, samples: int, seed: int = 0,
               delta: float = DEFAULT_DELTA, full_tables: int | None = None) -> FormResult:
    """Release every dataset of ``form`` ``samples`` times through the engine and bound the loss.

    ``mechanisms(request)`` returns the release's ``mechanism_for`` (pass the CLI's, or a planted
    defect's); ``folder`` receives the tables and releases.  A form with one release per table
    (``--invariant total``) costs a whole release per sample (tens of ms: the table's validation,
    the exact guarantee, the commit's guardian process); with ``full_tables`` only that many are
    written and the rest repeat the engine's draw on the prepared table, a few ms each, so that 10^6
    samples take minutes rather than hours.  The written tables check that the table carries the
    draw; every sample is a draw of the release's own sampler at its own seed.
    """
    start = time.perf_counter()
    used = sorted({d for pair in form.pairs for d in pair[:2]})
    codes, charged = {}, 0.0
    for d in used:
        codes[d], epsilon = _dataset(form, d, mechanisms, Path(folder), samples, seed, full_tables)
        charged = max(charged, epsilon)
    index = {(d, u): k for k, (d, u) in enumerate((d, u) for d in used for u in range(len(form.units)))}
    flat = [codes[d][u] for d, u in index]
    pairs = [(index[(a, u)], index[(b, u)]) for a, b, u in form.pairs]
    bound = bound_privacy_loss(flat, pairs, form.n_outputs, thresholds=form.thresholds, delta=delta)
    declared = charged if form.declared is None else form.declared
    return FormResult(form.name, declared, charged, bound, time.perf_counter() - start)


def _privacy(count: str, alpha: Fraction, noisy: str | None = None, levels: tuple = ()) -> ColumnPrivacy:
    return ColumnPrivacy(count, Fraction(alpha), None, noisy or f"noisy_{count}", tuple(levels))


def file_form(path: Path, n: int, alpha: Fraction) -> Form:
    """One mechanism file for every row: counts ``0..n``, neighbours ``c`` and ``c + 1``, epsilon ``-ln alpha``."""
    request = {"columns": (_privacy("c", alpha),), "keep": (), "mechanism_file": Path(path), "n": n}
    return Form(f"file n={n}", request, tuple({"c": [c]} for c in range(n + 1)), (((0, "noisy_c", n + 1),),),
                tuple((c, c + 1, 0) for c in range(n)), -math.log(alpha))


def sizes_form(mechanism: str, alpha: Fraction, sizes: Sequence[int] = (3, 5, 8)) -> Form:
    """Rows of several group sizes interleaved (the size lookup, the merged table): dataset ``t`` gives
    every row the count ``min(t, n)``; rows of size ``n > t`` are audited between ``t`` and ``t + 1``."""
    request = {"columns": (_privacy("c", alpha),), "keep": (), "size_column": "n", "mechanism": mechanism}
    top = max(sizes)
    blocks = tuple({"n": list(sizes), "c": [min(t, n) for n in sizes]} for t in range(top + 1))
    units = tuple(((r, "noisy_c", top + 1),) for r in range(len(sizes)))
    pairs = tuple((t, t + 1, r) for t in range(top) for r, n in enumerate(sizes) if t < n)
    return Form(f"sizes {mechanism} {','.join(map(str, sizes))}", request, blocks, units, pairs, -math.log(alpha))


def columns_form(mechanism: str, alpha: Fraction, n: int, counts: tuple[int, int]) -> Form:
    """Two count columns one person can both change: ``(c1, c2)`` against ``(c1+1, c2+1)``, ``(c1+1, c2)`` and
    ``(c1, c2+1)``; the output is the pair; epsilon ``2 (-ln alpha)`` (sequential composition)."""
    request = {"columns": (_privacy("a", alpha), _privacy("b", alpha)), "keep": (), "size_column": "n",
               "mechanism": mechanism}
    c1, c2 = counts
    blocks = tuple({"n": [n], "a": [c1 + x], "b": [c2 + y]} for x, y in ((0, 0), (1, 1), (1, 0), (0, 1)))
    unit = ((0, "noisy_a", n + 1), (0, "noisy_b", n + 1))
    return Form(f"columns {mechanism} n={n}", request, blocks, (unit,), ((0, 1, 0), (0, 2, 0), (0, 3, 0)),
                -2 * math.log(alpha))


def levels_form(levels: Sequence[Fraction], n: int, mechanism: str = "GM") -> Form:
    """``--levels``: a row of size ``n`` (beside one of size 3), counts ``0..n``; the output is the tuple of
    levels; epsilon ``-ln alpha_1``, the least private level."""
    request = {"columns": (_privacy("c", levels[0], levels=levels),), "keep": (), "size_column": "n",
               "mechanism": mechanism}
    names = request["columns"][0].noisy_columns
    blocks = tuple({"n": [n, 3], "c": [c, 1]} for c in range(n + 1))
    unit = tuple((0, name, n + 1) for name in names)
    return Form(f"levels {mechanism} n={n}", request, blocks, (unit,), tuple((c, c + 1, 0) for c in range(n)),
                -math.log(levels[0]))


def invariant_form(mechanism: str, alpha: Fraction, sizes: tuple[int, int], counts: tuple[int, int],
                   by: bool = True) -> Form:
    """A conditioned release of one partition of two groups: ``(c1, c2)`` against ``(c1-1, c2+1)`` (invariant
    neighbours, both directions tested); the output is the pair; epsilon: the engine's guarantee.
    ``by``: ``--invariant-by g``, one partition per replicate; else ``--invariant total``, one per table."""
    request = {"columns": (_privacy("c", alpha),), "keep": (), "size_column": "n", "mechanism": mechanism,
               "invariant": True, "invariant_by": "g" if by else None}
    c1, c2 = counts
    blocks = ({"n": list(sizes), "c": [c1, c2]}, {"n": list(sizes), "c": [c1 - 1, c2 + 1]})
    unit = ((0, "noisy_c", sizes[0] + 1), (1, "noisy_c", sizes[1] + 1))
    return Form(f"invariant {'by g' if by else 'total'} {mechanism}", request, blocks, (unit,),
                ((0, 1, 0),), None, "g" if by else None, not by)


class ShiftedColumns:
    """A planted defect: a released mechanism whose columns are rolled by ``shift``, so that count ``c`` is
    sampled from column ``c - shift`` (numpy's wrap-around indexing, the off-by-one of ``column(c - 1)``),
    through both the protocol's ``column`` (the merged table) and ``sample``.  Everything else
    (certificate, alpha) is the original's."""

    def __init__(self, released, shift: int) -> None:
        self._released, self._shift = released, shift

    def _rolled(self, inputs):
        return (np.asarray(inputs) - self._shift) % (self._released.n + 1)

    def column(self, j):
        return self._released.column(self._rolled(j))

    def sample(self, counts, words, sizes=None, second=None):
        return self._released.sample(self._rolled(counts), words, sizes, second)

    def __getattr__(self, name: str):
        return getattr(self._released, name)


class ShiftedDesign:
    """A design whose ``released`` is :class:`ShiftedColumns` (for ``mechanism_for`` in a planted-bug audit)."""

    def __init__(self, design, shift: int) -> None:
        self._design = design
        self.released = ShiftedColumns(design.released, shift)

    def __getattr__(self, name: str):
        return getattr(self._design, name)


__all__ = ["DEFAULT_DELTA", "MIN_MASS", "Form", "FormResult", "LossBound", "ShiftedColumns", "ShiftedDesign",
           "audit_form", "bound_privacy_loss", "columns_form", "conditioned_columns", "file_form", "invariant_form",
           "levels_form", "released_columns", "replicate_table", "sizes_form"]
