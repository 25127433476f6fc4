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
* on bindfs (FUSE without renameat2's flags) the fallback under the parent's lock, which the sidecar records;
* partials across PID namespaces (``unshare -p``): two releases with one process id to one OUT leave the
  winner's own pair and a one-line refusal, a cleanup from another namespace leaves a running release's
  partial folder, and a partial folder replaced under a release is never published;
* SIGINT once the commit's rename is done: the release is reported published and its ledger entry committed;
* refused before the debit, in one line naming ``--out`` as typed, nothing spent: a name too long for its
  partial folder (also by ``--dry-run``), names holding ``.countdp-partial-``, a mount point (also a bind
  mount within one filesystem) and too few free inodes; look-alike folders of the user's are never removed.

The last tests show the judges reporting planted broken states, and cleanup removing only unlocked
partials and in them only the names a release writes, so none can pass vacuously.
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
    held_lock,
    one_line_error,
    partials,
    pid_namespace,
    run_in_process,
    run_on,
    sha256_file,
    sidecar_of,
    stopped_at_first_fsync,
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


def arguments(inputs, out: str, seed: int | None, *extra: str, fmt: str = "csv") -> list[str]:
    """``countdp``'s arguments for a release of the input table (``fmt``) to ``out`` (a folder when it ends in
    ``/``), seeded unless ``seed`` is ``None`` (a release that spends a budget draws from the OS)."""
    seeded = [] if seed is None else ["--seed", str(seed)]
    return ["release", str(inputs["mechanism"]), "--input", str(inputs[fmt]), "--count-column", "c", "--keep",
            "block", "--out", out, *seeded, *extra]


def ledger_of(folder: Path) -> tuple[Path, str]:
    """A new budget ledger in ``folder`` and its text (which a refusal must leave as it is)."""
    ledger = folder / "budget.ledger"
    assert main(["budget", "init", str(ledger), "--epsilon", "10"]) == 0
    return ledger, ledger.read_text()


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


def _partial_sidecars(out: Path) -> list[Path]:
    """The sidecars in the partial folders of releases to ``out`` (the documented names; one release runs
    to each ``out`` here)."""
    return [folder / "table.csv.release.json" for folder in partials(out.parent, out.name)]


def _complete_partial_sidecar(out: Path) -> bool:
    """Whether a partial folder of a release to ``out`` holds a complete sidecar (its commit began)."""
    for sidecar in _partial_sidecars(out):
        with contextlib.suppress(OSError, ValueError):
            json.loads(sidecar.read_text())
            return True
    return False


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
            wait_until(lambda: proc.poll() is not None or _complete_partial_sidecar(out), 60)
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
    if _complete_partial_sidecar(out):
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
    """Every file under ``folder`` (hidden ones too) and its bytes, but a budget ledger's (``ledger_of``)."""
    return {path: (folder / path).read_bytes() for path in entries(folder)
            if (folder / path).is_file() and not path.startswith("budget.ledger")}


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


# ------------------------------------------------------------------- partials across PID namespaces
def _namespaced(namespace: list[str] | None, tracer: str, hold: float, argv: list[str]) -> list[str]:
    """``argv`` run in the PID namespace ``namespace`` (a prefix from ``pid_namespace``; skips without one)
    under strace, each ``fsync`` held ``hold`` seconds on entry (the commit flushes both files and two folders)."""
    if namespace is None:
        pytest.skip("unshare -p -f --mount-proc is needed (root)")
    return [*namespace, tracer, "-f", "-o", "/dev/null", "-e", "trace=fsync",
            "-e", f"inject=fsync:delay_enter={int(hold * 1e6)}", *argv]


def _partials_seen(parent: Path, name: str) -> list[Path]:
    """The partials of releases to ``parent / name`` (whatever follows ``.countdp-partial-``, so that what is
    judged does not depend on how the names end)."""
    return sorted(path for path in parent.iterdir() if path.name.startswith(f".{name}.countdp-partial-"))


def _partial_seen(parent: Path, name: str) -> bool:
    return bool(_partials_seen(parent, name))


@contextlib.contextmanager
def _ending(proc: subprocess.Popen):
    """Kill ``proc`` (and with it its PID namespace) if the block leaves it running (a failed assertion)."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _ended(proc: subprocess.Popen) -> tuple[int, str]:
    """A release's exit status and stderr, once it has ended."""
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def test_releases_sharing_a_process_id_in_two_pid_namespaces_leave_one_whole_pair(strace, inputs, tmp_path):  # noqa: F811
    """Two releases to one OUT, each process 2 of its own PID namespace (containers sharing a volume): the
    first's commit slowed (each fsync held 2 s), the second started while the first's partial folder exists,
    slower still (3 s).  Neither may touch the other's partial: one publishes its own complete pair and says
    so, the other is refused in one line, and nothing else is left in the parent."""
    out = tmp_path / "shared"
    first = subprocess.Popen(_namespaced(pid_namespace(), strace, 2, release(inputs, f"{out}/", 11)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: _partial_seen(tmp_path, out.name) or first.poll() is not None, 120)
    assert first.poll() is None, first.communicate()
    with _ending(first):
        second = subprocess.Popen(_namespaced(pid_namespace(), strace, 3, release(inputs, f"{out}/", 22)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        with _ending(second):
            done = {11: _ended(first), 22: _ended(second)}
    winners = [seed for seed, (status, _) in done.items() if status == 0]
    assert len(winners) == 1 and all("Traceback" not in err for _, err in done.values()), done
    assert folder_outcome(out, inputs["csv"]) == ("pair", []) and seed_of(out) == winners[0], done
    status, err = done[33 - winners[0]]
    assert status == 2 and one_line_error(err) == [] and f"{out}/ already exists" in err, err
    assert os.listdir(tmp_path) == [out.name]


def test_cleanup_from_another_pid_namespace_leaves_a_running_releases_partial_folder(strace, inputs, tmp_path):  # noqa: F811
    """A release running as process 4243 of its PID namespace, stopped as its commit begins (its first fsync:
    stopped_at_first_fsync), and another release into the same parent from a fresh namespace, where no process
    4243 exists: the second's cleanup must leave the first's partial folder (whose lock the first holds), and
    once the first goes on (run_on), both publish their own pair.  The first cannot end before the second has,
    whatever the load."""
    namespace = pid_namespace(4241) or pytest.skip("unshare -p -f --mount-proc is needed (root)")
    first = subprocess.Popen([*namespace, *stopped_at_first_fsync(strace), *release(inputs, f"{tmp_path / 'a'}/", 11)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    with _ending(first):
        assert wait_until(lambda: _partial_seen(tmp_path, "a") or first.poll() is not None, 120)
        fresh = pid_namespace() or pytest.skip("unshare -p -f --mount-proc is needed (root)")
        second = subprocess.run([*fresh, *release(inputs, f"{tmp_path / 'b'}/", 22)], capture_output=True,
                                text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        assert first.poll() is None and _partial_seen(tmp_path, "a"), "the running release's partial folder is gone"
        status, err = run_on(first)
    assert status == 0 and "Traceback" not in err, err
    for name, seed in (("a", 11), ("b", 22)):
        assert folder_outcome(tmp_path / name, inputs["csv"]) == ("pair", []) and seed_of(tmp_path / name) == seed
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_a_partial_folder_replaced_under_a_running_release_is_never_published(strace, inputs, tmp_path):  # noqa: F811
    """While a release flushes its files (each fsync held 1.5 s), its partial folder is moved away and a forged
    one put under its name: the commit checks the name still leads to its own folder, so it names nothing,
    says so in one line, and leaves the forged folder (not its own) alone."""
    out = tmp_path / "out"
    argv = [strace, "-f", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:delay_enter=1500000",
            *release(inputs, f"{out}/", 1)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with _ending(proc):
        def flushing() -> bool:  # the table's bytes reach the folder when the commit flushes them
            tables = [folder / "table.csv" for folder in _partials_seen(tmp_path, out.name)]
            return proc.poll() is not None or any(t.exists() and t.stat().st_size > 0 for t in tables)

        assert wait_until(flushing, 120) and proc.poll() is None, proc.communicate()
        (partial,) = _partials_seen(tmp_path, out.name)
        partial.rename(tmp_path / "moved")
        partial.mkdir()
        (partial / "table.csv").write_text("block,noisy_c,mechanism\nforged,0,x\n")
        (partial / "table.csv.release.json").write_text("{}")
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and one_line_error(err) == [], err
    assert "is no longer this release's partial folder; nothing of this release was named" in err, err
    assert not out.exists() and sorted(os.listdir(partial)) == ["table.csv", "table.csv.release.json"]


# ------------------------------------------------------------------- an interrupt once the release is named
def test_an_interrupt_after_the_rename_leaves_the_release_published_and_recorded(strace, inputs, tmp_path):  # noqa: F811
    """SIGINT while strace holds the commit's rename on its way out (OUT already named): the release is
    published, so the command must say so — its success line, the ledger entry committed, status 0, no
    traceback — and note the interrupt."""
    ledger, _ = ledger_of(tmp_path)
    out = tmp_path / "out"
    argv = [strace, "-o", "/dev/null", "-e", "trace=renameat2", "-e", "inject=renameat2:delay_exit=2000000:when=2+",
            *release(inputs, f"{out}/", None, "--budget", str(ledger))]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with _ending(proc):
        assert wait_until(lambda: out.exists() or proc.poll() is not None, 120)
        found = [pid for pid in children(proc.pid) if _program(pid) == sys.executable]
        assert proc.poll() is None and len(found) == 1, (found, proc.poll())
        os.kill(found[0], signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and not [line for line in err.splitlines() if line and line[0] not in "#\r["], err
    assert f"wrote {ROWS} rows to {out / 'table.csv'}" in err and "# SIGINT arrived while the release" in err, err
    assert folder_outcome(out, inputs["csv"]) == ("pair", [])
    assert [e["status"] for e in json.loads(ledger.read_text())["entries"]] == ["committed"]


# ------------------------------------------------------------------- refused before the debit, as typed
def test_a_name_too_long_for_its_partial_folder_is_refused_before_the_debit(inputs, tmp_path):
    """OUT's own name fits the folder's NAME_MAX, its partial folder's (50 bytes longer) does not: refused in
    one line naming it, by a dry run too, with nothing spent or written; the longest name that fits works."""
    ledger, before = ledger_of(tmp_path)
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    out = f"{tmp_path / ('n' * (limit - 15))}/"
    for extra in ([], ["--dry-run"]):
        status, _, err = run_in_process(arguments(inputs, out, None, "--budget", str(ledger), *extra))
        assert status == 2 and one_line_error(err) == [] and f"--out {out}: " in err, err
        assert f"at most {limit - 50} bytes" in err, err
    assert ledger.read_text() == before and not [n for n in os.listdir(tmp_path) if "nnnn" in n]
    fits = tmp_path / ("n" * (limit - 50))
    assert run_in_process(arguments(inputs, f"{fits}/", 1))[0] == 0
    assert folder_outcome(fits, inputs["csv"]) == ("pair", [])


def test_partial_lookalikes_are_refused_as_out_and_never_removed(inputs, tmp_path):
    """A user's folder named like an old partial and holding ``table.xlsx``, and a folder an earlier version
    published under a partial-like name: a release refused for bad input, refused ``--out`` names holding
    ``.countdp-partial-`` (folder and file form), and a release that succeeds into the same parent leave them."""
    ledger, before = ledger_of(tmp_path)
    mine = tmp_path / ".x.countdp-partial-99999"
    mine.mkdir()
    (mine / "table.xlsx").write_text("the curator's")
    published = tmp_path / ".r.countdp-partial-99990"
    assert run_in_process(arguments(inputs, f"{published.with_name('made')}/", 1))[0] == 0
    published.with_name("made").rename(published)
    kept = _files(tmp_path)
    bad = arguments(inputs, f"{tmp_path / 'bad'}/", None, "--budget", str(ledger))
    bad[bad.index("--count-column") + 1] = "no_such_column"
    status, _, err = run_in_process(bad)
    assert status == 2 and one_line_error(err) == [] and "no_such_column" in err, err
    for typed in (f"{tmp_path / '.r.countdp-partial-99991'}/", str(tmp_path / ".o.csv.countdp-partial-7"),
                  f"{tmp_path / ('.o.countdp-partial-' + '0' * 32)}/"):
        status, _, err = run_in_process(arguments(inputs, typed, None, "--budget", str(ledger)))
        assert status == 2 and one_line_error(err) == [] and f"--out {typed}: " in err and "partial" in err, err
    assert ledger.read_text() == before and _files(tmp_path) == kept
    assert run_in_process(arguments(inputs, f"{tmp_path / 'ok'}/", 1))[0] == 0
    assert {n: b for n, b in _files(tmp_path).items() if not n.startswith("ok/")} == kept


def test_a_mount_point_or_too_few_free_inodes_are_refused_before_the_debit(inputs, tmp_path, mount):
    """``--overwrite`` of a release folder that is a mount point (it cannot be renamed), and a folder release
    into a filesystem with two free inodes (it needs three: the folder and two files): refused in one line,
    nothing spent or changed; a table and its sidecar (two inodes) still fit there."""
    ledger, before = ledger_of(tmp_path)
    assert run_in_process(arguments(inputs, f"{tmp_path / 'x'}/", 1))[0] == 0
    point = mount("size=1m")
    for path in (tmp_path / "x").iterdir():
        shutil.copy(path, point / path.name)
    held = _files(point)
    status, _, err = run_in_process(arguments(inputs, f"{point}/", None, "--overwrite", "--budget", str(ledger)))
    assert status == 2 and one_line_error(err) == [] and f"{point}/ is a mount point" in err, err
    status, _, err = run_in_process(arguments(inputs, str(point), None, "--overwrite", "--budget", str(ledger)))
    assert status == 2 and one_line_error(err) == [] and f"{point} is a mount point" in err, err
    assert ledger.read_text() == before and _files(point) == held
    small = mount("size=1m,nr_inodes=3")
    assert os.statvfs(small).f_favail == 2  # the root folder takes one
    status, _, err = run_in_process(arguments(inputs, f"{small / 'o'}/", None, "--budget", str(ledger)))
    assert status == 2 and one_line_error(err) == [] and f"--out {small / 'o'}/: " in err and "inodes" in err, err
    assert ledger.read_text() == before and os.listdir(small) == []
    status, _, err = run_in_process(arguments(inputs, str(small / "o.csv"), None, "--budget", str(ledger)))
    assert status == 0 and sorted(os.listdir(small)) == ["o.csv", "o.csv.release.json"], err


def test_a_release_folder_bind_mounted_on_itself_is_refused_before_the_debit(inputs, tmp_path):
    """A bind mount within one filesystem, which ``os.path.ismount`` does not see (same device, same inode
    as before): ``--overwrite`` of it would fail with EBUSY after the debit, so it is refused before."""
    ledger, before = ledger_of(tmp_path)
    bound = tmp_path / "y"
    assert run_in_process(arguments(inputs, f"{bound}/", 1))[0] == 0
    done = subprocess.run(["mount", "--bind", str(bound), str(bound)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount (root is needed): {done.stderr.strip()}")
    try:
        assert not os.path.ismount(bound)
        held = _files(bound)
        status, _, err = run_in_process(arguments(inputs, f"{bound}/", None, "--overwrite", "--budget", str(ledger)))
        assert status == 2 and one_line_error(err) == [] and f"{bound}/ is a mount point" in err, err
        assert ledger.read_text() == before and _files(bound) == held
    finally:
        subprocess.run(["umount", str(bound)], check=True)


def test_messages_repeat_out_as_typed(inputs, tmp_path, monkeypatch):
    """Every refusal names ``--out`` as typed (``/``, ``./o4/``, ``o3//``, ``.``, ``''``), never as a path
    object; an empty folder is called empty; a success line names the table under the typed folder."""
    monkeypatch.chdir(tmp_path)
    for name in ("o3", "o4"):
        assert run_in_process(arguments(inputs, f"{name}/", 1))[0] == 0
        (tmp_path / name / "notes.txt").write_text("the curator's")
    (tmp_path / "e").mkdir()
    cases = [("/", [], "--out /: name the release folder"), ("./o4/", ["--overwrite"], "./o4/ holds other files"),
             ("o3//", ["--overwrite"], "o3// holds other files"),
             ("e/", ["--overwrite"], "e/ is an empty folder, not a countdp release folder"),
             (".", [], "--out .: name the table"), ("", [], "--out '': name the table")]
    for typed, extra, expected in cases:
        status, _, err = run_in_process(arguments(inputs, typed, 1, *extra))
        assert status == 2 and one_line_error(err) == [] and expected in err, (typed, err)
        assert "PosixPath" not in err and "--out //" not in err, err
    status, _, err = run_in_process(arguments(inputs, "./o5/", 1))
    assert status == 0 and f"wrote {ROWS} rows to ./o5/table.csv; " in err, err


# ------------------------------------------------------------------------------- the judges
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


def test_only_unlocked_partials_are_removed_and_only_the_names_a_release_writes(tmp_path):
    """A partial whose lock a live process holds stays; an unlocked one holding only release files goes; one
    holding anything else stays whole; PID-named leftovers of earlier versions and look-alikes stay."""
    token = "0123456789abcdef" * 2
    dead, live, foreign = (tmp_path / f".{n}.countdp-partial-{token}" for n in ("out", "live", "other"))
    old, lookalike = tmp_path / ".out.countdp-partial-4242", tmp_path / ".x.countdp-partial-99999"
    for folder in (dead, live, foreign, old):
        folder.mkdir()
        (folder / "table.csv").write_text("block,noisy_c\n")
        (folder / "table.csv.release.json").write_text("{")
    (foreign / "notes.txt").write_text("not a release's")
    lookalike.mkdir()
    (lookalike / "table.xlsx").write_text("the curator's")
    odd = tmp_path / f".odd.countdp-partial-{token}"
    odd.mkdir()
    (odd / "table.xlsx").write_text("not a name a release writes")
    with held_lock(live):
        assert dead_partials(tmp_path) == sorted([dead, foreign, odd])
        assert remove_stale_partials(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (live, foreign, old, lookalike, odd))
    assert sorted(os.listdir(foreign)) == ["notes.txt", "table.csv", "table.csv.release.json"]
    assert os.listdir(lookalike) == ["table.xlsx"] and os.listdir(odd) == ["table.xlsx"]
    assert remove_stale_partials(tmp_path) == [live]  # its holder has ended
