"""Design sweeps resume: a design saved by the same code version, solver setting and exact alpha is
reused, anything else is designed again; a real ``snakemake`` stopped by SIGTERM exits at once and
keeps every design it finished.

- in-process (:func:`countdp.studies.sweeps.design_sweep`): a second sweep with one more n designs
  only that n and leaves the other files untouched (same inode, same bytes); another code version,
  solver setting or exact alpha (same float), a corrupt npz or a JSON of another design is
  designed again, each with its reason in the log;
- each design's line reaches the progress stream as it is saved, not at the end;
- a ``snakemake`` process given SIGTERM (to its own pid only) while its sweep is in a design that
  takes tens of seconds exits within seconds, leaves no process behind, and the next run
  reuses every design the stopped one finished.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import SNAKEMAKE, copy_workflow

from countdp.services.loader import load_certified
from countdp.studies.sweeps import design_sweep

NS = [3, 5, 8]
ALPHA = "0.6666666666666666"  # 2/3 as the config gives it; the decimal itself is another exact alpha


def _paths(root: Path, ns, alpha: str = ALPHA) -> list[Path]:
    return [root / f"n={n}" / f"alpha={alpha}.json" for n in ns]


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def _identity(path: Path) -> tuple:
    """What a rewrite changes even when the bytes are the same: the inode (atomic rename) and the
    modification time, with the bytes of the JSON and its npz."""
    npz = path.with_suffix(".npz")
    return (path.stat().st_ino, path.stat().st_mtime_ns, npz.stat().st_ino, path.read_bytes(), npz.read_bytes())


def _sweep(root: Path, ns, log: str = "log", **options) -> list[str]:
    """The sweep's log: one line per design, then the totals."""
    options = {"solver": "HIGHS/auto", "alpha_exact": "2/3", "code_version": "v1", **options}
    design_sweep("WM", "L0", ALPHA, ns, options.pop("solver"), _paths(root, ns), root / log, **options)
    return _lines(root / log)


def _reused(lines: list[str]) -> list[bool]:
    return [line.endswith("reused (same code version, solver and alpha; verified)", 0, line.rfind(" time="))
            for line in lines[:-1]]


def test_one_more_n_designs_only_that_n(tmp_path):
    first = _sweep(tmp_path, NS)
    assert len(first) == len(NS) + 1 and _reused(first) == [False] * len(NS)
    before = {n: _identity(p) for n, p in zip(NS, _paths(tmp_path, NS), strict=True)}
    second = _sweep(tmp_path, [*NS, 13], "log2")
    assert _reused(second) == [True, True, True, False]
    assert second[-1].startswith(f"sweep WM L0 alpha={ALPHA}: 4 designs, 1 designed, 3 reused, time=")
    assert {n: _identity(p) for n, p in zip(NS, _paths(tmp_path, NS), strict=True)} == before
    record = load_certified(_paths(tmp_path, [13])[0])
    assert record["extra"]["made_by"] == {"code_version": "v1", "solver": "HIGHS/auto"}


@pytest.mark.parametrize(("change", "reason"), [
    ({"code_version": "v2"}, "made by {'code_version': 'v1'"),
    ({"solver": "HIGHS/simplex/plain"}, "made by {'code_version': 'v1', 'solver': 'HIGHS/auto'}"),
    ({"alpha_exact": None}, "another design"),  # 2/3 and the decimal 0.666...6: one float, one path
])
def test_another_stamp_or_exact_alpha_is_designed_again(tmp_path, change, reason):
    _sweep(tmp_path, NS)
    again = _sweep(tmp_path, NS, "log2", **change)
    assert _reused(again) == [False] * len(NS)
    assert all(f"(designed again: {reason}" in line for line in again[:-1]), again
    assert again[-1].startswith(f"sweep WM L0 alpha={ALPHA}: 3 designs, 3 designed, 0 reused")


def test_a_damaged_or_foreign_file_is_designed_again(tmp_path):
    _sweep(tmp_path, NS)
    three, five, eight = _paths(tmp_path, NS)
    npz = five.with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0xFF
    npz.write_bytes(bytes(data))
    record = json.loads(eight.read_text())
    record["n"] = 7  # another design's JSON under this name
    eight.write_text(json.dumps(record))
    again = _sweep(tmp_path, NS, "log2")
    assert _reused(again) == [True, False, False]
    assert "designed again: not usable" in again[1] and "SHA-256 differs" in again[1]
    assert "designed again: not usable" in again[2]  # its n disagrees with its arrays: the loader refuses
    assert load_certified(five)["n"] == 5 and load_certified(eight)["n"] == 8


def test_without_a_code_version_nothing_is_reused_or_stamped(tmp_path):
    _sweep(tmp_path, NS, code_version=None)
    again = _sweep(tmp_path, NS, "log2", code_version=None)
    assert _reused(again) == [False] * len(NS)
    assert "made_by" not in load_certified(_paths(tmp_path, NS)[0]).get("extra", {})


class Witness(io.StringIO):
    """A progress stream that records, as each line arrives, which of the watched design files exist."""

    def __init__(self, watched: list[Path]):
        super().__init__()
        self.watched = watched
        self.saved: list[list[bool]] = []

    def write(self, text: str) -> int:
        for _ in range(text.count("\n")):
            self.saved.append([path.exists() for path in self.watched])
        return super().write(text)


def test_each_line_is_written_as_its_design_is_saved(tmp_path):
    ns = [3, 40]  # n = 40 is designed after n = 3: its file cannot exist when n = 3's line is written
    paths = _paths(tmp_path, ns)
    stream = Witness(paths)
    began = time.perf_counter()
    design_sweep("WM", "L0", ALPHA, ns, "HIGHS/auto", paths, tmp_path / "log", "2/3", "v1", stream)
    lines = stream.getvalue().splitlines()
    assert lines == _lines(tmp_path / "log") and len(lines) == 3
    first_saved = paths[0].stat().st_mtime_ns / 1e9
    second_saved = paths[1].stat().st_mtime_ns / 1e9
    # what the files on disk were as each line arrived: no timing margin, so no machine is too fast for it
    assert stream.saved[0] == [True, False], "the first line waited for the second design"
    assert stream.saved[1] == [True, True] and stream.saved[2] == [True, True]
    assert first_saved <= second_saved
    # the recorded time of each design covers its whole work: the lines' times add up to the sweep's
    times = [float(line.rsplit(" time=", 1)[1].split("s")[0]) for line in lines]
    total = time.perf_counter() - began
    rounding = 0.002  # each time is printed to the millisecond
    assert sum(times[:2]) <= times[2] + rounding and times[2] <= total + rounding
    assert times[2] - sum(times[:2]) < 0.05 + 0.05 * times[2]


# ---------------------------------------------------------------- a real snakemake, a real SIGTERM
SWEEP = "results/mechanisms/WM/L0/alpha=0.875.sweep.json"  # 7/8: no other study of quick.yaml reads it
LOG = "results/logs/design/WM/L0/alpha=0.875.log"
SMALL = list(range(2, 9))
SLOW_N = 160  # the plain simplex of WM at 7/8: about 50 s, far longer than the stop may take


def _config(work: Path, ns: list[int]) -> str:
    """quick.yaml with Figure 9 at 7/8 only, over ``ns``, solved by the plain simplex."""
    config = yaml.safe_load((work / "config/quick.yaml").read_text())
    config["solver"] = {"name": "HIGHS", "plain": True}
    config["fig09"].update(alpha=["7/8"], n=ns, convergence_check={"alpha": "7/8", "n": ns[0]})
    path = work / f"sweep-{len(ns)}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return str(path)


def _group_ended(group: int, seconds: float) -> bool:
    """Whether every process of the process group ``group`` has ended within ``seconds`` (the
    multiprocessing helpers of the stopped run notice its end within a moment)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def _wait_for(predicate, proc, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert proc.poll() is None, f"snakemake ended (rc={proc.returncode}) too early"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.workflow
def test_sigterm_stops_a_sweep_at_once_and_the_next_run_reuses_its_designs(tmp_path):
    work = copy_workflow(tmp_path / "repo")
    small = SMALL
    configfile = _config(work, [*small, SLOW_N])
    err = (tmp_path / "stderr").open("w")
    proc = subprocess.Popen([str(SNAKEMAKE), SWEEP, "--cores", "1", "--configfile", configfile], cwd=work,
                            stdout=err, stderr=subprocess.STDOUT, start_new_session=True)
    log = work / LOG
    try:
        # every small design's line is on the console and in the log before the sweep ends
        _wait_for(lambda: log.is_file() and len(_lines(log)) >= len(small), proc, 120)
        time.sleep(1.0)  # well inside the slow design
        assert sum(f"n={n} " in (tmp_path / "stderr").read_text() for n in small) == len(small)
        signalled = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)  # snakemake alone, as `kill` or a scheduler sends it
        proc.wait(timeout=60)
        stopped = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = (tmp_path / "stderr").read_text()
    assert stopped < 10, f"snakemake took {stopped:.1f} s to stop:\n{text[-3000:]}"
    assert proc.returncode != 0 and "stopped by a signal" in text, text[-3000:]
    assert _group_ended(proc.pid, 5), "a process of the run (the worker of the slow design?) is still running"
    assert not (work / SWEEP).exists()
    finished = sorted(work.glob("results/mechanisms/WM/L0/n=*/alpha=0.875.json"))
    assert len(finished) == len(small) and f"n={SLOW_N}" not in str(finished)
    before = {p: _identity(p) for p in finished}
    # the next run (without the slow n: its n set changed, so the sweep runs) designs nothing again
    again = subprocess.run([str(SNAKEMAKE), SWEEP, "--cores", "1", "--configfile", _config(work, small)], cwd=work,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _lines(log)[-1].startswith(f"sweep WM L0 alpha=0.875: {len(small)} designs, 0 designed, "
                                      f"{len(small)} reused")
    assert {p: _identity(p) for p in finished} == before
