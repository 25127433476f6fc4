"""``countdp design`` and ``countdp check``: a certified mechanism, and the verdict on a mechanism file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from countdp.cli.arguments import (
    UsageError,
    alpha_argument,
    gib_argument,
    positive_int,
    seconds_argument,
    tolerance_argument,
)
from countdp.design.designer import NARROW_MAX_N, REPRESENTATION_CHOICES, SOLVERS, design_named
from countdp.design.memory import GIB
from countdp.design.settings import SolverSettings
from countdp.mechanisms.properties import DEFAULT_TOL, check_all, check_dp
from countdp.privacy.certify import MAX_REPAIR_LAMBDA, is_alpha_dp
from countdp.privacy.exact import exact_dp_check
from countdp.progress import StageLog
from countdp.services.artifact import (
    design_to_dict,
    load_certified,
    load_matrix,
    save_design,
    save_matrix_csv,
    to_json,
)
from countdp.validation import file_problem
from countdp.values.alpha import alpha_from_epsilon, alpha_text, epsilon_of
from countdp.values.catalogue import MECHANISMS
from countdp.values.objectives import objective_value
from countdp.values.properties import PROPERTIES


def register(sub) -> None:
    """Add the ``design`` and ``check`` commands to the ``countdp`` subparsers ``sub``."""
    d = sub.add_parser("design", help="design a certified mechanism and print it")
    d.set_defaults(handler=_design)
    d.add_argument("mechanism", type=str.upper, choices=MECHANISMS,
                   help="GM, EM, UM (closed forms), WM (LP: WH+RM+CM+S), WH (LP: WH+S), LP (--props)")
    d.add_argument("--n", type=positive_int, required=True, help="group size n >= 1")
    privacy = d.add_mutually_exclusive_group(required=True)
    privacy.add_argument("--alpha", type=alpha_argument,
                         help="privacy, 0 < alpha < 1, exact: 2/3, 0.91 (alpha = e^-epsilon)")
    privacy.add_argument("--epsilon", type=str, default=None,
                         help="privacy as epsilon > 0; alpha is the nearest multiple of 2^-63 at or above e^-epsilon")
    d.add_argument("--objective", default="L0", help="L0, L0d:D (mass more than D off the diagonal), L1, L2")
    d.add_argument("--props", default="", help=f"properties for LP, comma-separated: {','.join(PROPERTIES)}")
    d.add_argument("--solver", type=str.upper, default="HIGHS", choices=sorted(SOLVERS))
    d.add_argument("--method", default=None, help="simplex or ipm for HIGHS (default simplex)")
    d.add_argument("--max-repair", type=tolerance_argument, default=MAX_REPAIR_LAMBDA,
                   help=f"largest UM weight a solver answer's DP repair may mix in (default {MAX_REPAIR_LAMBDA:g})")
    d.add_argument("--time-limit", type=seconds_argument, default=None, metavar="SECONDS",
                   help="stop the search after this many seconds and write the best design proven feasible, "
                        "exactly DP, with its certified gap (status 'not proven optimal'); also the way past the "
                        "general path's memory bound")
    d.add_argument("--memory-bound", type=gib_argument, default=None, metavar="GIB",
                   help="the general path's memory bound, in GiB (default 2): where no fast path answers, a design "
                        "whose general LP is estimated above it is refused; raise it to run that LP to a proven "
                        "optimum (WM, L1, n = 1024, alpha = 0.99: 3 minutes, a 1.9 GiB peak)")
    d.add_argument("--representation", choices=REPRESENTATION_CHOICES, default="auto",
                   help=f"matrix, or structural (a table and a rule: a file of bytes at any n); auto: a matrix up "
                        f"to n = {NARROW_MAX_N}, beyond it the structural form wherever the release has one")
    d.add_argument("--format", choices=("json", "csv"), default="json")
    d.add_argument("--out", type=Path, default=None,
                   help="write here (atomically) instead of stdout: X.json (with its arrays in X.npz beside it), "
                        "or with --format csv the matrix at exactly this path")

    c = sub.add_parser("check", help="report properties and the DP verdict of a mechanism file")
    c.set_defaults(handler=_check)
    c.add_argument("file", type=Path, help="a mechanism JSON (from design; verified as `countdp release` verifies it) "
                                           "or a CSV matrix")
    c.add_argument("--alpha", type=alpha_argument, default=None,
                   help="alpha to check, exact (required for CSV; for a JSON, default its own alpha)")
    c.add_argument("--tol", type=tolerance_argument, default=DEFAULT_TOL,
                   help="tolerance for the structural properties")


def _output_path(out: Path, fmt: str) -> Path:
    """``--out`` as given, or a one-line error if its suffix is not the one ``--format`` writes."""
    suffix = out.suffix.lower()
    if fmt == "json" and suffix != ".json":
        raise UsageError(f"{out}: --format json writes a .json file (its arrays go to the .npz beside it); "
                         "give --out ending in .json")
    if fmt == "csv" and suffix in (".json", ".npz"):
        raise UsageError(f"{out}: --format csv writes a CSV matrix, not a {suffix} file")
    return out


def _design(args: argparse.Namespace) -> int:
    if args.mechanism != "LP" and args.props:
        raise UsageError(f"--props applies to LP only; {args.mechanism} has a fixed definition")
    out = None if args.out is None else _output_path(args.out, args.format)
    try:
        alpha = args.alpha if args.epsilon is None else alpha_from_epsilon(args.epsilon)
        with StageLog("countdp"):  # what a design past a second is doing, on stderr
            options = {} if args.solver == "HIGHS" and args.method is None else \
                {"solver": args.solver, "method": args.method}
            if args.time_limit is not None:
                options["time_limit"] = args.time_limit
            if args.memory_bound is not None:
                options["settings"] = SolverSettings.of(memory_bound=int(args.memory_bound * GIB))
            result = design_named(args.mechanism, args.n, alpha, objective=args.objective, properties=args.props,
                                  representation=args.representation, max_repair_lambda=args.max_repair, **options)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "csv" and result.matrix is None:
        raise UsageError(f"{args.mechanism} n={args.n} is held as structure (no matrix to write as CSV); "
                         "use --format json, or --representation matrix where it fits")
    stopped = result.extra.get("stopped")
    if stopped is not None:  # the search stopped before a proof: say what is written, and its gap
        sys.stderr.write(f"countdp: {stopped['reason']}: {stopped['design_from']}, status {result.status}, "
                         f"certified gap {stopped['gap']:.3g} ({stopped['gap_rel']:.3g} relative)\n")
    if args.epsilon is not None:
        result.extra["epsilon_requested"] = args.epsilon
        result.extra["epsilon_guaranteed"] = epsilon_of(alpha)
    if out is not None:
        try:
            if args.format == "json":
                save_design(result, out)
            else:
                save_matrix_csv(result.matrix, out)
        except OSError as exc:
            raise UsageError(f"{out}: cannot write it ({exc.strerror or exc})") from None
        return 0
    if args.format == "csv":
        np.savetxt(sys.stdout, result.matrix, delimiter=",", fmt="%.17g")
    else:
        sys.stdout.write(to_json(design_to_dict(result)))
    return 0


def _check_csv(args: argparse.Namespace) -> int:
    """A bare CSV matrix: its properties, and DP on its floats at ``--alpha`` (no release weights to test)."""
    if args.alpha is None:
        raise UsageError(f"{args.file}: a CSV matrix needs --alpha to check differential privacy")
    try:
        P = load_matrix(args.file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _report(args.file, P, args.tol)
    floats = is_alpha_dp(P, float(args.alpha))
    print(f"  DP  alpha = {alpha_text(args.alpha)}: {'holds' if floats else 'FAILS'} on the float matrix "
          f"(worst violation {check_dp(P, float(args.alpha)).worst_violation:.3g}); no integer release weights "
          "here, so `countdp release` will not use it (design it with `countdp design` to get them)")
    return 0 if floats else 1


def _report(path: Path, P: np.ndarray, tol: float) -> None:
    n = P.shape[0] - 1
    print(f"mechanism: {path} (n = {n}, {n + 1}x{n + 1}, P[i, j] = Pr[output i | input j])")
    for name, check in check_all(P, tol).items():
        print(f"  {name:<3} {'yes' if check.holds else 'no ':<4} worst violation {check.worst_violation:.3g}")
    print(f"  L0  {objective_value(P, 'L0'):.6f}")


def _check(args: argparse.Namespace) -> int:
    if (problem := file_problem(args.file, "a mechanism file")) is not None:
        raise UsageError(f"{args.file}: {problem}")
    if args.file.suffix.lower() == ".csv":
        return _check_csv(args)
    try:  # the loader `countdp release` uses: a file it refuses is refused here, in the same words
        record = load_certified(args.file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    released = record["released"]
    if "matrix" not in record:
        return _check_structural(args, record)
    _report(args.file, record["matrix"], args.tol)
    alpha = released.alpha if args.alpha is None else args.alpha
    # the loader ran the exact test at the file's own alpha; another --alpha is tested here
    verdict = released.certificate if alpha == released.alpha else exact_dp_check(released.weights, alpha, released.K)
    shown = alpha_text(alpha)
    if verdict.holds:
        print(f"  DP  alpha = {shown}: certified exactly on the integer release weights (D = 2^{released.K}), "
              f"{verdict.inequalities} inequalities, integer arithmetic")
    else:
        print(f"  DP  alpha = {shown}: NOT alpha-DP on the integer release weights: {verdict.reason} "
              f"(the file is certified at its own alpha = {alpha_text(released.alpha)})")
    return 0 if verdict.holds else 1


def _check_structural(args: argparse.Namespace, record: dict) -> int:
    """A design held as structure: its certificate, rebuilt and re-checked by the loader, and its exact errors."""
    form = record["released"]
    check = form.certify()
    print(f"mechanism: {args.file} ({record['mechanism']}, n = {form.n}, a structural form: {form.mechanism} over "
          f"2^{form.K}, its table serving sizes {form.sizes[0]}..{form.sizes[1]}; no matrix)")
    errors = record.get("extra", {}).get("errors", {})
    if "l0_uniform" in errors:
        print(f"  L0  {float(errors['l0_uniform']):.6f}")
    if args.alpha is not None and args.alpha != form.alpha:
        raise UsageError(f"{args.file}: a structural form is certified at its own alpha = {alpha_text(form.alpha)} "
                         "only (its tables are built for it); check another alpha on a design of that alpha")
    print(f"  DP  alpha = {alpha_text(form.alpha)}: certified exactly by its structure ({check.checks} integer "
          f"comparisons on the tables the sampler reads: {check.argument})")
    return 0 if check.holds else 1
