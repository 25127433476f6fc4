"""The commit survives any single death: the release, its guardian, or both, SIGKILLed at each step.

A small driver process commits a table and a sidecar (whose ``output.sha256`` is the table's) with
the production :class:`~countdp.release.atomic.AtomicPair`.  ``strace`` holds it (``delay_exit``)
at each step of the commit — the guardian starting, the folder's lock just taken, the sidecar's
link done, the table's link done, and for ``--overwrite`` the old table just removed — and the
test SIGKILLs the release alone, the guardian alone, or both, then judges the folder from its
files alone.  A single death must leave the complete pair or nothing, and the release's report
must match the folder.  Both dead inside the commit window leaves a marked sidecar without its
table, the stated residual, which the next release into that folder removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from countdp.release.atomic import MARK, repair
from tests.helpers.release_checks import (
    alive,
    children,
    mentioning,
    sha256_file,
    sidecar_of,
    traceable_strace,
    wait_until,
)

HOLD = 2_000_000
"""Microseconds strace holds the release at the step (long enough to kill from here, short enough to wait out)."""

DRIVER = r"""
import hashlib, json, sys
from pathlib import Path
from countdp.release.atomic import AtomicPair
out, rows, replace = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "replace"
body = ("i\n" + "".join(f"{k}\n" for k in range(rows))).encode()
try:
    with AtomicPair(out, out.with_name(out.name + ".release.json"), replace=replace) as pair:
        pair.table.stream.write(body)
        record = {"output": {"path": str(out), "sha256": hashlib.sha256(body).hexdigest()}, "input": {"rows": rows}}
        pair.sidecar.stream.write(json.dumps(record).encode())
        pair.commit()
except OSError as exc:
    print(f"countdp: error: {out}: {exc.strerror or exc}", file=sys.stderr)
    sys.exit(2)
print(pair.method)
"""


def driver(out: Path, rows: int, replace: bool = False) -> list[str]:
    return [sys.executable, "-c", DRIVER, str(out), str(rows), "replace" if replace else "new"]


def judge(folder: Path, out: Path) -> tuple[str, list[str]]:
    """``("pair" | "nothing" | "broken", problems)`` from the folder's files alone: exactly ``out`` and
    its sidecar, the sidecar naming ``out`` with the table's SHA-256 and row count, or an empty folder."""
    sidecar = sidecar_of(out)
    names = {p.name for p in folder.iterdir()}
    problems = [f"{folder / n}: left in the folder" for n in sorted(names - {out.name, sidecar.name})]
    if names & {out.name, sidecar.name} == {sidecar.name}:
        problems.append(f"{sidecar}: a sidecar without its table")
    elif names & {out.name, sidecar.name} == {out.name}:
        problems.append(f"{out}: a table without its sidecar")
    elif out.name in names:
        record = json.loads(sidecar.read_text())
        if record["output"]["sha256"] != sha256_file(out) or record["output"]["path"] != str(out):
            problems.append(f"{sidecar}: does not describe {out}")
        if record["input"]["rows"] != len(out.read_bytes().splitlines()) - 1:
            problems.append(f"{out}: not the rows its sidecar states")
    if problems:
        return "broken", problems
    return ("pair" if out.name in names else "nothing"), []


@pytest.fixture(scope="session")
def strace() -> str:
    return traceable_strace()


def _folder_locked_by(pid: int, folder: Path) -> bool:
    inode = str(folder.stat().st_ino)
    with open("/proc/locks") as stream:
        return any(f[1] == "FLOCK" and f[4] == str(pid) and f[5].split(":")[-1] == inode
                   for f in (line.split() for line in stream))


def _step(step: str, folder: Path, out: Path) -> tuple[list[str], object]:
    """strace's arguments holding the release at ``step``, and how to see (given the release's pid) it is held."""
    held = f"delay_exit={HOLD}"
    if step == "guardian starting":  # every exec is held: the guardian's, just after it began
        return ["-f", "-e", "trace=execve", "-e", f"inject=execve:{held}"], lambda pid: bool(children(pid))
    if step == "locked":  # the first flock of the folder is the next release's repair, the second the commit's
        return (["-P", str(folder), "-e", "trace=flock", "-e", f"inject=flock:{held}:when=2"],
                lambda pid: bool(children(pid)) and _folder_locked_by(pid, folder))
    if step == "old table removed":
        return (["-P", str(out), "-e", "trace=unlink,unlinkat", "-e", f"inject=unlink,unlinkat:{held}:when=1"],
                lambda pid: not out.exists())
    when, name = (1, sidecar_of(out)) if step == "sidecar linked" else (2, out)
    return ["-e", "trace=linkat", "-e", f"inject=linkat:{held}:when={when}"], lambda pid: name.exists()


def _kill_at(strace: str, step: str, who: str, folder: Path, out: Path, rows: int, replace: bool = False):
    """Run the driver under strace, held at ``step``; SIGKILL ``who``; return (status, stderr) once all ended."""
    args, is_held = _step(step, folder, out)
    proc = subprocess.Popen([strace, "-o", "/dev/null", *args, *driver(out, rows, replace)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    release: list[int] = []

    def held() -> bool:  # strace's first children probe ptrace: the release is the one naming ``out``
        release[:] = [pid for pid in mentioning(str(out)) if pid in children(proc.pid)]
        return proc.poll() is not None or bool(release and is_held(release[0]))

    assert wait_until(held, timeout=60), f"{step}: never seen"
    assert proc.poll() is None, proc.communicate()
    guardians = children(release[0])
    assert len(guardians) == 1, guardians
    for pid in ([release[0]] if who in ("release", "both") else []) + (guardians if who != "release" else []):
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert wait_until(lambda: not alive(guardians[0]), timeout=30), "the guardian outlived the commit"
    status = proc.returncode  # strace exits with its tracee's status (128 + 9 when it was killed)
    return status, err


EXPECTED = {
    ("guardian starting", "release"): "nothing", ("guardian starting", "guardian"): "nothing",
    ("guardian starting", "both"): "nothing",
    ("locked", "release"): "nothing", ("locked", "guardian"): "nothing", ("locked", "both"): "nothing",
    ("sidecar linked", "release"): "pair", ("sidecar linked", "guardian"): "pair",
    ("sidecar linked", "both"): "residual",
    ("table linked", "release"): "pair", ("table linked", "guardian"): "pair", ("table linked", "both"): "pair",
}


@pytest.mark.parametrize(("step", "who"), list(EXPECTED))
def test_any_single_death_at_any_step_leaves_the_pair_or_nothing(strace, tmp_path, step, who):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "noisy.csv"
    status, err = _kill_at(strace, step, who, folder, out, rows=500)
    expected = EXPECTED[step, who]
    state, problems = judge(folder, out)
    assert "Traceback" not in err, err
    if expected == "residual":  # both dead between the links: a marked sidecar, then repaired by the next release
        assert problems == [f"{sidecar_of(out)}: a sidecar without its table"]
        assert sidecar_of(out).stat().st_mode & MARK
        other = folder / "other.csv"
        assert subprocess.run(driver(other, 7), capture_output=True).returncode == 0
        assert {p.name for p in folder.iterdir()} == {other.name, sidecar_of(other).name}
        return
    assert (state, problems) == (expected, []), err
    if who == "guardian":  # the release itself ran to its end: what it says must be what the folder holds
        if expected == "pair":
            assert status == 0 and "error" not in err, err
        else:
            assert status == 2 and err.count("countdp: error:") == 1, err
    if expected == "pair":
        repair(folder)  # a mark left by a kill after the table's link is cleared; the pair is untouched
        assert not sidecar_of(out).stat().st_mode & MARK and judge(folder, out) == ("pair", [])


@pytest.mark.parametrize("who", ["release", "guardian", "both"])
def test_overwrite_killed_after_removing_the_old_table_leaves_a_pair_nothing_or_a_repairable_sidecar(
        strace, tmp_path, who):
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "noisy.csv"
    assert subprocess.run(driver(out, 3), capture_output=True).returncode == 0
    status, err = _kill_at(strace, "old table removed", who, folder, out, rows=500, replace=True)
    state, problems = judge(folder, out)
    if who == "guardian":  # the release finishes alone
        assert (state, problems, status) == ("pair", [], 0), err
        assert json.loads(sidecar_of(out).read_text())["input"]["rows"] == 500
    elif who == "release":  # the guardian removes the old sidecar the release marked
        assert (state, problems) == ("nothing", [])
    else:
        assert problems == [f"{sidecar_of(out)}: a sidecar without its table"]
        assert sidecar_of(out).stat().st_mode & MARK
        assert repair(folder) == [sidecar_of(out)] and judge(folder, out) == ("nothing", [])


def test_repair_removes_only_marked_sidecars_without_their_table(tmp_path):
    """Planted states: a marked lone sidecar goes; an unmarked one (the user's) and other files stay;
    a mark beside its table is cleared."""
    lone, kept, paired, table, other = (tmp_path / n for n in (
        "a.csv.release.json", "b.csv.release.json", "c.csv.release.json", "c.csv", "d.txt"))
    for path in (lone, kept, paired, table, other):
        path.write_text("{}")
    for path in (lone, paired, other):
        os.chmod(path, 0o644 | MARK)
    assert repair(tmp_path) == [lone]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.csv.release.json", "c.csv", "c.csv.release.json", "d.txt"]
    assert stat.S_IMODE(paired.stat().st_mode) == 0o644 and other.stat().st_mode & MARK


def test_the_judge_reports_broken_states(tmp_path):
    out = tmp_path / "noisy.csv"
    assert judge(tmp_path, out) == ("nothing", [])
    body = b"i\n0\n1\n"
    record = {"output": {"path": str(out), "sha256": hashlib.sha256(body).hexdigest()}, "input": {"rows": 2}}
    sidecar_of(out).write_text(json.dumps(record))
    assert judge(tmp_path, out)[0] == "broken"
    out.write_bytes(body)
    assert judge(tmp_path, out) == ("pair", [])
    out.write_bytes(b"i\n0\n")
    assert judge(tmp_path, out)[0] == "broken"
