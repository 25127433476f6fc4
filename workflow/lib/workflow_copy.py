"""The files a Snakemake run of this workflow needs, copied to another folder.

The tests and the benchmarks run the pipeline in scratch copies (of this checkout, or of a
baseline's): the Snakefile, the rules and their modules, the configs, profiles and resources, and
the two files that say what to install; never results/, .snakemake/ or caches.
"""

from __future__ import annotations

import shutil
from pathlib import Path

WORKFLOW_FILES = ("Snakefile", "workflow", "config", "profiles", "resources", "environment.yml", "pyproject.toml")
"""What a run reads, relative to a checkout's root."""


def copy_workflow_files(source: Path, dest: Path) -> Path:
    """Copy :data:`WORKFLOW_FILES` of the checkout ``source`` to ``dest`` (created); return ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, dest / name)
    return dest
