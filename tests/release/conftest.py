"""Fixtures shared by the release tests."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers.mounts import mount_tmpfs


@pytest.fixture
def mount(tmp_path):
    """``mount(options)``: a fresh tmpfs mounted with ``options`` at a new point (unmounted afterwards).

    Mounting needs root (a read-only *mount* is the real test of "not writable": root ignores
    permission bits); elsewhere the test skips.
    """
    points = []

    def mounted(options: str):
        point = tmp_path / f"disk{len(points)}"
        point.mkdir()
        points.append(mount_tmpfs(point, options))
        return point

    yield mounted
    for point in points:
        subprocess.run(["umount", str(point)], check=True)


@pytest.fixture(scope="session")
def spark():
    """One Spark session in local mode (two cores) for every Spark test of the run; skipped where Java is absent."""
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime: apt-get install openjdk-17-jre-headless (.ci/run installs it)")
    from countdp.release.records_spark import session

    spark = session("local[2]")
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    yield spark
    spark.stop()
