"""The ``countdp`` command line: design, check, release, budget and interpret.

``countdp design MECH --n N --alpha A`` (or ``--epsilon E``) prints a certified mechanism as
JSON (or CSV), with its integer release weights; ``countdp check FILE`` reports its
properties and its exact DP verdict; ``countdp release FILE`` draws noisy counts, exactly
from the release weights, with bits from the OS's secure source; ``countdp budget`` keeps a
dataset's privacy budget; ``countdp interpret FILE --loss L1`` gives a data user the optimal
remap of a released mechanism for their loss (post-processing: no budget).  Bad arguments or files exit
with status 2 and one line naming the problem.
"""

from __future__ import annotations

import argparse
import sys

from countdp.cli import budget_command, design_command, interpret_command, release_command
from countdp.cli.arguments import Parser, UsageError
from countdp.design.designer import DesignError


def build_parser() -> argparse.ArgumentParser:
    """The ``countdp`` parser: one subcommand module each (:mod:`.design_command`, :mod:`.release_command`)."""
    parser = Parser(prog="countdp", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    design_command.register(sub)
    release_command.register(sub)
    budget_command.register(sub)
    interpret_command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except (UsageError, DesignError, OSError) as exc:
        print(f"countdp: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("countdp: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
