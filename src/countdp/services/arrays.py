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

from countdp.validation import check_fits_in_memory

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


LOAD_BYTES_PER_ENTRY = 160
"""Peak memory of reading and verifying a file's arrays per matrix entry (both arrays, the float and
exact DP tests, the property checks: 129 B measured for GM at n = 1024); a header declaring more than
is available is refused unread."""


class _Refused(ValueError):
    """A well-formed archive that is not a mechanism's arrays (its message is the reason, as is)."""


_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _header(member) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of a ``.npy`` member, read from its first bytes only."""
    version = np.lib.format.read_magic(member)
    if version not in _READERS:
        raise ValueError(f"npy format version {version[0]}.{version[1]} is not one countdp writes")
    return _READERS[version](member)


def _check_headers(headers: dict, n: int | None) -> None:
    """The members' dtypes and one square shape (of side ``n + 1`` when ``n`` is given), before any data is read."""
    for name, dtype in ARRAYS.items():
        if headers[name][2] != dtype:
            raise _Refused(f"its {name} has dtype {headers[name][2]}, not {dtype}")
    shape, weights_shape = headers["matrix"][0], headers["weights"][0]
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2 or weights_shape != shape:
        raise _Refused(f"its matrix {shape} and weights {weights_shape} are not one square shape")
    N = shape[0]
    if n is not None and N != n + 1:
        raise _Refused(f"n = {n}, but the arrays are {N}x{N} (n = {N - 1})")
    try:
        check_fits_in_memory(N - 1, LOAD_BYTES_PER_ENTRY, "reading and verifying its arrays")
    except ValueError as exc:
        raise _Refused(str(exc)) from None


def _read_data(member, header: tuple, name: str) -> np.ndarray:
    """The array a member's header declares, reading (and so decompressing) no more than its size and one byte."""
    shape, fortran_order, dtype = header
    array = np.empty(shape[::-1] if fortran_order else shape, dtype=dtype)
    view, done = memoryview(array).cast("B"), 0
    while done < len(view):
        got = member.readinto(view[done:])
        if not got:
            raise _Refused(f"its {name} holds fewer bytes than its header declares (a truncated file)")
        done += got
    if member.read(1):
        raise _Refused(f"its {name} holds more bytes than its header declares")
    return array.T if fortran_order else array


def read_npz(data: bytes, n: int | None = None) -> dict[str, np.ndarray]:
    """The ``matrix`` and ``weights`` of an npz archive's bytes; ``ValueError`` (the reason) otherwise.

    The arrays must be exactly those two, square, of the same shape (``(n + 1, n + 1)`` when ``n`` is
    given), with the dtypes of ``ARRAYS``.  Each member's ``.npy`` header is read first, and a shape
    that disagrees, or that this machine could not hold, is refused before any data is decompressed;
    no member is decompressed beyond the size its header declares (a zip bomb is not read in full).
    """
    if not data.startswith(b"PK\x03\x04"):
        raise ValueError("not a readable npz (not a zip archive)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = sorted(name.removesuffix(".npy") for name in archive.namelist())
            if names != sorted(ARRAYS) or not all(f"{name}.npy" in archive.namelist() for name in ARRAYS):
                raise _Refused(f"holds arrays {names}, not {sorted(ARRAYS)}")
            headers = {}
            for name in ARRAYS:
                with archive.open(f"{name}.npy") as member:
                    headers[name] = _header(member)
            _check_headers(headers, n)
            arrays = {}
            for name in ARRAYS:
                with archive.open(f"{name}.npy") as member:
                    _header(member)
                    arrays[name] = _read_data(member, headers[name], name)
    except _Refused as exc:
        raise ValueError(str(exc)) from None
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError) as exc:
        raise ValueError(f"not a readable npz ({exc})") from None
    return arrays


__all__ = ["ARRAYS", "LOAD_BYTES_PER_ENTRY", "arrays_path", "npz_bytes", "read_npz", "sha256_hex", "weights_digest"]
