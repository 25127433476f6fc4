"""``countdp interpret`` at the release's sizes: time and peak memory of a consumer's certified remap.

For each mechanism of ``--mechanisms`` (default GM, EM) and each ``--ns`` (default 128, 1000, 10000),
a design file is written once (``countdp design M --n N --alpha A --out F.json``: a matrix file up
to n = 2048, a structural one beyond), then ``countdp interpret F.json --loss L --json`` runs in a
new process per row, with this checkout's ``src`` and, with ``--old-src SRC`` (a worktree of the
previous main, e.g. ``git worktree add -f /work/base fa8dbc7 --detach``), with that checkout's, in
the same sitting.  Printed per row: the path that answered (the dense LP, certified exactly, up to
n = 128; the structured path beyond), wall time and peak memory (the child's maximum resident set,
from ``wait4``), the certified worst-case loss and duality gap, and the new time over the old where
both answered (the old code refuses n > 128).

    .venv/bin/python benchmarks/bench_interpret.py --old-src /work/base/src [--ns 128,1000,10000] [--loss L1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_run import run_child  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def countdp(args: list[str], src: Path, timeout: float) -> dict:
    """``countdp *args`` in a new process with ``src`` first on the path (:func:`child_run.run_child`)."""
    return run_child([sys.executable, "-m", "countdp.cli", *args], src, timeout)


def interpret(path: Path, loss: str, src: Path, timeout: float) -> dict:
    """One row: wall time, peak MB, and what the remap's JSON says (or why there is none)."""
    done = countdp(["interpret", str(path), "--loss", loss, "--json"], src, timeout)
    row = {"wall": done["wall"], "rss": done["rss"], "ok": done["code"] == 0 and not done["killed"]}
    if row["ok"]:
        result = json.loads(done["text"])
        certificate = result["certificate"]
        row.update(value=result["worst_case_loss"], gap=certificate["gap"],
                   path="dense LP, exact" if certificate["exact"] else "structured, float")
    else:
        lines = done["errors"].strip().splitlines()
        row["why"] = "killed (timeout)" if done["killed"] else (lines[-1][:90] if lines else f"exit {done['code']}")
    return row


def _line(mechanism: str, n: int, code: str, row: dict, ratio: str) -> str:
    if not row["ok"]:
        return f"{mechanism:<5}{n:>7}  {code:<4} {row['wall']:>8.2f}{row['rss']:>8.0f}  {row['why']}"
    return (f"{mechanism:<5}{n:>7}  {code:<4} {row['wall']:>8.2f}{row['rss']:>8.0f}  {row['path']:<17}"
            f"{row['value']:>16.10f}{row['gap']:>10.1e}  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ns", default="128,1000,10000", help="group sizes, comma-separated")
    parser.add_argument("--mechanisms", default="GM,EM", help="mechanisms, comma-separated")
    parser.add_argument("--alpha", default="1/2")
    parser.add_argument("--loss", default="L1", help="the consumer's loss: L0, L0d:D, L1, L2")
    parser.add_argument("--old-src", default=None, help="the previous main's src, run in the same sitting")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per interpret run")
    args = parser.parse_args()
    new = REPO / "src"
    print(f"# countdp interpret, loss {args.loss}, alpha {args.alpha}, side information 0..n; wall time (s) and "
          f"peak memory (MB) of each run in a new process; load {os.getloadavg()[0]:.1f}")
    print(f"{'mech':<5}{'n':>7}  {'code':<4} {'time s':>8}{'MB':>8}  {'path':<17}{'worst-case loss':>16}"
          f"{'gap':>10}  new/old")
    with tempfile.TemporaryDirectory() as tmp:
        for mechanism in args.mechanisms.split(","):
            for n in (int(x) for x in args.ns.split(",")):
                path = Path(tmp) / f"{mechanism}{n}.json"
                design = countdp(["design", mechanism, "--n", str(n), "--alpha", args.alpha, "--out", str(path)],
                                 new, args.timeout)
                if design["code"] != 0:
                    print(f"{mechanism:<5}{n:>7}  design refused: {design['errors'].strip()[-90:]}")
                    continue
                rows = {"new": interpret(path, args.loss, new, args.timeout)}
                if args.old_src:
                    rows["old"] = interpret(path, args.loss, Path(args.old_src), args.timeout)
                both = all(r["ok"] for r in rows.values()) and len(rows) == 2
                ratio = f"{rows['new']['wall'] / rows['old']['wall']:.2f}" if both else ""
                for code, row in rows.items():
                    print(_line(mechanism, n, code, row, ratio if code == "new" else ""), flush=True)


if __name__ == "__main__":
    main()
