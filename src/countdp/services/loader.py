"""The one loader of mechanism files: every command and job that reads a design reads it here.

``countdp check``, ``countdp release``, the mechanism cache and the workflow's jobs all call
:func:`load_certified` (or :func:`load_design`, the same record as a :class:`Design`), so a file
gets one verdict whoever reads it.  A file is either the compact pair ``X.json`` + ``X.npz``
(:mod:`countdp.services.arrays`) or one inline JSON with ``matrix`` and ``release.weights``
(what ``countdp design`` prints, and what countdp wrote before the compact format).

Nothing in a file is trusted.  A file is refused, with one line ``"{path}: <reason>"``
(``ValueError``), unless, in this order:

1. the JSON parses and every field a design needs is there with the right type;
2. compact: the npz named in ``arrays.file`` (a plain name, beside the JSON) exists, its
   SHA-256 is ``arrays.sha256``, it holds a float64 ``matrix`` and an int64 ``weights`` of one
   square shape, and the weights' canonical bytes hash to ``arrays.weights_sha256``;
3. ``n`` is the size of the arrays, and ``alpha`` is ``float(alpha_exact)``;
4. the float matrix passes the float DP test (:func:`countdp.privacy.certify.is_alpha_dp`,
   tolerance 0) and the file says ``dp.certified``;
5. the weights pass the exact integer test at ``alpha_exact`` over ``D = 2**K``
   (:class:`countdp.privacy.exact.IntegerMechanism`), and ``max |W/D - matrix| <= 1e-9``;
6. every structural property is recorded as holding exactly when it holds on the matrix at the
   recorded ``property_tolerance``.

At n = 2048 all of this takes about 1 s, most of it the exact test and decompressing the npz.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from countdp.design.designer import Design
from countdp.mechanisms.properties import check_all
from countdp.privacy.certify import Certificate, is_alpha_dp
from countdp.privacy.exact import IntegerMechanism
from countdp.services.arrays import read_npz, sha256_hex, weights_digest
from countdp.services.json_limits import json_problem
from countdp.services.record_alpha import recorded_alpha
from countdp.services.structural_file import FORMAT, load_structural, structural_design
from countdp.validation import check_matrix, file_problem
from countdp.values.alpha import exact_alpha
from countdp.values.properties import PROPERTIES

RELEASE_MATRIX_TOL = 1e-9
"""Largest allowed ``max |W/D - matrix|`` between a file's release weights and its float matrix."""

_NUMBER = (int, float)
_FIELDS = {
    "": {"mechanism": str, "n": int, "alpha": _NUMBER, "alpha_exact": str, "objective": str,
         "objective_value": _NUMBER, "dp": dict, "release": dict, "properties": dict,
         "property_tolerance": _NUMBER},
    "dp.": {"certified": bool, "max_violation": _NUMBER, "max_violation_before_repair": _NUMBER,
            "column_sum_error": _NUMBER, "repair_lambda": _NUMBER},
    "release.": {"denominator": int, "certificate": dict},
}
"""Required fields (by prefix: top level, ``dp``, ``release``) and their JSON types."""
_OPTIONAL = {
    "": {"properties_requested": list, "solver": str, "method": str, "status": str, "solve_time": _NUMBER,
         "solver_objective": (*_NUMBER, type(None)), "aggregate": str, "weights": (list, type(None)),
         "extra": dict, "l0": _NUMBER, "property_violations": dict, "arrays": dict},
    "dp.": {"objective_before_repair": _NUMBER},
    "release.certificate.": {"rounding_lambda": _NUMBER, "max_abs_error": _NUMBER,
                             "objective_change": (*_NUMBER, type(None))},
}
"""Fields a file may leave out; when present they must have these types."""
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _has_type(value: object, kind: type | tuple) -> bool:
    if isinstance(value, bool):  # JSON true/false are bools, never numbers
        return kind is bool or (isinstance(kind, tuple) and bool in kind)
    return isinstance(value, kind)


def _block(record: dict, prefix: str) -> dict:
    block = record
    for key in prefix.split(".")[:-1]:
        block = block.get(key, {}) if isinstance(block, dict) else {}
    return block if isinstance(block, dict) else {}


def _check_fields(record: dict, path: Path) -> None:
    for spec, required in ((_FIELDS, True), (_OPTIONAL, False)):
        for prefix, fields in spec.items():
            block = _block(record, prefix)
            for name, kind in fields.items():
                if name not in block:
                    if required:
                        raise ValueError(f"{path}: field '{prefix}{name}' is missing")
                    continue
                if not _has_type(block[name], kind):
                    raise ValueError(f"{path}: field '{prefix}{name}' has the wrong type ({block[name]!r:.40})")
    if set(record["properties"]) != set(PROPERTIES) or not all(isinstance(v, bool)
                                                                 for v in record["properties"].values()):
        raise ValueError(f"{path}: field 'properties' must map each of {', '.join(PROPERTIES)} to true or false")
    if not (math.isfinite(record["property_tolerance"]) and record["property_tolerance"] >= 0):
        raise ValueError(f"{path}: field 'property_tolerance' must be a finite number >= 0")


def _read_json(path: Path) -> dict:
    if (problem := file_problem(path, "a mechanism file")) is not None:  # a FIFO or /dev/zero is never read
        raise ValueError(f"{path}: {problem}")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable mechanism JSON ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too deep, or an integer Python will not read
        raise ValueError(f"{path}: not a readable mechanism JSON ({json_problem(exc)})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: a mechanism JSON must be an object with a 'matrix' or an 'arrays' entry")
    return record


def _compact_arrays(record: dict, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The matrix and weights of the npz that ``record["arrays"]`` names, both digests verified."""
    block = record["arrays"]
    name, digest, weights_sha = block.get("file"), block.get("sha256"), block.get("weights_sha256")
    if not (isinstance(name, str) and name.endswith(".npz") and name == Path(name).name and not name.startswith(".")):
        raise ValueError(f"{path}: field 'arrays.file' must name an .npz file beside the JSON, got {name!r:.60}")
    for field, value in (("sha256", digest), ("weights_sha256", weights_sha)):
        if not (isinstance(value, str) and _SHA256.fullmatch(value)):
            raise ValueError(f"{path}: field 'arrays.{field}' must be a SHA-256 in hex, got {value!r:.80}")
    if "matrix" in record or "weights" in record["release"]:
        raise ValueError(f"{path}: holds inline arrays as well as the arrays file {name}; which one is meant?")
    try:
        data = (path.parent / name).read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path}: its arrays file {name} is missing (it must be beside the JSON)") from None
    except OSError as exc:
        raise ValueError(f"{path}: its arrays file {name} cannot be read ({exc.strerror})") from None
    if sha256_hex(data) != digest:
        raise ValueError(f"{path}: its arrays file {name} is not the one this JSON records "
                         "(SHA-256 differs: a stale or foreign file)")
    try:
        arrays = read_npz(data, record["n"])
    except ValueError as exc:
        raise ValueError(f"{path}: its arrays file {name}: {exc}") from None
    if weights_digest(arrays["weights"]) != weights_sha:
        raise ValueError(f"{path}: the release weights in {name} are not the ones this JSON records "
                         "(weights SHA-256 differs)")
    try:
        return check_matrix(arrays["matrix"]), arrays["weights"]
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _inline_arrays(record: dict, path: Path) -> tuple[np.ndarray, np.ndarray]:
    if "matrix" not in record:
        raise ValueError(f"{path}: a mechanism JSON needs a 'matrix' (inline) or an 'arrays' entry (compact)")
    if "weights" not in record["release"]:
        raise ValueError(f"{path}: no release weights (written by an older countdp? design it again)")
    try:
        matrix = check_matrix(record["matrix"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    try:
        weights = np.asarray(record["release"]["weights"])
    except (ValueError, OverflowError, TypeError):  # ragged rows, or not numbers
        weights = np.zeros(0)
    if weights.dtype.kind != "i" or weights.shape != matrix.shape:
        raise ValueError(f"{path}: release weights must be a {matrix.shape[0]}x{matrix.shape[0]} matrix of "
                         "integers in [0, 2^62], like the matrix")
    return matrix, weights.astype(np.int64, copy=False)


def _released(record: dict, matrix: np.ndarray, weights: np.ndarray, path: Path) -> IntegerMechanism:
    """The weights as an :class:`IntegerMechanism` (the exact test runs here), checked against the matrix."""
    D = record["release"]["denominator"]
    if D < 2 or D & (D - 1):
        raise ValueError(f"{path}: release denominator must be a power of two, got {D!r}")
    certificate = record["release"]["certificate"]
    rounding = {k: certificate[k] for k in ("rounding_lambda", "max_abs_error", "objective_change") if k in certificate}
    try:
        released = IntegerMechanism(exact_alpha(record["alpha_exact"]), D.bit_length() - 1, weights, rounding)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if np.max(np.abs(released.matrix - matrix)) > RELEASE_MATRIX_TOL:
        raise ValueError(f"{path}: the float matrix and the release weights differ by more than {RELEASE_MATRIX_TOL}")
    return released


def _check_properties(record: dict, matrix: np.ndarray, path: Path) -> None:
    tol = record["property_tolerance"]
    for name, check in check_all(matrix, tol).items():
        holds, worst = check.holds, check.worst_violation
        if record["properties"][name] != holds:
            said, compared = ("holding", ">") if record["properties"][name] else ("not holding", "<=")
            raise ValueError(f"{path}: property {name} is recorded as {said}, but its worst violation on the "
                             f"matrix is {worst:.3g} {compared} the recorded tolerance {tol:g}")


def load_certified(path: str | os.PathLike) -> dict:
    """Read a mechanism file and verify everything it claims (module docstring), or raise ``ValueError``.

    Returns the JSON record with ``record["matrix"]`` the float matrix (numpy) and
    ``record["released"]`` the verified :class:`IntegerMechanism`; for a design held as structure
    (:mod:`countdp.services.structural_file`), ``record["released"]`` is the rebuilt form, and no matrix.
    """
    path = Path(path)
    record = _read_json(path)
    if record.get("representation") == FORMAT:  # a design held as structure: no matrix, its form rebuilt
        return load_structural(record, path)
    _check_fields(record, path)
    matrix, weights = _compact_arrays(record, path) if "arrays" in record else _inline_arrays(record, path)
    N = matrix.shape[0]
    if record["n"] != N - 1:
        raise ValueError(f"{path}: n = {record['n']}, but the arrays are {N}x{N} (n = {N - 1})")
    recorded_alpha(record, path)
    try:
        dp_holds = is_alpha_dp(matrix, record["alpha"])
    except ValueError as exc:  # an alpha whose float is 0.0 or 1.0
        raise ValueError(f"{path}: {exc}") from None
    if not (record["dp"]["certified"] and dp_holds):
        raise ValueError(f"{path}: mechanism is not certified alpha-DP on its stored values")
    record["released"] = _released(record, matrix, weights, path)
    _check_properties(record, matrix, path)
    record["matrix"] = matrix
    return record


def load_design(path: str | os.PathLike) -> Design:
    """A mechanism file as a :class:`Design`, verified exactly as :func:`load_certified` verifies it."""
    r = load_certified(path)
    if r.get("representation") == FORMAT:
        return structural_design(r)
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


__all__ = ["RELEASE_MATRIX_TOL", "load_certified", "load_design"]
