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
