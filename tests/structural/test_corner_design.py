"""WM near alpha = 1 as a corner form: built from the square-corner template's proven design, and optimal.

The form beyond the matrix path's sizes is the source design's corner square with geometric
tails and GM between.  Checked here against facts the form does not produce itself:

* the same rule at another size (1500, below 2048 so the full LP can be built) is proven optimal
  there by weak duality on the full LP, with multipliers from the square template's dual
  restricted by complementary slackness with that extension;
* the integer form at 3000 passes the dense exact DP test, which knows nothing of its structure,
  and lies within ``1e-12`` (plus its floor) of the float extension;
* sizes the matrix path serves, and corners too wide for any source size, are refused in one line.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from countdp.design import request, settings
from countdp.design.forms import corner_design, corner_width, structural_form, structure_problem
from countdp.design.model import DesignProblem
from countdp.design.settings import DEFAULT_SETTINGS
from countdp.design.template.proof import certify_expansion
from countdp.design.template.restricted import dual_properties
from countdp.design.template.square_geometry import primal_map
from countdp.design.template.square_proof import essential_properties, square_dual
from countdp.privacy.exact import IntegerMechanism
from countdp.structural.template import TEMPLATE_MECHANISMS

ALPHA = Fraction(24, 25)


def extension(n: int) -> np.ndarray:
    """The source design's square spread to size ``n`` by the corner rule, in floats."""
    W, a = corner_width(ALPHA, settings=DEFAULT_SETTINGS), float(ALPHA)
    col, weight, _ = primal_map(n, W, a)
    z = np.concatenate([corner_design("WM", ALPHA, settings=DEFAULT_SETTINGS).matrix.ravel(), [(1 - a) / (1 + a)]])
    return (weight * z[col]).reshape(n + 1, n + 1)


def test_the_rule_is_optimal_at_another_size():
    n, W = 1500, corner_width(ALPHA, settings=DEFAULT_SETTINGS)
    x = extension(n)
    problem = request.DesignRequest.of(n, float(ALPHA), TEMPLATE_MECHANISMS["WM"], "L0").problem
    props = dual_properties(tuple(p for p in essential_properties(problem.properties) if p != "S"))
    dual_lp = DesignProblem(n, float(ALPHA), props, problem.objective).lp()
    y, info = square_dual(dual_lp, x.ravel(), n, W, props, settings.DEFAULT_SETTINGS)
    assert y is not None
    result = certify_expansion(problem, x, y, props, info)
    assert result["certified"] and result["gap"] < 1e-9


def test_the_integer_form_is_the_extension_and_alpha_dp():
    form = structural_form("WM", 3000, ALPHA)
    assert form.parameters()["structure"] == "square corners" and form.certify().holds
    weights = form.for_size(3000).dense_weights()
    assert IntegerMechanism(ALPHA, 62, weights).certificate.holds
    assert np.abs(weights / 2.0**62 - extension(3000)).max() < 1e-12 + form.uniform_share


def test_sizes_of_the_matrix_path_and_too_wide_corners_are_refused():
    with pytest.raises(ValueError, match="designed as a matrix up to n = 2048"):
        structural_form("WM", 2048, ALPHA)
    assert structure_problem("WM", Fraction(99, 100)) is None
    assert "do not fit twice" in structure_problem("WM", Fraction(199, 200))  # tails too long for n_s = 2048
    assert "do not fit twice" in structure_problem("WM", Fraction(499, 500))
    assert "denominator" in structure_problem("WM", Fraction(9, 10) + Fraction(1, 2**40))
