"""The ``>>>`` examples in the docstrings of the public API (``countdp.__all__``) run and say what they print.

Each public function and class has at least one example (those in :data:`NO_EXAMPLE` say why
not), run by :mod:`doctest` with ``countdp`` and ``np`` (numpy) already imported, as in the
README. The objects are reached through ``countdp``, not through the modules that define them, so
the examples are found wherever those modules live. A public constant must appear in some
example. A broken example is shown to fail the same runner.
"""

from __future__ import annotations

import doctest
import io

import numpy as np
import pytest

import countdp

NO_EXAMPLE = {
    "DesignError": "raised when no solver strategy answers a design, which no short and fast example provokes",
}
OPTIONS = doctest.ELLIPSIS
FINDER = doctest.DocTestFinder(recurse=False)


def examples_of(name: str) -> list[doctest.DocTest]:
    """The doctests of ``countdp.<name>``'s own docstring (not its methods')."""
    obj = getattr(countdp, name)
    found = FINDER.find(obj, f"countdp.{name}", globs={"countdp": countdp, "np": np})
    return [test for test in found if test.examples]


def run_examples(tests: list[doctest.DocTest]) -> tuple[int, str]:
    """(failures, the report of each failure) of running ``tests``."""
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    for test in tests:
        runner.run(test, out=report.write)
    return runner.failures, report.getvalue()


@pytest.mark.parametrize("name", countdp.__all__)
def test_the_public_examples_run(name):
    obj = getattr(countdp, name)
    if not callable(obj):
        sources = [example.source for other in countdp.__all__ for test in examples_of(other)
                   for example in test.examples]
        assert any(f"countdp.{name}" in source for source in sources), f"no example shows countdp.{name}"
        return
    tests = examples_of(name)
    if name in NO_EXAMPLE:
        assert not tests, f"countdp.{name} has an example now: remove it from NO_EXAMPLE"
        return
    assert tests, f"countdp.{name} has no >>> example in its docstring"
    failures, report = run_examples(tests)
    assert failures == 0, report


def test_a_broken_example_fails():
    text = ">>> countdp.exact_alpha('2/3')\nFraction(3, 4)\n>>> countdp.exact_alpha(2)\nFraction(2, 1)\n"
    test = doctest.DocTestParser().get_doctest(text, {"countdp": countdp, "np": np}, "broken", None, 0)
    failures, report = run_examples([test])
    assert failures == 2 and "Alpha(2, 3)" in report and "ValueError" in report
