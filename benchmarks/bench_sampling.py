"""The release path: sampler throughput (seeded and OS-sourced), and what each sampler realizes.

Part 1, throughput of :func:`countdp.privacy.sampling.release` on EM's integer weights, one thread,
best of ``--repeats``.  Targets at n <= 64: >= 20 M samples/s seeded, >= 10 M/s from the OS.

Part 2, privacy of the distribution each sampler *realizes*, computed exactly: the old float
inverse CDF (``u = k / 2**53``, output ``min{i : u < cdf[i]}``, on the certified float
matrix) against the release weights ``W / 2**62``: the number of broken DP inequalities, the
outputs with probability 0 under one input and > 0 under its neighbour, and the worst ratio
``max W[i, j'] / W[i, j]`` over neighbours, times alpha, as ``1 + excess`` (alpha-DP iff excess <= 0).

Part 3, the rounding's cost (floats to integer weights) at n = 1024 for the closed forms:
the UM weight mixed in, max |W/D - P| and the change in L0 (bound: 1e-9 for n <= 1024, alpha <= 0.999).

    .venv/bin/python benchmarks/bench_sampling.py
"""

from __future__ import annotations

import argparse
import math
import os
import time
from fractions import Fraction

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from countdp.design.designer import design_named  # noqa: E402
from countdp.privacy.exact import exact_dp_check  # noqa: E402
from countdp.privacy.sampling import SystemRandomSource, release  # noqa: E402

SEEDED_TARGET, OS_TARGET = 20e6, 10e6
CASES = [("GM", 60, "1/2"), ("GM", 40, "1/2"), ("EM", 20, "1/2"), ("GM", 200, "99/100"), ("WM", 60, "10/11")]


def best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def float_sampler_counts(P: np.ndarray) -> np.ndarray:
    """Exact draw counts (out of 2**53) of the old float inverse-CDF sampler on ``P``."""
    cdf = np.cumsum(P, axis=0)
    cdf[-1, :] = 1.0
    ends = np.array([[math.ceil(Fraction(float(c)) * 2**53) for c in row] for row in cdf], dtype=np.int64)
    return np.diff(np.vstack([np.zeros((1, P.shape[1]), dtype=np.int64), ends]), axis=0)


def privacy_row(W: np.ndarray, alpha: Fraction, K: int) -> tuple[int, int, str]:
    """(broken inequalities, zero-next-to-positive outputs, worst ratio times alpha) of W / 2**K."""
    check = exact_dp_check(W, alpha, K)
    left, right = W[:, :-1], W[:, 1:]
    zero_pos = int((((left == 0) & (right > 0)) | ((right == 0) & (left > 0))).sum())
    if zero_pos:
        return check.broken, zero_pos, "inf"
    worst = max(max(Fraction(int(a), int(b)) for a, b in zip(x, y, strict=True))
                for x, y in ((left.ravel(), right.ravel()), (right.ravel(), left.ravel())))
    return check.broken, zero_pos, f"1 {float(worst * alpha - 1):+.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="8,64,256")
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alpha", default="91/100")
    parser.add_argument("--rounding-n", type=int, default=1024)
    args = parser.parse_args(argv)
    print(f"# release throughput, {args.samples:,} samples per call, best of {args.repeats}, "
          f"EM, alpha={args.alpha}, load={os.getloadavg()[0]:.1f}")
    print(f"{'n':>5} {'seeded M/s':>11} {'OS M/s':>8} {'targets (20 / 10 M/s at n <= 64)':>34}")
    for n in [int(v) for v in args.ns.split(",") if v]:
        mechanism = design_named("EM", n, args.alpha)
        counts = np.random.default_rng(0).integers(0, n + 1, args.samples)
        rng, source = np.random.default_rng(1), SystemRandomSource()
        seeded = args.samples / best_time(lambda m=mechanism, c=counts, r=rng: release(m, c, r), args.repeats)
        system = args.samples / best_time(lambda m=mechanism, c=counts, s=source: release(m, c, s), args.repeats)
        ok = "-" if n > 64 else ("ok" if seeded >= SEEDED_TARGET and system >= OS_TARGET else "MISS")
        print(f"{n:>5} {seeded / 1e6:11.1f} {system / 1e6:8.1f} {ok:>34}")

    print("\n# realized distributions, computed exactly (worst ratio x alpha: <= 1 is alpha-DP)")
    print(f"{'mechanism':<22} {'sampler':<18} {'broken':>7} {'0 vs >0':>8} {'worst ratio x alpha':>20}")
    for name, n, alpha in CASES:
        design = design_named(name, n, alpha)
        a = design.alpha_exact
        label = f"{name} n={n} a={alpha}"
        for sampler, W, K in (("float inverse CDF", float_sampler_counts(design.matrix), 53),
                              ("exact (W / 2^62)", np.asarray(design.released.weights), design.released.K)):
            broken, zero_pos, worst = privacy_row(W, a, K)
            print(f"{label:<22} {sampler:<18} {broken:>7} {zero_pos:>8} {worst:>20}")

    print(f"\n# rounding to integer weights at n = {args.rounding_n} (closed forms)")
    print(f"{'mechanism':<10} {'alpha':>8} {'rounding lambda':>16} {'max|W/D-P|':>11} {'L0 change':>10} {'time s':>7}")
    for name in ("GM", "EM", "UM"):
        for alpha in ("1/2", "9/10", "99/100", "999/1000"):
            start = time.perf_counter()
            cert = design_named(name, args.rounding_n, alpha).released.certificate
            print(f"{name:<10} {alpha:>8} {cert.rounding_lambda:16.1e} {cert.max_abs_error:11.1e} "
                  f"{cert.objective_change:10.1e} {time.perf_counter() - start:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
