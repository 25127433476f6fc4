"""Reading and writing mechanism artifacts (JSON or CSV), atomically.

The JSON layout is the one ``countdp design`` prints: ``matrix[i][j] = Pr[output i | input j]``,
``alpha_exact`` (``"p/q"``), and ``release``: ``denominator`` ``D = 2**K``, integer ``weights``
(``weights[i][j]`` for output i given input j, columns summing to ``D``) and the exact
certificate.  Loaders re-run the exact test on the stored weights and refuse any file that fails.
Writes go to a temporary file in the same folder and are renamed into place, so a killed
job never leaves a half-written artifact behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from countdp.privacy.alpha import alpha_text, exact_alpha
from countdp.privacy.certify import Certificate, is_alpha_dp
from countdp.privacy.exact import IntegerMechanism
from countdp.validation import check_matrix

if TYPE_CHECKING:  # the design modules (scipy.sparse, the LP code) load only when a design is written or rebuilt
    from countdp.design.designer import Design

RELEASE_MATRIX_TOL = 1e-9
"""Largest allowed ``max |W/D - matrix|`` between an artifact's weights and its float matrix."""


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ""):
    """Yield a temporary path next to ``path``; rename it onto ``path`` only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix or target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_csv_atomic(frame, path: str | os.PathLike, float_format: str | None = None) -> None:
    """Write a pandas ``frame`` as CSV (no index, ``\\n`` line ends) so a killed job leaves no partial
    file; ``float_format`` e.g. ``"%.12g"`` (default: full ``repr`` precision)."""
    write_text_atomic(path, frame.to_csv(index=False, lineterminator="\n", float_format=float_format))


def design_to_dict(design: Design, tol: float = 1e-9) -> dict:
    """The JSON-ready record of a design: matrix, objective, properties and DP certificate."""
    from countdp.evaluate.metrics import objective_value
    from countdp.mechanisms.properties import check_all

    cert = design.certificate
    checks = check_all(design.matrix, tol)
    return {
        "mechanism": design.mechanism,
        "n": design.n,
        "alpha": design.alpha,
        "alpha_exact": alpha_text(design.alpha_exact),
        "objective": design.objective,
        "aggregate": design.aggregate,
        "weights": design.weights,
        "properties_requested": list(design.properties_requested),
        "matrix": design.matrix.tolist(),
        "objective_value": design.objective_value,
        "l0": objective_value(design.matrix, "L0"),
        "properties": {name: check.holds for name, check in checks.items()},
        "property_violations": {name: check.worst_violation for name, check in checks.items()},
        "property_tolerance": tol,
        "dp": {
            "certified": cert.certified,
            "max_violation": cert.violation_after,
            "max_violation_before_repair": cert.violation_before,
            "column_sum_error": cert.column_sum_error_after,
            "repair_lambda": cert.repair_lambda,
            "tolerance": 0.0,
            "objective_before_repair": design.objective_before_repair,
        },
        "release": design.released.to_dict(),
        "solver": design.solver,
        "method": design.method,
        "status": design.status,
        "solve_time": design.solve_time,
        "solver_objective": design.solver_objective,
        **({"extra": design.extra} if design.extra else {}),
    }


def _rows(rows, convert, indent: str) -> str:
    """One JSON list per row, as ``json.dumps`` writes it (floats by ``repr``, ints by ``str``), faster."""
    lines = f",\n{indent}".join("[" + ", ".join(map(repr, map(convert, row))) + "]" for row in rows)
    return f"[\n{indent}{lines}\n{indent[:-1]}]"


def to_json(record: dict) -> str:
    """Indented JSON with each matrix (and weights) row on one line (readable, and diff-friendly)."""
    rows = record.get("matrix")
    if rows is None:
        return json.dumps(record, indent=1) + "\n"
    release = record.get("release")
    out = {**record, "matrix": "@MATRIX@"}
    if release is not None:
        out["release"] = {**release, "weights": "@WEIGHTS@"}
    body = json.dumps(out, indent=1)
    body = body.replace('"@MATRIX@"', _rows(np.asarray(rows, dtype=float).tolist(), float, "  "))
    if release is not None:
        body = body.replace('"@WEIGHTS@"', _rows(release["weights"], int, "   "))
    return body + "\n"


def save_design(design: Design, path: str | os.PathLike) -> None:
    """Write ``design`` as JSON (``.json``) or as its bare matrix (``.csv``), atomically."""
    path = Path(path)
    if path.suffix == ".csv":
        with atomic_path(path) as tmp:
            np.savetxt(tmp, design.matrix, delimiter=",", fmt="%.17g")
        return
    write_text_atomic(path, to_json(design_to_dict(design)))


def load_record(path: str | os.PathLike) -> dict:
    """Read a design JSON written by :func:`save_design`; raise ``ValueError`` if malformed."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable mechanism JSON ({exc})") from exc
    if not isinstance(record, dict) or "matrix" not in record:
        raise ValueError(f"{path}: a mechanism JSON needs a 'matrix' key")
    try:
        record["matrix"] = check_matrix(record["matrix"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return record


def load_matrix(path: str | os.PathLike) -> np.ndarray:
    """Read a matrix from a design JSON or a CSV (rows are outputs, columns inputs)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        try:
            return check_matrix(np.loadtxt(path, delimiter=",", ndmin=2))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable CSV matrix ({exc})") from exc
    return load_record(path)["matrix"]


def released_form(record: dict, path: str | os.PathLike = "") -> IntegerMechanism:
    """The record's integer weights as an :class:`IntegerMechanism`: the exact test runs again here."""
    release = record.get("release")
    if not isinstance(release, dict) or "weights" not in release or "denominator" not in release:
        raise ValueError(f"{path}: no release weights (written by an older countdp? design it again)")
    D = release["denominator"]
    if not isinstance(D, int) or D < 2 or D & (D - 1):
        raise ValueError(f"{path}: release denominator must be a power of two, got {D!r}")
    try:
        alpha = exact_alpha(record.get("alpha_exact"))
        released = IntegerMechanism(alpha, D.bit_length() - 1, release["weights"],
                                    {k: v for k, v in release.get("certificate", {}).items()
                                     if k in ("rounding_lambda", "max_abs_error", "objective_change")})
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if released.n + 1 != record["matrix"].shape[0]:
        raise ValueError(f"{path}: release weights and matrix have different sizes")
    if float(alpha) != float(record.get("alpha", float("nan"))):
        raise ValueError(f"{path}: alpha {record.get('alpha')!r} is not float(alpha_exact = {alpha_text(alpha)})")
    if np.max(np.abs(released.matrix - record["matrix"])) > RELEASE_MATRIX_TOL:
        raise ValueError(f"{path}: the float matrix and the release weights differ by more than {RELEASE_MATRIX_TOL}")
    return released


def load_certified(path: str | os.PathLike) -> dict:
    """Read a design JSON, re-verify its float DP certificate and its exact release certificate, or raise.

    The returned record has ``record["released"]``, the verified :class:`IntegerMechanism`.
    """
    record = load_record(path)
    if not (record.get("dp", {}).get("certified") and is_alpha_dp(record["matrix"], record["alpha"])):
        raise ValueError(f"{path}: mechanism is not certified alpha-DP on its stored values")
    record["released"] = released_form(record, path)
    return record


def load_design(path: str | os.PathLike) -> Design:
    """A design JSON as a :class:`Design` (both certificates re-verified), ready to release."""
    from countdp.design.designer import Design

    r = load_certified(path)
    dp = r["dp"]
    certificate = Certificate(r["alpha"], True, dp["max_violation_before_repair"], dp["max_violation"],
                              float("nan"), dp["column_sum_error"], dp["repair_lambda"])
    return Design(mechanism=r["mechanism"], n=r["n"], alpha=r["alpha"], matrix=r["matrix"], objective=r["objective"],
                  properties_requested=tuple(r.get("properties_requested", ())), objective_value=r["objective_value"],
                  certificate=certificate, alpha_exact=r["released"].alpha, released=r["released"],
                  objective_before_repair=dp.get("objective_before_repair", float("nan")),
                  solver=r.get("solver", ""), method=r.get("method", ""), status=r.get("status", ""),
                  solve_time=r.get("solve_time", 0.0), solver_objective=r.get("solver_objective"),
                  aggregate=r.get("aggregate", "sum"), weights=r.get("weights"), extra=r.get("extra", {}))


__all__ = ["atomic_path", "design_to_dict", "load_certified", "load_design", "load_matrix", "load_record",
           "released_form", "save_design", "to_json", "write_csv_atomic", "write_text_atomic"]
