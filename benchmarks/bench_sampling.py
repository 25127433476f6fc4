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

Part 4, one count per call, old code against new in the same run: ``release(design, [c])`` and
``release(design, c)`` on GM (alpha = 9/10) at ``--percall-ns``, seeded and from the OS, in calls/s
(best block of calls within ``--percall-seconds`` per case), each code in its own child process
(``--old-src``, default ``/work/base/src``, a checkout of main before the scalar path; skipped if
absent).  Target: >= 100k calls/s at every n <= 2048.  Then the array path on ``--array-samples``
draws at n = 40, old and new, and the time of the exact expected errors
(:func:`countdp.privacy.expected_error.release_errors`) at the largest n.

    .venv/bin/python benchmarks/bench_sampling.py
    .venv/bin/python benchmarks/bench_sampling.py --skip-throughput --skip-privacy --skip-rounding   # part 4 only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from countdp.design.designer import design_named  # noqa: E402
from countdp.privacy.exact import exact_dp_check  # noqa: E402
from countdp.privacy.sampling import SystemRandomSource, release  # noqa: E402

SEEDED_TARGET, OS_TARGET = 20e6, 10e6
PER_CALL_TARGET = 100e3
SRC = Path(__file__).resolve().parent.parent / "src"

_PER_CALL_CHILD = r"""
import json, sys, time
import numpy as np
from countdp.design.designer import design_named
from countdp.privacy.sampling import release
ns, seconds, samples = json.loads(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

def rate(call):
    calls, best, deadline = 1, 0.0, time.perf_counter() + seconds
    while True:
        start = time.perf_counter()
        for k in range(calls):
            call(k)
        took = time.perf_counter() - start
        best = max(best, calls / took)
        if time.perf_counter() > deadline:
            return best
        if took < seconds / 10:
            calls *= 2

out = {"per_call": {}}
for n in ns:
    start = time.perf_counter()
    design = design_named("GM", n, "9/10")
    row = {"design_s": time.perf_counter() - start}
    release(design, [0])
    rng = np.random.default_rng(0)
    row["[c] seeded"] = rate(lambda k: release(design, [k % (n + 1)], rng))
    row["[c] OS"] = rate(lambda k: release(design, [k % (n + 1)]))
    row["c seeded"] = rate(lambda k: release(design, k % (n + 1), rng))
    row["c OS"] = rate(lambda k: release(design, k % (n + 1)))
    out["per_call"][n] = row
    try:
        from countdp.privacy.expected_error import release_errors
    except ImportError:
        continue
    start = time.perf_counter()
    release_errors(design)
    out["errors_s"] = [n, time.perf_counter() - start]
if samples:
    design = design_named("GM", 40, "9/10")
    counts = np.random.default_rng(0).integers(0, 41, samples)
    release(design, counts[:10])
    for label, make in (("seeded", lambda: np.random.default_rng(1)), ("OS", lambda: None)):
        best = float("inf")
        for _ in range(3):
            rng = make()
            start = time.perf_counter()
            release(design, counts, rng)
            best = min(best, time.perf_counter() - start)
        out[f"array {label}"] = best
print(json.dumps(out))
"""
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
    parser.add_argument("--percall-ns", default="10,100,1000,2048")
    parser.add_argument("--percall-seconds", type=float, default=0.5)
    parser.add_argument("--array-samples", type=int, default=10_000_000)
    parser.add_argument("--old-src", type=Path, default=Path("/work/base/src"))
    for part in ("throughput", "privacy", "rounding"):
        parser.add_argument(f"--skip-{part}", action="store_true")
    args = parser.parse_args(argv)
    if not args.skip_throughput:
        throughput_table(args)
    if not args.skip_privacy:
        privacy_table()
    if not args.skip_rounding:
        rounding_table(args.rounding_n)
    per_call_table(args)
    return 0


def throughput_table(args: argparse.Namespace) -> None:
    """Part 1: samples/s of one large release, seeded and from the OS."""
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


def privacy_table() -> None:
    """Part 2: what the old float sampler and the integer weights each realize, computed exactly."""
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


def rounding_table(n: int) -> None:
    """Part 3: the rounding's cost for the closed forms at ``n``."""
    print(f"\n# rounding to integer weights at n = {n} (closed forms)")
    print(f"{'mechanism':<10} {'alpha':>8} {'rounding lambda':>16} {'max|W/D-P|':>11} {'L0 change':>10} {'time s':>7}")
    for name in ("GM", "EM", "UM"):
        for alpha in ("1/2", "9/10", "99/100", "999/1000"):
            start = time.perf_counter()
            cert = design_named(name, n, alpha).released.certificate
            print(f"{name:<10} {alpha:>8} {cert.rounding_lambda:16.1e} {cert.max_abs_error:11.1e} "
                  f"{cert.objective_change:10.1e} {time.perf_counter() - start:7.2f}")


def run_child(src: Path, ns: list[int], seconds: float, samples: int) -> dict:
    """The per-call and array timings of the code under ``src``, measured in a child process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", _PER_CALL_CHILD, json.dumps(ns), str(seconds), str(samples)],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{src}: the child failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_call_table(args: argparse.Namespace) -> None:
    """Part 4: calls/s of one count per call, old code and new, each in its own child."""
    ns = [int(v) for v in args.percall_ns.split(",") if v]
    old = run_child(args.old_src, ns, args.percall_seconds, args.array_samples) if args.old_src.is_dir() else None
    new = run_child(SRC, ns, args.percall_seconds, args.array_samples)
    print(f"\n# one count per call: GM alpha=9/10, calls/s (best block within {args.percall_seconds} s), "
          f"old = {args.old_src if old else 'absent'}, load={os.getloadavg()[0]:.1f}")
    print(f"{'n':>5} {'call':<12} {'old/s':>10} {'new/s':>10} {'new/old':>8} {'>= 100k':>8}")
    for n in ns:
        for case in ("[c] seeded", "[c] OS", "c seeded", "c OS"):
            fast = new["per_call"][str(n)][case]
            slow = old["per_call"][str(n)][case] if old else float("nan")
            print(f"{n:>5} {case:<12} {slow:>10,.0f} {fast:>10,.0f} {fast / slow:>7.1f}x "
                  f"{'yes' if fast >= PER_CALL_TARGET else 'NO':>8}")
    if args.array_samples:
        print(f"\n# array path: {args.array_samples:,} draws in one call, GM n=40, best of 3 (s)")
        for label in ("seeded", "OS"):
            a, b = (old or {}).get(f"array {label}", float("nan")), new[f"array {label}"]
            print(f"{label:<7} old {a:7.3f}  new {b:7.3f}  old/new {a / b:5.2f}x")
    if "errors_s" in new:
        n, took = new["errors_s"]
        print(f"\n# exact expected errors (release_errors) at n = {n}: {took:.3f} s")


if __name__ == "__main__":
    raise SystemExit(main())
