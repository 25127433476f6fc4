"""``preflight``: the checks made before the budget is debited, on real filesystems.

Root ignores permission bits, so a read-only *mount* is the real test of "not writable": a
read-only tmpfs (with ``O_TMPFILE``) and a read-only bindfs (without it, the named probe).  A tiny
tmpfs is too small for an estimate larger than its free space.  Mounting needs root; elsewhere
these tests skip.
"""

from __future__ import annotations

import errno
import os

import pytest

from countdp.release.atomic import preflight
from tests.helpers.mounts import bindfs


def test_a_writable_roomy_folder_passes_and_keeps_nothing(tmp_path):
    preflight(tmp_path, 1000)
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_mount_is_refused_naming_the_folder(mount):
    point = mount("ro,size=1m")
    with pytest.raises(OSError) as raised:
        preflight(point, 10)
    assert raised.value.errno == errno.EROFS
    assert str(point) in raised.value.strerror and "\n" not in raised.value.strerror
    assert point.stat().st_mode & 0o222  # the permission bits alone would have said yes


def test_a_folder_without_the_room_is_refused_naming_the_folder(mount):
    point = mount("size=64k")
    free = os.statvfs(point).f_bavail * os.statvfs(point).f_frsize
    preflight(point, free)  # exactly what is free: fine
    with pytest.raises(OSError) as raised:
        preflight(point, free + 1)
    assert raised.value.errno == errno.ENOSPC
    assert str(point) in raised.value.strerror and "\n" not in raised.value.strerror
    assert list(point.iterdir()) == []


def test_a_read_only_folder_without_tmpfile_is_refused_by_the_named_probe(tmp_path):
    source = tmp_path / "source"
    with bindfs(source, tmp_path / "mount", "-o", "ro") as point:
        with pytest.raises(OSError) as raised:
            preflight(point, 10)
        assert raised.value.errno == errno.EROFS and str(point) in raised.value.strerror
        assert list(source.iterdir()) == []
