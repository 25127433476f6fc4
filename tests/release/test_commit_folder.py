"""A release published as a folder (``--out DIR/``): the pair or nothing, whatever dies.

Real ``countdp release`` processes, judged from the files alone
(:func:`~tests.helpers.release_checks.folder_outcome`, :func:`~tests.helpers.release_checks.dead_partials`):

* a folder release of a CSV and of a Parquet table holds exactly ``table.<suffix>`` and its sidecar,
  whose ``output.path`` names that table and whose ``output.sha256`` is its bytes'; a dry run writes nothing;
* releases SIGKILLed at random moments while ``strace`` stretches the commit's ``fsync`` and
  ``renameat2`` calls: half spread over a run's length (measured here, under the same load), half
  over the commit from its start, so that kills land before it, inside it before the rename, and
  after the rename.  OUT is then absent or a complete pair, never a lone file, and with
  ``--overwrite`` over a release it is always the whole old pair or the whole new one, never absent;
  the next release into the parent removes every partial folder the killed ones left;
* six concurrent releases to one OUT: one succeeds, the others are refused in one line, and OUT is
  the winner's pair;
* refusals in one line naming the user's path, leaving everything as it was: ``--overwrite`` over a
  folder holding a foreign file, over a plain file or a link, and a missing parent;
* on bindfs (FUSE without renameat2's flags) the fallback under the parent's lock, which the sidecar records.

The last tests show the judges reporting planted broken states, so none can pass vacuously.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from countdp.cli import main
from countdp.release.atomic_folder import LOCKED_RENAME, ONE_RENAME
from countdp.release.partials import remove_stale_partials
from tests.helpers.mounts import bindfs
from tests.helpers.release_checks import (
    children,
    command,
    dead_partials,
    entries,
    folder_outcome,
    one_line_error,
    run_in_process,
    sha256_file,
    sidecar_of,
    table_rows,
    wait_until,
)
from tests.release.test_commit_deaths import strace  # noqa: F401  (a fixture)

ROWS = 5_000
KILLS = 18
"""Releases killed at random moments without ``--overwrite``."""
OVERWRITE_KILLS = 12
"""Releases killed at random moments while replacing a release (``--overwrite``)."""
PARALLEL = 3
"""Releases run at once (each into its own OUT, all in one parent folder)."""
HOLD = 150_000
"""Microseconds strace holds the commit's rename on entry and on exit."""
FSYNC_HOLD = 40_000
"""Microseconds strace holds each ``fsync`` on exit (the commit flushes both files and two folders)."""
COMMIT = (2 * HOLD + 4 * FSYNC_HOLD) / 1e6 + 0.05
"""Seconds a stretched commit lasts from the sidecar's flush: its fsync, the folder's, the rename held on
entry and exit, the parent's fsync, and the moment the process takes to end."""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A mechanism file and the same table of ``ROWS`` counts as CSV and as Parquet."""
    folder = tmp_path_factory.mktemp("inputs")
    mechanism, table = folder / "gm.json", folder / "t.csv"
    assert main(["design", "GM", "--n", "6", "--alpha", "1/2", "--out", str(mechanism)]) == 0
    counts = np.random.default_rng(0).integers(0, 7, ROWS)
    table.write_text("block,c\n" + "".join(f"b{k},{c}\n" for k, c in enumerate(counts)))
    pq.write_table(pacsv.read_csv(table), folder / "t.parquet")
    return {"mechanism": mechanism, "csv": table, "parquet": folder / "t.parquet"}


def arguments(inputs, out: str, seed: int, *extra: str, fmt: str = "csv") -> list[str]:
    """``countdp``'s arguments for a seeded release of the input table (``fmt``) to ``out`` (a folder when it
    ends in ``/``)."""
    return ["release", str(inputs["mechanism"]), "--input", str(inputs[fmt]), "--count-column", "c", "--keep",
            "block", "--out", out, "--seed", str(seed), *extra]


def release(inputs, out: str, seed: int, *extra: str, fmt: str = "csv") -> list[str]:
    """The command (a process of its own) of :func:`arguments`."""
    return command(arguments(inputs, out, seed, *extra, fmt=fmt))


def stretched(tracer: str, first_commit_rename: int) -> list[str]:
    """strace holding the commit's renames (from the ``first_commit_rename``-th ``renameat2`` on, after the
    probe's) and every ``fsync``."""
    return [tracer, "-f", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=renameat2,fsync",
            "-e", f"inject=renameat2:delay_enter={HOLD}:delay_exit={HOLD}:when={first_commit_rename}+",
            "-e", f"inject=fsync:delay_exit={FSYNC_HOLD}"]


def seed_of(out: Path) -> int:
    """The seed a release folder's sidecar records."""
    return json.loads(sidecar_of(out / "table.csv").read_text())["randomness"]["seed"]


class Run(NamedTuple):
    """How a release ended: its exit status, its stderr, where it died (see :func:`run`), how long it ran."""

    status: int
    stderr: str
    where: str
    seconds: float


def _partial_sidecar(out: Path, pid: int) -> Path:
    """The sidecar in the partial folder of the release ``pid`` to ``out`` (the documented name)."""
    return out.parent / f".{out.name}.countdp-partial-{pid}" / "table.csv.release.json"


def _program(pid: int) -> str | None:
    """The program process ``pid`` runs (its ``argv[0]``), or ``None`` once it has ended."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as stream:
            return os.fsdecode(stream.read().split(b"\0")[0])
    except OSError:
        return None


def run(argv: list[str], out: Path, seed: int, delay: float | None = None, in_commit: bool = False) -> Run:
    """Run the release ``argv`` (seeded ``seed``, to ``out``); with a ``delay`` (``argv`` runs it under
    strace), SIGKILL it (strace's child) ``delay`` seconds after it started, or with ``in_commit`` after
    its commit began (its sidecar's bytes reached the partial folder: the commit flushes them), if it
    still runs.

    ``where`` it died, as the files show just after the kill: ``ran`` (not killed), ``writing`` (its partial
    folder, if any, holds no complete sidecar yet), ``committing`` (the partial folder holds the complete
    sidecar, not renamed yet) or ``renamed`` (OUT is this release).
    """
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    killed = []
    if delay is not None:
        found: list[int] = []

        def started_release() -> bool:  # strace's first children probe ptrace; the release runs Python
            found[:] = [pid for pid in children(proc.pid) if _program(pid) == sys.executable]
            return bool(found) or proc.poll() is not None

        assert wait_until(started_release, timeout=60, step=0.005)
        release_pid = found[0] if found else None
        if in_commit and release_pid is not None:
            sidecar = _partial_sidecar(out, release_pid)
            wait_until(lambda: proc.poll() is not None or (sidecar.exists() and sidecar.stat().st_size > 0), 60)
            started = time.monotonic()
        time.sleep(max(0.0, delay - (time.monotonic() - started)))
        if release_pid is not None and proc.poll() is None:  # strace still runs: the id is not yet reused
            with contextlib.suppress(ProcessLookupError):  # ended (and reaped by strace) just now
                os.kill(release_pid, signal.SIGKILL)
                killed.append(release_pid)
    _, err = proc.communicate(timeout=120)
    seconds = time.monotonic() - started
    if not killed or proc.returncode == 0:
        return Run(proc.returncode, err, "ran", seconds)
    with contextlib.suppress(OSError, ValueError):
        if seed_of(out) == seed:
            return Run(proc.returncode, err, "renamed", seconds)
    with contextlib.suppress(OSError, ValueError):
        json.loads(_partial_sidecar(out, killed[0]).read_text())
        return Run(proc.returncode, err, "committing", seconds)
    return Run(proc.returncode, err, "writing", seconds)


def runs(jobs: list[tuple]) -> list[Run]:
    """:func:`run` each job's arguments, ``PARALLEL`` at a time; the results in the jobs' order."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda job: run(*job), jobs))


def kill_times(length: float, count: int, seed: int) -> list[tuple[float, bool]]:
    """``(delay, in_commit)`` for ``count`` killed releases: half spread over a run's ``length``, half over
    the stretched commit from its start, each a uniform moment of its own equal slice (so that every part of
    the run and of the commit is hit, whatever the draw)."""
    rng = random.Random(seed)
    half = count // 2
    over_run = [((k + rng.random()) * length / (count - half), False) for k in range(count - half)]
    over_commit = [((k + rng.random()) * COMMIT / half, True) for k in range(half)]
    return [item for pair in zip(over_run, over_commit, strict=False) for item in pair] + over_run[half:]


@pytest.fixture(scope="module")
def length(strace, inputs, tmp_path_factory) -> float:  # noqa: F811
    """How long a stretched release runs here, ``PARALLEL`` at once (the kill delays are drawn over it)."""
    parent = tmp_path_factory.mktemp("calibration")
    done = runs([(stretched(strace, 2) + release(inputs, f"{parent / f'c{k}'}/", k), parent / f"c{k}", k)
                 for k in range(PARALLEL)])
    assert [r.status for r in done] == [0] * PARALLEL, [r.stderr for r in done]
    return max(r.seconds for r in done)


def test_a_folder_release_holds_exactly_the_table_and_its_sidecar(inputs, tmp_path):
    jobs = [(release(inputs, f"{tmp_path / fmt}/", 1, fmt=fmt), tmp_path / fmt, 1) for fmt in ("csv", "parquet")]
    jobs.append((release(inputs, f"{tmp_path / 'dry'}/", 1, "--dry-run"), tmp_path / "dry", 1))
    done = runs(jobs)
    assert [r.status for r in done] == [0, 0, 0], [r.stderr for r in done]
    assert sorted(os.listdir(tmp_path)) == ["csv", "parquet"]  # the dry run wrote nothing
    for fmt, result in zip(("csv", "parquet"), done, strict=False):
        out = tmp_path / fmt
        table = out / f"table.{fmt}"
        assert sorted(os.listdir(out)) == [table.name, sidecar_of(table).name]
        assert folder_outcome(out, inputs[fmt]) == ("pair", [])
        record = json.loads(sidecar_of(table).read_text())
        assert record["output"]["path"] == str(table) and record["output"]["sha256"] == sha256_file(table)
        assert record["commit"] == ONE_RENAME and table_rows(table) == ROWS
        assert f"wrote {ROWS} rows to {table}; the guarantee and provenance are in {sidecar_of(table)}" in \
            result.stderr


def _next_release_tidies(inputs, parent: Path) -> None:
    """The next release into ``parent`` removes every partial folder the killed releases left there."""
    assert run_in_process(arguments(inputs, f"{parent / 'next'}/", 99))[0] == 0
    assert dead_partials(parent) == [] and not [p for p in parent.iterdir() if p.name.startswith(".")]


def test_killed_releases_leave_the_pair_or_nothing(strace, inputs, length, tmp_path):  # noqa: F811
    times = kill_times(length, KILLS, seed=1)
    outs = [tmp_path / f"out{k}" for k in range(KILLS)]
    done = runs([(stretched(strace, 2) + release(inputs, f"{out}/", k), out, k, *when)
                 for k, (out, when) in enumerate(zip(outs, times, strict=True))])
    for k, (out, result) in enumerate(zip(outs, done, strict=True)):
        state, problems = folder_outcome(out, inputs["csv"])
        assert problems == [] and "Traceback" not in result.stderr, (times[k], result, problems)
        assert state == ("pair" if result.where in ("ran", "renamed") else "nothing"), (times[k], result)
        if result.where == "ran":  # the release ended by itself: what it said is what the folder holds
            assert result.status == 0 and seed_of(out) == k, result
    assert {p.name for p in tmp_path.iterdir()} - {p.name for p in dead_partials(tmp_path)} == \
        {out.name for out in outs if out.exists()}  # never a lone file beside the release folders
    wheres = [r.where for r in done]
    assert {"writing", "committing", "renamed"} <= set(wheres), (wheres, times)
    _next_release_tidies(inputs, tmp_path)


def test_killed_overwrites_leave_the_old_pair_or_the_new_one(strace, inputs, length, tmp_path):  # noqa: F811
    template = tmp_path / "template"
    assert run_in_process(arguments(inputs, f"{template}/", 0))[0] == 0
    outs = [tmp_path / f"out{k}" for k in range(OVERWRITE_KILLS)]
    for out in outs:  # copies of one release, each sidecar naming its own table
        shutil.copytree(template, out)
        record = json.loads(sidecar_of(out / "table.csv").read_text())
        record["output"]["path"] = str(out / "table.csv")
        sidecar_of(out / "table.csv").write_text(json.dumps(record))
    shutil.rmtree(template)
    times = kill_times(length, OVERWRITE_KILLS, seed=2)
    done = runs([(stretched(strace, 3) + release(inputs, f"{out}/", k + 1, "--overwrite"), out, k + 1, *when)
                 for k, (out, when) in enumerate(zip(outs, times, strict=True))])
    for k, (out, result) in enumerate(zip(outs, done, strict=True)):
        assert folder_outcome(out, inputs["csv"]) == ("pair", []), (times[k], result)  # never absent
        assert seed_of(out) == (k + 1 if result.where in ("ran", "renamed") else 0), (times[k], result)
        assert result.where != "ran" or result.status == 0, result
    wheres = [r.where for r in done]
    assert {"writing", "committing", "renamed"} <= set(wheres), (wheres, times)
    _next_release_tidies(inputs, tmp_path)


def test_concurrent_releases_to_one_folder_leave_one_pair(strace, inputs, tmp_path):  # noqa: F811
    out = tmp_path / "out"
    procs = [subprocess.Popen(stretched(strace, 2) + release(inputs, f"{out}/", seed), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for seed in range(6)]
    done = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
    winners = [seed for seed, (status, _) in enumerate(done) if status == 0]
    assert len(winners) == 1, done
    for status, err in (d for seed, d in enumerate(done) if seed not in winners):
        assert status == 2 and one_line_error(err) == [] and f"{out}/ already exists" in err, err
    assert folder_outcome(out, inputs["csv"]) == ("pair", []) and seed_of(out) == winners[0]
    assert os.listdir(tmp_path) == ["out"]


def _files(folder: Path) -> dict[str, bytes]:
    return {path: (folder / path).read_bytes() for path in entries(folder) if (folder / path).is_file()}


def test_refusals_are_one_line_naming_the_path_and_change_nothing(inputs, tmp_path):
    assert run_in_process(arguments(inputs, f"{tmp_path / 'mine'}/", 0))[0] == 0
    (tmp_path / "mine" / "notes.txt").write_text("the curator's own notes")
    (tmp_path / "plain").write_text("a file")
    (tmp_path / "link").symlink_to(tmp_path / "mine")
    before = _files(tmp_path)
    cases = [("mine", ["--overwrite"], "holds other files than one countdp release"),
             ("plain", ["--overwrite"], "is a file, not a release folder"), ("plain", [], "already exists"),
             ("link", ["--overwrite"], "is a symbolic link"), ("missing/out", [], "no folder")]
    for name, extra, why in cases:  # the command line in-process: a refusal happens before any process matters
        status, _, err = run_in_process(arguments(inputs, f"{tmp_path / name}/", 1, *extra))
        assert status == 2 and one_line_error(err) == [] and f"{tmp_path / name}/" in err and why in err, err
    shutil.copytree(tmp_path / "mine", tmp_path / "again")
    (tmp_path / "again" / "notes.txt").unlink()
    again = arguments(inputs, f"{tmp_path / 'again'}/", 1, "--overwrite")
    again[again.index("--input") + 1] = str(tmp_path / "again" / "table.csv")  # re-releasing a release in place
    status, _, err = run_in_process(again)
    assert status == 2 and one_line_error(err) == [] and "holds the input table" in err, err
    shutil.rmtree(tmp_path / "again")
    assert _files(tmp_path) == before and set(entries(tmp_path)) == set(before) | {"mine", "link"}


def test_without_renameat2_flags_the_commit_is_locked_and_recorded(inputs, tmp_path):
    with bindfs(tmp_path / "source", tmp_path / "mount") as mount:
        out = mount / "out"
        for seed, extra in ((1, []), (2, ["--overwrite"])):
            status, err, _, _ = run(release(inputs, f"{out}/", seed, *extra), out, seed)
            assert status == 0 and folder_outcome(out, inputs["csv"]) == ("pair", []) and seed_of(out) == seed, err
        assert json.loads(sidecar_of(out / "table.csv").read_text())["commit"] == LOCKED_RENAME
        assert os.listdir(mount) == ["out"]


# ------------------------------------------------------------------------------- the judges
def _dead_pid() -> int:
    """The id of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_the_folder_judge_reports_lone_and_mismatched_files(inputs, tmp_path):
    good = tmp_path / "good"
    assert run_in_process(arguments(inputs, f"{good}/", 1))[0] == 0
    assert folder_outcome(good, inputs["csv"]) == ("pair", [])
    planted = {}
    for case in ("lone table", "lone sidecar", "mismatched", "stray file", "empty"):
        planted[case] = tmp_path / case.replace(" ", "-")
        shutil.copytree(good, planted[case])
    table = "table.csv"
    (planted["lone table"] / sidecar_of(Path(table))).unlink()
    (planted["lone sidecar"] / table).unlink()
    (planted["mismatched"] / table).write_bytes((good / table).read_bytes().replace(b"b1,", b"b1,1", 1))
    (planted["stray file"] / "notes.txt").write_text("x")
    shutil.rmtree(planted["empty"])
    planted["empty"].mkdir()
    expected = {"lone table": "a table without its sidecar", "lone sidecar": "a sidecar without its table",
                "mismatched": "is not the SHA-256", "stray file": "not part of the release", "empty": "no table"}
    for case, folder in planted.items():
        state, problems = folder_outcome(folder, inputs["csv"])
        assert state == "broken" and any(expected[case] in p for p in problems), (case, problems)
    assert folder_outcome(tmp_path / "absent", inputs["csv"]) == ("nothing", [])


def test_only_dead_releases_partial_folders_holding_release_files_are_removed(tmp_path):
    dead = tmp_path / f".out.countdp-partial-{_dead_pid()}"
    live = tmp_path / f".out.countdp-partial-{os.getpid()}"
    foreign = tmp_path / f".other.countdp-partial-{_dead_pid()}"
    for folder in (dead, live, foreign):
        folder.mkdir()
        (folder / "table.csv").write_text("block,noisy_c\n")
        (folder / "table.csv.release.json").write_text("{")
    (foreign / "notes.txt").write_text("not a release's")
    assert dead_partials(tmp_path) == sorted([dead, foreign])
    assert remove_stale_partials(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, foreign.name])
    assert sorted(os.listdir(foreign)) == ["notes.txt", "table.csv", "table.csv.release.json"]
