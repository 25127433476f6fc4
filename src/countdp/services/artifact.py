"""Mechanism files: a design written compactly and atomically, and read back by the one loader.

``save_design(design, "X.json")`` writes two files:

* ``X.npz``: the float ``matrix`` and the integer release ``weights`` (rows are outputs, columns
  inputs), readable with plain ``np.load`` (:mod:`countdp.services.arrays`);
* ``X.json``: everything else, human-readable: mechanism, n, ``alpha`` and ``alpha_exact``
  (``"p/q"``), objective, properties, the float DP certificate, ``release`` (``denominator``
  ``D = 2**K`` and the exact certificate) and ``arrays``: the npz's name relative to the JSON,
  its SHA-256, and the SHA-256 of the weights' canonical bytes.

Both are written to temporaries first; then the npz is renamed into place, then the JSON
(:mod:`countdp.services.atomic`): the JSON is the commit point, and an npz that does not belong
to it (stale, or another design's) is caught by its SHA-256 when the file is loaded.  A save that
fails leaves no new file behind.  The inline form (one JSON with ``matrix`` and
``release.weights`` in it, :func:`design_to_dict`) is what ``countdp design`` prints without
``--out``, and what countdp wrote before; :func:`load_certified` reads both
(:mod:`countdp.services.loader`: every reader goes through it, so a file has one verdict).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from countdp.design.designer import Design
from countdp.mechanisms.properties import check_all
from countdp.services.arrays import arrays_path, npz_bytes, sha256_hex, weights_digest
from countdp.services.atomic import atomic_path, write_bytes_atomic, write_csv_atomic, write_text_atomic
from countdp.services.loader import RELEASE_MATRIX_TOL, load_certified, load_design
from countdp.services.structural_file import structural_record
from countdp.validation import check_matrix
from countdp.values.alpha import alpha_text
from countdp.values.objectives import objective_value


def _record(design: Design, tol: float, matrix: object, weights: object) -> dict:
    """The JSON record of a design; ``matrix``/``weights`` go inline unless ``None`` (left out)."""
    cert, released = design.certificate, design.released
    checks = check_all(design.matrix, tol)
    release = {"denominator": released.denominator, "weights": weights, "certificate": released.certificate.to_dict()}
    return {
        "mechanism": design.mechanism,
        "n": design.n,
        "alpha": design.alpha,
        "alpha_exact": alpha_text(design.alpha_exact),
        "objective": design.objective,
        "aggregate": design.aggregate,
        "weights": design.weights,
        "properties_requested": list(design.properties_requested),
        "matrix": matrix,
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
        "release": {k: v for k, v in release.items() if v is not None},
        "solver": design.solver,
        "method": design.method,
        "status": design.status,
        "solve_time": design.solve_time,
        "solver_objective": design.solver_objective,
        **({"extra": design.extra} if design.extra else {}),
    }


def design_to_dict(design: Design, tol: float = 1e-9) -> dict:
    """The inline JSON record of a design: matrix, release weights, objective, properties, certificates
    (for a design held as structure, its structure instead: :mod:`countdp.services.structural_file`)."""
    if design.matrix is None:
        return structural_record(design)
    return _record(design, tol, design.matrix.tolist(), design.released.weights.tolist())


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


def save_matrix_csv(matrix: np.ndarray, path: str | os.PathLike) -> None:
    """Write a bare matrix as CSV (``%.17g``, round-trips every float) at exactly ``path``, atomically."""
    with atomic_path(path) as tmp:
        np.savetxt(tmp, check_matrix(matrix), delimiter=",", fmt="%.17g")


def save_design(design: Design, path: str | os.PathLike) -> None:
    """Write ``design`` as ``X.json`` + ``X.npz`` (module docstring), or its bare matrix to a ``.csv``; a design
    held as structure as one ``X.json`` (:mod:`countdp.services.structural_file`).

    Raises ``ValueError`` for any other suffix.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".csv" and design.matrix is not None:
        save_matrix_csv(design.matrix, path)
        return
    if suffix != ".json":
        raise ValueError(f"{path}: a mechanism file ends in .json (its arrays go beside it) or .csv (the matrix; "
                         "a design held as structure has none)")
    if design.matrix is None:  # a structural form: one small JSON, no arrays
        write_text_atomic(path, json.dumps(structural_record(design), indent=1) + "\n")
        return
    npz = arrays_path(path)
    data = npz_bytes(design.matrix, design.released.weights)
    record = _record(design, 1e-9, None, None)
    record["arrays"] = {"file": npz.name, "sha256": sha256_hex(data),
                        "weights_sha256": weights_digest(design.released.weights)}
    del record["matrix"]
    fresh = not npz.exists()
    try:
        with atomic_path(path) as json_tmp:  # both written before either is renamed into place
            json_tmp.write_text(json.dumps(record, indent=1) + "\n")
            write_bytes_atomic(npz, data)  # renamed first: the JSON that commits to it follows
    except BaseException:
        if fresh:  # nothing refers to an npz whose JSON never arrived
            npz.unlink(missing_ok=True)
        raise


def load_matrix(path: str | os.PathLike) -> np.ndarray:
    """A matrix from a CSV (unverified: a bare matrix carries no claims) or a mechanism file (verified)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        try:
            with warnings.catch_warnings():  # an empty file: numpy's warning, then the shape's refusal below
                warnings.simplefilter("ignore", UserWarning)
                matrix = np.loadtxt(path, delimiter=",", ndmin=2)
            return check_matrix(matrix)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable CSV matrix ({exc})") from None
    return load_certified(path)["matrix"]


__all__ = ["RELEASE_MATRIX_TOL", "arrays_path", "atomic_path", "design_to_dict", "load_certified", "load_design",
           "load_matrix", "save_design", "save_matrix_csv", "to_json", "write_bytes_atomic", "write_csv_atomic",
           "write_text_atomic"]
