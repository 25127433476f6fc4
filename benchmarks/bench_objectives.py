"""Every objective on every named property set: designed, certified alpha-DP, proven optimal.

    .venv/bin/python benchmarks/bench_objectives.py [--ns 41,64,128] [--alphas 0.5,0.62,0.91,0.99]
    .venv/bin/python benchmarks/bench_objectives.py --ns 256 --alphas 0.62 --objectives L1,L2 --cases WM,LP+F
    .venv/bin/python benchmarks/bench_objectives.py --ns 256 --timeout 150   # each case in a fresh process
    .venv/bin/python benchmarks/bench_objectives.py --ns 256 --alphas 0.99 --cases all --timeout 60

One row per case (mechanism and properties, objective, n, alpha): the design time, the
optimality gap relative to the objective, whether the gap closed (``proven``), whether the
released integer weights pass the exact alpha-DP test (``certified``), and the method that
answered.  With ``--timeout`` every case runs in a fresh process, stopped after that many
seconds (reported as a timeout), and a reference design (:data:`REFERENCE`) is timed the same way
before and after the sweep, with the date and the load: these machines' speed drifts by 2 to 3
times over a day, so sweeps from different hours compare only through it.  ``--cases all`` runs
the LP with each of the 48 distinct property sets (every subset of the seven properties, less the
rows others imply).  Exit status 1 if any case fails, times out, is not proven or is not certified.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import time

from countdp.design.designer import DesignError, design_named
from countdp.design.reduce import implied_drops
from countdp.design.reductions.fold_symmetry import SYMMETRIZED
from countdp.design.reductions.relax_cm import FACE, RELAXATION
from countdp.design.solvers.solved import INTERIOR_GUIDE
from countdp.privacy.exact import exact_dp_check
from countdp.values.properties import PROPERTIES

CASES = (("WM", ()), ("WH", ()), ("LP", ()), ("LP", ("F",)), ("LP", ("CH", "RM")))
"""The mechanisms and property sets of the sweep."""


def distinct_property_sets() -> list[tuple[str, ...]]:
    """Every subset of the seven properties with the implied ones removed, each once: 48 LPs."""
    found = {}
    for k in range(len(PROPERTIES) + 1):
        for subset in itertools.combinations(PROPERTIES, k):
            drops = implied_drops(subset)
            found.setdefault(tuple(p for p in subset if p not in drops), None)
    return list(found)


def case_label(mechanism: str, props: tuple[str, ...]) -> str:
    return mechanism + ("+" + "+".join(props) if props else "")


OBJECTIVES = ("L0", "L0d:1", "L1", "L2")

REFERENCE = ("WM", (), "L0", 256, 0.91)
"""The design timed before and after a sweep run with ``--timeout`` (``mechanism, properties,
objective, n, alpha``): WM at n = 256, the large-n table's middle row."""


def run_case(mechanism: str, props: tuple[str, ...], objective: str, n: int, alpha: float) -> dict:
    """Design one case; a dict with the time, gap, verdicts and method (or the error)."""
    row = {"case": f"{case_label(mechanism, props)} {objective} n={n} a={alpha}"}
    start = time.perf_counter()
    try:
        design = design_named(mechanism, n, alpha, objective=objective, properties=props)
    except DesignError as exc:
        return {**row, "seconds": time.perf_counter() - start, "error": str(exc)}
    opt = design.extra.get("optimality", {})
    method = ((opt["guide"] if opt.get("guide", "").startswith(INTERIOR_GUIDE) else f"guided by {opt['guide']}")
              if opt.get("guide") else opt.get("method", design.method))
    marks = [r for r in design.extra.get("reductions", ()) if r in (RELAXATION, FACE, SYMMETRIZED)]
    if opt.get("dual_repair"):
        marks.append("dual repaired")
    if marks:
        method += f" ({'; '.join(marks)})"
    exact = exact_dp_check(design.released.weights, design.alpha_exact, design.released.K)
    gap = opt.get("gap", float("nan"))
    return {**row, "seconds": time.perf_counter() - start,
            "gap_rel": gap / max(1.0, abs(opt.get("upper_bound", 1.0))),
            "proven": bool(opt.get("certified")) and design.status == "optimal",
            "certified": exact.holds,
            "method": method}


def run_isolated(args: tuple, timeout: float) -> dict:
    """:func:`run_case` in a fresh process, stopped after ``timeout`` seconds."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(run_case, args)
        try:
            return pending.get(timeout)
        except multiprocessing.TimeoutError:
            mechanism, props, objective, n, alpha = args
            return {"case": f"{case_label(mechanism, props)} {objective} n={n} a={alpha}", "seconds": timeout,
                    "error": f"timed out after {timeout:g} s"}


def reference_line(timeout: float) -> str:
    """One comment line: :data:`REFERENCE`'s time in a fresh process, the UTC time and the load."""
    row = run_isolated(REFERENCE, timeout)
    took = f"failed ({row['error']})" if "error" in row else f"{row['seconds']:.2f} s"
    return (f"# reference {row['case']}: {took}; {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, "
            f"load {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", default="41,64,128", help="comma-separated group sizes")
    parser.add_argument("--alphas", default="0.5,0.62,0.91,0.99", help="comma-separated alphas")
    parser.add_argument("--objectives", default=",".join(OBJECTIVES), help="comma-separated objectives")
    parser.add_argument("--cases", default=",".join(case_label(*c) for c in CASES),
                        help="comma-separated cases (WM, WH, LP, LP+F, LP+CH+RM), or 'all': the LP with "
                             "every distinct property set")
    parser.add_argument("--require", default="",
                        help="with --cases all: only the property sets holding every one of these (e.g. F)")
    parser.add_argument("--require-any", default="",
                        help="with --cases all: only the property sets holding at least one of these (e.g. CM,S)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per case, each in a fresh process (default: in this process, no limit)")
    args = parser.parse_args(argv)
    every, some = (set(filter(None, v.split(","))) for v in (args.require, args.require_any))
    if (every or some) and args.cases != "all":
        parser.error("--require and --require-any select among --cases all")
    unknown = set(args.cases.split(",")) - {case_label(*c) for c in CASES}
    if unknown and args.cases != "all":
        parser.error(f"unknown case(s) {', '.join(sorted(unknown))}; choose from "
                     f"{', '.join(case_label(*c) for c in CASES)} or 'all'")
    cases = ([("LP", props) for props in distinct_property_sets()
              if every <= set(props) and (not some or some & set(props))] if args.cases == "all"
             else [c for c in CASES if case_label(*c) in args.cases.split(",")])
    ns = [int(v) for v in args.ns.split(",")]
    alphas = [float(v) for v in args.alphas.split(",")]
    if args.timeout is not None:
        print(reference_line(args.timeout), flush=True)
    print(f"{'case':<36} {'time s':>7} {'gap/obj':>9} {'proven':>6} {'certified':>9}  method")
    bad = 0
    for n in ns:
        for alpha in alphas:
            for mechanism, props in cases:
                for objective in args.objectives.split(","):
                    case = (mechanism, props, objective, n, alpha)
                    row = run_case(*case) if args.timeout is None else run_isolated(case, args.timeout)
                    if "error" in row:
                        bad += 1
                        print(f"{row['case']:<36} {row['seconds']:>7.2f}  FAILED: {row['error']}", flush=True)
                        continue
                    bad += not (row["proven"] and row["certified"])
                    print(f"{row['case']:<36} {row['seconds']:>7.2f} {row['gap_rel']:>9.1e} "
                          f"{'yes' if row['proven'] else 'NO':>6} {'yes' if row['certified'] else 'NO':>9}  "
                          f"{row['method']}", flush=True)
    if args.timeout is not None:
        print(reference_line(args.timeout), flush=True)
    print(f"# {bad} case(s) failed, not proven or not certified")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
