"""The shape rules the library meets: no import cycle, small modules and functions, no private
name used outside its module, and no function-local import without a ``# lazy:`` reason.

The import graph counts every import of a ``countdp`` module, at the top of a module or inside a
function alike, so a function-local import cannot hide a cycle.  Each rule is also shown failing
on a small package built for the purpose (a check that cannot fail is a defect).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.import_graph import cycles, import_graph, write_package

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def oversized(root: Path, package: str) -> list[str]:
    """Modules over :data:`MAX_MODULE_LINES` lines and functions over :data:`MAX_FUNCTION_LINES`."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {length} lines")
    return found


LAZY_REASON = re.compile(r"#\s*lazy:\s*\S")
"""A ``# lazy: <what it keeps out>`` comment (a reason must follow the colon)."""


def unexplained_local_imports(root: Path, package: str) -> list[str]:
    """Imports inside a function body with no ``# lazy:`` comment on their line or the line above.

    A function-local import is kept only to keep a heavy import (the solver stack, pyarrow, ...)
    off a light path; the comment says which.  Nested functions and methods count too.
    """
    found = set()
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for function in ast.walk(ast.parse(text)):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                here = lines[node.lineno - 1]
                above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                if not (LAZY_REASON.search(here) or (above.startswith("#") and LAZY_REASON.match(above))):
                    found.add(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(paths) -> list[str]:
    """Places that import, or reach through an imported name, a private (``_name``) attribute of
    countdp: ``from countdp.x import _y``, ``mod._y`` where ``mod`` came from countdp."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        names = {"countdp"}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "countdp":
                names.update(alias.asname or alias.name for alias in node.names)
                found += [f"{path}:{node.lineno}: imports {a.name}" for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Import):
                names.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("countdp"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and _root(node.value) in names:
                found.append(f"{path}:{node.lineno}: uses {ast.unparse(node)}")
    return found


def test_no_import_cycle_in_countdp():
    assert cycles(import_graph(SRC, "countdp")) == []


def test_modules_and_functions_are_small():
    assert oversized(SRC, "countdp") == []


def test_every_function_local_import_says_why_it_is_lazy():
    assert unexplained_local_imports(SRC, "countdp") == []


def test_no_private_name_is_used_outside_its_module():
    paths = [p for p in sorted(TESTS.rglob("*.py")) if p.resolve() != Path(__file__).resolve()]
    assert private_uses(paths) == []


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    root = write_package(tmp_path, "pkg", {"__init__.py": "", "a.py": "from pkg import b\n",
                               "b.py": "def f():\n    from pkg.a import x\n", "c.py": "import pkg.a\n"})
    assert cycles(import_graph(root, "pkg")) == [["pkg.a", "pkg.b"]]


def test_a_relative_import_cycle_is_found(tmp_path):
    root = write_package(tmp_path, "pkg", {"__init__.py": "", "sub/__init__.py": "", "sub/a.py": "from . import b\n",
                               "sub/b.py": "from ..sub.a import y\n"})
    assert cycles(import_graph(root, "pkg")) == [["pkg.sub.a", "pkg.sub.b"]]


def test_a_long_module_and_function_are_found(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    root = write_package(tmp_path, "pkg", {"__init__.py": "", "long.py": "x = 1\n" * (MAX_MODULE_LINES + 1),
                               "f.py": f"def f():\n{body}\n"})
    assert len(oversized(root, "pkg")) == 2


@pytest.mark.parametrize("body", [
    "def f():\n    import scipy\n",  # no comment at all
    "def f():\n    # keeps scipy out of the CLI\n    import scipy\n",  # a comment, but not a lazy: one
    "def f():\n    # lazy:\n    import scipy\n",  # no reason given
    "# lazy: keeps scipy out\n\ndef f():\n    x = 1\n    import scipy\n",  # too far above
    "def f():\n    import numpy  # lazy: keeps numpy out\n    import scipy\n",  # one of a block only
    "class C:\n    def m(self):\n        def g():\n            from pkg import a\n",  # nested in a method
])
def test_a_local_import_without_a_lazy_reason_is_found(tmp_path, body):
    root = write_package(tmp_path, "pkg", {"__init__.py": "", "a.py": "x = 1\n", "m.py": body})
    assert len(unexplained_local_imports(root, "pkg")) == 1


def test_local_imports_with_a_lazy_reason_and_top_level_imports_pass(tmp_path):
    body = ("import os\n\n\ndef f():\n    # lazy: keeps scipy out of the CLI\n    import scipy\n"
            "    from pkg import a  # lazy: keeps a out\n")
    root = write_package(tmp_path, "pkg", {"__init__.py": "", "a.py": "x = 1\n", "m.py": body})
    assert unexplained_local_imports(root, "pkg") == []


@pytest.mark.parametrize("line", ["from countdp.design.reduce import _dedup_rows",
                                  "from countdp.release import atomic, _wait_for",
                                  "x = countdp.release.atomic._wait_for(1)",
                                  "from countdp.release import atomic\nx = atomic._wait_for(1)",
                                  "import countdp.release.atomic as at\nat._wait_for"])
def test_a_private_use_is_found(tmp_path, line):
    path = tmp_path / "test_x.py"
    path.write_text(f"import countdp\n{line}\n")
    assert len(private_uses([path])) == 1


def test_public_uses_are_not_flagged(tmp_path):
    path = tmp_path / "test_x.py"
    path.write_text("from countdp.release import atomic\nx = atomic.publish\nself._cache = {}\n")
    assert private_uses([path]) == []
