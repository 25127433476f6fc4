"""workflow/lib/job_process.py against the installed Snakemake, in a one-rule workflow.

A Snakemake started for one job (``--mode remote``, as each job of a SLURM group job is) runs a
`run:` job in a thread of its own process once :func:`run_jobs_in_threads` was called while the
workflow was parsed; a plain run (no profile, so no ``--force-use-threads``) still spawns a
Snakemake for it, which shows the probe can tell the two apart.  After
:func:`drop_job_rate_limiter` the job's Snakemake has no rate limiter and no scheduler timer left
to wait for at exit.  Both reach into Snakemake's internals; where an upgrade moved them they
change nothing and cluster runs only get slower, so these tests say so instead.
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import REPO, SNAKEMAKE

SNAKEFILE = """
import os, sys, threading
sys.path.insert(0, {lib!r})
import job_process

if workflow.remote_exec:
    job_process.run_jobs_in_threads()


rule probe:
    output:
        "probe.txt",
    run:
        job_process.drop_job_rate_limiter(workflow.scheduler)
        timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer) and not t.finished.is_set()]
        with open(output[0], "w") as out:
            print(os.getpid(), workflow.scheduler.job_rate_limiter is None, len(timers), file=out)
"""


@pytest.mark.parametrize(("mode", "in_place"), [("remote", True), ("default", False)])
def test_a_jobs_snakemake_runs_it_in_place_and_keeps_no_timer(tmp_path, mode, in_place):
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(lib=str(REPO / "workflow" / "lib")))
    command = [str(SNAKEMAKE), "--cores", "1", "--workflow-profile", "none", "--mode", mode, "probe.txt"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    pid, dropped, timers = (tmp_path / "probe.txt").read_text().split()
    assert (int(pid) == proc.pid) == in_place, (pid, proc.pid)
    assert (dropped, timers) == ("True", "0")
