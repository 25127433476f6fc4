"""The release conditioned on its total at the sizes of a real table: this checkout against a baseline, same run.

Part 1, the sampler (:class:`countdp.invariants.group_total.GroupTotalSampler`, what
``bench_congenial_release.py`` times): ``G`` groups of size ``n`` (EM at alpha 9/10, rounded to
K = 62; designing the mechanism is not timed), true counts uniform at random, bits from the OS's
secure source; one fresh process per point and checkout.  Printed: the time to build the sampler
and of one draw, their sum, the process's CPU time over both, its peak RSS (``wait4``), the draw's
event bound and refinements, and the ratio baseline / this checkout of the wall time.  The baseline
(``--old-src``, a checkout's ``src``, e.g. a worktree of the previous main) runs the points with at
most ``--baseline-up-to`` groups times size, each within ``--baseline-timeout`` seconds.

Part 2 (``--cli``): ``countdp release --invariant total`` on a generated CSV of ``G`` groups of size
200 (EM at 9/10), as a new process: what a curator waits for (the calibration draw on public counts,
the real draw padded to twice its time, the guarantee, the files): wall time, the process's CPU time
(``RUSAGE_CHILDREN``; the padding sleeps) and peak RSS.

    .venv/bin/python benchmarks/bench_conditioned.py --old-src ../base/src
    .venv/bin/python benchmarks/bench_conditioned.py --old-src ../base/src --points 1000x200,10000x200 --cli 10000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_run import run_child  # noqa: E402

SRC = Path(__file__).resolve().parent.parent / "src"
POINTS = "1000x200,10000x200,100000x200,1000x2000,200x5000"

CHILD = r"""
import json, resource, sys, time
from fractions import Fraction
import numpy as np
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.privacy.rounding import round_to_release
from countdp.invariants.group_total import GroupTotalSampler
G, n = int(sys.argv[1]), int(sys.argv[2])
m = round_to_release(explicit_fair(n, 0.9), Fraction(9, 10))
x = np.random.default_rng(0).integers(0, n + 1, G)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start, cpu = time.perf_counter(), time.process_time()
sampler = GroupTotalSampler([m] * G, x)
built = time.perf_counter()
y, report = sampler.draw_with_report()
print(json.dumps({"build": built - start, "draw": time.perf_counter() - built, "cpu": time.process_time() - cpu,
                  "before": before, "ok": bool(y.sum() == x.sum()), "bound": report.event_bound,
                  "refined": report.refinements + report.extensions}))
"""

CLI = r"""
import sys
from countdp.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def point(src: Path, groups: int, size: int, timeout: float) -> dict:
    """One sampler build and draw in a fresh process on ``src``: its JSON line plus wall and peak RSS."""
    run = run_child([sys.executable, "-c", CHILD, str(groups), str(size)], src, timeout=timeout)
    if run["killed"] or run["code"] != 0:
        return {"failed": "timeout" if run["killed"] else (run["errors"].strip().splitlines() or ["error"])[-1]}
    return {**json.loads(run["text"].strip().splitlines()[-1]), "wall": run["wall"], "rss": run["rss"]}


def cells(found: dict) -> str:
    if "failed" in found:
        return f"| {found['failed'][:40]} | | | | | |"
    return (f"| {found['build']:.2f} | {found['draw']:.2f} | {found['build'] + found['draw']:.2f} | {found['cpu']:.2f} "
            f"| {found['rss']:.0f} | {found['bound']:.0e}{'' if found['ok'] else ' TOTAL NOT KEPT'} |")


def part_one(args: argparse.Namespace) -> None:
    print(f"\n## the sampler: build + one draw (fresh process; load {os.getloadavg()[0]:.1f}, cpus {os.cpu_count()})\n")
    print("| G x n | code | build s | draw s | release s | CPU s | peak MB | event bound | old / new: release, CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for groups, size in args.points:
        new = point(SRC, groups, size, args.timeout)
        print(f"| {groups:,} x {size:,} | new {cells(new)} |", flush=True)
        if args.old_src is None or groups * size > args.baseline_up_to:
            continue
        old = point(args.old_src, groups, size, args.baseline_timeout)
        ratio = (f"{(old['build'] + old['draw']) / (new['build'] + new['draw']):.1f}, {old['cpu'] / new['cpu']:.1f}"
                 if "failed" not in old and "failed" not in new else "")
        print(f"| {groups:,} x {size:,} | old {cells(old)} {ratio} |", flush=True)


def cli_run(src: Path, table: Path, out: Path, timeout: float) -> dict:
    """``countdp release --invariant total`` as a new process on ``src``."""
    arguments = ["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--keep", "id,n",
                 "--mechanism", "EM", "--alpha", "9/10", "--invariant", "total", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = run_child([sys.executable, "-c", CLI, *arguments], src, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {**run, "cpu": cpu, "ok": run["code"] == 0 and not run["killed"]}


def part_two(args: argparse.Namespace) -> None:
    print(f"\n## `countdp release --invariant total`, groups of size 200 (load {os.getloadavg()[0]:.1f})\n")
    print("| G | code | wall s | CPU s | peak MB | old / new: wall, CPU |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for groups in args.cli:
            table = Path(folder) / f"t{groups}.csv"
            import numpy as np  # (only here: the parent process stays light)
            counts = np.random.default_rng(1).integers(0, 201, groups)
            table.write_text("id,n,c\n" + "".join(f"g{k},200,{c}\n" for k, c in enumerate(counts)))
            runs = {"new": cli_run(SRC, table, Path(folder) / "new.csv", args.timeout)}
            if args.old_src is not None and groups * 200 <= args.baseline_up_to:
                runs["old"] = cli_run(args.old_src, table, Path(folder) / "old.csv", args.baseline_timeout)
            for code, run in runs.items():
                wall = f"{run['wall']:.1f}" if run["ok"] else ("timeout" if run["killed"] else "failed")
                ratio = (f"{run['wall'] / runs['new']['wall']:.1f}, {run['cpu'] / runs['new']['cpu']:.1f}"
                         if code == "old" and run["ok"] and runs["new"]["ok"] else "")
                print(f"| {groups:,} | {code} | {wall} | {run['cpu']:.1f} | {run['rss']:.0f} | {ratio} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", default=POINTS, help="G x n, comma separated")
    parser.add_argument("--old-src", type=Path, default=None, help="the baseline checkout's src (same sitting)")
    parser.add_argument("--baseline-up-to", type=int, default=2_000_000, help="largest G * n the baseline runs")
    parser.add_argument("--baseline-timeout", type=float, default=900.0)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--cli", default="", help="G for the command-line rows, comma separated (e.g. 10000)")
    args = parser.parse_args()
    args.points = [tuple(int(v) for v in p.split("x")) for p in args.points.split(",") if p]
    args.cli = [int(v) for v in args.cli.split(",") if v]
    print("# the release conditioned on its total: EM at alpha 9/10, random counts, bits from the OS")
    part_one(args)
    if args.cli:
        part_two(args)


if __name__ == "__main__":
    main()
