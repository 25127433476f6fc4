"""What ``countdp release --dry-run`` shows: the error a release will have, before any noise is drawn.

For every count column and group size (or range of sizes sharing one structural table, shown
by its largest size): the mechanism, and its exact expected L0 (the chance
the released count is wrong), L0,1 (the chance it is off by more than one) and RMSE, under a
uniform prior on the true count and for the worst true count — computed in exact arithmetic on
the integer weights that the release would sample (:mod:`countdp.privacy.expected_error`; for a
size held as structure, from its table without the matrix, :mod:`countdp.structural.errors`).
Then the total privacy spent and, with a budget, what the ledger would have left.

Nothing it prints depends on a confidential value: the rows, group sizes and mechanisms are
public under the unit of privacy, and a conditioned release's guarantee is the bound for every
total (a dry run publishes no total; docs/threat-model.md).
"""

from __future__ import annotations

from fractions import Fraction

from countdp.privacy.expected_error import release_errors
from countdp.structural.errors import structural_errors
from countdp.structural.form import REPRESENTATION
from countdp.values.alpha import alpha_text, rational_text

HEADER = (f"{'column':<14} {'n':>7} {'rows':>9}  {'mechanism':<10} {'L0 unif':>8} {'L0 worst':>8} "
          f"{'L01 unif':>8} {'L01 worst':>9} {'RMSE unif':>9} {'RMSE worst':>10}")


def _row(column: str, n: int, rows: int, design, sizes: str | None = None) -> str:
    """A size's line: a structural form's errors from its structure (O(n)), any other's from its columns."""
    released = design.released
    errors = structural_errors(released, n) if released.representation == REPRESENTATION else \
        release_errors(released)
    return (f"{column:<14} {sizes or n:>7} {rows:>9}  {design.mechanism:<10} {float(errors.l0_uniform):>8.4f} "
            f"{float(errors.l0_worst):>8.4f} {float(errors.l01_uniform):>8.4f} {float(errors.l01_worst):>9.4f} "
            f"{errors.rmse_uniform:>9.4f} {errors.rmse_worst:>10.4f}")


def _column_rows(name: str, validated, designs: list) -> list[str]:
    """One row per mechanism: a size of its own, or the sizes sharing a structural table (the errors
    of its largest size, the one with the largest MSE, with the range of sizes in the ``n`` column)."""
    lines, tables = [], {}
    for s, n in enumerate(validated.sizes.tolist()):
        design, rows = designs[s], int(validated.rows_per_size[s])
        first, _, total, _ = tables.get(id(design.released), (n, n, 0, design))
        tables[id(design.released)] = (first, n, total + rows, design)
    for first, last, total, design in tables.values():
        if first == last:
            lines.append(_row(name, last, total, design))
            continue
        largest = type(design)(design.mechanism, last, design.objective, design.released)
        lines.append(_row(name, last, total, largest, f"{first}..{last}"))
    return lines


def _short(alpha: Fraction) -> str:
    """``alpha`` exactly when it is short, else its value to 8 digits (the sidecar keeps it exactly)."""
    text = alpha_text(alpha)
    return text if len(text) <= 24 else f"{float(alpha):.8f} (exactly a fraction of {len(text)} characters)"


def preview(prepared, remaining: Fraction | str | None) -> str:
    """The dry run's report for a prepared (validated, mechanisms found) release; nothing is drawn.

    ``remaining``: what the budget would have left, or the ledger's refusal as text, or None
    without a budget.
    """
    request, validated = prepared.request, prepared.validated
    lines = [f"# dry run: {validated.rows} rows of {request.input} checked; nothing drawn, nothing written",
             "# exact expected error of each mechanism's release weights (uniform prior on the true count, "
             "and the worst true count)", HEADER]
    for k, column in enumerate(request.columns):
        lines += _column_rows(column.count_column, validated, prepared.mechanisms[k])
        if prepared.invariants is not None:
            worst = prepared.invariants[k].worst
            lines.append(f"# {column.count_column}: conditioned on its total ({len(prepared.invariants[k].partitions)} "
                         f"partition(s)); per-group alpha {alpha_text(column.alpha)}, the conditioned release is at "
                         f"least {_short(worst.alpha)}-DP for invariant neighbours whatever the totals (a proven bound "
                         "from the group sizes alone: a dry run publishes no total, and the release states its "
                         "guarantee at the totals it publishes; the rows above are unconditioned)")
        if column.levels:
            lines.append(f"# {column.count_column}: levels at alpha {', '.join(alpha_text(a) for a in column.levels)}; "
                         "the rows above are level 1 (the least private), each later level is GM at its own alpha")
    alpha_total = Fraction(1)
    for k, column in enumerate(request.columns):
        alpha_total *= column.alpha if prepared.invariants is None else prepared.invariants[k].worst.alpha
    spent = prepared.epsilon
    lines.append(f"# privacy: alpha_total = {_short(alpha_total)}, epsilon spent = {rational_text(spent)} "
                 f"({float(spent):.6g}) over {len(request.columns)} count column(s)")
    if isinstance(remaining, str):
        lines.append(f"# budget {remaining}")
    elif remaining is not None:
        lines.append(f"# budget {request.budget}: {rational_text(remaining)} ({float(remaining):.6g}) would remain "
                     "after this release")
    return "\n".join(lines) + "\n"


__all__ = ["HEADER", "preview"]
