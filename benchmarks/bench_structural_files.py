"""Designs held as structure through the command line: ``countdp design``, ``check`` and ``release`` at large n.

For GM, EM and UM at each ``--ns`` (default 10^4, 10^6, 10^7; alpha 9/10), one new process per
command: ``countdp design M --n N --alpha 9/10 --out F.json``, then ``countdp check F.json``, then
``countdp release F.json 0 N/2 N``.  Printed: each command's wall time and peak memory (the
child's maximum resident set, from ``wait4``) and the file's size.  ``--baseline SRC`` runs the
design command with another checkout's ``src`` first on the path (e.g. ``../base/src``, the
previous main), in the same sitting: before designs were held as structure it refused these sizes.

    .venv/bin/python benchmarks/bench_structural_files.py [--ns 10000,1000000,10000000] [--baseline ../base/src]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_run import run_child  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def run(args: list[str], src: str | None = None) -> tuple[float, float, int, str]:
    """``(seconds, peak MB, exit status, last line of stderr)`` of ``countdp *args`` in a new process
    (:func:`child_run.run_child`: ``wait4``'s peak resident set), with ``src`` (default this checkout's) first."""
    done = run_child([sys.executable, "-m", "countdp.cli", *args], Path(src) if src else REPO / "src")
    lines = done["errors"].strip().splitlines()
    return done["wall"], done["rss"], done["code"], lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ns", default="10000,1000000,10000000", help="group sizes, comma-separated")
    parser.add_argument("--baseline", default=None, help="another checkout's src, for the design command")
    args = parser.parse_args()
    ns = [int(x) for x in args.ns.split(",")]
    print(f"# alpha 9/10; wall time (s) and peak memory (MB) of each command in a new process; "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'mech':<5}{'n':>10}  {'design s':>9}{'MB':>7}  {'file':>8}  {'check s':>8}{'MB':>7}  "
          f"{'release s':>10}{'MB':>7}  baseline design")
    with tempfile.TemporaryDirectory() as tmp:
        for mechanism in ("GM", "EM", "UM"):
            for n in ns:
                path = Path(tmp) / f"{mechanism}{n}.json"
                design = run(["design", mechanism, "--n", str(n), "--alpha", "9/10", "--out", str(path)])
                if design[2] != 0:
                    print(f"{mechanism:<5}{n:>10}  refused: {design[3]}")
                    continue
                check = run(["check", str(path)])
                release = run(["release", str(path), "0", str(n // 2), str(n)])
                base = ""
                if args.baseline:
                    old = run(["design", mechanism, "--n", str(n), "--alpha", "9/10", "--out",
                               str(Path(tmp) / "old.json")], args.baseline)
                    base = f"{old[0]:.2f} s, {old[1]:.0f} MB" if old[2] == 0 else f"refused: {old[3][:70]}"
                print(f"{mechanism:<5}{n:>10}  {design[0]:>9.2f}{design[1]:>7.0f}  {path.stat().st_size:>7}B  "
                      f"{check[0]:>8.2f}{check[1]:>7.0f}  {release[0]:>10.2f}{release[1]:>7.0f}  {base}")


if __name__ == "__main__":
    main()
