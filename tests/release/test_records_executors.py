"""A large group table released in Spark's executors (real local mode, no mocks): each part's noise is
the table release's sampler applied to words derived as the sidecar says; the folder of parts is
committed all or nothing; the sidecar holds nothing that depends on a count but through the noise.

The thresholds are lowered through the settings passed in (``RecordsSettings``), so a few thousand
records take the executor path.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import countdp
from countdp.release.atomic_folder import release_files
from countdp.release.draws import ColumnSampler
from countdp.release.partials import remove_stale_partials
from countdp.release.records import RecordsSettings
from countdp.services.mechanism_cache import MechanismCache

pytestmark = pytest.mark.spark

COUNTS = {"young": "age < 30", "rich": "income = '>50K'"}
KEYS = ["county", "band"]
SMALL = RecordsSettings(executor_groups=4, part_groups=6)
"""20 groups: drawn in the executors, in ceil(20 / 6) = 4 parts."""


def people_frame(seed: int = 9, rows: int = 800) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"county": rng.choice(["a", "b", "c", None], rows), "band": rng.integers(0, 5, rows),
                         "age": rng.integers(17, 90, rows), "income": rng.choice([">50K", "<=50K"], rows)})


@pytest.fixture(scope="module")
def people(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("records") / "people.parquet"
    pq.write_table(pa.Table.from_pandas(people_frame(), preserve_index=False), path)
    return path


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def release(source, out, cache, seed=13, settings=SMALL, **extra):
    return countdp.release_records(source, KEYS, COUNTS, mechanism="EM", alpha="1/2", cache=cache, seed=seed,
                                   engine="spark", settings=settings, out=out, **extra)


def parts_of(folder: Path) -> list[Path]:
    return sorted((folder / "table.parquet").iterdir())


def test_each_part_is_the_samplers_release_of_the_true_counts_with_the_words_the_sidecar_names(
        spark, tmp_path, people, cache):
    _, record = release(people, f"{tmp_path}/o/", cache)
    assert sorted(os.listdir(tmp_path / "o")) == ["table.parquet", "table.parquet.release.json"]
    parts = parts_of(tmp_path / "o")
    assert [p.name for p in parts] == [f"part-{k:05d}.parquet" for k in range(4)]
    assert record["output"]["parts"]["files"] == 4 and record["input"]["records"]["partitions"] == 4
    assert record["input"]["records"]["engine"] == "spark" and "executors" in record["input"]["records"]["noise"]
    truth = people_frame().groupby(KEYS, dropna=False).agg(
        n=("age", "size"), young=("age", lambda a: int((a < 30).sum())),
        rich=("income", lambda i: int((i == ">50K").sum()))).reset_index()
    listing, seen = "", 0
    for part in parts:
        listing += f"{hashlib.sha256(part.read_bytes()).hexdigest()}  {part.name}\n"
        table = pq.read_table(part)
        keys = table.select(KEYS)
        stream = pa.BufferOutputStream()
        with pa.ipc.new_stream(stream, keys.schema) as writer:
            writer.write_table(keys)
        words = tuple(int(w) for w in np.frombuffer(hashlib.sha256(stream.getvalue().to_pybytes()).digest(), ">u4"))
        got = table.to_pandas().merge(truth, on=KEYS, how="left", suffixes=("", "_true"))
        assert (got["n"] == got["n_true"]).all()
        sizes = np.unique(got["n"].to_numpy())
        designs = [MechanismCache(cache).get("EM", int(n), Fraction(1, 2)).released for n in sizes]
        for c, name in enumerate(["young", "rich"]):
            generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(13, spawn_key=(c, *words))))
            expected = ColumnSampler(designs, sizes).sample(got[name].to_numpy(), np.searchsorted(sizes, got["n"]),
                                                           generator.bit_generator.random_raw(len(got)))
            assert (got[f"noisy_{name}"].to_numpy() == expected).all(), (part.name, name)
        seen += len(got)
    assert seen == len(truth)
    assert record["output"]["sha256"] == hashlib.sha256(listing.encode()).hexdigest()


def test_a_broken_derivation_of_the_words_is_caught(spark, tmp_path, people, cache):
    """The check above fails on words not derived as the sidecar says (the partition's identity left out)."""
    release(people, f"{tmp_path}/o/", cache)
    table = pq.read_table(parts_of(tmp_path / "o")[0]).to_pandas()
    sizes = np.unique(table["n"].to_numpy())
    designs = [MechanismCache(cache).get("EM", int(n), Fraction(1, 2)).released for n in sizes]
    truth = people_frame().groupby(KEYS, dropna=False)["age"].apply(lambda a: int((a < 30).sum())).rename("young")
    got = table.merge(truth.reset_index(), on=KEYS, how="left")
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(13, spawn_key=(0,))))
    expected = ColumnSampler(designs, sizes).sample(got["young"].to_numpy(), np.searchsorted(sizes, got["n"]),
                                                    generator.bit_generator.random_raw(len(got)))
    assert not (got["noisy_young"].to_numpy() == expected).all()


def test_a_seeded_release_in_the_executors_is_reproducible_and_secure_ones_differ(spark, tmp_path, people, cache):
    _, first = release(people, f"{tmp_path}/a/", cache)
    _, again = release(people, f"{tmp_path}/b/", cache)
    assert first["output"]["sha256"] == again["output"]["sha256"]
    assert [p.read_bytes() for p in parts_of(tmp_path / "a")] == [p.read_bytes() for p in parts_of(tmp_path / "b")]
    _, secure = release(people, f"{tmp_path}/c/", cache, seed=None)
    _, other = release(people, f"{tmp_path}/d/", cache, seed=None)
    assert secure["randomness"]["source"] == "os.urandom" and secure["randomness"]["privacy_release"] is True
    assert secure["output"]["sha256"] != other["output"]["sha256"]
    noisy = [pd.read_parquet(tmp_path / x / "table.parquet").sort_values(KEYS)["noisy_young"].to_numpy()
             for x in "cd"]
    assert (noisy[0] != noisy[1]).any()


def test_the_sidecar_depends_on_the_counts_only_through_the_noise(spark, tmp_path, cache):
    """Two sets of records with the same public facts (groups, sizes) and other counts: seeded releases'
    sidecars are the same but for the output's digest (a function of the noisy table) and the time."""
    frames = [people_frame(), people_frame()]
    frames[1]["age"] = np.random.default_rng(5).integers(17, 90, len(frames[1]))  # other counts, same groups
    frames[1]["income"] = np.where(frames[1]["income"] == ">50K", "<=50K", ">50K")
    records = []
    for k, frame in enumerate(frames):
        path = tmp_path / f"p{k}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
        _, record = release(path, f"{tmp_path}/o{k}/", cache)
        for key in ("created_utc",):
            record.pop(key)
        record["output"].pop("sha256"), record["output"].pop("path"), record["input"]["records"].pop("source")
        records.append(json.dumps(record, sort_keys=True))
    assert records[0] == records[1]
    tables = [pd.read_parquet(tmp_path / f"o{k}" / "table.parquet") for k in range(2)]
    assert not tables[0].sort_values(KEYS).reset_index(drop=True).equals(tables[1].sort_values(KEYS)
                                                                         .reset_index(drop=True))


def test_a_refusal_in_the_executors_is_one_line_and_leaves_nothing(spark, tmp_path, people, cache):
    """A count equal to the group size on every group (a predicate always true) would publish it: refused by
    the table release's own check, run in a Spark task."""
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(ValueError, match="equals the count column 'young' on every row") as caught:
        countdp.release_records(people, KEYS, {"young": "age > 0"}, mechanism="EM", alpha="1/2", cache=cache,
                                engine="spark", settings=SMALL, out=f"{tmp_path}/o/")
    assert "\n" not in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == before


KILLED = r"""
import sys
import countdp
from countdp.release.records import RecordsSettings
from countdp.release.records_spark import session
session("local[2]").conf.set("spark.sql.shuffle.partitions", "2")
countdp.release_records(sys.argv[1], ["county", "band"], {"young": "age < 30"}, mechanism="EM", alpha="1/2",
                        cache=sys.argv[2], engine="spark", settings=RecordsSettings(executor_groups=1, part_groups=1),
                        out=sys.argv[3], overwrite=True)
"""


def test_a_sigkill_while_parts_are_written_leaves_the_previous_release_and_the_next_cleans_up(
        spark, tmp_path, people, cache):
    folder = tmp_path / "out"
    folder.mkdir()
    release(people, f"{folder}/o/", cache)
    old = {p.name: p.read_bytes() for p in parts_of(folder / "o")}
    sidecar = (folder / "o" / "table.parquet.release.json").read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(people), str(cache), f"{folder}/o/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if list(folder.glob(".o.countdp-partial-*/table.parquet/part-*")):
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the release ended before any part was written"
        os.killpg(proc.pid, signal.SIGKILL)  # the release and the Spark JVM and workers it started
    finally:
        proc.wait(30)
    partial = [p.name for p in folder.iterdir() if p.name != "o"]
    assert len(partial) == 1 and partial[0].startswith(".o.countdp-partial-")
    assert {p.name: p.read_bytes() for p in parts_of(folder / "o")} == old
    assert (folder / "o" / "table.parquet.release.json").read_bytes() == sidecar
    release(people, f"{folder}/o/", cache, overwrite=True)
    assert sorted(os.listdir(folder)) == ["o"]


def test_cleanup_removes_a_dead_partial_of_parts_but_nothing_a_release_does_not_write(tmp_path):
    """A dead release's partial folder holding a folder of part files goes; one whose part folder holds
    anything else stays whole; a release folder of parts is a release (``--overwrite`` may replace it),
    one with a stray file in its parts is not."""
    token = "0123456789abcdef" * 2
    dead, foreign = (tmp_path / f".{n}.countdp-partial-{token}" for n in ("out", "other"))
    for folder in (dead, foreign):
        (folder / "table.parquet").mkdir(parents=True)
        (folder / "table.parquet" / "part-00000.parquet").write_bytes(b"PAR1")
        (folder / "table.parquet.release.json").write_text("{")
    (foreign / "table.parquet" / "notes.txt").write_text("the curator's")
    assert remove_stale_partials(tmp_path) == [dead]
    assert sorted(os.listdir(foreign / "table.parquet")) == ["notes.txt", "part-00000.parquet"]
    release = tmp_path / "o"
    (release / "table.parquet").mkdir(parents=True)
    (release / "table.parquet" / "part-00000.parquet").write_bytes(b"PAR1")
    (release / "table.parquet.release.json").write_text("{")
    assert release_files(release) == ("table.parquet", "table.parquet.release.json")
    (release / "table.parquet" / "_SUCCESS").write_text("")
    assert release_files(release) is None
