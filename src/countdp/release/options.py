"""A release asked for in plain values, checked once, as a :class:`~countdp.release.request.ReleaseRequest`.

The command line (``countdp release``) and the Python API (:func:`countdp.release_table`,
:func:`countdp.release_records`) both describe a release with :class:`Options` and build it here,
so they share every check and every refusal.  A refusal is one ``ValueError`` line that names
each option as the caller spells it: ``--total-epsilon`` on the command line, ``total_epsilon=``
in Python (:class:`Spelling`).  Values may be text as typed (``"1/5"``, ``"a,b"``) or Python values
(a ``Fraction``, a float, which is its binary value, a list).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from countdp.release.request import ColumnPrivacy, ReleaseRequest
from countdp.services.artifact import load_design
from countdp.validation import file_problem, folder_problem
from countdp.values.alpha import alpha_from_epsilon, exact_alpha
from countdp.values.catalogue import CHAIN_MECHANISMS, MECHANISMS

CLI_FLAGS = {"counts": "--count-column", "size": "--size-column", "noisy": "--noisy-column", "source": "--input",
             "mechanism_file": "FILE"}
"""Options whose command-line flag is not ``--`` and the keyword with ``-`` for ``_``."""


@dataclass(frozen=True)
class Spelling:
    """How a message names an option: ``cli`` (``--total-epsilon``) or ``python`` (``total_epsilon=``)."""

    style: str = "cli"

    def __call__(self, key: str) -> str:
        if self.style == "python":
            return f"{key}="
        return CLI_FLAGS.get(key, "--" + key.replace("_", "-"))

    def repeated(self, flag: str, key: str) -> str:
        """A repeatable option, singular on the command line (``--count``, each a pair) and plural as one
        Python argument (``counts=``, a dict): ``flag``'s spelling in ``cli``, ``key``'s in ``python``."""
        return self(flag) if self.style == "cli" else self(key)

    def many(self, *keys: str) -> str:
        """``--a, --b and --c``."""
        names = [self(k) for k in keys]
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


CLI = Spelling("cli")
PYTHON = Spelling("python")


@dataclass
class Options:
    """What a caller asks of a table release; every field as the caller gave it (``None``: not given)."""

    counts: object = None
    out: object = None
    size: str | None = None
    mechanism: str | None = None
    mechanism_file: object = None
    objective: str = "L0"
    alpha: object = None
    epsilon: object = None
    total_epsilon: object = None
    levels: object = None
    invariant: object = None
    invariant_by: str | None = None
    target_alpha: object = None
    keep: object = None
    noisy: object = None
    cache: object = None
    budget: object = None
    seed: int | None = None
    overwrite: bool = False
    command: tuple[str, ...] = field(default_factory=tuple)


def names(value: object, what: str) -> list[str]:
    """Column names: ``"a,b"`` or a sequence of names; ``ValueError`` for an empty name."""
    items = [item.strip() for item in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    if any(item == "" for item in items):
        raise ValueError(f"{what} has an empty name in {value!r}")
    return items


def _values(value: object) -> list:
    """``"a,b"`` split at commas; a sequence as it is; anything else alone."""
    if isinstance(value, str):
        return value.split(",")
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def _alpha(value: object) -> Fraction:
    return exact_alpha(value.strip() if isinstance(value, str) else value)


def _epsilon(value: object) -> Fraction:
    try:
        epsilon = Fraction(value.strip()) if isinstance(value, str) else Fraction(value)
    except (ValueError, ZeroDivisionError, TypeError):
        raise ValueError(f"epsilon must be a number or a 'p/q' fraction, got {value!r}") from None
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0, got {value!r}")
    return epsilon


def _per_column(values: list, columns: int, flag: str) -> list:
    if len(values) == 1:
        return values * columns
    if len(values) != columns:
        raise ValueError(f"{flag} gives {len(values)} values for {columns} count columns; give one, or one each")
    return values


def levels_of(value: object, spell: Spelling) -> tuple[Fraction, ...]:
    """Two or more exact alphas, strictly increasing (the first is the least private)."""
    flag = spell("levels")
    if isinstance(value, str):
        names(value, flag)  # an empty item is refused by name
    try:
        levels = tuple(_alpha(a) for a in _values(value))
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
    if len(levels) < 2:
        raise ValueError(f"{flag} needs at least two alphas, got {value!r}; for one level use {spell('alpha')}")
    if any(b <= a for a, b in zip(levels, levels[1:], strict=False)):
        raise ValueError(f"{flag} must increase strictly (least private first), got {value!r}")
    return levels


def _invariant_on(options: Options) -> bool:
    return options.invariant not in (None, False)


def _target(options: Options, spell: Spelling) -> Fraction:
    """The target alpha: only for a conditioned release of GM or EM (whose alpha can be chosen in closed form)."""
    if not _invariant_on(options):
        raise ValueError(f"{spell('target_alpha')} goes with {spell('invariant')} total")
    if options.mechanism not in ("GM", "EM"):
        raise ValueError(f"{spell('target_alpha')} chooses the alpha of GM or EM; give {spell('mechanism')} GM or EM")
    try:
        return _alpha(options.target_alpha)
    except ValueError as exc:
        raise ValueError(f"{spell('target_alpha')}: {exc}") from None


def _invariant(options: Options, levels: tuple, spell: Spelling) -> dict:
    """The request's invariant fields."""
    if options.invariant not in (None, False, True, "total"):
        raise ValueError(f"{spell('invariant')} takes 'total', got {options.invariant!r}")
    if options.invariant_by is not None and not _invariant_on(options):
        raise ValueError(f"{spell('invariant_by')} goes with {spell('invariant')} total")
    if _invariant_on(options) and levels:
        raise ValueError(f"{spell('invariant')} and {spell('levels')} cannot be combined")
    target = None if options.target_alpha is None else _target(options, spell)
    return {"invariant": _invariant_on(options), "invariant_by": options.invariant_by, "target_alpha": target}


def _privacy(options: Options, columns: int, spell: Spelling) -> list[tuple[Fraction, Fraction | None]]:
    """``(alpha, epsilon requested or None)`` for each count column."""
    keys = ("alpha", "epsilon", "total_epsilon", "levels", "target_alpha")
    if sum(getattr(options, key) is not None for key in keys) != 1:
        raise ValueError(f"give exactly one of {spell.many(*keys)}")
    if options.levels is not None:
        return [(levels_of(options.levels, spell)[0], None)] * columns
    if options.target_alpha is not None:
        return [(_target(options, spell), None)] * columns
    if options.alpha is not None:
        return [(_alpha(a), None) for a in _per_column(_values(options.alpha), columns, spell("alpha"))]
    if options.epsilon is not None:
        epsilons = _per_column([_epsilon(e) for e in _values(options.epsilon)], columns, spell("epsilon"))
    else:
        epsilons = [_epsilon(options.total_epsilon) / columns] * columns
    return [(alpha_from_epsilon(e), e) for e in epsilons]


def load_mechanism(path: Path):
    """A mechanism file written by ``countdp design``, or ``ValueError`` naming it."""
    if (problem := file_problem(path, "a mechanism file")) is not None:
        raise ValueError(f"{path}: {problem}")
    return load_design(Path(path))


def _common(options: Options, spell: Spelling, counts: list[str], input_path: Path) -> dict:
    keep = options.keep
    if isinstance(keep, str):
        keep = tuple(names(keep, spell("keep"))) if keep.strip() else ()
    elif keep is not None:
        keep = tuple(names(keep, spell("keep"))) if len(keep) else ()
    seed = options.seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0):
        raise ValueError(f"{spell('seed')} must be an integer >= 0, got {seed!r}")
    if options.seed is not None and options.budget is not None:
        raise ValueError(f"{spell('seed')} makes the noise reproducible from the sidecar, so a seeded release protects "
                         f"nobody and cannot spend a privacy budget: drop {spell('seed')} (or {spell('budget')}, for "
                         "an experiment)")
    out_text = None if options.out is None else str(options.out)
    # a trailing "/" (which Path drops) asks for a release folder
    return {"input": input_path, "out": None if out_text is None else Path(out_text),
            "out_folder": out_text is not None and out_text.endswith("/"), "out_typed": out_text, "keep": keep,
            "seed": None if seed is None else int(seed),
            "budget": None if options.budget is None else Path(options.budget),
            "overwrite": bool(options.overwrite), "command": tuple(options.command)}


def build_request(options: Options, input_path: Path, spell: Spelling = CLI, **extra) -> tuple[ReleaseRequest, object]:
    """The checked request and, for a release with one mechanism file, that file's design (else ``None``).

    ``extra``: the request's fields for a source that is not a file (``source``, ``records``).
    """
    counts = names(options.counts, spell("counts"))
    noisy = names(options.noisy, spell("noisy")) if options.noisy else [f"noisy_{c}" for c in counts]
    if len(noisy) != len(counts):
        raise ValueError(f"{spell('noisy')} gives {len(noisy)} names for {len(counts)} count columns")
    common = {**_common(options, spell, counts, input_path), **extra}
    if options.size is None:
        return _file_request(options, spell, counts, noisy, common)
    if options.mechanism_file is not None:
        raise ValueError(f"with {spell('size')} the mechanisms are designed per size: drop {spell('mechanism_file')}")
    levels = () if options.levels is None else levels_of(options.levels, spell)
    mechanism = None if options.mechanism is None else str(options.mechanism).upper()
    if mechanism is not None and mechanism not in MECHANISMS:
        raise ValueError(f"{spell('mechanism')} must be one of {', '.join(MECHANISMS)}, got {options.mechanism!r}")
    if levels and mechanism not in (None, *CHAIN_MECHANISMS):
        raise ValueError(f"{spell('levels')} chains {', '.join(CHAIN_MECHANISMS)}; {spell('mechanism')} {mechanism} "
                         "cannot be released at several levels")
    if levels and options.cache:
        raise ValueError(f"{spell('levels')} builds each size's chain of GM mechanisms in memory; "
                         f"drop {spell('cache')}")
    if mechanism is None and not levels:
        raise ValueError(f"{spell('size')} needs {spell('mechanism')}")
    options.mechanism = mechanism
    privacy = _privacy(options, len(counts), spell)
    columns = tuple(ColumnPrivacy(c, a, e, name, levels)
                    for c, (a, e), name in zip(counts, privacy, noisy, strict=True))
    cache = None if options.cache is None else Path(options.cache)
    if cache is not None and (problem := folder_problem(cache)) is not None:
        raise ValueError(f"{spell('cache')} {cache}: {problem}; give a folder of designed mechanisms")
    return ReleaseRequest(columns=columns, size_column=options.size, mechanism=mechanism or "GM",
                          objective=options.objective, cache=cache, **common,
                          **_invariant(options, levels, spell)), None


def _file_request(options: Options, spell: Spelling, counts: list[str], noisy: list[str], common: dict):
    """A release with one mechanism file for every row."""
    if options.mechanism_file is None:
        raise ValueError(f"a table release needs a mechanism {spell('mechanism_file')}, or {spell('size')} with "
                         f"{spell('mechanism')}")
    given = ("mechanism", "alpha", "epsilon", "total_epsilon", "cache", "levels", "target_alpha")
    if any(getattr(options, key) for key in given):
        order = ("mechanism", "alpha", "epsilon", "total_epsilon", "levels", "target_alpha", "cache")
        raise ValueError(f"{spell.many(*order)} go with {spell('size')}")
    design = load_mechanism(options.mechanism_file)
    alpha = exact_alpha(design.alpha_exact)
    columns = tuple(ColumnPrivacy(c, alpha, None, name) for c, name in zip(counts, noisy, strict=True))
    return ReleaseRequest(columns=columns, mechanism_file=Path(options.mechanism_file), n=design.n, **common,
                          **_invariant(options, (), spell)), design


__all__ = ["CLI", "CLI_FLAGS", "PYTHON", "Options", "Spelling", "build_request", "levels_of", "load_mechanism",
           "names"]
