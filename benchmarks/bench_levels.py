"""GM multi-level release: the matrix chain against the structural chain, one fresh process per point.

Levels 1/2, 2/3, 9/10.  Each point builds and certifies a chain in its own process (so the peak
resident set, from ``wait4``, is that point's) and then samples ``--samples`` counts at every
level from seeded 64-bit words (second words, when a draw over 2^124 needs one, from the same
generator).  At n = 10^3 both chains run (the matrix chain's largest n); beyond, only the
structural chain.  Prints a table and the 1-minute load average.

    .venv/bin/python benchmarks/bench_levels.py
    .venv/bin/python benchmarks/bench_levels.py --ns 1000,1000000 --samples 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_run import run_child  # noqa: E402

LEVELS = ("1/2", "2/3", "9/10")


def point(kind: str, n: int, samples: int) -> dict:
    """One chain in this process (the child): build + certificate, then sampling."""
    import numpy as np

    from countdp.multilevel.chain import build_level_chain
    from countdp.multilevel.structural_chain import build_structural_chain

    start = time.perf_counter()
    chain = build_structural_chain(n, LEVELS) if kind == "structural" else build_level_chain(n, LEVELS)
    holds = chain.certify().holds
    built = time.perf_counter() - start
    rng = np.random.default_rng(1)
    counts = rng.integers(0, n + 1, samples)
    words = rng.integers(0, 2**64, (len(LEVELS), samples), dtype=np.uint64)
    start = time.perf_counter()
    chain.sample(counts, words, second=lambda rows: rng.integers(0, 2**64, len(rows), dtype=np.uint64))
    sampled = time.perf_counter() - start
    return {"kind": kind, "n": n, "K": chain.K, "holds": holds, "build_certify_s": built,
            "counts_per_s": samples / sampled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="1000,10000,100000,1000000")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--point", nargs=3, metavar=("KIND", "N", "SAMPLES"))
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point[0], int(args.point[1]), int(args.point[2]))))
        return
    src = Path(__file__).resolve().parents[1] / "src"
    print(f"# load average (1 min) {os.getloadavg()[0]:.2f}; levels {','.join(LEVELS)}; "
          f"{args.samples:,} counts sampled at every level")
    print(f"{'chain':<11} {'n':>9} {'K':>4} {'certified':>9} {'build+cert s':>12} {'peak RSS MB':>11} "
          f"{'counts/s':>12}")
    for n in (int(v) for v in args.ns.split(",")):
        for kind in ("matrix", "structural") if n <= 1000 else ("structural",):
            out = run_child([sys.executable, __file__, "--point", kind, str(n), str(args.samples)], src,
                            args.timeout)
            if out["code"] != 0 or out["killed"]:
                print(f"{kind:<11} {n:>9} failed: {out['errors'].strip()[-200:] or 'timeout'}")
                continue
            row = json.loads(out["text"].strip().splitlines()[-1])
            print(f"{kind:<11} {n:>9} {row['K']:>4} {row['holds']!s:>9} {row['build_certify_s']:>12.3f} "
                  f"{out['rss']:>11.0f} {row['counts_per_s']:>12,.0f}")


if __name__ == "__main__":
    main()
