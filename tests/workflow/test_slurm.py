"""The SLURM profile on a real (single-node) SLURM cluster.

``cluster/local-slurm.sh up`` installs Debian's slurm-wlm and munge if they are absent, starts
munged, slurmctld and slurmd for one node (localhost, 127.0.0.1) and waits until it is idle;
``down`` stops the daemons it started, by their pid files.  In a copy of the repository the
quick config then runs with ``--executor slurm --workflow-profile profiles/slurm``, and:

- every table under results/tables is byte-identical to the local quick run (``quick_results``);
- the jobs reached SLURM grouped: the number of sbatch submissions slurmctld accepted equals
  the number Snakemake reports, and is a handful, against the ~150 jobs of the workflow.

Skipped only where the machine cannot host SLURM: not root, or SLURM absent and no apt-get.
Bounded in time: bring-up 60 s, the run 1500 s (``timeout -k``: Snakemake ignores SIGTERM while
jobs run).  Deselect with ``-m "not slurm"``.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE, copy_workflow

SCRIPT = REPO / "cluster" / "local-slurm.sh"
LOCK = Path("/tmp/countdp-slurm.lock")  # one test cluster per machine at a time
RUN_TIMEOUT = 1500

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]


def _cannot_host_slurm() -> str | None:
    if os.geteuid() != 0:
        return "needs root to start munged, slurmctld and slurmd"
    have_slurm = all(shutil.which(t) or Path("/usr/sbin", t).exists() for t in ("slurmctld", "slurmd", "munged"))
    if not have_slurm and not shutil.which("apt-get"):
        return "SLURM is not installed and apt-get is unavailable to install it"
    return None


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    reason = _cannot_host_slurm()
    if reason:
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("slurm")
    with LOCK.open("w") as lock:
        deadline = time.monotonic() + 600
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, f"another test cluster held {LOCK} for 10 minutes"
                time.sleep(1)
        start = time.monotonic()
        up = subprocess.run([str(SCRIPT), "up", str(state)], capture_output=True, text=True, timeout=900)
        bring_up = time.monotonic() - start
        try:
            assert up.returncode == 0, up.stdout + up.stderr
            yield {"state": state, "bring_up_s": bring_up}
        finally:
            down = subprocess.run([str(SCRIPT), "down", str(state)], capture_output=True, text=True, timeout=120)
            assert down.returncode == 0, down.stdout + down.stderr
            for name in ("slurmctld.pid", "slurmd.pid", "munged.pid"):
                assert not (state / name).exists(), f"{name} left behind"


@pytest.fixture(scope="module")
def slurm_run(slurm_cluster, tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("slurm-run") / "repo")
    # --cores bounds the CPUs of a group job; 1 lets the node run as many group jobs as it has CPUs
    # (the plugin runs a group's jobs one after another).  More than the node has would pend forever.
    cores = "1"
    command = ["timeout", "-k", "10", str(RUN_TIMEOUT), str(SNAKEMAKE), "--executor", "slurm",
               "--workflow-profile", "profiles/slurm", "--configfile", "config/quick.yaml", "--cores", cores,
               "--slurm-status-command", "squeue",  # no slurmdbd, so no sacct
               "--default-resources", "slurm_account=countdp-test", "slurm_partition=debug", "mem_mb=2000",
               "runtime=30"]  # replaces the profile's list, so mem_mb and runtime are repeated
    start = time.monotonic()
    done = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=RUN_TIMEOUT + 60)
    seconds = time.monotonic() - start
    text = done.stdout + done.stderr
    (slurm_cluster["state"] / "snakemake.log").write_text(text)
    assert done.returncode == 0, f"rc={done.returncode} after {seconds:.0f} s\n{text[-5000:]}"
    count = subprocess.run([str(SCRIPT), "submissions", str(slurm_cluster["state"])], capture_output=True,
                           text=True, timeout=30)
    print(f"SLURM bring-up {slurm_cluster['bring_up_s']:.1f} s, quick run {seconds:.0f} s, "
          f"{count.stdout.strip()} sbatch submissions")
    return {"work": work, "log": text, "seconds": seconds, "submissions": int(count.stdout.strip())}


def test_tables_equal_the_local_run(slurm_run, quick_results):
    local = sorted(p.relative_to(quick_results) for p in (quick_results / "results/tables").rglob("*.csv"))
    remote = sorted(p.relative_to(slurm_run["work"]) for p in (slurm_run["work"] / "results/tables").rglob("*.csv"))
    assert len(local) > 20 and remote == local
    differ = [str(p) for p in local if (quick_results / p).read_bytes() != (slurm_run["work"] / p).read_bytes()]
    assert not differ, differ


def test_jobs_reach_slurm_grouped(slurm_run):
    log = slurm_run["log"]
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) "
                           r"\(log: \S*/slurm_logs/(group|rule)_([a-z0-9]+)", log)
    jobs = re.search(r"^total\s+(\d+)$", log, flags=re.M)
    assert jobs and int(jobs.group(1)) >= 60, log[-3000:]
    # slurmctld's own count of accepted batch jobs equals what Snakemake submitted
    assert slurm_run["submissions"] == len({jobid for jobid, _, _ in submitted}) == len(submitted)
    # a few group jobs per group, never one submission per rule: only the Adult data and the
    # claims (each a single job feeding or reading several groups) go alone
    alone = {name for _, kind, name in submitted if kind == "rule"}
    groups = {name for _, kind, name in submitted if kind == "group"}
    assert alone <= {"adult", "claims"}, alone
    assert {"designs", "evaluations", "intrinsic", "extrinsic", "extensions", "companions"} == groups, groups
    assert 5 <= slurm_run["submissions"] <= int(jobs.group(1)) // 5, (slurm_run["submissions"], jobs.group(1))
