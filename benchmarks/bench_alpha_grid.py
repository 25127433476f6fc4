"""The alpha grid at n = 1024: every objective on the property sets of the large-n path, one fresh process per row.

Rows (each a new process running ``design_lp`` end to end, release weights included; wall time
inside it, peak resident set from ``wait4``, whether the answer is proven optimal, its gap and the
strategy that answered):

* ``--alphas`` (default :data:`ALPHAS`: 0.5, 0.55, ..., 0.95, 0.97, 0.99 and 10/11);
* ``--objectives`` (default L0, L0d:1, L1, L2);
* ``--sets`` (default WM; ``all``: :data:`bench_large_objectives.L0_SETS`, the sets with CM or CH
  that take the large-n path).

``--baseline DIR`` is another checkout's ``src`` (e.g. a worktree of the previous main), run in the
same sitting with ``--baseline-timeout`` seconds per row (a row not done by then is reported as
such, and the ratio is a lower bound).  ``--timeout`` stops a row of this checkout likewise.
``--time-limit S`` passes ``time_limit=S`` to ``design_lp`` in every row of both checkouts: a row no
fast path proves then answers with the best design proven feasible and its gap (shown relative to
its objective) instead of the memory bound's refusal.

    .venv/bin/python benchmarks/bench_alpha_grid.py --objectives L1,L2 --baseline ../base/src

Targets: every row <= 30 s and <= 2 GB, proven.
"""

from __future__ import annotations

import argparse
import os
import time
from fractions import Fraction
from pathlib import Path

from bench_large_objectives import DESIGN, L0_SETS, NEW_SRC, cell, measured, ratio

ALPHAS = tuple(f"{k / 100:g}" for k in range(50, 100, 5)) + ("0.97", "0.99", "10/11")
"""The grid: 0.5 to 0.95 by 0.05, then 0.97, 0.99 and 10/11 (exact)."""

WM = ("RM", "CM", "WH", "S")


def properties(name: str) -> tuple[str, ...]:
    """A set's properties: ``WM`` is WH+RM+CM+S; any other name is its ``+``-joined properties."""
    return WM if name == "WM" else tuple(name.split("+"))


def alpha_value(text: str) -> str:
    """The alpha handed to ``design_lp``: a decimal as written, ``p/q`` as its exact fraction text."""
    return str(Fraction(text)) if "/" in text else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", default=",".join(ALPHAS), help="comma-separated alphas (p/q allowed)")
    parser.add_argument("--objectives", default="L0,L0d:1,L1,L2", help="comma-separated objectives")
    parser.add_argument("--sets", default="WM", help="comma-separated property sets, or 'all' (L0_SETS)")
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--timeout", type=float, default=None, help="seconds per row of this checkout")
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, run in the same sitting")
    parser.add_argument("--baseline-timeout", type=float, default=60.0)
    parser.add_argument("--time-limit", type=float, default=None,
                        help="design_lp's time_limit in every row (both checkouts): past the memory bound the "
                             "best design proven feasible, with its gap relative to its objective")
    args = parser.parse_args(argv)
    sets = L0_SETS if args.sets == "all" else tuple(args.sets.split(","))
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# the alpha grid at n = {args.n}; cpus {os.cpu_count()}; {when}")
    print(f"{'row':<30} {'load':>4} | {'new: wall, peak RSS, proven, gap, answered by':<75} | baseline | ratio")
    for name in sets:
        for objective in args.objectives.split(","):
            for alpha in args.alphas.split(","):
                code = DESIGN.format(n=args.n, alpha=alpha_value(alpha), props=properties(name), objective=objective,
                                     time_limit=args.time_limit)
                load = os.getloadavg()[0]
                new = measured(code, NEW_SRC, args.timeout)
                base = measured(code, args.baseline, args.baseline_timeout) if args.baseline else None
                label = f"{objective} {name} a={alpha}"
                print(f"{label:<30} {load:>4.1f} | {cell(new):<75} | {cell(base)} | {ratio(new, base)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
