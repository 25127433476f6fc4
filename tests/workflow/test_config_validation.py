"""Bad configuration values stop the workflow before any job runs, naming the key and what it allows.

Two layers (see workflow/lib/config_check.py and workflow/rules/common.smk):

- in-process, fast: every key family of the issue (alpha, n, empty lists, mechanism, property,
  objective, d, repetitions, p, ranges, unknown keys) mutated on the merged default + quick
  config and fed to ``config_errors``; hypothesis draws alphas, counts and probabilities
  (well-formed and malformed) and checks the verdict against the definition;
- end to end, two ``snakemake -n`` runs in a temporary copy of the repository: one config with
  a bad value in every key family (each key must be named), one with a single bad "p/q" alpha;
  both must fail before any job with no results/ created.
"""

from __future__ import annotations

import copy
import fractions
import math
import re
from pathlib import Path

import pytest
import yaml
from config_check import ConfigError, check_config, config_errors, fill_defaults, load_schema
from conftest import REPO, copy_workflow, snakemake
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snakemake.utils import update_config
from snakemake.utils import validate as snakemake_validate

SCHEMA_PATH = REPO / "workflow" / "schemas" / "config.schema.yaml"
SCHEMA = load_schema(SCHEMA_PATH)


def _load(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def _merged(*names: str) -> dict:
    """What Snakemake sees: config/config.yaml updated by each --configfile in turn."""
    config = _load("config.yaml")
    for name in names:
        update_config(config, _load(name))
    return config


DEFAULT = _merged()
QUICK = _merged("quick.yaml")


def _set(config: dict, key: str, value) -> dict:
    """A deep copy of ``config`` with ``key`` ("fig11.p", "fig01.panels.0.objective") set to ``value``."""
    out = copy.deepcopy(config)
    *parents, last = key.split(".")
    node = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def _named(key: str) -> str:
    """The spelling of ``key`` in messages: fig01.panels.0.objective -> fig01.panels[0].objective."""
    return re.sub(r"\.(\d+)", r"[\1]", key)


# --------------------------------------------------------------------------- in-process
@pytest.mark.parametrize("config", [DEFAULT, QUICK], ids=["default", "quick"])
def test_shipped_configs_are_valid(config):
    assert config_errors(config, SCHEMA) == []
    check_config(copy.deepcopy(config), SCHEMA_PATH)
    snakemake_validate(copy.deepcopy(config), str(SCHEMA_PATH))  # Snakemake's own check agrees


def _sparse(config: dict) -> dict:
    """``config`` without the keys the schema has defaults for (solver, data, fig02.properties, ...)."""
    out = copy.deepcopy(config)
    out.pop("solver")
    out["data"] = {}
    out["fig02"].pop("properties")
    out["fig03_04"].pop("n")
    out["fig08"].pop("base", None)
    return out


@pytest.mark.parametrize("config", [DEFAULT, QUICK, _sparse(QUICK)], ids=["default", "quick", "sparse"])
def test_defaults_filled_as_snakemake_fills_them(config):
    theirs = copy.deepcopy(config)
    snakemake_validate(theirs, str(SCHEMA_PATH))
    assert fill_defaults(copy.deepcopy(config), SCHEMA) == theirs


def test_sparse_config_gets_the_schema_defaults():
    config = fill_defaults(_sparse(QUICK), SCHEMA)
    assert config["solver"] == {"name": "HIGHS", "plain": False}  # no method: the planner chooses
    assert config["fig02"]["properties"] == ["RH", "RM", "CH", "CM", "F", "WH", "S"]
    assert config["fig08"]["base"] == ["WH", "S"]
    assert config["data"]["source"] == "auto" and config["data"]["population"] == 10000


BAD = [
    # alpha: out of (0, 1) as a number, as a fraction, malformed
    ("fig07.alpha", 0), ("fig07.alpha", 1.0), ("fig07.alpha", -0.5), ("fig07.alpha", "3/2"),
    ("fig07.alpha", "0/7"), ("fig07.alpha", "7/7"), ("fig07.alpha", "0.5"), ("fig07.alpha", "2/0"),
    ("fig11.alpha", ["2/3", 1.5]), ("fig01.alpha", float("nan")), ("fig09.convergence_check.alpha", "11/10"),
    ("extensions.prior.alpha", 2), ("fig03_04.alpha", [0.5, "1/1"]),
    # n: below 1, not an integer
    ("fig07.n", 0), ("fig07.n", -3), ("fig07.n", 4.5), ("fig07.n", 4.0), ("fig07.n", True), ("fig07.n", "4"),
    ("fig09.n", [2, 0]), ("fig09.n", {"from": 0, "to": 3}), ("fig09.n", {"from": 5, "to": 2}),
    ("fig13.n", {"from": 2, "to": 16, "step": 0}), ("fig01.panels.0.n", 0), ("fig08.vs_alpha.n", 2.5),
    # empty lists
    ("fig11.p", []), ("fig09.alpha", []), ("fig09.mechanisms", []), ("fig01.panels", []), ("fig12.d", []),
    ("fig10.targets", []), ("fig09.n", []), ("fig06.properties", []), ("fig08.combinations", []),
    # unknown mechanism, property, objective, target, solver
    ("fig06.mechanisms", ["GM", "XM"]), ("fig11.mechanisms", ["gm"]), ("fig07.paper_truthful", {"QM": 0.2}),
    ("fig06.properties", ["S", "ZZ"]), ("fig02.properties", ["rh"]), ("fig08.base", ["WH", "T"]),
    ("fig01.panels.0.objective", "L3"), ("fig01.panels.0.objective", "L0d:-1"),
    ("extensions.prior.objectives", ["Linf"]), ("fig10.targets", ["age"]), ("solver.name", "GUROBI"),
    ("solver.method", "barrier"), ("extensions.objectives.heatmap_sets", ["XX+S"]),
    # d, repetitions, p
    ("fig11.d", -1), ("fig11.d", 1.5), ("fig12.d", [0, -2]), ("fig11.repetitions", 0), ("fig13.repetitions", -4),
    ("fig10.repetitions", 2.0), ("fig11.p", [0.1, 1.5]), ("fig11.p", [-0.1]), ("fig13.p", ["0.5"]),
    ("extensions.prior.binomial_p", [1.01]),
    # other ranges and types
    ("seed", -1), ("data.population", 0), ("data.source", "web"), ("fig06.tolerance", 0),
    ("fig09.convergence_tolerance", 0.5), ("fig10.alpha", [0.5]),
]


@pytest.mark.parametrize("key,value", BAD, ids=[f"{k}={v!r}" for k, v in BAD])
def test_bad_value_is_rejected_naming_the_key(key, value):
    errors = config_errors(_set(QUICK, key, value), SCHEMA)
    assert errors, f"{key}={value!r} was accepted"
    named = _named(key)
    assert any(f"config key '{named}" in line for line in errors), errors
    assert all("allowed" in line for line in errors), errors
    with pytest.raises(ConfigError, match=re.escape(named)):
        check_config(_set(QUICK, key, value), SCHEMA)


@pytest.mark.parametrize("key", ["fig11.p", "fig07", "extensions.prior", "data.source", "fig09.convergence_check"])
def test_missing_key_is_named(key):
    config = copy.deepcopy(QUICK)
    *parents, last = key.split(".")
    node = config
    for part in parents:
        node = node[part]
    del node[last]
    errors = config_errors(config, SCHEMA)
    assert errors and f"config key '{key}' is missing" in errors[0]


def test_unknown_key_lists_the_allowed_keys():
    errors = config_errors(_set(QUICK, "fig11.reps", 3), SCHEMA)
    assert errors == [f"config key 'fig11.reps' is unknown; allowed keys of 'fig11': "
                      f"{', '.join(SCHEMA['properties']['fig11']['properties'])}"]


def test_every_problem_is_reported_at_once():
    config = _set(_set(_set(QUICK, "fig11.p", [2.0]), "fig07.alpha", "5/3"), "seed", -1)
    keys = [line.split("'")[1] for line in config_errors(config, SCHEMA)]
    assert keys == ["fig11.p[0]", "seed", "fig07.alpha"]


@pytest.mark.parametrize("alpha", ["2/3", " 10 / 11 ", "99/100", 0.62, 1e-9, 0.9999999999])
def test_good_alphas_are_accepted(alpha):
    assert config_errors(_set(QUICK, "fig07.alpha", alpha), SCHEMA) == []
    assert config_errors(_set(QUICK, "fig11.alpha", [alpha, 0.91]), SCHEMA) == []


# --------------------------------------------------------------------------- hypothesis
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

junk = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
numbers = st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True))
fractions_ = st.builds(lambda p, q: f"{p}/{q}", st.integers(0, 30), st.integers(1, 30))


def _alpha_ok(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return math.isfinite(value) and 0 < value < 1
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*/\s*[1-9]\d*\s*", value):
        return 0 < fractions.Fraction(value.replace(" ", "")) < 1
    return False


@FAST
@given(st.one_of(numbers, fractions_, junk))
def test_alpha_verdict_matches_definition(value):
    errors = config_errors(_set(QUICK, "fig07.alpha", value), SCHEMA)
    assert (errors == []) == _alpha_ok(value), (value, errors)
    assert all(line.startswith("config key 'fig07.alpha'") for line in errors)


@FAST
@given(st.one_of(numbers, junk))
def test_count_verdict_matches_definition(value):
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    for key in ("fig07.n", "fig11.repetitions"):
        errors = config_errors(_set(QUICK, key, value), SCHEMA)
        assert (errors == []) == ok, (key, value, errors)
        assert all(line.startswith(f"config key '{key}'") for line in errors)


@FAST
@given(st.lists(st.one_of(numbers, junk), max_size=4))
def test_probability_list_verdict_matches_definition(values):
    def ok(p):
        return isinstance(p, int | float) and not isinstance(p, bool) and 0 <= p <= 1

    unique = all(not (a == b) for i, a in enumerate(values) for b in values[:i])  # 0 == 0.0: the same probability
    expected = bool(values) and all(ok(p) for p in values) and unique
    errors = config_errors(_set(QUICK, "fig11.p", values), SCHEMA)
    if expected:
        assert errors == [], (values, errors)
    elif values and not all(ok(p) for p in values):
        assert errors and all(line.startswith("config key 'fig11.p") for line in errors)


@pytest.mark.parametrize("values", [[float("nan")], [0.5, float("inf")], [0, 0.0]])
def test_probability_lists_hypothesis_found(values):
    """NaN passed the schema's bounds (every comparison with NaN is false); 0 and 0.0 are one probability."""
    errors = config_errors(_set(QUICK, "fig11.p", values), SCHEMA)
    assert errors and all(line.startswith("config key 'fig11.p") for line in errors), errors


KEYS = [k for k, _ in BAD]


@FAST
@given(st.sampled_from(sorted(set(KEYS))), st.one_of(numbers, fractions_, junk))
def test_any_value_anywhere_gives_messages_not_crashes(key, value):
    """Whatever is put at a key, the checker returns messages (never raises) naming a real key."""
    errors = config_errors(_set(QUICK, key, value), SCHEMA)
    for line in errors:
        assert line.startswith("config key '") and "allowed" in line
        assert line.split("'")[1].split("[")[0].split(".")[0] in SCHEMA["properties"]


@FAST
@given(st.integers(1, 50), st.integers(1, 50), st.integers(1, 5))
def test_ranges_are_non_empty(start, stop, step):
    errors = config_errors(_set(QUICK, "fig09.n", {"from": start, "to": stop, "step": step}), SCHEMA)
    assert (errors == []) == (start <= stop), errors


# --------------------------------------------------------------------------- end to end
EVERY_FAMILY = {
    "fig07.alpha": 1.5, "fig11.alpha": ["7/5"], "fig07.n": 0, "fig03_04.n": 2.5, "fig09.mechanisms": [],
    "fig06.mechanisms": ["XM"], "fig06.properties": ["ZZ"], "fig01.panels.1.objective": "L7",
    "fig11.d": -1, "fig12.repetitions": 0, "fig13.p": [1.2], "fig08.vs_n.n": {"from": 9, "to": 3},
}


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    return copy_workflow(tmp_path_factory.mktemp("config") / "repo")


def _dry_run(work: Path, config: dict, name: str):
    path = work / "config" / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return snakemake(work, "-n", "--cores", "1", configfile=f"config/{name}", timeout=300)


@pytest.mark.workflow
def test_workflow_stops_naming_every_bad_key(workflow_copy):
    config = _load("quick.yaml")
    for key, value in EVERY_FAMILY.items():
        config = _set(config, key, value)
    done = _dry_run(workflow_copy, config, "bad_all.yaml")
    text = done.stdout + done.stderr
    assert done.returncode != 0
    assert "no job was run" in text
    missing = [key for key in EVERY_FAMILY if f"config key '{_named(key)}" not in text]
    assert not missing, text[-4000:]
    assert not (workflow_copy / "results").exists()


@pytest.mark.workflow
def test_workflow_stops_on_a_fraction_alpha_above_one(workflow_copy):
    done = _dry_run(workflow_copy, _set(_load("quick.yaml"), "fig09.alpha", ["10/11", "11/10"]), "bad_alpha.yaml")
    text = done.stdout + done.stderr
    assert done.returncode != 0
    assert "config key 'fig09.alpha[1]': '11/10' is not allowed" in text
    assert 'allowed: a number strictly between 0 and 1, or a fraction string "p/q" with 0 < p/q < 1' in text
    assert not (workflow_copy / "results").exists()


@pytest.mark.workflow
def test_workflow_stops_on_clarabel_with_simplex(workflow_copy):
    """`solver: {name: CLARABEL, method: simplex}` asks Clarabel for a method it lacks (left out, the
    method is the planner's choice): the dry run stops while the config is read, with one line that
    names the key, the value and the allowed one."""
    config = {k: v for k, v in _load("quick.yaml").items() if k != "solver"}
    done = _dry_run(workflow_copy, {**config, "solver": {"name": "CLARABEL", "method": "simplex"}}, "clarabel.yaml")
    text = done.stdout + done.stderr
    assert done.returncode != 0 and "no job was run" in text, text[-4000:]
    problems = [line.strip() for line in text.splitlines() if "config key" in line]
    assert problems == ["config key 'solver.method': 'simplex' is not allowed with solver CLARABEL; allowed: ipm"]
    assert "Job stats" not in text and not (workflow_copy / "results").exists()


@pytest.mark.parametrize("solver", [{"name": ["HIGHS"]}, {"name": "HIGHS", "method": ["ipm"]}])
def test_a_list_where_the_solver_names_a_string_is_one_line(solver):
    """Hypothesis found these crashing the solver/method pairing check (a list is unhashable)."""
    errors = config_errors({**QUICK, "solver": solver}, SCHEMA)
    assert errors and all(line.startswith("config key 'solver") for line in errors), errors
