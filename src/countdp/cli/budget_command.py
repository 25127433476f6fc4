"""``countdp budget``: create a dataset's privacy budget ledger, and show what it has spent."""

from __future__ import annotations

import argparse
import json
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

from countdp.cli.arguments import Parser, UsageError, checked
from countdp.release.ledger import Ledger, LedgerError, LedgerState, amount_text, parse_amount

DESCRIPTION = (
    "A privacy budget ledger holds the total epsilon that releases about one dataset's people may spend "
    "(their epsilons add up) and one entry per release.  A release is debited before its noise is drawn "
    "and committed once its files are in place; an entry left 'debited' (a crash or a failed release "
    "between the two) stays spent, the conservative choice: the budget is never given back.  Amounts are "
    "exact: decimals (0.1) or fractions (1/3).")


def register(sub) -> None:
    """Add the ``budget`` command (``budget init``, ``budget show``) to the ``countdp`` subparsers ``sub``."""
    budget = sub.add_parser("budget", help="a dataset's privacy budget ledger: init, show", description=DESCRIPTION)
    actions = budget.add_subparsers(dest="budget_command", metavar="{init,show}", required=True, parser_class=Parser)
    init = actions.add_parser("init", help="create a ledger with a total epsilon (never overwrites one)",
                              description=DESCRIPTION)
    init.set_defaults(handler=_init)
    init.add_argument("ledger", type=Path, help="the ledger file to create (JSON), in an existing folder")
    init.add_argument("--epsilon", type=_epsilon_argument, required=True,
                      help="the total epsilon, exact: 1, 0.5, 1/3")
    init.add_argument("--dataset", default=None, help="the dataset's name (default: the ledger file's name)")
    show = actions.add_parser("show", help="print the total, spent and remaining epsilon and every entry",
                              description=DESCRIPTION)
    show.set_defaults(handler=_show)
    show.add_argument("ledger", type=Path, help="a ledger written by `countdp budget init`")


def _epsilon_argument(text: str) -> Fraction:
    """An exact epsilon > 0 (``"1"``, ``"0.5"``, ``"1/3"``)."""
    return checked(lambda value: parse_amount(value, "epsilon"), text)


def _approximately(amount: Fraction) -> str:
    """``amount`` exactly, followed by a 12-digit decimal when the exact text is not already a short decimal."""
    exact = amount_text(amount)
    if "/" not in exact and len(exact.replace(".", "").lstrip("0")) <= 12:
        return exact
    decimal = Context(prec=12).divide(Decimal(amount.numerator), Decimal(amount.denominator))
    return f"{exact} (~{decimal})"


def _init(args: argparse.Namespace) -> int:
    """``budget init``: create the ledger (never over an existing file)."""
    dataset = args.dataset if args.dataset is not None else args.ledger.stem
    try:
        Ledger.create(args.ledger, args.epsilon, dataset)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    print(f"created {args.ledger}: dataset {dataset}, total epsilon {_approximately(args.epsilon)}")
    return 0


def _report(path: Path, state: LedgerState) -> list[str]:
    """The lines ``budget show`` prints for ``state``."""
    debited = sum(1 for entry in state.entries if entry.status == "debited")
    lines = [f"ledger     {path} (dataset {state.dataset}, created {state.created})",
             f"total      epsilon {_approximately(state.total)}",
             f"spent      epsilon {_approximately(state.spent)}",
             f"remaining  epsilon {_approximately(state.remaining)}",
             f"entries    {len(state.entries)} ({len(state.entries) - debited} committed, {debited} debited; "
             "debited entries count as spent)"]
    for entry in state.entries:
        what = json.dumps(entry.what, ensure_ascii=False, separators=(", ", ": "))
        lines.append(f"  {entry.entry_id}  {entry.time}  epsilon {amount_text(entry.epsilon)}  {entry.status:<9}  "
                     f"{what}")
    return lines


def _show(args: argparse.Namespace) -> int:
    """``budget show``: the budget and its entries, read under a shared lock."""
    try:
        state = Ledger(args.ledger).state()
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(_report(args.ledger, state)))
    return 0
