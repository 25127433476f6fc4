"""The alpha of a mechanism file: its exact ``alpha_exact``, checked against the float ``alpha`` beside it.

Every mechanism file (a matrix's, :mod:`countdp.services.loader`; a structural form's,
:mod:`countdp.services.structural_file`) records alpha twice, exactly as ``"p/q"`` and as the float
the solvers and tables read; a file whose two disagree is refused.
"""

from __future__ import annotations

from pathlib import Path

from countdp.values.alpha import Alpha, alpha_text, exact_alpha


def recorded_alpha(record: dict, path: Path) -> Alpha:
    """``record["alpha_exact"]`` parsed, or a one-line ``ValueError`` naming ``path``: unparsable, out of
    range, or not the exact value of ``record["alpha"]``'s float."""
    try:
        alpha = exact_alpha(record["alpha_exact"])
    except ValueError as exc:
        raise ValueError(f"{path}: alpha_exact: {exc}") from None
    if float(alpha) != record["alpha"]:
        raise ValueError(f"{path}: alpha {record['alpha']!r} is not float(alpha_exact = {alpha_text(alpha)})")
    return alpha


__all__ = ["recorded_alpha"]
