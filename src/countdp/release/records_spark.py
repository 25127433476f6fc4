"""Records grouped by Spark, for data that outgrows one machine: the grouping runs in Spark, the noise on
the driver, through the same release engine.

:func:`spark_records` reads the records with Spark (a Parquet or CSV path, a glob, a partitioned
folder, a Spark DataFrame, or a pandas, Polars or Arrow table handed to Spark), checks every name
and predicate by Spark's analyser before anything runs (a predicate must be boolean, with no
aggregate), checks one record per person as :mod:`countdp.release.records_duckdb` does, and runs
the same grouping query.  The group table, one row per group, is collected to the driver once as
an Arrow table (in memory, never written), put in DuckDB's order there (the group-by columns
ascending, nulls last), and released from there: a seeded release gives the same table on Spark as
on DuckDB.  With ``one_record_per_person="random"`` the record kept is the one with the least
SHA-256 of the key and the record's JSON text (DuckDB hashes its own text of the record, so the
two engines choose differently).  The sidecar records the engine and the records' number of
partitions of the group table (1: collected to the driver).  A large group table released into a
folder is drawn in Spark's executors instead (:mod:`countdp.release.records_executors`).

Column types never come from the values (:data:`countdp.release.records.TYPING`): a CSV is read as text
(no ``inferSchema``), Hive partition values stay text, and a pandas DataFrame's object columns are made
text (:func:`~countdp.release.records.text_columns`) before ``createDataFrame``, which runs with Python's
warnings silenced (its Arrow fallback warning quotes a value).  Declared columns are ``try_cast`` in one
projection (:func:`typed`).  The records are grouped under :data:`SQL_CONF`: ANSI mode off, so a value that
does not convert is NULL for its own record, never a failure of the whole release that depends on one
person's value (Spark 4 turns ANSI on by default); the session's own settings are restored afterwards.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from contextlib import contextmanager

import pyarrow as pa

from countdp.release.records import (
    TYPES,
    RecordsSettings,
    RecordsSpec,
    choice_key,
    missing_column,
    runtime_error,
    text_columns,
)
from countdp.release.records_spark_predicates import VIEW, check_predicates, spark_error
from countdp.release.sources import ArrowSource

MASTER = "local[*]"
_QUIET = ("py4j", "pyspark", "SQLQueryContextLogger")
SQL_CONF = {"spark.sql.sources.partitionColumnTypeInference.enabled": "false", "spark.sql.ansi.enabled": "false"}
"""The SQL settings records are read and grouped under: Hive partition values stay text, and a value that
does not convert (``CAST``, a comparison of text with a number) is NULL for its record instead of an error
that stops the release (ANSI mode), whose message would quote the value."""


def session(master: str | None):
    """The active Spark session, or a new one at ``master`` (default ``local[*]``), logging only failures
    that reach countdp (Spark's own error log would print every refused predicate's stack).  In local
    mode, unless ``PYSPARK_PYTHON`` says otherwise, the tasks run this Python (which has countdp):
    Spark's default, ``python3``, may be another."""
    from pyspark.sql import SparkSession  # lazy: pyspark and a JVM only for the Spark engine

    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    cores = os.cpu_count() or 2
    if (master or MASTER).startswith("local"):  # local tasks run this Python, which has countdp (else `python3`)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master or MASTER).appName("countdp")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(max(2, 2 * cores))))
    for key, value in SQL_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    return spark


@contextmanager
def sql_conf(spark):
    """:data:`SQL_CONF` set on ``spark`` for the block, the session's own values restored after it."""
    saved = {key: spark.conf.get(key, None) for key in SQL_CONF}
    for key, value in SQL_CONF.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _created(spark, table):
    """``spark.createDataFrame(table)`` with every Python warning silenced: Spark's Arrow fallback warns with a
    record's value ("Could not convert 'x10' ..."), and for some records only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return spark.createDataFrame(table)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def typed(frame, spec: RecordsSpec):
    """The records with each declared column ``try_cast`` to its Spark type (a value that does not convert is
    NULL), every column in its place."""
    if not spec.types:
        return frame
    kinds = {column: TYPES[kind] for column, kind in spec.types}
    return frame.selectExpr(*[f"try_cast({_quoted(c)} AS {kinds[c]}) AS {_quoted(c)}" if c in kinds else _quoted(c)
                              for c in frame.columns])


def _frame(spark, source: object):
    """The records as a Spark DataFrame: ``(label, DataFrame)``; an Arrow or Polars table keeps its schema, and a
    pandas DataFrame's object columns are text."""
    kind = type(source).__module__.split(".")[0]
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if not any(c in path for c in "*?[") and not os.path.exists(path):
            raise ValueError(f"{path}: no such file or folder of records")
        reader = spark.read.option("recursiveFileLookup", "false")
        where = os.path.abspath(path)  # Spark resolves a relative path against its JVM's start folder, not ours
        if path.lower().endswith((".csv", ".tsv", ".txt")) or (os.path.isdir(path) and not _has_parquet(path)):
            return path, reader.option("header", True).csv(where)  # every column text: no inferSchema
        return path, reader.parquet(where)
    if kind == "pyspark":
        return "Spark DataFrame", source
    if kind == "polars":
        source = source.to_arrow()
    elif kind == "pandas":
        source = text_columns(source)
    elif kind != "pyarrow":
        raise ValueError(f"records for the Spark engine must be a path, a Spark DataFrame, or a pandas, Polars or "
                         f"Arrow table, got {type(source).__name__}")
    return {"pandas": "pandas DataFrame", "polars": "Polars DataFrame", "pyarrow": "Arrow table"}[kind], \
        _created(spark, source)


def _has_parquet(folder: str) -> bool:
    return any(name.lower().endswith((".parquet", ".pq")) for _, _, names in os.walk(folder) for name in names)


def check_people(spark, spec: RecordsSpec, label: str, spell) -> None:
    """As :func:`countdp.release.records_duckdb.check_people`, counted by Spark."""
    pid = f"`{spec.person_id}`"
    row = spark.sql(f"SELECT count_if(k > 1 AND p IS NOT NULL) AS several, coalesce(sum(CASE WHEN p IS NULL THEN k "
                    f"END), 0) AS missing FROM (SELECT {pid} AS p, count(*) AS k FROM {VIEW} GROUP BY {pid})").first()
    if row["missing"]:
        raise ValueError(f"{label}: {row['missing']} record(s) have no {spell('person_id')} {spec.person_id!r} value")
    if row["several"] and not spec.one_per_person:
        raise ValueError(f"{label}: {row['several']} people appear in more than one record ({spell('person_id')} "
                         f"{spec.person_id!r}); each person must contribute one record: give "
                         f"{spell('one_record_per_person')} random to keep one of each person's records")


def _one_per_person(frame, spec: RecordsSpec, key: str):
    from pyspark.sql import Window  # lazy: likewise
    from pyspark.sql import functions as F  # lazy: likewise

    rank = F.sha2(F.concat(F.lit(key), F.to_json(F.struct(*[F.col(f"`{c}`") for c in frame.columns]))), 256)
    window = Window.partitionBy(F.col(f"`{spec.person_id}`")).orderBy("countdp_rank")
    return (frame.withColumn("countdp_rank", rank).withColumn("countdp_row", F.row_number().over(window))
            .where("countdp_row = 1").drop("countdp_rank", "countdp_row"))


def grouped_sql(spec: RecordsSpec) -> str:
    """The grouping query in Spark SQL: the same columns and types as DuckDB's (ordered on the driver)."""
    keys = ", ".join(f"`{k}`" for k in spec.group_by)
    counts = ", ".join(f"CAST(count(*) FILTER (WHERE ({predicate})) AS BIGINT) AS `{name}`"
                       for name, predicate in spec.counts)
    return f"SELECT {keys}, CAST(count(*) AS BIGINT) AS `{spec.size}`, {counts} FROM {VIEW} GROUP BY {keys}"


def spark_records(source: object, spec: RecordsSpec, spell, master: str | None = None, seed: int | None = None,
                  settings: RecordsSettings | None = None, executors: bool = False) -> ArrowSource:
    """The grouped records as an :class:`~countdp.release.sources.ArrowSource` (see the module docstring);
    ``executors``: a release that may be drawn in Spark's executors, if the groups are many enough."""
    settings = settings or RecordsSettings()
    spark = session(master)
    with sql_conf(spark):
        return _grouped(spark, source, spec, spell, seed, settings, executors)


def _read(spark, source: object, spec: RecordsSpec, spell):
    """The records read, their names checked, typed (:func:`typed`) and registered as :data:`VIEW`:
    ``(label, DataFrame)``."""
    label = os.fspath(source) if isinstance(source, str | os.PathLike) else type(source).__name__  # never its repr
    try:
        label, frame = _frame(spark, source)
        columns = frame.columns
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"{label}: cannot read the records ({spark_error(exc)})") from None
    missing_column(spec, columns, label, spell)
    frame = typed(frame, spec)
    frame.createOrReplaceTempView(VIEW)
    return label, frame


def _grouped(spark, source: object, spec: RecordsSpec, spell, seed, settings: RecordsSettings, executors: bool):
    """:func:`spark_records` under :data:`SQL_CONF`."""
    label, frame = _read(spark, source, spec, spell)
    check_predicates(spark, spec, spell)
    note = None
    if spec.person_id is not None:
        check_people(spark, spec, label, spell)
        if spec.one_per_person:
            key, note = choice_key(seed)
            _one_per_person(frame, spec, key).createOrReplaceTempView(VIEW)
    try:
        grouped = spark.sql(grouped_sql(spec))
        if executors:  # the number of groups (public: each is a row of the release) decides where noise is drawn
            grouped = grouped.persist()
            rows = grouped.count()
            if rows > settings.executor_groups:
                return _executor_groups(spark, grouped, rows, spec, label, note, settings)
        groups = grouped.toArrow()
        if executors:
            grouped.unpersist()
    except ValueError:
        raise
    except Exception:  # while it ran: the engine's message may quote a record
        raise runtime_error(label, spell) from None
    groups = groups.cast(pa.schema([pa.field(f.name, f.type) for f in groups.schema]))  # nullable, as DuckDB's
    # DuckDB's order (ascending, nulls last), sorted here rather than by one more shuffle in Spark
    with warnings.catch_warnings():  # pyarrow 25's deprecation would print once per process: not on every run
        warnings.simplefilter("ignore", FutureWarning)
        groups = groups.sort_by([(key, "ascending") for key in spec.group_by], null_placement="at_end")
    description = spec.describe(label, "spark", note, partitions=1, master=spark.sparkContext.master,
                                noise="drawn on the driver: the group table was collected there, in memory")
    spark.catalog.dropTempView(VIEW)
    return ArrowSource(label, groups.schema, lambda: groups.to_batches(max_chunksize=settings.batch_rows), description)


def _executor_groups(spark, grouped, rows: int, spec: RecordsSpec, label: str, note, settings: RecordsSettings):
    """The groups spread over ``ceil(rows / part_groups)`` partitions by a hash of their (public) keys, each
    sorted by them and cached, as a source released in Spark's executors (:mod:`countdp.release.records_executors`)."""
    from pyspark.sql import functions as F  # lazy: likewise

    from countdp.release.records_executors import SparkGroups  # lazy: likewise

    keys = [F.col(f"`{k}`") for k in spec.group_by]
    parts = -(-rows // settings.part_groups)
    arranged = grouped.repartition(parts, *keys).sortWithinPartitions(*[k.asc_nulls_last() for k in keys]).persist()
    arranged.count()
    grouped.unpersist()
    schema = arranged.limit(0).toArrow().schema
    schema = pa.schema([pa.field(f.name, f.type) for f in schema])
    description = spec.describe(label, "spark", note, partitions=parts, master=spark.sparkContext.master,
                                noise="drawn in Spark's executors: each part of the group table in its own task, "
                                      "written there as one part file")
    spark.catalog.dropTempView(VIEW)
    return SparkGroups(label, schema, arranged, list(spec.group_by), description)


__all__ = ["MASTER", "SQL_CONF", "VIEW", "check_people", "check_predicates", "grouped_sql", "session", "spark_records",
           "sql_conf", "typed"]
