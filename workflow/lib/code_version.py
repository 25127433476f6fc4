"""Versions of the library's source, for the rules' ``code`` params (Snakemake's params rerun trigger).

Snakemake reruns a job when its params change, but it does not see the library a `run:` block
calls.  A rule whose results depend on the library therefore takes a hash of the relevant source
as a param: :func:`source_version` of the whole library for the studies and the claims, and of
:data:`DESIGN_SOURCES` only for the design sweeps, so that changing a plot, a study or the CLI
does not redesign every mechanism.

:data:`DESIGN_SOURCES` names what :func:`countdp.studies.sweeps.design_sweep` imports, directly or
through other modules (static imports, function-local ones included): whole packages by
directory, so a module added to one of them is hashed without editing this list, and the few
single modules it needs from packages it otherwise does not use.  tests/workflow/test_design_sweeps.py
checks the list against the import closure of ``countdp.studies.sweeps``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

DESIGN_SOURCES = (
    # packages: every file below the directory
    "values",
    "design",
    "privacy",
    "mechanisms",
    "structural",
    "services",
    # single modules (and the package __init__ files Python runs to import them)
    "__init__.py",
    "validation.py",
    "version.py",
    "evaluate/__init__.py",
    "release/__init__.py",
    "evaluate/metrics.py",
    "studies/__init__.py",
    "studies/naming.py",
    "studies/records.py",
    "studies/sweeps.py",
)
"""What decides a design, relative to ``src/countdp``: a directory stands for all files below it."""

LIBRARY_SUFFIXES = (".py", ".j2")
"""The whole library's version: its Python sources and its templates (the claims pages)."""


def _is_source(path: Path) -> bool:
    return path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"


def source_files(root: str | Path, parts: Iterable[str]) -> list[Path]:
    """The files ``parts`` stand for under ``root`` (a directory: every file below it but caches),
    sorted; a part that does not exist is an error, so a renamed package cannot drop out silently."""
    root = Path(root)
    files: set[Path] = set()
    for part in parts:
        path = root / part
        if path.is_dir():
            files.update(p for p in path.rglob("*") if _is_source(p))
        elif path.is_file():
            files.add(path)
        else:
            raise FileNotFoundError(f"{path}: named in the design sources but missing")
    return sorted(files)


def library_files(root: str | Path) -> list[Path]:
    """Every source file and template of the library under ``root``, sorted."""
    return sorted(p for p in Path(root).rglob("*") if p.suffix in LIBRARY_SUFFIXES and _is_source(p))


def digest(root: str | Path, files: Iterable[Path]) -> str:
    """SHA-256 (16 hex digits) of ``files``: each one's path relative to ``root``, then its bytes
    (so a renamed or moved module changes the version too).  A few ms for the whole library."""
    root = Path(root)
    sha = hashlib.sha256()
    for path in files:
        sha.update(path.relative_to(root).as_posix().encode())
        sha.update(b"\0")
        sha.update(path.read_bytes())
    return sha.hexdigest()[:16]


def source_version(root: str | Path, parts: Iterable[str] | None = None) -> str:
    """Version of the library under ``root`` (``src/countdp``): of ``parts`` (see :func:`source_files`),
    or of the whole library (:func:`library_files`) when ``parts`` is None."""
    files = library_files(root) if parts is None else source_files(root, parts)
    return digest(root, files)
