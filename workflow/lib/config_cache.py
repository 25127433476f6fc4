"""Check the workflow configuration once per distinct config: a no-op rerun skips the schema check.

Part of the workflow, not of the library: ``workflow/rules/common.smk`` calls :func:`checked`
while Snakemake parses the Snakefile.  Checking the config (``config_check``: jsonschema's
import, the schema walk, the semantic checks) and filling in the schema's defaults takes about
a tenth of a second on every ``snakemake`` start.  Once a config has passed, the filled-in
result is kept in a small JSON file under the fingerprint of everything the verdict depends on:
the config as Snakemake merged it, the schema file, and the sources of the checking modules
(with the routing of Figures 9-13 and the catalogue of structural forms it reads, the memory
estimate of the designs with its fit check, and that of the extension studies).  The fit check's
limit, when the config does not give ``design_memory_mb``, is the memory available when the config
was first checked.
Any change to one of them (or a missing, unreadable or foreign cache file) checks afresh, so a
bad config is always reported.  Configs that JSON cannot carry exactly are never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import config_check

__all__ = ["checked", "fingerprint"]


def fingerprint(config: dict, schema_path: Path) -> str | None:
    """SHA-256 of the config, the schema and the checkers' sources (None if the config is not JSON)."""
    try:
        text = json.dumps(config, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    digest = hashlib.sha256(text.encode())
    checkers = (config_check.__file__, sys.modules[config_check.number_or_fraction.__module__].__file__, __file__,
                *config_check.ROUTING_SOURCES, *config_check.FIT_SOURCES, *config_check.EXTENSION_SOURCES)
    for path in (schema_path, *checkers):
        digest.update(b"\0" + Path(path).read_bytes())
    return digest.hexdigest()


def _cached(cache: Path, key: str) -> dict | None:
    try:
        entry = json.loads(cache.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("config"), dict):
        return entry["config"]
    return None


def _store(cache: Path, key: str, config: dict) -> None:
    text = json.dumps({"key": key, "config": config}, allow_nan=False)
    if json.loads(text)["config"] != config:
        return  # JSON would not give this config back exactly
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.")
    except OSError:
        return  # a read-only working directory: check every time
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, cache)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def checked(config: dict, schema_path: Path, cache: Path) -> dict:
    """Check ``config`` (``config_check.ConfigError`` if invalid) and fill in the schema's defaults, in
    place; a config that passed before with the same schema and checkers is taken from ``cache``."""
    key = fingerprint(config, schema_path)
    filled = _cached(cache, key) if key else None
    if filled is not None:
        config.clear()
        config.update(filled)
        return config
    schema = config_check.load_schema(schema_path)
    config_check.check_config(config, schema)
    config_check.fill_defaults(config, schema)
    if key:
        _store(cache, key, config)
    return config
