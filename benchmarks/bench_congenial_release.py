"""The release conditioned on its total (countdp.invariants.group_total) and its guarantee, timed.

Part 1: one release per point, each in a fresh process: ``G`` groups of size ``n`` (EM at alpha
9/10, rounded to K = 62; designing the mechanism is not timed), true counts uniform at random (or
``--counts zero|full``), bits from the OS's secure source.  Printed: the time to build the sampler
(tilt and fixed-point tree), the time of one draw, their sum (the time of a release), the peak RSS
of the process and above a process that only imported the library, the CPU time of build and draw
(less sensitive to other load on the machine than the wall clock), and the data-dependent events
of the draw (refinements, extra bits of U) with the bound on their probability.  ``--exact-up-to G``
also times the exact method for ``G`` up to that many groups.

Part 2: the guarantee: ``proven_bound`` for one size and for the mix of sizes 5..50, GM and EM,
``exact_worst_ratio`` on a small case, and ``target_alpha`` for the mix.

    .venv/bin/python benchmarks/bench_congenial_release.py --quick
    .venv/bin/python benchmarks/bench_congenial_release.py --sizes 10,50,200 --groups 10,100,1000,10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from countdp.invariants.guarantee import exact_worst_ratio, proven_bound, target_alpha  # noqa: E402
from countdp.mechanisms.closed_forms import explicit_fair, geometric  # noqa: E402
from countdp.privacy.rounding import round_to_release  # noqa: E402

SRC = Path(__file__).resolve().parent.parent / "src"

_CHILD = r"""
import json, resource, sys, time
from fractions import Fraction
import numpy as np
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.privacy.rounding import round_to_release
from countdp.invariants.group_total import GroupTotalSampler, GroupTotalSettings
G, n, counts, method = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
out = {"baseline_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
if G:
    m = round_to_release(explicit_fair(n, 0.9), Fraction(9, 10))
    x = {"zero": np.zeros(G, int), "full": np.full(G, n)}.get(counts, np.random.default_rng(0).integers(0, n + 1, G))
    start, cpu = time.perf_counter(), time.process_time()
    sampler = GroupTotalSampler([m] * G, x, GroupTotalSettings(method=method))
    built, built_cpu = time.perf_counter(), time.process_time()
    y, report = sampler.draw_with_report()
    out.update(build_s=built - start, draw_s=time.perf_counter() - built, cpu_s=time.process_time() - cpu,
               ok=bool(y.sum() == x.sum()), refinements=report.refinements, extensions=report.extensions,
               event_bound=report.event_bound)
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(G: int, n: int, counts: str, method: str, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(G), str(n), counts, method], env=env,
                              capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return {"timeout": True}
    except subprocess.CalledProcessError as failed:
        return {"error": failed.stderr.strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def part_one(args: argparse.Namespace) -> None:
    baseline = child(0, 1, "", "lazy", args.timeout)["baseline_mb"]
    print(f"# one release per point (fresh process; baseline RSS {baseline:.0f} MB), counts: {args.counts}")
    print(f"{'method':>6} {'n':>5} {'G':>6} {'build s':>8} {'draw s':>7} {'release s':>9} {'CPU s':>7} "
          f"{'peak MB':>8} {'above MB':>8} {'refined':>7} {'ext':>4} {'event bound':>11}")
    for n in args.sizes:
        for G in args.groups:
            for method in ("lazy", "exact") if G <= args.exact_up_to else ("lazy",):
                r = child(G, n, args.counts, method, args.timeout)
                if "build_s" not in r:
                    print(f"{method:>6} {n:>5} {G:>6} {'timeout' if r.get('timeout') else r.get('error')}")
                    continue
                print(f"{method:>6} {n:>5} {G:>6} {r['build_s']:8.2f} {r['draw_s']:7.2f} "
                      f"{r['build_s'] + r['draw_s']:9.2f} {r['cpu_s']:7.2f} {r['peak_mb']:8.0f} "
                      f"{r['peak_mb'] - baseline:8.0f} "
                      f"{r['refinements']:7d} {r['extensions']:4d} {r['event_bound']:11.1e}"
                      + ("" if r["ok"] else "  TOTAL NOT KEPT"), flush=True)


def part_two(quick: bool) -> None:
    forms = {"GM": geometric, "EM": explicit_fair}
    mixes = {"all 10": [10] * 100, "5..50": list(range(5, 51)) * 2, "all 50": [50] * 20}
    if not quick:
        mixes["all 200"] = [200] * 5
    print("\n# proven_bound (valid for every total and dataset with these groups)")
    print(f"{'family':>6} {'alpha':>5} {'sizes':>8} {'classes':>7} {'seconds':>8} {'ratio R':>10} {'gamma':>7} "
          f"{'Thm 2.1':>7}")
    for family in ("GM", "EM"):
        for alpha in ("2/3", "9/10"):
            for label, sizes in mixes.items():
                by_size = {n: round_to_release(forms[family](n, float(Fraction(alpha))), Fraction(alpha))
                           for n in set(sizes)}
                start = time.perf_counter()
                found = proven_bound([by_size[n] for n in sizes])
                print(f"{family:>6} {alpha:>5} {label:>8} {len(by_size):7d} {time.perf_counter() - start:8.2f} "
                      f"{float(found.ratio):10.6f} {found.gamma:7.4f} {str(found.consistent_with_gong_meng()):>7}",
                      flush=True)
    mechanisms = [round_to_release(geometric(n, 2 / 3), Fraction(2, 3)) for n in (3, 4, 4, 2)]
    start = time.perf_counter()
    exact = exact_worst_ratio(mechanisms, [3, 4, 4, 2], 6)
    print(f"\nexact_worst_ratio, GM 2/3, sizes 3,4,4,2, total 6: {time.perf_counter() - start:.2f} s, "
          f"R = {float(exact.ratio):.6f} (gamma {exact.gamma:.4f}); bound there "
          f"{float(proven_bound(mechanisms, 6).ratio):.6f}")
    sizes = list(range(5, 51, 5 if quick else 1))
    start = time.perf_counter()
    choice = target_alpha(sizes, "EM", "1/2")
    print(f"target_alpha(EM, target 1/2, sizes 5..50): {time.perf_counter() - start:.1f} s, per-group alpha "
          f"{float(choice.alpha):.6f}, release alpha {float(choice.guarantee.alpha):.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes 10,50 and G up to 1000")
    parser.add_argument("--sizes", default="10,50,200")
    parser.add_argument("--groups", default="10,100,1000,10000")
    parser.add_argument("--counts", choices=("random", "zero", "full"), default="random")
    parser.add_argument("--exact-up-to", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--skip-release", action="store_true")
    parser.add_argument("--skip-guarantee", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.groups = "10,50", "10,100,1000"
    args.sizes, args.groups = [int(v) for v in args.sizes.split(",")], [int(v) for v in args.groups.split(",")]
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    if not args.skip_release:
        part_one(args)
    if not args.skip_guarantee:
        part_two(args.quick)


if __name__ == "__main__":
    main()
