"""config/README.md is generated from the config schema (workflow/scripts/config_docs.py)."""

from __future__ import annotations

import subprocess
import sys

import yaml
from conftest import REPO

SCRIPT = REPO / "workflow/scripts/config_docs.py"
sys.path.insert(0, str(SCRIPT.parent))
import config_docs  # noqa: E402

RANGE = {"from", "to", "step"}


def _schema() -> dict:
    return yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())


def _keys(node: dict, prefix: str = "") -> set[str]:
    """Every leaf and inner key of a config file, as dotted paths ([] for list items); an n range
    ({from, to, step}) and paper_truthful's mechanism names are values, not keys."""
    keys = set()
    for name, value in node.items():
        key = f"{prefix}{name}"
        keys.add(key)
        if isinstance(value, dict) and not key.endswith("paper_truthful") and not set(value) <= RANGE:
            keys |= _keys(value, key + ".")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for item in value:
                keys |= _keys(item, key + "[].")
    return keys


def test_committed_reference_is_the_generators_output():
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (REPO / "config/README.md").read_text() == config_docs.render(_schema())


def test_every_key_of_both_configs_is_documented():
    text = (REPO / "config/README.md").read_text()
    for name in ("config.yaml", "quick.yaml"):
        config = yaml.safe_load((REPO / "config" / name).read_text())
        missing = sorted(k for k in _keys(config) if f"| `{k}` |" not in text)
        assert not missing, (name, missing)


def test_a_schema_change_changes_the_reference():
    schema = _schema()
    before = config_docs.render(schema)
    schema["properties"]["fig07"]["properties"]["n"]["description"] = "a changed meaning"
    after = config_docs.render(schema)
    assert before != after and "| `fig07.n` | a changed meaning |" in after


def test_a_key_without_description_is_refused():
    schema = _schema()
    del schema["properties"]["seed"]["description"]
    try:
        config_docs.render(schema)
    except SystemExit as stop:
        assert "'seed' has no description" in str(stop)
    else:
        raise AssertionError("a key without a description was documented")


def test_defaults_and_allowed_values_come_from_the_schema():
    text = (REPO / "config/README.md").read_text()
    rows = {line.split(" | ", 1)[0]: line for line in text.splitlines() if line.startswith("| `")}
    assert rows["| `solver.method`"].endswith("| string | optional | one of simplex, ipm |")
    assert rows["| `solver.plain`"].endswith("| boolean | `false` | true or false |")
    assert "| `fig06.tolerance` |" in text and "| `1e-07` |" in text
