"""Per-job wall times of one Snakemake run, read from its ``.snakemake/log/*.log``.

Snakemake logs, for every job, a ``[timestamp]`` line before ``rule NAME:`` (or ``localrule``)
with its ``input:``/``output:`` files and ``jobid:``, and a ``[timestamp]`` line before
``Finished jobid: N``.  Timestamps have one-second resolution, so a job's time is
``finish - start`` rounded to whole seconds (a sub-second job counts 0 s).

From that this module reports, per rule family (the ~200 design sweeps grouped by kind):

* ``job_s``: total job-seconds (the CPU budget a family consumes, one core per job);
* ``share_s``: its share of the wall clock: every second of the run is split evenly among the
  jobs running in it (the shares add up to the run's wall time);
* ``critical_s``: its time on the critical path: the longest chain of jobs through the
  dependency graph (an output of one job is an input of the next), weighted by job time.

    python benchmarks/snakemake_log_times.py .snakemake/log/2026-...snakemake.log
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\S+):$")
_FIELD = re.compile(r"^\s+(input|output|jobid): (.*)$")
_FINISHED = re.compile(r"^Finished jobid: (\d+)")
CLOSED_FORMS = ("GM", "EM", "UM")


@dataclass
class Job:
    rule: str
    start: float
    end: float = float("nan")
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.end - self.start


def family(rule: str) -> str:
    """A rule's family: design sweeps grouped by kind (closed form, named LP, property LP)."""
    match = re.fullmatch(r"design_(GM|EM|UM|WM|WH|LP)_.*", rule)
    if not match:
        return rule
    kind = match[1]
    return "design (GM/EM/UM)" if kind in CLOSED_FORMS else ("design (LP-*)" if kind == "LP" else "design (WM/WH)")


def parse_jobs(text: str) -> dict[int, Job]:
    """``{jobid: Job}`` of every job that started and finished in the log."""
    jobs: dict[int, Job] = {}
    stamp = 0.0
    current: Job | None = None
    for line in text.splitlines():
        if m := _STAMP.match(line):
            stamp = datetime.strptime(" ".join(m[1].split()), "%a %b %d %H:%M:%S %Y").timestamp()
            current = None
        elif m := _RULE.match(line):
            current = Job(m[1], stamp)
        elif current is not None and (m := _FIELD.match(line)):
            if m[1] == "jobid":
                jobs[int(m[2])] = current
            else:
                getattr(current, m[1] + "s").extend(p.strip() for p in m[2].split(", "))
        elif m := _FINISHED.match(line):
            if int(m[1]) in jobs:
                jobs[int(m[1])].end = stamp
    return {jobid: job for jobid, job in jobs.items() if job.end == job.end}


def critical_path(jobs: dict[int, Job]) -> list[int]:
    """Job ids of the longest chain of dependent jobs (by job time), in run order."""
    producer = {path: jobid for jobid, job in jobs.items() for path in job.outputs}
    best: dict[int, tuple[float, int | None]] = {}
    for jobid in sorted(jobs, key=lambda j: jobs[j].end):  # a job's inputs finish before it starts
        parents = {producer[p] for p in jobs[jobid].inputs if p in producer and producer[p] != jobid}
        length, parent = max(((best[p][0], p) for p in parents if p in best), default=(0.0, None))
        best[jobid] = (length + jobs[jobid].seconds, parent)
    chain, node = [], max(best, key=lambda j: best[j][0]) if best else None
    while node is not None:
        chain.append(node)
        node = best[node][1]
    return chain[::-1]


def wall_shares(jobs: dict[int, Job]) -> dict[int, float]:
    """Each job's share of the wall clock: every second split evenly among the jobs running in it."""
    events = sorted({t for job in jobs.values() for t in (job.start, job.end)})
    share = defaultdict(float)
    for t0, t1 in zip(events, events[1:], strict=False):
        running = [j for j, job in jobs.items() if job.start <= t0 and job.end >= t1]
        for j in running:
            share[j] += (t1 - t0) / len(running)
    return share


def rule_table(jobs: dict[int, Job]) -> list[tuple[str, int, float, float, float]]:
    """Rows ``(family, jobs, job_s, share_s, critical_s)``, largest ``job_s`` first."""
    shares, on_path = wall_shares(jobs), set(critical_path(jobs))
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for jobid, job in jobs.items():
        row = rows[family(job.rule)]
        row[0] += 1
        row[1] += job.seconds
        row[2] += shares[jobid]
        row[3] += job.seconds if jobid in on_path else 0.0
    return sorted(((name, int(r[0]), r[1], r[2], r[3]) for name, r in rows.items()), key=lambda r: (-r[2], r[0]))


def format_table(jobs: dict[int, Job], top: int = 15) -> str:
    """The rule table as text, with the run's span and the critical path's length."""
    rows = rule_table(jobs)
    span = max(j.end for j in jobs.values()) - min(j.start for j in jobs.values()) if jobs else 0.0
    path = critical_path(jobs)
    lines = [f"{'rule family':<34} {'jobs':>5} {'job_s':>7} {'share_s':>8} {'critical_s':>10}"]
    lines += [f"{name:<34} {n:>5} {js:>7.0f} {sh:>8.1f} {cr:>10.0f}" for name, n, js, sh, cr in rows[:top]]
    total = sum(r[2] for r in rows)
    lines.append(f"{'(all ' + str(len(rows)) + ' families)':<34} {len(jobs):>5} {total:>7.0f} {span:>8.1f} "
                 f"{sum(jobs[j].seconds for j in path):>10.0f}")
    lines.append("critical path: " + " -> ".join(f"{jobs[j].rule} ({jobs[j].seconds:.0f}s)" for j in path))
    return "\n".join(lines)


def latest_log(workdir: str | Path) -> Path:
    logs = sorted((Path(workdir) / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"{workdir}: no .snakemake/log/*.snakemake.log")
    return logs[-1]


if __name__ == "__main__":
    log = Path(sys.argv[1]) if len(sys.argv) > 1 else latest_log(".")
    print(format_table(parse_jobs(log.read_text())))
