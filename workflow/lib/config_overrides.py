"""An n range given in an override config file replaces the base config's range whole.

Part of the workflow, not of the library: ``workflow/rules/common.smk`` calls
:func:`replace_override_ranges` before the config is checked.  Snakemake deep-merges every
``--configfile`` (and ``--config``) into ``config/config.yaml``, mapping by mapping, so an
override ``fig13.n: {from: 2, to: 7}`` over the base ``{from: 2, to: 16, step: 2}`` would keep the
base's ``step`` and run n = 2, 4, 6, while config/README.md says a step left out is 1.  A range is
one value, not a block of settings: here every ``{from, to[, step]}`` mapping an override gives is
put back whole, over what the merge made of it, so the config holds exactly the range the override
wrote (a range left incomplete, e.g. ``{to: 7}``, is then refused by the check, naming the
missing key).  Every other mapping stays merged key by key, as Snakemake merges it.

The overrides are applied in Snakemake's order (each config file in turn, then ``--config``), so
a later override's value at a key, range or not, wins over an earlier one's, as in the merge.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, MutableMapping, Sequence

__all__ = ["RANGE_KEYS", "is_range", "override_ranges", "replace_override_ranges"]

RANGE_KEYS = frozenset({"from", "to", "step"})
"""The keys of an n range (config/README.md: ``{from: a, to: b, step: s}``, step 1 if left out)."""


def is_range(value: object) -> bool:
    """Whether ``value`` is written as an n range: a non-empty mapping with only range keys, or with
    ``from`` or ``to`` (a misspelt key beside them is the check's to report)."""
    if not isinstance(value, Mapping) or not value:
        return False
    return set(value) <= RANGE_KEYS or bool({"from", "to"} & set(value))


def _merge(merged: MutableMapping, override: Mapping) -> None:
    """Snakemake's deep merge of ``override`` into ``merged``, except that a range replaces whatever
    was at its key (an earlier override's range included)."""
    for key, value in override.items():
        if isinstance(value, Mapping) and not is_range(value):
            if not isinstance(merged.get(key), MutableMapping) or is_range(merged.get(key)):
                merged[key] = {}
            _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)


def _ranges(node: Mapping, path: tuple = ()) -> Iterator[tuple[tuple, Mapping]]:
    for key, value in node.items():
        if is_range(value):
            yield (*path, key), value
        elif isinstance(value, Mapping):
            yield from _ranges(value, (*path, key))


def override_ranges(overrides: Sequence[Mapping]) -> dict[tuple, Mapping]:
    """``{key path: range}`` of every range the ``overrides`` (in Snakemake's order) leave in place."""
    merged: dict = {}
    for override in overrides:
        if isinstance(override, Mapping):
            _merge(merged, override)
    return dict(_ranges(merged))


def replace_override_ranges(config: MutableMapping, overrides: Sequence[Mapping]) -> list[str]:
    """Put every range the ``overrides`` give back into ``config`` whole (in place), over Snakemake's
    merge of it with the base config's range; return the dotted keys replaced (for a message)."""
    replaced = []
    for path, value in override_ranges(overrides).items():
        node = config
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, MutableMapping) else None
        if isinstance(node, MutableMapping) and node.get(path[-1]) != value:
            node[path[-1]] = copy.deepcopy(dict(value))
            replaced.append(".".join(map(str, path)))
    return replaced
