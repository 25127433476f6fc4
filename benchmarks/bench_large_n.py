"""Large-n WM designs end to end: time, peak RSS, optimality gap, exact DP, vs plain cvxpy.

Every point is ``design_named("WM", n, alpha)`` (design, float certificate, rounding to exact
integer weights) in its own subprocess with a timeout; its peak RSS is the child's own
``ru_maxrss``.  The plain cvxpy formulation is timed where ``--cvxpy-ns`` says (its own timeout);
last, the CLI ``countdp design WM --n 1024 --alpha 0.91 --out FILE`` is timed.

    .venv/bin/python benchmarks/bench_large_n.py
    .venv/bin/python benchmarks/bench_large_n.py --alphas 0.91 --ns 64,128 --cvxpy-ns 64
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def point(n: int, alpha: float, backend: str) -> dict:
    """One design in this process (the child)."""
    import resource

    from countdp.design.designer import design_named
    from countdp.privacy.certify import is_alpha_dp

    start = time.perf_counter()
    d = design_named("WM", n, alpha, backend=backend)
    wall = time.perf_counter() - start
    opt = d.extra.get("optimality", {})
    return {"n": n, "alpha": alpha, "backend": backend, "wall": wall, "status": d.status,
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gap": opt.get("gap"), "certified": bool(opt.get("certified")),
            "dp": bool(d.certificate.certified and is_alpha_dp(d.matrix, alpha) and d.released is not None),
            "large_n": d.extra.get("large_n", {}).get("used"), "objective": d.objective_value}


def run(n: int, alpha: float, backend: str, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--point", str(n), str(alpha), backend]
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"n": n, "timeout": timeout}
    if out.returncode != 0:
        return {"n": n, "error": out.stderr.strip()[-300:]}
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall"] = time.perf_counter() - start
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alphas", default="0.91,0.8")
    parser.add_argument("--ns", default="64,128,256,512,1024,2048")
    parser.add_argument("--cvxpy-ns", default="64,128", help="n at which to time the plain cvxpy model")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--cvxpy-timeout", type=float, default=600.0)
    parser.add_argument("--point", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point:
        print(json.dumps(point(int(args.point[0]), float(args.point[1]), args.point[2])))
        return 0
    cvx = {int(v) for v in args.cvxpy_ns.split(",") if v}
    print(f"# WM end to end (design + certify + exact integer weights); cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.1f}")
    print(f"{'alpha':>5} {'n':>5} {'time_s':>8} {'rss_MB':>7} {'gap':>9} {'proven':>6} {'exactDP':>7} "
          f"{'large_n':>7} {'cvxpy_s':>9}")
    for alpha in [float(a) for a in args.alphas.split(",") if a]:
        for n in [int(v) for v in args.ns.split(",") if v]:
            r = run(n, alpha, "highs", args.timeout)
            if "wall" not in r:
                print(f"{alpha:>5} {n:>5}  {r}", flush=True)
                continue
            plain = "skipped"
            if n in cvx:
                p = run(n, alpha, "cvxpy", args.cvxpy_timeout)
                plain = f"{p['wall']:.2f}" if "wall" in p else (f"> {p['timeout']:.0f}" if "timeout" in p else "error")
            print(f"{alpha:>5} {n:>5} {r['wall']:8.2f} {r['rss_mb']:7.0f} {r['gap']:9.1e} {str(r['certified']):>6} "
                  f"{str(r['dp']):>7} {str(r['large_n']):>7} {plain:>9}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "wm.json"
        cli = [str(Path(sys.executable).with_name("countdp")), "design", "WM", "--n", "1024", "--alpha", "0.91",
               "--out", str(out)]
        start = time.perf_counter()
        code = subprocess.call(cli, stdout=subprocess.DEVNULL)
        print(f"# CLI countdp design WM --n 1024 --alpha 0.91 --out FILE: {time.perf_counter() - start:.1f} s, "
              f"exit {code}, {out.stat().st_size / 1e6 if out.exists() else 0:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
