"""The docs site's griffe extension (docs/_ext/rst_roles.py): Sphinx roles become links only where
the target is rendered, code spans otherwise, and powers outside code are not read as bold."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe", reason="the docs toolchain is not installed (pip install -e '.[docs]')")

REPO = Path(__file__).resolve().parents[2]


def _extension_module():
    spec = importlib.util.spec_from_file_location("rst_roles", REPO / "docs" / "_ext" / "rst_roles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package(tmp_path: Path, docstring: str) -> None:
    root = tmp_path / "pkgx"
    root.mkdir()
    (root / "__init__.py").write_text('"""The package."""\n')
    (root / "a.py").write_text(f'"""{docstring}"""\n\nLIMIT = 3\n"""The limit."""\nUNDOCUMENTED = 4\n\n\n'
                               'def f():\n    """F."""\n\n\ndef _private():\n    """P."""\n')
    (root / "b.py").write_text('"""Module b."""\n\n\ndef g():\n    """G."""\n')


def _converted(tmp_path: Path, docstring: str, **options) -> str:
    _package(tmp_path, docstring)
    extension = _extension_module().RstRoles(**options)
    package = griffe.load("pkgx", search_paths=[str(tmp_path)], extensions=griffe.load_extensions(extension))
    return package["a"].docstring.value


def test_roles_link_to_rendered_objects_only(tmp_path):
    docstring = ("See :func:`pkgx.a.f`, :func:`~pkgx.b.g`, :data:`LIMIT`, :data:`UNDOCUMENTED`, :mod:`.b`, "
                 ":func:`_private`, :class:`numpy.ndarray` and :mod:`pkgx`.")
    assert _converted(tmp_path, docstring, documented=["pkgx.a"], packages=["pkgx"]) == (
        "See [`pkgx.a.f`][pkgx.a.f], `g`, [`LIMIT`][pkgx.a.LIMIT], `UNDOCUMENTED`, `b`, "
        "`_private`, `numpy.ndarray` and [`pkgx`][pkgx].")


def test_nothing_is_linked_when_nothing_is_documented(tmp_path):
    assert _converted(tmp_path, "See :func:`pkgx.a.f` and :mod:`pkgx.b`.") == "See `pkgx.a.f` and `pkgx.b`."


def test_powers_outside_code_are_escaped_and_bold_is_kept():
    escape = _extension_module().escape_powers
    assert escape("W < 2**63, **bold**, ``2**K`` and `x**2`") == "W < 2\\*\\*63, **bold**, ``2**K`` and `x**2`"
