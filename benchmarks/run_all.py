"""Run the design, large-n, objective-sweep, CLI and sampling benchmarks in turn (the pipeline one is separate).

    .venv/bin/python benchmarks/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller n (sweep: n <= 64), short timeouts, fewer runs")
    args = parser.parse_args(argv)
    design = ["--ns", "16,32,64,128", "--timeout", "60"] if args.quick else []
    sampling = ["--samples", "500000"] if args.quick else []
    objectives = ["--ns", "41,64"] if args.quick else []
    cli = ["--runs", "3"] if args.quick else []
    codes = [subprocess.call([sys.executable, str(HERE / "bench_design.py"), *design]),
             subprocess.call([sys.executable, str(HERE / "bench_large_n.py"),
                              *(["--ns", "64,128,256", "--alphas", "0.91"] if args.quick else [])]),
             subprocess.call([sys.executable, str(HERE / "bench_objectives.py"), *objectives]),
             subprocess.call([sys.executable, str(HERE / "bench_cli.py"), *cli]),
             subprocess.call([sys.executable, str(HERE / "bench_sampling.py"), *sampling])]
    return max(codes)


if __name__ == "__main__":
    raise SystemExit(main())
