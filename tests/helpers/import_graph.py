"""The import graph of a package's modules, counting every import (top level or inside a function), and its
cycles: what the shape test and the layer test read."""

from __future__ import annotations

import ast
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path, package: str) -> set[str]:
    """The ``package`` modules ``path`` imports (anywhere in it), resolved to existing modules."""
    here = module_name(path, root)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                parent = here.split(".")[: len(here.split(".")) - node.level + (path.name == "__init__.py")]
                base = ".".join(parent + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    known = {module_name(p, root) for p in (root / package).rglob("*.py")}
    return {name for name in found if name in known and name != here}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    return {module_name(p, root): imports_of(p, root, package) for p in sorted((root / package).rglob("*.py"))}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def write_package(root: Path, name: str, files: dict[str, str]) -> Path:
    """A small package ``name`` under ``root`` (``{relative path: text}``), built to show a rule failing."""
    for relative, text in files.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
