"""Write the generated part of docs/performance.md from the output of selected benchmarks.

    .venv/bin/python benchmarks/performance_page.py                    # run them (minutes), save, write
    .venv/bin/python benchmarks/performance_page.py --only cli,sampling
    .venv/bin/python benchmarks/performance_page.py --from-saved       # rewrite from the saved output only

Each selected benchmark runs as its own process with the arguments of :data:`BENCHMARKS`; its
standard output is saved verbatim as ``docs/benchmarks/<name>.txt`` and, beside it,
``<name>.json`` records the command, the UTC date, the wall time, the exit status and the machine
(CPU, cores, memory, load average, Python and the solver packages' versions).  The page is then
rewritten between the two marker lines of ``docs/performance.md`` from every saved output: each
block a benchmark prints (``# caption`` lines, then a header and aligned rows) becomes a Markdown
table, its columns found where every line is blank.  The rest of the page (the recorded
measurements, written by hand and dated) is left as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "performance.md"
SAVED = REPO / "docs" / "benchmarks"
BEGIN = "<!-- performance_page.py: generated from here -->"
END = "<!-- performance_page.py: generated up to here -->"
PACKAGES = ("numpy", "scipy", "highspy", "clarabel", "cvxpy")
EMPTY_CELLS = {"", "nan", "nanx"}
"""A column whose every data cell is one of these (a comparison with an absent baseline) is dropped."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark on the page: its saved name, script, arguments, title and what it shows."""

    name: str
    script: str
    arguments: tuple[str, ...]
    title: str
    about: str


BENCHMARKS = (
    Benchmark("cli", "bench_cli.py", ("--runs", "7"), "Quick commands",
              "Wall time of `countdp` commands that need no LP, each a new process (Python start-up "
              "and imports included), beside `python -c pass` and `import numpy`."),
    Benchmark("large_n", "bench_large_n.py", ("--alphas", "0.91", "--ns", "64,128,256,512,1024",
                                              "--cvxpy-ns", "64,128"), "WM end to end",
              "`design_named(\"WM\", n, 0.91)` (WH+RM+CM+S, L0) in a fresh process per point: design, "
              "float certificate and exact integer weights; the optimality gap proven by the independent "
              "check; the plain cvxpy model at n = 64 and 128; then `countdp design WM --n 1024`."),
    Benchmark("sampling", "bench_sampling.py", ("--old-src", "/nonexistent"), "The exact sampler",
              "Throughput of `countdp.release` on integer weights (one thread), what the old float "
              "sampler and the integer weights each realize (computed exactly), the rounding's cost at "
              "n = 1024, and one count per call."),
)


def machine() -> dict:
    """The machine a benchmark ran on: CPU model, cores, memory, load, OS, Python, package versions."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    memory = next((int(line.split()[1]) * 1024 for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), None)
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": None if memory is None else round(memory / 2**30),
            "load_average": round(os.getloadavg()[0], 2), "os": platform.platform(),
            "python": platform.python_version(), "packages": versions}


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def run_benchmark(benchmark: Benchmark, saved: Path = SAVED) -> dict:
    """Run one benchmark, save its output and the record of the run; return the record."""
    command = [sys.executable, str(REPO / "benchmarks" / benchmark.script), *benchmark.arguments]
    record = {"name": benchmark.name, "command": " ".join(["python", f"benchmarks/{benchmark.script}",
                                                          *benchmark.arguments]),
              "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
              "machine": machine()}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    record.update(seconds=round(time.perf_counter() - start, 1), returncode=done.returncode,
                  load_average_after=round(os.getloadavg()[0], 2))
    if done.returncode != 0:
        raise SystemExit(f"performance_page: {benchmark.script} failed (exit {done.returncode}): "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    saved.mkdir(parents=True, exist_ok=True)
    (saved / f"{benchmark.name}.txt").write_text(done.stdout)
    (saved / f"{benchmark.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def blocks(text: str) -> list[tuple[list[str], list[str], list[str]]]:
    """The output's blocks, split at blank lines: ``(captions, lines, notes)``, the ``#`` lines
    before the block's first other line and after it."""
    found = []
    for chunk in re.split(r"\n\s*\n", text.strip("\n")):
        head: list[str] = []
        rows: list[str] = []
        notes: list[str] = []
        for line in chunk.splitlines():
            if line.lstrip().startswith("#"):
                (notes if rows else head).append(line.lstrip().lstrip("#").strip())
            elif line.strip():
                rows.append(line.rstrip())
        found.append((head, rows, notes))
    return found


def columns(lines: list[str]) -> list[tuple[int, int]]:
    """Column spans of fixed-width ``lines`` (the first a header): cut where every line is blank.

    A span whose data cells are all empty (a header's words above right-aligned numbers) joins the
    next span, and the last such run joins the span before it."""
    width = max(len(line) for line in lines)
    blank = [all(p >= len(line) or line[p] == " " for line in lines) for p in range(width)]
    spans, start = [], None
    for p, is_blank in enumerate([*blank, True]):
        if not is_blank and start is None:
            start = p
        elif is_blank and start is not None:
            spans.append((start, p))
            start = None
    merged: list[tuple[int, int]] = []
    pending = None
    for span in spans:
        if pending is not None:
            span = (pending, span[1])
            pending = None
        if all(not line[span[0]:span[1]].strip() for line in lines[1:]):
            pending = span[0]
            continue
        merged.append(span)
    if pending is not None and merged:
        merged[-1] = (merged[-1][0], width)
    return merged


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "").rstrip("x"))
    except ValueError:
        return False
    return True


def escape(text: str) -> str:
    """``text`` safe in a Markdown table cell or paragraph (no link, emphasis, tag or cell break)."""
    text = re.sub(r"([\\`*_\[\]|])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def markdown_table(lines: list[str]) -> str | None:
    """The fixed-width table ``lines`` as a Markdown table, or ``None`` when it is not one (a
    single line, a single column, or a header cell that is a number)."""
    if len(lines) < 2:
        return None
    spans = columns(lines)
    cells = [[line[a:b].strip() for a, b in spans] for line in lines]
    keep = [k for k in range(len(spans)) if not all(row[k].lower() in EMPTY_CELLS for row in cells[1:])]
    cells = [[row[k] for k in keep] for row in cells]
    if len(keep) < 2 or any(_is_number(cell) or not cell for cell in cells[0]):
        return None
    header, *rows = cells
    out = ["| " + " | ".join(escape(cell) for cell in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in rows]
    return "\n".join(out)


def section(benchmark: Benchmark, record: dict, output: str) -> str:
    """The page's part for one benchmark: title, what it shows, when and where, then its tables."""
    host = record["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in host["packages"].items())
    parts = [f"### {benchmark.title}", "", benchmark.about, "",
             f"Run on **{record['date'].replace('T', ' ').replace('Z', ' UTC')}**, "
             f"{host['cores']} cores ({escape(host['cpu'])}), {host['memory_gib']} GiB, load average "
             f"{host['load_average']} before and {record['load_average_after']} after; Python "
             f"{host['python']}, {versions}. `{record['command']}` took {record['seconds']:.0f} s "
             f"([raw output](benchmarks/{benchmark.name}.txt)).", ""]
    for captions, lines, notes in blocks(output):
        parts += [f"*{escape(caption)}*" for caption in captions] + ([""] if captions else [])
        if lines:
            table = markdown_table(lines)
            parts += [table if table is not None else "```\n" + "\n".join(lines) + "\n```", ""]
        parts += [f"*{escape(note)}*" for note in notes] + ([""] if notes else [])
    return "\n".join(parts).rstrip() + "\n"


def generated_part(selected: tuple[Benchmark, ...], saved: Path = SAVED) -> str:
    """Every selected benchmark's section, from its saved output and record."""
    sections = []
    for benchmark in selected:
        text, record = saved / f"{benchmark.name}.txt", saved / f"{benchmark.name}.json"
        if not (text.is_file() and record.is_file()):
            raise SystemExit(f"performance_page: no saved output for {benchmark.name} in {saved} "
                             "(run without --from-saved first)")
        sections.append(section(benchmark, json.loads(record.read_text()), text.read_text()))
    return "\n".join(sections)


def write_page(body: str, page: Path = PAGE) -> None:
    """Replace the text between the page's two marker lines with ``body``."""
    text = page.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise SystemExit(f"performance_page: {page} must hold the lines {BEGIN!r} and {END!r}, once each, in order")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    page.write_text(f"{head}{BEGIN}\n\n{body.strip()}\n\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated names to run: "
                        + ", ".join(b.name for b in BENCHMARKS) + " (default: all)")
    parser.add_argument("--from-saved", action="store_true", help="run nothing: rewrite the page from docs/benchmarks/")
    args = parser.parse_args(argv)
    names = [name for name in args.only.split(",") if name]
    unknown = sorted(set(names) - {b.name for b in BENCHMARKS})
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}")
    if not args.from_saved:
        for benchmark in BENCHMARKS:
            if not names or benchmark.name in names:
                print(f"running {benchmark.script} {' '.join(benchmark.arguments)}", flush=True)
                record = run_benchmark(benchmark)
                print(f"  {record['seconds']:.0f} s", flush=True)
    write_page(generated_part(BENCHMARKS))
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
