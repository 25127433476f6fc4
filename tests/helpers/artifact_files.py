"""Reading and editing mechanism files the way a person would, with plain json and numpy.

Tests that tamper with a mechanism file use these instead of countdp's own reader and writer, so
what a test feeds the loader does not depend on the code under test.  A compact file is
``X.json`` with its arrays in the npz that ``arrays.file`` names; an inline one has ``matrix`` and
``release.weights`` in the JSON.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np


def read_file(path: str | Path) -> tuple[dict, np.ndarray, np.ndarray]:
    """``(record, matrix, weights)`` of a mechanism file, compact or inline, unverified."""
    path = Path(path)
    record = json.loads(path.read_text())
    if "arrays" in record:
        with np.load(path.parent / record["arrays"]["file"]) as arrays:
            return record, arrays["matrix"], arrays["weights"]
    return record, np.array(record["matrix"], dtype=float), np.array(record["release"]["weights"], dtype=np.int64)


def write_file(path: str | Path, record: dict, matrix: np.ndarray | None = None, weights: np.ndarray | None = None,
               *, digests: bool = True) -> None:
    """Write ``record`` back to ``path`` with ``matrix``/``weights`` (when given) replacing the stored arrays.

    Compact: the npz is rewritten with ``np.savez_compressed``; ``digests`` re-records its SHA-256
    and the weights' SHA-256 in the JSON (what a careful editor would do), otherwise the JSON keeps
    the old ones.  Inline: the arrays go into the JSON.
    """
    path = Path(path)
    record = json.loads(json.dumps(record))
    if "arrays" not in record:
        if matrix is not None:
            record["matrix"] = np.asarray(matrix).tolist()
        if weights is not None:
            record["release"]["weights"] = np.asarray(weights).tolist()
        path.write_text(json.dumps(record))
        return
    npz = path.parent / record["arrays"]["file"]
    if matrix is not None or weights is not None:
        _, old_matrix, old_weights = read_file(path)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, matrix=old_matrix if matrix is None else matrix,
                            weights=old_weights if weights is None else weights)
        npz.write_bytes(buffer.getvalue())
        if digests:
            record["arrays"]["sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
            W = old_weights if weights is None else weights
            record["arrays"]["weights_sha256"] = hashlib.sha256(np.ascontiguousarray(W, "<i8").tobytes()).hexdigest()
    path.write_text(json.dumps(record))


def python_int_dp(weights, alpha: str, D: int) -> bool:
    """The exact DP test in plain Python integers, entry by entry (independent of countdp.privacy.exact)."""
    p, q = map(int, alpha.split("/"))
    W = [[int(v) for v in row] for row in np.asarray(weights).tolist()]
    N = len(W)
    sums = all(sum(W[i][j] for i in range(N)) == D for j in range(N))
    return sums and all(p * r[j + 1] <= q * r[j] and p * r[j] <= q * r[j + 1] for r in W for j in range(N - 1))
