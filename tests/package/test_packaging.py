"""Packaging stays consistent: pyproject vs environment.yml, README vs .ci/run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import yaml

from tests.conftest import REPO


def _name_and_bound(spec: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", spec)
    assert match, spec
    return match.group(1).lower().replace("_", "-"), match.group(2).replace(" ", "")


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = dict(_name_and_bound(s) for s in project["dependencies"] + extras["test"] + extras["slurm"])
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [s for s in env["dependencies"] if isinstance(s, str) and not s.startswith(("python", "pip"))]
    listed = dict(_name_and_bound(s) for s in conda)
    assert listed == wanted
    assert all(bound.startswith(">=") for bound in wanted.values()), "every dependency has a lower bound"


README_COMMAND = re.compile(r"(<!-- test-command -->\s*```\w*\n)(.+?)(\n```\s*<!-- /test-command -->)", re.S)


def test_readme_marks_its_commands():
    readme = (REPO / "README.md").read_text()
    block = README_COMMAND.search(readme)
    assert block, "README must mark its test command"
    command = block.group(2).strip()
    assert "pytest" in command and "pip install" in command and "\n" not in command
    run = re.search(r"<!-- run-command -->\s*```\w*\n(.+?)\n```\s*<!-- /run-command -->", readme, re.S)
    assert run and "snakemake --cores all" in run.group(1)


def _run_ci(tmp_path, readme: str) -> subprocess.CompletedProcess:
    """.ci/run in a scratch checkout holding only the script and ``readme``."""
    (tmp_path / ".ci").mkdir()
    shutil.copy2(REPO / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "README.md").write_text(readme)
    return subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)


def _stand_in(mkdocs_exit: int) -> str:
    """A test command that makes a venv whose ruff and mkdocs record their arguments (mkdocs then
    exits with ``mkdocs_exit``)."""
    return ("echo ran > ran.txt && mkdir -p .venv/bin && printf '#!/bin/sh\\necho \"$@\" > ruff_args.txt\\n' "
            "> .venv/bin/ruff && chmod +x .venv/bin/ruff && printf '#!/bin/sh\\necho \"$@\" > mkdocs_args.txt\\n"
            f"exit {mkdocs_exit}\\n' > .venv/bin/mkdocs && chmod +x .venv/bin/mkdocs")


def _run_ci_with(tmp_path, fake: str) -> subprocess.CompletedProcess:
    readme, swapped = README_COMMAND.subn(lambda m: m.group(1) + fake + m.group(3), (REPO / "README.md").read_text())
    assert swapped == 1
    return _run_ci(tmp_path, readme)


def test_ci_runs_exactly_the_readme_test_command_then_the_docs_then_ruff(tmp_path):
    """.ci/run on the real README with its test command swapped for a stand-in: the stand-in runs
    verbatim (one command, from the marked block, nothing else of the README), then a strict
    ``mkdocs build`` into a temporary folder and ``ruff check .``, both from the venv the command made."""
    fake = _stand_in(0)
    done = _run_ci_with(tmp_path, fake)
    assert done.returncode == 0, done.stderr
    steps = [f"+ {fake}\n", "+ .venv/bin/mkdocs build --strict --site-dir ", "+ .venv/bin/ruff check .\n"]
    assert all(step in done.stdout for step in steps), done.stdout
    assert [done.stdout.index(step) for step in steps] == sorted(done.stdout.index(step) for step in steps)
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
    assert re.fullmatch(r"build --strict --site-dir /\S+\n", (tmp_path / "mkdocs_args.txt").read_text())
    assert (tmp_path / "ruff_args.txt").read_text() == "check .\n"


def test_ci_fails_when_the_docs_build_fails(tmp_path):
    done = _run_ci_with(tmp_path, _stand_in(1))
    assert done.returncode != 0 and (tmp_path / "mkdocs_args.txt").exists()
    assert not (tmp_path / "ruff_args.txt").exists()


def test_ci_fails_without_a_marked_test_command(tmp_path):
    done = _run_ci(tmp_path, "# no markers\n\n```bash\necho not-this\n```\n")
    assert done.returncode == 1 and "no test command" in done.stderr and "not-this" not in done.stdout


def test_wheel_ships_the_claims_templates(tmp_path):
    """A wheel built from the checkout has the Jinja2 templates, and renders the claims from them."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("countdp-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    assert {"countdp/claims/templates/claims.md.j2", "countdp/claims/templates/claims.html.j2"} <= names
    probe = ("import pandas as pd, countdp.claims.render as r; "
             "t = pd.DataFrame([dict(zip(r.CLAIM_COLUMNS, ['x-1', 'S', 'a | b', 'p', 'o', 't', 'differs', 'e']))]); "
             "print(r.__file__); print(r.claims_markdown(t).splitlines()[-1]); "
             "print('href=\"#x-1\"' in r.claims_html(t))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(tmp_path / "site")}, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr[-3000:]
    where, row, linked = shown.stdout.splitlines()
    assert where.startswith(str(tmp_path / "site"))
    assert row == "| x-1 | S | a \\| b | p | o | t | differs | e |" and linked == "True"


def test_no_rule_declares_a_conda_environment():
    """Rules run in the environment Snakemake runs in: the README's pip venv, or the conda
    environment `conda env create -f environment.yml` creates.  A per-rule env file would be
    copied by Snakemake before it is built, breaking environment.yml's relative editable install
    of countdp (and conda channels are not reachable where the suite runs, so it could not be
    built and tested)."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
    assert len(files) > 5
    declared = [f"{f.relative_to(REPO)}:{n}" for f in files
                for n, line in enumerate(f.read_text().splitlines(), 1) if re.match(r"\s*conda\s*:", line)]
    assert not declared, f"conda: directives remain at {declared}"
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    assert env["name"] == "countdp" and {"pip": ["-e ."]} in env["dependencies"]


def test_slurm_plugin_is_in_the_slurm_and_test_extras_only():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for group in ("slurm", "test"):
        assert any(d.startswith("snakemake-executor-plugin-slurm>=") for d in extras[group]), group
    assert not any(d.startswith("snakemake-executor-plugin") for d in project["dependencies"])
    assert yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())["executor"] == "slurm"
