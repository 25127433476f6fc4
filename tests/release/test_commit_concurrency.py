"""Concurrent releases to one ``--out``: exactly one matching pair, never a mixed one.

Four ``countdp release`` processes (real ones, different seeds, so different tables) start
together toward one ``--out``, each under ``strace`` holding every link for 0.3 s, which widens
the commit window far beyond its natural microseconds.  On a filesystem with ``O_TMPFILE`` and on
one without it (bindfs, as NFS: the named fallback):

* without ``--overwrite``, exactly one release succeeds and its pair matches (the sidecar's
  ``output.sha256`` is the table's SHA-256); every other fails with one ``already exists`` error
  and leaves nothing behind;
* with ``--overwrite``, all succeed, in whatever order the folder's lock lets them commit, and the
  pair left is one release's table beside that same release's sidecar.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from countdp.cli import main
from tests.release.test_commit_deaths import judge, strace  # noqa: F401  (a fixture)
from tests.release.test_fallback import no_tmpfile  # noqa: F401  (a fixture)

RELEASES = 4
WIDENED = "delay_exit=300000"


@pytest.fixture()
def inputs(tmp_path):
    mechanism, table = tmp_path / "gm.json", tmp_path / "t.csv"
    assert main(["design", "GM", "--n", "6", "--alpha", "1/2", "--out", str(mechanism)]) == 0
    counts = np.random.default_rng(0).integers(0, 7, 3000)
    table.write_text("block,c\n" + "".join(f"b{k},{c}\n" for k, c in enumerate(counts)))
    return mechanism, table


@pytest.fixture(params=["unnamed", "named"])
def folder(request, tmp_path):
    """An output folder with ``O_TMPFILE`` (a plain folder) or without it (bindfs)."""
    if request.param == "named":
        return request.getfixturevalue("no_tmpfile")
    path = tmp_path / "out"
    path.mkdir()
    return path


def _race(tracer: str, inputs, out, overwrite: bool) -> list[subprocess.CompletedProcess]:
    mechanism, table = inputs
    procs = [subprocess.Popen(
        [tracer, "-o", "/dev/null", "-e", "trace=link,linkat", "-e", f"inject=link,linkat:{WIDENED}",
         sys.executable, "-m", "countdp.cli", "release", str(mechanism), "--input", str(table),
         "--count-column", "c", "--keep", "block", "--out", str(out), "--seed", str(seed),
         *(["--overwrite"] if overwrite else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for seed in range(RELEASES)]
    return [subprocess.CompletedProcess(p.args, p.wait(timeout=300), *p.communicate()) for p in procs]


def test_concurrent_releases_without_overwrite_leave_one_matching_pair(strace, inputs, folder):  # noqa: F811
    out = folder / "noisy.csv"
    done = _race(strace, inputs, out, overwrite=False)
    assert judge(folder, out) == ("pair", [])
    assert [d.returncode for d in done].count(0) == 1, [d.stderr for d in done]
    for failed in (d for d in done if d.returncode != 0):
        errors = [line for line in failed.stderr.splitlines() if line.startswith("countdp: error:")]
        assert len(errors) == 1 and "already exists" in errors[0] and "Traceback" not in failed.stderr, failed.stderr


def test_concurrent_overwrites_leave_a_matching_pair(strace, inputs, folder):  # noqa: F811
    out = folder / "noisy.csv"
    done = _race(strace, inputs, out, overwrite=True)
    failed = "\n".join(d.stderr for d in done if d.returncode)  # a string: pytest shows it whole
    assert [d.returncode for d in done] == [0] * RELEASES, failed
    assert judge(folder, out) == ("pair", [])
