"""Reading and writing mechanism artifacts (JSON or CSV), atomically.

The JSON layout is the one ``countdp design`` prints: ``matrix[i][j] = Pr[output i | input j]``.
Writes go to a temporary file in the same folder and are renamed into place, so a killed
job never leaves a half-written artifact behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from countdp.certify import is_alpha_dp
from countdp.design import Design
from countdp.metrics import objective_value
from countdp.properties import check_all
from countdp.validation import check_matrix


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
    cert = design.certificate
    checks = check_all(design.matrix, tol)
    return {
        "mechanism": design.mechanism,
        "n": design.n,
        "alpha": design.alpha,
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
        },
        "solver": design.solver,
        "method": design.method,
        "status": design.status,
        "solve_time": design.solve_time,
        "solver_objective": design.solver_objective,
        **({"extra": design.extra} if design.extra else {}),
    }


def to_json(record: dict) -> str:
    """Indented JSON with each matrix row on one line (readable, and diff-friendly)."""
    rows = record.get("matrix")
    if rows is None:
        return json.dumps(record, indent=1) + "\n"
    body = json.dumps({**record, "matrix": "@MATRIX@"}, indent=1)
    matrix = "[\n  " + ",\n  ".join(json.dumps(list(map(float, row))) for row in np.asarray(rows)) + "\n ]"
    return body.replace('"@MATRIX@"', matrix) + "\n"


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


def load_certified(path: str | os.PathLike) -> dict:
    """Read a design JSON and re-verify its DP certificate on the stored floats, or raise."""
    record = load_record(path)
    if not (record.get("dp", {}).get("certified") and is_alpha_dp(record["matrix"], record["alpha"])):
        raise ValueError(f"{path}: mechanism is not certified alpha-DP on its stored values")
    return record


__all__ = ["atomic_path", "design_to_dict", "load_certified", "load_matrix", "load_record",
           "save_design", "to_json", "write_csv_atomic", "write_text_atomic"]
