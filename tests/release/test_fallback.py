"""A release onto a filesystem without O_TMPFILE (NFS, many FUSE filesystems): the named fallback.

bindfs (Debian's FUSE mirror of a folder) refuses ``O_TMPFILE`` as NFS does, so a release there
writes ``.NAME.countdp-partial-PID`` files and renames them at commit.  A SIGKILL can then leave a
partial file — the weaker guarantee docs/release.md states — and the next release into that folder
removes it.  A partial file of a release still running is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from countdp.cli import main
from countdp.release.atomic import NAMED, remove_stale_partials
from tests.helpers.mounts import bindfs
from tests.helpers.release_checks import pair_problems, sidecar_of, wait_until


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


def test_a_killed_release_leaves_a_partial_file_that_the_next_release_removes(no_tmpfile, mechanism, tmp_path):
    table, out = tmp_path / "t.csv", no_tmpfile / "noisy.csv"
    _table(table, 400_000)
    argv = [sys.executable, "-m", "countdp.cli", "release", str(mechanism), "--input", str(table),
            "--count-column", "c", "--keep", "block", "--out", str(out)]
    proc = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    partial = no_tmpfile / f".noisy.csv.countdp-partial-{proc.pid}"
    assert wait_until(lambda: (partial.exists() and partial.stat().st_size > 0) or proc.poll() is not None, 120)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert partial.exists() and not out.exists()  # the fallback's weaker guarantee
    live = no_tmpfile / f".other.csv.countdp-partial-{os.getpid()}"
    live.write_text("a release still running")
    dead = {partial, no_tmpfile / f".noisy.csv.release.json.countdp-partial-{proc.pid}"}
    assert set(remove_stale_partials(no_tmpfile)) == dead  # the dead release's table and sidecar only
    assert live.exists()
    live.unlink()
    partial.touch()
    assert main(["release", str(mechanism), "--input", str(table), "--count-column", "c", "--keep", "block",
                 "--out", str(out)]) == 0
    assert not partial.exists() and pair_problems(out, table) == []
