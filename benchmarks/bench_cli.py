"""Wall time of quick ``countdp`` commands as new processes (Python start-up and imports included).

    .venv/bin/python benchmarks/bench_cli.py [--runs 7] [--n 64]

Closed-form designs (GM, EM, UM) and ``countdp check`` import no LP stack (cvxpy, scipy,
highspy, clarabel); each command runs ``--runs`` times and the median, min and max wall
times are printed, with ``python -c pass`` and ``import numpy`` as the floor for comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall_times(argv: list[str], runs: int) -> list[float]:
    """Seconds per run of ``argv`` (a new process each time); raises if it fails."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (median reported)")
    parser.add_argument("--n", type=int, default=64, help="group size of the designs")
    args = parser.parse_args(argv)
    py = [sys.executable]
    cli = [*py, "-m", "countdp.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gm.json"
        subprocess.run([*cli, "design", "GM", "--n", str(args.n), "--alpha", "0.9", "--out", str(out)], check=True)
        commands = {
            "python -c pass": [*py, "-c", "pass"],
            "python -c 'import numpy'": [*py, "-c", "import numpy"],
            f"design GM --n {args.n}": [*cli, "design", "GM", "--n", str(args.n), "--alpha", "0.9",
                                        "--out", str(Path(tmp) / "a.json")],
            f"design EM --n {args.n}": [*cli, "design", "EM", "--n", str(args.n), "--alpha", "0.9",
                                        "--out", str(Path(tmp) / "b.json")],
            f"design UM --n {args.n}": [*cli, "design", "UM", "--n", str(args.n), "--alpha", "0.9",
                                        "--out", str(Path(tmp) / "c.json")],
            "design GM --n 4 (stdout)": [*cli, "design", "GM", "--n", "4", "--alpha", "0.9"],
            f"check (GM, n = {args.n})": [*cli, "check", str(out)],
        }
        print(f"# load average {os.getloadavg()[0]:.2f}; {args.runs} runs each; seconds")
        print(f"{'command':<28} {'median':>7} {'min':>7} {'max':>7}")
        for label, command in commands.items():
            times = wall_times(command, args.runs)
            print(f"{label:<28} {statistics.median(times):>7.3f} {min(times):>7.3f} {max(times):>7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
