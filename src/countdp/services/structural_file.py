"""Mechanism files of designs held as structure: what the structural form is, in bytes, and its verdict.

A design held as structure (:func:`countdp.design.designer.structural_named`: GM, EM, UM at any
size, WM under L0 beyond the matrix path) has no matrix.  Its file is one JSON of a few kilobytes
at any ``n``: mechanism, n, ``alpha`` and ``alpha_exact``, objective and its exact value,
``representation: "structural"``, and ``structure``, the form's own description
(:meth:`countdp.structural.form.StructuralMechanism.describe`: the construction's version, K, the
sizes its table serves, its parameters and the SHA-256 of its tables), with the structural
certificate and the exact expected errors beside it.

Nothing in the file is trusted.  Loading rebuilds the form from its definition
(:func:`countdp.design.forms.structural_form`, the code that built it) and refuses the file,
with one line ``"{path}: <reason>"`` (``ValueError``), unless every field a structural design needs
is there with its type, ``alpha`` is ``float(alpha_exact)``, the rebuilt form's description is
the recorded one to the last byte of its tables' digest, and its certificate holds on the tables
rebuilt (so a file from another construction, or edited, is refused).
"""

from __future__ import annotations

import math
from pathlib import Path

from countdp.design.designer import Design
from countdp.design.forms import structural_form
from countdp.privacy.rounding import check_release_alpha
from countdp.services.record_alpha import recorded_alpha
from countdp.values.alpha import alpha_text

FORMAT = "structural"
"""The value of a structural file's ``representation`` field."""

_FIELDS = {"mechanism": str, "n": int, "alpha": (int, float), "alpha_exact": str, "objective": str,
           "structure": dict, "structural_certificate": dict}
"""Required fields of a structural file, and their JSON types."""


def structural_record(design: Design) -> dict:
    """The JSON record of a design held as structure (module docstring)."""
    form = design.released
    value = design.objective_value
    return {"mechanism": design.mechanism, "n": design.n, "alpha": design.alpha,
            "alpha_exact": alpha_text(design.alpha_exact), "representation": FORMAT, "objective": design.objective,
            "objective_value": value if math.isfinite(value) else None,
            "properties_requested": list(design.properties_requested), "structure": form.describe(),
            "structural_certificate": form.certify().to_dict(), "solver": design.solver, "method": design.method,
            **({"extra": design.extra} if design.extra else {})}


def _checked_fields(record: dict, path: Path) -> None:
    for name, kind in _FIELDS.items():
        if name not in record:
            raise ValueError(f"{path}: field '{name}' is missing")
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{path}: field '{name}' has the wrong type ({value!r:.40})")


def load_structural(record: dict, path: Path) -> dict:
    """Verify a structural file's ``record`` (module docstring); returns it with ``record["released"]``
    the rebuilt, certified form, or raises a one-line ``ValueError`` naming ``path``."""
    _checked_fields(record, path)
    alpha = recorded_alpha(record, path)
    try:
        check_release_alpha(alpha)  # the bound design applies: below 2^-62 the tables' ratios overflow
        form = structural_form(record["mechanism"], record["n"], alpha)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if form.describe() != record["structure"]:
        raise ValueError(f"{path}: its structure is not the one this countdp builds for {record['mechanism']} "
                         f"n={record['n']} alpha={alpha_text(alpha)} (another construction, or an edited file)")
    check = form.certify()
    if not check.holds:
        raise ValueError(f"{path}: the structural certificate fails on the rebuilt tables: {check.reason}")
    return {**record, "released": form}


def structural_design(record: dict) -> Design:
    """A verified structural record (:func:`load_structural`) as a :class:`Design` (no matrix)."""
    value = record.get("objective_value")
    return Design(mechanism=record["mechanism"], n=record["n"], alpha=record["alpha"], matrix=None,
                  objective=record["objective"], properties_requested=tuple(record.get("properties_requested", ())),
                  objective_value=float("nan") if value is None else value, certificate=None,
                  alpha_exact=record["released"].alpha, released=record["released"],
                  objective_before_repair=float("nan"), solver=record.get("solver", "structural"),
                  method=record.get("method", "structural"), extra=record.get("extra", {}))


__all__ = ["FORMAT", "load_structural", "structural_design", "structural_record"]
