"""The Python API of a release: :func:`release_table` and :func:`release_records`.

Both build the same checked request the command line builds (:mod:`countdp.release.options`) and
run it the one way (:func:`countdp.release.run.run_release`): the same checks, budget, commit and
sidecar.  Each returns ``(table, record)``: the noisy table in the source's own kind (a pandas or
Polars DataFrame, an Arrow table, a DuckDB relation, a Spark DataFrame; for a file, an Arrow table,
or with ``out=`` the path of the table written, so that a large release stays out of memory) and
the sidecar record.  With ``out=`` both are written, under the same commit, beside each other.
``dry_run=True`` returns ``(None, text)``: the dry run's report, nothing drawn or written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from countdp.release.options import PYTHON, Options, build_request
from countdp.release.records import RecordsSettings, build_spec
from countdp.release.run import run_release
from countdp.release.sources import ArrowSource

KINDS = {"pandas": "pandas DataFrame", "polars": "Polars DataFrame", "pyarrow": "Arrow table",
         "duckdb": "DuckDB relation", "pyspark": "Spark DataFrame"}


def _kind(source: object) -> str:
    """``path``, or the library whose table ``source`` is (``pandas``, ``polars``, ``pyarrow``, ``duckdb``,
    ``pyspark``); anything else is refused in one line."""
    if isinstance(source, str | os.PathLike):
        return "path"
    kind = type(source).__module__.split(".")[0]
    if kind == "pyarrow" and not isinstance(source, pa.Table):
        kind = "other"
    if kind not in KINDS:
        raise ValueError(f"source must be a path, a pandas or Polars DataFrame, an Arrow table, a DuckDB relation or a "
                         f"Spark DataFrame, got {type(source).__name__}")
    return kind


def _arrow(source: object, kind: str) -> pa.Table:
    """An in-memory source as an Arrow table (a pandas index is not a column, so it is left out)."""
    if kind == "pandas":
        return pa.Table.from_pandas(source, preserve_index=False)
    if kind == "polars":
        return source.to_arrow()
    if kind == "pyspark":
        return source.toArrow()
    return source


def table_source(source: object, kind: str) -> ArrowSource:
    """A source that is not a file, read as the engine reads tables; a DuckDB relation runs again each pass."""
    label = KINDS[kind]
    if kind == "duckdb":
        schema = source.limit(0).arrow().schema

        def batches():
            yield from source.to_arrow_reader(1 << 16)

        return ArrowSource(label, schema, batches)
    return ArrowSource.of_table(_arrow(source, kind), label)


def as_kind(table: pa.Table, source: object, kind: str) -> object:
    """The released Arrow table in the source's own kind."""
    if kind == "pandas":
        return table.to_pandas()
    if kind == "polars":
        import polars  # lazy: the caller's library, already loaded

        return polars.from_arrow(table)
    if kind == "duckdb":
        import duckdb  # lazy: the caller's library, already loaded

        return duckdb.from_arrow(table)
    if kind == "pyspark":
        return source.sparkSession.createDataFrame(table.to_pandas())
    return table


def _returned(outcome, source: object, kind: str, out) -> tuple[object, dict | str]:
    if outcome.preview is not None:
        return None, outcome.preview
    if kind == "path" and out is not None:
        return outcome.prepared.request.table_path, outcome.record
    return as_kind(outcome.table, source, kind), outcome.record


def release_table(source, counts, *, size: str | None = None, mechanism: str | None = None, alpha=None,
                  epsilon=None, total_epsilon=None, keep=None, levels=None, invariant=None,
                  invariant_by: str | None = None, target_alpha=None, budget=None, seed: int | None = None,
                  out=None, overwrite: bool = False, noisy=None, objective: str = "L0", cache=None,
                  mechanism_file=None, dry_run: bool = False, notes=None) -> tuple[object, dict | str]:
    """Release a table of true counts (one row per group): ``(noisy table, sidecar record)``.

    ``source``: a CSV or Parquet path, a pandas or Polars DataFrame, an Arrow table, a DuckDB relation or a
    Spark DataFrame.  ``counts``: the count columns; ``size``: the group-size column, with ``mechanism``
    (``"EM"``...) and exactly one of ``alpha``, ``epsilon``, ``total_epsilon``, ``levels``, ``target_alpha``;
    or ``mechanism_file`` (a file of ``countdp design``) for every row.  ``keep``: the columns published
    (default-deny, as ``--keep``).  ``out``: also write the table and its sidecar (``"o.parquet"``, ``"o.csv"``,
    or ``"folder/"``), committed together; ``budget``: a ledger, debited first; ``seed``: experiments only.
    ``notes(line)`` receives what the command line prints on stderr.  Refusals are one ``ValueError`` line.

        >>> import pandas as pd
        >>> groups = pd.DataFrame({"group": ["a", "b"], "n": [5, 8], "young": [2, 1]})
        >>> noisy, sidecar = countdp.release_table(groups, counts=["young"], size="n", mechanism="EM", alpha="2/3",
        ...                                        keep=["group", "n"])
        >>> noisy.columns.tolist(), sidecar["guarantee"]["alpha_total"]
        (['group', 'n', 'noisy_young', 'mechanism'], '2/3')
    """
    kind = _kind(source)
    options = Options(counts=counts, out=out, size=size, mechanism=mechanism, mechanism_file=mechanism_file,
                      objective=objective, alpha=alpha, epsilon=epsilon, total_epsilon=total_epsilon, levels=levels,
                      invariant=invariant, invariant_by=invariant_by, target_alpha=target_alpha, keep=keep,
                      noisy=noisy, cache=cache, budget=budget, seed=seed, overwrite=overwrite,
                      command=("countdp.release_table",))
    if kind == "path":
        request, design = build_request(options, Path(source), PYTHON)
    else:
        request, design = build_request(options, Path(KINDS[kind]), PYTHON, source=table_source(source, kind))
    outcome = run_release(request, design, dry_run=dry_run, keep_table=kind != "path" or out is None, notes=notes)
    return _returned(outcome, source, kind, out)


def release_records(source, group_by, counts: dict, *, size: str = "n", types: dict | None = None,
                    person_id: str | None = None, one_record_per_person: str | None = None, engine: str | None = None,
                    spark_master: str | None = None, settings: RecordsSettings | None = None,
                    mechanism: str | None = None, out=None, seed: int | None = None, dry_run: bool = False,
                    notes=None, **privacy) -> tuple[object, dict | str]:
    """Release counts of person records grouped by public columns: ``(noisy table, sidecar record)``.

    ``source``: records as a CSV or Parquet path, a glob, a folder of Parquet files (Hive partitions), a
    pandas or Polars DataFrame, an Arrow table, a DuckDB relation (grouped by DuckDB), or a Spark DataFrame
    (grouped by Spark).  ``group_by``: the public columns that make the groups; ``counts``: ``{name:
    predicate}``, each a SQL boolean expression over a record's columns, counted per group; ``size``: the
    name of the group-size column (the number of the group's records, published exactly).  ``types``:
    ``{column: type}``, declared types (``BOOLEAN``, ``INTEGER``, ``BIGINT``, ``DOUBLE``, ``DATE``, ``TIMESTAMP``,
    ``VARCHAR``), each converted with TRY_CAST (a value that does not convert is NULL, and no predicate holds on
    it); a type never comes from the records' values: a CSV column, and a pandas column of Python objects, is
    text unless declared, and a Parquet file's, Arrow table's or typed column's own schema is taken as part of
    the public schema (the sidecar records the types declared).  ``person_id``: the column naming each person,
    whose records must be one per person, unless ``one_record_per_person="random"`` keeps one of each person's
    records.  ``engine``: ``"duckdb"`` (the default) or ``"spark"`` (``spark_master``, default ``local[*]``).
    The rest is as :func:`release_table` (``mechanism``, ``alpha`` / ``epsilon`` / ``total_epsilon`` /
    ``levels``..., ``keep``, ``budget``, ``out``).

        >>> import pandas as pd
        >>> people = pd.DataFrame({"county": ["a", "a", "b"], "age": [23, 61, 35]})
        >>> noisy, sidecar = countdp.release_records(people, ["county"], {"young": "age < 30"}, mechanism="EM",
        ...                                          alpha="2/3")
        >>> noisy[["county", "n"]].values.tolist(), sidecar["input"]["records"]["engine"]
        ([['a', 2], ['b', 1]], 'duckdb')
    """
    from countdp.release.records_run import records_release  # lazy: the query engines load only here

    kind = _kind(source)
    spec = build_spec(group_by, counts, size, person_id, one_record_per_person, PYTHON, types)
    options = Options(counts=spec.count_names, out=out, size=spec.size, mechanism=mechanism, seed=seed,
                      command=("countdp.release_records",), **privacy)
    outcome, table_kind = records_release(source, kind, spec, options, PYTHON, engine=engine,
                                          spark_master=spark_master, settings=settings, dry_run=dry_run,
                                          keep_table=kind != "path" or out is None, notes=notes)
    return _returned(outcome, source, table_kind, out)


__all__ = ["KINDS", "as_kind", "release_records", "release_table", "table_source"]
