"""The README is a front page whose links resolve, whose code example runs and whose commands work."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
COUNTDP = Path(sys.executable).with_name("countdp")


def _block(heading: str, language: str) -> str:
    """The first ``language`` code block after the section ``heading``."""
    section = README.split(f"\n## {heading}\n", 1)[1]
    return re.search(rf"```{language}\n(.*?)```", section, re.S).group(1)


def test_readme_is_a_front_page():
    assert len(README.splitlines()) <= 200
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[:3] == ["What we found", "Quick start", "The library"]
    assert "<!-- run-command -->" in README and "<!-- test-command -->" in README  # .ci/run reads them


def test_readme_links_resolve():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert len(targets) >= 15
    missing = [t for t in targets if not t.startswith("http") and not (REPO / t).exists()]
    assert not missing


def test_the_library_example_runs_and_says_what_it_shows(tmp_path):
    """The example, then its comments' claims checked against the input (alpha 91/100, exact) and
    the guarantees (proven optimal, exactly alpha-DP weights, counts in 0..n)."""
    checks = ("\nfrom fractions import Fraction\n"
              "assert (wm.status, wm.alpha_exact) == ('optimal', Fraction(91, 100))\n"
              "assert wm.released.certificate.holds and wm.released.weights.sum(axis=0).tolist() == [2**62] * 9\n"
              "assert noisy.shape == (3,) and ((0 <= noisy) & (noisy <= 8)).all()\n")
    done = subprocess.run([sys.executable, "-c", _block("The library", "python") + checks], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_commands_work(tmp_path):
    """Every command of the README's command-line block, in order, in an empty folder with a table."""
    (tmp_path / "groups.csv").write_text("group,n,young,male\na,5,2,4\nb,8,1,5\nc,5,5,0\n")
    commands = [line.split("  #")[0].strip() for line in _block("The command line", "bash").replace("\\\n", " ")
                .splitlines() if line.strip()]
    assert len(commands) >= 7 and all(c.startswith("countdp ") for c in commands)
    for command in commands:
        argv = [str(COUNTDP), *shlex.split(command)[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
    assert (tmp_path / "noisy.csv.release.json").is_file() and (tmp_path / "m.npz").is_file()
