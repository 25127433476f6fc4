"""How artifacts are named: alpha, objective and LP-name spellings (standard library only).

The workflow imports this module while Snakemake parses the Snakefile, so it must stay cheap:
no numpy, no pandas, no solver.  The heavier library modules agree with it
(``countdp.values.properties.PROPERTIES``, ``countdp.values.objectives.parse_objective``;
tests/studies/test_studies.py checks that they do).
"""

from __future__ import annotations

import re
from fractions import Fraction

PROPERTIES = ("RH", "RM", "CH", "CM", "F", "WH", "S")
"""The seven structural properties in the paper's (canonical) order."""


def number_or_fraction(value: object) -> float:
    """A number, or a ``"p/q"`` fraction string such as ``"10/11"``, as a float (no range check);
    ``ValueError`` for one beyond the floats (YAML reads ``1e400`` as the string ``'1e400'``)."""
    try:
        return float(Fraction(value.replace(" ", ""))) if isinstance(value, str) else float(value)
    except OverflowError:
        raise ValueError(f"{value!r} is beyond the range of a float") from None


def parse_alpha(alpha: object) -> float:
    """A number or ``"p/q"`` string as a float in (0, 1)."""
    value = number_or_fraction(alpha)
    if not 0.0 < value < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return value


def alpha_spelling(alpha: object) -> str:
    """The spelling of alpha in artifact paths: the shortest repr of the float."""
    return repr(parse_alpha(alpha))


def objective_slug(objective: object) -> str:
    """File-name-safe objective: ``"L0d:1"`` -> ``"L0d1"``; L0, L1, L2 unchanged (case-insensitive), or raise."""
    text = str(objective).strip().upper().replace(",", "")
    if text in ("L0", "L1", "L2"):
        return text
    match = re.fullmatch(r"L0D[:=]*(\d+)", text)
    if match is None:
        raise ValueError(f"unknown objective {objective!r}; allowed: L0, L0d:D (D >= 0), L1, L2")
    return f"L0d{int(match[1])}"


def lp_name(properties: object) -> str:
    """``LP-{props}`` in canonical order (``'WH,RM'``, ``['wh', 'rm']``, ...), or ``LP-none`` for BasicDP only."""
    items = properties.split(",") if isinstance(properties, str) else list(properties or ())
    names = {str(p).strip().upper() for p in items} - {""}
    if names - set(PROPERTIES):
        raise ValueError(f"unknown properties {', '.join(sorted(names - set(PROPERTIES)))}; "
                         f"allowed: {', '.join(PROPERTIES)}")
    return "LP-" + ("+".join(p for p in PROPERTIES if p in names) or "none")


def lp_properties(mechanism: str) -> tuple[str, ...] | None:
    """Properties of an ``LP-{props}`` name (canonical order enforced), else ``None``."""
    if not mechanism.startswith("LP-"):
        return None
    body = mechanism[3:]
    if body == "none":
        return ()
    props = tuple(body.split("+"))
    canonical = tuple(p for p in PROPERTIES if p in props)
    if props != canonical or len(set(props)) != len(props):
        raise ValueError(f"{mechanism!r}: properties must be '+'-joined in the order {','.join(PROPERTIES)}")
    return props
