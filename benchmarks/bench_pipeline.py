"""Whole-pipeline wall time: ``snakemake --cores 2`` from a clean results/, then no-op reruns.

The repository is copied to a temporary directory (without ``results/``, ``.snakemake/``,
``.git/`` and caches), so the working tree is never touched and every run starts clean.  The
copy imports ``countdp`` from wherever the interpreter finds it (the editable install points
at the original ``src/``, which is the same code).

    /tmp/venv/bin/python benchmarks/bench_pipeline.py                        # config/config.yaml
    /tmp/venv/bin/python benchmarks/bench_pipeline.py --configfile config/quick.yaml
    /tmp/venv/bin/python benchmarks/bench_pipeline.py --keep --extra "--profile profiles/default"

Prints the clean-run time, the no-op rerun times (``--noop-runs`` of them, which should be
seconds each: nothing to do; then their min, median and max), the number of files produced,
snakemake's exit codes (the log tail on failure), and the clean run's top rules by
job-seconds with their share of the wall clock and of the critical path (read from its
``.snakemake/log``: :mod:`snakemake_log_times`), and the clean run's CPU time split between the
Snakemake process itself and its worker processes (:data:`WITH_CPU`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snakemake_log_times import format_table, latest_log, parse_jobs  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
IGNORE = shutil.ignore_patterns("results", ".snakemake", ".git", "__pycache__", "*.egg-info",
                                ".pytest_cache", ".ruff_cache", "logs")


CPU_MARK = "# cpu seconds:"
WITH_CPU = (
    "import atexit, resource, sys\n"
    "def report():\n"
    "    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
    f"    print('{CPU_MARK}', own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime, file=sys.stderr)\n"
    "atexit.register(report)\n"
    "from snakemake.cli import main\n"
    "sys.argv[0] = 'snakemake'\n"
    "main()\n"
)
"""Snakemake's own entry point, reporting at exit the CPU seconds of the Snakemake process (its
scheduler and job threads) and of its children (the worker processes that run the jobs' calls)."""


def cpu_split(log: str) -> tuple[float, float] | None:
    """``(snakemake process, its children)`` CPU seconds from a run of :data:`WITH_CPU`."""
    for line in reversed(log.splitlines()):
        if line.startswith(CPU_MARK):
            own, kids = line[len(CPU_MARK):].split()
            return float(own), float(kids)
    return None


def snakemake_command(cores: int, configfile: str, extra: str, cpu: bool = False) -> list[str]:
    """The snakemake command line; with ``cpu``, through :data:`WITH_CPU` (same arguments)."""
    exe = Path(sys.executable).with_name("snakemake")
    if cpu:
        cmd = [sys.executable, "-c", WITH_CPU]
    else:
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "snakemake"]
    cmd += ["--cores", str(cores)]
    if configfile:
        cmd += ["--configfile", configfile]
    return cmd + shlex.split(extra)


def timed(cmd: list[str], cwd: Path, timeout: float) -> tuple[float, int, str]:
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
        code, log = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as exc:
        code, log = -1, f"TIMEOUT after {timeout:.0f} s\n{exc.stdout or ''}{exc.stderr or ''}"
    return time.perf_counter() - start, code, log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--configfile", default="", help="passed to snakemake (relative to the repo)")
    parser.add_argument("--extra", default="", help="further snakemake arguments, one string")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds per snakemake run")
    parser.add_argument("--top", type=int, default=15, help="rule families in the table")
    parser.add_argument("--noop-runs", type=int, default=7, help="no-op reruns timed after the clean run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy and print its path")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="countdp-bench-"))
    work = tmp / "repo"
    shutil.copytree(REPO, work, ignore=IGNORE, symlinks=True)
    cmd = snakemake_command(args.cores, args.configfile, args.extra)
    clean_cmd = snakemake_command(args.cores, args.configfile, args.extra, cpu=True)
    print(f"# pipeline benchmark in {work}\n# command: {' '.join(cmd)}\n# cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for label in ["clean"] + ["no-op rerun"] * args.noop_runs:
        seconds, code, log = timed(clean_cmd if label == "clean" else cmd, work, args.timeout)
        files = sum(1 for p in (work / "results").rglob("*") if p.is_file()) if (work / "results").exists() else 0
        rows.append((label, seconds, code, files))
        print(f"{label:>12}: {seconds:9.2f} s  exit {code}  files in results/: {files}  "
              f"load={os.getloadavg()[0]:.1f}", flush=True)
        if code != 0:
            print("---- log tail ----\n" + "\n".join(log.splitlines()[-40:]))
            break
        if label == "clean":
            table = format_table(parse_jobs(latest_log(work).read_text()), args.top)
            split = cpu_split(log)
            if split is not None:
                print(f"# clean run CPU: {split[0]:.1f} s in the Snakemake process (scheduling, bookkeeping), "
                      f"{split[1]:.1f} s in its worker processes", flush=True)
    noop = [seconds for label, seconds, code, _ in rows if label != "clean" and code == 0]
    if noop:
        print(f"# no-op rerun: min {min(noop):.2f} s, median {statistics.median(noop):.2f} s, "
              f"max {max(noop):.2f} s over {len(noop)} runs", flush=True)
    if rows[0][2] == 0:
        print(f"# clean run, top rules (job_s: total job time; share_s: share of the wall clock; "
              f"critical_s: time on the critical path)\n{table}")
    if args.keep:
        print(f"# kept {work}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(code == 0 for _, _, code, _ in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
