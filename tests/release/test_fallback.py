"""A release onto a filesystem without O_TMPFILE (NFS, many FUSE filesystems): the named fallback.

bindfs (Debian's FUSE mirror of a folder) refuses ``O_TMPFILE`` as NFS does, so a release there
writes ``.NAME.countdp-partial-TOKEN`` files (TOKEN random, each file locked by the release) and
renames them at commit.  A SIGKILL can then leave a partial file — the weaker guarantee
docs/release.md states — and the next release into that folder removes it.  A partial file whose
lock is held (a release still running, also in another PID namespace) is left alone, and a name
whose partial files would not fit the folder's NAME_MAX is refused before the budget is debited.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from countdp.cli import main
from countdp.release.atomic import NAMED, remove_stale_partials
from tests.helpers.mounts import bindfs
from tests.helpers.release_checks import (
    dead_partials,
    held_lock,
    locked,
    pair_problems,
    partials,
    pid_namespace,
    run_on,
    sidecar_of,
    stopped_at_first_fsync,
    wait_until,
)
from tests.release.test_commit_deaths import strace  # noqa: F401  (a fixture)


@pytest.fixture()
def no_tmpfile(tmp_path):
    """A bindfs mount of a fresh folder; skips where FUSE or bindfs cannot be had (root and apt-get needed)."""
    with bindfs(tmp_path / "source", tmp_path / "mount") as mount:
        with pytest.raises(OSError):  # the point of the fixture: this filesystem has no unnamed files
            os.close(os.open(mount, os.O_TMPFILE | os.O_RDWR, 0o600))
        yield mount


@pytest.fixture()
def mechanism(tmp_path):
    path = tmp_path / "gm.json"
    assert main(["design", "GM", "--n", "6", "--alpha", "1/2", "--out", str(path)]) == 0
    return path


def _table(path, rows: int) -> None:
    counts = np.random.default_rng(0).integers(0, 7, rows)
    path.write_text("block,c\n" + "".join(f"b{k},{c}\n" for k, c in enumerate(counts)))


def test_a_release_without_tmpfile_commits_by_rename_and_says_so(no_tmpfile, mechanism, tmp_path):
    table, out = tmp_path / "t.csv", no_tmpfile / "noisy.csv"
    _table(table, 100)
    assert main(["release", str(mechanism), "--input", str(table), "--count-column", "c", "--keep", "block",
                 "--out", str(out)]) == 0
    assert pair_problems(out, table) == []
    assert json.loads(sidecar_of(out).read_text())["commit"] == NAMED
    assert sorted(p.name for p in no_tmpfile.iterdir()) == ["noisy.csv", "noisy.csv.release.json"]


def _argv(mechanism: Path, table: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "countdp.cli", "release", str(mechanism), "--input", str(table),
            "--count-column", "c", "--keep", "block", "--out", str(out), *extra]


def test_a_killed_release_leaves_partial_files_that_the_next_release_removes(no_tmpfile, mechanism, tmp_path):
    """The running release holds a lock on each partial file; once it is SIGKILLed, its two partial files
    (randomly named) are unlocked and the next release removes exactly those: not a partial another
    process holds, nor a PID-named leftover of an earlier version."""
    table, out = tmp_path / "t.csv", no_tmpfile / "noisy.csv"
    _table(table, 400_000)
    proc = subprocess.Popen(_argv(mechanism, table, out), stderr=subprocess.DEVNULL)
    found: list[Path] = []

    def writing() -> bool:
        found[:] = [p for p in partials(no_tmpfile, out.name) if p.exists() and p.stat().st_size > 0]
        return bool(found) or proc.poll() is not None

    assert wait_until(writing, 120) and proc.poll() is None
    assert locked(found[0])  # the running release's
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = partials(no_tmpfile)
    assert found[0] in left and not out.exists()  # the fallback's weaker guarantee
    assert {p.name.rsplit(".countdp-partial-", 1)[0] for p in left} == {".noisy.csv", ".noisy.csv.release.json"}
    live = no_tmpfile / f".other.csv.countdp-partial-{'ab' * 16}"
    old = no_tmpfile / f".other.csv.countdp-partial-{proc.pid}"
    live.write_text("a release still running")
    old.write_text("what an earlier version left")
    with held_lock(live):
        assert dead_partials(no_tmpfile) == left
        assert sorted(remove_stale_partials(no_tmpfile)) == left  # the dead release's table and sidecar only
    assert live.exists() and old.exists()
    live.unlink()
    old.unlink()
    assert main(_argv(mechanism, table, out)[3:]) == 0
    assert pair_problems(out, table) == [] and partials(no_tmpfile) == []


def test_cleanup_from_another_pid_namespace_leaves_a_running_releases_partial_files(
        no_tmpfile, mechanism, tmp_path, strace):  # noqa: F811
    """A release running as process 4243 of its PID namespace, stopped as its commit begins (its first fsync:
    stopped_at_first_fsync), and another release into the same folder from a fresh namespace, where no process
    4243 exists: the second's cleanup must leave the first's partial files (their locks are held), and once the
    first goes on (run_on), both publish their own pair.  The first cannot end before the second has, whatever
    the load."""
    namespaced, fresh = pid_namespace(4241), pid_namespace()
    if namespaced is None or fresh is None:
        pytest.skip("unshare -p -f --mount-proc is needed (root)")
    table = tmp_path / "t.csv"
    _table(table, 5_000)
    argv = [*namespaced, *stopped_at_first_fsync(strace), *_argv(mechanism, table, no_tmpfile / "a.csv")]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert wait_until(lambda: _partial_seen(no_tmpfile, "a.csv") or first.poll() is not None, 120)
        second = subprocess.run([*fresh, *_argv(mechanism, table, no_tmpfile / "b.csv")], capture_output=True,
                                text=True, timeout=300)
        assert second.returncode == 0, second.stderr
        assert first.poll() is None and _partial_seen(no_tmpfile, "a.csv"), "the running release's partial files went"
        status, err = run_on(first)
    finally:  # a failed assertion must not leave it running (or stopped) on the mount
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert status == 0 and "Traceback" not in err, err
    assert pair_problems(no_tmpfile / "a.csv", table) == [] and pair_problems(no_tmpfile / "b.csv", table) == []
    assert sorted(p.name for p in no_tmpfile.iterdir()) == ["a.csv", "a.csv.release.json", "b.csv",
                                                             "b.csv.release.json"]


def test_a_name_too_long_for_its_partial_files_is_refused_before_the_debit(no_tmpfile, mechanism, tmp_path, capsys):
    """OUT's name and its sidecar's fit NAME_MAX, the sidecar's partial file (63 bytes longer than OUT) does
    not: refused in one line naming OUT, by a dry run too, before the debit; the longest name that fits works."""
    table, ledger = tmp_path / "t.csv", tmp_path / "b.ledger"
    _table(table, 100)
    assert main(["budget", "init", str(ledger), "--epsilon", "10"]) == 0
    before = ledger.read_text()
    limit = os.pathconf(no_tmpfile, "PC_NAME_MAX")
    out = no_tmpfile / ("n" * (limit - 30 - 4) + ".csv")
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert main(_argv(mechanism, table, out, "--budget", str(ledger), *extra)[3:]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"--out {out}: " in err and f"at most {limit - 63} bytes" in err, err
    assert ledger.read_text() == before and list(no_tmpfile.iterdir()) == []
    fits = no_tmpfile / ("n" * (limit - 63 - 4) + ".csv")
    assert main(_argv(mechanism, table, fits)[3:]) == 0 and pair_problems(fits, table) == []


def _partial_seen(folder: Path, name: str) -> bool:
    """Whether a partial file of a release to ``folder / name`` is there (whatever follows ``.countdp-partial-``)."""
    return any(path.name.startswith(f".{name}.countdp-partial-") for path in folder.iterdir())
