"""The packages of ``countdp`` form layers that import only downward, in the order ``docs/layout.md`` gives.

The order is read from the page (between its ``<!-- layers -->`` markers), so the page and the
test cannot disagree.  Every import counts, at the top of a module or inside a function alike.  A
package may import a package of a lower layer, or one of its own layer when the packages of that
layer import each other without a cycle; an import up a layer, a package missing from the order,
or a cycle between packages fails.  The package's root (``countdp/__init__.py``, the public API)
sits above every layer and nothing inside imports it.  Each rule is also shown failing on a small
package built to break it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.helpers.import_graph import cycles, import_graph, write_package

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
LAYOUT = REPO / "docs" / "layout.md"


def layer_order(text: str) -> dict[str, int]:
    """``{package: layer}`` from the lines between the page's ``<!-- layers -->`` markers: one layer a
    line, the top first, ``N  name name ...``."""
    block = re.search(r"<!-- layers -->(.*?)<!-- /layers -->", text, re.S)
    if block is None:
        raise ValueError("no <!-- layers --> block")
    order = {}
    for line in block.group(1).splitlines():
        match = re.match(r"\s*(\d+)\s+(.+)$", line)
        if match:
            for name in match.group(2).split():
                if name in order:
                    raise ValueError(f"{name} is in two layers")
                order[name] = int(match.group(1))
    return order


def package_of(module: str, root_package: str) -> str:
    """``countdp.design.forms`` -> ``design``; a top-level module is its own package; the root is ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == root_package else ""


def package_graph(root: Path, package: str) -> dict[str, dict[str, set[str]]]:
    """``{package: {imported package: {importing modules}}}`` over every import between packages."""
    graph: dict[str, dict[str, set[str]]] = {}
    for module, imported in import_graph(root, package).items():
        source = package_of(module, package)
        graph.setdefault(source, {})
        for target in imported:
            other = package_of(target, package)
            if other != source:
                graph[source].setdefault(other, set()).add(module)
    return graph


def dynamic_imports(root: Path, package: str) -> list[str]:
    """Imports the graph cannot see: ``importlib.import_module`` or ``__import__`` of a module of ``package``
    named by a string (a layer would be crossed unseen)."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            names = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if name in ("import_module", "__import__") and any(n.split(".")[0] == package for n in names):
                found.append(f"{path.relative_to(root)}:{node.lineno} imports {names[0]} by name")
    return found


def violations(root: Path, package: str, order: dict[str, int]) -> list[str]:
    """Every import up a layer or into the root, every package the order misses, every package cycle."""
    graph = package_graph(root, package)
    found = [f"{name} is in no layer of docs/layout.md" for name in sorted(graph) if name and name not in order]
    for source, targets in sorted(graph.items()):
        for target, modules in sorted(targets.items()):
            if target == "":
                found.append(f"{', '.join(sorted(modules))} imports the package's root ({package}/__init__.py)")
            elif source and source in order and target in order and order[target] > order[source]:
                found.append(f"{source} (layer {order[source]}) imports {target} (layer {order[target]}): "
                             f"{', '.join(sorted(modules))}")
    edges = {source: set(targets) - {""} for source, targets in graph.items() if source}
    found += [f"a cycle between packages: {' -> '.join(component)}" for component in cycles(edges)]
    return found + dynamic_imports(root, package)


def test_the_layers_of_countdp_import_only_downward():
    order = layer_order(LAYOUT.read_text())
    assert violations(SRC, "countdp", order) == []


def test_every_package_of_countdp_has_a_layer():
    order = layer_order(LAYOUT.read_text())
    packages = {p.name for p in (SRC / "countdp").iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in (SRC / "countdp").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == set(order)


LAYERS = "<!-- layers -->\n2  top\n1  middle other\n0  base\n<!-- /layers -->\n"
CLEAN = {"__init__.py": "", "base/__init__.py": "", "base/core.py": "X = 1\n",
         "middle/__init__.py": "", "middle/m.py": "from toy.base.core import X\n",
         "other/__init__.py": "", "other/o.py": "from toy.middle.m import X\n",
         "top/__init__.py": "",
         "top/t.py": "def f():\n    # lazy: a reason\n    from toy.other.o import X\n    return X\n"}


def test_a_package_that_keeps_its_layers_passes(tmp_path):
    assert violations(write_package(tmp_path, "toy", CLEAN), "toy", layer_order(LAYERS)) == []


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("base/up.py", "def f():\n    # lazy: a reason\n    from toy.top.t import f\n",
     "base (layer 0) imports top (layer 2)"),
    ("middle/up.py", "import toy.top.t\n", "middle (layer 1) imports top (layer 2)"),
    ("middle/back.py", "from toy.other.o import X\n", "a cycle between packages: middle -> other"),
    ("base/root.py", "import toy\n", "imports the package's root"),
    ("stray/__init__.py", "from toy.base.core import X\n", "stray is in no layer"),
    ("base/relative.py", "from ..middle import m\n", "base (layer 0) imports middle (layer 1)"),
    ("base/by_name.py", "import importlib\nM = importlib.import_module('toy.top.t')\n", "imports toy.top.t by name"),
])
def test_an_import_up_a_layer_a_cycle_the_root_or_an_unlisted_package_is_found(tmp_path, name, text, expected):
    found = violations(write_package(tmp_path, "toy", {**CLEAN, name: text}), "toy", layer_order(LAYERS))
    assert any(expected in line for line in found), found


def test_a_page_without_the_layers_block_or_with_a_package_twice_is_refused():
    with pytest.raises(ValueError, match="no <!-- layers --> block"):
        layer_order("# Layout\n")
    with pytest.raises(ValueError, match="design is in two layers"):
        layer_order("<!-- layers -->\n2  design\n1  design\n<!-- /layers -->\n")
