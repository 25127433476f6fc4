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
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from countdp.cli.arguments import Once, UsageError, alpha_argument
from countdp.cli.release_budget import account, debit_release
from countdp.privacy.sampling import release
from countdp.progress import Progress
from countdp.release.draws import EXPERIMENT_ONLY, Randomness
from countdp.release.ledger import BudgetExceeded, Ledger
from countdp.release.preview import preview
from countdp.services.artifact import load_design
from countdp.services.mechanism_cache import MechanismCache
from countdp.values.alpha import alpha_from_epsilon, exact_alpha
from countdp.values.catalogue import CHAIN_MECHANISMS, MECHANISMS
from countdp.version import __version__


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
    r.add_argument("--budget", type=Path, action=Once,
                   help="a privacy budget ledger (countdp budget init) debited before any noise is drawn")
    r.add_argument("--dry-run", action="store_true",
                   help="show each mechanism, its exact expected error and the budget left; draw and write nothing")
    r.add_argument("--seed", type=int, action=Once,
                   help="a seeded generator, for experiments only (the sidecar then claims no guarantee; refused "
                        "with --budget); without it the OS's secure source is used")


def _randomness_note(seed: int | None) -> None:
    if seed is None:
        print("# noise from the OS's secure random source (os.urandom); not reproducible by design", file=sys.stderr)
    else:
        print(f"# seeded generator: {EXPERIMENT_ONLY}; never use it for real data", file=sys.stderr)


def _load(path: Path):
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
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
    rng = None if args.seed is None else np.random.default_rng(args.seed)
    print(" ".join(str(v) for v in release(mechanism, counts, rng)))
    return 0


def _split(text: str | None, what: str) -> list[str]:
    items = [item.strip() for item in (text or "").split(",")]
    if any(item == "" for item in items):
        raise UsageError(f"{what} has an empty name in {text!r}")
    return items


def _epsilon(text: str) -> Fraction:
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise UsageError(f"epsilon must be a number or a 'p/q' fraction, got {text!r}") from None
    if value <= 0:
        raise UsageError(f"epsilon must be > 0, got {text!r}")
    return value


def _per_column(values: list, columns: int, flag: str) -> list:
    if len(values) == 1:
        return values * columns
    if len(values) != columns:
        raise UsageError(f"{flag} gives {len(values)} values for {columns} count columns; give one, or one each")
    return values


def _levels(text: str) -> tuple[Fraction, ...]:
    """``--levels``: two or more exact alphas, strictly increasing (the first is the least private)."""
    try:
        levels = tuple(alpha_argument(a) for a in _split(text, "--levels"))
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--levels: {exc}") from None
    if len(levels) < 2:
        raise UsageError(f"--levels needs at least two alphas, got {text!r}; for one level use --alpha")
    if any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise UsageError(f"--levels must increase strictly (least private first), got {text!r}")
    return levels


def _target(args: argparse.Namespace) -> Fraction:
    """``--target-alpha``: only for a conditioned release of GM or EM (whose alpha can be chosen in closed form)."""
    if not args.invariant:
        raise UsageError("--target-alpha goes with --invariant total")
    if args.mechanism not in ("GM", "EM"):
        raise UsageError("--target-alpha chooses the alpha of GM or EM; give --mechanism GM or EM")
    try:
        return alpha_argument(args.target_alpha)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--target-alpha: {exc}") from None


def _invariant(args: argparse.Namespace, levels: tuple) -> dict:
    """The request's invariant fields from ``--invariant``, ``--invariant-by`` and ``--target-alpha``."""
    if args.invariant_by is not None and args.invariant is None:
        raise UsageError("--invariant-by goes with --invariant total")
    if args.invariant and levels:
        raise UsageError("--invariant and --levels cannot be combined")
    target = None if args.target_alpha is None else _target(args)
    return {"invariant": bool(args.invariant), "invariant_by": args.invariant_by, "target_alpha": target}


def _privacy(args: argparse.Namespace, columns: int) -> list[tuple[Fraction, Fraction | None]]:
    """``(alpha, epsilon requested or None)`` for each count column."""
    given = [flag for flag in ("alpha", "epsilon", "total_epsilon", "levels", "target_alpha")
             if getattr(args, flag) is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --alpha, --epsilon, --total-epsilon, --levels and --target-alpha")
    if args.levels is not None:
        return [(_levels(args.levels)[0], None)] * columns
    if args.target_alpha is not None:
        return [(_target(args), None)] * columns
    try:
        if args.alpha is not None:
            return [(alpha_argument(a), None) for a in _per_column(args.alpha.split(","), columns, "--alpha")]
        if args.epsilon is not None:
            epsilons = _per_column([_epsilon(e) for e in args.epsilon.split(",")], columns, "--epsilon")
        else:
            epsilons = [_epsilon(args.total_epsilon) / columns] * columns
        return [(alpha_from_epsilon(e), e) for e in epsilons]
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise UsageError(str(exc)) from None


def _request(args: argparse.Namespace):
    # lazy: keeps pyarrow (the table reader) out of the CLI's start-up
    from countdp.release.request import ColumnPrivacy, ReleaseRequest

    missing = [flag for flag, value in (("--input", args.input), ("--count-column", args.count_column),
                                        ("--out", args.out)) if value is None]
    if missing:
        raise UsageError(f"a table release needs {', '.join(missing)}")
    counts = _split(args.count_column, "--count-column")
    noisy = _split(args.noisy_column, "--noisy-column") if args.noisy_column else [f"noisy_{c}" for c in counts]
    if len(noisy) != len(counts):
        raise UsageError(f"--noisy-column gives {len(noisy)} names for {len(counts)} count columns")
    keep = None if args.keep is None else tuple(_split(args.keep, "--keep")) if args.keep.strip() else ()
    if args.seed is not None and args.budget is not None:
        raise UsageError("--seed makes the noise reproducible from the sidecar, so a seeded release protects nobody "
                         "and cannot spend a privacy budget: drop --seed (or --budget, for an experiment)")
    # a trailing "/" (which Path drops) asks for a release folder
    common = {"input": args.input, "out": Path(args.out), "out_folder": args.out.endswith("/"), "out_typed": args.out,
              "keep": keep, "seed": args.seed, "budget": args.budget, "overwrite": args.overwrite,
              "command": tuple(sys.argv)}
    if args.size_column is None:
        if args.file is None:
            raise UsageError("a table release needs a mechanism FILE, or --size-column with --mechanism")
        if args.mechanism or args.alpha or args.epsilon or args.total_epsilon or args.cache or args.levels or \
                args.target_alpha:
            raise UsageError("--mechanism, --alpha, --epsilon, --total-epsilon, --levels, --target-alpha and --cache "
                             "go with --size-column")
        design = _load(args.file)
        alpha = exact_alpha(design.alpha_exact)
        columns = tuple(ColumnPrivacy(c, alpha, None, name) for c, name in zip(counts, noisy, strict=True))
        return ReleaseRequest(columns=columns, mechanism_file=args.file, n=design.n, **common,
                              **_invariant(args, ())), design
    if args.file is not None or args.counts:
        raise UsageError("with --size-column the mechanisms are designed per size: drop FILE and COUNTS")
    levels = () if args.levels is None else _levels(args.levels)
    if levels and args.mechanism not in (None, *CHAIN_MECHANISMS):
        raise UsageError(f"--levels chains {', '.join(CHAIN_MECHANISMS)}; --mechanism {args.mechanism} cannot be "
                         "released at several levels")
    if levels and args.cache:
        raise UsageError("--levels builds each size's chain of GM mechanisms in memory; drop --cache")
    if args.mechanism is None and not levels:
        raise UsageError("--size-column needs --mechanism")
    privacy = _privacy(args, len(counts))
    columns = tuple(ColumnPrivacy(c, a, e, name, levels)
                    for c, (a, e), name in zip(counts, privacy, noisy, strict=True))
    return ReleaseRequest(columns=columns, size_column=args.size_column, mechanism=args.mechanism or "GM",
                          objective=args.objective, cache=args.cache, **common, **_invariant(args, levels)), None


def _mechanisms(request, design, dry_run: bool):
    """``mechanism_for(k, n)``: the file's design, or the cache's (a dry run designs without storing)."""
    if design is not None:
        return FileMechanism(design)
    if request.columns[0].levels:
        # lazy: keeps scipy (the levels chain's solver stack) out of the CLI's start-up
        from countdp.release.levels import LevelMechanisms

        return LevelMechanisms(request.columns, request.mechanism)
    return CachedMechanisms(request, MechanismCache(request.cache, store=not dry_run))


class FileMechanism:
    """``mechanism_for(k, n)``: the file's design for every column, held as its file holds it (a matrix, or a
    structural form, whose sizes ``matrix_sizes`` leaves out of the memory check)."""

    def __init__(self, design) -> None:
        self.design = design

    def __call__(self, k: int, n: int, columns=None):
        return self.design

    def matrix_sizes(self, k: int, sizes):
        return np.asarray(sizes)[:0] if self.design.matrix is None else np.asarray(sizes)


class CachedMechanisms:
    """``mechanism_for(k, n)`` from the mechanism cache, and ``.many(k, sizes)`` for all of a column's sizes."""

    def __init__(self, request, cache: MechanismCache) -> None:
        self.request, self.cache = request, cache

    def __call__(self, k: int, n: int, columns=None):
        request = self.request
        return self.cache.get(request.mechanism, n, (columns or request.columns)[k].alpha, request.objective)

    def many(self, k: int, sizes):
        request = self.request
        return self.cache.get_many(request.mechanism, sizes, request.columns[k].alpha, request.objective)

    def matrix_sizes(self, k: int, sizes):
        """The sizes whose mechanism count column ``k`` holds as a matrix (the rest as structure)."""
        request = self.request
        return self.cache.matrix_sizes(request.mechanism, sizes, request.columns[k].alpha, request.objective)


def _preflight(prepared) -> None:
    """What can fail before any noise is drawn: the output folder writable, with room for the output.

    The room asked for is a lower bound of what the release writes (two bytes a noisy CSV value,
    a quarter of a byte in Parquet, whose encodings compress), and the files it holds at once: two
    for a table and its sidecar, three for a release folder (the folder, then its two files, or
    while probing renameat2, two empty probes).  A folder that cannot hold that is refused before
    the debit; a disk that fills during the write leaves nothing, and the ledger entry is marked failed.
    """
    from countdp.release.atomic import preflight  # lazy: the release layer stays out of the CLI's start-up
    from countdp.release.tables import table_format  # lazy: keeps pyarrow out of the CLI's start-up

    request = prepared.request
    noisy = sum(len(c.noisy_columns) for c in request.columns)
    per_row = noisy / 4 if table_format(request.input) == "parquet" else 2 * noisy
    try:
        files = 3 if request.out_folder else 2
        preflight(request.out.parent, int(prepared.validated.rows * per_row) + (1 << 14), files)
    except OSError as exc:
        raise UsageError(f"--out {request.out_text}: {exc.strerror or exc}; nothing was drawn or spent") from None


def _release_table(args: argparse.Namespace) -> int:
    from countdp.release.atomic import repair  # lazy: the release layer stays out of the CLI's start-up
    from countdp.release.engine import check_out_name, prepare  # lazy: scipy and pyarrow, likewise

    request, design = _request(args)
    ledger = Ledger(request.budget) if request.budget else None
    if ledger is not None:
        ledger.state()  # a missing or malformed ledger is refused before any work
    check_out_name(request)  # an --out no release can write is refused before any cleanup
    if not args.dry_run:
        # a sidecar left alone by a release killed together with its guardian; dead releases' partial
        # files and folders (a release folder is written beside OUT, in the same parent)
        repair(request.out.parent)
    prepared = prepare(request, _mechanisms(request, design, args.dry_run), dry_run=args.dry_run)
    request = prepared.request  # with --target-alpha, it now holds the alpha chosen
    if args.dry_run:
        try:
            budget = ledger.check(prepared.epsilon, account=account(request)) if ledger else None
        except BudgetExceeded as exc:
            budget = f"{exc}: the release would be refused"
        sys.stdout.write(preview(prepared, budget))
        return 0
    _preflight(prepared)
    debit = debit_release(ledger, prepared) if ledger is not None else None
    _randomness_note(request.seed)
    return _write(prepared, ledger, debit)


def _write(prepared, ledger: Ledger | None, debit: dict | None) -> int:
    """Draw, write and commit the release, then mark its ledger entry committed and report it.

    From just before the commit names anything to the report, SIGINT, SIGTERM and SIGHUP are held
    (:class:`~countdp.release.engine.HeldSignals`): once named, the release is published, and the
    entry, the report and the status say so whatever arrives; such a signal is then noted, and the
    command ends as it was about to.  Before that, an interrupt fails the release as any error does.
    """
    from countdp.release.engine import HeldSignals, write_release  # lazy: scipy and pyarrow
    from countdp.release.partials import SIDECAR_SUFFIX  # lazy: the release layer stays out of the CLI's start-up

    request = prepared.request
    progress = Progress(prepared.validated.rows, "rows released")
    with HeldSignals() as held:
        try:
            randomness = Randomness(request.seed, sum(len(c.noisy_columns) for c in request.columns))
            record = write_release(prepared, randomness, __version__, debit, progress.advance, hold=held.hold)
        except BaseException as exc:
            spent = "" if debit is None else f" (its epsilon stays spent: entry {debit['entry']} is marked failed)"
            if debit is not None:
                ledger.fail(debit["entry"], f"{type(exc).__name__}: {exc}")
            if isinstance(exc, FileExistsError):  # another release committed there first
                raise UsageError(f"{exc.strerror}{spent}") from None
            if isinstance(exc, OSError):
                raise UsageError(f"{request.out_text}: {exc.strerror or exc}; nothing was written{spent}") from None
            if isinstance(exc, ValueError):
                raise ValueError(f"{exc}{spent}") from None
            raise
        finally:
            progress.close()
        if ledger is not None:
            ledger.commit(debit["entry"], {"out": str(request.table_path), "sha256": record["output"]["sha256"]})
        print(f"# wrote {prepared.validated.rows} rows to {request.table_text}; the guarantee and provenance are in "
              f"{request.table_text}{SIDECAR_SUFFIX}", file=sys.stderr)
    if held.received:
        print(f"# {', '.join(held.received)} arrived while the release was being published; it was published and "
              "recorded, and the command ends here", file=sys.stderr)
    return 0


def _release(args: argparse.Namespace) -> int:
    if args.input is None and args.size_column is None:
        return _release_counts(args)
    if args.counts:
        raise UsageError("give either true counts or --input, not both")
    try:
        return _release_table(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
