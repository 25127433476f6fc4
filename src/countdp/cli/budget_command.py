"""``countdp budget``: create a dataset's privacy budget ledger, give it an invariant account, show what it spent."""

from __future__ import annotations

import argparse
import json
from decimal import Context, Decimal
from fractions import Fraction
from pathlib import Path

from countdp.cli.arguments import Parser, UsageError, checked
from countdp.release.ledger import UNITS, UNKNOWN, Ledger, LedgerError, LedgerState, amount_text, parse_amount

DESCRIPTION = (
    "A privacy budget ledger holds the total epsilon that releases about one dataset's people may spend "
    "(their epsilons add up) and one entry per release.  A release is debited before its noise is drawn "
    "and committed once its files are in place, or marked failed; a failed entry, or one left 'debited' "
    "by a crash, stays spent, the conservative choice: the budget is never given back.  Each unit of "
    "privacy has its own account, never added to another: 'bit' (one person's bit in one group's count: "
    "ordinary and --levels releases) and, if asked for, 'invariant' (invariant neighbours: --invariant "
    "releases).  Amounts are exact: decimals (0.1) or fractions (1/3).  A symlink to the ledger reaches "
    "the same budget; a hard link is refused.  The ledger is the curator's private record: never publish it.")

ACCOUNTS = {"bit": "one person's bit in one group's count: ordinary and --levels releases",
            "invariant": "invariant neighbours, totals published exactly: --invariant releases"}
"""What each account's epsilon is about (``budget show`` prints it)."""


def register(sub) -> None:
    """Add the ``budget`` command (``budget init``, ``add-account``, ``show``) to the ``countdp`` subparsers."""
    budget = sub.add_parser("budget", help="a dataset's privacy budget ledger: init, add-account, show",
                            description=DESCRIPTION)
    actions = budget.add_subparsers(dest="budget_command", metavar="{init,add-account,show}", required=True,
                                    parser_class=Parser)
    init = _action(actions, "init", "create a ledger with a total epsilon (never overwrites one)", _init,
                   "the ledger file to create (JSON), in an existing folder")
    init.add_argument("--epsilon", type=_epsilon_argument, required=True,
                      help="the bit account's total epsilon, exact: 1, 0.5, 1/3")
    init.add_argument("--invariant-epsilon", type=_epsilon_argument, default=None,
                      help="also an invariant account with this total epsilon (for --invariant releases)")
    init.add_argument("--dataset", default=None, help="the dataset's name (default: the ledger file's name)")
    add = _action(actions, "add-account", "give an existing ledger its invariant account (once)", _add_account)
    add.add_argument("--invariant-epsilon", type=_epsilon_argument, required=True,
                     help="the invariant account's total epsilon, exact: 1, 0.5, 1/3")
    _action(actions, "show", "print each account's total, spent and remaining epsilon and every entry", _show)


def _action(actions, name: str, summary: str, handler, ledger: str = "a ledger written by `countdp budget init`"):
    """One ``budget`` action's parser: its summary, its handler and the ledger it takes."""
    parser = actions.add_parser(name, help=summary, description=DESCRIPTION)
    parser.set_defaults(handler=handler)
    parser.add_argument("ledger", type=Path, help=ledger)
    return parser


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
        Ledger.create(args.ledger, args.epsilon, dataset, invariant_epsilon=args.invariant_epsilon)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    invariant = "" if args.invariant_epsilon is None else \
        f", invariant account epsilon {_approximately(args.invariant_epsilon)}"
    print(f"created {args.ledger}: dataset {dataset}, total epsilon {_approximately(args.epsilon)}{invariant}")
    return 0


def _add_account(args: argparse.Namespace) -> int:
    """``budget add-account``: give the ledger its invariant account, under its lock (refused if it has one)."""
    try:
        Ledger(args.ledger).add_account("invariant", args.invariant_epsilon)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    print(f"added to {args.ledger}: the invariant account, total epsilon {_approximately(args.invariant_epsilon)}")
    return 0


def _report(path: Path, state: LedgerState) -> list[str]:
    """The lines ``budget show`` prints for ``state``: each account's three amounts, a count, then every entry."""
    lines = [f"ledger     {path} (dataset {state.dataset}, created {state.created})"]
    for unit in (unit for unit in UNITS if unit in state.accounts):
        account = state.accounts[unit]
        lines += [f"account    {unit} ({ACCOUNTS[unit]})",
                  f"total      epsilon {_approximately(account.total)}",
                  f"spent      epsilon {_approximately(account.spent)}",
                  f"remaining  epsilon {_approximately(account.remaining)}"]
    if unknown := sum(1 for entry in state.entries if entry.account == UNKNOWN):
        lines.append(f"note       {unknown} {UNKNOWN} entries (format /1 recorded no unit: bit or invariant): their "
                     f"epsilon {_approximately(state.unknown_spent)} counts as spent in every account")
    counts = {status: sum(1 for entry in state.entries if entry.status == status)
              for status in ("committed", "debited", "failed")}
    lines.append(f"entries    {len(state.entries)} ({counts['committed']} committed, {counts['debited']} debited, "
                 f"{counts['failed']} failed; debited and failed entries count as spent)")
    for entry in state.entries:
        what = json.dumps(entry.what, ensure_ascii=False, separators=(", ", ": "))
        failed = f"  (failed: {entry.reason})" if entry.status == "failed" else ""
        unit = "unknown (format /1)" if entry.account == UNKNOWN else entry.account
        lines.append(f"  {entry.entry_id}  {entry.time}  {unit:<9}  epsilon {amount_text(entry.epsilon)}  "
                     f"{entry.status:<9}  {what}{failed}")
    return lines


def _show(args: argparse.Namespace) -> int:
    """``budget show``: the budget and its entries, read under a shared lock."""
    try:
        state = Ledger(args.ledger).state()
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    print("\n".join(_report(args.ledger, state)))
    return 0
