"""``countdp release``: noisy counts from certified mechanisms, for a list of counts or a table.

Three forms:

* ``countdp release FILE 3 0 7``: one noisy count per true count, printed (nothing written);
* ``countdp release FILE --input T --count-column c[,d…] --out O``: every row released with the
  mechanism in FILE;
* ``countdp release --input T --count-column c[,d…] --size-column n --mechanism EM --alpha A --out O``:
  each distinct group size gets its own certified mechanism (designed once, then cached).

A table release writes the kept columns, the noisy counts and the mechanism used, and beside
it a sidecar with the guarantee and how the release was made; both appear together or not at
all.  ``--budget LEDGER`` debits a privacy budget before any noise is drawn; ``--dry-run``
shows each mechanism's exact error and the budget left, drawing and writing nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from countdp.cli.arguments import Once, UsageError, seed_argument
from countdp.privacy.sampling import mechanism_of, release
from countdp.release.draws import EXPERIMENT_ONLY
from countdp.services.artifact import load_design
from countdp.validation import file_problem
from countdp.values.alpha import alpha_text
from countdp.values.catalogue import MECHANISMS


def register(sub) -> None:
    """Add the ``release`` command to the ``countdp`` subparsers ``sub``."""
    r = sub.add_parser("release", help="release noisy counts with certified mechanisms",
                       description=__doc__.split("\n\n")[1].strip().splitlines()[0])
    r.set_defaults(handler=_release)
    r.add_argument("file", type=Path, nargs="?", help="a mechanism file written by `countdp design`")
    r.add_argument("counts", nargs="*", type=int, help="true counts, each in 0..n (printed, nothing written)")
    table = r.add_argument_group("a table release")
    table.add_argument("--input", type=Path, action=Once, help="a CSV or Parquet table of true counts")
    table.add_argument("--count-column", action=Once, help="the table's count columns, comma-separated")
    table.add_argument("--keep", action=Once,
                       help="the columns to publish, comma-separated ('' for none); required when the table has "
                            "columns beside its count, size and --invariant-by columns (default: the size and "
                            "partition columns, which are public)")
    table.add_argument("--out", action=Once,
                       help="the released table (same format as the input), its sidecar beside it as "
                            "OUT.release.json; or, ending in '/', a new folder OUT/ holding table.<input's suffix> "
                            "and its sidecar, published by one rename (all or nothing, whatever dies)")
    table.add_argument("--noisy-column", action=Once, help="names of the noisy columns (default noisy_<count column>)")
    table.add_argument("--overwrite", action="store_true", help="replace an existing release at --out")
    sizes = r.add_argument_group("a mechanism per group size")
    sizes.add_argument("--size-column", action=Once, help="the table's column of group sizes")
    sizes.add_argument("--mechanism", type=str.upper, choices=MECHANISMS, action=Once,
                       help="the mechanism designed for each size (e.g. EM)")
    sizes.add_argument("--objective", default="L0", action=Once, help="its objective (default L0)")
    sizes.add_argument("--alpha", action=Once, help="exact alpha, one for every count column or one each")
    sizes.add_argument("--epsilon", action=Once, help="epsilon, one for every count column or one each")
    sizes.add_argument("--total-epsilon", action=Once, help="one epsilon split evenly over the count columns")
    sizes.add_argument("--levels", action=Once,
                       help="a multi-level release: increasing exact alphas, e.g. 1/2,2/3,9/10; one noisy column per "
                            "level, and any set of levels reveals no more than its smallest alpha (--mechanism GM, the "
                            "default, or EM, WM, WH where each level is a post-processing of the one before)")
    sizes.add_argument("--invariant", choices=["total"], action=Once,
                       help="condition the noisy counts on summing exactly to the true total (published exactly; "
                            "Gong-Meng congenial release); the guarantee is computed and recorded")
    sizes.add_argument("--invariant-by", action=Once, metavar="COLUMN",
                       help="with --invariant: one total per value of this (public) column")
    sizes.add_argument("--target-alpha", action=Once,
                       help="with --invariant and --mechanism GM or EM: choose the per-group alpha so that the "
                            "conditioned release is at least this alpha-DP (instead of --alpha or --epsilon)")
    sizes.add_argument("--cache", type=Path, action=Once,
                       help="folder of designed mechanisms (default ~/.cache/countdp/mechanisms)")
    _records_arguments(r)
    r.add_argument("--budget", type=Path, action=Once,
                   help="a privacy budget ledger (countdp budget init) debited before any noise is drawn")
    r.add_argument("--dry-run", action="store_true",
                   help="show each mechanism, its exact expected error and the budget left; draw and write nothing")
    r.add_argument("--seed", type=seed_argument, action=Once,
                   help="a seeded generator, for experiments only (the sidecar then claims no guarantee; refused "
                        "with --budget); without it the OS's secure source is used")


def _records_arguments(r) -> None:
    """The options of a release of person records."""
    records = r.add_argument_group("a release of person records (grouped by DuckDB, or Spark)")
    records.add_argument("--records", action=Once,
                         help="person records, one row per record: a CSV or Parquet file, a glob, or a folder of "
                              "Parquet files (Hive partitions); grouped in place, no true-count table written. A CSV "
                              "column is text unless --type declares it; Parquet's own schema is taken as public")
    records.add_argument("--group-by", action=Once,
                         help="the public columns that make the groups, comma-separated (published, as are the "
                              "group sizes, in --size-column, default n)")
    records.add_argument("--count", action="append", metavar="NAME=PREDICATE",
                         help="a count column: the number of the group's records for which the SQL boolean "
                              "PREDICATE holds, e.g. --count young=\"age < 30\" (repeat for several)")
    records.add_argument("--type", action="append", metavar="COLUMN=TYPE", dest="types",
                         help="declare a column's type, one of BOOLEAN, INTEGER, BIGINT, DOUBLE, DATE, TIMESTAMP, "
                              "VARCHAR (repeat for several), e.g. --type age=INTEGER: converted with TRY_CAST, a value "
                              "that does not convert is NULL and no predicate holds on it; types never come from "
                              "the records' values")
    records.add_argument("--person-id", action=Once, metavar="COLUMN",
                         help="the column naming each person: a person in several records is refused")
    records.add_argument("--one-record-per-person", choices=["random"], action=Once,
                         help="with --person-id: keep one of each person's records, chosen with bits from the OS's "
                              "secure source")
    records.add_argument("--engine", choices=["duckdb", "spark"], action=Once,
                         help="the engine that groups the records (default duckdb)")
    records.add_argument("--spark-master", action=Once, help="with --engine spark: the master (default local[*])")


def _randomness_note(seed: int | None) -> None:
    if seed is None:
        print("# noise from the OS's secure random source (os.urandom); not reproducible by design", file=sys.stderr)
    else:
        print(f"# seeded generator: {EXPERIMENT_ONLY}; never use it for real data", file=sys.stderr)


def _load(path: Path):
    if (problem := file_problem(path, "a mechanism file")) is not None:
        raise UsageError(f"{path}: {problem}")
    try:
        return load_design(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _release_counts(args: argparse.Namespace) -> int:
    if args.file is None or not args.counts:
        raise UsageError("give a mechanism FILE and true counts, or a table with --input")
    if args.out or args.count_column or args.dry_run or args.budget:
        raise UsageError("--out, --count-column, --dry-run and --budget go with --input TABLE")
    mechanism = _load(args.file)
    counts = np.asarray(args.counts)
    if counts.min() < 0 or counts.max() > mechanism.n:
        raise UsageError(f"true counts must lie in 0..{mechanism.n}")
    _randomness_note(args.seed)
    if args.seed is None:
        _guarantee_note(args.file, mechanism)
    rng = None if args.seed is None else np.random.default_rng(args.seed)
    print(" ".join(str(v) for v in release(mechanism, counts, rng)))
    return 0


HOW_CERTIFIED = {"matrix": "a matrix certified alpha-DP in exact arithmetic on the integer weights sampled",
                 "structural": "a structural form certified alpha-DP in exact arithmetic on the tables sampled"}


def _guarantee_note(path: Path, design) -> None:
    """What the printed counts carry, said beside them: the counts form writes no sidecar, and a
    release must say what guarantee it has and how it was made.  The mechanism's alpha is the one
    certified in exact arithmetic on the integer weights that are sampled."""
    released = mechanism_of(design)
    alpha, how = released.alpha, HOW_CERTIFIED.get(released.representation, released.representation)
    print(f"# guarantee: each count printed is alpha-DP with alpha = {alpha_text(alpha)} exactly (epsilon = "
          f"{-math.log(alpha):.6g}) for one person's bit in that count's group of n = {released.n}, by "
          f"{design.mechanism} from {path} ({how}); counts of disjoint groups compose in parallel, counts of the same "
          "people add their epsilons; no privacy budget is debited (a table release with --budget debits one)",
          file=sys.stderr)


def _options(args: argparse.Namespace):
    """The release the arguments ask for, as :class:`~countdp.release.options.Options` (checked there)."""
    from countdp.release.options import Options  # lazy: keeps pyarrow (the table reader) out of the CLI's start-up

    return Options(counts=args.count_column, out=args.out, size=args.size_column, mechanism=args.mechanism,
                   mechanism_file=args.file, objective=args.objective, alpha=args.alpha, epsilon=args.epsilon,
                   total_epsilon=args.total_epsilon, levels=args.levels, invariant=args.invariant,
                   invariant_by=args.invariant_by, target_alpha=args.target_alpha, keep=args.keep,
                   noisy=args.noisy_column, cache=args.cache, budget=args.budget, seed=args.seed,
                   overwrite=args.overwrite, command=tuple(sys.argv))


def _note(line: str) -> None:
    print(line, file=sys.stderr)


def _release_table(args: argparse.Namespace) -> int:
    from countdp.release.options import CLI, build_request  # lazy: scipy and pyarrow stay out of start-up
    from countdp.release.run import run_release  # lazy: likewise

    missing = [flag for flag, value in (("--input", args.input), ("--count-column", args.count_column),
                                        ("--out", args.out)) if value is None]
    if missing:
        raise UsageError(f"a table release needs {', '.join(missing)}")
    request, design = build_request(_options(args), args.input, CLI)
    outcome = run_release(request, design, dry_run=args.dry_run, notes=_note)
    if outcome.preview is not None:
        sys.stdout.write(outcome.preview)
    return 0


def _release_records(args: argparse.Namespace) -> int:
    from countdp.release.options import CLI  # lazy: the release layer stays out of the CLI's start-up
    from countdp.release.records import build_spec  # lazy: likewise
    from countdp.release.records_run import records_release  # lazy: duckdb, likewise

    given = [flag for flag, value in (("--input", args.input), ("--count-column", args.count_column),
                                      ("FILE", args.file), ("--noisy-column", args.noisy_column)) if value]
    if given:
        raise UsageError(f"{', '.join(given)} go with a table release, not --records (name counts with --count)")
    if args.out is None and not args.dry_run:
        raise UsageError("a records release needs --out")
    spec = build_spec(args.group_by, args.count, args.size_column, args.person_id, args.one_record_per_person, CLI,
                      args.types)
    options = _options(args)
    options.counts, options.size, options.mechanism_file = spec.count_names, spec.size, None
    outcome, _ = records_release(args.records, "path", spec, options, CLI, engine=args.engine,
                                 spark_master=args.spark_master, dry_run=args.dry_run, notes=_note)
    if outcome.preview is not None:
        sys.stdout.write(outcome.preview)
    return 0


def _release(args: argparse.Namespace) -> int:
    if args.records is not None:
        try:
            return _release_records(args)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    stray = [flag for flag, value in (("--group-by", args.group_by), ("--count", args.count), ("--type", args.types),
                                      ("--person-id", args.person_id), ("--engine", args.engine),
                                      ("--one-record-per-person", args.one_record_per_person),
                                      ("--spark-master", args.spark_master)) if value]
    if stray:
        raise UsageError(f"{', '.join(stray)} go with --records")
    if args.input is None and args.size_column is None:
        return _release_counts(args)
    if args.counts:
        raise UsageError("give either true counts or --input, not both")
    try:
        return _release_table(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
