"""The conditioned draw's work on clustered against spread counts of one total.

``countdp.invariants.group_total.GroupTotalSampler`` (the sampler's construction and one draw, as a
release does it) on partitions of ``G`` groups of mixed sizes (GM and EM, alpha 9/10 and 4/5),
with the total ``T`` either *spread* (each group its proportional share, ``public_counts``) or
*clustered* (the largest groups filled to their size, the rest 0).  Two measures:

* a deterministic operation counter (:class:`WorkCounter`): Python bytecodes executed in the
  sampler's modules (``group_total``, ``packed``, ``leaves``, ``limbs``, ``splits``, ``windows``),
  big-number multiplications/divisions (``mul``) and additions/subtractions/shifts/comparisons
  (``add``), int and GMP, with their
  operands' decimal digits and machine words (``limbs``: 30-bit digits of an int, 64-bit limbs of a GMP
  integer), the rows of the numpy arrays multiplied and split (``rows``), bits of ``U`` drawn, and the
  draw's refinements and extensions;
* instructions under ``valgrind --tool=callgrind``, collected only inside the measured call
  (``--toggle-collect=functools_reduce``), one fresh process per run, ``--repeats`` seeds.

Prints one table per measure with the ratio clustered / spread.  ``--grid check`` runs sizes and
totals the code was not tuned on.

    .venv/bin/python benchmarks/bench_conditioned_work.py
    .venv/bin/python benchmarks/bench_conditioned_work.py --grid check --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import operator
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction

import gmpy2
import numpy as np

from countdp.invariants import group_total as gt
from countdp.invariants import leaves, packed, splits, windows
from countdp.invariants import limbs as limbs_module
from countdp.invariants.windows import public_counts
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.rounding import round_to_release

GRIDS = {  # name: [(groups, size cycle, total as a fraction of sum n)]
    "tune": [(8, (3, 8, 15, 30), "1/2"), (32, (10, 25, 50), "1/3"), (128, (50,), "1/2")],
    "check": [(12, (4, 9, 20), "2/5"), (48, (2, 6, 11, 25, 40), "3/5"), (96, (5, 7, 16), "1/4")],
}
SETTINGS = {"lazy": gt.GroupTotalSettings(), "exact": gt.GroupTotalSettings(method="exact")}


@functools.cache
def mechanism(family: str, n: int, alpha: str, K: int = 62):
    """GM or EM rounded to exactly alpha-DP integer weights over ``2**K`` (as the release does)."""
    form = geometric if family == "GM" else explicit_fair
    return round_to_release(form(n, float(Fraction(alpha))), Fraction(alpha), K)


def partition(groups: int, cycle: tuple[int, ...]) -> list:
    """``groups`` mechanisms: sizes cycling through ``cycle``, GM/EM and alpha 9/10, 4/5 alternating."""
    return [mechanism(("GM", "EM")[g % 2], cycle[g % len(cycle)], ("9/10", "4/5")[(g // 2) % 2])
            for g in range(groups)]


def counts(sizes: np.ndarray, total: int, kind: str) -> np.ndarray:
    """``spread``: the proportional share; ``clustered``: the largest groups full, the rest 0."""
    if kind == "spread":
        return public_counts(sizes, total)
    out, left = np.zeros(len(sizes), dtype=np.int64), total
    for g in np.argsort(-sizes, kind="stable"):
        out[g] = min(int(sizes[g]), left)
        left -= out[g]
    return out


def limbs(value: object) -> int:
    """Machine words of an operand: 30-bit digits of an int (CPython), 64-bit limbs of a GMP integer."""
    if isinstance(value, gmpy2.mpz):
        return (value.bit_length() + 63) // 64
    return (abs(int(value)).bit_length() + 29) // 30


def digits(value: object) -> int:
    """Decimal digits of an int's magnitude (0 for zero); of a GMP integer, from its bit length."""
    if isinstance(value, gmpy2.mpz):
        return int(value.bit_length() * 0.30103) + 1
    return len(str(abs(int(value)))) if value else 0


class Num:
    """An int that reports every arithmetic operation on it to a :class:`WorkCounter`."""

    __slots__ = ("counter", "value")

    def __init__(self, counter: WorkCounter, value: object) -> None:
        self.counter, self.value = counter, value

    def _op(self, other: object, fn, kind: str, wrap: bool = True):
        b = other.value if isinstance(other, Num) else other
        self.counter.op(kind, self.value, b)
        out = fn(self.value, b)
        return Num(self.counter, out) if wrap else out

    def __repr__(self) -> str:
        return f"Num({self.value!r})"

    def bit_length(self) -> int:
        self.counter.op("add", self.value)
        return self.value.bit_length()

    __add__ = lambda self, o: self._op(o, operator.add, "add")  # noqa: E731
    __radd__ = lambda self, o: self._op(o, lambda a, b: b + a, "add")  # noqa: E731
    __sub__ = lambda self, o: self._op(o, operator.sub, "add")  # noqa: E731
    __rsub__ = lambda self, o: self._op(o, lambda a, b: b - a, "add")  # noqa: E731
    __mul__ = lambda self, o: self._op(o, operator.mul, "mul")  # noqa: E731
    __rmul__ = lambda self, o: self._op(o, lambda a, b: b * a, "mul")  # noqa: E731
    __floordiv__ = lambda self, o: self._op(o, operator.floordiv, "mul")  # noqa: E731
    __truediv__ = lambda self, o: self._op(o, operator.truediv, "mul", wrap=False)  # noqa: E731
    __rtruediv__ = lambda self, o: self._op(o, lambda a, b: b / a, "mul", wrap=False)  # noqa: E731
    __lshift__ = lambda self, o: self._op(o, operator.lshift, "add")  # noqa: E731
    __rshift__ = lambda self, o: self._op(o, operator.rshift, "add")  # noqa: E731
    __and__ = lambda self, o: self._op(o, operator.and_, "add")  # noqa: E731
    __neg__ = lambda self: self._op(0, lambda a, _: -a, "add")  # noqa: E731
    __le__ = lambda self, o: self._op(o, operator.le, "add", wrap=False)  # noqa: E731
    __ge__ = lambda self, o: self._op(o, operator.ge, "add", wrap=False)  # noqa: E731
    __lt__ = lambda self, o: self._op(o, operator.lt, "add", wrap=False)  # noqa: E731
    __gt__ = lambda self, o: self._op(o, operator.gt, "add", wrap=False)  # noqa: E731
    __eq__ = lambda self, o: self._op(o, operator.eq, "add", wrap=False)  # noqa: E731
    __bool__ = lambda self: bool(self.value)  # noqa: E731
    __int__ = lambda self: int(self.value)  # noqa: E731
    __index__ = lambda self: int(self.value)  # noqa: E731
    __hash__ = None


SAMPLER = (gt, packed, limbs_module, leaves, splits, windows)
"""The modules whose bytecodes are counted."""


@dataclass
class WorkCounter:
    """Operations of a :class:`GroupTotalSampler` build and draw, counted while :meth:`counting` is active:
    the sampler's Python bytecodes, its big-number multiplications and divisions (``mul``) and additions,
    subtractions, shifts and comparisons (``add``) with the decimal digits of their operands, and the rows
    of its numpy products and splits.  The int values the sampler reads (column weights, the tilt's
    powers, radii, masses, running sums, ``U``) are replaced by :class:`Num`, so each operation the code
    does on them is seen; a packed product (one GMP multiplication) and the tilt's powers are counted
    from their operands."""

    bytecodes: int = 0
    mul: int = 0
    mul_digits: int = 0
    mul_limbs: int = 0
    add: int = 0
    add_digits: int = 0
    add_limbs: int = 0
    rows: int = 0
    bits: int = 0
    refinements: int = 0
    extensions: int = 0
    _saved: dict = field(default_factory=dict, repr=False)

    def op(self, kind: str, *operands: object) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        for unit, size in (("_digits", digits), ("_limbs", limbs)):
            setattr(self, kind + unit, getattr(self, kind + unit) + sum(size(v) for v in operands))

    def totals(self) -> dict:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def _trace(self, frame, event, arg):
        if frame.f_code.co_filename not in self._files:
            return None
        frame.f_trace_opcodes = True
        if event == "opcode":
            self.bytecodes += 1
        return self._trace

    @contextlib.contextmanager
    def counting(self):
        """Patch the sampler with counting wrappers and trace its bytecodes."""
        patches = {(packed, "multiply"): self._multiply, (gt, "multiply"): self._multiply,
                   (gt, "tilt_powers"): self._tilt_powers, (gt, "leaf_bounds"): self._leaf_bounds,
                   (gt, "bounds_product"): self._bounds_product, (gt, "split_sums"): self._split_sums,
                   (gt, "level_sums"): self._level_sums, (gt.Packed, "values"): self._values(),
                   (splits.Running, "__getitem__"): self._prefix(), (gt.RandomBits, "bits"): self._bits(),
                   (gt, "decide"): self._decide}
        self._saved = {(owner, name): vars(owner)[name] for owner, name in patches}
        self._files = {module.__file__ for module in SAMPLER}
        for (owner, name), wrapper in patches.items():
            setattr(owner, name, wrapper)
        previous = sys.gettrace()
        sys.settrace(self._trace)
        try:
            yield self
        finally:
            sys.settrace(previous)
            for (owner, name), original in self._saved.items():
                setattr(owner, name, original)

    def _decide(self, low, high, u, bits, offset, exact):  # (u and the offset counted too)
        return self._saved[gt, "decide"](low, high, Num(self, u), bits, Num(self, offset), exact)

    def _multiply(self, a, b, bits):
        size = -(-bits // 8)
        self.op("mul", gmpy2.mpz(1) << (8 * (a.count * size + 1)), gmpy2.mpz(1) << (8 * (b.count * size + 1)))
        self.rows += a.count + b.count
        return self._saved[packed, "multiply"](a, b, bits)

    def _bounds_product(self, left, right, bits, length):
        self.rows += length
        return self._saved[gt, "bounds_product"](left, right, bits, length)

    def _split_sums(self, left, right, target, keep):
        self.rows += left.low.count + right.low.count
        return self._saved[gt, "split_sums"](left, right, target, keep)

    def _level_sums(self, pairs, targets, keep):
        self.rows += sum(left.low.count + right.low.count for left, right in pairs)
        return self._saved[gt, "level_sums"](pairs, targets, keep)

    def _tilt_powers(self, theta, degree, bits):
        lo, hi = self._saved[gt, "tilt_powers"](theta, degree, bits)
        for (m, _), (h, _) in zip(lo[:-1], hi[:-1], strict=True):
            self.op("mul", m, theta[0]), self.op("mul", h, theta[0])
        return [(Num(self, m), e) for m, e in lo], [(Num(self, m), e) for m, e in hi]

    def _leaf_bounds(self, columns, powers, bits):
        self.rows += sum(len(c) for c in columns)
        plain = ([m.value for m, _ in side] for side in powers)
        out = self._saved[gt, "leaf_bounds"](columns, tuple([(m, e) for m, (_, e) in zip(values, side, strict=True)]
                                                           for values, side in zip(plain, powers, strict=True)), bits)
        return [gt.Bounds(b.low, b.start, b.count, Num(self, b.radius), Num(self, b.mass)) for b in out]

    def _values(self):
        counter = self

        def values(packed_polynomial):
            plain = counter._saved[gt.Packed, "values"](packed_polynomial)
            out = np.empty(len(plain), dtype=object)
            out[:] = [Num(counter, v) for v in plain]
            return out
        return values

    def _prefix(self):
        counter = self

        def read(prefix, i):
            return Num(counter, counter._saved[splits.Running, "__getitem__"](prefix, i))
        return read

    def _bits(self):
        counter = self

        def bits(source, count):
            counter.bits += count
            return counter._saved[gt.RandomBits, "bits"](source, count)
        return bits


def count_work(mechanisms: list, x: np.ndarray, seed: int, settings: gt.GroupTotalSettings) -> dict:
    """The :class:`WorkCounter` totals of one sampler build and one seeded draw."""
    counter = WorkCounter()
    with counter.counting():
        _, report = gt.GroupTotalSampler(mechanisms, x, settings).draw_with_report(np.random.default_rng(seed))
    counter.refinements, counter.extensions = report.refinements, report.extensions
    return counter.totals()


def child(path: str) -> None:
    """One build and draw inside ``functools.reduce`` (what callgrind collects), from a pickled case."""
    with open(path, "rb") as file:
        mechanisms, x, seed, method = pickle.load(file)
    rng, settings = np.random.default_rng(seed), SETTINGS[method]
    gc.collect()
    gc.disable()
    functools.reduce(lambda _, f: f(), [lambda: gt.GroupTotalSampler(mechanisms, x, settings).draw(rng)], None)


def instructions(mechanisms: list, x: np.ndarray, seed: int, method: str) -> int:
    """Instructions collected by callgrind in :func:`child` (a fresh process)."""
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as file:
        pickle.dump((mechanisms, x, seed, method), file)
    try:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              "--collect-atstart=no", "--toggle-collect=functools_reduce",
                              sys.executable, __file__, "--child", file.name], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    finally:
        os.unlink(file.name)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def cases(grid: str):
    """``(label, mechanisms, sizes, total)`` of each partition of the grid."""
    for groups, cycle, share in GRIDS[grid]:
        mechanisms = partition(groups, cycle)
        sizes = np.array([m.n for m in mechanisms])
        total = int(sizes.sum()) * Fraction(share).numerator // Fraction(share).denominator
        yield f"G={groups} n~{'/'.join(map(str, cycle))} T={total}/{int(sizes.sum())}", mechanisms, sizes, total


def counter_table(grid: str, method: str, seeds: int) -> None:
    """The deterministic counter on every case, clustered against spread (same seeds)."""
    keys = ("bytecodes", "mul", "mul_digits", "mul_limbs", "add", "add_digits", "add_limbs", "rows", "bits",
            "refinements", "extensions")
    print(f"\n## deterministic counter ({grid} grid, {method}; sum over {seeds} seeds)\n")
    print("| partition | measure | clustered | spread | clustered/spread |\n|---|---|---|---|---|")
    for label, mechanisms, sizes, total in cases(grid):
        work = {kind: [count_work(mechanisms, counts(sizes, total, kind), s, SETTINGS[method]) for s in range(seeds)]
                for kind in ("clustered", "spread")}
        for key in keys:
            c, s = (sum(w[key] for w in work[kind]) for kind in ("clustered", "spread"))
            print(f"| {label} | {key} | {c:,} | {s:,} | {c / s if s else float('nan'):.4f} |")


def valgrind_table(grid: str, method: str, repeats: int) -> None:
    """Callgrind instructions of one build and draw, ``repeats`` seeds per kind; noise = max - min over seeds."""
    print(f"\n## instructions under callgrind ({grid} grid, {method}; {repeats} seeds each)\n")
    print("| partition | clustered (mean) | spread (mean) | clustered - spread | noise clustered | noise spread "
          "| clustered/spread |\n|---|---|---|---|---|---|---|")
    for label, mechanisms, sizes, total in cases(grid):
        with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
            runs = {kind: [pool.submit(instructions, mechanisms, counts(sizes, total, kind), seed, method)
                           for seed in range(repeats)] for kind in ("clustered", "spread")}
        runs = {kind: [job.result() for job in jobs] for kind, jobs in runs.items()}
        c, s = (float(np.mean(runs[k])) for k in ("clustered", "spread"))
        nc, ns = (max(runs[k]) - min(runs[k]) for k in ("clustered", "spread"))
        print(f"| {label} | {c / 1e6:.3f}M | {s / 1e6:.3f}M | {(c - s) / 1e3:+,.0f}k | {nc / 1e3:,.0f}k | "
              f"{ns / 1e3:,.0f}k | {c / s:.5f} |")


def time_table(grid: str, method: str, repeats: int) -> None:
    """Wall time (best of ``repeats``) of one build and draw, clustered and spread."""
    print(f"\n## time, best of {repeats} ({grid} grid, {method})\n")
    print("| partition | clustered s | spread s |\n|---|---|---|")
    for label, mechanisms, sizes, total in cases(grid):
        best = {}
        for kind in ("clustered", "spread"):
            x, times = counts(sizes, total, kind), []
            for seed in range(repeats):
                start = time.perf_counter()
                gt.GroupTotalSampler(mechanisms, x, SETTINGS[method]).draw(np.random.default_rng(seed))
                times.append(time.perf_counter() - start)
            best[kind] = min(times)
        print(f"| {label} | {best['clustered']:.4f} | {best['spread']:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--grid", choices=sorted(GRIDS), default="tune")
    parser.add_argument("--method", choices=sorted(SETTINGS), default="lazy")
    parser.add_argument("--repeats", type=int, default=3, help="seeds per kind (valgrind runs, counter, timing)")
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    counter_table(args.grid, args.method, args.repeats)
    time_table(args.grid, args.method, max(args.repeats, 5))
    if not args.no_valgrind:
        valgrind_table(args.grid, args.method, args.repeats)


if __name__ == "__main__":
    main()
