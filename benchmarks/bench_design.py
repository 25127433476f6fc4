"""Design time, peak memory and DP certificate of LP designs vs n (fast path vs plain cvxpy).

Every point runs in its own subprocess with a wall-clock timeout, so a slow point cannot stall
the sweep and its peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) is its own.  For
each mechanism the sweep over ``n`` stops at the first point that times out.  The plain
formulation (``backend="cvxpy"``) is timed at ``--compare`` sizes in the same run, and the
ratio plain/fast is printed.

    .venv/bin/python benchmarks/bench_design.py                 # WM and WH, n = 64..2048
    .venv/bin/python benchmarks/bench_design.py --sweep         # objectives sweep, n = 41, 64, 128

The plain formulation is timed only at ``--compare`` sizes (default 64, 128, 256: above that
cvxpy's compile alone takes minutes).  ``gap`` is the proven optimality gap ``UB - LB`` of
``extra["optimality"]`` (``-`` for a closed form).
    /tmp/venv/bin/python benchmarks/bench_design.py --mechanisms WM --ns 64,128 --timeout 60
    /tmp/venv/bin/python benchmarks/bench_design.py --json out.json  # also save the rows
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

DEFAULT_NS = "64,128,256,512,1024,2048"


def run_point(mechanism: str, n: int, alpha: float, backend: str, method: str | None,
              objective: str) -> dict:
    """Run one design in this process and return its measurements (called in the child)."""
    import resource

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    from countdp.design.designer import design_named

    start = time.perf_counter()
    options = {"backend": backend}
    if method:
        options["method"] = method
    design = design_named(mechanism, n, alpha, objective=objective, **options)
    wall = time.perf_counter() - start
    cert = design.certificate
    return {
        "mechanism": mechanism, "n": n, "alpha": alpha, "backend": backend,
        "solver": design.solver, "method": design.method, "wall": wall,
        "solve_time": design.solve_time, "objective": design.objective_value,
        "certified": cert.certified, "violation_before": cert.violation_before,
        "repair_lambda": cert.repair_lambda,
        "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "import_rss_mb": base / 1024,
        "rows": design.extra.get("rows"), "cols": design.extra.get("cols"),
        "reductions": design.extra.get("reductions"), "status": design.status,
        "gap": design.extra.get("optimality", {}).get("gap"),
    }


def measure(mechanism: str, n: int, alpha: float, backend: str, method: str | None, objective: str,
            timeout: float) -> dict:
    """Run :func:`run_point` in a subprocess; ``{"timeout": True}`` if it overran."""
    cmd = [sys.executable, __file__, "--point", mechanism, str(n), str(alpha), backend, method or "",
           objective]
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"mechanism": mechanism, "n": n, "backend": backend, "timeout": True,
                "wall": time.perf_counter() - start}
    if out.returncode != 0:
        return {"mechanism": mechanism, "n": n, "backend": backend, "error": out.stderr.strip()[-400:]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall"] = time.perf_counter() - start
    return row


def fmt(row: dict) -> str:
    head = f"{row['mechanism']:>3} {row['n']:>5} {row['backend']:>6}"
    if row.get("timeout"):
        return f"{head}  TIMEOUT after {row['wall']:.0f} s"
    if "error" in row:
        return f"{head}  ERROR {row['error']}"
    return (f"{head} {row['solver'] + '/' + row['method']:>22} {row['wall']:9.2f} {row['maxrss_mb']:8.0f}"
            f" {row['violation_before']:10.1e} {row['repair_lambda']:9.1e} {str(row['certified']):>5}"
            f" {row['objective']:.10f} {_gap(row)}")


def _gap(row: dict) -> str:
    return "-" if row.get("gap") is None else f"gap={row['gap']:.1e} {row.get('status')}"


def sweep() -> int:
    """The objectives sweep: WM, WH, LP, LP+F, LP+CH+RM x 4 objectives x n x alpha; every design proven."""
    import itertools

    from countdp.design.designer import design_named

    failures = 0
    mechs = [("WM", ()), ("WH", ()), ("LP", ()), ("LP", ("F",)), ("LP", ("CH", "RM"))]
    for n, alpha, (mech, props), obj in itertools.product((41, 64, 128), (0.5, 0.62, 0.91, 0.99), mechs,
                                                          ("L0", "L0d:1", "L1", "L2")):
        start = time.perf_counter()
        try:
            d = design_named(mech, n, alpha, objective=obj, properties=props)
            status, gap = d.status, d.extra.get("optimality", {}).get("gap")
        except Exception as exc:  # report and count, do not stop the sweep
            status, gap = f"ERROR {exc}", None
        failures += status != "optimal"
        print(f"{mech}{'+'.join(('',) + props):>8} {obj:>6} n={n:>4} alpha={alpha:<5} "
              f"{time.perf_counter() - start:6.2f} s {status} gap={gap}", flush=True)
    print(f"# sweep: {failures} not proven optimal or failed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanisms", default="WM,WH")
    parser.add_argument("--ns", default=DEFAULT_NS)
    parser.add_argument("--alpha", type=float, default=0.91)
    parser.add_argument("--objective", default="L0")
    parser.add_argument("--method", default="", help="fast-path method (default: auto)")
    parser.add_argument("--compare", default="64,128,256", help="n at which to also time backend=cvxpy")
    parser.add_argument("--sweep", action="store_true", help="run the objectives sweep instead")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per point")
    parser.add_argument("--json", default="", help="also write all rows to this file")
    parser.add_argument("--point", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point:
        mech, n, alpha, backend, method, objective = args.point
        print(json.dumps(run_point(mech, int(n), float(alpha), backend, method or None, objective)))
        return 0

    if args.sweep:
        return sweep()
    ns = [int(v) for v in args.ns.split(",") if v]
    compare = {int(v) for v in args.compare.split(",") if v}
    print(f"# countdp design benchmark: alpha={args.alpha}, objective={args.objective}, "
          f"timeout {args.timeout:.0f} s/point, cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.1f}")
    print(f"{'mech':>4} {'n':>5} {'backend':>6} {'solver/method':>22} {'time_s':>9} {'rss_MB':>8}"
          f" {'viol_pre':>10} {'repair':>9} {'cert':>5} objective  optimality")
    rows = []
    for mech in [m.strip().upper() for m in args.mechanisms.split(",") if m.strip()]:
        fast_ok = True
        for n in ns:
            fast = None
            if fast_ok:
                fast = measure(mech, n, args.alpha, "highs", args.method or None, args.objective,
                               args.timeout)
                rows.append(fast)
                print(fmt(fast), flush=True)
                fast_ok = not fast.get("timeout") and "error" not in fast
            if n in compare:
                plain = measure(mech, n, args.alpha, "cvxpy", None, args.objective, args.timeout)
                rows.append(plain)
                print(fmt(plain), flush=True)
                if fast and "wall" in plain and not plain.get("timeout") and "error" not in plain \
                        and fast_ok:
                    ratio = plain["wall"] / fast["wall"]
                    gap = abs(plain["objective"] - fast["objective"])
                    print(f"    ratio cvxpy/fast at n={n}: {ratio:.1f}x  (|objective gap| = {gap:.1e})",
                          flush=True)
                    rows.append({"mechanism": mech, "n": n, "ratio": ratio, "objective_gap": gap})
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
