"""Sampling throughput of :func:`countdp.sampling.release` (samples/s), one thread.

Also times a *proposed* vectorised alias-table sampler (Walker/Vose; defined here, not in the
package) on the same inputs and checks that both reproduce the mechanism's columns, so the lead
can decide whether to adopt it.  Target: >= 10M samples/s on one core at n <= 64.

    /tmp/venv/bin/python benchmarks/bench_sampling.py
    /tmp/venv/bin/python benchmarks/bench_sampling.py --ns 8,64,256,1024 --samples 5000000
"""

from __future__ import annotations

import argparse
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from countdp.mechanisms import explicit_fair  # noqa: E402
from countdp.sampling import release  # noqa: E402

TARGET = 10e6


def alias_tables(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose alias tables for every column: flattened ``prob[j*N + k]``, ``alias[j*N + k]``."""
    N = P.shape[0]
    prob = np.empty((N, N))
    alias = np.empty((N, N), dtype=np.int64)
    for j in range(N):
        scaled = P[:, j] / P[:, j].sum() * N
        small = [k for k in range(N) if scaled[k] < 1.0]
        large = [k for k in range(N) if scaled[k] >= 1.0]
        p, a = np.ones(N), np.arange(N)
        while small and large:
            s, g = small.pop(), large.pop()
            p[s], a[s] = scaled[s], g
            scaled[g] -= 1.0 - scaled[s]
            (small if scaled[g] < 1.0 else large).append(g)
        prob[j], alias[j] = p, a
    return prob.ravel(), alias.ravel()


def release_alias(tables: tuple[np.ndarray, np.ndarray], N: int, true_counts: np.ndarray,
                  rng: np.random.Generator) -> np.ndarray:
    """One uniform per sample: its integer part picks a slot, its fraction accepts or aliases."""
    prob, alias = tables
    scaled = rng.random(true_counts.shape) * N
    slot = scaled.astype(np.int64)
    flat = true_counts * N + slot
    return np.where(scaled - slot < prob[flat], slot, alias[flat])


def throughput(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="8,64,256")
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=0.91)
    args = parser.parse_args(argv)
    print(f"# sampling throughput, {args.samples:,} samples per call, best of {args.repeats}, "
          f"EM matrix, alpha={args.alpha}, load={os.getloadavg()[0]:.1f}")
    print(f"{'n':>5} {'release M/s':>12} {'alias M/s':>10} {'speedup':>8} {'target':>7} {'max|freq-P|':>12}")
    for n in [int(v) for v in args.ns.split(",") if v]:
        P = explicit_fair(n, args.alpha)
        rng = np.random.default_rng(0)
        counts = rng.integers(0, n + 1, args.samples)
        t_release = throughput(lambda P=P, counts=counts, rng=rng: release(P, counts, rng), args.repeats)
        tables = alias_tables(P)
        def alias_call(tables=tables, n=n, counts=counts, rng=rng):
            return release_alias(tables, n + 1, counts, rng)

        t_alias = throughput(alias_call, args.repeats)
        # both samplers reproduce the columns: empirical frequencies of input j = n // 2
        col = np.full(args.samples, n // 2)
        freq_r = np.bincount(release(P, col, rng), minlength=n + 1) / args.samples
        freq_a = np.bincount(release_alias(tables, n + 1, col, rng), minlength=n + 1) / args.samples
        err = max(np.abs(freq_r - P[:, n // 2]).max(), np.abs(freq_a - P[:, n // 2]).max())
        rate_r, rate_a = args.samples / t_release, args.samples / t_alias
        ok = "ok" if rate_r >= TARGET or n > 64 else "MISS"
        print(f"{n:>5} {rate_r / 1e6:12.1f} {rate_a / 1e6:10.1f} {rate_a / rate_r:8.1f}x {ok:>7} {err:12.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
