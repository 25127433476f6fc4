"""Design sweeps through the pipeline against the library, and a sweep stopped halfway and resumed.

The study of issue 50 scaled to a few minutes: WM under L0 at ``--alphas`` (default 4/5, 91/100,
19/20) for ``--ns`` (default 32, 64, 128, 256, 384, 512), one design sweep per alpha, in a
temporary copy of this checkout and of a clean clone of its HEAD (the baseline), each run with
``snakemake --cores 1`` on Figure 9's block of config/quick.yaml, cold (no results/):

1. speed: per alpha, the sum of the pipeline's per-design times (its log: design, certificates,
   save), the library's (``countdp.design_named`` with no options, one fresh process) for the same
   designs, their ratio, and the baseline pipeline's (done within ``--baseline-timeout``, or how
   many of its designs it finished), the same per design of ``--ns``, then the wall clock of each
   run, start-up included;
2. stopped and resumed, the sweep of ``--resume-alpha`` (default the first alpha) alone, so that
   the rerun has that sweep to redo whatever Snakemake's job order: SIGTERM to snakemake (its pid
   alone) once half its designs are saved (the baseline: or after ``--baseline-timeout``), then
   a plain rerun: how long the stop took, the designs kept, how many of them the rerun designed
   again (work redone) and the seconds of design work cut short (work lost: from the last design
   saved to the stop).  The baseline is stopped the same way (given ``--stop-wait`` seconds, then
   SIGKILL, then ``snakemake --unlock``) and rerun within ``--baseline-timeout``.

Numbers are noisy on a shared machine: compare the ratios.  Prints the 1-minute load.

    .venv/bin/python benchmarks/bench_design_sweeps.py
    .venv/bin/python benchmarks/bench_design_sweeps.py --ns 32,64,128,256 --baseline-timeout 60
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from child_run import run_child  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "workflow" / "lib"))
from workflow_copy import copy_workflow_files  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
LIBRARY_CHILD = """
import json, sys, time
from fractions import Fraction
from countdp.design.designer import design_named
for alpha, n in json.loads(sys.argv[1]):
    began = time.perf_counter()
    design = design_named("WM", n, Fraction(alpha))
    print(json.dumps([alpha, n, time.perf_counter() - began, design.method]), flush=True)
"""
"""A fresh process designing each ``[alpha, n]`` as the library does by default, one JSON line each
(its first design imports the LP stack, as a pipeline's first design does in its worker)."""


def spelling(alpha: str) -> str:
    return repr(float(Fraction(alpha)))


def study_config(work: Path, alphas: list[str], ns: list[int]) -> str:
    """The checkout's quick.yaml with Figure 9 at ``alphas`` over ``ns`` (its own solver block)."""
    config = yaml.safe_load((work / "config/quick.yaml").read_text())
    config["fig09"].update(alpha=alphas, n=ns, convergence_check={"alpha": alphas[0], "n": ns[0]})
    path = work / "study.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


def targets(alphas: list[str]) -> list[str]:
    return [f"results/mechanisms/WM/L0/alpha={spelling(a)}.sweep.json" for a in alphas]


def artifacts(work: Path) -> dict[Path, float]:
    """Every WM design saved so far, with the time it was saved."""
    return {p: p.stat().st_mtime for p in work.glob("results/mechanisms/WM/L0/n=*/alpha=*.json")}


def start(work: Path, src: Path, alphas: list[str]) -> subprocess.Popen:
    out = (work / "snakemake.out").open("a")
    return subprocess.Popen([str(SNAKEMAKE), *targets(alphas), "--cores", "1", "--configfile", "study.yaml"],
                            cwd=work, env={**os.environ, "PYTHONPATH": str(src)}, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to ``timeout`` s; then kill the run's process group.  Whether it ended by itself."""
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return False


def run(work: Path, src: Path, alphas: list[str], timeout: float) -> dict:
    """A run of the study's sweeps: wall clock, whether it completed, the designs saved."""
    began = time.time()
    proc = start(work, src, alphas)
    ended = finish(proc, timeout)
    return {"wall": time.time() - began, "done": ended and proc.returncode == 0, "saved": artifacts(work),
            "began": began}


def log_times(work: Path, alpha: str) -> tuple[dict[int, float], list[int], float | None]:
    """This checkout's sweep log: each design's whole time by n, the n it reused, the sweep's total."""
    log = work / f"results/logs/design/WM/L0/alpha={spelling(alpha)}.log"
    times, reused, total = {}, [], None
    for line in log.read_text().splitlines() if log.is_file() else []:
        seconds = float(re.search(r" time=([0-9.]+)s", line)[1])
        if line.startswith("sweep "):
            total = seconds
            continue
        n = int(re.search(r"/n=(\d+)/", line)[1])
        times[n] = seconds
        if ": reused " in line:
            reused.append(n)
    return times, reused, total


def sweep_ns(work: Path, alpha: str) -> list[int]:
    """The n of a finished sweep (its manifest): Figure 9's and any other study's at that alpha."""
    manifest = work / targets([alpha])[0]
    return [d["n"] for d in json.loads(manifest.read_text())["designs"]]


def library_times(src: Path, points: list[tuple[str, int]], timeout: float) -> tuple[dict, float]:
    child = run_child([sys.executable, "-c", LIBRARY_CHILD, json.dumps(points)], src, timeout)
    rows = [json.loads(line) for line in child["text"].splitlines() if line.startswith("[")]
    if child["code"] != 0:
        raise RuntimeError(f"library child failed:\n{child['errors'][-2000:]}")
    return {(a, n): seconds for a, n, seconds, _ in rows}, child["wall"]


def speed_table(args, new: Path, base: Path | None, src: Path) -> None:
    """Section 1."""
    cold = run(new, src, args.alphas, args.timeout)
    if not cold["done"]:
        raise RuntimeError(f"the pipeline did not finish:\n{(new / 'snakemake.out').read_text()[-3000:]}")
    points = [(a, n) for a in args.alphas for n in sweep_ns(new, a)]
    library, library_wall = library_times(src, points, args.timeout)
    baseline = run(base, Path(base) / "src", args.alphas, args.baseline_timeout) if base else None
    print(f"\n## 1. cold sweeps, {len(points)} designs (--cores 1; seconds)\n")
    print("| alpha | n | pipeline | library | pipeline / library | baseline pipeline | baseline / pipeline |")
    print("|---|---|---|---|---|---|---|")
    times = {alpha: log_times(new, alpha)[0] for alpha in args.alphas}
    for alpha in args.alphas:
        ns = sweep_ns(new, alpha)
        pipe, lib = sum(times[alpha].values()), sum(library[alpha, n] for n in ns)
        print(f"| {alpha} | {ns[0]}..{ns[-1]} ({len(ns)}) | {pipe:.2f} | {lib:.2f} | {pipe / lib:.2f} | "
              f"{baseline_cell(base, baseline, alpha, ns, pipe)}")
    pipe, lib = sum(sum(t.values()) for t in times.values()), sum(library.values())
    print(f"| all | | {pipe:.2f} | {lib:.2f} | {pipe / lib:.2f} | | |")
    print("\n(the first design of each process imports the LP stack, about a second: it counts in the "
          "sweep the pipeline ran first, and in the library's first alpha)\n")
    print("| alpha | n | pipeline | library | pipeline / library |\n|---|---|---|---|---|")
    for alpha, n in ((a, n) for a in args.alphas for n in args.ns):
        print(f"| {alpha} | {n} | {times[alpha][n]:.2f} | {library[alpha, n]:.2f} | "
              f"{times[alpha][n] / library[alpha, n]:.2f} |")
    print(f"\nwall clock, start-up included: pipeline {cold['wall']:.1f} s, library (one process) "
          f"{library_wall:.1f} s, ratio {cold['wall'] / library_wall:.2f}; baseline pipeline "
          + (f"{baseline['wall']:.1f} s" + ("" if baseline["done"] else " (stopped: the time allowed)")
             if baseline else "not run"))


def baseline_cell(base: Path | None, baseline: dict | None, alpha: str, ns: list[int], pipe: float) -> str:
    """The baseline's time for one sweep (from its designs' save times), or how far it got."""
    if baseline is None:
        return "- | - |"
    mine = sorted(t for p, t in baseline["saved"].items() if f"alpha={spelling(alpha)}.json" in p.name)
    if len(mine) == len(ns) and baseline["done"]:
        earlier = [t for t in sorted(baseline["saved"].values()) if t < mine[0]]
        first = earlier[-1] if earlier else baseline["began"]
        seconds = mine[-1] - first
        return f"{seconds:.1f} | {seconds / pipe:.1f} |"
    return f"not done: {len(mine)} of {len(ns)} designs in the time allowed | - |"


def stop_and_resume(work: Path, src: Path, alphas: list[str], half: int, stop_wait: float, timeout: float) -> dict:
    """SIGTERM once ``half`` designs are saved (at most ``timeout`` s in), wait for the stop, then
    rerun: what was kept, redone, lost."""
    proc = start(work, src, alphas)
    deadline = time.time() + timeout
    while len(artifacts(work)) < half and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    before = artifacts(work)
    signalled = time.time()
    os.kill(proc.pid, signal.SIGTERM)
    stopped = finish(proc, stop_wait)
    stop_took = time.time() - signalled
    kept = artifacts(work)  # what the stopped run finished, while it was stopping too
    lost = signalled - max(before.values(), default=signalled)
    inodes = {p: p.stat().st_ino for p in kept}
    if not stopped:  # killed: its lock stays, removed as a user would
        subprocess.run([str(SNAKEMAKE), "--unlock", "--cores", "1", "--configfile", "study.yaml"], cwd=work,
                       env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, check=True)
    began = time.time()
    proc = start(work, src, alphas)
    done = finish(proc, timeout) and proc.returncode == 0
    redone = sum(1 for p, ino in inodes.items() if not p.exists() or p.stat().st_ino != ino)
    return {"stop": stop_took, "stopped": stopped, "kept": len(kept), "redone": redone, "lost": lost,
            "resume": time.time() - began, "done": done, "total": len(artifacts(work))}


def resume_table(args, new_root: Path, base_root: Path | None, src: Path) -> None:
    alphas = [args.resume_alpha or args.alphas[0]]
    half = len(sweep_ns(new_root, alphas[0])) // 2
    print(f"\n## 2. the sweep at alpha {alphas[0]} stopped (SIGTERM to snakemake) once {half} of its "
          f"{len(sweep_ns(new_root, alphas[0]))} designs are saved, then rerun\n")
    print("| code | stop took (s) | designs kept | redone on rerun | lost (s) | rerun (s) | rerun done |")
    print("|---|---|---|---|---|---|---|")
    runs = [("this checkout", new_root, src, args.timeout)]
    if base_root is not None:
        runs.append(("baseline (HEAD)", base_root, base_root / "src", args.baseline_timeout))
    for label, root, library, timeout in runs:
        work = copy_workflow_files(root, root.parent / f"{root.name}-resume")
        study_config(work, alphas, args.ns)
        r = stop_and_resume(work, library, alphas, half, args.stop_wait, timeout)
        stop = f"{r['stop']:.1f}" if r["stopped"] else f"> {args.stop_wait:.0f} (killed)"
        done = "yes" if r["done"] else f"no ({r['total']} designs saved in the time allowed)"
        print(f"| {label} | {stop} | {r['kept']} | {r['redone']} | {r['lost']:.1f} | {r['resume']:.1f} | {done} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", default="4/5,91/100,19/20")
    parser.add_argument("--ns", default="32,64,128,256,384,512")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed to this checkout's runs")
    parser.add_argument("--baseline-timeout", type=float, default=120, help="seconds allowed to each baseline run")
    parser.add_argument("--stop-wait", type=float, default=30, help="seconds a SIGTERM is given before SIGKILL")
    parser.add_argument("--resume-alpha", default="", help="the sweep stopped and resumed (default: the first alpha)")
    parser.add_argument("--no-baseline", action="store_true", help="this checkout only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies and print their path")
    args = parser.parse_args(argv)
    args.alphas, args.ns = args.alphas.split(","), [int(n) for n in args.ns.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="countdp-sweeps-"))
    src = REPO / "src"
    new = copy_workflow_files(REPO, tmp / "new")
    study_config(new, args.alphas, args.ns)
    base = None
    if not args.no_baseline:
        clone = tmp / "head"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        base = copy_workflow_files(clone, tmp / "base")
        shutil.copytree(clone / "src", base / "src", ignore=shutil.ignore_patterns("__pycache__"))
        study_config(base, args.alphas, args.ns)
    print(f"# design sweeps: WM, L0, alphas {', '.join(args.alphas)}, n {args.ns}; cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.1f}; baseline: {'none' if base is None else 'a clean clone of HEAD'}")
    speed_table(args, new, base, src)
    resume_table(args, new, base, src)
    print(f"\n# load={os.getloadavg()[0]:.1f}")
    if args.keep:
        print(f"# kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
