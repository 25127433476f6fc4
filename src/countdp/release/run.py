"""A table release run from end to end, the one way both the command line and the Python API run it.

:func:`run_release` takes a checked :class:`~countdp.release.request.ReleaseRequest` (built by
:mod:`countdp.release.options`) and does, in order: refuse a bad ledger or ``out`` before any work,
remove what dead releases left beside ``out``, validate every row and find the mechanisms
(:func:`~countdp.release.engine.prepare`), then either preview (``dry_run``) or check the output
folder (:func:`preflight_out`), debit the budget, draw, write and commit
(:func:`~countdp.release.engine.write_release`), and mark the ledger entry committed (or failed).
Every refusal is one ``ValueError`` line; ``notes(line)`` receives the lines a release reports
(the randomness's source, what was written), which the command line prints on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from countdp.progress import Progress
from countdp.release.atomic import preflight, repair
from countdp.release.budget import account, debit_release
from countdp.release.draws import EXPERIMENT_ONLY, Randomness
from countdp.release.engine import HeldSignals, Prepared, check_out_name, prepare, write_release
from countdp.release.ledger import BudgetExceeded, Ledger
from countdp.release.partials import SIDECAR_SUFFIX
from countdp.release.preview import preview
from countdp.services.mechanism_cache import MechanismCache
from countdp.validation import folder_problem
from countdp.version import __version__


class FileMechanism:
    """``mechanism_for(k, n)``: the file's design for every column, held as its file holds it (a matrix, or a
    structural form, whose sizes ``matrix_sizes`` leaves out of the memory check)."""

    def __init__(self, design) -> None:
        self.design = design

    def __call__(self, k: int, n: int, columns=None):
        return self.design

    def matrix_sizes(self, k: int, sizes):
        return np.asarray(sizes)[:0] if self.design.matrix is None else np.asarray(sizes)


class CachedMechanisms:
    """``mechanism_for(k, n)`` from the mechanism cache, and ``.many(k, sizes)`` for all of a column's sizes."""

    def __init__(self, request, cache: MechanismCache) -> None:
        self.request, self.cache = request, cache

    def __call__(self, k: int, n: int, columns=None):
        request = self.request
        return self.cache.get(request.mechanism, n, (columns or request.columns)[k].alpha, request.objective)

    def many(self, k: int, sizes):
        request = self.request
        return self.cache.get_many(request.mechanism, sizes, request.columns[k].alpha, request.objective)

    def matrix_sizes(self, k: int, sizes):
        """The sizes whose mechanism count column ``k`` holds as a matrix (the rest as structure)."""
        request = self.request
        return self.cache.matrix_sizes(request.mechanism, sizes, request.columns[k].alpha, request.objective)


def mechanisms(request, design, dry_run: bool, notes=None):
    """``mechanism_for(k, n)``: the file's design, or the cache's (a dry run designs without storing, and
    so does a release whose cache cannot be written: :func:`keeps_designs`)."""
    if design is not None:
        return FileMechanism(design)
    if request.columns[0].levels:
        # lazy: keeps scipy (the levels chain's solver stack) out of a release that does not need it
        from countdp.release.levels import LevelMechanisms

        return LevelMechanisms(request.columns, request.mechanism)
    cache = MechanismCache(request.cache)
    cache.store = not dry_run and keeps_designs(cache.root, notes or _quiet)
    return CachedMechanisms(request, cache)


def keeps_designs(root: Path, notes) -> bool:
    """Whether a release keeps the mechanisms it designs in the cache folder ``root``: not where the
    folder cannot be written (a read-only mount shared by several curators, an immutable folder).  What
    such a cache holds is used; what it lacks is designed for this release alone, and a note says so.
    Nothing here depends on the data: only on the folder."""
    problem = folder_problem(root, writable=True)
    if problem is None:
        return True
    notes(f"# the mechanism cache {root}: {problem}; mechanisms it lacks are designed for this release "
          "and not kept")
    return False


def randomness_note(seed: int | None) -> str:
    """The line a release reports about its noise."""
    if seed is None:
        return "# noise from the OS's secure random source (os.urandom); not reproducible by design"
    return f"# seeded generator: {EXPERIMENT_ONLY}; never use it for real data"


def preflight_out(prepared: Prepared) -> None:
    """What can fail before any noise is drawn: the output folder writable, with room for the output.

    The room asked for is a lower bound of what the release writes (two bytes a noisy CSV value,
    a quarter of a byte in Parquet, whose encodings compress), and the files it holds at once: two
    for a table and its sidecar, three for a release folder (the folder, then its two files, or
    while probing renameat2, two empty probes).  A folder that cannot hold that is refused before
    the debit; a disk that fills during the write leaves nothing, and the ledger entry is marked failed.
    """
    request = prepared.request
    noisy = sum(len(c.noisy_columns) for c in request.columns)
    per_row = noisy / 4 if request.output_format == "parquet" else 2 * noisy
    try:
        files = 3 if request.out_folder else 2
        preflight(request.out.parent, int(prepared.validated.rows * per_row) + (1 << 14), files)
    except OSError as exc:
        raise ValueError(f"--out {request.out_text}: {exc.strerror or exc}; nothing was drawn or spent") from None


@dataclass
class Outcome:
    """What a release did: its sidecar ``record`` (``None`` for a dry run), the ``table`` it returns (an Arrow
    table, when asked for), the dry run's ``preview`` text, and the prepared release."""

    prepared: Prepared
    record: dict | None = None
    table: object = None
    preview: str | None = None


def _quiet(line: str) -> None:
    return None


def run_release(request, design=None, *, dry_run: bool = False, keep_table: bool = False, notes=None,
                progress_stream=None) -> Outcome:
    """Run a checked release (see the module docstring); ``keep_table``: also return the noisy table."""
    notes = notes or _quiet
    ledger = Ledger(request.budget) if request.budget else None
    if ledger is not None:
        ledger.state()  # a missing or malformed ledger is refused before any work
    if request.out is not None:
        check_out_name(request)  # an --out no release can write is refused before any cleanup
        if not dry_run:
            # a sidecar left alone by a release killed together with its guardian; dead releases' partial
            # files and folders (a release folder is written beside OUT, in the same parent)
            repair(request.out.parent)
    prepared = prepare(request, mechanisms(request, design, dry_run, notes), dry_run=dry_run)
    request = prepared.request  # with a target alpha, it now holds the alpha chosen
    if dry_run:
        try:
            budget = ledger.check(prepared.epsilon, account=account(request)) if ledger else None
        except BudgetExceeded as exc:
            budget = f"{exc}: the release would be refused"
        return Outcome(prepared, preview=preview(prepared, budget))
    if request.out is not None:
        preflight_out(prepared)
    debit = debit_release(ledger, prepared) if ledger is not None else None
    notes(randomness_note(request.seed))
    return _write(prepared, ledger, debit, notes, keep_table or request.out is None, progress_stream)


def _write(prepared: Prepared, ledger: Ledger | None, debit: dict | None, notes, keep: bool,
           progress_stream) -> Outcome:
    """Draw, write and commit the release, then mark its ledger entry committed and report it.

    From just before the commit names anything to the report, SIGINT, SIGTERM and SIGHUP are held
    (:class:`~countdp.release.engine.HeldSignals`): once named, the release is published, and the
    entry, the report and the status say so whatever arrives; such a signal is then noted, and the
    run ends as it was about to.  Before that, an interrupt fails the release as any error does.
    """
    request = prepared.request
    progress = Progress(prepared.validated.rows, "rows released", progress_stream)
    returned: list | None = [] if keep else None
    with HeldSignals() as held:
        try:
            randomness = Randomness(request.seed, sum(len(c.noisy_columns) for c in request.columns))
            # a source that draws and writes where its rows are (Spark's executors) writes itself
            write = getattr(request.source, "write_release", None) or write_release
            record = write(prepared, randomness, __version__, debit, progress.advance, hold=held.hold,
                           returned=returned)
        except BaseException as exc:
            spent = "" if debit is None else f" (its epsilon stays spent: entry {debit['entry']} is marked failed)"
            if debit is not None:
                ledger.fail(debit["entry"], f"{type(exc).__name__}: {exc}")
            if isinstance(exc, FileExistsError):  # another release committed there first
                raise ValueError(f"{exc.strerror}{spent}") from None
            if isinstance(exc, OSError):
                raise ValueError(f"{request.out_text}: {exc.strerror or exc}; nothing was written{spent}") from None
            if isinstance(exc, ValueError):
                raise ValueError(f"{exc}{spent}") from None
            raise
        finally:
            progress.close()
        if ledger is not None:
            _commit_entry(ledger, debit, request, record, notes)
        if request.out is not None:
            notes(f"# wrote {prepared.validated.rows} rows to {request.table_text}; the guarantee and provenance are "
                  f"in {request.table_text}{SIDECAR_SUFFIX}")
    if held.received:
        notes(f"# {', '.join(held.received)} arrived while the release was being published; it was published and "
              "recorded, and the command ends here")
    return Outcome(prepared, record, None if returned is None else returned[0])


def _commit_entry(ledger: Ledger, debit: dict, request, record: dict, notes) -> None:
    """Mark the release's ledger entry committed.  The release is published by now, so a ledger that can no
    longer be written (moved, given a second link, its disk full) does not make it a failure: the entry stays
    ``debited``, its epsilon spent, and a note says so."""
    try:
        ledger.commit(debit["entry"], {"out": None if request.table_path is None else str(request.table_path),
                                       "sha256": record["output"]["sha256"]})
    except (ValueError, OSError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        notes(f"# published; its ledger entry {debit['entry']} could not be marked committed ({why}): it stays "
              "'debited', its epsilon spent")


__all__ = ["CachedMechanisms", "FileMechanism", "Outcome", "mechanisms", "preflight_out", "randomness_note",
           "run_release"]
