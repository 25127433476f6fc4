"""The ``countdp`` command line: design, check and release.

``countdp design MECH --n N --alpha A`` (or ``--epsilon E``) prints a certified mechanism as
JSON (or CSV), with its integer release weights; ``countdp check FILE`` reports its
properties and its exact DP verdict; ``countdp release FILE`` draws noisy counts, exactly
from the release weights, with bits from the OS's secure source.  Bad arguments or files exit
with status 2 and one line naming the problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from countdp.design.constraints import PROPERTIES
from countdp.design.designer import MECHANISMS, SOLVERS, DesignError, design_named
from countdp.evaluate.metrics import objective_value
from countdp.mechanisms.artifact import (
    design_to_dict,
    load_design,
    load_matrix,
    load_record,
    save_design,
    to_json,
    write_text_atomic,
)
from countdp.mechanisms.properties import DEFAULT_TOL, check_all, check_dp
from countdp.privacy.alpha import alpha_from_epsilon, alpha_text, epsilon_of, exact_alpha
from countdp.privacy.certify import MAX_REPAIR_LAMBDA, is_alpha_dp
from countdp.privacy.exact import exact_dp_check
from countdp.privacy.sampling import release
from countdp.progress import StageLog
from countdp.validation import check_n, check_tol


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


def _argument(check, text: str):
    try:
        return check(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _alpha(text: str):
    return _argument(exact_alpha, text)


def _tolerance(text: str) -> float:
    def parse(value: str) -> float:
        try:
            return check_tol(float(value))
        except ValueError:
            raise ValueError(f"must be a finite number >= 0, got {value!r}") from None

    return _argument(parse, text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="countdp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    d = sub.add_parser("design", help="design a certified mechanism and print it")
    d.add_argument("mechanism", type=str.upper, choices=MECHANISMS,
                   help="GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), LP (--props)")
    d.add_argument("--n", type=_positive_int, required=True, help="group size n >= 1")
    privacy = d.add_mutually_exclusive_group(required=True)
    privacy.add_argument("--alpha", type=_alpha, help="privacy, 0 < alpha < 1, exact: 2/3, 0.91 (alpha = e^-epsilon)")
    privacy.add_argument("--epsilon", type=str, default=None,
                         help="privacy as epsilon > 0; alpha is the nearest multiple of 2^-63 at or above e^-epsilon")
    d.add_argument("--objective", default="L0", help="L0, L0d:D (mass more than D off the diagonal), L1, L2")
    d.add_argument("--props", default="", help=f"properties for LP, comma-separated: {','.join(PROPERTIES)}")
    d.add_argument("--solver", type=str.upper, default="HIGHS", choices=sorted(SOLVERS))
    d.add_argument("--method", default=None, help="simplex or ipm for HIGHS (default simplex)")
    d.add_argument("--max-repair", type=_tolerance, default=MAX_REPAIR_LAMBDA,
                   help=f"largest UM weight a solver answer's DP repair may mix in (default {MAX_REPAIR_LAMBDA:g})")
    d.add_argument("--format", choices=("json", "csv"), default="json")
    d.add_argument("--out", type=Path, default=None, help="write here (atomically) instead of stdout")

    c = sub.add_parser("check", help="report properties and the DP verdict of a mechanism file")
    c.add_argument("file", type=Path, help="a mechanism JSON (from design) or a CSV matrix")
    c.add_argument("--alpha", type=_alpha, default=None, help="alpha to check, exact (required for CSV)")
    c.add_argument("--tol", type=_tolerance, default=DEFAULT_TOL, help="tolerance for the structural properties")

    r = sub.add_parser("release", help="release noisy counts with certified mechanisms",
                       description="Release noisy counts: COUNTS with one mechanism FILE; a table with FILE "
                                   "(--input, --count-column); or a table of mixed group sizes (--input, "
                                   "--count-column, --size-column, --mechanism, --alpha or --epsilon).")
    r.add_argument("file", type=Path, nargs="?", help="a mechanism JSON written by `countdp design`")
    r.add_argument("counts", nargs="*", type=int, help="true counts, each in 0..n")
    r.add_argument("--input", type=Path, default=None, help="a CSV or Parquet table of true counts")
    r.add_argument("--count-column", default=None, help="the table's column of true counts")
    r.add_argument("--size-column", default=None,
                   help="the table's column of group sizes: each size gets its own certified mechanism")
    r.add_argument("--mechanism", type=str.upper, choices=MECHANISMS, default=None,
                   help="with --size-column: the mechanism to design for each size (e.g. EM)")
    release_privacy = r.add_mutually_exclusive_group()
    release_privacy.add_argument("--alpha", type=_alpha, default=None, help="with --size-column: exact alpha")
    release_privacy.add_argument("--epsilon", type=str, default=None, help="with --size-column: epsilon")
    r.add_argument("--cache", type=Path, default=None,
                   help="with --size-column: folder of designed mechanisms (default ~/.cache/countdp/mechanisms)")
    r.add_argument("--noisy-column", default=None, help="name of the added column (default noisy_<count column>)")
    r.add_argument("--out", type=Path, default=None, help="the table with noisy counts, CSV or Parquet (atomically)")
    r.add_argument("--seed", type=int, default=None,
                   help="seeded generator for experiments only; without it the OS's secure source is used")
    return parser


def _design(args: argparse.Namespace) -> int:
    if args.mechanism != "LP" and args.props:
        raise UsageError(f"--props applies to LP only; {args.mechanism} has a fixed definition")
    try:
        alpha = args.alpha if args.epsilon is None else alpha_from_epsilon(args.epsilon)
        with StageLog("countdp"):  # what a design past a second is doing, on stderr
            result = design_named(args.mechanism, args.n, alpha, objective=args.objective, properties=args.props,
                                  solver=args.solver, method=args.method, max_repair_lambda=args.max_repair)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.epsilon is not None:
        result.extra["epsilon_requested"] = args.epsilon
        result.extra["epsilon_guaranteed"] = epsilon_of(alpha)
    if args.out is not None:
        save_design(result, args.out if args.format == "json" else args.out.with_suffix(".csv"))
        return 0
    if args.format == "csv":
        np.savetxt(sys.stdout, result.matrix, delimiter=",", fmt="%.17g")
    else:
        sys.stdout.write(to_json(design_to_dict(result)))
    return 0


def _read_record(path: Path) -> dict:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        return load_record(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _check(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        raise UsageError(f"{args.file}: no such file")
    if args.file.suffix.lower() == ".csv":
        if args.alpha is None:
            raise UsageError(f"{args.file}: a CSV matrix needs --alpha to check differential privacy")
        try:
            P, record = load_matrix(args.file), None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        record = _read_record(args.file)
        P = record["matrix"]
    n = P.shape[0] - 1
    print(f"mechanism: {args.file} (n = {n}, {n + 1}x{n + 1}, P[i, j] = Pr[output i | input j])")
    for name, check in check_all(P, args.tol).items():
        print(f"  {name:<3} {'yes' if check.holds else 'no ':<4} worst violation {check.worst_violation:.3g}")
    print(f"  L0  {objective_value(P, 'L0'):.6f}")
    if record is None or "release" not in record:
        alpha = args.alpha if args.alpha is not None else record.get("alpha")
        floats = is_alpha_dp(P, float(alpha))
        print(f"  DP  alpha = {alpha}: {'holds' if floats else 'FAILS'} on the float matrix "
              f"(worst violation {check_dp(P, float(alpha)).worst_violation:.3g}); no integer release weights here, "
              "so `countdp release` will not use it (design it with `countdp design` to get them)")
        return 0 if floats else 1
    alpha = args.alpha if args.alpha is not None else record.get("alpha_exact")
    release_block = record["release"]
    D = release_block.get("denominator")
    K = D.bit_length() - 1 if isinstance(D, int) and D > 0 and D & (D - 1) == 0 else 0
    try:
        W = np.array(release_block["weights"], dtype=np.int64)
        verdict = exact_dp_check(W, alpha, K)
    except (ValueError, OverflowError, TypeError) as exc:
        raise UsageError(f"{args.file}: unreadable release weights ({exc})") from None
    shown = alpha_text(exact_alpha(alpha))
    if verdict.holds:
        print(f"  DP  alpha = {shown}: certified exactly on the integer release weights (D = 2^{K}), "
              f"{verdict.inequalities} inequalities, integer arithmetic")
    else:
        print(f"  DP  alpha = {shown}: NOT alpha-DP on the integer release weights: {verdict.reason}")
    return 0 if verdict.holds else 1


def _randomness(seed: int | None) -> tuple[object, str]:
    if seed is None:
        print("# noise from the OS's secure random source (os.urandom); not reproducible by design", file=sys.stderr)
        return None, "os.urandom: the operating system's cryptographically secure source"
    print("# seeded generator: reproducible, for experiments only, never for real data", file=sys.stderr)
    return np.random.default_rng(seed), f"numpy PCG64 seeded with {seed} (reproducible; for tests, never real data)"


def _release_counts(args: argparse.Namespace) -> int:
    if args.file is None or not args.file.is_file():
        raise UsageError(f"{args.file}: no such file" if args.file else "give a mechanism FILE and true counts")
    try:
        mechanism = load_design(args.file)
    except ValueError as exc:
        raise UsageError(f"refusing to release: {exc}") from None
    if args.input is None:
        if not args.counts or args.count_column or args.out:
            raise UsageError("give true counts, or --input TABLE with --count-column and --out")
        counts = np.asarray(args.counts)
        if counts.min() < 0 or counts.max() > mechanism.n:
            raise UsageError(f"true counts must lie in 0..{mechanism.n}")
        rng, _ = _randomness(args.seed)
        print(" ".join(str(v) for v in release(mechanism, counts, rng)))
        return 0
    if args.counts:
        raise UsageError("give either true counts or --input, not both")
    if not args.count_column or args.out is None:
        raise UsageError("--input needs --count-column and --out")
    from countdp.privacy.release_table import read_table, release_table, write_table  # pandas: only for tables

    try:
        frame = read_table(args.input)
        rng, source = _randomness(args.seed)
        table = release_table(frame, mechanism, args.count_column, args.noisy_column, rng)
    except ValueError as exc:
        raise UsageError(str(exc) if str(exc).startswith(str(args.input)) else f"{args.input}: {exc}") from None
    write_table(table, args.out)
    print(f"# wrote {len(table)} rows to {args.out}", file=sys.stderr)
    return 0


def _release_by_size(args: argparse.Namespace) -> int:
    if args.file is not None or args.counts:
        raise UsageError("with --size-column the mechanisms are designed per size: drop FILE and COUNTS")
    missing = [flag for flag, value in (("--input", args.input), ("--count-column", args.count_column),
                                        ("--mechanism", args.mechanism), ("--out", args.out)) if value is None]
    if args.alpha is None and args.epsilon is None:
        missing.append("--alpha or --epsilon")
    if missing:
        raise UsageError(f"--size-column needs {', '.join(missing)}")
    from countdp.privacy.mechanism_cache import MechanismCache
    from countdp.privacy.release_table import read_table, release_by_size, release_record, write_table

    try:
        alpha = args.alpha if args.epsilon is None else alpha_from_epsilon(args.epsilon)
        frame = read_table(args.input)
        cache = MechanismCache(args.cache)
        rng, source = _randomness(args.seed)
        table, used = release_by_size(frame, lambda n: cache.get(args.mechanism, n, alpha), args.count_column,
                                            args.size_column, args.noisy_column, rng=rng)
    except ValueError as exc:
        raise UsageError(str(exc) if str(exc).startswith(str(args.input)) else f"{args.input}: {exc}") from None
    record = release_record(args.input, args.out, table, used, cache, alpha, source,
                            {"count_column": args.count_column, "size_column": args.size_column,
                             "mechanism": args.mechanism, "epsilon_requested": args.epsilon})
    sidecar = sidecar_path(args.out)
    write_table(table, args.out)
    write_text_atomic(sidecar, json.dumps(record, indent=1) + "\n")
    print(f"# wrote {len(table)} rows to {args.out} ({len(used)} group sizes: {len(cache.designed)} designed, "
          f"{len(cache.hits)} from {cache.root}); provenance in {sidecar}", file=sys.stderr)
    return 0


def sidecar_path(out: Path) -> Path:
    """Where a table release records its provenance: ``noisy.csv`` -> ``noisy.csv.release.json``."""
    return out.with_name(out.name + ".release.json")


def _release(args: argparse.Namespace) -> int:
    if args.size_column is not None:
        return _release_by_size(args)
    if args.mechanism or args.alpha is not None or args.epsilon or args.cache:
        raise UsageError("--mechanism, --alpha, --epsilon and --cache go with --size-column")
    return _release_counts(args)


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
