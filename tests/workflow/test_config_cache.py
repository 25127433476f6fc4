"""A config that passed its check is taken from the cache on the next run, and only then
(workflow/lib/config_cache.py): any change to the config, the schema or the cache file checks afresh."""

from __future__ import annotations

import copy
import json
import shutil

import config_cache
import config_check
import pytest
import yaml
from conftest import REPO
from snakemake.utils import validate as snakemake_validate

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture
def counted(monkeypatch):
    """The number of full checks made (config_check.check_config calls)."""
    calls = []
    check = config_check.check_config
    monkeypatch.setattr(config_check, "check_config", lambda *a: (calls.append(1), check(*a))[1])
    return calls


def test_second_call_is_served_from_the_cache(tmp_path, counted):
    cache = tmp_path / "checked.json"
    first = config_cache.checked(copy.deepcopy(CONFIG), SCHEMA, cache)
    second = config_cache.checked(copy.deepcopy(CONFIG), SCHEMA, cache)
    expected = copy.deepcopy(CONFIG)
    snakemake_validate(expected, str(SCHEMA))  # the defaults Snakemake would fill in
    assert first == second == expected
    assert len(counted) == 1


def test_a_changed_config_is_checked_again(tmp_path, counted):
    cache = tmp_path / "checked.json"
    config_cache.checked(copy.deepcopy(CONFIG), SCHEMA, cache)
    bad = copy.deepcopy(CONFIG)
    bad["fig07"]["alpha"] = 1.5
    with pytest.raises(config_check.ConfigError, match="fig07.alpha"):
        config_cache.checked(bad, SCHEMA, cache)
    assert len(counted) == 2
    config_cache.checked(copy.deepcopy(CONFIG), SCHEMA, cache)  # the good config is still cached
    assert len(counted) == 2


def test_a_changed_schema_or_a_damaged_cache_is_checked_again(tmp_path, counted):
    cache = tmp_path / "checked.json"
    config_cache.checked(copy.deepcopy(CONFIG), SCHEMA, cache)
    schema = tmp_path / "schema.yaml"
    shutil.copy(SCHEMA, schema)
    with schema.open("a") as handle:
        handle.write("\n# a comment\n")
    config_cache.checked(copy.deepcopy(CONFIG), schema, cache)
    assert len(counted) == 2
    cache.write_text("{not json")
    assert config_cache.checked(copy.deepcopy(CONFIG), schema, cache)["seed"] == CONFIG["seed"]
    assert len(counted) == 3
    assert json.loads(cache.read_text())["key"] == config_cache.fingerprint(CONFIG, schema)


def test_a_bad_config_is_never_cached(tmp_path):
    bad = copy.deepcopy(CONFIG)
    bad["fig09"]["n"] = []
    with pytest.raises(config_check.ConfigError, match="fig09.n"):
        config_cache.checked(bad, SCHEMA, tmp_path / "checked.json")
    assert not (tmp_path / "checked.json").exists()


def test_what_json_cannot_carry_exactly_is_not_stored(tmp_path):
    config_cache._store(tmp_path / "checked.json", "key", {"fig07": {1: 0.5}})  # JSON would give back "1"
    assert not list(tmp_path.iterdir())
