"""countdp: constrained differentially private mechanisms for count queries.

Conventions used throughout the package:

* A mechanism for a group of ``n`` people is an ``(n+1) x (n+1)`` column-stochastic
  float array ``P`` with ``P[i, j] = Pr[output i | true count j]`` (rows are outputs,
  columns are inputs).
* Privacy is given as ``alpha = exp(-epsilon)`` in (0, 1); alpha close to 1 is *more*
  private.  ``alpha * P[i, j+1] <= P[i, j]`` and ``alpha * P[i, j] <= P[i, j+1]``.  alpha is
  exact (``"2/3"``, ``"0.91"`` = 91/100, a Fraction, or a float's binary value).
* What is released is a design's integer weights ``W`` (columns summing to ``2**62``),
  certified alpha-DP in exact arithmetic and sampled exactly (``countdp.release``).

Reproduces Cormode, Kulkarni, Srivastava, "Constrained Differential Privacy for Count
Data", ICDE 2018.
"""

# The subpackage countdp.release (a curator's table release) is loaded first: a submodule sets its
# parent's attribute only when it is first loaded, so the sampler bound below stays countdp.release
# whatever is imported later (countdp.release.engine, ...).
from countdp import release as _release_subpackage
from countdp.design.designer import Design, DesignError, design_lp, design_named
from countdp.evaluate.metrics import empirical_error, expected_error
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.mechanisms.properties import PROPERTIES, check_all, check_dp, check_property
from countdp.privacy.certify import Certificate, certify, is_alpha_dp
from countdp.privacy.exact import IntegerMechanism, exact_dp_check
from countdp.privacy.sampling import release
from countdp.values.alpha import alpha_from_epsilon, exact_alpha
from countdp.values.catalogue import NAMED_DESIGNS
from countdp.values.mechanism import Mechanism
from countdp.values.objectives import objective_value
from countdp.version import __version__ as __version__

del _release_subpackage

_RELEASE_API = ("release_records", "release_table")


def __getattr__(name: str):
    """``countdp.release_table`` and ``countdp.release_records`` (:mod:`countdp.release.api`), loaded on first use:
    the table release's engine (pyarrow) stays out of the start-up of everything else."""
    if name in _RELEASE_API:
        from countdp.release import api  # lazy: pyarrow and the engine only for a release

        return getattr(api, name)
    raise AttributeError(f"module 'countdp' has no attribute {name!r}")


__all__ = [
    "NAMED_DESIGNS",
    "PROPERTIES",
    "Certificate",
    "Design",
    "DesignError",
    "IntegerMechanism",
    "Mechanism",
    "alpha_from_epsilon",
    "certify",
    "check_all",
    "check_dp",
    "check_property",
    "design_lp",
    "design_named",
    "exact_alpha",
    "exact_dp_check",
    "empirical_error",
    "expected_error",
    "explicit_fair",
    "geometric",
    "is_alpha_dp",
    "objective_value",
    "release",
    "release_records",
    "release_table",
    "uniform",
]
