"""workflow/lib/worker_pool.py: a job's call runs in another process (or in place), results and errors come back."""

from __future__ import annotations

import os

import pytest
import worker_pool


class Tagged(str):
    """A str subclass with state, like Snakemake's paths (pickling it would need its class)."""


def test_no_workers_runs_in_place():
    assert worker_pool.call(0, os.getpid) == os.getpid()


def test_workers_run_elsewhere_and_return_results():
    assert worker_pool.call(2, os.getpid) != os.getpid()
    assert worker_pool.call(1, os.getpid) != os.getpid()  # one core: still a worker (it can be stopped)
    assert worker_pool.call(2, divmod, 17, 5) == (3, 2)


def test_an_error_in_the_job_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="invalid literal"):
        worker_pool.call(2, int, "not a number")


def test_arguments_are_made_plain():
    value = worker_pool.plain([Tagged("a"), {"k": (Tagged("b"), 3)}])
    assert value == ["a", {"k": ["b", 3]}]
    assert type(value[0]) is str and type(value[1]["k"][0]) is str


PARENT = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
import worker_pool
def beat(folder):
    while True:
        with open(os.path.join(folder, str(os.getpid())), "a") as stream:
            stream.write("x")
        time.sleep(0.05)
if __name__ == "__main__":
    worker_pool.call(2, beat, sys.argv[2])
"""


def test_workers_end_when_their_parent_is_killed(tmp_path):
    """A real parent process running a job that writes forever is SIGKILLed, as Snakemake would be: no
    handler runs, yet the worker stops writing and ends within a few of its parent checks."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    lib, script, beats_folder = Path(worker_pool.__file__).parent, tmp_path / "parent.py", tmp_path / "beats"
    script.write_text(PARENT)  # a file: the spawned worker imports the job's function from it
    beats_folder.mkdir()
    parent = subprocess.Popen([sys.executable, str(script), str(lib), str(beats_folder)])
    deadline = time.monotonic() + 120
    while not list(beats_folder.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    beats = list(beats_folder.iterdir())
    assert len(beats) == 1, "the job never started in a worker"
    worker = int(beats[0].name)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10.0  # twenty of its parent checks
    while time.monotonic() < deadline and os.path.exists(f"/proc/{worker}"):
        try:
            with open(f"/proc/{worker}/stat") as stream:
                if stream.read().split(")")[-1].split()[0] == "Z":
                    break  # a zombie: ended, waiting to be reaped by its new parent
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        if os.path.exists(f"/proc/{worker}"):
            os.kill(worker, signal.SIGKILL)
            raise AssertionError(f"worker {worker} still running 10 s after its parent died")
    size = beats[0].stat().st_size
    time.sleep(0.5)
    assert beats[0].stat().st_size == size  # it writes no more
