"""Mechanism files, old inline JSON against the compact JSON + npz: size on disk and verified load time.

For each n, a design (``--mechanism``, default WM, at ``--alpha``; or the file given with
``--from``, an inline JSON from any countdp or a compact one) is saved twice, in the same run:

* by the *old* code (``--old-src``, default ``/work/base/src``: a checkout of main before the
  compact format) in a child process: ``save_design`` writes one inline JSON;
* by the new code, in a child process: ``save_design`` writes ``X.json`` + ``X.npz``.

Each child then times its own ``load_design`` of what it wrote (best of ``--repeat``; the
interpreter start and imports are not counted), which re-verifies everything that loader
verifies: the old one the float and exact DP tests, the new one those plus the digests, the
arrays' shape and the recorded properties.  Both children print the SHA-256 of the weights they
loaded, and the benchmark checks that the two agree.

    .venv/bin/python benchmarks/bench_artifacts.py                       # WM at n = 64, 128, 256 (~1 min)
    .venv/bin/python benchmarks/bench_artifacts.py --from /work/scratch/wm2048.json --repeat 3   # the headline
    .venv/bin/python benchmarks/bench_artifacts.py --n 2048              # designs WM at n = 2048 first (minutes)

Targets at n = 2048: the new file at most a quarter of the old size, its load at least 4x faster.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

_CHILD = r"""
import hashlib, json, sys, time
import numpy as np
from countdp.services.artifact import load_design, save_design
source, out, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
save_design(load_design(source), out)
best = float("inf")
for _ in range(repeat):
    start = time.perf_counter()
    design = load_design(out)
    best = min(best, time.perf_counter() - start)
weights = np.ascontiguousarray(design.released.weights, dtype="<i8")
print(json.dumps({"n": design.n, "load_s": best, "weights_sha256": hashlib.sha256(weights).hexdigest()}))
"""


def run_child(src: Path, source: Path, out: Path, repeat: int) -> dict:
    """Save ``source`` with the code under ``src`` to ``out`` and time its ``load_design`` there."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(source), str(out), str(repeat)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{src}: the child failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def size_of(json_path: Path) -> int:
    """Bytes on disk of a mechanism file: the JSON, plus the npz it names (if any)."""
    record = json.loads(json_path.read_text())
    arrays = record.get("arrays", {}).get("file")
    return json_path.stat().st_size + ((json_path.parent / arrays).stat().st_size if arrays else 0)


def design_source(mechanism: str, n: int, alpha: str, folder: Path) -> Path:
    """Design ``mechanism`` at ``n`` with the new code; its inline JSON (``countdp design`` without ``--out``,
    a format both codes read) is the source both save."""
    path = folder / f"source-{mechanism}-{n}.json"
    with path.open("w") as out:
        subprocess.run([sys.executable, "-m", "countdp.cli", "design", mechanism, "--n", str(n), "--alpha", alpha],
                       env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=out, stderr=subprocess.DEVNULL, check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[64, 128, 256], help="sizes to design (default 64 128 256)")
    parser.add_argument("--mechanism", default="WM")
    parser.add_argument("--alpha", default="0.91")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="an existing mechanism file to save both ways instead of designing")
    parser.add_argument("--old-src", type=Path, default=Path("/work/base/src"),
                        help="the old code's src folder (main before the compact format)")
    parser.add_argument("--repeat", type=int, default=3, help="loads per file; the best is reported")
    args = parser.parse_args(argv)
    if not (args.old_src / "countdp").is_dir():
        parser.error(f"{args.old_src}: no countdp package there (give the old checkout's src with --old-src)")
    print(f"# mechanism files: old inline JSON ({args.old_src}) vs compact JSON + npz ({SRC}); "
          f"load = best of {args.repeat}, cpus={os.cpu_count()}, load average={os.getloadavg()[0]:.2f}")
    print(f"{'n':>6} {'old_MB':>9} {'new_MB':>9} {'size_x':>7} {'old_load_s':>11} {'new_load_s':>11} {'load_x':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sources = [args.source] if args.source else [design_source(args.mechanism, n, args.alpha, folder)
                                                     for n in args.n]
        for k, source in enumerate(sources):
            old = run_child(args.old_src, source, folder / f"old-{k}.json", args.repeat)
            new = run_child(SRC, source, folder / f"new-{k}.json", args.repeat)
            if old["weights_sha256"] != new["weights_sha256"]:
                raise SystemExit(f"{source}: the old and new files hold different weights")
            old_size, new_size = size_of(folder / f"old-{k}.json"), size_of(folder / f"new-{k}.json")
            print(f"{new['n']:>6} {old_size / 1e6:>9.3f} {new_size / 1e6:>9.3f} {old_size / new_size:>6.1f}x "
                  f"{old['load_s']:>11.3f} {new['load_s']:>11.3f} {old['load_s'] / new['load_s']:>6.1f}x")
            for name in (f"old-{k}.json", f"new-{k}.json", f"new-{k}.npz"):
                (folder / name).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
