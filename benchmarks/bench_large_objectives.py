"""Every objective at n = 1024: the planner's design against another checkout's, one fresh process per row.

Rows (each a new process running ``design_lp`` end to end, release weights included; wall time
inside it, peak resident set from ``wait4``, whether the answer is proven optimal, its gap and the
strategy that answered):

* L1, L2 and L0d:1 at n = 1024, alpha = 0.9 on ``--objective-sets`` (default WM, WH+RM+CM+S; ``all``:
  :data:`L0_SETS`; the baseline runs the WM rows);
* L0 at n = 1024, alpha = 0.99 on ``--l0-sets`` (default WM; ``all``: :data:`L0_SETS`);
* ``--l0-only``: only the L0 rows (no L1, L2, L0d:1 rows at alpha = 0.9);
* ``--growth``: L0 on WM at n = 1024 for alpha in 0.95, 0.97, 0.98 (new code only; 0.99 is the row
  above), to see how the cost grows with ``1 / (1 - alpha)``.

``--baseline DIR`` is another checkout's ``src`` (e.g. a worktree of the previous main), run in the
same sitting with ``--baseline-timeout`` seconds per row (a row not done by then is reported as such).

    .venv/bin/python benchmarks/bench_large_objectives.py --baseline ../base/src --baseline-timeout 400

Targets: every row <= 30 s and <= 2 GB, proven.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from child_run import run_child

ROOT = Path(__file__).resolve().parent.parent
NEW_SRC = ROOT / "src"

DESIGN = """
import json, time
from countdp.design.designer import design_lp
t = time.perf_counter()
d = design_lp({n}, {alpha!r}, {props!r}, {objective!r}, time_limit={time_limit!r})
o = d.extra.get("optimality", {{}})
print(json.dumps({{"seconds": time.perf_counter() - t, "status": d.status, "gap": o.get("gap"),
                  "gap_rel": d.extra.get("stopped", {{}}).get("gap_rel"),
                  "method": d.method, "proven": bool(o.get("certified"))}}))
"""

WM = ("RM", "CM", "WH", "S")

L0_SETS = ("CH+WH+S", "CM+WH+S", "RH+CH+WH+S", "RH+CM+WH+S", "RM+CH+WH+S", "WM", "CM", "CH")
"""The property sets of ``--l0-sets all``: Figure 8's sets that take the large-n path (WH+S with CH,
CM, RH+CH, RH+CM, RM+CH or RM+CM, the last being WM), and CM and CH alone (no WH, no S).  The other
sets are GM's or EM's closed forms at this size."""


def measured(code: str, src: Path, timeout: float | None = None) -> dict:
    """Run one child; its JSON line (or its failure), wall seconds and peak RSS in MB (``wait4``)."""
    run = run_child([sys.executable, "-c", code], src, timeout)
    wall, rss, status = run["wall"], run["rss"], run["code"]
    if run["killed"]:
        return {"wall": wall, "status": f"not done in {timeout:.0f} s", "rss": rss}
    lines = [line for line in run["text"].splitlines() if line.startswith("{")]
    if status != 0 or not lines:
        last = (run["errors"].strip().splitlines() or ["(no message)"])[-1]
        return {"wall": wall, "status": f"exit {status}: {last[:60]}", "rss": rss}
    return {**json.loads(lines[-1]), "wall": wall, "rss": rss}


def cell(result: dict | None) -> str:
    if result is None:
        return ""
    if "proven" not in result:
        return f"{result['wall']:>7.1f} s {result['rss']:>6.0f} MB  {result['status']}"
    gap = "" if result.get("gap") is None else f"gap {result['gap']:.1e}"
    if result.get("gap_rel") is not None:  # stopped at the time limit: the gap relative to the objective
        gap = f"gap {100 * result['gap_rel']:.2g} %"
    proven = "proven" if result["proven"] else "NOT proven"
    return f"{result['wall']:>7.1f} s {result['rss']:>6.0f} MB  {proven:<10} {gap:<12} {result['method'][:26]}"


def ratio(new: dict, base: dict | None) -> str:
    """Baseline wall time over the new one; a lower bound (``>``) when the baseline was stopped."""
    if base is None:
        return ""
    bound = ">" if base["status"].startswith("not done") else ""
    return f"{bound}{base['wall'] / new['wall']:.1f}x"


def rows(args) -> list[tuple[str, int, str, tuple[str, ...], str, bool]]:
    """``(label, n, alpha, properties, objective, with baseline)`` of every row."""
    sets = L0_SETS if args.objective_sets == "all" else tuple(args.objective_sets.split(","))
    out = [] if args.l0_only else [(f"{objective} {name} n=1024 a=0.9", 1024, "0.9", _properties(name), objective,
                                    name == "WM") for name in sets for objective in ("L1", "L2", "L0d:1")]
    names = L0_SETS if args.l0_sets == "all" else tuple(args.l0_sets.split(","))
    for name in names:
        out.append((f"L0 {name} n=1024 a=0.99", 1024, "0.99", _properties(name), "L0", True))
    if args.growth:
        out += [(f"L0 WM n=1024 a={a} (growth)", 1024, a, WM, "L0", False) for a in ("0.95", "0.97", "0.98")]
    return out


def _properties(name: str) -> tuple[str, ...]:
    return WM if name == "WM" else tuple(name.split("+"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, run in the same sitting")
    parser.add_argument("--baseline-timeout", type=float, default=400.0)
    parser.add_argument("--timeout", type=float, default=None, help="seconds per row of the new code (default: none)")
    parser.add_argument("--l0-sets", default="WM",
                        help="comma-separated property sets of the alpha = 0.99 L0 rows, or 'all' (L0_SETS)")
    parser.add_argument("--objective-sets", default="WM",
                        help="comma-separated property sets of the L1, L2 and L0d:1 rows, or 'all' (L0_SETS)")
    parser.add_argument("--l0-only", action="store_true", help="only the L0 rows")
    parser.add_argument("--growth", action="store_true", help="also L0 WM at alpha 0.95, 0.97, 0.98 (new code)")
    args = parser.parse_args(argv)
    print(f"# every objective at n = 1024; cpus {os.cpu_count()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'row':<34} {'load':>4} | {'new: wall, peak RSS, proven, gap, answered by':<75} | baseline | ratio")
    for label, n, alpha, props, objective, with_base in rows(args):
        code = DESIGN.format(n=n, alpha=alpha, props=props, objective=objective, time_limit=None)
        load = os.getloadavg()[0]
        new = measured(code, NEW_SRC, args.timeout)
        base = measured(code, args.baseline, args.baseline_timeout) if args.baseline and with_base else None
        print(f"{label:<34} {load:>4.1f} | {cell(new):<75} | {cell(base)} | {ratio(new, base)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
