"""benchmarks/performance_page.py: benchmark output to Markdown tables, and the page it writes.

The expected tables are written out by hand from the fixed-width text, not produced by the code.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def page_module():
    spec = importlib.util.spec_from_file_location("performance_page", REPO / "benchmarks" / "performance_page.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


OUTPUT = """\
# realized distributions (worst ratio x alpha: <= 1 is alpha-DP)
mechanism              sampler             broken  0 vs >0  worst ratio x alpha   old/s
GM n=60 a=1/2          float inverse CDF     1664       14                  inf     nan
GM n=200 a=99/100      exact (W / 2^62)         0        0           1 -1.3e-18     nan
# a note after the table

    n call              new/s
   10 [c] seeded      203,226
 2048 c OS            247,163

seeded  old     nan  new   1.694
"""


def test_fixed_width_blocks_become_markdown_tables(page_module):
    (head, lines, notes), second, third = page_module.blocks(OUTPUT)
    assert head == ["realized distributions (worst ratio x alpha: <= 1 is alpha-DP)"]
    assert notes == ["a note after the table"]
    assert page_module.markdown_table(lines) == (
        "| mechanism | sampler | broken | 0 vs &gt;0 | worst ratio x alpha |\n"
        "|---|---|---|---|---|\n"
        "| GM n=60 a=1/2 | float inverse CDF | 1664 | 14 | inf |\n"
        "| GM n=200 a=99/100 | exact (W / 2^62) | 0 | 0 | 1 -1.3e-18 |")
    assert page_module.markdown_table(second[1]) == (
        "| n | call | new/s |\n|---|---|---|\n| 10 | \\[c\\] seeded | 203,226 |\n| 2048 | c OS | 247,163 |")
    assert page_module.markdown_table(third[1]) is None  # a header of numbers: not a table


def test_the_committed_page_is_what_the_saved_output_gives(page_module, tmp_path):
    """docs/performance.md holds exactly the tables the saved benchmark output gives (nobody edited
    the generated part by hand, and the saved output is complete)."""
    page = tmp_path / "performance.md"
    shutil.copy2(REPO / "docs" / "performance.md", page)
    page_module.write_page(page_module.generated_part(page_module.BENCHMARKS), page)
    assert page.read_text() == (REPO / "docs" / "performance.md").read_text()
    for benchmark in page_module.BENCHMARKS:
        assert f"([raw output](benchmarks/{benchmark.name}.txt))" in page.read_text()


def test_a_page_without_its_markers_is_refused(page_module, tmp_path):
    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\nno markers here\n")
    with pytest.raises(SystemExit, match="must hold the lines"):
        page_module.write_page("| a | b |", page)
    assert page.read_text() == "# Performance\n\nno markers here\n"


def test_missing_saved_output_is_refused(page_module, tmp_path):
    with pytest.raises(SystemExit, match="no saved output for cli"):
        page_module.generated_part(page_module.BENCHMARKS, tmp_path)
