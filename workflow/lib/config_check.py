"""Validate the workflow configuration before any job runs, naming each bad key and what it allows.

Part of the workflow, not of the library: ``workflow/rules/common.smk`` imports it from
``workflow/lib/`` and calls :func:`check_config` right after the config is loaded.
Two layers:

1. the JSON schema (``workflow/schemas/config.schema.yaml``), with ``integer`` meaning a
   Python ``int`` (``4.0`` and ``True`` are not counts);
2. checks a schema cannot express: every ``alpha`` (numbers and ``"p/q"`` fractions alike)
   lies strictly between 0 and 1, every ``{from, to}`` range is non-empty, the LP solver
   has the method asked for (CLARABEL has no simplex), and the group sizes of Figures 9-13 can
   be evaluated (:mod:`config_routing`: every mechanism at every n asked for, Figure 9's L1 and
   L2 on the matrix path, ``fig09.n_by_mechanism`` only for mechanisms it plots);
3. every design the sweeps would make fits in memory (:mod:`config_fit`: each design's path and
   peak memory predicted by :func:`countdp.design.estimate.estimate_named`, nothing solved, against
   ``design_memory_mb`` or this machine's available memory), and so do the studies beyond the paper
   (:mod:`config_extensions`: the minimax, prior and subsets studies solve the whole design LP
   outside the engine, :func:`countdp.design.full_model.full_model_bytes`).

Each problem becomes one line ``config key 'fig11.p[2]': 1.5 is not allowed (...); allowed:
a number in [0, 1]``; all lines are raised together as one :class:`ConfigError`.
:func:`fill_defaults` then fills in the schema's defaults, as Snakemake's ``validate`` would.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml
from config_extensions import EXTENSION_SOURCES, extension_errors
from config_fit import FIT_SOURCES, fit_errors
from config_routing import FIGURE_MECHANISMS, L0_ONLY, ROUTING_SOURCES, routing_errors

from countdp.studies.naming import number_or_fraction

__all__ = ["EXTENSION_SOURCES", "FIGURE_MECHANISMS", "FIT_SOURCES", "L0_ONLY", "ROUTING_SOURCES", "ConfigError",
           "check_config", "config_errors", "describe", "fill_defaults", "load_schema"]



class ConfigError(ValueError):
    """The workflow configuration is invalid (the message lists every bad key)."""


def load_schema(path: str | os.PathLike) -> dict:
    """The schema as a dict (libyaml's loader where PyYAML has it: the workflow parses it on every run)."""
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _validator(schema: Mapping, defaults: bool = False):
    """The strict validator of ``schema``; with ``defaults``, one that also fills in the schema's defaults."""
    from jsonschema import Draft202012Validator, validators

    def is_int(checker, value) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_int)
    keywords = {}
    if defaults:
        check_properties = Draft202012Validator.VALIDATORS["properties"]

        def properties(validator, properties, instance, subschema):
            if validator.is_type(instance, "object"):
                for key, value in properties.items():
                    if "default" in value:
                        instance.setdefault(key, copy.deepcopy(value["default"]))
            yield from check_properties(validator, properties, instance, subschema)

        keywords["properties"] = properties
    strict = validators.extend(Draft202012Validator, keywords, type_checker=checker)
    return strict(schema)


# ------------------------------------------------------------------------- messages
def _key(path) -> str:
    key = ""
    for part in path:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key or "<top level>"


def _resolve(schema: Mapping, root: Mapping) -> Mapping:
    while isinstance(schema, Mapping) and "$ref" in schema and schema["$ref"].startswith("#/"):
        node = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _bound(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"  # 10000000, not 1e+07


def _interval(schema: Mapping) -> str | None:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if lo is None and hi is None:
        return None
    if hi is None:
        return (">= " if "minimum" in schema else "> ") + _bound(lo)
    if lo is None:
        return ("<= " if "maximum" in schema else "< ") + _bound(hi)
    left = "[" if "minimum" in schema else "("
    right = "]" if "maximum" in schema else ")"
    return f"in {left}{_bound(lo)}, {_bound(hi)}{right}"


def describe(schema: Mapping, root: Mapping | None = None, depth: int = 0) -> str:
    """The values ``schema`` allows, in words (its ``title`` when it has one)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if "title" in schema:
        return str(schema["title"])
    if depth > 4:
        return "see workflow/schemas/config.schema.yaml"
    if "oneOf" in schema or "anyOf" in schema:
        return " or ".join(describe(s, root, depth + 1) for s in schema.get("oneOf", schema.get("anyOf")))
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    kind = schema.get("type")
    if kind == "array":
        text = "a non-empty list" if schema.get("minItems", 0) >= 1 else "a list"
        if "items" in schema:
            text += " of " + describe(schema["items"], root, depth + 1)
        if schema.get("uniqueItems"):
            text += " (no repeats)"
        return text
    if kind == "object":
        props = list(schema.get("properties", {}))
        return "a mapping" + (" with keys " + ", ".join(props) if props else "")
    if kind in ("integer", "number"):
        word = "an integer" if kind == "integer" else "a number"
        bounds = _interval(schema)
        return f"{word} {bounds}" if bounds else word
    if kind == "string":
        if "pattern" in schema:
            return f"a string matching {schema['pattern']}"
        return "a string" + (" (non-empty)" if schema.get("minLength") else "")
    if kind == "boolean":
        return "true or false"
    return "see workflow/schemas/config.schema.yaml"


def _leaf(error):
    """Follow oneOf/anyOf branches down to the most relevant error; return the chain.

    A branch that failed on a value (a bound, an enum, an item) says more than one that
    failed on the type, so ``[0, 3]`` for an n range reports item 0, not "not a mapping".
    """
    chain = [error]
    while chain[-1].context:
        chain.append(min(chain[-1].context, key=lambda e: (e.validator == "type", -len(e.absolute_path))))
    return chain


def _schema_message(error, root: Mapping) -> str:
    chain = _leaf(error)
    leaf = chain[-1]
    path = list(leaf.absolute_path)
    if leaf.validator == "required":
        missing = [k for k in leaf.validator_value if not isinstance(leaf.instance, Mapping) or k not in leaf.instance]
        schema = _resolve(leaf.schema, root)
        props = schema.get("properties", {})
        name = missing[0] if missing else "?"
        allowed = describe(props[name], root) if name in props else "see the schema"
        return f"config key '{_key([*path, name])}' is missing; allowed: {allowed}"
    if leaf.validator == "additionalProperties":
        schema = _resolve(leaf.schema, root)
        known = list(schema.get("properties", {}))
        extra = [k for k in leaf.instance if k not in known] if isinstance(leaf.instance, Mapping) else []
        name = extra[0] if extra else "?"
        return (f"config key '{_key([*path, name])}' is unknown; allowed keys"
                f"{' of ' + repr(_key(path)) if path else ''}: {', '.join(known)}")
    titled = next((e.schema for e in reversed(chain) if isinstance(e.schema, Mapping) and "title" in e.schema),
                  None)
    allowed = describe(titled if titled is not None else leaf.schema, root)
    reason = "not of an allowed type" if leaf.validator == "type" and len(chain) > 1 else leaf.message
    if leaf.validator == "contains" and isinstance(leaf.validator_value, Mapping) and "const" in leaf.validator_value:
        reason = f"it leaves out {leaf.validator_value['const']}"
    value = repr(leaf.instance)
    if len(value) > 60:
        value = value[:57] + "..."
    return f"config key '{_key(path)}': {value} is not allowed ({reason}); allowed: {allowed}"


# ------------------------------------------------------------------------- semantic checks
ALPHA_ALLOWED = 'a number strictly between 0 and 1, or a fraction string "p/q" with 0 < p/q < 1'


def _walk(node, path=()) -> Iterator[tuple[tuple, str, object]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield path, key, value
            yield from _walk(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, (*path, i))


SOLVER_METHODS = {"HIGHS": ("simplex", "ipm"), "CLARABEL": ("ipm",)}
"""The methods each LP solver has (countdp.design.designer.SOLVERS; not imported: parsing stays light)."""


def _solver_errors(config: Mapping) -> list[str]:
    """A solver/method pair the designer does not have (the schema checks each key alone)."""
    solver = config.get("solver")
    if not isinstance(solver, Mapping) or "method" not in solver:
        return []  # no method: the planner's choice, or with plain the solver's first
    name, method = solver.get("name", "HIGHS"), solver["method"]
    if not isinstance(name, str) or name not in SOLVER_METHODS or not isinstance(method, str):
        return []  # the schema reports these
    allowed = SOLVER_METHODS[name]
    if method in allowed:
        return []
    return [f"config key 'solver.method': {method!r} is not allowed with solver {name}; "
            f"allowed: {', '.join(allowed)}"]


def _leaves(node, path=()) -> Iterator[tuple[tuple, object]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _non_finite_errors(config: Mapping) -> list[str]:
    """NaN and infinities (YAML's .nan, .inf): the schema's bounds compare false on NaN and let it pass."""
    return [f"config key '{_key(path)}': {value!r} is not allowed; allowed: a finite number"
            for path, value in _leaves(config) if isinstance(value, float) and not math.isfinite(value)]


def _semantic_errors(config: Mapping) -> list[str]:
    errors = _solver_errors(config) + _non_finite_errors(config) + routing_errors(config)
    for path, key, value in _walk(config):
        if key == "alpha":
            items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
            for i, item in items:
                where = (*path, key) if i is None else (*path, key, i)
                try:
                    a = number_or_fraction(item)
                    ok = math.isfinite(a) and 0 < a < 1
                except (ValueError, TypeError, ZeroDivisionError, OverflowError):
                    ok = False
                if not ok:
                    errors.append(f"config key '{_key(where)}': {item!r} is not allowed (alpha = exp(-epsilon) "
                                  f"must satisfy 0 < alpha < 1); allowed: {ALPHA_ALLOWED}")
        if isinstance(value, Mapping) and {"from", "to"} <= set(value):
            try:
                empty = int(value["from"]) > int(value["to"])
            except (TypeError, ValueError):
                empty = False
            if empty:
                errors.append(f"config key '{_key((*path, key))}': the range from {value['from']} to "
                              f"{value['to']} is empty; allowed: from <= to (both integers >= 1)")
    return errors


def config_errors(config: Mapping, schema: Mapping) -> list[str]:
    """Every problem of ``config`` as one line naming the key and the allowed values ([] if none)."""
    errors = sorted(_validator(schema).iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    lines = list(dict.fromkeys(_schema_message(e, schema) for e in errors))
    named = [line.split("'")[1] for line in lines]

    def reported(key: str) -> bool:  # the key or a parent of it already has a schema message
        return any(key == k or key.startswith((k + ".", k + "[")) for k in named)

    semantic = [line for line in _semantic_errors(config) if not reported(line.split("'")[1])]
    if lines or semantic:
        return lines + semantic  # the fit is estimated only for a config otherwise valid
    return fit_errors(config) + extension_errors(config)


def check_config(config: Mapping, schema: str | os.PathLike | Mapping) -> None:
    """Raise :class:`ConfigError` listing every bad key of ``config``; return silently if valid."""
    if not isinstance(schema, Mapping):
        schema = load_schema(Path(schema))
    lines = config_errors(config, schema)
    if lines:
        raise ConfigError("invalid configuration (workflow/schemas/config.schema.yaml); no job was run:\n  "
                          + "\n  ".join(lines))


def fill_defaults(config: dict, schema: Mapping) -> dict:
    """Fill the schema's ``default`` values into a valid ``config`` in place, as Snakemake's ``validate``
    does (without its second, slower parse of the schema); return ``config``."""
    for _ in _validator(schema, defaults=True).iter_errors(config):
        pass
    return config
