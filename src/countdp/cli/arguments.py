"""What every ``countdp`` command shares: the one-line usage error and the argument types.

A bad argument never prints argparse's usage dump: :class:`Parser` raises :class:`UsageError`,
which :func:`countdp.cli.main` prints as one line and turns into exit status 2.
"""

from __future__ import annotations

import argparse

from countdp.validation import check_n, check_tol
from countdp.values.alpha import exact_alpha


class UsageError(Exception):
    """A bad argument or input file: reported in one line, exit status 2."""


class Once(argparse.Action):
    """Store an option's value, refusing the option a second time (no silent "last one wins")."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if option_string is not None:
            seen = namespace.__dict__.setdefault("_given_once", set())
            if self.dest in seen:
                raise UsageError(f"{option_string} is given more than once")
            seen.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one :class:`UsageError` line, not a usage dump, and
    whose value options refuse to be given twice (:class:`Once` is every option's default action)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)
        self.register("action", "store", Once)

    def error(self, message: str) -> None:
        raise UsageError(message)


def positive_int(text: str) -> int:
    """An integer n >= 1 (``"12"``, ``"1e3"``), or an argparse error naming the text."""
    stripped = text.strip()
    try:
        return check_n(int(stripped) if stripped.lstrip("+-").isdigit() else float(stripped))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"n must be an integer >= 1, got {text!r}") from None


def checked(check, text: str):
    """``check(text)``, with its ``ValueError`` turned into an argparse error (one line)."""
    try:
        return check(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def alpha_argument(text: str):
    """An exact alpha (``"2/3"``, ``"0.91"``) as a Fraction."""
    return checked(exact_alpha, text)


def tolerance_argument(text: str) -> float:
    """A finite number >= 0."""
    def parse(value: str) -> float:
        try:
            return check_tol(float(value))
        except ValueError:
            raise ValueError(f"must be a finite number >= 0, got {value!r}") from None

    return checked(parse, text)


def seed_argument(text: str) -> int:
    """A seed for an experiment: an integer >= 0 (``--seed``), as numpy's ``SeedSequence`` takes."""
    def parse(value: str) -> int:
        try:
            seed = int(value)
        except ValueError:
            seed = -1
        if seed < 0:
            raise ValueError(f"must be an integer >= 0, got {value!r}")
        return seed

    return checked(parse, text)


def _positive(value: str, unit: str) -> float:
    """``value`` as a positive, finite number of ``unit``; ``ValueError`` naming it otherwise."""
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not (number > 0 and number != float("inf")):
        raise ValueError(f"must be a positive, finite number of {unit}, got {value!r}")
    return number


def seconds_argument(text: str) -> float:
    """A positive, finite number of seconds (``--time-limit``)."""
    return checked(lambda value: _positive(value, "seconds"), text)


def gib_argument(text: str) -> float:
    """A positive, finite number of GiB (``--memory-bound``)."""
    return checked(lambda value: _positive(value, "GiB"), text)


__all__ = ["Once", "Parser", "UsageError", "alpha_argument", "checked", "gib_argument", "positive_int",
           "seconds_argument", "seed_argument", "tolerance_argument"]
