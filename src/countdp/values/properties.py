"""The seven structural properties of Section IV-A by name, as values every layer shares.

Their definitions as rows of the design LP are :func:`countdp.design.constraints.property_rows`;
the checkers of a given matrix are :mod:`countdp.mechanisms.properties`.  Here are only the names,
their canonical order and the parsing of a user's list, which the catalogue of named mechanisms,
the checkers, the engine and the CLI all read.
"""

from __future__ import annotations

PROPERTIES = ("RH", "RM", "CH", "CM", "F", "WH", "S")
"""The seven structural properties of Section IV-A, in the paper's order."""

PROPERTY_NAMES = {
    "RH": "row honesty",
    "RM": "row monotonicity",
    "CH": "column honesty",
    "CM": "column monotonicity",
    "F": "fairness",
    "WH": "weak honesty",
    "S": "symmetry",
}


def parse_properties(props: object) -> tuple[str, ...]:
    """Normalise a property list ('WH,RM', ['wh', 'rm'], ...) to canonical order, or raise."""
    if props is None:
        return ()
    items = props.split(",") if isinstance(props, str) else list(props)
    names = {str(p).strip().upper() for p in items if str(p).strip()}
    unknown = sorted(names - set(PROPERTIES))
    if unknown:
        raise ValueError(f"unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                         f"allowed: {', '.join(PROPERTIES)}")
    return tuple(p for p in PROPERTIES if p in names)
