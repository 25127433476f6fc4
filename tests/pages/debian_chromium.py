"""Debian's chromium for the page tests: find it, install it if the machine allows, launch it.

The tests drive a real browser through Playwright, but never with Playwright's own browser
downloads (``playwright install`` fetches them from a CDN): they launch the distribution's
``/usr/bin/chromium``.  Where it is missing it is installed with apt-get, as the SLURM test
installs slurm-wlm; a machine that is not root or has no apt-get skips the tests instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
INSTALL_TIMEOUT = 900  # apt-get update + chromium and its libraries on a slow mirror
LAUNCH_ARGS = ("--no-sandbox",)  # chromium's sandbox needs user namespaces that containers often lack


def cannot_install_chromium() -> str | None:
    """Why chromium cannot be installed here, or None when it is present or installable."""
    if CHROMIUM.exists():
        return None
    if os.geteuid() != 0:
        return f"{CHROMIUM} is missing and installing it needs root"
    if not shutil.which("apt-get"):
        return f"{CHROMIUM} is missing and apt-get is unavailable to install it"
    return None


def install_chromium() -> None:
    """``apt-get update && apt-get install -y chromium`` unless chromium is already there.

    Waits up to 10 minutes for dpkg's lock, so two test sessions installing at once queue
    instead of failing.  Raises AssertionError with apt-get's output when it fails.
    """
    if CHROMIUM.exists():
        return
    lock = ("-o", "DPkg::Lock::Timeout=600")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", *lock, "update"], ["apt-get", *lock, "install", "-y", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env)
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert CHROMIUM.exists(), f"apt-get installed chromium but {CHROMIUM} does not exist"


def launch(playwright):
    """A headless Debian chromium driven by ``playwright`` (a started ``sync_playwright()``)."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(LAUNCH_ARGS), headless=True)
