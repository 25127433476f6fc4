"""The code blocks of README.md and every docs page run as they are written.

Each fenced block is one test, named ``page:line``. A page's Python blocks run in order in one
namespace and its ``countdp`` commands through the venv's entry point, all in one temporary folder
per page, offline; what a page states about their results is checked (:data:`FACTS`) and a
console transcript's output is compared with what the command prints. Commands that install
things, run the pipeline or build the site are not run, each by a rule of
``tests.helpers.doc_examples.NOT_RUN`` that the skip reason names, so ``-ra`` counts them by rule;
a block no rule classifies fails. :func:`test_the_examples_are_counted` prints what ran per page.
"""

from __future__ import annotations

import csv
import io
import json
import re
import socket
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import countdp
from tests.helpers.doc_examples import (
    Block,
    Unclassified,
    blocks_of,
    check_text,
    classify,
    file_name,
    imports_of,
    run_python,
    run_shell,
)

REPO = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md") if "_ext" not in p.parts)]
BLOCKS = [block for page in PAGES for block in blocks_of((REPO / page).read_text(), page)]
RUNNABLE = ("python", "shell", "file")

_WM = ("from fractions import Fraction\nchecks = countdp.check_all(wm.matrix)\n"
       "assert (wm.status, wm.alpha_exact) == ('optimal', Fraction(91, 100))\n"
       "assert all(checks[p].holds for p in ('WH', 'RM', 'CM', 'S')) and set(checks) == set(countdp.PROPERTIES)\n"
       "assert wm.released.certificate.holds and (wm.released.weights.sum(axis=0) == 2 ** 62).all()\n"
       "assert all(countdp.check_all(lp.matrix)[p].holds for p in ('CH', 'RM'))\n"
       "assert noisy.shape == (3,) and ((0 <= noisy) & (noisy <= 8)).all()\n")
_M = ("assert Path('m.json').is_file() and Path('m.npz').is_file()\n"
      "report = outputs['countdp check m.json']\n"
      "assert re.search(r'^  WH  yes', report, re.M) and re.search(r'^  CM  yes', report, re.M)\n"
      "assert 'alpha = 31/50: certified exactly' in report\n"
      "noisy = outputs['countdp release m.json 3 0 5'].split()\n"
      "assert len(noisy) == 3 and all(0 <= int(v) <= 5 for v in noisy)\n")
_NOISY = ("header = Path('noisy.csv').read_text().splitlines()[0].split(',')\n"
          "assert Path('noisy.csv.release.json').is_file() and 'group' in header\n"
          "assert not {'young', 'male'} & set(header), 'a true count was published'\n")
FACTS: dict[str, list[tuple[str, str]]] = {
    "README.md": [
        ("wm.status, wm.alpha_exact", _WM + "assert em.status == 'optimal' and em.released.certificate.holds\n"),
        ("--out m.json", _M + _NOISY),
    ],
    "docs/index.md": [
        ("wm.status, wm.alpha_exact", _WM + "assert wm.released.weights.dtype == np.int64\n"
         "assert wm.extra['optimality']['certified'] and gm.released.certificate.holds\n"),
        ("--format csv", "P = np.loadtxt(io.StringIO(outputs['countdp design EM --n 7 --alpha 0.9 --format csv']), "
         "delimiter=',')\nassert P.shape == (8, 8) and np.allclose(P.sum(axis=0), 1)\n"
         "em = json.loads(outputs['countdp design EM --n 20 --epsilon 0.5'])\n"
         "assert Fraction(em['alpha_exact']) == countdp.alpha_from_epsilon(0.5)\n"
         "assert em['extra']['epsilon_guaranteed'] <= 0.5\n"
         + _M +
         "true, kept, levels = (list(csv.DictReader(Path(f).read_text().splitlines()))\n"
         "                      for f in ('groups.csv', 'congenial.csv', 'levels.csv'))\n"
         "assert sum(int(r['noisy_c']) for r in kept) == sum(int(r['c']) for r in true), 'the total is kept'\n"
         "assert [c for c in levels[0] if c.startswith('noisy_c')] == [f'noisy_c_level{i}' for i in (1, 2, 3)]\n"
         "assert re.search(r'spent +epsilon 0.2\\b', outputs['countdp budget show adult.ledger'])\n"),
    ],
    "docs/release.md": [
        ("--dry-run", "assert re.search(r'spent +epsilon 0.3\\b', outputs['countdp budget show adult.ledger'])\n"
         + _NOISY),
    ],
    "docs/congenial.md": [
        ("ConditionalTableSampler(x", "p = sampler.probability(gm.GM_RELEASE.ravel())\n"
         "assert isinstance(p, Fraction) and 0 < p < 1 and tables.shape[0] == 10_000\n"),
        ("gm_section3_study(", "from countdp.studies.checks import CHECK_COLUMNS\n"
         "assert all(Path(f'fig{i}.png').stat().st_size > 0 for i in (1, 2, 3))\n"
         "assert list(results['checks'].columns) == list(CHECK_COLUMNS)\n"),
    ],
    "docs/invariants.md": [
        ("GroupTotalSampler(mechanisms", "y, x, parts = np.array(noisy), np.array(counts), np.array(labels)\n"
         "assert all(y[parts == p].sum() == x[parts == p].sum() for p in set(labels))\n"
         "assert ((0 <= y) & (y <= np.array(sizes))).all() and sampler.total == sum(counts)\n"
         "assert guarantee.ratio <= Fraction(10, 9) ** 4 and exact.ratio <= guarantee.ratio\n"
         "assert choice.guarantee.alpha >= Fraction(9, 10)\n"),
    ],
}
"""What the pages say of their examples' results, checked after the block holding the anchor text.

Each check reads the page's namespace (and ``outputs``: each command's standard output) without
changing it, with ``Fraction``, ``Path``, ``np``, ``io``, ``json``, ``csv``, ``re`` and ``countdp`` at hand.
"""


class PageRun:
    """One page's namespace, folder and results: a block runs after the page's earlier blocks."""

    def __init__(self, page: str, folder: Path) -> None:
        self.page, self.folder, self.outputs = page, folder, {}
        self.namespace: dict = {"__name__": "__docs_example__"}
        self.results: dict[int, str] = {}  # line -> "" (it ran) or the error

    def run(self, block: Block) -> None:
        for earlier in (b for b in BLOCKS if b.page == self.page and b.line < block.line):
            if earlier.line not in self.results and _kind(earlier) in RUNNABLE:
                self._attempt(earlier)
            if self.results.get(earlier.line):
                pytest.fail(f"{block.name} comes after {earlier.name}, which failed: {self.results[earlier.line]}")
        self._attempt(block)
        if self.results[block.line]:
            raise self._error

    def _attempt(self, block: Block) -> None:
        try:
            kind = classify(block).kind
            if kind == "python":
                run_python(block, self.namespace, self.folder)
            elif kind == "shell":
                run_shell(block, self.folder, self.outputs)
            else:
                (self.folder / file_name(block)).write_text(block.body)
            self._check_facts(block)
            self.results[block.line] = ""
        except Exception as error:  # recorded, so that the page's later blocks name it
            self.results[block.line], self._error = f"{type(error).__name__}: {error}", error

    def _check_facts(self, block: Block) -> None:
        helpers = {"Fraction": Fraction, "Path": Path, "np": np, "io": io, "json": json, "csv": csv, "re": re,
                   "countdp": countdp, "outputs": self.outputs}
        for anchor, check in FACTS.get(self.page, []):
            if anchor in block.body:
                fact = Block(f"FACTS[{self.page!r}]", 0, "python", check)
                run_python(fact, {**self.namespace, **helpers}, self.folder)


def _kind(block: Block) -> str:
    try:
        return classify(block).kind
    except Unclassified:
        return "python"  # run it, so that its failure is reported


@pytest.fixture(scope="module")
def pages() -> dict[str, PageRun]:
    return {}


@pytest.fixture
def offline(monkeypatch):
    """No network connection from a Python example (unix sockets stay open for local tools)."""
    connect = socket.socket.connect

    def refuse(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            raise OSError(f"the docs' examples run offline: a connection to {address} was refused")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_block(block, pages, tmp_path_factory, offline):
    plan = classify(block)
    if plan.kind == "not-run":
        if block.language == "python":
            exec(compile("\n" * block.line + imports_of(block), block.page, "exec"), {})  # the names it shows exist
        pytest.skip(f"not run: {plan.rule}")
    if plan.kind == "text":
        check_text(block)
        return
    if block.page not in pages:
        pages[block.page] = PageRun(block.page, tmp_path_factory.mktemp(Path(block.page).stem))
    pages[block.page].run(block)


def test_every_fact_has_its_block():
    """A stated fact whose anchor is in no runnable block of its page would never be checked."""
    for page, facts in FACTS.items():
        runnable = [b.body for b in BLOCKS if b.page == page and classify(b).kind in RUNNABLE]
        for anchor, _ in facts:
            assert sum(anchor in body for body in runnable) == 1, f"{page}: {anchor!r} is in no or several blocks"


def test_the_examples_are_counted(capsys):
    """Per page: the blocks run, checked as text, and not run by each rule (printed with the results)."""
    counts = {page: Counter() for page in PAGES}
    for block in BLOCKS:
        plan = classify(block)
        counts[block.page][plan.kind if plan.kind in RUNNABLE else f"{plan.kind}: {plan.rule}"] += 1
    with capsys.disabled():
        print("\ndocs examples, per page (python and shell blocks run, files written, the rest by rule):")
        for page, count in counts.items():
            if count:
                print(f"  {page}: " + "; ".join(f"{kind} {n}" for kind, n in sorted(count.items())))
    total = sum(counts.values(), Counter())
    assert total["python"] >= 5 and total["shell"] >= 4 and total["file"] >= 3, total  # the examples were found


def test_a_broken_python_block_fails(tmp_path):
    namespace: dict = {}
    run_python(Block("page.md", 10, "python", "x = 1\n"), namespace, tmp_path)
    with pytest.raises(NameError) as raised:
        run_python(Block("page.md", 20, "python", "y = x + undefined_name\n"), namespace, tmp_path)
    assert raised.traceback[-1].lineno + 1 == 21  # the page's line of the failing statement


def test_a_cli_block_with_a_bad_option_fails(tmp_path):
    with pytest.raises(AssertionError, match="exited with status 2, not 0"):
        run_shell(Block("page.md", 5, "bash", "countdp design GM --n 4 --alpha 1/2 --no-such-option\n"), tmp_path, {})
    documented = Block("page.md", 5, "bash", "countdp design GM --n 4 --no-such-option  # exit status 2\n")
    run_shell(documented, tmp_path, {})


def test_a_console_block_whose_output_differs_fails(tmp_path):
    shown = "$ countdp design GM --n 2 --alpha 1/2 --format csv\n{}\n"
    run_shell(Block("page.md", 5, "console", shown.format("...")), tmp_path, {})
    with pytest.raises(AssertionError, match="where the page shows"):
        run_shell(Block("page.md", 5, "console", shown.format("0.5,0.5,0.5")), tmp_path, {})


@pytest.mark.parametrize(("language", "body", "marker"), [
    ("bash", "ls -l\n", ""),  # no rule for it
    ("bash", "countdp check m.json && .venv/bin/pip install x\n", ""),  # run and not run mixed
    ("", "$ countdp check m.json\n", ""),  # a command in an unlabelled block
    ("", "import countdp\n", ""),  # code in an unlabelled block
    ("json", "{}\n", ""),  # a language without a rule
    ("python", "1\n", "skip this"),  # an unknown marker
])
def test_a_block_no_rule_classifies_fails(language, body, marker):
    with pytest.raises(Unclassified):
        classify(Block("page.md", 3, language, body, marker))


def test_markers_and_fences_are_read():
    page = ("# t\n\n<!-- example: not run (too slow) -->\n```python\nslow()\n```\n\n"
            "<!-- example: file t.csv -->\n```text\na,b\n```\n\n* item\n\n  ```\n  out\n  ```\n")
    slow, table, output = blocks_of(page, "p.md")
    assert (slow.line, classify(slow).kind, classify(slow).rule) == (4, "not-run", "marked not run: too slow")
    assert (classify(table).kind, file_name(table), table.body) == ("file", "t.csv", "a,b\n")
    assert (output.line, output.body, classify(output).kind) == (15, "out\n", "text")
