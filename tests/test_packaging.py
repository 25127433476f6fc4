"""Packaging stays consistent: pyproject vs environment.yml, README vs .ci/run."""

from __future__ import annotations

import re
import tomllib

import yaml
from conftest import REPO


def _name_and_bound(spec: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", spec)
    assert match, spec
    return match.group(1).lower().replace("_", "-"), match.group(2).replace(" ", "")


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = dict(_name_and_bound(s) for s in project["dependencies"] + project["optional-dependencies"]["test"])
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [s for s in env["dependencies"] if isinstance(s, str) and not s.startswith(("python", "pip"))]
    listed = dict(_name_and_bound(s) for s in conda)
    assert listed == wanted
    assert all(bound.startswith(">=") for bound in wanted.values()), "every dependency has a lower bound"


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- test-command -->\s*```\w*\n(.+?)\n```\s*<!-- /test-command -->", readme, re.S)
    assert block, "README must mark its test command"
    command = block.group(1).strip()
    assert "pytest" in command and "pip install" in command
    ci = (REPO / ".ci" / "run").read_text()
    assert "test-command" in ci and "ruff check" in ci
    run = re.search(r"<!-- run-command -->\s*```\w*\n(.+?)\n```\s*<!-- /run-command -->", readme, re.S)
    assert run and "snakemake --cores all" in run.group(1)


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


def test_slurm_plugin_is_a_dependency():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("snakemake-executor-plugin-slurm>=") for d in project["dependencies"])
    assert yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())["executor"] == "slurm"
