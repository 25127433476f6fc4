"""Person records in, a release out: countdp on DuckDB and on Spark, against pandas + ``countdp release``,
and the Python API against the command line, in one sitting; time and peak memory, and their ratios.

Generates ``--records`` person records (Parquet, written in chunks) in ``--groups`` groups, with an
age, an income band and a sex, then times, each as a new process (peak memory is the process's
resident memory of its whole process tree, sampled every 0.1 s, so Spark's JVM counts):

1. ``countdp release --records ... --count`` three predicates, EM at 9/10, DuckDB (the target at
   10^8 records and 10^6 groups: <= 60 s and <= 2 GB);
2. the same with ``--engine spark --spark-master local[2]`` (target: within 3x of DuckDB), and, as
   the floor of any Spark release, Spark's own grouping alone (no countdp): a new ``local[2]``
   session reads the records, runs the same group-by with the three counts and collects the
   groups as Arrow;
3. the baseline a curator would write: pandas reads the records, groups them and writes the true
   counts as Parquet, then ``countdp release --input`` releases that table (times added);
4. ``countdp.release_table`` on a pandas DataFrame of ``--api-rows`` groups against the command line
   on the same table as Parquet (target: within 1.2x).

5. many small groupings in one process, as Figure 10's Adult evaluations do (950 a target): ``--groupings K``
   groupings of 45,222 people (Adult's size) in random groups of 8 to 128 by
   ``countdp.studies.adult_groups.adult_group_counts``, milliseconds a grouping, on this code and, with
   ``--old-src``, on the older one in the same sitting (``--groupings-only`` runs this row alone).

Tumult Analytics' group-by counts run only with ``--tumult PYTHON`` (the Python of a venv holding
``tmlt.analytics``, which pins an older pyspark than this project); ``--old-src`` runs the Spark row
on an older countdp too (the baseline of the same sitting); a release into a folder (``--out DIR/``)
of more groups than ``RecordsSettings.executor_groups`` is drawn in Spark's executors.

    .venv/bin/python benchmarks/bench_records.py                         # 10^7 records, 10^5 groups
    .venv/bin/python benchmarks/bench_records.py --records 100000000 --groups 1000000 --no-pandas
    .venv/bin/python benchmarks/bench_records.py --groupings-only --old-src /path/to/old/src
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK = 5_000_000
COUNTS = ["young=age < 30", "rich=income = '>50K'", "women=sex = 'F'"]


def generate(path: Path, records: int, groups: int, seed: int = 0) -> None:
    """Records in chunks: a group id (county), an age, an income band, a sex."""
    rng = np.random.default_rng(seed)
    writer = None
    for start in range(0, records, CHUNK):
        size = min(CHUNK, records - start)
        table = pa.table({"county": rng.integers(0, groups, size), "age": rng.integers(17, 91, size).astype(np.int16),
                          "income": pa.array(np.where(rng.random(size) < 0.24, ">50K", "<=50K")).dictionary_encode(),
                          "sex": pa.array(np.where(rng.random(size) < 0.5, "F", "M")).dictionary_encode()})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def tree_mb(root: int) -> float:
    """Resident MB of a process and all its descendants now (from /proc; Spark's JVM is a child)."""
    parents, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
            parents[int(entry)], rss[int(entry)] = int(fields[1]), int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError):
            continue
    tree, grown = {root}, True
    while grown:
        grown = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grown = True
    return sum(rss.get(pid, 0) for pid in tree) / 2**20


def timed(command: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """Wall seconds and the peak resident MB of the command's whole process tree (sampled every 0.1 s: the
    Python process and Spark's JVM together)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
        tree = 0.0
        while process.poll() is None:
            tree = max(tree, tree_mb(process.pid))
            time.sleep(0.1)
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"failed: {' '.join(command)}\n{errors.read().decode()[-3000:]}")
    return seconds, tree


def countdp(*args: str) -> list[str]:
    return [sys.executable, "-m", "countdp.cli", "release", *args]


def records_command(source: Path, out: Path, cache: Path, *extra: str, folder: bool = False) -> list[str]:
    counts = [item for count in COUNTS for item in ("--count", count)]
    return countdp("--records", str(source), "--group-by", "county", *counts, "--mechanism", "EM", "--alpha", "9/10",
                   "--cache", str(cache), "--out", f"{out}/" if folder else str(out), *extra)


PANDAS = """
import sys, pandas as pd
people = pd.read_parquet(sys.argv[1])
people["young"], people["rich"], people["women"] = people.age < 30, people.income == ">50K", people.sex == "F"
groups = people.groupby("county").agg(n=("age", "size"), young=("young", "sum"), rich=("rich", "sum"),
                                      women=("women", "sum")).reset_index()
groups.to_parquet(sys.argv[2], index=False)
"""

API = """
import sys, time, pandas as pd, countdp
frame = pd.read_parquet(sys.argv[1])
start = time.perf_counter()
countdp.release_table(frame, counts=["young", "rich", "women"], size="n", mechanism="EM", alpha="9/10",
                      keep=["county", "n"], cache=sys.argv[2])
print(time.perf_counter() - start)
"""


TUMULT = """
import sys
from pyspark.sql import SparkSession
from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("OFF")
people = spark.read.parquet(sys.argv[1]).selectExpr("county", "CAST(age AS INT) AS age", "income", "sex")  # no int16
session = Session.from_dataframe(privacy_budget=PureDPBudget(3), source_id="people", dataframe=people,
                                 protected_change=AddOneRow())
keys = KeySet.from_dataframe(people.select("county").distinct())  # public keys, as countdp's group-by
for name, where in [("young", "age < 30"), ("rich", "income = '>50K'"), ("women", "sex = 'F'")]:
    query = QueryBuilder("people").filter(where).groupby(keys).count()
    session.evaluate(query, PureDPBudget(1)).write.format("noop").mode("overwrite").save()
"""


SPARK_ALONE = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "4").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
spark.read.parquet(sys.argv[1]).createOrReplaceTempView("people")
spark.sql("SELECT county, count(*) AS n, count(*) FILTER (WHERE age < 30) AS young, "
          "count(*) FILTER (WHERE income = '>50K') AS rich, count(*) FILTER (WHERE sex = 'F') AS women "
          "FROM people GROUP BY county").toArrow()
"""
"""Spark's grouping alone, no countdp: what any release on Spark must spend at least."""


GROUPINGS = """
import sys, time
import numpy as np
from countdp.studies.adult_groups import adult_group_counts
bits = (np.random.default_rng(0).random(45222) < 0.24).astype(np.int8)
sizes = [8, 16, 32, 64, 128]
adult_group_counts(bits, 16, np.random.default_rng(1))  # the imports and the first database, not timed
count = int(sys.argv[1])
start = time.perf_counter()
for k in range(count):
    adult_group_counts(bits, sizes[k % len(sizes)], np.random.default_rng(k))
print((time.perf_counter() - start) / count)
"""
"""Figure 10's Adult groupings: Adult's 45,222 people grouped ``count`` times in one process."""


def groupings(count: int, old_src: Path | None) -> None:
    """Milliseconds a grouping of :data:`GROUPINGS`, on this code and on ``old_src``, in turn, twice each."""
    codes = [("this code", Path(__file__).resolve().parents[1] / "src")] + ([("old code", old_src)] if old_src else [])
    found: dict[str, list[float]] = {name: [] for name, _ in codes}
    for _ in range(2):
        for name, src in codes:
            env = {**os.environ, "PYTHONPATH": str(src)}
            done = subprocess.run([sys.executable, "-c", GROUPINGS, str(count)], env=env, capture_output=True,
                                  text=True, check=True)
            found[name].append(float(done.stdout.strip().splitlines()[-1]) * 1e3)
    print(f"# {count} groupings of 45,222 records (Figure 10's Adult groupings), one process; best of 2; "
          f"load={os.getloadavg()[0]:.1f}")
    best = {name: min(times) for name, times in found.items()}
    for name, ms in best.items():
        ratio = f"   {best['old code'] / ms:.2f}x faster than the old code" if old_src and name != "old code" else ""
        print(f"{name + ', ms a grouping':<36} {ms:>8.2f}{ratio}")


def tumult(source: Path, python: Path) -> tuple[str, float, float]:
    """Tumult Analytics' group-by counts of the three predicates (Laplace/geometric noise, its own Spark
    local[2]), run by the Python of its own venv (it pins an older pyspark than this project)."""
    env = {**os.environ, "PYSPARK_PYTHON": str(python)}  # its Spark's Python workers: that venv's
    # run in the work folder: Tumult writes its temporary tables to ./spark-warehouse
    return ("Tumult Analytics 3 group-by counts", *timed([str(python), "-c", TUMULT, str(source.resolve())], env=env,
                                                         cwd=source.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=lambda t: int(float(t)), default=10_000_000)
    parser.add_argument("--groups", type=lambda t: int(float(t)), default=100_000)
    parser.add_argument("--api-rows", type=lambda t: int(float(t)), default=1_000_000)
    parser.add_argument("--work", type=Path, default=None, help="folder for the generated files (default: a temp)")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-pandas", action="store_true")
    parser.add_argument("--no-api", action="store_true")
    parser.add_argument("--old-src", type=Path, default=None,
                        help="the src folder of an older countdp (a git worktree): its Spark run and its groupings are "
                             "the baseline")
    parser.add_argument("--tumult", type=Path, default=None,
                        help="the python of a venv with tmlt.analytics: time its group-by count on the same records")
    parser.add_argument("--groupings", type=int, default=200, help="small groupings in one process (0: none)")
    parser.add_argument("--groupings-only", action="store_true", help="run the groupings row alone")
    args = parser.parse_args()
    if args.groupings_only:
        groupings(args.groupings, args.old_src)
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-records-"))
    work.mkdir(parents=True, exist_ok=True)
    source, cache = work / f"people-{args.records}-{args.groups}.parquet", work / "cache"
    if not source.exists():
        start = time.perf_counter()
        generate(source, args.records, args.groups)
        print(f"# generated {args.records:,} records in {args.groups:,} groups: "
              f"{source.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - start:.0f} s")
    warm = work / "warm.parquet"
    # the sizes' mechanisms designed once, cached
    timed(records_command(source, warm, cache, "--dry-run", "--overwrite"))
    timed(records_command(source, warm, cache, "--overwrite"))
    rows = [("countdp records, DuckDB", *timed(records_command(source, work / "duck.parquet", cache, "--overwrite")))]
    if not args.no_spark:
        spark = ("--overwrite", "--engine", "spark", "--spark-master", "local[2]")
        if args.old_src is not None:  # the baseline: the same command run on the old code
            old = {**os.environ, "PYTHONPATH": str(args.old_src)}
            rows.append(("Spark local[2], old code (driver)", *timed(records_command(
                source, work / "spark-old.parquet", cache, *spark), env=old)))
        rows.append(("Spark's own group-by alone (floor)", *timed([sys.executable, "-c", SPARK_ALONE,
                                                                  str(source.resolve())])))
        rows.append(("countdp records, Spark local[2]", *timed(records_command(
            source, work / "spark.parquet", cache, *spark))))
        # into a folder: more groups than RecordsSettings.executor_groups are drawn in the executors
        rows.append(("Spark local[2], into a folder", *timed(records_command(
            source, work / "spark-parts", cache, *spark, folder=True))))
    if args.tumult:
        rows.append(tumult(source, args.tumult))
    if not args.no_pandas:
        groups = work / "groups.parquet"
        grouping = timed([sys.executable, "-c", PANDAS, str(source), str(groups)])
        release = timed(countdp("--input", str(groups), "--count-column", "young,rich,women", "--size-column", "n",
                                "--mechanism", "EM", "--alpha", "9/10", "--keep", "county,n", "--cache", str(cache),
                                "--out", str(work / "pandas-noisy.parquet"), "--overwrite"))
        rows.append(("pandas groupby + countdp release", grouping[0] + release[0], max(grouping[1], release[1])))
    print(f"# {args.records:,} records, {args.groups:,} groups, three predicates, EM at 9/10; cpus={os.cpu_count()}, "
          f"load={os.getloadavg()[0]:.1f}")
    print(f"{'what':<36} {'seconds':>8} {'peak MB':>8} {'vs DuckDB':>9}")
    for name, seconds, peak in rows:
        print(f"{name:<36} {seconds:>8.1f} {peak:>8.0f} {seconds / rows[0][1]:>8.2f}x")
    if not args.no_api:
        api_table(work, cache, args.api_rows)
    if args.groupings:
        groupings(args.groupings, args.old_src)


def api_table(work: Path, cache: Path, rows: int) -> None:
    """``release_table`` on a pandas DataFrame against the command line on the same table as Parquet."""
    rng = np.random.default_rng(1)
    n = rng.poisson(100, rows) + 1
    table = pa.table({"county": np.arange(rows), "n": n, "young": rng.binomial(n, 0.2), "rich": rng.binomial(n, 0.24),
                      "women": rng.binomial(n, 0.5)})
    path = work / f"groups-{rows}.parquet"
    pq.write_table(table, path)
    cli = timed(countdp("--input", str(path), "--count-column", "young,rich,women", "--size-column", "n",
                        "--mechanism", "EM", "--alpha", "9/10", "--keep", "county,n", "--cache", str(cache), "--out",
                        str(work / "cli-noisy.parquet"), "--overwrite"))
    done = subprocess.run([sys.executable, "-c", API, str(path), str(cache)], capture_output=True, text=True,
                          check=True)
    call = float(done.stdout.strip().splitlines()[-1])
    print(f"# release_table on a {rows:,}-row pandas DataFrame (the call) against the CLI on it as Parquet "
          "(the whole process)")
    print(f"{'CLI (process)':<36} {cli[0]:>8.2f} s")
    print(f"{'release_table (call)':<36} {call:>8.2f} s   {call / cli[0]:.2f}x")


if __name__ == "__main__":
    main()
