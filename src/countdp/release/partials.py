"""What a killed release leaves beside its output, and its removal by the next release.

Two commits write under a hidden *partial* name, ``.NAME.countdp-partial-PID``, that carries the
id of the process writing it: the file form on a filesystem without ``O_TMPFILE`` (one partial
file per output file, :mod:`countdp.release.atomic`) and a release folder (one partial folder,
:mod:`countdp.release.atomic_folder`, which after an ``--overwrite`` may hold the old release it
swapped out).  A release killed before its commit ends leaves them; :func:`remove_stale_partials`,
run by every release into the folder, removes those whose process no longer exists.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PARTIAL = re.compile(r"^\..+\.countdp-partial-(\d+)$")
"""A partial name; its group is the id of the process that writes it."""
FOLDER_FILES = "table."
"""How every file of a release folder is named (``table.csv``, ``table.csv.release.json``)."""


def remove_stale_partials(folder: Path) -> list[Path]:
    """Remove the partial files and folders in ``folder`` whose process no longer exists; returns them.

    A partial folder goes only as :func:`remove_partial_folder` allows.
    """
    removed = []
    for path in folder.iterdir():
        match = PARTIAL.match(path.name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # that release is still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        if path.is_dir() and not path.is_symlink():
            if remove_partial_folder(path):
                removed.append(path)
            continue
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def remove_partial_folder(folder: Path) -> bool:
    """Remove a release folder's partial folder (its files, or an old release it swapped out); whether it is gone.

    Only a folder whose every entry is a regular file named ``table.*`` (:data:`FOLDER_FILES`) is
    removed: anything else in it (a subfolder, a link, a file of another name) keeps the whole
    folder as it is, so a folder of the user's is never emptied.
    """
    try:
        found = list(os.scandir(folder))
        if any(not e.name.startswith(FOLDER_FILES) or not e.is_file(follow_symlinks=False) for e in found):
            return False
        for entry in found:
            Path(entry.path).unlink(missing_ok=True)
        os.rmdir(folder)
    except FileNotFoundError:
        return True  # another release removed it meanwhile
    except OSError:
        return False
    return True


__all__ = ["FOLDER_FILES", "PARTIAL", "remove_partial_folder", "remove_stale_partials"]
