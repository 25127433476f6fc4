"""The shape of a study's check table: one row per statement tested against our results.

Every study (intrinsic figures, extrinsic findings, extensions) reports the statements it
tests in these columns; :mod:`countdp.claims.table` merges them into the claims table.
"""

from __future__ import annotations

CHECK_COLUMNS = ("figure", "claim", "paper_value", "our_value", "holds", "note")
"""``figure``: where the statement comes from (e.g. "7", "fig05", a study name);
``paper_value``: what the paper (or the expectation) says; ``our_value``: what we measured;
``holds``: the computed verdict; ``note``: why it differs, or a caveat."""


def check_row(figure: str, claim: str, paper_value: object, our_value: object, holds: bool, note: str = "") -> dict:
    """One row of a check table."""
    return dict(zip(CHECK_COLUMNS, (figure, claim, paper_value, our_value, bool(holds), note), strict=True))
