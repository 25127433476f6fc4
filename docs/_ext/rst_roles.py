"""A griffe extension for the docs site: the docstrings' Sphinx roles as Markdown.

countdp's docstrings cross-reference with Sphinx roles (``:func:`countdp.privacy.exact.exact_dp_check```,
``:mod:`~countdp.values.alpha```, ``:data:`MAX_REPAIR_LAMBDA```).  mkdocstrings would print the role
name as text, so each role becomes a code span, and a link (an autorefs reference) where its
target is an object the API reference renders: a public object with a docstring in one of the
modules listed in ``documented`` (mkdocs.yml), or one of the ``packages`` rendered without
members.  Every other target stays a plain code span, so the strict build never meets a
reference it cannot resolve.  Powers written outside code (``2**63``) are escaped, so that Markdown
does not read them as bold.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|obj|exc|const):`(~?)([^`<>]+)`")
POWER = re.compile(r"(?<=[0-9A-Za-z)])\*\*(?=[-0-9A-Za-z(])")
"""``2**63`` written outside code: Markdown would take its ``**`` for bold."""
CODE = re.compile(r"(`+)(?:.+?)\1", re.S)


class RstRoles(griffe.Extension):
    """Rewrite every docstring of the loaded package once, when the package is loaded."""

    def __init__(self, documented: list[str] | None = None, packages: list[str] | None = None) -> None:
        super().__init__()
        self.documented = tuple(documented or ())
        self.packages = frozenset(packages or ())

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                text = ROLE.sub(lambda m, o=obj: self._replace(m, o, pkg), obj.docstring.value)
                obj.docstring.value = escape_powers(text)

    def _replace(self, match: re.Match, obj: griffe.Object, pkg: griffe.Module) -> str:
        short, written = match.group(1) == "~", match.group(2).strip()
        target = _resolve(written, obj, pkg)
        shown = written.lstrip(".").rsplit(".", 1)[-1] if short else written.lstrip(".")
        if target is not None and self._rendered(target, pkg):
            return f"[`{shown}`][{target}]"
        return f"`{shown}`"

    def _rendered(self, path: str, pkg: griffe.Module) -> bool:
        """Whether the API reference renders ``path``: public, with a docstring, in a documented module
        (or one of the ``packages`` whose docstring alone is rendered)."""
        if path in self.packages:
            return True
        module = next((m for m in self.documented if path == m or path.startswith(m + ".")), None)
        if module is None:
            return False
        parts = path[len(module):].lstrip(".").split(".") if path != module else []
        if any(part.startswith("_") for part in parts):
            return False
        found = _lookup(pkg, path)
        return found is not None and not found.is_alias and (found.is_module or found.docstring is not None)


def escape_powers(text: str) -> str:
    """``text`` with every ``**`` between two operands escaped, except inside code spans."""
    out, last = [], 0
    for match in CODE.finditer(text):
        out += [POWER.sub(r"\\*\\*", text[last:match.start()]), match.group(0)]
        last = match.end()
    return "".join([*out, POWER.sub(r"\\*\\*", text[last:])])


def _lookup(pkg: griffe.Module, path: str) -> griffe.Object | griffe.Alias | None:
    """The object at ``path``, or ``None`` when there is none or an alias on the way cannot be resolved."""
    try:
        return pkg.modules_collection[path]
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


def _resolve(written: str, obj: griffe.Object, pkg: griffe.Module) -> str | None:
    """The absolute path ``written`` names, seen from ``obj``'s docstring (``None`` if unknown)."""
    if written.startswith("."):
        module = obj.module
        base = module.path if module.is_package else module.parent.path
        candidates = [f"{base}.{written.lstrip('.')}"]
    elif "." in written and written.split(".")[0] == pkg.name:
        candidates = [written]
    else:  # a name seen from the object, its class or its module, else an absolute one
        scopes = [obj] + [p for p in (obj.parent, obj.module) if p is not None]
        candidates = [f"{scope.path}.{written}" for scope in scopes] + [written]
    for path in candidates:
        found = _lookup(pkg, path)
        if found is None:
            continue
        try:
            return found.target_path if found.is_alias else found.path
        except griffe.AliasResolutionError:
            return None
    return None
