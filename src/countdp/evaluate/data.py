"""Input data for the extrinsic evaluations: the UCI Adult training split and Binomial groups.

Adult (Becker & Kohavi 1996, UCI Machine Learning Repository, CC BY 4.0) is read either from
``ucimlrepo.fetch_ucirepo(id=2)`` (which returns the 32,561 training and 16,281 test rows
together; the test rows' income labels end in a dot) or from the gzip snapshot of the raw
``adult.data`` shipped in ``resources/``, whose decompressed bytes must have the published
SHA-256.  Either way the result is the tidy table of :func:`adult_targets`: one row per person
with three binary targets, ``young`` (age < 30), ``gender`` (male) and ``income`` (> 50K).

A file that is corrupt, truncated or has the wrong checksum raises :class:`DataError`
naming the file and what is wrong; it is never used silently.

Groups: a vector of bits is cut into consecutive groups of ``n`` (the remainder dropped)
after an optional random permutation; the group counts are the true inputs of a mechanism.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from ucimlrepo import fetch_ucirepo

from countdp.services.artifact import atomic_path, write_text_atomic

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
)
ADULT_TRAIN_ROWS = 32_561
ADULT_TEST_ROWS = 16_281
ADULT_SHA256 = "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"
"""SHA-256 of the raw (decompressed) UCI ``adult.data`` file."""
ADULT_UCI_ID = 2
TARGETS = ("young", "gender", "income")
"""The three binary targets: age < 30, sex == Male, income > 50K."""
YOUNG_AGE = 30
SOURCES = ("auto", "ucimlrepo", "snapshot")
POPULATION = 10_000
"""Size of a synthetic population (the paper's Section V-C)."""


class DataError(ValueError):
    """Input data that cannot be used; the message names the file or source and the problem."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- label coding


def _normalise_labels(df: pd.DataFrame, origin: str) -> pd.DataFrame:
    """Strip padding and the test split's trailing dot; check every label is a known one."""
    missing = [c for c in ("age", "sex", "income") if c not in df.columns]
    if missing:
        raise DataError(f"{origin}: missing column(s) {missing}; got {list(df.columns)}")
    out = df.copy()
    out["sex"] = out["sex"].astype(str).str.strip()
    out["income"] = out["income"].astype(str).str.strip().str.rstrip(".").str.upper()
    age = pd.to_numeric(out["age"], errors="coerce")
    if age.isna().any() or (age <= 0).any() or (age != age.round()).any():
        bad = out.loc[age.isna() | (age <= 0), "age"].head(3).tolist()
        raise DataError(f"{origin}: column 'age' has values that are not positive integers, e.g. {bad}")
    out["age"] = age.astype(np.int64)
    bad_sex = sorted(set(out["sex"]) - {"Male", "Female"})
    if bad_sex:
        raise DataError(f"{origin}: column 'sex' has unexpected labels {bad_sex[:5]}")
    bad_income = sorted(set(out["income"]) - {"<=50K", ">50K"})
    if bad_income:
        raise DataError(f"{origin}: column 'income' has unexpected labels {bad_income[:5]}")
    return out


def adult_targets(df: pd.DataFrame, origin: str = "Adult") -> pd.DataFrame:
    """The tidy table: ``row`` (0-based line in adult.data), age, sex, income label and the
    three 0/1 targets ``young`` (age < 30), ``gender`` (sex is Male), ``income`` (> 50K)."""
    clean = _normalise_labels(df, origin)
    return pd.DataFrame({
        "row": np.arange(len(clean), dtype=np.int64),
        "age": clean["age"].to_numpy(),
        "sex": clean["sex"].to_numpy(),
        "income_label": clean["income"].to_numpy(),
        "young": (clean["age"].to_numpy() < YOUNG_AGE).astype(np.int64),
        "gender": (clean["sex"].to_numpy() == "Male").astype(np.int64),
        "income": (clean["income"].to_numpy() == ">50K").astype(np.int64),
    })


# --------------------------------------------------------------------------- the snapshot


def read_snapshot(path: str | Path, expected_sha256: str = ADULT_SHA256) -> tuple[pd.DataFrame, dict]:
    """Read the gzip snapshot of ``adult.data``; verify its decompressed SHA-256 and row count.

    Returns the raw 15-column frame and a provenance record.  Raises :class:`DataError`
    naming ``path`` if the file is missing, not gzip, truncated, has another checksum, or
    does not parse into 32,561 rows of 15 columns.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: Adult snapshot not found")
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    except EOFError as exc:
        raise DataError(f"{path}: truncated gzip file (compressed stream ends early: {exc})") from exc
    except (gzip.BadGzipFile, zlib.error, OSError) as exc:
        raise DataError(f"{path}: corrupt or not a gzip file ({exc})") from exc
    digest = sha256_bytes(raw)
    if digest != expected_sha256:
        raise DataError(
            f"{path}: SHA-256 of the decompressed content is {digest}, expected {expected_sha256} "
            "(the file is corrupt or is not the UCI adult.data training split)"
        )
    try:
        df = pd.read_csv(io.BytesIO(raw), header=None, names=list(ADULT_COLUMNS), skipinitialspace=True,
                         na_values="?", keep_default_na=False, skip_blank_lines=True)
    except (ValueError, pd.errors.ParserError) as exc:  # pragma: no cover - checksum guards this
        raise DataError(f"{path}: cannot parse as Adult CSV ({exc})") from exc
    if len(df) != ADULT_TRAIN_ROWS:
        raise DataError(f"{path}: has {len(df)} rows, expected {ADULT_TRAIN_ROWS}")
    info = {
        "source": "snapshot",
        "path": str(path),
        "sha256": digest,
        "sha256_of": "decompressed adult.data",
        "sha256_expected": expected_sha256,
        "sha256_gzip": sha256_file(path),
        "rows_read": int(len(df)),
    }
    return df, info


# --------------------------------------------------------------------------- ucimlrepo


def ucimlrepo_train_split(original: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Pick the training rows out of ucimlrepo's train+test frame and check their count.

    The test rows are those whose income label ends in a dot; they follow the training
    rows.  Raises :class:`DataError` unless exactly 32,561 training rows remain, all before
    the first test row.
    """
    origin = f"ucimlrepo dataset id={ADULT_UCI_ID}"
    if "income" not in original.columns:
        raise DataError(f"{origin}: no 'income' column; got {list(original.columns)}")
    labels = original["income"].astype(str).str.strip()
    is_test = labels.str.endswith(".").to_numpy()
    n_train = int((~is_test).sum())
    if n_train != ADULT_TRAIN_ROWS:
        raise DataError(f"{origin}: {n_train} training rows (income without a trailing '.'), "
                        f"expected {ADULT_TRAIN_ROWS}")
    if is_test[:n_train].any():
        raise DataError(f"{origin}: training and test rows are interleaved; cannot recover adult.data order")
    train = original.iloc[:n_train].reset_index(drop=True)
    info = {"rows_read": int(len(original)), "rows_test": int(is_test.sum())}
    return train, info


def _canonical_csv(df: pd.DataFrame) -> bytes:
    cols = [c for c in ADULT_COLUMNS if c in df.columns]
    return df[cols].to_csv(index=False, header=False, lineterminator="\n").encode()


def fetch_ucimlrepo(timeout: float, fetch: Callable | None = None) -> pd.DataFrame:
    """``fetch_ucirepo(id=2).data.original`` under a wall-clock ``timeout`` (seconds).

    The fetch runs in a daemon thread; if it has not finished in time a :class:`DataError`
    is raised and the thread is abandoned.  Any exception of the fetch becomes a DataError.
    """
    if fetch is None:
        fetch = fetch_ucirepo
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fetch(id=ADULT_UCI_ID)
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    worker = threading.Thread(target=run, name="ucimlrepo-fetch", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise DataError(f"ucimlrepo dataset id={ADULT_UCI_ID}: fetch timed out after {timeout:g} s")
    if "error" in box:
        exc = box["error"]
        raise DataError(f"ucimlrepo dataset id={ADULT_UCI_ID}: fetch failed "
                        f"({type(exc).__name__}: {exc})") from exc
    try:
        original = box["value"].data.original
    except (AttributeError, KeyError, TypeError) as exc:
        raise DataError(f"ucimlrepo dataset id={ADULT_UCI_ID}: unexpected result without data.original") from exc
    if not isinstance(original, pd.DataFrame):
        raise DataError(f"ucimlrepo dataset id={ADULT_UCI_ID}: data.original is not a DataFrame")
    return original


def read_ucimlrepo(timeout: float, fetch: Callable | None = None) -> tuple[pd.DataFrame, dict]:
    original = fetch_ucimlrepo(timeout, fetch)
    train, info = ucimlrepo_train_split(original)
    return train, {
        "source": "ucimlrepo",
        "uci_id": ADULT_UCI_ID,
        "sha256": sha256_bytes(_canonical_csv(train)),
        "sha256_of": "training rows re-serialised as CSV (15 columns, no header)",
        **info,
    }


# --------------------------------------------------------------------------- entry point


def load_adult(source: str = "auto", snapshot: str | Path = "resources/adult.data.gz",
               timeout: float = 20.0, fetch: Callable | None = None) -> tuple[pd.DataFrame, dict]:
    """The Adult training split as the tidy target table, and a provenance record.

    ``source``: ``auto`` (ucimlrepo, falling back to the snapshot on any failure),
    ``ucimlrepo`` (no fallback) or ``snapshot`` (no network).  The record says which source
    was used, its checksum, the row counts and every failed attempt.
    """
    if source not in SOURCES:
        raise DataError(f"data.source must be one of {SOURCES}, got {source!r}")
    attempts: list[dict] = []
    start = time.monotonic()
    frame = info = None
    if source in ("auto", "ucimlrepo"):
        try:
            frame, info = read_ucimlrepo(timeout, fetch)
            origin = f"ucimlrepo dataset id={ADULT_UCI_ID}"
        except DataError as exc:
            if source == "ucimlrepo":
                raise
            attempts.append({"source": "ucimlrepo", "error": str(exc)})
    if frame is None:
        frame, info = read_snapshot(snapshot)
        origin = str(snapshot)
    table = adult_targets(frame, origin)
    if len(table) != ADULT_TRAIN_ROWS:  # pragma: no cover - both readers check this
        raise DataError(f"{origin}: {len(table)} rows after coding, expected {ADULT_TRAIN_ROWS}")
    record = {
        **info,
        "requested_source": source,
        "failed_attempts": attempts,
        "fetch_timeout_s": timeout,
        "rows_train": int(len(table)),
        "targets": {t: {"ones": int(table[t].sum()), "fraction": float(table[t].mean())} for t in TARGETS},
        "target_definitions": {"young": f"age < {YOUNG_AGE}", "gender": "sex == Male", "income": "income > 50K"},
        "elapsed_s": round(time.monotonic() - start, 3),
    }
    return table, record


def write_adult(table: pd.DataFrame, record: dict, csv_path: str | Path, json_path: str | Path) -> dict:
    """Write the tidy table and its JSON sidecar atomically; the sidecar holds the table's SHA-256."""
    data = table.to_csv(index=False, lineterminator="\n").encode()
    with atomic_path(csv_path) as tmp:
        tmp.write_bytes(data)
    record = {**record, "table": str(csv_path), "table_sha256": sha256_bytes(data)}
    write_text_atomic(json_path, json.dumps(record, indent=1) + "\n")
    return record


def read_adult_table(csv_path: str | Path, json_path: str | Path | None = None) -> pd.DataFrame:
    """Read the tidy table; with its sidecar, check its SHA-256 first (raises DataError)."""
    csv_path = Path(csv_path)
    data = csv_path.read_bytes()
    if json_path is not None:
        expected = json.loads(Path(json_path).read_text()).get("table_sha256")
        if expected != sha256_bytes(data):
            raise DataError(f"{csv_path}: SHA-256 does not match the one recorded in {json_path}")
    table = pd.read_csv(io.BytesIO(data))
    missing = [t for t in TARGETS if t not in table.columns]
    if missing or not table[list(TARGETS)].isin([0, 1]).all().all():
        raise DataError(f"{csv_path}: needs 0/1 columns {TARGETS}")
    return table


# --------------------------------------------------------------------------- groups


def group_counts(bits: np.ndarray, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Counts of ones in consecutive groups of ``n`` bits (remainder dropped).

    With ``rng`` the bits are first put in a random order (a fresh random grouping).
    """
    b = np.asarray(bits)
    if b.ndim != 1 or (b.size and not ((b == 0) | (b == 1)).all()):
        raise ValueError("bits must be a 1-d array of 0/1 values")
    if int(n) < 1:
        raise ValueError(f"group size n must be >= 1, got {n!r}")
    n = int(n)
    if rng is not None:
        b = b[rng.permutation(b.size)]
    k = b.size // n
    if k == 0:
        raise ValueError(f"{b.size} bits are fewer than one group of n = {n}")
    return b[: k * n].reshape(k, n).sum(axis=1).astype(np.int64)


def bernoulli_population(p: float, rng: np.random.Generator, size: int = POPULATION) -> np.ndarray:
    """``size`` i.i.d. Bernoulli(p) bits."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    return (rng.random(size) < p).astype(np.int64)


def binomial_groups(n: int, p: float, rng: np.random.Generator, population: int = POPULATION) -> np.ndarray:
    """Group counts of a fresh population of ``population`` Bernoulli(p) bits cut into groups of n."""
    return group_counts(bernoulli_population(p, rng, population), n)


def empirical_distribution(counts: np.ndarray, n: int) -> np.ndarray:
    """The fraction of groups with each count 0..n."""
    c = np.asarray(counts, dtype=np.int64)
    return np.bincount(c, minlength=n + 1)[: n + 1] / c.size


__all__ = [
    "ADULT_COLUMNS", "ADULT_SHA256", "ADULT_TRAIN_ROWS", "POPULATION", "SOURCES", "TARGETS", "DataError",
    "adult_targets", "bernoulli_population", "binomial_groups", "empirical_distribution", "fetch_ucimlrepo",
    "group_counts", "load_adult", "read_adult_table", "read_snapshot", "read_ucimlrepo", "sha256_file",
    "ucimlrepo_train_split", "write_adult",
]
