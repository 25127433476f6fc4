"""The template's geometry (countdp.design.template.geometry) against its definition and brute force."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from countdp.design.optimality import design_lp_model
from countdp.design.template.geometry import cancel, feature_map, first_of_each, merge_rows, row_entries, row_map
from countdp.values.properties import parse_properties

PROPS = ("RM", "CM", "RH", "CH", "WH", "S")


def _distances(i, j, n):
    return np.minimum(i, j), n - np.maximum(i, j), np.abs(i - j)


@pytest.mark.parametrize(("n", "W"), [(100, 16), (64, 16), (300, 20)])
def test_feature_map_keeps_the_clipped_distances_and_the_side_of_the_diagonal(n, W):
    """The definition: the template entry has the same distances clipped at W, the same side of
    the diagonal, lies in the template, and the extra distance returned is e - e0."""
    n0 = 3 * W + 4
    i, j = (a.ravel() for a in np.indices((n + 1, n + 1)))
    i0, j0, extra = feature_map(i, j, n, n0, W)
    assert i0.min() >= 0 and j0.min() >= 0 and i0.max() <= n0 and j0.max() <= n0
    for big, small in zip(_distances(i, j, n), _distances(i0, j0, n0), strict=True):
        assert np.array_equal(np.minimum(big, W), np.minimum(small, W))
    assert np.array_equal(np.sign(i - j), np.sign(i0 - j0))
    assert np.array_equal(extra, np.abs(i - j) - np.abs(i0 - j0))


def test_feature_map_is_a_projection_onto_the_same_template_entries_at_every_n():
    """Mapping a template entry again (at the template's size) leaves it where it is, and every
    ``n >= n0`` uses the same set of template entries."""
    W = 16
    n0 = 3 * W + 4
    images = []
    for n in (n0, 64, 120, 300):
        i, j = (a.ravel() for a in np.indices((n + 1, n + 1)))
        i0, j0, _ = feature_map(i, j, n, n0, W)
        i1, j1, _ = feature_map(i0, j0, n0, n0, W)
        assert np.array_equal(i1, i0) and np.array_equal(j1, j0)
        images.append(set(zip(i0.tolist(), j0.tolist(), strict=True)))
    assert all(image == images[0] for image in images)


@pytest.mark.parametrize("props", [("CH",), ("RM", "CM", "WH", "S"), PROPS])
def test_row_entries_name_an_entry_of_every_row_of_the_model(props):
    """Block by block, one entry per inequality row of the design LP, and it is in that row
    (properties in their canonical order, as every caller passes them)."""
    n = 12
    props = parse_properties(props)
    lp = design_lp_model(n, 0.8, props)
    entries = row_entries(n, props)
    i = np.concatenate([e[0] for e in entries])
    j = np.concatenate([e[1] for e in entries])
    assert i.size == lp.A_ub.shape[0]
    A = lp.A_ub.tocsr()
    assert all(i[r] * (n + 1) + j[r] in A.indices[A.indptr[r]:A.indptr[r + 1]] for r in range(A.shape[0]))


def test_row_entries_reject_a_property_the_template_does_not_handle():
    with pytest.raises(ValueError, match="does not handle property F"):
        row_entries(10, ("F",))


def test_row_map_sends_each_row_to_the_template_row_of_its_entrys_image():
    """Every row goes to the template row (same block) whose first entry is the feature-map image
    at level W + 1; at the template's own size the map is a projection."""
    W, props = 16, ("RM", "CH", "WH")
    n0 = 3 * W + 4
    own = row_map(n0, n0, W, props)
    assert own.size == design_lp_model(n0, 0.8, props).A_ub.shape[0] and np.array_equal(own[own], own)
    n = 120
    rows = row_map(n, n0, W, props)
    big = row_entries(n, props)
    small = row_entries(n0, props)
    sizes = np.cumsum([0] + [b[0].size for b in small])
    for k, ((pi, pj), (qi, qj)) in enumerate(zip(big, small, strict=True)):
        block = rows[sum(b[0].size for b in big[:k]):][: pi.size] - sizes[k]
        assert block.min() >= 0 and block.max() < qi.size  # the same block of the template
        i0, j0, _ = feature_map(pi, pj, n, n0, W + 1)
        assert np.array_equal(qi[block], i0) and np.array_equal(qj[block], j0)


def test_cancel_is_the_product_with_exact_cancellations_removed():
    """``A @ E``: terms that cancel exactly in real arithmetic (alpha * alpha^k against
    alpha^(k+1)) leave no entry, a genuinely small coefficient is kept."""
    alpha = 0.9
    weight = np.array([alpha ** 3, alpha ** 2, 1.0, 1.0])
    col = np.array([0, 0, 1, 1])
    A = sp.csr_matrix(np.array([[1.0, -alpha, 0, 0],    # alpha^3 - alpha * alpha^2: exactly 0
                                [1.0, 0, 1.0, -1.0],     # alpha^3 on z0; 1 - 1 on z1: 0
                                [0, 0, 1.0, -0.999]]))   # 0.001 on z1: kept
    out = cancel(A, col, weight, 2).toarray()
    E = sp.csr_matrix((weight, (np.arange(4), col)), shape=(4, 2))
    dense = (A @ E).toarray()
    assert out[0].tolist() == [0.0, 0.0] and out[1, 1] == 0.0
    assert out[1, 0] == pytest.approx(alpha ** 3, rel=1e-15) and out[2, 1] == pytest.approx(0.001, rel=1e-12)
    assert np.allclose(out, dense, rtol=0, atol=1e-15)
    assert cancel(sp.csr_matrix((3, 4)), col, weight, 2).nnz == 0  # no rows with entries (no WH)


def _brute_first(A, lo, hi):
    seen, keep = set(), []
    for r in range(A.shape[0]):
        row = A.getrow(r)
        key = (tuple(row.indices), tuple(row.data), lo[r], hi[r])
        if key not in seen:
            seen.add(key)
            keep.append(r)
    return np.array(keep)


def test_first_of_each_agrees_with_brute_force():
    rng = np.random.default_rng(1)
    base = sp.random(30, 12, density=0.3, random_state=2, format="csr")
    picks = rng.integers(0, 30, 200)
    A = base[picks].tocsr()
    A.sort_indices()
    lo = np.where(picks % 3 == 0, 1.0, 0.0)  # the same row with another bound is a different row
    hi = np.full(picks.size, np.inf)
    lo[::7] = 2.0
    assert np.array_equal(first_of_each(A.copy(), lo, hi), _brute_first(A, lo, hi))


def test_merge_rows_drops_duplicates_and_empty_rows_and_rejects_an_infeasible_empty_row():
    A = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [2.0, 4.0], [0.0, 0.0]]))
    lo = np.array([1.0, 0.0, 1.0, 1.0, -1.0])
    hi = np.full(5, np.inf)
    B, blo, bhi = merge_rows(A, lo, hi)
    assert B.toarray().tolist() == [[1.0, 2.0], [2.0, 4.0]] and blo.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="infeasible empty row"):
        merge_rows(A, np.array([1.0, 0.5, 1.0, 1.0, 0.0]), hi)  # 0 >= 0.5 cannot hold
