"""Resumable runs: a killed workflow completes on the next start and equals an uninterrupted run.

``quick_results_resumed`` (tests/conftest.py) starts the quick workflow in a temporary copy,
kills it (SIGINT, then SIGKILL of the process group) once a few mechanism artifacts exist,
starts it again and kills that run hard (SIGKILL), then runs ``snakemake --unlock`` and
starts it a third time (the profile's ``rerun-incomplete`` reruns jobs that were cut short);
``quick_results`` is the uninterrupted run.  The atomic writer that
makes a half-written file impossible (countdp.services.artifact.atomic_path) is tested directly too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import stray_temp_files, without_timing

from countdp.services.artifact import atomic_path, write_text_atomic


def _files(root: Path) -> dict[str, bytes]:
    results = root / "results"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in results.rglob("*") if p.is_file()}


@pytest.mark.workflow
def test_killed_run_resumes_to_completion(quick_results_resumed):
    run = quick_results_resumed
    work = run["path"]
    total = sum(1 for _ in (work / "results" / "mechanisms").rglob("*.json"))
    first, second = run["killed_at"]
    assert 10 <= first < second < total, f"both kills should land part-way: {run['killed_at']} of {total}"
    assert run["locked"], "the hard kill should have left Snakemake's lock (removed with --unlock)"
    text = run["resumed"].stdout + run["resumed"].stderr
    assert "Finished job" in text  # the second start had work left, and did it
    assert (work / "results/tables/claims.csv").stat().st_size > 0
    # the planted stray temporary (and any the kill left) was removed by the workflow's onstart
    assert "temporary file(s) left by an interrupted run" in text
    assert not stray_temp_files(work), f"temporary files left under results/: {stray_temp_files(work)}"
    incomplete = work / ".snakemake" / "incomplete"
    assert not incomplete.is_dir() or not any(p.is_file() for p in incomplete.rglob("*"))


@pytest.mark.workflow
def test_resumed_run_equals_uninterrupted_run(quick_results, quick_results_resumed):
    """Same files; every table and data file byte-identical; artifacts equal except timing fields."""
    full, resumed = _files(quick_results), _files(quick_results_resumed["path"])
    outputs = {n for n in full if not n.startswith("results/logs/")}
    assert outputs == {n for n in resumed if not n.startswith("results/logs/")}
    differ = []
    for name in sorted(outputs):
        if name.endswith((".csv", ".md")):  # tables carry no timings: byte for byte
            same = full[name] == resumed[name]
            same = full[name] == resumed[name]
        elif name.endswith(".json"):  # artifacts and the data sidecar, timing fields cut out
            same = without_timing(json.loads(full[name])) == without_timing(json.loads(resumed[name]))
        else:  # figures (PDF/PNG/HTML embed creation dates and renderer details)
            continue
        if not same:
            differ.append(name)
    assert not differ, f"the resumed run differs from the uninterrupted one: {differ[:10]}"


# ------------------------------------------------------------------------- atomic writer
class Boom(RuntimeError):
    pass


def test_atomic_write_that_raises_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "table.csv"
    with pytest.raises(Boom):
        with atomic_path(target) as tmp:
            tmp.write_text("half a ta")
            raise Boom
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_write_that_raises_keeps_the_previous_file(tmp_path):
    target = tmp_path / "artifact.json"
    write_text_atomic(target, '{"ok": 1}\n')
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text('{"ok": ')
            raise KeyboardInterrupt  # what SIGINT raises in the writing thread
    assert target.read_text() == '{"ok": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["artifact.json"]


def test_atomic_write_publishes_only_complete_content(tmp_path):
    target = tmp_path / "t.csv"
    with atomic_path(target) as tmp:
        tmp.write_text("a,b\n")
        assert not target.exists()  # nothing under the final name until the block ends
        assert tmp.parent == target.parent and tmp.name.startswith(".t.csv.")
    assert target.read_text() == "a,b\n"
    assert stray_temp_files(tmp_path) == []
