"""Reading and running the fenced code blocks of README.md and the docs pages.

A page's blocks are found with their line (the opening fence's, 1-based), their language and the
HTML comment just above them, if it is an example marker:

* ``<!-- example: not run (REASON) -->``: the block is shown, not run (counted under REASON);
* ``<!-- example: file NAME -->``: the block is a file the page's later blocks read, written to
  NAME in the page's folder.

Every block gets exactly one :class:`Plan` from :func:`classify`, and a block it cannot classify
raises :class:`Unclassified`: nothing is skipped without a rule that says why. The runners
(:func:`run_python`, :func:`run_shell`) are the ones the tests use on the pages, so the tests that
feed them broken blocks show that a broken example fails.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

COUNTDP = Path(sys.executable).with_name("countdp")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!-- example: (?P<what>.+?) -->\s*$")
NOT_RUN_MARKER = re.compile(r"^not run \((?P<reason>.+)\)$")
FILE_MARKER = re.compile(r"^file (?P<name>[\w.-]+)$")
SHELLS = ("bash", "sh", "shell", "console")
TEXT = {
    "text": "not a program: output, a diagram or a usage line",
    "bibtex": "not a program: a citation",
    "": "not a program: an unlabelled block of output, a diagram or a file tree",
}
NOT_RUN = (
    ("python3 -m venv", "sets up a virtual environment and installs the package (a package index, minutes)"),
    (".venv/bin/pip ", "installs packages (a package index)"),
    (".venv/bin/snakemake", "runs the Snakemake pipeline, a dry run of it or a SLURM run (tests/workflow runs it)"),
    (".venv/bin/python -m pytest", "runs the test suite, this test included"),
    (".venv/bin/mkdocs", "builds or serves the docs site (tests/docs/test_site.py builds it)"),
    (".venv/bin/python benchmarks/", "runs benchmarks for minutes and rewrites docs/performance.md"),
)
"""Shell commands shown but not run, by prefix, with the reason reported for them."""
LOOKS_LIKE_CODE = re.compile(r"^(\$ |>>> |countdp |import |from \w+ import )", re.M)
"""A line an unlabelled block must not hold: it would be an example that nobody runs (a block
labelled ``text`` says so explicitly, e.g. a usage line)."""
EXIT_STATUS = re.compile(r"#.*\bexit status (\d+)")
OFFLINE_ENV = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
               "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "",
               "MPLBACKEND": "Agg"}
"""The commands' environment: every HTTP request goes to a closed local port (the examples run
offline), and plots need no display."""


class Unclassified(ValueError):
    """A block that no rule classifies: the test fails on it rather than skip it silently."""


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its text and the example marker above it."""

    page: str
    line: int
    language: str
    body: str
    marker: str = ""

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Plan:
    """What is done with a block: ``kind`` is python, shell, file, text or not-run; ``rule`` says why."""

    kind: str
    rule: str


def blocks_of(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown page, in order (indented fences included, dedented)."""
    lines, found, i = text.splitlines(), [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = re.compile(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:
            raise Unclassified(f"{page}:{i + 1}: a fence that is never closed")
        body = "".join(line[len(indent):] + "\n" if line.startswith(indent) else line.lstrip() + "\n"
                       for line in lines[i + 1:end])
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(above)
        language = opening["info"].strip().split(" ")[0].lower()
        found.append(Block(page, i + 1, language, body, marker["what"] if marker else ""))
        i = end + 1
    return found


def shell_steps(block: Block) -> list[tuple[str, list[str], int]]:
    """(command, the output lines a console block shows after it, the exit status expected) per command.

    Continuation lines are joined, comments dropped and ``a && b`` split in two; the status is 0
    unless a comment on the command's line says "exit status N".
    """
    steps: list[tuple[str, list[str], int]] = []
    for line in block.body.replace("\\\n", " ").splitlines():
        if block.language == "console" and not line.startswith("$ "):
            if not steps:
                raise Unclassified(f"{block.name}: output before the first `$ ` command")
            steps[-1][1].append(line)
            continue
        words = shlex.split(line[2:] if block.language == "console" else line, comments=True)
        status = int(match[1]) if (match := EXIT_STATUS.search(line)) else 0
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            steps.append((shlex.join(words[:cut]), [], status))
            words = words[cut + 1:]
    return steps


def shell_commands(block: Block) -> list[str]:
    return [command for command, _, _ in shell_steps(block)]


def classify(block: Block) -> Plan:
    """The one rule that applies to ``block``; :class:`Unclassified` if none does."""
    if block.marker:
        not_run, file = NOT_RUN_MARKER.match(block.marker), FILE_MARKER.match(block.marker)
        if not_run:
            return Plan("not-run", f"marked not run: {not_run['reason']}")
        if file:
            return Plan("file", f"a file the page's commands read: {file['name']}")
        raise Unclassified(f"{block.name}: unknown example marker {block.marker!r}")
    if block.language == "python":
        return Plan("python", "run")
    if block.language == "yaml":
        return Plan("text", "a configuration fragment: parsed, not run")
    if block.language in TEXT:
        code = LOOKS_LIKE_CODE.search(block.body) if not block.language else None
        if code:
            raise Unclassified(f"{block.name}: a {block.language or 'unlabelled'} block holds a command or code "
                               f"({code.group(0)!r}): label it (python, console, bash) or mark it not run")
        return Plan("text", TEXT[block.language])
    if block.language in SHELLS:
        return _classify_shell(block)
    raise Unclassified(f"{block.name}: no rule for a block in {block.language!r}")


def _classify_shell(block: Block) -> Plan:
    commands = shell_commands(block)
    if not commands:
        raise Unclassified(f"{block.name}: a shell block without a command")
    rules = [_not_run_rule(command) for command in commands]
    if all(command.startswith("countdp ") for command in commands):
        return Plan("shell", "run")
    if all(rules):
        return Plan("not-run", rules[0])
    strays = [c for c, r in zip(commands, rules, strict=True) if not r and not c.startswith("countdp ")]
    raise Unclassified(f"{block.name}: no rule runs or skips {strays or commands} (a countdp command is run, "
                       f"and a block mixing it with commands that are not run is refused)")


def _not_run_rule(command: str) -> str:
    return next((reason for prefix, reason in NOT_RUN if command.startswith(prefix)), "")


def run_python(block: Block, namespace: dict, folder: Path) -> None:
    """Execute a Python block in ``namespace`` with ``folder`` as working directory.

    The source is compiled under the page's name with its lines in place, so a traceback names
    the page and the line of the page that failed.
    """
    code = compile("\n" * block.line + block.body, block.page, "exec")
    before = Path.cwd()
    os.chdir(folder)
    try:
        exec(code, namespace)
    finally:
        os.chdir(before)


def run_shell(block: Block, folder: Path, outputs: dict, timeout: float = 300) -> None:
    """Run the ``countdp`` commands of a block in ``folder``; a console block's shown output is checked.

    Each command must exit with status 0, or the status a comment on its line gives ("exit status
    2"). A console transcript's output lines are compared with what the command printed on
    standard output, as doctest compares them (``...`` stands for any text). ``outputs`` receives
    each command's standard output, by the command as written.
    """
    for command, lines, status in shell_steps(block):
        shown = "\n".join(lines).strip("\n") + "\n" if "".join(lines).strip() else ""
        argv = [str(COUNTDP), *shlex.split(command)[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=folder,
                              env={**os.environ, **OFFLINE_ENV})
        if done.returncode != status:
            raise AssertionError(f"{block.name}: `{command}` exited with status {done.returncode}, not {status}:\n"
                                 f"{done.stderr[-2000:]}")
        checker = doctest.OutputChecker()
        if block.language == "console" and not checker.check_output(shown, done.stdout, doctest.ELLIPSIS):
            raise AssertionError(f"{block.name}: `{command}` printed\n{done.stdout}\nwhere the page shows\n{shown}")
        outputs[command] = done.stdout


def check_text(block: Block) -> None:
    """A YAML fragment must parse; other text blocks were checked to hold no code by :func:`classify`."""
    if block.language == "yaml":
        yaml.safe_load(block.body)


def file_name(block: Block) -> str:
    return FILE_MARKER.match(block.marker)["name"]


def imports_of(block: Block) -> str:
    """The import statements of a Python block, to check that a block that is not run names real things."""
    return "\n".join(line for line in block.body.splitlines() if re.match(r"(import |from \S+ import )", line))
