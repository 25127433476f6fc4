"""Groups of any size: structural mechanisms against the matrix path, one fresh process per row, same run.

Rows (each a new process; wall time inside it and its peak resident set from ``wait4``):

* GM, EM and WM (under L0, alpha 9/10) at n = 10^4, 10^6, 10^7: time to a certified mechanism
  (WM's includes designing and proving its canonical design, once per process).  New code: the structural
  form (:func:`countdp.design.forms.structural_form`, certificate included); baseline:
  ``design_named`` (the matrix and its release weights), which refuses sizes beyond memory;
* ``design_named("WM", n, 9/10)`` at n = 1009 (its canonical size) and 2048: the spread proven at
  n against the baseline's (the LP solved at n); ``--section named`` runs these alone;
* exact sampling at n = 10^6 from the OS's secure source (``os.urandom``, included in the time),
  10^7 draws over random inputs, in a release's batches of 65,536 rows; the baseline's matrix
  sampler at the largest n it builds quickly (n = 1024), in one call, is printed for reference;
* WM near alpha = 1 (97/100 and 99/100; ``--section near`` runs these alone): in one process, the corner
  form at n = 10^4, 10^6 and 10^7 (the first includes designing and proving its source design), then
  2M exact draws at n = 10^6 from the OS's source; the baseline's ``structural_form`` is asked the same;
* ``countdp release`` of a 1M-row Parquet table with group sizes up to 10^6 (GM, alpha 9/10,
  seeded, a fresh cache); the baseline gets ``--baseline-timeout`` seconds and 8 GiB of address
  space, then counts as refused.

``--baseline DIR`` is another checkout's ``src`` (e.g. a worktree of the previous main).

    .venv/bin/python benchmarks/bench_structural.py --baseline ../base/src

Targets: GM and EM <= 1 s and <= 100 MB at every n; >= 10 M samples/s; the table <= 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from child_run import run_child

ROOT = Path(__file__).resolve().parent.parent
NEW_SRC = ROOT / "src"

MECHANISM = """
import json, time
from countdp.{module} import {function}
t = time.perf_counter()
try:
    m = {function}({mechanism!r}, {n}, "9/10")
    status = "certified"
except ValueError as exc:
    status = "refused: " + str(exc)[:70]
print(json.dumps({{"seconds": time.perf_counter() - t, "status": status}}))
"""

SAMPLING = """
import json, os, time
import numpy as np
from countdp.design.forms import structural_form
form = structural_form({mechanism!r}, {n}, "9/10")
N = {draws}
inputs = np.random.default_rng(0).integers(0, {n} + 1, N)
form.sample(inputs[:1000], np.frombuffer(os.urandom(8000), dtype=np.uint64))
t = time.perf_counter()
for start in range(0, N, 1 << 16):  # in a release's batches of 65,536 rows
    words = np.frombuffer(os.urandom(8 * min(1 << 16, N - start)), dtype=np.uint64)
    out = form.sample(inputs[start:start + (1 << 16)], words)
print(json.dumps({{"seconds": time.perf_counter() - t, "status": f"{{N / (time.perf_counter() - t) / 1e6:.1f}} M/s"}}))
"""

NAMED = """
import json, time
from countdp.design.designer import design_named
t = time.perf_counter()
d = design_named("WM", {n}, "9/10")
proven = "proven" if d.extra.get("optimality", {{}}).get("certified") else "NOT proven"
print(json.dumps({{"seconds": time.perf_counter() - t, "status": f"{{proven}}, {{d.method[:18]}}"}}))
"""

NEAR_ONE = """
import json, os, time
import numpy as np
from countdp.design.forms import structural_form
t, parts = time.perf_counter(), []
try:
    for n in (10**4, 10**6, 10**7):
        s = time.perf_counter()
        form = structural_form("WM", n, {alpha!r})
        parts.append(f"{{time.perf_counter() - s:.1f}}")
    form = structural_form("WM", 10**6, {alpha!r})
    inputs = np.random.default_rng(0).integers(0, 10**6 + 1, 2_000_000)
    s = time.perf_counter()
    for start in range(0, inputs.size, 1 << 16):
        block = inputs[start:start + (1 << 16)]
        form.sample(block, np.frombuffer(os.urandom(8 * block.size), dtype=np.uint64))
    rate = inputs.size / (time.perf_counter() - s) / 1e6
    status = "/".join(parts) + f" s; {{rate:.1f}} M/s; {{form.nbytes / 1e6:.0f}} MB"
except ValueError as exc:
    status = "refused: " + str(exc)[:70]
print(json.dumps({{"seconds": time.perf_counter() - t, "status": status}}))
"""

MATRIX_SAMPLING = """
import json, os, time
import numpy as np
from countdp.design.designer import design_named
from countdp.privacy.inverse_cdf import outputs_for_draws
released = design_named({mechanism!r}, {n}, "9/10").released
N = {draws}
inputs = np.random.default_rng(0).integers(0, {n} + 1, N)
guide = released.guide
t = time.perf_counter()
words = np.frombuffer(os.urandom(8 * N), dtype=np.uint64)
draws = (words >> np.uint64(64 - released.K)).astype(np.int64)
out = outputs_for_draws(released.cumulative, released.K, inputs, draws, guide)
print(json.dumps({{"seconds": time.perf_counter() - t, "status": f"{{N / (time.perf_counter() - t) / 1e6:.1f}} M/s"}}))
"""


def measured(command: list[str], src: Path, timeout: float | None = None, limit_gib: int | None = None) -> dict:
    """Run one child; its JSON line (or its failure), wall seconds and peak RSS in MB (``wait4``)."""
    run = run_child(command, src, timeout, limit_gib)
    wall, rss, code = run["wall"], run["rss"], run["code"]
    if run["killed"]:
        return {"seconds": wall, "status": f"not done in {timeout:.0f} s", "rss": rss}
    lines = [line for line in run["text"].splitlines() if line.startswith("{")]
    if code != 0:
        last = (run["errors"].strip().splitlines() or ["(no message)"])[-1]
        return {"seconds": wall, "status": f"exit {code}: {last[:80]}", "rss": rss}
    if not lines:
        return {"seconds": wall, "status": "done", "rss": rss}
    return {**json.loads(lines[-1]), "rss": rss}


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def table(path: Path, rows: int, largest: int) -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, largest + 1, rows)
    sizes[:1000] = rng.integers(1, 50, 1000)
    pq.write_table(pa.table({"county": np.arange(rows), "people": sizes, "cases": rng.integers(0, sizes + 1)}), path)


def row(label: str, new: dict, base: dict | None) -> None:
    def cell(r):
        if r is None:
            return f"{'':>44}"
        return f"{r['seconds']:>7.2f} s {r['rss']:>7.0f} MB {r['status'][:40]:<26}"
    print(f"{label:<44} {cell(new)} | {cell(base)}", flush=True)


def named_rows(base: Path | None, timeout: float) -> None:
    """``design_named("WM", n, 9/10)`` at its canonical size and at the matrix path's largest: the
    spread proven at ``n`` (new) against the baseline's answer (the LP solved at ``n``)."""
    for n in (1009, 2048):
        new = measured(python(NAMED.format(n=n)), NEW_SRC)
        old = None if base is None else measured(python(NAMED.format(n=n)), base, timeout=timeout, limit_gib=8)
        row(f"WM n={n:,} (9/10): design_named, proven", new, old)


def near_one_rows(base: Path | None, timeout: float) -> None:
    """WM's corner form near alpha = 1: three sizes and sampling in one process (module docstring)."""
    for alpha in ("97/100", "99/100"):
        new = measured(python(NEAR_ONE.format(alpha=alpha)), NEW_SRC)
        old = None if base is None else measured(python(NEAR_ONE.format(alpha=alpha)), base, timeout=timeout,
                                                 limit_gib=8)
        row(f"WM {alpha}: n=10^4/10^6/10^7, draws at 10^6", new, old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, run in the same sitting")
    parser.add_argument("--baseline-timeout", type=float, default=120.0)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--draws", type=int, default=10_000_000)
    parser.add_argument("--section", choices=("all", "named", "near"), default="all",
                        help="'named': only WM's named design from its canonical size; 'near': only WM near alpha = 1")
    args = parser.parse_args(argv)
    print(f"# structural mechanisms; load {os.getloadavg()[0]:.1f}; cpus {os.cpu_count()}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'what':<44} {'new: time, peak RSS, status':<44} | baseline")
    base = args.baseline
    if args.section == "named":
        named_rows(base, args.baseline_timeout)
        return 0
    if args.section == "near":
        near_one_rows(base, args.baseline_timeout)
        return 0
    for mechanism in ("GM", "EM", "WM"):
        for n in (10**4, 10**6, 10**7):
            new = measured(python(MECHANISM.format(module="design.forms", function="structural_form",
                                                   mechanism=mechanism, n=n)), NEW_SRC)
            old = None if base is None else measured(python(MECHANISM.format(
                module="design.designer", function="design_named", mechanism=mechanism, n=n)), base,
                timeout=args.baseline_timeout, limit_gib=8)
            row(f"{mechanism} n={n:,}: certified mechanism", new, old)
    named_rows(base, args.baseline_timeout)
    near_one_rows(base, args.baseline_timeout)
    for mechanism in ("GM", "EM", "UM", "WM"):
        new = measured(python(SAMPLING.format(mechanism=mechanism, n=10**6, draws=args.draws)), NEW_SRC)
        row(f"{mechanism} n=10^6: {args.draws:,} draws, OS source", new, None)
    if base is not None:
        old = measured(python(MATRIX_SAMPLING.format(mechanism="GM", n=1024, draws=args.draws)), base)
        row("baseline matrix sampler, GM n=1024 (reference)", None, old)
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        table(work / "t.parquet", args.rows, 10**6)
        for label, src, timeout in (("new", NEW_SRC, None), ("base", base, args.baseline_timeout)):
            if src is None:
                continue
            command = [sys.executable, "-m", "countdp.cli", "release", "--input", str(work / "t.parquet"),
                       "--size-column", "people", "--count-column", "cases", "--mechanism", "GM", "--alpha", "9/10",
                       "--out", str(work / f"{label}.parquet"), "--cache", str(work / f"cache-{label}"), "--seed", "1"]
            result = measured(command, src, timeout=timeout, limit_gib=None if label == "new" else 8)
            if label == "new" and result["status"] == "done":
                cache = sum(p.stat().st_size for p in (work / "cache-new").rglob("*") if p.is_file())
                result["status"] = f"released; cache {cache / 1024:.0f} KiB"
            if label == "new":
                new_result = result
            else:
                row(f"release: {args.rows:,} rows, sizes up to 10^6", new_result, result)
        if base is None:
            row(f"release: {args.rows:,} rows, sizes up to 10^6", new_result, None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
