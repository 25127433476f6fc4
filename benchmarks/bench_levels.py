"""Multi-level release: GM's matrix and structural chains, and EM, WM, WH chains against the old code.

Levels 1/2, 2/3, 9/10.  Each point builds and certifies a chain in its own process (so the peak
resident set, from ``wait4``, is that point's) and then samples ``--samples`` counts at every
level from seeded 64-bit words (second words, when a draw over 2^124 needs one, from the same
generator).

Part 1, GM: at n = 10^3 both chains run (the matrix chain's largest n for GM); beyond, only the
structural chain.  Part 2, EM, WM, WH (``--families``) at ``--family-ns`` (default 1024, the new
limit), and at the old code's limits (EM 60, WM 100, WH 100) both with this checkout and with the
old one (``--old-src``, default ``/work/base/src``, a checkout before the solved transitions;
skipped if absent): time and memory ratios old/new at the old limits, and this code at 1024
against the old code at its limit.  The "max dev" column is the certificate's largest
``max_abs_deviation`` over the levels (distance of a released level from ``M(n, alpha_k)``).
Prints tables and the 1-minute load average.

    .venv/bin/python benchmarks/bench_levels.py --old-src /work/base-chains/src
    .venv/bin/python benchmarks/bench_levels.py --ns 1000,1000000 --families EM --family-ns 512,1024
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
SRC = Path(__file__).resolve().parents[1] / "src"
OLD_LIMITS = {"EM": 60, "WM": 100, "WH": 100}
"""The largest n of each family's chain in the old code (ChainSettings.max_em_n, max_design_n)."""
HEADER = (f"{'chain':<11} {'code':<4} {'n':>9} {'K':>4} {'certified':>9} {'build+cert s':>12} {'peak RSS MB':>11} "
          f"{'counts/s':>12} {'max dev':>8}")


def point(kind: str, n: int, samples: int) -> dict:
    """One chain in this process (the child): build + certificate, then sampling.  ``kind``: structural,
    matrix (GM's matrix chain) or a family's name (EM, WM, WH)."""
    import numpy as np

    from countdp.multilevel.chain import build_level_chain
    from countdp.multilevel.structural_chain import build_structural_chain

    start = time.perf_counter()
    if kind == "structural":
        chain = build_structural_chain(n, LEVELS)
    else:
        chain = build_level_chain(n, LEVELS, mechanism="GM" if kind == "matrix" else kind)
    cert = chain.certify()
    built = time.perf_counter() - start
    rng = np.random.default_rng(1)
    counts = rng.integers(0, n + 1, samples)
    words = rng.integers(0, 2**64, (len(LEVELS), samples), dtype=np.uint64)
    start = time.perf_counter()
    chain.sample(counts, words, second=lambda rows: rng.integers(0, 2**64, len(rows), dtype=np.uint64))
    sampled = time.perf_counter() - start
    deviation = max(float(v.max_abs_deviation) for v in cert.levels)
    return {"kind": kind, "n": n, "K": chain.K, "holds": cert.holds, "build_certify_s": built,
            "counts_per_s": samples / sampled, "deviation": deviation}


def measured(kind: str, n: int, samples: int, src: Path, timeout: float) -> dict | None:
    """One point in a fresh process importing ``src``; prints its row (or why it failed) and returns it."""
    out = run_child([sys.executable, __file__, "--point", kind, str(n), str(samples)], src, timeout)
    code = "new" if src == SRC else "old"
    if out["code"] != 0 or out["killed"]:
        reason = (out["errors"].strip().splitlines() or ["timeout"])[-1][:160]
        print(f"{kind:<11} {code:<4} {n:>9} failed: {'timeout' if out['killed'] else reason}")
        return None
    row = json.loads(out["text"].strip().splitlines()[-1])
    row["rss"] = out["rss"]
    print(f"{kind:<11} {code:<4} {n:>9} {row['K']:>4} {row['holds']!s:>9} {row['build_certify_s']:>12.3f} "
          f"{row['rss']:>11.0f} {row['counts_per_s']:>12,.0f} {row['deviation']:>8.1e}")
    return row


def families(args: argparse.Namespace) -> None:
    """Part 2: EM, WM, WH at the new sizes, and at the old limits with both checkouts; then the ratios."""
    old = args.old_src if args.old_src.is_dir() else None
    print(f"\n# EM, WM, WH chains; old code: {old or 'absent'}")
    print(HEADER)
    rows: dict[tuple[str, str, int], dict | None] = {}
    for kind in args.families.split(","):
        limit = OLD_LIMITS[kind]
        if old is not None:
            rows["old", kind, limit] = measured(kind, limit, args.samples, old, args.timeout)
        rows["new", kind, limit] = measured(kind, limit, args.samples, SRC, args.timeout)
        for n in (int(v) for v in args.family_ns.split(",")):
            rows["new", kind, n] = measured(kind, n, args.samples, SRC, args.timeout)
    if old is None:
        return
    print("\n# ratios (old / new); 'new at n vs old at its limit' compares this code at n with the old code's largest")
    print(f"{'chain':<6} {'n':>6} {'time old/new':>12} {'RSS old/new':>11}   {'n':>6} {'new s / old s':>13}")
    for kind in args.families.split(","):
        limit = OLD_LIMITS[kind]
        before, after = rows.get(("old", kind, limit)), rows.get(("new", kind, limit))
        if before is None or after is None:
            continue
        same = (f"{kind:<6} {limit:>6} {before['build_certify_s'] / after['build_certify_s']:>12.1f} "
                f"{before['rss'] / after['rss']:>11.2f}")
        for n in (int(v) for v in args.family_ns.split(",")):
            large = rows.get(("new", kind, n))
            if large is not None:
                print(f"{same}   {n:>6} {large['build_certify_s'] / before['build_certify_s']:>13.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="1000,10000,100000,1000000", help="GM's sizes (empty: skip GM)")
    parser.add_argument("--families", default="EM,WM,WH", help="families of part 2 (empty: skip part 2)")
    parser.add_argument("--family-ns", default="1024")
    parser.add_argument("--old-src", type=Path, default=Path("/work/base/src"))
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--point", nargs=3, metavar=("KIND", "N", "SAMPLES"))
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point[0], int(args.point[1]), int(args.point[2]))))
        return
    print(f"# load average (1 min) {os.getloadavg()[0]:.2f}; levels {','.join(LEVELS)}; "
          f"{args.samples:,} counts sampled at every level")
    if args.ns:
        print(HEADER)
        for n in (int(v) for v in args.ns.split(",")):
            for kind in ("matrix", "structural") if n <= 1000 else ("structural",):
                measured(kind, n, args.samples, SRC, args.timeout)
    if args.families:
        families(args)
    print(f"# load average (1 min) at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
