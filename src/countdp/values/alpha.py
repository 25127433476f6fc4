"""The privacy parameter as an exact rational.

``alpha = e^-epsilon`` in (0, 1); alpha close to 1 is *more* private.  Privacy is decided in
exact arithmetic, so alpha is carried as a :class:`fractions.Fraction`:

* a ``"p/q"`` string or a decimal string is exact: ``"10/11"`` is 10/11, ``"0.91"`` is 91/100;
* a Python float is taken at its exact binary value (``0.91`` is 8196551321966879/2**53);
* epsilon becomes the smallest alpha on a grid of ``2**-63`` with
  ``alpha >= e^-epsilon``, so the guarantee is never weaker than the epsilon asked for;
* the other way, an alpha is charged to a privacy budget as the smallest multiple of
  ``10**-30`` that is ``>= ln(1/alpha)`` (:func:`epsilon_upper_bound`), never less than it spends.

The decimal arithmetic that bounds ``e^-epsilon`` and ``ln(1/alpha)`` runs in explicit
contexts with directed rounding, never in the thread's default context (28 digits, rounding to
nearest), which could round a bound to the wrong side.

The float ``float(alpha)`` is what the LP solvers see; the exact value is what the release
certificate (:mod:`countdp.privacy.exact`) is checked against.
"""

from __future__ import annotations

import math
import numbers
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction

EPSILON_GRID_BITS = 63
"""alpha derived from epsilon is a multiple of ``2**-63`` (at most that far above e^-epsilon)."""

EPSILON_BOUND_DIGITS = 30
"""An alpha's epsilon bound is the smallest multiple of ``10**-30`` at or above ln(1/alpha)."""


def _as_fraction(value: object, name: str) -> Fraction:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number or a 'p/q' fraction, got {value!r}")
    if isinstance(value, str):
        text = value.replace(" ", "")
        try:
            return Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{name} must be a number or a 'p/q' fraction, got {value!r}") from None
    if isinstance(value, Fraction | numbers.Integral | Decimal):
        return Fraction(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{name} must be finite, got {value!r}")
        return Fraction(number)
    raise ValueError(f"{name} must be a number or a 'p/q' fraction, got {value!r}")


class Alpha(Fraction):
    """An exact alpha, checked once (0 < alpha < 1): :func:`exact_alpha` returns it as it is.

    A :class:`fractions.Fraction` in every other way (its value, hash, arithmetic and ``str``), so
    an alpha parsed at the edge (the CLI, a config, the public API) passes through every layer
    below without being parsed again.  Constructing one checks ``0 < alpha < 1``, and
    :func:`exact_alpha` checks the range of an ``Alpha`` again (a cheap comparison): from Python 3.12
    ``Fraction.from_float`` builds a subclass without calling ``__new__``.
    """

    __slots__ = ()

    def __new__(cls, numerator: object = 0, denominator: object = None) -> Alpha:
        self = super().__new__(cls, numerator, denominator)
        if not 0 < self < 1:
            raise ValueError(f"alpha must satisfy 0 < alpha < 1 (alpha = e^-epsilon), got {str(self)!r}")
        return self


def exact_alpha(value: object) -> Alpha:
    """``value`` as an exact rational alpha with 0 < alpha < 1, or raise ``ValueError``; an
    :class:`Alpha` is returned as it is.

        >>> countdp.exact_alpha("0.91"), countdp.exact_alpha("2/3"), countdp.exact_alpha(0.5)
        (Alpha(91, 100), Alpha(2, 3), Alpha(1, 2))
        >>> countdp.exact_alpha(0.1) == countdp.exact_alpha("1/10")  # a float is its binary value
        False
        >>> countdp.exact_alpha("3/2")
        Traceback (most recent call last):
        ...
        ValueError: alpha must satisfy 0 < alpha < 1 (alpha = e^-epsilon), got '3/2'
    """
    if isinstance(value, Alpha) and 0 < value < 1:  # the range again: a subclass's builders may skip __new__
        return value
    alpha = _as_fraction(value, "alpha")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must satisfy 0 < alpha < 1 (alpha = e^-epsilon), got {value!r}")
    return Alpha(alpha)


def alpha_from_epsilon(epsilon: object) -> Alpha:
    """The smallest multiple of ``2**-63`` that is ``>= e^-epsilon`` (epsilon > 0, exact input).

    ``e^-epsilon`` is bounded from above with 60-digit decimal arithmetic (``Decimal.exp`` is
    correctly rounded, so within half a unit in the 60th digit; epsilon is rounded down, then
    one unit in the 60th digit is added, rounding up), so the returned alpha is never below the
    true ``e^-epsilon``.

        >>> alpha = countdp.alpha_from_epsilon("1/2")
        >>> alpha
        Alpha(2797128963144291325, 4611686018427387904)
        >>> alpha * 2 ** 63  # the ceiling of e^-1/2 * 2 ** 63 = 5594257926288582649.918...
        Fraction(5594257926288582650, 1)
    """
    eps = _as_fraction(epsilon, "epsilon")
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    down, up = Context(prec=60, rounding=ROUND_FLOOR), Context(prec=60, rounding=ROUND_CEILING)
    eps_low = down.divide(Decimal(eps.numerator), Decimal(eps.denominator))
    upper = Context(prec=60).exp(down.minus(eps_low))  # minus is exact: eps_low has 60 digits
    upper = up.add(upper, _unit_in_60th_digit(upper))
    scale = 1 << EPSILON_GRID_BITS
    # e^-epsilon > 0, so at least one grid step, also where its 60-digit bound underflows to 0
    alpha = max(Fraction(math.ceil(Fraction(upper) * scale), scale), Fraction(1, scale))
    if alpha >= 1:
        raise ValueError(f"epsilon = {epsilon!r} is too small: e^-epsilon rounds to 1 on a 2^-63 grid")
    return Alpha(alpha)


def _unit_in_60th_digit(value: Decimal) -> Decimal:
    """One unit in the 60th significant digit of ``value``: more than the error of a 60-digit ``exp``."""
    return Decimal(1).scaleb(value.adjusted() - 59)


def _ln_inverse_bounds(alpha: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rationals ``lower <= ln(1/alpha) <= upper`` for ``alpha = p/q``, from ``ln q - ln p`` to ``digits`` digits.

    ``Decimal.ln`` is correctly rounded (within half a unit in the last digit); each logarithm is
    widened by a whole unit and the difference is rounded outwards.
    """
    up, down = Context(prec=digits, rounding=ROUND_CEILING), Context(prec=digits, rounding=ROUND_FLOOR)
    ln_q = Context(prec=digits).ln(Decimal(alpha.denominator))
    ln_p = Context(prec=digits).ln(Decimal(alpha.numerator))  # 0 exactly when p = 1
    unit_q, unit_p = (Decimal(1).scaleb(value.adjusted() - digits + 1) for value in (ln_q, ln_p))
    lower = down.subtract(down.subtract(ln_q, unit_q), up.add(ln_p, unit_p))
    upper = up.subtract(up.add(ln_q, unit_q), down.subtract(ln_p, unit_p))
    return Fraction(lower), Fraction(upper)


def epsilon_upper_bound(alpha: object) -> Fraction:
    """The smallest multiple of ``10**-30`` that is ``>= ln(1/alpha)``: what an exact alpha costs a budget.

    A release made with alpha is epsilon-DP for every epsilon ``>= ln(1/alpha)``, so a privacy
    budget charged this bound is never charged less than the release spends (and less than
    ``10**-30`` more).  ``ln(1/alpha)`` is enclosed between two rationals
    (:func:`_ln_inverse_bounds`) with more digits until no multiple of ``10**-30`` lies strictly
    inside the enclosure, so the grid point is decided, not estimated.  This ends: for a
    rational alpha in (0, 1), ``ln(1/alpha)`` is irrational (Lindemann), never a grid point.
    """
    exact = exact_alpha(alpha)
    scale = 10**EPSILON_BOUND_DIGITS
    digits = 60
    while True:
        lower, upper = _ln_inverse_bounds(exact, digits)
        step = math.ceil(upper * scale)
        if math.ceil(lower * scale) == step:
            return Fraction(step, scale)
        digits *= 2


def alpha_text(alpha: Fraction) -> str:
    """The ``"p/q"`` spelling of an exact alpha, as recorded in artifacts (``"10/11"``)."""
    return f"{alpha.numerator}/{alpha.denominator}"


def rational_text(value: Fraction) -> str:
    """A rational exactly as text: a finite decimal when it has one (``"0.1"``, ``"2"``), else ``"p/q"``.

    Privacy amounts are written this way in sidecars and ledgers: readable where they can be,
    exact always (``Fraction(rational_text(x)) == x``).
    """
    value = Fraction(value)
    denominator = value.denominator
    twos = (denominator & -denominator).bit_length() - 1
    rest, fives = denominator >> twos, 0
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:
        return f"{value.numerator}/{denominator}"
    digits = max(twos, fives)
    whole, decimals = divmod(abs(value.numerator) * 10**digits // denominator, 10**digits)
    sign = "-" if value < 0 else ""
    return f"{sign}{whole}" + (f".{decimals:0{digits}d}" if digits else "")


def epsilon_of(alpha: Fraction) -> float:
    """``-ln(alpha)``: the epsilon an exact alpha guarantees (for reports; not used to decide)."""
    return -math.log(alpha.numerator) + math.log(alpha.denominator)


def config_alpha(value: object) -> Fraction:
    """A config file's alpha as written: ``"p/q"`` and decimals exactly (a YAML number 0.91 is 91/100).

    YAML turns ``0.91`` into a float before the workflow sees it; its shortest ``repr`` is the
    decimal the user typed, so that decimal (not the float's binary value) is the exact alpha.
    """
    if isinstance(value, float):
        return exact_alpha(repr(value))
    return exact_alpha(value)


def exact_alphas_in(config: object, key: str = "alpha") -> dict[str, Fraction]:
    """Every alpha under a ``key`` entry of a nested config (a value or a list), keyed by its float ``repr``.

    The workflow names artifacts by ``repr(float(alpha))``; this maps each such spelling back to
    the exact value the config gave (:func:`config_alpha`).  Two different exact values with the
    same float spelling raise ``ValueError``.
    """
    found: dict[str, Fraction] = {}

    def visit(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    for value in v if isinstance(v, list) else [v]:
                        add(value)
                visit(v)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    def add(value: object) -> None:
        if isinstance(value, dict | list):
            return
        exact = config_alpha(value)
        spelling = repr(float(exact))
        if found.setdefault(spelling, exact) != exact:
            raise ValueError(f"alpha {alpha_text(found[spelling])} and {alpha_text(exact)} share the spelling "
                             f"{spelling}; use one of them")

    visit(config)
    return found
