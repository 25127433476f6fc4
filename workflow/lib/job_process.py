"""A Snakemake started for one job (a cluster job's, or a `run:` job's subprocess): run the job in it,
and let it exit as soon as the job is done.

On a cluster, every job runs in a Snakemake of its own (``--mode remote``).  Inside a SLURM group
job (profiles/slurm) the executor plugin runs the group's jobs one after another, each through
``srun`` and a fresh Snakemake; unlike an ungrouped job's, that Snakemake is not given
``--force-use-threads``, so for a `run:` job it would spawn one more Snakemake (``--mode
subprocess``) to run the block: two Snakemake starts (imports, parsing the workflow, building the
DAG) for a job that may take milliseconds.  :func:`run_jobs_in_threads` makes such a Snakemake
run the block in a thread of its own, as the plugin's ungrouped jobs do: it runs one job at a
time, so nothing is lost to the interpreter lock.

Each Snakemake also waits at exit for the one-second timer its job rate limiter
(``--max-jobs-per-timespan``) arms after every scheduling round; a Snakemake that runs one job has
nothing to throttle.  :func:`drop_job_rate_limiter` switches the limiter off and cancels the
pending timers (the job's end starts the next round by itself).

Both reach into Snakemake's internals (the local executor's ``use_threads``, the scheduler's
``job_rate_limiter``); where those are not found, nothing changes and the job runs as before.
"""

from __future__ import annotations

import threading


def run_jobs_in_threads() -> bool:
    """Make Snakemake's local executor run `run:` jobs in threads (as ``--force-use-threads``) in this
    process; True if it could.  Only for a Snakemake started for a job (``--mode remote``): a local
    run's jobs are threads already (profiles/default), and a run's subprocesses are started by the
    local executor with the flag."""
    try:
        from snakemake.executors.local import Executor
    except ImportError:
        return False
    post_init = getattr(Executor, "__post_init__", None)
    if post_init is None or getattr(post_init, "threads_for_run_jobs", False):
        return post_init is not None

    def threads_post_init(self, *args, **kwargs):
        post_init(self, *args, **kwargs)
        self.use_threads = True

    threads_post_init.threads_for_run_jobs = True
    Executor.__post_init__ = threads_post_init
    return True


def drop_job_rate_limiter(scheduler: object) -> None:
    """Switch off ``scheduler``'s job rate limiter (Snakemake's JobScheduler) and cancel the timers its
    methods armed, so that this Snakemake exits when its job is done instead of up to a second later."""
    if getattr(scheduler, "job_rate_limiter", None) is None:
        return
    scheduler.job_rate_limiter = None
    armed_by = type(scheduler).__qualname__ + "."
    for thread in threading.enumerate():
        function = getattr(thread, "function", None)
        if isinstance(thread, threading.Timer) and getattr(function, "__qualname__", "").startswith(armed_by):
            thread.cancel()
