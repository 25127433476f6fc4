"""The large-n support dual (L0d, L1, L2) against the general path: one fresh process per point.

``before`` switches the support dual off (``SolverSettings.of(support_widths=())``), so L0d, L1 and L2
go to the general LP as on the commit before it; ``after`` is the default settings.  The two runs of a
point are made back to back (A/B on the same machine load).  One JSON line per run.

    .venv/bin/python benchmarks/bench_support_dual.py
    .venv/bin/python benchmarks/bench_support_dual.py --mechs WM --objectives L1 --alphas 0.62 --n 1024
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from countdp.design.designer import design_named
from countdp.design.settings import DEFAULT_SETTINGS, SolverSettings


def point(mode: str, mech: str, n: int, alpha: float, objective: str) -> dict:
    """One design in this process (the child)."""
    settings = SolverSettings.of(support_widths=()) if mode == "before" else DEFAULT_SETTINGS
    props = {"properties": ("CH", "RM")} if mech == "LP" else {}
    start = time.perf_counter()
    d = design_named(mech, n, alpha, objective=objective, settings=settings, **props)
    opt = d.extra["optimality"]
    return {"mode": mode, "mech": mech if mech != "LP" else "LP+(CH,RM)", "n": n, "alpha": alpha,
            "objective": objective, "seconds": round(time.perf_counter() - start, 2),
            "certified": opt.get("certified"), "gap": opt.get("gap"), "value": opt.get("primal_objective"),
            "large_n": d.extra.get("large_n", {}).get("used")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechs", default="WM,LP")
    parser.add_argument("--objectives", default="L0d:1,L1,L2")
    parser.add_argument("--alphas", default="0.5,0.62,0.91,0.99")
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, mech, n, alpha, objective = args.child
        print(json.dumps(point(mode, mech, int(n), float(alpha), objective)), flush=True)
        return
    for mech in args.mechs.split(","):
        for objective in args.objectives.split(","):
            for alpha in args.alphas.split(","):
                for mode in ("after", "before"):
                    cmd = [sys.executable, __file__, "--child", mode, mech, str(args.n), alpha, objective]
                    try:
                        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                        print(out.stdout.strip() or json.dumps({"mode": mode, "error": out.stderr[-300:]}), flush=True)
                    except subprocess.TimeoutExpired:
                        print(json.dumps({"mode": mode, "mech": mech, "alpha": alpha, "objective": objective,
                                          "error": f"timeout {args.timeout:g} s"}), flush=True)


if __name__ == "__main__":
    main()
