"""A large group table released where it is: the noise drawn, and the part files written, in Spark's executors.

When a records release on Spark (:mod:`countdp.release.records_spark`) finds more groups than
:attr:`~countdp.release.records.RecordsSettings.executor_groups` and writes a release folder
(``--out DIR/``), the group table is never collected to the driver:

1. the groups are spread by a hash of their group-by columns over ``ceil(groups /
   part_groups)`` partitions (:attr:`~countdp.release.records.RecordsSettings.part_groups`): the
   number of parts, and which group is in which, are functions of public values only (the group
   keys and the number of groups), never of a count or of how the counts compress;
2. the first pass (every row checked, nothing drawn) is the table release's own
   :func:`~countdp.release.request.validate`, run in one Spark task over the whole group table
   streamed batch by batch; only its findings (rows, distinct sizes, or the refusal's one line)
   reach the driver, which finds the mechanisms as for any release;
3. each partition's task draws its rows' noise with the table release's own
   :func:`~countdp.release.engine.released_batch` (the same samplers, built once on the driver and
   shipped to every task), from its own words: the OS's secure source in that task, or for a seeded
   experiment a stream derived from the seed and the partition's contents (:class:`PartitionRandomness`);
4. each task writes its part file ``part-NNNNN.parquet`` into the folder ``table.parquet`` of
   the release's hidden partial folder (:class:`~countdp.release.atomic_folder.AtomicFolder` with
   ``parts=True``), flushed to disk; the driver then writes the sidecar and names the release with
   one rename.  A release that dies leaves only its partial folder, which the next release into
   the parent folder removes.

Spark's executors must see the output folder (local mode, or a shared filesystem).  A multi-level
or conditioned release, or one returned in memory, is drawn on the driver.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pyarrow as pa

from countdp.release.atomic_folder import AtomicFolder
from countdp.release.draws import EXPERIMENT_ONLY, Randomness
from countdp.release.engine import Prepared, commit_with_sidecar, output_schema, released_batch
from countdp.release.provenance import sidecar_record
from countdp.release.records import first_line
from countdp.release.request import ReleaseRequest, Validated, validate
from countdp.release.sources import ArrowSource
from countdp.release.tables import TableSink, file_sha256, integer_values

PART_SCHEMA = "part INT, rows LONG, sha256 STRING"
CHECK_SCHEMA = "validated BINARY, error STRING"


class PartitionRandomness(Randomness):
    """The words of one partition's rows: the OS's secure source in the task (``seed=None``), or for a
    seeded experiment, noisy column ``k``'s PCG64 stream ``SeedSequence(seed, spawn_key=(k, *identity))``,
    ``identity`` the eight 32-bit words of the SHA-256 of the partition's group-by columns (Arrow IPC,
    rows in the partition's order), one word per row in that order."""

    def __init__(self, seed: int | None, columns: int, identity: bytes = b"") -> None:
        super().__init__(None, columns)
        self.seed, self.columns = seed, columns
        self.identity = tuple(int(w) for w in np.frombuffer(identity, dtype=">u4"))
        if seed is not None:
            self.generators = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(
                seed, spawn_key=(k, *self.identity)))) for k in range(columns)]

    def second_words(self, column: int, rows: np.ndarray) -> np.ndarray:
        """As :meth:`Randomness.second_words`, seeded from ``SeedSequence(seed, spawn_key=(columns + k,
        *identity))``; row ``r`` counts from the partition's first row."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.generators is None:
            return np.frombuffer(os.urandom(8 * rows.size), dtype=np.uint64)
        key = np.random.SeedSequence(self.seed, spawn_key=(self.columns + column, *self.identity))
        return np.array([np.random.Philox(key=key.generate_state(2, np.uint64), counter=[r, 0, 0, 0]).random_raw()
                         for r in rows.tolist()], dtype=np.uint64)


def describe(seed: int | None) -> dict:
    """The sidecar's ``randomness`` of a release drawn in Spark's executors."""
    if seed is None:
        return {"source": "os.urandom", "privacy_release": True, "drawn": "in Spark's executors, each task from "
                "its own OS source", "note": "the operating system's cryptographically secure source; nobody can "
                "regenerate the noise"}
    return {"source": "seeded", "seed": seed, "privacy_release": False, "note": EXPERIMENT_ONLY,
            "generator": "numpy PCG64 per part: noisy column k of a part draws from SeedSequence(seed, spawn_key=(k, "
                         "*w)), w the eight big-endian 32-bit words of the SHA-256 of the part's group-by columns "
                         "(Arrow IPC stream, in the part's row order), one 64-bit word per row in row order",
            "second_words": "row r (0-based in its part) of noisy column k takes the first output of numpy Philox "
                            "keyed by SeedSequence(seed, spawn_key=(columns + k, *w)).generate_state(2, uint64) at "
                            "counter (r, 0, 0, 0)"}


def identity(batches: list[pa.RecordBatch], keys: list[str]) -> bytes:
    """The SHA-256 of a partition's group-by columns as one Arrow IPC stream (public values only)."""
    table = pa.Table.from_batches(batches).select(keys).combine_chunks() if batches else None
    if table is None:
        return hashlib.sha256(b"").digest()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).digest()


@dataclass(frozen=True)
class Plan:
    """What every task needs: the prepared release (its samplers built), the output schema, where parts go."""

    prepared: Prepared
    schema: pa.Schema
    parts: str
    seed: int | None
    keys: tuple[str, ...]


def write_part(plan: Plan, batches) -> pa.RecordBatch:
    """One partition drawn and written as ``part-NNNNN.parquet`` (in a Spark task); its part number, rows and
    SHA-256."""
    from pyspark import TaskContext  # lazy: runs in a Spark task

    part = TaskContext.get().partitionId()
    streams = sum(len(c.noisy_columns) for c in plan.prepared.request.columns)
    if plan.seed is not None:
        batches = [b for b in batches if b.num_rows]
        randomness = PartitionRandomness(plan.seed, streams, identity(batches, list(plan.keys)))
    else:
        randomness = PartitionRandomness(None, streams)
    rows = 0
    path = os.path.join(plan.parts, f"part-{part:05d}.parquet")
    with open(path, "wb") as stream:  # a retried task writes its part afresh
        sink = TableSink(stream, plan.schema, "parquet")
        for batch in batches:
            if batch.num_rows == 0:
                continue
            sink.write(released_batch(plan.prepared, batch, randomness, plan.schema,
                                      lambda b, name, what, r=rows: integer_values(b.column(name), name, what, r + 1),
                                      rows))
            rows += batch.num_rows
        digest = sink.close()
        stream.flush()
        os.fsync(stream.fileno())
    return pa.RecordBatch.from_pydict({"part": [part], "rows": [rows], "sha256": [digest]},
                                      schema=pa.schema([("part", pa.int32()), ("rows", pa.int64()),
                                                        ("sha256", pa.string())]))


def _write_task(plan: Plan, batches):
    yield write_part(plan, batches)


def check_groups(request: ReleaseRequest, label: str, batches) -> pa.RecordBatch:
    """The first pass of a release (:func:`~countdp.release.request.validate`) over one task's stream of
    batches: the pickled :class:`~countdp.release.request.Validated`, or the refusal's line."""
    import pickle  # lazy: only this task's answer

    stream = iter(batches)
    first = next(stream, None)
    schema = first.schema if first is not None else pa.schema([])

    def open_batches():  # the head look reads the first batch only; the whole pass then reads on
        if first is not None:
            yield first
        yield from stream

    source = ArrowSource(label, schema, open_batches)
    try:
        answer, error = pickle.dumps(validate(replace(request, source=source))), None
    except ValueError as exc:
        answer, error = None, str(exc)
    return pa.RecordBatch.from_pydict({"validated": [answer], "error": [error]},
                                      schema=pa.schema([("validated", pa.binary()), ("error", pa.string())]))


def _check_task(request: ReleaseRequest, label: str, batches):
    yield check_groups(request, label, batches)


class SparkGroups(ArrowSource):
    """The group table, partitioned and cached in Spark, checked and released where it is (see the module
    docstring): a source that validates (:meth:`validate`) and writes (:meth:`write_release`) itself."""

    def __init__(self, label: str, schema: pa.Schema, frame, keys: list[str], description: dict) -> None:
        super().__init__(label, schema, self._refused, description, close=frame.unpersist)
        self.frame, self.keys = frame, keys
        self.parts = frame.rdd.getNumPartitions()

    def _refused(self):
        raise ValueError(f"{self.label}: the group table of a release drawn in Spark's executors is not read on "
                         "the driver")

    def _run(self, frame) -> list:
        """``frame``'s rows; a failed Spark job (a task that cannot reach the output folder, say) in one line."""
        try:
            return frame.collect()
        except Exception as exc:  # Spark's errors share no base class outside pyspark
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            # a task's Python error: its traceback's last line (the error itself); else Spark's first line
            shown = lines[-1] if any(line.startswith("Traceback") for line in lines) else first_line(exc)
            raise ValueError(f"{self.label}: {shown}") from None

    def validate(self, request: ReleaseRequest) -> Validated:
        """Every row checked, in one Spark task (nothing drawn): the table release's own first pass."""
        import pickle  # lazy: only the answer of the check's task

        shipped = replace(request, source=None)
        answer = self._run(self.frame.coalesce(1).mapInArrow(partial(_check_task, shipped, self.label), CHECK_SCHEMA))
        if not answer or answer[0]["error"] is not None:
            raise ValueError(answer[0]["error"] if answer else f"{self.label}: the table has no rows")
        return pickle.loads(answer[0]["validated"])

    def write_release(self, prepared: Prepared, randomness: Randomness, version: str, debit: dict | None = None,
                      progress=None, hold=None, returned: list | None = None) -> dict:
        """Draw and write every part in Spark's tasks, then write the sidecar and name the folder (one rename)."""
        request, validated = prepared.request, prepared.validated
        schema = output_schema(prepared, validated.schema)
        shipped = replace(prepared, request=replace(request, source=None))
        _ = shipped.samplers, shipped.labels, shipped.streams  # built once, here, and shipped to every task
        with AtomicFolder(request.out, request.table_path.name, replace=request.overwrite, shown=request.out_text,
                          parts=True) as folder:
            # absolute: a task runs in its worker's folder, not ours
            plan = Plan(shipped, schema, os.path.abspath(folder.parts), request.seed, tuple(self.keys))
            written = sorted((r["part"], r["rows"], r["sha256"]) for r in
                             self._run(self.frame.mapInArrow(partial(_write_task, plan), PART_SCHEMA)))
            if [p for p, _, _ in written] != list(range(self.parts)) or sum(r for _, r, _ in written) != validated.rows:
                raise ValueError(f"{request.input}: the group table changed while it was being released; nothing was "
                                 "written")
            for part, _, sha in written:  # each part as its task reported it (not a second attempt's, say)
                if file_sha256(folder.parts / f"part-{part:05d}.parquet") != sha:
                    raise ValueError(f"{request.table_text}: part {part} is not the file its task wrote; nothing was "
                                     "written")
            if progress is not None:
                progress(validated.rows)
            listing = "".join(f"{sha}  part-{p:05d}.parquet\n" for p, _, sha in written)
            record = sidecar_record(request, validated, prepared.mechanisms, randomness,
                                    hashlib.sha256(listing.encode()).hexdigest(), schema.names, folder.method, debit,
                                    version, prepared.invariants)
            record["randomness"] = describe(request.seed)
            record["output"]["parts"] = {"files": len(written), "sha256": "the SHA-256 of the part files' sha256sum "
                                         "listing (each part's SHA-256, two spaces, its name; in part order)"}
            commit_with_sidecar(folder, record, hold)
        return record


__all__ = ["CHECK_SCHEMA", "PART_SCHEMA", "PartitionRandomness", "Plan", "SparkGroups", "check_groups", "describe",
           "identity", "write_part"]
