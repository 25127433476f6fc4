"""A table release is all or nothing: real SIGKILLs over a whole run, the windows of the commit,
a real full filesystem.

The promise (docs/release.md, "All or nothing"): after any end of a release, either the table
and its sidecar are both in place and complete, or neither exists, and no other file holding
counts remains in the output folder or in ``$TMPDIR``.  These tests end a release in every way
a release can end:

* SIGKILL of ``python -m countdp.cli release`` (a real process) at moments spread over a whole
  run: while Python starts (a fraction of a measured run), then at moments seen from outside
  through /proc (the input open for the first pass, the unnamed table holding 20, 50, 80% of
  its bytes, the commit's guardian running, the sidecar's name in place), for the three forms
  of a table release, in CSV and in Parquet: 42 kill points;
* SIGKILL while ``strace`` holds the release just after linking the sidecar and before linking
  the table: the guardian must complete the pair (it links the table from its own descriptor);
  with the guardian killed first the marked sidecar stays (the stated residual, which shows the
  window is real and the check sees it) and the next release into the folder removes it.  The
  guardian killed alone after both links: the release reports success, as the folder shows.
  Likewise while ``--overwrite`` has removed the old table but not yet its sidecar, and while the
  guardian is starting (it must not print a traceback);
* SIGINT while the sidecar's or the table's link is held: the release finishes, reports success and
  commits its ledger entry (never a table without its sidecar, never an entry marked failed);
* every single death (release, guardian, both) at every step of the commit, and concurrent
  releases, are in test_commit_deaths.py and test_commit_concurrency.py;
* a tmpfs too small for the table, for its last page, or for its sidecar.

Every state is judged by :mod:`tests.helpers.release_checks`, which reads only the files; the last tests show
each of its judges reporting a planted broken state.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from countdp.release.atomic import MARK
from countdp.services.mechanism_cache import MechanismCache
from tests.helpers.mounts import mount_tmpfs
from tests.helpers.release_checks import (
    alive,
    children,
    collect,
    command,
    copies_of_counts,
    debian_tool,
    entries,
    environment,
    environment_variable,
    mentioning,
    one_line_error,
    open_files,
    outcome,
    phase,
    run_in_process,
    sha256_file,
    sidecar_of,
    unnamed_files,
    wait_until,
)

ROWS = 200_000
"""Rows of the table killed over and over: a release of it takes about a second on an idle machine."""
SMALL_ROWS = 2_000
SEED = 11
SIZES = range(1, 9)
ALPHAS = ("9/10", "1/2", "3/4")
COUNT_COLUMNS = ("a", "b", "c", "f")
STARTUP = 0.3
"""One kill at this fraction of the time a measured run took to reach its second pass (Python starting)."""
WRITTEN = (0.2, 0.5, 0.8)
"""Kills once the unnamed table holds these fractions of the measured table's bytes (the second pass)."""
EVENTS = ("reading the input", "guardian running", "sidecar named")
"""Kills at moments seen from outside: the first pass under way (the input open, no unnamed file yet),
the commit under way, the first link done."""
SEEN = {"reading the input": "checking", "guardian running": "commit", "sidecar named": "linked"}


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 9, rows)
    regions = np.array(["north", "south", "east, west", "centre"])
    return pa.table({
        "id": np.arange(rows), "region": pa.array(regions[rng.integers(0, 4, rows)]), "n": n,
        "a": rng.integers(0, n + 1), "b": rng.integers(0, n + 1), "c": rng.integers(0, n + 1),
        "f": rng.integers(0, 7, rows)})


@pytest.fixture(scope="module")
def material(tmp_path_factory) -> dict:
    """The tables (CSV and Parquet, large and small), the mechanisms designed beforehand into a
    cache (EM, n = 1..8, three alphas) and a mechanism FILE (GM n=6), so that what runs under the
    kills is the release itself."""
    root = tmp_path_factory.mktemp("release_atomic")
    found = {"root": root, "cache": root / "cache", "file": root / "gm6.json"}
    for name, rows in (("big", ROWS), ("small", SMALL_ROWS)):
        table = _table(rows, seed=rows)
        pacsv.write_csv(table, root / f"{name}.csv")
        pq.write_table(table, root / f"{name}.parquet")
        found[name] = table
    cache = MechanismCache(found["cache"])
    for alpha in ALPHAS:
        for n in SIZES:
            cache.get("EM", n, alpha)
    status, _, err = run_in_process(["design", "GM", "--n", "6", "--alpha", "1/2", "--out", str(found["file"])])
    assert status == 0, err
    return found


def _arguments(material: dict, form: str, fmt: str, size: str = "big") -> list[str]:
    table = str(material["root"] / f"{size}.{fmt}")
    if form == "file":
        return ["release", str(material["file"]), "--input", table, "--count-column", "f", "--keep", "id,region,n"]
    columns, alphas = ("a", "9/10") if form == "size-one" else ("a,b,c", "9/10,1/2,3/4")
    return ["release", "--input", table, "--count-column", columns, "--size-column", "n", "--mechanism", "EM",
            "--alpha", alphas, "--cache", str(material["cache"]), "--keep", "id,region,n"]


@dataclass
class Kill:
    """One release ended by SIGKILL: when, what was seen just before, what it left."""

    label: str
    at: float
    seen: str
    killed: bool
    state: str
    problems: list[str]
    stderr: str


class Releases:
    """Releases of one table into one output folder, each run with a fresh ``TMPDIR`` checked empty afterwards."""

    def __init__(self, args: list[str], input_path: Path, folder: Path, tmpdir: Path) -> None:
        self.folder, self.tmpdir, self.input = folder, tmpdir, input_path
        self.out = folder / f"noisy{input_path.suffix}"
        self.args = [*args, "--out", str(self.out), "--seed", str(SEED)]
        self.reference: str | None = None
        self.table_bytes = 0

    def start(self, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
        return subprocess.Popen([*prefix, *command(self.args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=environment(self.tmpdir))

    def full_run(self) -> tuple[float, float]:
        """One release run to its end: when its unnamed files appeared (the second pass began) and
        when it ended, in seconds from its start.  Its table's SHA-256 is the reference for the kills."""
        before = entries(self.folder)
        started = time.monotonic()
        proc = self.start()
        second_pass = None
        while proc.poll() is None:
            if second_pass is None and unnamed_files(proc.pid, self.folder):
                second_pass = time.monotonic() - started
            time.sleep(0.005)
        _, err = collect(proc)
        duration = time.monotonic() - started
        assert proc.returncode == 0, err
        state, problems = outcome(self.folder, self.out, self.input, before, self.tmpdir)
        assert (state, problems) == ("pair", []), problems
        self.reference, self.table_bytes = sha256_file(self.out), self.out.stat().st_size
        return (duration if second_pass is None else second_pass), duration

    def kill(self, label: str, at: float | None = None, event: str | None = None, written: float | None = None
             ) -> Kill:
        """Start a release, SIGKILL it ``at`` seconds after its start, once its unnamed table holds
        ``written`` of the reference table's bytes, or once ``event`` is seen; judge what it left."""
        before = entries(self.folder)
        proc = self.start()
        started = time.monotonic()
        if at is not None:
            while proc.poll() is None and time.monotonic() - started < at:
                time.sleep(0.005)
            seen = phase(proc.pid, self.out)
        elif written is not None:
            wanted = written * self.table_bytes
            assert wait_until(lambda: proc.poll() is not None or
                              max(unnamed_files(proc.pid, self.folder).values(), default=0) >= wanted, 120, 0.001)
            seen = "writing"
        else:
            self._wait_for(proc, event)
            seen = SEEN[event]
        if proc.poll() is not None:
            seen = "finished"
        elapsed = time.monotonic() - started
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        _, err = collect(proc, out=self.out)
        killed = proc.returncode == -signal.SIGKILL
        state, problems = outcome(self.folder, self.out, self.input, before, self.tmpdir)
        if state == "pair" and sha256_file(self.out) != self.reference:
            problems.append(f"{self.out}: a complete pair, but not the table of the same seeded release")
        if not killed and proc.returncode != 0:
            problems.append(f"the release ended with status {proc.returncode}: {err[-500:]}")
        lingering = mentioning(str(sidecar_of(self.out)))
        if lingering:
            problems.append(f"processes still running 10 s after the release ended: {lingering}")
        self.clear(before)
        return Kill(label, round(elapsed, 3), seen, killed, state, problems, err)

    def _wait_for(self, proc: subprocess.Popen, event: str) -> None:
        sidecar = sidecar_of(self.out)
        stages = {"commit": False}

        def seen() -> bool:
            if proc.poll() is not None:
                return True
            if event == "sidecar named":
                return sidecar.exists()
            if event == "reading the input":
                return str(self.input) in open_files(proc.pid)
            files = unnamed_files(proc.pid, self.folder)
            # guardian running: look for children only once both unnamed files hold bytes (both flushed)
            if not stages["commit"]:
                stages["commit"] = len(files) == 2 and min(files.values()) > 0
                return False
            return bool(children(proc.pid))

        assert wait_until(seen, timeout=120, step=0.001), f"{event} never happened"

    def clear(self, before: set[str]) -> None:
        """Remove whatever the release left (after it was judged), so that the next one starts clean."""
        for name in sorted(entries(self.folder) - before, reverse=True):
            path = self.folder / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        for name in sorted(entries(self.tmpdir), reverse=True):
            path = self.tmpdir / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _releases(material: dict, tmp_path: Path, form: str, fmt: str, size: str = "big") -> Releases:
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    return Releases(_arguments(material, form, fmt, size), material["root"] / f"{size}.{fmt}", folder, tmpdir)


# ------------------------------------------------------------------------------- the kill sweep
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("form", ["size-one", "size-three", "file"])
def test_sigkill_at_any_moment_leaves_the_complete_pair_or_nothing(material, tmp_path, form, fmt):
    releases = _releases(material, tmp_path, form, fmt)
    second_pass, duration = releases.full_run()
    table = pq.read_table(releases.out) if fmt == "parquet" else pacsv.read_csv(
        releases.out, convert_options=pacsv.ConvertOptions(column_types={"id": pa.string()}))
    truth = {name: material["big"].column(name).to_pylist() for name in COUNT_COLUMNS}
    released = {name: table.column(name).to_pylist() for name in table.column_names}
    assert copies_of_counts(released, truth) == []
    releases.clear(entries(releases.folder) - {releases.out.name, sidecar_of(releases.out).name})

    kills = [releases.kill(f"{STARTUP:.0%} of the first {second_pass:.2f} s", at=STARTUP * second_pass),
             releases.kill(EVENTS[0], event=EVENTS[0])]
    kills += [releases.kill(f"{f:.0%} of the table written", written=f) for f in WRITTEN]
    kills += [releases.kill(event, event=event) for event in EVENTS[1:]]

    report = "\n".join(f"  {k.label:>36}: killed at {k.at:.3f} s while {k.seen:<8} -> {k.state}"
                       + ("" if k.killed else " (it had finished)") for k in kills)
    print(f"\n{form} {fmt}: {sum(k.killed for k in kills)} kill points over a {duration:.2f} s release\n{report}")
    assert [p for k in kills for p in k.problems] == []
    assert all(k.state in ("pair", "nothing") for k in kills)
    # the sweep spans the run: kills before anything was named, some while the unnamed files were being written
    assert sum(k.killed and k.state == "nothing" for k in kills) >= 4, report
    assert sum(k.killed and k.seen == "checking" and k.state == "nothing" for k in kills) == 1, report
    assert sum(k.killed and k.seen == "writing" and k.state == "nothing" for k in kills) >= 2, report
    assert sum(k.killed for k in kills) >= len(kills) - 2, report  # the two latest may find it finished


# ----------------------------------------------------------------- the window between the links
@pytest.fixture(scope="session")
def strace() -> str:
    """The ``strace`` binary (installed from Debian when missing); skips if it cannot be installed or cannot trace."""
    path = debian_tool("strace", "strace")
    if path is None:
        pytest.skip("strace is not installed and apt-get could not install it")
    probe = subprocess.run([path, "-o", "/dev/null", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.strip()[-300:]}")
    return path


def _held_at_first_link(strace: str, releases: Releases) -> tuple[subprocess.Popen, int]:
    """Start a release under strace, its first ``linkat`` (the sidecar's) held for 1.5 s once done,
    and wait until the sidecar is named; returns strace's process and the release's pid."""
    proc = releases.start((strace, "-o", "/dev/null", "-e", "trace=linkat",
                           "-e", "inject=linkat:delay_exit=1500000:when=1"))
    sidecar = sidecar_of(releases.out)
    assert wait_until(lambda: sidecar.exists() or proc.poll() is not None, timeout=120), "the sidecar never appeared"
    assert proc.poll() is None, collect(proc)[1]
    (release,) = children(proc.pid)
    return proc, release


def test_guardian_completes_the_pair_when_the_release_dies_between_the_links(material, tmp_path, strace):
    releases = _releases(material, tmp_path, "size-three", "csv", size="small")
    before = entries(releases.folder)
    proc, release = _held_at_first_link(strace, releases)
    # the moment of the kill: the sidecar is named and complete, the table is not in place
    sidecar = sidecar_of(releases.out)
    record = json.loads(sidecar.read_text())
    assert not releases.out.exists() and record["output"]["path"] == str(releases.out)
    guardians = children(release)
    assert len(guardians) == 1
    os.kill(release, signal.SIGKILL)
    _, err = collect(proc, out=releases.out)
    assert outcome(releases.folder, releases.out, releases.input, before, releases.tmpdir) == ("pair", [])
    assert json.loads(sidecar.read_text())["output"]["sha256"] == sha256_file(releases.out)
    assert wait_until(lambda: not any(alive(pid) for pid in guardians), timeout=30)  # it exits once it has acted
    assert "Traceback" not in err, err


def test_without_the_guardian_a_release_killed_between_the_links_leaves_a_sidecar_the_next_release_removes(
        material, tmp_path, strace):
    """The same moment with the guardian killed first: the marked sidecar stays (the residual), the
    check reports it, and the next release into the folder (to another name) removes it."""
    releases = _releases(material, tmp_path, "file", "parquet", size="small")
    before = entries(releases.folder)
    proc, release = _held_at_first_link(strace, releases)
    (guardian,) = children(release)
    os.kill(guardian, signal.SIGKILL)
    os.kill(release, signal.SIGKILL)
    collect(proc)
    state, problems = outcome(releases.folder, releases.out, releases.input, before, releases.tmpdir)
    assert state == "broken"
    assert problems == [f"{sidecar_of(releases.out)}: a sidecar without its table"]
    assert sidecar_of(releases.out).stat().st_mode & MARK
    other = releases.folder / "other.parquet"
    status, _, err = run_in_process([*releases.args[:releases.args.index("--out")], "--out", str(other)])
    assert status == 0, err
    assert entries(releases.folder) - before == {other.name, sidecar_of(other).name}


def test_the_guardian_killed_alone_after_both_links_changes_nothing_the_release_reports(material, tmp_path, strace):
    """The release held just after linking the table, its guardian killed: the pair is published, so
    the release must report success (it once said "Broken pipe; nothing was written")."""
    releases = _releases(material, tmp_path, "file", "csv", size="small")
    proc = releases.start((strace, "-o", "/dev/null", "-e", "trace=linkat",
                           "-e", "inject=linkat:delay_exit=1500000:when=2"))
    assert wait_until(lambda: releases.out.exists() or proc.poll() is not None, timeout=120)
    assert proc.poll() is None, collect(proc)[1]
    (release,) = [pid for pid in children(proc.pid) if children(pid)]
    (guardian,) = children(release)
    os.kill(guardian, signal.SIGKILL)
    _, err = collect(proc, out=releases.out)
    assert proc.returncode == 0 and "error" not in err, err
    record = json.loads(sidecar_of(releases.out).read_text())
    assert record["output"]["sha256"] == sha256_file(releases.out)
    assert not sidecar_of(releases.out).stat().st_mode & MARK  # the release cleared the mark itself


def test_overwrite_killed_between_removing_the_old_table_and_its_sidecar_leaves_a_pair_or_nothing(
        material, tmp_path, strace):
    """``--overwrite`` removes the old table, then the old sidecar, before committing: a SIGKILL
    between those two removals must not leave the old sidecar without its table."""
    releases = _releases(material, tmp_path, "size-one", "parquet", size="small")
    releases.full_run()
    pair = {releases.out.name, sidecar_of(releases.out).name}
    before = entries(releases.folder) - pair
    releases.args.append("--overwrite")
    proc = releases.start((strace, "-o", "/dev/null", "-P", str(releases.out), "-e", "trace=unlink,unlinkat",
                           "-e", "inject=unlink,unlinkat:delay_exit=1500000:when=1"))
    assert wait_until(lambda: not releases.out.exists() or proc.poll() is not None, timeout=120)
    if proc.poll() is None:  # held just after removing the old table: kill it there
        (release,) = children(proc.pid)
        os.kill(release, signal.SIGKILL)
    collect(proc, out=releases.out)  # (a release that never removes the old table first simply finishes)
    state, problems = outcome(releases.folder, releases.out, releases.input, before, releases.tmpdir)
    assert (state, problems) in (("pair", []), ("nothing", [])), problems


def test_a_release_killed_while_its_guardian_starts_prints_no_traceback(material, tmp_path, strace):
    """Killed once the guardian exists but before it said it is ready (strace holds the guardian
    for 1.5 s just after its exec; the release's own first exec is not held): nothing is named, and
    the guardian, finding nobody to tell, must exit quietly rather than print a traceback on the
    terminal the release was run from."""
    releases = _releases(material, tmp_path, "file", "csv", size="small")
    before = entries(releases.folder)
    for _attempt in range(3):  # a machine too loaded to see the held guardian in 1.5 s: try again
        proc = releases.start((strace, "-f", "-o", "/dev/null", "-e", "trace=execve",
                               "-e", "inject=execve:delay_exit=1500000"))
        release: list[int] = []

        def guardian_started(proc=proc, release=release) -> bool:
            if not release:
                release.extend(children(proc.pid))
            return proc.poll() is not None or bool(release and children(release[0]))

        assert wait_until(guardian_started, timeout=120)
        if proc.poll() is None:
            break
        collect(proc)
        releases.clear(before)
    else:
        pytest.fail("the release finished three times before its held guardian was seen")
    os.kill(release[0], signal.SIGKILL)
    _, err = collect(proc, out=releases.out)
    assert outcome(releases.folder, releases.out, releases.input, before, releases.tmpdir) == ("nothing", [])
    assert "Traceback" not in err and "Exception ignored" not in err, err


@pytest.mark.parametrize("link", [1, 2])
def test_an_interrupt_while_the_pair_is_named_finishes_the_release_and_records_it(material, tmp_path, strace, link):
    """SIGINT while strace holds a ``linkat`` of the commit on its way out: the sidecar's (1; the table is
    not named yet) or the table's (2; the pair is named).  Once naming has begun the release must finish and
    say so — the complete pair, its success line, the ledger entry committed, status 0, no traceback — and
    note the interrupt; it must never leave a table without its sidecar."""
    ledger = tmp_path / "b.ledger"
    assert run_in_process(["budget", "init", str(ledger), "--epsilon", "10"])[0] == 0
    releases = _releases(material, tmp_path, "file", "csv", size="small")
    before = entries(releases.folder)
    releases.args = [a for a in releases.args if a not in ("--seed", str(SEED))] + ["--budget", str(ledger)]
    proc = releases.start((strace, "-o", "/dev/null", "-e", "trace=linkat",
                           "-e", f"inject=linkat:delay_exit=1500000:when={link}"))
    named = sidecar_of(releases.out) if link == 1 else releases.out
    assert wait_until(lambda: named.exists() or proc.poll() is not None, timeout=120), "never named"
    assert proc.poll() is None, collect(proc)[1]
    (release,) = children(proc.pid)
    os.kill(release, signal.SIGINT)
    _, err = collect(proc, out=releases.out)
    assert proc.returncode == 0 and not [line for line in err.splitlines() if line and line[0] not in "#\r["], err
    assert f"wrote {SMALL_ROWS} rows to {releases.out}" in err and "# SIGINT arrived while the release" in err, err
    assert outcome(releases.folder, releases.out, releases.input, before, releases.tmpdir) == ("pair", [])
    assert [e["status"] for e in json.loads(ledger.read_text())["entries"]] == ["committed"]


# ------------------------------------------------------------------------------- a full disk
PAGE = os.sysconf("SC_PAGE_SIZE")
BUFFER = 1 << 20
"""Bytes a release buffers before writing to its unnamed table: a larger table meets a full disk mid-write."""


def _pages(size: int) -> int:
    return -(-size // PAGE)


@pytest.fixture
def tmpfs(tmp_path):
    """``mount(pages)``: a fresh tmpfs of exactly that many pages at one mount point (unmounted afterwards)."""
    point = tmp_path / "disk"
    point.mkdir()
    mounted = []

    def mount(pages: int) -> Path:
        if mounted:
            subprocess.run(["umount", str(point)], check=True)
            mounted.clear()
        mounted.append(mount_tmpfs(point, f"size={pages * PAGE},mode=0755"))
        return point

    yield mount
    if mounted:
        subprocess.run(["umount", str(point)], check=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_full_disk_leaves_nothing_and_names_the_output(material, tmp_path, tmpfs, fmt):
    """Releases into a tmpfs sized from a measured release: too small for half the table, for its
    last page, for its sidecar, and exactly large enough (which shows one page less is what fails).

    The releases run in this process, so the check that every page of the filesystem is free
    again shows the release closed its unnamed files itself, not merely that the kernel freed
    them when a process ended.
    """
    input_path = material["root"] / f"big.{fmt}"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    point = tmpfs(16384)
    out = point / f"noisy.{fmt}"
    argv = [*_arguments(material, "size-three", fmt, "big"), "--out", str(out), "--seed", str(SEED)]

    def release() -> tuple[int, str]:
        with environment_variable("TMPDIR", str(tmpdir)):
            status, _, err = run_in_process(argv)
        return status, err

    status, err = release()  # measured on a roomy disk, with the very arguments of the runs below
    assert status == 0, err
    reference = sha256_file(out)
    assert out.stat().st_size > BUFFER, "the table must outgrow the write buffer of the release"
    table, sidecar = _pages(out.stat().st_size), _pages(sidecar_of(out).stat().st_size)
    scenarios = [("the table does not fit (while it is written)", table // 2),
                 ("the table's last page does not fit (at its final flush)", table - 1),
                 ("the table fits, its sidecar does not", table + sidecar - 1), ("both fit exactly", table + sidecar)]
    print(f"\n{fmt}: table {table} pages, sidecar {sidecar} pages; " + ", ".join(f"{w}: {p}" for w, p in scenarios))
    for what, pages in scenarios:
        point = tmpfs(pages)
        status, err = release()
        state, problems = outcome(point, out, input_path, set(), tmpdir)
        assert problems == [], (what, problems)
        if what == "both fit exactly":
            assert status == 0 and state == "pair", (what, err)
            assert sha256_file(out) == reference
            continue
        assert status == 2, (what, err)
        assert one_line_error(err) == [], (what, err)
        (line,) = [line for line in err.splitlines() if line.startswith("countdp: error:")]
        # refused before anything is drawn (preflight: the free space against an estimate), or while written
        assert (line.startswith(f"countdp: error: {out}: ") and "No space left on device" in line) or (
            line.startswith(f"countdp: error: --out {out}: the folder {point} has ") and "needs about" in line), line
        assert state == "nothing" and entries(point) == set(), (what, entries(point))
        free = os.statvfs(point)
        assert free.f_bfree == free.f_blocks, f"{what}: {free.f_blocks - free.f_bfree} pages still held"


# ------------------------------------------------------------------- the checks can fail
def _complete_pair(material, tmp_path) -> tuple[Path, Path, Path, set[str], Path]:
    folder, tmpdir = tmp_path / "out", tmp_path / "tmp"
    folder.mkdir()
    tmpdir.mkdir()
    out, input_path = folder / "noisy.csv", material["root"] / "small.csv"
    before = entries(folder)
    status, _, err = run_in_process([*_arguments(material, "file", "csv", "small"), "--out", str(out)])
    assert status == 0, err
    assert outcome(folder, out, input_path, before, tmpdir) == ("pair", [])
    return folder, out, input_path, before, tmpdir


def test_the_check_reports_leftovers_lone_files_and_wrong_hashes(material, tmp_path):
    folder, out, input_path, before, tmpdir = _complete_pair(material, tmp_path)
    sidecar = sidecar_of(out)
    table_bytes, sidecar_text = out.read_bytes(), sidecar.read_text()

    def judged() -> tuple[str, list[str]]:
        return outcome(folder, out, input_path, before, tmpdir)

    partial = folder / f".{out.name}.countdp-partial-4242"
    partial.write_bytes(table_bytes[: len(table_bytes) // 2])
    assert judged() == ("broken", [f"{partial}: left in the output folder by the release"])
    partial.unlink()

    stray = tmpdir / "arrow-spill-0"
    stray.write_bytes(b"a,b\n1,2\n")
    assert judged() == ("broken", [f"{stray}: left in TMPDIR by the release"])
    stray.unlink()

    sidecar.unlink()
    assert judged() == ("broken", [f"{out}: a table without its sidecar"])
    sidecar.write_text(sidecar_text)

    out.write_bytes(table_bytes[:-1] + b"9")
    state, problems = judged()
    assert state == "broken" and len(problems) == 1 and "output.sha256" in problems[0], problems
    out.write_bytes(table_bytes[:-200])
    state, problems = judged()
    assert state == "broken" and "output.sha256" in problems[0] and "rows" in problems[-1], problems
    out.write_bytes(table_bytes)

    record = json.loads(sidecar_text)
    record["input"]["sha256"] = "0" * 64
    sidecar.write_text(json.dumps(record))
    state, problems = judged()
    assert state == "broken" and len(problems) == 1 and "input.sha256" in problems[0], problems
    sidecar.write_text(sidecar_text[: len(sidecar_text) // 2])
    state, problems = judged()
    assert state == "broken" and len(problems) == 1 and "not a complete sidecar" in problems[0], problems
    sidecar.write_text(sidecar_text)

    out.unlink()
    assert judged() == ("broken", [f"{sidecar}: a sidecar without its table"])
    out.write_bytes(table_bytes)
    assert judged() == ("pair", [])


def test_the_check_reports_a_released_copy_of_the_counts():
    truth = {"c": [3, 0, 12]}
    assert copies_of_counts({"noisy_c": [2, 0, 12], "id": ["a", "b", "c"]}, truth) == []
    for copy in (["3", "0", "12"], ["03", "0", "+12"], [3.0, 0.0, 12.0], [" 3", "0 ", "12"]):
        assert copies_of_counts({"kept": copy}, truth) == [
            "released column 'kept' equals the true count column 'c' on every row"], copy
    assert copies_of_counts({"kept": ["3", "0", None]}, truth) == []
    assert copies_of_counts({"kept": [True, False, 12]}, {"c": [1, 0, 12]}) == []


def test_the_check_reports_an_error_that_is_not_one_line():
    assert one_line_error("countdp: error: t.csv: row 2, column 'c': 'x' is not an integer count\n") == []
    assert one_line_error("# seeded generator\ncountdp: error: o.csv: No space left on device\n") == []
    assert one_line_error("Traceback (most recent call last):\n  File ...\nOSError: [Errno 28]\n") != []
    assert len(one_line_error("countdp: error: a\ncountdp: error: b\n")) == 1
    assert one_line_error("countdp: error: a\nException ignored in: <function>\n") != []
