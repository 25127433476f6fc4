"""The ``countdp`` command line: design, check and release.

``countdp design MECH --n N --alpha A`` prints a certified mechanism as JSON (or CSV);
``countdp check FILE`` reports its properties and DP verdict; ``countdp release FILE``
draws noisy counts with an OS-entropy generator.  Bad arguments or files exit with status
2 and one line naming the problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from countdp.certify import is_alpha_dp
from countdp.constraints import PROPERTIES
from countdp.design import MECHANISMS, SOLVERS, DesignError, design_named
from countdp.io import design_to_dict, load_matrix, load_record, save_design, to_json
from countdp.metrics import objective_value
from countdp.properties import DEFAULT_TOL, check_all, check_dp
from countdp.sampling import release, secure_generator
from countdp.validation import check_alpha, check_n


class UsageError(Exception):
    """A bad argument or input file: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        raise UsageError(message)


def _positive_int(text: str) -> int:
    stripped = text.strip()
    try:
        return check_n(int(stripped) if stripped.lstrip("+-").isdigit() else float(stripped))
    except ValueError:
        raise argparse.ArgumentTypeError(f"n must be an integer >= 1, got {text!r}") from None


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"alpha must be a number with 0 < alpha < 1, got {text!r}") from None
    try:
        return check_alpha(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="countdp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    d = sub.add_parser("design", help="design a certified mechanism and print it")
    d.add_argument("mechanism", type=str.upper, choices=MECHANISMS,
                   help="GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), LP (--props)")
    d.add_argument("--n", type=_positive_int, required=True, help="group size n >= 1")
    d.add_argument("--alpha", type=_alpha, required=True, help="privacy, 0 < alpha < 1 (alpha = e^-epsilon)")
    d.add_argument("--objective", default="L0", help="L0, L0d:D (mass more than D off the diagonal), L1, L2")
    d.add_argument("--props", default="", help=f"properties for LP, comma-separated: {','.join(PROPERTIES)}")
    d.add_argument("--solver", type=str.upper, default="HIGHS", choices=sorted(SOLVERS))
    d.add_argument("--method", default=None, help="simplex or ipm for HIGHS (default simplex)")
    d.add_argument("--format", choices=("json", "csv"), default="json")
    d.add_argument("--out", type=Path, default=None, help="write here (atomically) instead of stdout")

    c = sub.add_parser("check", help="report properties and the DP verdict of a mechanism file")
    c.add_argument("file", type=Path, help="a mechanism JSON (from design) or a CSV matrix")
    c.add_argument("--alpha", type=_alpha, default=None, help="alpha to check (required for CSV)")
    c.add_argument("--tol", type=float, default=DEFAULT_TOL, help="tolerance for the structural properties")

    r = sub.add_parser("release", help="release noisy counts with a certified mechanism")
    r.add_argument("file", type=Path, help="a mechanism JSON written by `countdp design`")
    r.add_argument("counts", nargs="+", type=int, help="true counts, each in 0..n")
    r.add_argument("--seed", type=int, default=None,
                   help="seeded generator for experiments only; without it the OS entropy source is used")
    return parser


def _design(args: argparse.Namespace) -> int:
    if args.mechanism != "LP" and args.props:
        raise UsageError(f"--props applies to LP only; {args.mechanism} has a fixed definition")
    try:
        result = design_named(args.mechanism, args.n, args.alpha, objective=args.objective,
                              properties=args.props, solver=args.solver, method=args.method)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.out is not None:
        save_design(result, args.out if args.format == "json" else args.out.with_suffix(".csv"))
        return 0
    if args.format == "csv":
        np.savetxt(sys.stdout, result.matrix, delimiter=",", fmt="%.17g")
    else:
        sys.stdout.write(to_json(design_to_dict(result)))
    return 0


def _read_mechanism(path: Path, alpha: float | None) -> tuple[np.ndarray, float | None]:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        if path.suffix.lower() == ".csv":
            return load_matrix(path), alpha
        record = load_record(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return record["matrix"], alpha if alpha is not None else record.get("alpha")


def _check(args: argparse.Namespace) -> int:
    P, alpha = _read_mechanism(args.file, args.alpha)
    n = P.shape[0] - 1
    print(f"mechanism: {args.file} (n = {n}, {n + 1}x{n + 1}, P[i, j] = Pr[output i | input j])")
    for name, check in check_all(P, args.tol).items():
        print(f"  {name:<3} {'yes' if check.holds else 'no ':<4} worst violation {check.worst_violation:.3g}")
    print(f"  L0  {objective_value(P, 'L0'):.6f}")
    if alpha is None:
        raise UsageError(f"{args.file}: a CSV matrix needs --alpha to check differential privacy")
    exact = is_alpha_dp(P, alpha)
    print(f"  DP  alpha = {alpha}: {'certified' if exact else 'NOT alpha-DP'} on the stored floats "
          f"(worst violation {check_dp(P, alpha).worst_violation:.3g})")
    return 0 if exact else 1


def _release(args: argparse.Namespace) -> int:
    P, alpha = _read_mechanism(args.file, None)
    if alpha is None or not is_alpha_dp(P, alpha):
        raise UsageError(f"{args.file}: refusing to release with a mechanism not certified alpha-DP")
    counts = np.asarray(args.counts)
    if counts.min() < 0 or counts.max() > P.shape[0] - 1:
        raise UsageError(f"true counts must lie in 0..{P.shape[0] - 1}")
    if args.seed is None:
        rng = secure_generator()
        print("# noise from the OS entropy source (secrets); not reproducible by design", file=sys.stderr)
    else:
        rng = np.random.default_rng(args.seed)
        print("# seeded generator: reproducible, for experiments only, never for real data", file=sys.stderr)
    print(" ".join(str(v) for v in release(P, counts, rng)))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {"design": _design, "check": _check, "release": _release}[args.command](args)
    except UsageError as exc:
        print(f"countdp: error: {exc}", file=sys.stderr)
        return 2
    except DesignError as exc:
        print(f"countdp: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"countdp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
