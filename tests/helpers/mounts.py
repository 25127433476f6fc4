"""Real mounts for the release tests: a tmpfs of a given size or mode, and a bindfs (FUSE) view of a
folder, a filesystem without unnamed files (``O_TMPFILE``).  Each skips the test where it cannot be
had (mounting needs root; bindfs needs ``/dev/fuse`` and apt-get)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.release_checks import debian_tool


def mount_tmpfs(point: Path, options: str) -> Path:
    """Mount a fresh tmpfs with ``options`` (``size=...,mode=...``) at the existing folder ``point``."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (root is needed): {done.stderr.strip()}")
    return point


@contextlib.contextmanager
def bindfs(source: Path, point: Path, *options: str) -> Iterator[Path]:
    """``source`` seen through bindfs at ``point`` (both made here), unmounted when the block ends."""
    tool = debian_tool("bindfs", "bindfs")
    if tool is None or not os.path.exists("/dev/fuse"):
        pytest.skip("bindfs and /dev/fuse are needed (root, apt-get)")
    source.mkdir()
    point.mkdir()
    done = subprocess.run([tool, *options, str(source), str(point)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"bindfs could not mount: {done.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["fusermount", "-u", str(point)], capture_output=True)
        subprocess.run(["umount", str(point)], capture_output=True)
