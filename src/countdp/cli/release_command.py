"""``countdp release``: noisy counts from certified mechanisms, for a list of counts or a table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from countdp.cli.arguments import UsageError, alpha_argument
from countdp.design.designer import MECHANISMS
from countdp.mechanisms.artifact import load_design, write_text_atomic
from countdp.privacy.alpha import alpha_from_epsilon
from countdp.privacy.sampling import release


def register(sub) -> None:
    """Add the ``release`` command to the ``countdp`` subparsers ``sub``."""
    r = sub.add_parser("release", help="release noisy counts with certified mechanisms",
                       description="Release noisy counts: COUNTS with one mechanism FILE; a table with FILE "
                                   "(--input, --count-column); or a table of mixed group sizes (--input, "
                                   "--count-column, --size-column, --mechanism, --alpha or --epsilon).")
    r.set_defaults(handler=_release)
    r.add_argument("file", type=Path, nargs="?", help="a mechanism JSON written by `countdp design`")
    r.add_argument("counts", nargs="*", type=int, help="true counts, each in 0..n")
    r.add_argument("--input", type=Path, default=None, help="a CSV or Parquet table of true counts")
    r.add_argument("--count-column", default=None, help="the table's column of true counts")
    r.add_argument("--size-column", default=None,
                   help="the table's column of group sizes: each size gets its own certified mechanism")
    r.add_argument("--mechanism", type=str.upper, choices=MECHANISMS, default=None,
                   help="with --size-column: the mechanism to design for each size (e.g. EM)")
    release_privacy = r.add_mutually_exclusive_group()
    release_privacy.add_argument("--alpha", type=alpha_argument, default=None, help="with --size-column: exact alpha")
    release_privacy.add_argument("--epsilon", type=str, default=None, help="with --size-column: epsilon")
    r.add_argument("--cache", type=Path, default=None,
                   help="with --size-column: folder of designed mechanisms (default ~/.cache/countdp/mechanisms)")
    r.add_argument("--noisy-column", default=None, help="name of the added column (default noisy_<count column>)")
    r.add_argument("--out", type=Path, default=None, help="the table with noisy counts, CSV or Parquet (atomically)")
    r.add_argument("--seed", type=int, default=None,
                   help="seeded generator for experiments only; without it the OS's secure source is used")


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


