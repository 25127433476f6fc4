"""The mechanism protocol: every representation offers it, and what it offers is checked against facts.

The facts, each independent of the code under test:

* a column is a distribution over exactly ``denominator`` draws, alpha-DP between neighbours in
  integer arithmetic (the definition, checked here on every column the protocol hands out);
* one mechanism in two representations (a structural form and its matrix of weights) has the
  same columns, integer for integer;
* a chain's joint column sums, over all levels but one, to that level's marginal (computed by
  the chain's own exact products, a second construction);
* the sampler reads a word's top ``K`` bits only, and ``release``/``release_each``, the table
  release's sampler and the representation's own ``sample`` give the same output for the same
  words, whatever the representation.

The column check is shown failing on representations built broken.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import countdp
from countdp.design.forms import structural_form
from countdp.multilevel.chain import build_level_chain
from countdp.privacy.exact import IntegerMechanism
from countdp.privacy.sampling import release, release_each
from countdp.release.draws import ColumnSampler
from countdp.structural.catalogue import closed_structural_form
from countdp.values.mechanism import REPRESENTATIONS, Mechanism, mechanism_of

EXAMPLES = {
    "GM matrix": lambda: countdp.design_named("GM", 6, "1/2").released,
    "WM matrix (LP)": lambda: countdp.design_named("WM", 5, "2/3").released,
    "GM structural": lambda: closed_structural_form("GM", 6, "1/2"),
    "EM structural": lambda: closed_structural_form("EM", 7, "3/4"),
    "UM structural": lambda: closed_structural_form("UM", 4, "1/3"),
    "GM structural, two words": lambda: closed_structural_form("GM", 2_100, "9/10"),
    "WM template spread": lambda: structural_form("WM", 2_100, "1/2"),
    "GM levels": lambda: build_level_chain(4, ["1/2", "2/3"]),
    "EM three levels": lambda: build_level_chain(3, ["1/2", "3/5", "3/4"], mechanism="EM"),
}


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def example(request):
    return EXAMPLES[request.param]()


def _inputs(m) -> list[int]:
    """Every input of a small mechanism; the edges and the middle of a large one."""
    return list(range(m.n + 1)) if m.n <= 8 else [0, 1, m.n // 2, m.n // 2 + 1, m.n - 1, m.n]


def column_violations(m, inputs: list[int]) -> list[str]:
    """What is wrong with ``m``'s columns at ``inputs`` (and their right neighbours): each must be
    non-negative integers summing to ``denominator``, and neighbours alpha-DP in integer arithmetic."""
    problems = []
    p, q = m.alpha.numerator, m.alpha.denominator
    wanted = sorted({*inputs, *(j + 1 for j in inputs if j < m.n)})
    columns = {j: np.asarray(m.column(j)).astype(object) for j in wanted}
    for j, column in columns.items():
        if column.shape != (m.n + 1,) * m.values_per_count:
            problems.append(f"column {j} has shape {column.shape}")
        if any(int(v) != v or v < 0 for v in column.ravel()):
            problems.append(f"column {j} holds a negative or fractional weight")
        if int(column.sum()) != m.denominator:
            problems.append(f"column {j} sums to {column.sum()}, not {m.denominator}")
        if j + 1 in columns:
            right = columns[j + 1]
            if not ((p * right <= q * column).all() and (p * column <= q * right).all()):
                problems.append(f"columns {j} and {j + 1} are not {m.alpha}-DP")
    return problems


def test_every_representation_offers_the_protocol_and_its_columns_are_alpha_dp(example):
    assert isinstance(example, Mechanism) and mechanism_of(example) is example
    assert example.representation in REPRESENTATIONS
    assert example.denominator == 2 ** (example.K * example.values_per_count)
    assert isinstance(example.alpha, Fraction) and 0 < example.alpha < 1
    assert column_violations(example, _inputs(example)) == []
    verdict = example.certify()
    assert verdict.holds is True
    json.dumps(verdict.to_dict())


def test_a_list_of_inputs_gives_the_columns_side_by_side(example):
    inputs = np.array(_inputs(example)[:3])
    side = example.column(inputs)
    for k, j in enumerate(inputs.tolist()):
        assert (np.asarray(side)[..., k] == np.asarray(example.column(j))).all()


class _Broken:
    """A representation built wrong on purpose from GM's weights: one unit added (``shift``: the
    column no longer sums to ``D``), or two weights of a column swapped (``swap``: the sum holds,
    DP does not)."""

    representation, values_per_count = "matrix", 1

    def __init__(self, how: str) -> None:
        good = countdp.design_named("GM", 4, "1/2").released
        self.n, self.alpha, self.K, self.denominator = good.n, good.alpha, good.K, good.denominator
        self.weights = good.weights.astype(object)
        if how == "shift":
            self.weights[0, 2] += 1
        else:
            self.weights[[0, 2], 2] = self.weights[[2, 0], 2]

    def column(self, j):
        return self.weights[:, j]


@pytest.mark.parametrize("how, expected", [("shift", "sums to"), ("swap", "are not 1/2-DP")])
def test_the_column_check_fails_on_a_broken_representation(how, expected):
    problems = column_violations(_Broken(how), [0, 1, 2, 3])
    assert problems and any(expected in p for p in problems), problems


def test_a_structural_form_and_its_matrix_are_one_mechanism():
    """GM, EM and UM: the structural form's columns are, integer for integer, those of the matrix
    the design path releases for the same (n, alpha)."""
    for name, n, alpha in (("GM", 9, "2/3"), ("EM", 8, "3/5"), ("UM", 5, "1/2")):
        form, matrix = closed_structural_form(name, n, alpha), countdp.design_named(name, n, alpha).released
        assert (form.representation, matrix.representation) == ("structural", "matrix")
        every = np.arange(n + 1)
        assert (np.asarray(form.column(every), dtype=np.int64) == matrix.column(every)).all(), name


def test_a_chains_joint_column_marginalises_to_each_level():
    chain = build_level_chain(3, ["1/2", "3/5", "3/4"])
    for j in range(chain.n + 1):
        joint = chain.column(j)
        for k in range(chain.levels):
            others = tuple(a for a in range(chain.levels) if a != k)
            scale = chain.denominator // chain.level_denominator(k)
            assert (joint.sum(axis=others) == chain.marginal(k)[:, j] * scale).all()


def _words(m, size: int, rng) -> np.ndarray:
    shape = (m.values_per_count, size) if m.values_per_count > 1 else (size,)
    return rng.bit_generator.random_raw(int(np.prod(shape))).reshape(shape)


def test_the_sampler_reads_only_the_top_k_bits_of_a_word(example):
    """The low bits of a word are never read: ``64 - K`` of them, or 2 for a form over more than 62 bits
    (its first word gives the draw's top 62; none of these rows needs a second word)."""
    rng = np.random.default_rng(11)
    counts = rng.integers(0, example.n + 1, 5_000)
    words = _words(example, counts.size, rng)
    low = np.uint64((1 << (64 - min(example.K, 62))) - 1)
    noise = _words(example, counts.size, rng) & low
    assert (example.sample(counts, words) == example.sample(counts, (words & ~low) | noise)).all()


def test_release_and_release_each_are_the_representations_own_sampler(example):
    """The public sampler, for one array or several (each with its own generator), gives exactly
    ``sample`` on the same words (second words, where a form needs them, follow in row order)."""
    counts = [np.random.default_rng(s).integers(0, example.n + 1, size) for s, size in ((1, 3_000), (2, 1))]
    together = release_each(example, counts, [np.random.default_rng(5), np.random.default_rng(6)])
    for c, seed, got in zip(counts, (5, 6), together, strict=True):
        alone = release(example, c, np.random.default_rng(seed))
        assert (alone == got).all()
        if example.K <= 62:
            own = example.sample(c, _words(example, c.size, np.random.default_rng(seed)))
            assert (own == got).all()


def test_a_design_is_released_through_the_mechanism_it_holds():
    design = countdp.design_named("EM", 5, "3/5")
    counts = np.arange(6).repeat(100)
    assert (release(design, counts, np.random.default_rng(3)) ==
            release(design.released, counts, np.random.default_rng(3))).all()
    with pytest.raises(ValueError, match="release needs a certified mechanism"):
        mechanism_of(design.matrix)


def test_the_table_release_sampler_mixes_representations_row_by_row():
    """One count column with a matrix for n = 3 and a structural table for n = 5: each row is what its
    own mechanism's ``sample`` gives for that row's word."""
    matrix, form = countdp.design_named("GM", 3, "1/2").released, closed_structural_form("EM", 5, "1/2")
    sampler = ColumnSampler([matrix, form])
    rng = np.random.default_rng(8)
    size_index = rng.integers(0, 2, 4_000)
    counts = np.where(size_index == 0, rng.integers(0, 4, 4_000), rng.integers(0, 6, 4_000))
    words = rng.bit_generator.random_raw(4_000)
    out = sampler.sample(counts, size_index, words)
    for s, m in enumerate((matrix, form)):
        rows = size_index == s
        assert (out[rows] == m.sample(counts[rows], words[rows])).all()


def test_a_matrix_refuses_rows_of_another_size():
    matrix = IntegerMechanism(Fraction(1, 2), 62, countdp.design_named("GM", 2, "1/2").released.weights)
    with pytest.raises(ValueError, match="size 2 only"):
        matrix.sample(np.array([0, 1]), np.zeros(2, dtype=np.uint64), sizes=np.array([2, 3]))


def _relabelled_form():
    """GM's structural table for alpha = 1/2 claiming alpha = 99/100: every attribute of the protocol,
    and a certificate that does not hold."""
    import copy

    from countdp.structural.geometric import geometric_form
    form = copy.copy(geometric_form(6, Fraction(1, 2), 62))
    form.alpha = Fraction(99, 100)
    assert isinstance(form, Mechanism) and not form.certify().holds
    return form


class _TruthTeller:
    """The protocol's attributes on an object that publishes the true count; its certificate says so."""

    representation, n, alpha, K, values_per_count, denominator = "matrix", 2, Fraction(1, 2), 62, 1, 1 << 62

    def column(self, j):
        return (np.eye(3, dtype=np.int64) << 62)[:, j]

    def sample(self, counts, words, sizes=None, second=None):
        return np.asarray(counts)

    def certify(self):
        return type("Verdict", (), {"holds": False, "to_dict": lambda self: {}})()


@pytest.mark.parametrize("make", [_relabelled_form, _TruthTeller])
def test_an_object_whose_certificate_does_not_hold_is_refused_everywhere(make):
    from countdp.invariants.group_total import GroupTotalSampler
    from countdp.invariants.guarantee import proven_bound
    from countdp.privacy.expected_error import release_errors
    bad = make()
    with pytest.raises(ValueError, match="certif"):
        release(bad, [0, 1, 2], np.random.default_rng(0))
    with pytest.raises(ValueError, match="certif"):
        release(bad, 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="certif"):
        release_each(bad, [np.array([0, 1])], [np.random.default_rng(0)])
    with pytest.raises(ValueError, match="certif"):
        release_errors(bad)
    with pytest.raises(ValueError, match="certif"):
        proven_bound([bad, bad])
    with pytest.raises(ValueError, match="certif"):
        GroupTotalSampler([bad, bad], [1, 1])


def _coarse_form():
    """GM over 2^20 with a 10-bit first word: about one draw in a hundred needs its second word."""
    from countdp.structural.geometric import geometric_form
    form = geometric_form(24, Fraction(1, 2), 20, coarse_bits=10)
    assert form.wide and form.K <= 62 and form.certify().holds
    return form


def _by_hand(form, counts, rng):
    """``counts`` released from ``rng``'s raw words as the words are documented: one first word per count,
    then, in row order, a second word for each row that needs one (an independent reading of the stream)."""
    words = rng.bit_generator.random_raw(counts.size)
    bits = form.K - form.coarse_bits
    return form.outputs(counts, (words >> np.uint64(64 - form.coarse_bits)).astype(np.int64),
                        fine=lambda rows: (rng.bit_generator.random_raw(len(rows)) >> np.uint64(64 - bits))
                        .astype(np.int64))


def test_one_count_of_a_form_needing_a_second_word_takes_it_from_the_same_generator():
    form = _coarse_form()
    for seed in range(400):
        got = release(form, 12, np.random.default_rng(seed))
        assert got.shape == () and int(got) == int(_by_hand(form, np.array([12]), np.random.default_rng(seed))[0])


def test_a_generator_shared_by_several_arrays_serves_them_one_after_the_other():
    """As successive calls of ``release`` would: the first array's words and its second words, then the next's."""
    form = _coarse_form()
    a, b = np.arange(25).repeat(40), np.arange(25)[::-1].repeat(40)
    shared = np.random.default_rng(5)
    together = release_each(form, [a, b], [shared, shared])
    by_hand = np.random.default_rng(5)
    expected = [_by_hand(form, a, by_hand), _by_hand(form, b, by_hand)]
    assert all((got == want).all() for got, want in zip(together, expected, strict=True))
    assert shared.bit_generator.random_raw() == by_hand.bit_generator.random_raw()


@pytest.mark.parametrize("counts", [-1, 3, np.array([0, 3]), np.array([-1, 0])])
def test_a_matrix_refuses_counts_outside_its_inputs(counts):
    """Not numpy's wrap-around: ``-1`` would otherwise sample column ``n``."""
    matrix = countdp.design_named("GM", 2, "1/2").released
    words = 0 if np.ndim(counts) == 0 else np.zeros(np.size(counts), dtype=np.uint64)
    with pytest.raises(ValueError, match="0..2"):
        matrix.sample(counts, words)
