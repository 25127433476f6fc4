"""The exact certificate of the release weights, against an independent Python-integer check.

The reference below writes the DP inequalities out with Python integers, entry by entry
(docs/guarantees.md: the weights that are sampled), sharing no code with
:mod:`countdp.privacy.exact`'s 128-bit arithmetic.
The import graph of :mod:`countdp.privacy` is read from the sources and checked for cycles.
"""

from __future__ import annotations

import ast
import functools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import countdp.privacy
from countdp.design.designer import DesignError, design_named, finish_design
from countdp.mechanisms.closed_forms import explicit_fair, geometric, uniform
from countdp.privacy.certify import certify
from countdp.privacy.exact import RELEASE_K, IntegerMechanism, exact_dp_check
from countdp.privacy.rounding import dp_weights, round_to_release
from countdp.values.objectives import objective_value


def reference_exact_dp(W, alpha: Fraction, K: int) -> bool:
    """alpha-DP of W / 2**K with Python integers only: p * W[i][j'] <= q * W[i][j], columns sum to 2**K."""
    rows = [[int(v) for v in row] for row in np.asarray(W).tolist()]
    p, q, N = alpha.numerator, alpha.denominator, len(rows)
    if any(sum(rows[i][j] for i in range(N)) != 2**K for j in range(N)) or any(v < 0 for r in rows for v in r):
        return False
    return all(p * r[j + 1] <= q * r[j] and p * r[j] <= q * r[j + 1] for r in rows for j in range(N - 1))


@functools.cache
def designed(name: str, n: int, alpha: str):
    return design_named(name, n, alpha)


@pytest.mark.parametrize("name", ["GM", "EM"])
@pytest.mark.parametrize("n", [60, 100, 200])
@pytest.mark.parametrize("alpha", ["1/2", "2/3", "10/11", "99/100"])
def test_closed_forms_release_exactly_dp_weights(name, n, alpha):
    """The cases where float sampling failed: the released weights pass both exact checks."""
    released = designed(name, n, alpha).released
    a = Fraction(alpha)
    assert released.K >= 60 and released.denominator == 2**released.K
    assert exact_dp_check(released.weights, a, released.K).holds
    assert reference_exact_dp(released.weights, a, released.K)
    assert released.weights.min() > 0  # no zero next to a positive weight, a fortiori
    cert = released.certificate
    assert cert.holds and cert.alpha_exact == alpha
    assert 0 <= cert.rounding_lambda < 1e-10 and cert.max_abs_error < 1e-10
    assert abs(cert.objective_change) <= 1e-9


def test_wm_at_n_60_releases_exactly_dp_weights():
    released = designed("WM", 60, "10/11").released
    assert reference_exact_dp(released.weights, Fraction(10, 11), released.K)
    assert abs(released.certificate.objective_change) <= 1e-9


def test_check_rejects_every_kind_of_bad_weights():
    W = np.array(designed("GM", 4, "1/2").released.weights)
    half = Fraction(1, 2)
    assert exact_dp_check(W, half, RELEASE_K).holds
    assert "sum" in exact_dp_check(W + np.eye(5, dtype=np.int64), half, RELEASE_K).reason
    assert "int64" in exact_dp_check(W.astype(float), half, RELEASE_K).reason
    assert "square" in exact_dp_check(W[:, :3], half, RELEASE_K).reason
    negative = W.copy()
    negative[0, 0], negative[1, 0] = -1, negative[1, 0] + negative[0, 0] + 1
    assert not exact_dp_check(negative, half, RELEASE_K).holds
    # a zero next to a positive weight, columns still summing to 2**62
    zero = W.copy()
    zero[1, 0], zero[0, 0] = 0, zero[0, 0] + zero[1, 0]
    assert not exact_dp_check(zero, half, RELEASE_K).holds and not reference_exact_dp(zero, half, RELEASE_K)
    # GM's weights for alpha = 1/2 are also 1/3-DP (weaker), but not 2/3-DP (stronger)
    assert exact_dp_check(W, Fraction(1, 3), RELEASE_K).holds
    assert not exact_dp_check(W, Fraction(2, 3), RELEASE_K).holds
    with pytest.raises(ValueError, match="not alpha-DP"):
        IntegerMechanism(Fraction(2, 3), RELEASE_K, W)
    with pytest.raises(ValueError, match="K <= 62"):
        IntegerMechanism(half, 12, W)


def test_released_weights_are_read_only():
    released = designed("EM", 6, "9/10").released
    with pytest.raises(ValueError):
        released.weights[0, 0] = 1
    with pytest.raises(ValueError):
        released.cumulative[0, 0] = 1


def _break_one_inequality(W: np.ndarray, alpha: Fraction, i: int, j: int, forward: bool) -> np.ndarray:
    """Lower W[i, j] by the least amount that breaks p W[i, k] <= q W[i, j] (k the neighbour of j).

    The mass removed goes to another entry of column j, so the column still sums to D.
    """
    p, q = alpha.numerator, alpha.denominator
    k = j + 1 if forward else j - 1
    out = W.copy()
    target = -((-p * int(W[i, k])) // q) - 1  # the largest x with q * x < p * W[i, k]
    assert 0 <= target <= int(W[i, j])
    out[i, j] = target
    out[(i + 1) % W.shape[0], j] += int(W[i, j]) - target
    return out


rational_alphas = st.builds(Fraction, st.integers(1, 10**6), st.integers(2, 10**6)).filter(lambda a: 0 < a < 1)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 200), alpha=rational_alphas, name=st.sampled_from(["GM", "EM", "UM"]),
       data=st.data())
def test_random_rational_alpha_certificate_holds_and_fails_when_broken(n, alpha, name, data):
    matrix = {"GM": geometric, "EM": explicit_fair, "UM": lambda n, a: uniform(n)}[name](n, float(alpha))
    P = certify(matrix, float(alpha))[0]
    released = round_to_release(P, alpha, objective=lambda M: objective_value(M, "L0"))
    W, K = np.asarray(released.weights), released.K
    assert reference_exact_dp(W, alpha, K)
    assert abs(released.certificate.objective_change) <= 1e-9
    assert released.certificate.max_abs_error <= 1e-9
    i = data.draw(st.integers(0, n))
    j = data.draw(st.integers(0, n - 1))
    forward = data.draw(st.booleans())
    broken = _break_one_inequality(W, alpha, i, j if forward else j + 1, forward)
    assert not reference_exact_dp(broken, alpha, K)
    assert not exact_dp_check(broken, alpha, K).holds


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**62), min_size=4, max_size=4), st.integers(1, 2**64 - 1), st.integers(1, 2**64 - 1))
def test_128_bit_products_agree_with_python_integers(values, p, q):
    """The uint64 path against Python integers, near the boundary too (p W' vs q W with W' = q W / p)."""
    p, q = min(p, q), max(p, q) + (p == q)
    near = (q * values[0]) // p
    for a, b in ((values[0], values[1]), (values[0], min(near, 2**62)), (values[0], min(near + 1, 2**62))):
        W = np.array([[a, b], [2**62 - a, 2**62 - b]], dtype=np.int64)
        alpha = Fraction(p, q)
        assert exact_dp_check(W, alpha, 62).holds == reference_exact_dp(W, alpha, 62)


def test_huge_numerators_take_the_python_integer_path():
    alpha = Fraction(3 * 2**68 + 1, 2**70)  # about 3/4, with p, q >= 2**64
    P = uniform(3)
    W, _ = dp_weights(P, alpha, 62)
    assert exact_dp_check(W, alpha, 62).holds and reference_exact_dp(W, alpha, 62)


def test_alpha_too_close_to_one_for_the_denominator_is_an_error():
    alpha = 1 - Fraction(1, 2**52)  # (1 - alpha) D / (n+1) = 2**10 / 1001: below the 1 + alpha units rounding needs
    with pytest.raises(ValueError, match="too close to 1"):
        round_to_release(uniform(1000), alpha)


# ---------------------------------------------------------------- certificates that can fail
def test_a_poor_solver_answer_is_an_error_naming_its_violation():
    """A solver answer that breaks DP by 1e-4 needs a repair far above the 1e-7 bound."""
    P = geometric(6, 0.8).copy()
    P[2, 3] += 1e-4
    P[3, 3] -= 1e-4
    with pytest.raises(DesignError, match=r"breaks alpha-DP by \d\.\d+e-05.*bound 1e-07"):
        finish_design(P, "LP", 6, Fraction(4, 5), "L0", (), solver="HIGHS", method="simplex")
    relaxed = finish_design(P, "LP", 6, Fraction(4, 5), "L0", (), max_repair_lambda=None)
    assert relaxed.certificate.repair_lambda > 1e-7  # the same answer, repaired when allowed


def test_design_lp_refuses_a_poor_backend_answer():
    """A solver answer whose DP repair needs more than the bound is refused, naming the solver:
    WM's optimum with 1e-4 moved between two entries of a column breaks a DP row by far more."""
    from countdp.design.designer import finish_design
    from countdp.design.planner import solve
    from countdp.design.request import DesignRequest
    from countdp.design.settings import DEFAULT_SETTINGS

    answer = solve(DesignRequest.of(8, 10 / 11, ("RM", "CM", "WH", "S"), backend="highs"), DEFAULT_SETTINGS)
    poor = answer.matrix.copy()
    poor[1, 2] += 1e-4
    poor[2, 2] -= 1e-4
    with pytest.raises(DesignError, match="breaks alpha-DP"):
        finish_design(poor, "WM", 8, Fraction(10, 11), "L0", ("RM", "CM", "WH", "S"), solver=answer.solver)
    assert finish_design(answer.matrix, "WM", 8, Fraction(10, 11), "L0", ()).certificate.certified


def test_every_design_records_both_objectives_and_exact_alpha():
    d = designed("WM", 12, "2/3")
    assert d.alpha_exact == Fraction(2, 3) and d.alpha == 2 / 3
    assert d.objective_before_repair == pytest.approx(d.objective_value, abs=1e-9)
    assert d.released.alpha == Fraction(2, 3)
    assert math.isclose(d.released.certificate.objective_change,
                        objective_value(d.released.matrix, "L0") - d.objective_value, abs_tol=1e-15)



def _privacy_imports() -> dict[str, set[str]]:
    """Module -> the ``countdp.privacy`` modules it imports anywhere in its source (function-local ones too)."""
    package = Path(countdp.privacy.__file__).parent
    names = {f"countdp.privacy.{f.stem}" for f in package.glob("*.py") if f.stem != "__init__"}
    graph = {}
    for name in names:
        found = set()
        for node in ast.walk(ast.parse((package / f"{name.rsplit('.', 1)[1]}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = found & names
    return graph


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Some import cycle of ``graph`` as a path that returns to its start, or ``None``."""
    finished: set[str] = set()

    def walk(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module):] + [module]
        if module in finished:
            return None
        for imported in sorted(graph[module]):
            if found := walk(imported, [*path, module]):
                return found
        finished.add(module)
        return None

    return next((c for c in (walk(m, []) for m in sorted(graph)) if c), None)


def test_the_privacy_modules_import_each_other_without_a_cycle():
    """exact -> inverse_cdf <- sampling: the guide table is built without importing the sampler back."""
    graph = _privacy_imports()
    assert "countdp.privacy.inverse_cdf" in graph["countdp.privacy.exact"]
    assert "countdp.privacy.sampling" not in graph["countdp.privacy.exact"]
    assert graph["countdp.privacy.inverse_cdf"] == set()
    assert _a_cycle(graph) is None
    graph["countdp.privacy.inverse_cdf"].add("countdp.privacy.exact")  # the guide table importing its user
    assert _a_cycle(graph) == ["countdp.privacy.exact", "countdp.privacy.inverse_cdf", "countdp.privacy.exact"]
