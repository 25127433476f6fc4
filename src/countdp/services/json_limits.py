"""Why a JSON file a user gave could not be parsed, in words (for the one line that names the file).

Python's ``json`` refuses two things a valid-looking file may hold with exceptions that are not
``JSONDecodeError``: nesting deeper than the interpreter's recursion limit (``RecursionError``) and
an integer of more than ``sys.get_int_max_str_digits()`` digits (a ``ValueError`` advising a call to
``sys.set_int_max_str_digits``, which a command's user cannot make).
"""

from __future__ import annotations

import sys


def json_problem(exc: BaseException) -> str:
    """The reason ``json.loads`` raised ``exc`` (a ``ValueError`` or ``RecursionError``), in words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "integer string conversion" in str(exc):
        return f"an integer of more than {sys.get_int_max_str_digits()} digits"
    return str(exc)


__all__ = ["json_problem"]
