"""A records release from end to end: the options checked, the records grouped by a query engine, the
grouped table released by the table release's engine, and the engine's connection closed whatever happens.

Everything that can be refused without running the grouping is refused first, in one line: the
options (:mod:`countdp.release.options`), ``out``, then the records' names and predicates, bound by
the engine (:mod:`countdp.release.records_duckdb`, :mod:`countdp.release.records_spark`).  The
group-by columns and the size column are public, so they are published by default (``keep``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from countdp.release.engine import check_out_name
from countdp.release.options import build_request
from countdp.release.records import UNIT, RecordsSettings, RecordsSpec, build_spec
from countdp.release.run import run_release

ENGINES = ("duckdb", "spark")


def _engine(kind: str, engine: str | None, spell) -> str:
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"{spell('engine')} must be one of {', '.join(ENGINES)}, got {engine!r}")
    if kind == "pyspark":
        if engine == "duckdb":
            raise ValueError(f"a Spark DataFrame is grouped by Spark: drop {spell('engine')} duckdb")
        return "spark"
    return engine or "duckdb"


def grouped_source(source: object, kind: str, spec: RecordsSpec, out: Path | None, spell, engine: str,
                   spark_master: str | None, seed: int | None, settings: RecordsSettings | None,
                   executors: bool = False):
    """The records grouped by ``engine``, as a source the release engine reads (``executors``: on Spark, a
    large group table may be released in the executors)."""
    if engine == "spark":
        from countdp.release.records_spark import spark_records  # lazy: pyspark and a JVM only when asked

        return spark_records(source, spec, spell, spark_master, seed, settings, executors)
    if spark_master is not None:
        raise ValueError(f"{spell('spark_master')} goes with {spell('engine')} spark")
    from countdp.release.records_duckdb import duckdb_records  # lazy: duckdb only for a records release

    return duckdb_records(source, spec, out, spell, seed, settings)


def records_release(source: object, kind: str, spec: RecordsSpec, options, spell, *, engine: str | None = None,
                    spark_master: str | None = None, settings: RecordsSettings | None = None,
                    dry_run: bool = False, keep_table: bool = False, notes=None):
    """Run a records release: ``(outcome, kind of the table returned)``."""
    engine = _engine(kind, engine, spell)
    if options.keep is None:
        options.keep = [*spec.group_by, spec.size]
    request, design = build_request(options, Path("records"), spell)
    if request.out is not None:
        check_out_name(request)
    # drawn in Spark's executors: a release written into a folder, one noisy column per count, not conditioned
    executors = request.out_folder and not (dry_run or keep_table or request.invariant or
                                            any(c.levels for c in request.columns))
    grouped = grouped_source(source, kind, spec, request.out if not dry_run else None, spell, engine, spark_master,
                             options.seed, settings, executors)
    try:
        request = replace(request, source=grouped, input=Path(grouped.label), records=grouped.description)
        outcome = run_release(request, design, dry_run=dry_run, keep_table=keep_table, notes=notes)
    finally:
        grouped.close()
    return outcome, kind


def group_records(source: object, group_by, counts: dict, *, size: str = "n", types: dict | None = None,
                  engine: str | None = None,
                  spark_master: str | None = None, settings: RecordsSettings | None = None):
    """The grouped true counts of a records release, as an Arrow table: the same query, checks and order.

    Not a release (no noise): for studies on public or simulated records, which need the true counts
    that a release's grouping would find (the Adult groups of the extrinsic and congenial studies).
    """
    import pyarrow as pa  # lazy: loaded already by whoever groups records

    from countdp.release.options import PYTHON  # lazy: likewise

    spec = build_spec(group_by, counts, size, None, None, PYTHON, types)
    kind = "path" if isinstance(source, str | Path) else type(source).__module__.split(".")[0]
    grouped = grouped_source(source, kind, spec, None, PYTHON, _engine(kind, engine, PYTHON), spark_master, None,
                             settings)
    try:
        return pa.Table.from_batches(list(grouped.batches(grouped.columns)), schema=grouped.schema)
    finally:
        grouped.close()


__all__ = ["ENGINES", "UNIT", "group_records", "grouped_source", "records_release"]
