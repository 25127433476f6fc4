"""A curator's table release: 100,000 rows of mixed group sizes, timed with the mechanisms cached.

Generates a table (sizes 2..40, counts uniform in 0..n), designs one EM per size into a
temporary cache (timed apart), then times ``countdp release --input ... --size-column``
end to end as a new process (start-up, reading, validating, sampling from the OS's source,
writing the table and its sidecar).  Target: under 10 s excluding design time.

    .venv/bin/python benchmarks/bench_release_table.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--mechanism", default="EM")
    parser.add_argument("--alpha", default="9/10")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rng = np.random.default_rng(0)
        sizes = rng.integers(2, 41, args.rows)
        pd.DataFrame({"region": rng.choice(["north", "south", "east", "west"], args.rows),
                      "block": np.arange(args.rows), "n": sizes, "c": rng.integers(0, sizes + 1)}
                     ).to_csv(work / "groups.csv", index=False)
        command = [sys.executable, "-m", "countdp.cli", "release", "--input", str(work / "groups.csv"),
                   "--count-column", "c", "--size-column", "n", "--mechanism", args.mechanism, "--alpha", args.alpha,
                   "--out", str(work / "noisy.csv"), "--cache", str(work / "cache")]
        timings = []
        for label in ("first run (designs every size)", "second run (mechanisms cached)"):
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            timings.append((label, time.perf_counter() - start))
        print(f"# {args.rows:,} rows, {len(np.unique(sizes))} group sizes, {args.mechanism} at alpha = {args.alpha}")
        for label, seconds in timings:
            print(f"{label:<34} {seconds:6.2f} s")
        print(f"target (excluding design): < 10 s -> {'ok' if timings[1][1] < 10 else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
