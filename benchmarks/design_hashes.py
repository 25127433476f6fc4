"""Hash every design over a grid that reaches every strategy of the design engine; compare two runs.

Each point is designed through the public API (``design_named`` / ``design_lp``) and recorded as
the SHA-256 of its matrix, of its released integer weights, and its status, objective value,
solver, method and answering strategy.  Run it on two checkouts and compare: a refactoring of the
engine must give 0 differences.

    PYTHONPATH=src .venv/bin/python benchmarks/design_hashes.py --out before.json
    .venv/bin/python benchmarks/design_hashes.py --out after.json --compare before.json
    .venv/bin/python benchmarks/design_hashes.py --quick --out q.json   # a few minutes less

The grid: every Figure-8 property set (BasicDP, WH+S plus each of the nine RH/RM/CH/CM choices,
all seven), the objectives L0, L0d:1, L1 and L2, n from 1 to 2048 (the large sizes with L0, where
the template path answers), alpha from 0.5 to 0.99, a prior, the minimax aggregate, each explicit
solver method, the plain cvxpy model, and the closed forms GM, EM and UM.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import sys
import time
from pathlib import Path

FIG8 = ((), ("WH", "S"), ("RH", "WH", "S"), ("RM", "WH", "S"), ("CH", "WH", "S"), ("CM", "WH", "S"),
        ("RH", "CH", "WH", "S"), ("RH", "CM", "WH", "S"), ("RM", "CH", "WH", "S"), ("RM", "CM", "WH", "S"),
        ("RH", "RM", "CH", "CM", "F", "WH", "S"))
"""BasicDP, the nine Figure-8 sets (WH + S + {none, RH, RM, CH, CM, RH+CH, RH+CM, RM+CH, RM+CM}), all seven."""


def grid(quick: bool) -> list[dict]:
    """The points: keyword arguments of :func:`design_one`."""
    pts: list[dict] = []
    small = (1, 2, 3, 5, 8, 13) if quick else (1, 2, 3, 4, 5, 8, 13, 15, 16, 17)
    for props in FIG8:
        for objective in ("L0", "L0d:1", "L1", "L2"):
            for n in small + ((24, 48) if quick else (24, 33, 48, 64, 96)):
                for alpha in ("0.62", "0.91"):
                    pts.append({"props": props, "objective": objective, "n": n, "alpha": alpha})
    for props in FIG8:  # the large-n template and the general paths beside it
        for n in ((160, 256) if quick else (160, 200, 256, 512)):
            pts.append({"props": props, "objective": "L0", "n": n, "alpha": "0.91"})
        for objective in ("L1", "L2"):
            pts.append({"props": props, "objective": objective, "n": 128, "alpha": "0.62"})
    for props in (("WH", "S"), ("RM", "CM", "WH", "S"), ("RH", "RM", "CH", "CM", "F", "WH", "S")):
        for n in ((1024,) if quick else (1024, 2048)):
            pts.append({"props": props, "objective": "L0", "n": n, "alpha": "0.91"})
        for n, alpha in ((32, "0.97"), (64, "0.99"), (128, "0.95"), (160, "0.97"), (256, "0.99")):
            pts.append({"props": props, "objective": "L0", "n": n, "alpha": alpha})
        pts.append({"props": props, "objective": "L0d:2", "n": 200, "alpha": "0.8"})
    for props in ((), ("WH", "S"), ("F",), ("CH", "RM")):  # a prior, minimax, explicit methods, cvxpy
        pts.append({"props": props, "objective": "L1", "n": 20, "alpha": "0.7", "weights": "binomial"})
        pts.append({"props": props, "objective": "L0", "n": 20, "alpha": "0.7", "weights": "binomial"})
        pts.append({"props": props, "objective": "L0", "n": 12, "alpha": "0.7", "aggregate": "max"})
        for method in ("simplex", "ipm"):
            pts.append({"props": props, "objective": "L1", "n": 40, "alpha": "0.7", "method": method})
        pts.append({"props": props, "objective": "L1", "n": 40, "alpha": "0.7", "backend": "cvxpy"})
        pts.append({"props": props, "objective": "L0", "n": 30, "alpha": "0.7", "solver": "CLARABEL"})
    for props in (("RH",), ("CH",), ("RM",), ("RH", "CH"), ("F",), ("RM", "WH")):  # S folded in, not asked
        for objective in ("L1", "L2", "L0d:1"):
            for alpha in ("0.62", "0.91"):
                pts.append({"props": props, "objective": objective, "n": 64, "alpha": alpha})
        pts.append({"props": props, "objective": "L1", "n": 160, "alpha": "0.8"})
    for props in (("CH",), ("RH", "CH"), ("RM",)):  # L0 near 1: folded Clarabel point
        pts.append({"props": props, "objective": "L0", "n": 256, "alpha": "0.99"})
    for objective in ("L1", "L2"):  # with S, near 1: the LP without S, symmetrized
        pts.append({"props": ("RM", "S"), "objective": objective, "n": 256, "alpha": "0.99"})
    for name in ("GM", "EM", "UM", "WM", "WH"):
        for n in (1, 7, 64, 300):
            for alpha in ("1/2", "0.9"):
                pts.append({"mechanism": name, "objective": "L0", "n": n, "alpha": alpha})
    return pts


def _digest(array) -> str:
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:20]


def design_one(point: dict) -> dict:
    """Design one point and return its record (or the error it raised)."""
    import numpy as np

    from countdp.design.designer import design_lp, design_named

    key = json.dumps(point, sort_keys=True)
    start = time.perf_counter()
    try:
        if "mechanism" in point:
            d = design_named(point["mechanism"], point["n"], point["alpha"], point["objective"])
        else:
            n = point["n"]
            weights = None
            if point.get("weights") == "binomial":
                from math import comb

                weights = np.array([comb(n, k) for k in range(n + 1)], float) / 2.0**n
            options = {k: point[k] for k in ("method", "backend", "aggregate", "solver") if k in point}
            d = design_lp(n, point["alpha"], point["props"], point["objective"], weights=weights, **options)
    except Exception as exc:  # noqa: BLE001 - the error is the record
        return {"key": key, "error": f"{type(exc).__name__}: {exc}"[:300], "seconds": time.perf_counter() - start}
    extra = d.extra or {}
    strategy = (extra.get("reductions") or [None])[-1]
    return {"key": key, "matrix": _digest(d.matrix), "released": _digest(d.released.weights),
            "status": d.status, "objective": repr(float(d.objective_value)), "solver": d.solver,
            "method": d.method, "strategy": strategy, "seconds": time.perf_counter() - start}


def compare(records: dict, reference: dict) -> list[str]:
    """One line per point whose record differs (timing aside)."""
    lines = []
    for key in sorted(set(records) | set(reference)):
        a, b = reference.get(key), records.get(key)
        if a is None or b is None:
            lines.append(f"{key}: only in {'the new run' if a is None else 'the reference'}")
            continue
        diff = [f for f in sorted(set(a) | set(b)) if f != "seconds" and a.get(f) != b.get(f)]
        if diff:
            lines.append(f"{key}: " + "; ".join(f"{f} {a.get(f)!r} -> {b.get(f)!r}" for f in diff))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--compare", type=Path, help="a previous run's JSON: print every difference")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--add-to", type=Path, help="a previous run's JSON: design only the points it lacks, "
                                                   "and write it with them added to --out")
    args = parser.parse_args(argv)
    points = grid(args.quick)
    known = json.loads(args.add_to.read_text()) if args.add_to else {}
    points = [p for p in points if json.dumps(p, sort_keys=True) not in known]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=20) as pool:
        rows = []
        for i, row in enumerate(pool.imap_unordered(design_one, points), 1):
            rows.append(row)
            if i % 50 == 0 or i == len(points):
                print(f"{i}/{len(points)} points, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    records = {**known, **{row["key"]: row for row in rows}}
    args.out.write_text(json.dumps(records, indent=1, sort_keys=True))
    errors = sum("error" in r for r in rows)
    slow = sorted(rows, key=lambda r: -r["seconds"])[:5]
    print(f"{len(rows)} designs ({errors} refused) in {time.perf_counter() - start:.0f} s; slowest: "
          + ", ".join(f"{r['seconds']:.1f} s" for r in slow))
    if args.compare is not None:
        lines = compare(records, json.loads(args.compare.read_text()))
        print("\n".join(lines) if lines else "0 differences")
        return 1 if lines else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
