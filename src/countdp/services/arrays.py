"""The arrays of a mechanism file: ``X.npz`` beside ``X.json``, and the digests that bind them.

The npz holds ``matrix`` (float64, ``matrix[i, j] = Pr[output i | input j]``) and ``weights``
(int64 release weights, same layout), compressed as ``numpy.savez_compressed`` does, so
``np.load("X.npz")`` reads it with plain numpy.  The designs are nearly Toeplitz, so deflate
shrinks them about a hundredfold (1.5 MB at n = 2048, against 143 MB of inline JSON).

The archive is byte-deterministic (fixed member timestamps, fixed order): the same design always
gives the same npz and so the same SHA-256, which the JSON records; a rerun of the workflow
reproduces its files exactly.  The JSON also records the SHA-256 of the weights'
canonical bytes (int64 little-endian, row-major), which names the released distribution itself,
whatever archive carries it.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

ARRAYS = {"matrix": np.dtype("<f8"), "weights": np.dtype("<i8")}
"""The npz members (``{name}.npy``) and their dtypes."""


def arrays_path(json_path: str | os.PathLike) -> Path:
    """Where the arrays of the mechanism JSON ``json_path`` go: ``X.json`` -> ``X.npz``, same folder."""
    return Path(json_path).with_suffix(".npz")


def sha256_hex(data: bytes | memoryview | np.ndarray) -> str:
    return hashlib.sha256(data).hexdigest()


def weights_digest(weights: np.ndarray) -> str:
    """SHA-256 of the weights' canonical bytes: int64 little-endian, row-major (rows are outputs)."""
    return sha256_hex(np.ascontiguousarray(weights, dtype=ARRAYS["weights"]))


def npz_bytes(matrix: np.ndarray, weights: np.ndarray) -> bytes:
    """The npz archive (``np.savez_compressed``) of a mechanism's matrix and weights, in canonical dtypes.

    numpy writes each member through ``ZipFile.open(name, "w")``, whose entries carry the fixed
    timestamp 1980-01-01, so the bytes depend on the arrays only.
    """
    buffer = io.BytesIO()
    np.savez_compressed(buffer, matrix=np.ascontiguousarray(matrix, dtype=ARRAYS["matrix"]),
                        weights=np.ascontiguousarray(weights, dtype=ARRAYS["weights"]))
    return buffer.getvalue()


def read_npz(data: bytes) -> dict[str, np.ndarray]:
    """The ``matrix`` and ``weights`` of an npz archive's bytes; ``ValueError`` (the reason) otherwise.

    The arrays must be exactly those two, square, of the same shape, with the dtypes of ``ARRAYS``.
    """
    if not data.startswith(b"PK\x03\x04"):
        raise ValueError("not a readable npz (not a zip archive)")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f"not a readable npz ({exc})") from None
    if sorted(arrays) != sorted(ARRAYS):
        raise ValueError(f"holds arrays {sorted(arrays)}, not {sorted(ARRAYS)}")
    for name, dtype in ARRAYS.items():
        if arrays[name].dtype != dtype:
            raise ValueError(f"its {name} has dtype {arrays[name].dtype}, not {dtype}")
    shape = arrays["matrix"].shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2 or arrays["weights"].shape != shape:
        raise ValueError(f"its matrix {shape} and weights {arrays['weights'].shape} are not one square shape")
    return arrays


__all__ = ["ARRAYS", "arrays_path", "npz_bytes", "read_npz", "sha256_hex", "weights_digest"]
