"""Adult data: snapshot checksum, ucimlrepo fallback, train-split extraction, target coding, groups."""

from __future__ import annotations

import gzip
import json
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from countdp.evaluate.data import (
    ADULT_COLUMNS,
    ADULT_SHA256,
    ADULT_TRAIN_ROWS,
    DataError,
    adult_targets,
    binomial_groups,
    empirical_distribution,
    group_counts,
    load_adult,
    read_adult_table,
    read_snapshot,
    ucimlrepo_train_split,
    write_adult,
)
from tests.conftest import REPO

SNAPSHOT = REPO / "resources" / "adult.data.gz"


# ----------------------------------------------------------------- snapshot integrity


def test_snapshot_matches_published_checksum():
    df, info = read_snapshot(SNAPSHOT)
    assert info["sha256"] == ADULT_SHA256
    assert len(df) == ADULT_TRAIN_ROWS and list(df.columns) == list(ADULT_COLUMNS)


def test_corrupt_gzip_is_an_error_naming_the_file(tmp_path):
    bad = tmp_path / "adult.data.gz"
    raw = bytearray(SNAPSHOT.read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 64] = b"\x00" * 64
    bad.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"adult\.data\.gz.*(corrupt|truncated|SHA-256)"):
        read_snapshot(bad)


def test_truncated_gzip_is_an_error_naming_the_file(tmp_path):
    bad = tmp_path / "truncated.gz"
    raw = SNAPSHOT.read_bytes()
    bad.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(DataError, match=r"truncated\.gz: truncated gzip"):
        read_snapshot(bad)


def test_not_gzip_is_an_error(tmp_path):
    bad = tmp_path / "plain.gz"
    bad.write_text("39, State-gov, 77516\n")
    with pytest.raises(DataError, match=r"plain\.gz: corrupt or not a gzip"):
        read_snapshot(bad)


def test_wrong_checksum_is_an_error(tmp_path):
    """A well-formed gzip whose content differs by one row: the checksum names the file."""
    lines = gzip.decompress(SNAPSHOT.read_bytes()).splitlines(keepends=True)
    bad = tmp_path / "edited.data.gz"
    bad.write_bytes(gzip.compress(b"".join(lines[1:])))
    with pytest.raises(DataError, match=r"edited\.data\.gz: SHA-256 .* expected " + ADULT_SHA256):
        read_snapshot(bad)


def test_missing_snapshot(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_snapshot(tmp_path / "nope.gz")


def test_auto_never_uses_a_bad_snapshot(tmp_path):
    bad = tmp_path / "adult.data.gz"
    bad.write_bytes(SNAPSHOT.read_bytes()[:5000])

    def offline(**kwargs):
        raise ConnectionError("Error connecting to server")

    with pytest.raises(DataError, match=str(bad)):
        load_adult("auto", bad, timeout=1, fetch=offline)


# ----------------------------------------------------------------- ucimlrepo and the fallback


def _fake_uci_frame(n_train: int = ADULT_TRAIN_ROWS, n_test: int = 5) -> pd.DataFrame:
    """A frame shaped like fetch_ucirepo(id=2).data.original: train rows, then test rows ('.')."""
    snap, _ = read_snapshot(SNAPSHOT)
    train = snap.iloc[:n_train].copy()
    test = snap.iloc[:n_test].copy()
    test["income"] = test["income"] + "."
    return pd.concat([train, test], ignore_index=True)


def _result(frame):
    return SimpleNamespace(data=SimpleNamespace(original=frame))


def _labelled(labels: list[str]) -> pd.DataFrame:
    """A frame with the Adult columns, every cell "x" except the given income labels."""
    frame = pd.DataFrame(dict.fromkeys(ADULT_COLUMNS, "x"), index=range(len(labels)))
    frame["income"] = labels
    return frame


def test_ucimlrepo_train_split_checks_the_count_and_the_order():
    """The training rows are those before the first dotted label, exactly as many as adult.data has;
    another count, or a test row before a training row, is refused."""
    train_labels = ["<=50K", ">50K"] * (ADULT_TRAIN_ROWS // 2) + ["<=50K"] * (ADULT_TRAIN_ROWS % 2)
    test_labels = ["<=50K.", ">50K.", "<=50K."]
    frame = _labelled(train_labels + test_labels)
    train, info = ucimlrepo_train_split(frame)
    assert len(train) == ADULT_TRAIN_ROWS and info == {"rows_read": ADULT_TRAIN_ROWS + 3, "rows_test": 3}
    assert list(train["income"]) == train_labels
    with pytest.raises(DataError, match=f"3 training rows .* expected {ADULT_TRAIN_ROWS}"):
        ucimlrepo_train_split(_labelled(train_labels[:3] + test_labels))
    last = ADULT_TRAIN_ROWS - 1
    interleaved = frame.iloc[[*range(last), last + 1, last, last + 2, last + 3]]
    with pytest.raises(DataError, match="interleaved"):
        ucimlrepo_train_split(interleaved)


def test_ucimlrepo_source_used_when_fetch_works():
    table, record = load_adult("auto", SNAPSHOT, timeout=5, fetch=lambda **kw: _result(_fake_uci_frame()))
    assert record["source"] == "ucimlrepo" and record["failed_attempts"] == []
    assert record["rows_read"] == ADULT_TRAIN_ROWS + 5 and record["rows_test"] == 5
    snap_table, _ = load_adult("snapshot", SNAPSHOT)
    pd.testing.assert_frame_equal(table, snap_table)  # the same training split either way


@pytest.mark.parametrize("failure", ["raise", "timeout", "bad-shape"])
def test_fallback_to_snapshot_is_recorded(failure, tmp_path):
    wrong_shape = _result(_fake_uci_frame(n_train=100))  # built before the clock starts: the fetch itself is instant

    def fetch(**kwargs):
        if failure == "raise":
            raise ConnectionError("Error connecting to server")
        if failure == "timeout":
            time.sleep(5)
        return wrong_shape

    start = time.monotonic()
    table, record = load_adult("auto", SNAPSHOT, timeout=0.3, fetch=fetch)
    assert time.monotonic() - start < 4
    assert record["source"] == "snapshot" and record["sha256"] == ADULT_SHA256
    assert record["failed_attempts"][0]["source"] == "ucimlrepo"
    expected = {"raise": "ConnectionError", "timeout": "timed out", "bad-shape": "100 training rows"}[failure]
    assert expected in record["failed_attempts"][0]["error"]
    assert len(table) == ADULT_TRAIN_ROWS
    written = write_adult(table, record, tmp_path / "t.csv", tmp_path / "t.json")
    sidecar = json.loads((tmp_path / "t.json").read_text())
    assert sidecar["source"] == "snapshot" and sidecar["table_sha256"] == written["table_sha256"]
    assert len(read_adult_table(tmp_path / "t.csv", tmp_path / "t.json")) == ADULT_TRAIN_ROWS


def test_ucimlrepo_only_does_not_fall_back():
    def fetch(**kwargs):
        raise ConnectionError("offline")

    with pytest.raises(DataError, match="fetch failed"):
        load_adult("ucimlrepo", SNAPSHOT, timeout=1, fetch=fetch)


def test_unknown_source():
    with pytest.raises(DataError, match="data.source"):
        load_adult("web", SNAPSHOT)


def test_tampered_table_is_detected(tmp_path):
    table, record = load_adult("snapshot", SNAPSHOT)
    write_adult(table, record, tmp_path / "t.csv", tmp_path / "t.json")
    (tmp_path / "t.csv").write_text((tmp_path / "t.csv").read_text().replace(",1\n", ",0\n", 1))
    with pytest.raises(DataError, match="does not match"):
        read_adult_table(tmp_path / "t.csv", tmp_path / "t.json")


# ----------------------------------------------------------------- target coding


def test_target_coding_small_fixture():
    frame = pd.DataFrame({
        "age": [29, 30, 17, 90], "sex": [" Male", "Female ", "Male", "Female"],
        "income": [" <=50K", ">50K.", ">50K", "<=50K."],
    })
    t = adult_targets(frame)
    assert list(t["young"]) == [1, 0, 1, 0]
    assert list(t["gender"]) == [1, 0, 1, 0]
    assert list(t["income"]) == [0, 1, 1, 0]
    assert list(t["income_label"]) == ["<=50K", ">50K", ">50K", "<=50K"]


@pytest.mark.parametrize("column,value,message", [
    ("sex", "Unknown", "'sex' has unexpected"), ("income", "50K", "'income' has unexpected"),
    ("age", "old", "'age' has values"),
])
def test_bad_labels_are_errors(column, value, message):
    frame = pd.DataFrame({"age": [40, 41], "sex": ["Male", "Male"], "income": ["<=50K", ">50K"]})
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = value
    with pytest.raises(DataError, match=message):
        adult_targets(frame, "fixture")


def test_snapshot_target_counts():
    table, record = load_adult("snapshot", SNAPSHOT)
    assert record["targets"]["income"]["ones"] == 7841  # the UCI documentation: 24.08% > 50K
    assert record["targets"]["gender"]["ones"] == 21790
    assert record["targets"]["young"]["ones"] == 9711  # counted from the raw file below, without the library


def test_snapshot_counts_from_the_raw_file():
    """The snapshot's counts recomputed with the csv module alone (age is column 0, sex 9, income 14)."""
    import csv

    with gzip.open(SNAPSHOT, "rt", newline="") as f:
        rows = [r for r in csv.reader(f) if r and r[0].strip()]
    assert len(rows) == 32561  # the UCI documentation: 32561 training records
    assert sum(int(r[0]) < 30 for r in rows) == 9711
    assert sum(r[9].strip() == "Male" for r in rows) == 21790
    assert sum(r[14].strip() == ">50K" for r in rows) == 7841


# ----------------------------------------------------------------- grouping


def test_group_counts_drops_remainder_and_sums():
    bits = np.array([1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1])
    assert list(group_counts(bits, 3)) == [2, 2, 2]
    assert list(group_counts(bits, 5)) == [4, 3]
    rng = np.random.default_rng(0)
    counts = group_counts(bits, 2, rng)
    assert counts.size == 5 and counts.sum() <= bits.sum() and counts.max() <= 2


def test_group_counts_permutation_preserves_total_without_remainder():
    bits = np.r_[np.ones(30, int), np.zeros(70, int)]
    for seed in range(5):
        counts = group_counts(bits, 10, np.random.default_rng(seed))
        assert counts.sum() == 30 and counts.size == 10


def test_group_counts_rejects_bad_input():
    with pytest.raises(ValueError):
        group_counts(np.array([0, 2, 1]), 2)
    with pytest.raises(ValueError):
        group_counts(np.array([0, 1]), 3)


def test_binomial_groups_shape_and_mean():
    counts = binomial_groups(7, 0.3, np.random.default_rng(1), population=10_000)
    assert counts.size == 10_000 // 7
    assert abs(counts.mean() - 2.1) < 0.1
    q = empirical_distribution(counts, 7)
    assert q.shape == (8,) and np.isclose(q.sum(), 1)
