"""The empirical privacy audit through the release engine: every form passes, planted defects fail.

Each form releases 10^6 copies of a group per neighbouring dataset through ``prepare`` and
``write_release`` (Parquet written and read back), with the mechanisms the CLI would use (its
``CachedMechanisms`` over a temporary cache, the mechanism file's design, or the levels chain), and
checks the lower confidence bound epsilon_LB against the epsilon each form promises, computed here
from its closed form (-ln alpha, or the sum over the count columns), never read from the release.
The conditioned release pads every partition's draw to a deadline (a few ms each), so it gets a few
thousand partitions here; ``benchmarks/audit_release_forms.py`` runs it at 10^5 to 10^6.

The bound itself is first checked on known distributions, where the true privacy loss is known.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from countdp import design_named
from countdp.release import empirical_audit as ea
from countdp.release.levels import level_design
from countdp.release.run import CachedMechanisms
from countdp.services.artifact import load_design, save_design
from countdp.services.mechanism_cache import MechanismCache

SAMPLES = 1_000_000
ALPHA = Fraction(2, 3)
EPSILON = math.log(3 / 2)  # -ln(2/3)
LEVELS = (Fraction(1, 2), Fraction(2, 3), Fraction(9, 10))
POWER = 0.9
"""A correct form's epsilon_LB at 10^6 draws reaches at least this share of its epsilon: the audit is not
vacuous (every form here attains its worst ratio on events of large probability)."""


def cli(design=None):
    """``mechanism_for`` as ``countdp release`` builds it for a request: the file's design, the levels chain,
    or the mechanism cache (``--cache``, here a temporary folder)."""
    def mechanisms(request):
        if design is not None:
            return lambda k, n: design
        if request.columns[0].levels:
            return lambda k, n: level_design(n, request.columns[k].levels, request.mechanism)
        return CachedMechanisms(request, MechanismCache(request.cache))
    return mechanisms


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("audit")


@pytest.fixture(scope="module")
def wm_file(folder):
    """WM for n = 6 at alpha = 2/3, saved as ``countdp design WM --n 6 --alpha 2/3 --out`` saves it."""
    path = folder / "WM-n6.json"
    save_design(design_named("WM", 6, ALPHA), path)
    return path, load_design(path)


def test_the_bound_holds_and_is_tight_on_a_known_ratio():
    """Two distributions whose largest ratio is exactly 3/2 (on a prefix): epsilon_LB <= ln 3/2, close to it."""
    p = np.array([0.3, 0.3, 0.2, 0.2])
    q = np.array([0.2, 0.2, 0.3, 0.3])
    rng = np.random.default_rng(7)
    samples = [rng.choice(4, SAMPLES, p=p), rng.choice(4, SAMPLES, p=q)]
    bound = ea.bound_privacy_loss(samples, [(0, 1)], 4, thresholds=True)
    assert bound.lower_bound <= EPSILON
    assert bound.lower_bound >= 0.95 * EPSILON
    assert abs(bound.estimate - EPSILON) < 0.02
    # 8 distinct events (4 outputs, {0,1}, {0,1,2}, {1,2,3}, {2,3}), two bounds each per dataset; DP-Sniper: 2 x 2
    assert bound.bounds == 2 * 8 * 2 + 4


def test_identical_distributions_prove_almost_nothing():
    rng = np.random.default_rng(8)
    samples = [rng.integers(0, 50, SAMPLES), rng.integers(0, 50, SAMPLES)]
    bound = ea.bound_privacy_loss(samples, [(0, 1)], 50)
    assert bound.lower_bound < 0.05


def test_the_dp_sniper_event_finds_a_loss_spread_over_many_outputs():
    """A ratio of 1.2 on each of 400 rare outputs: no single output proves it, their union does."""
    q = np.full(1000, 1 / 1000)
    p = q.copy()
    p[:400] *= 1.2
    p[400:] *= (1 - 0.48) / 0.6
    rng = np.random.default_rng(9)
    samples = [rng.choice(1000, SAMPLES, p=p), rng.choice(1000, SAMPLES, p=q)]
    bound = ea.bound_privacy_loss(samples, [(0, 1)], 1000)
    assert math.log(1.2) * 0.75 <= bound.lower_bound <= math.log(1.2)
    assert "DP-Sniper" in bound.worst


def check_passes(result: ea.FormResult, declared: float) -> None:
    assert result.declared == pytest.approx(declared, rel=1e-12)
    assert result.engine_epsilon >= declared - 1e-12  # the release charges an upper bound of -ln alpha
    assert result.bound.samples == SAMPLES
    assert result.passed, (result.bound.lower_bound, declared)
    assert result.bound.lower_bound >= POWER * declared, (result.bound.lower_bound, declared)


def test_one_mechanism_file_for_every_row(folder, wm_file):
    path, design = wm_file
    check_passes(ea.audit_form(ea.file_form(path, 6, ALPHA), cli(design), folder, SAMPLES, seed=1), EPSILON)


@pytest.mark.parametrize("mechanism", ["EM", "WM"])  # EM: held as structure; WM: matrices, merged into one table
def test_sizes_interleaved_through_the_mechanism_cache(folder, mechanism):
    form = ea.sizes_form(mechanism, ALPHA, (3, 5, 8))
    check_passes(ea.audit_form(form, cli(), folder, SAMPLES, seed=2), EPSILON)


def test_two_count_columns_one_person_changes_both(folder):
    form = ea.columns_form("GM", ALPHA, 6, (2, 3))
    check_passes(ea.audit_form(form, cli(), folder, SAMPLES, seed=3), 2 * EPSILON)


def test_levels_are_charged_the_least_private_level(folder):
    form = ea.levels_form(LEVELS, 8)
    check_passes(ea.audit_form(form, cli(), folder, SAMPLES, seed=4), math.log(2))


@pytest.mark.parametrize(("by", "samples", "tables"), [(True, 3_000, None), (False, 100, None), (False, 3_000, 20)])
def test_conditioned_release_keeps_its_computed_guarantee(folder, by, samples, tables):
    """``--invariant-by g`` (one partition per replicate) and ``--invariant total`` (one per table): the
    declared epsilon is the guarantee the release computes, which Gong and Meng bound by 4 epsilon."""
    form = ea.invariant_form("EM", ALPHA, (3, 5), (2, 1), by=by)
    result = ea.audit_form(form, cli(), folder, samples, seed=5, full_tables=tables)
    assert EPSILON < result.declared <= 4 * EPSILON
    assert result.bound.samples == samples
    assert result.passed, (result.bound.lower_bound, result.declared)


def test_the_repeated_draw_is_what_a_written_table_carries(folder):
    """The audit's shortcut for ``--invariant total`` (the engine's draw repeated on a prepared table) gives,
    seed for seed, the very values a whole release writes: the table is read back, not the draw."""
    from countdp.release.request import ReleaseRequest

    form = ea.invariant_form("EM", ALPHA, (3, 5), (2, 1), by=False)
    source, out = folder / "repeat.parquet", folder / "repeat-released.parquet"
    ea.replicate_table(form, form.blocks[0], 1, source)
    seen = set()
    for words in range(40):
        request = ReleaseRequest(input=source, out=out, seed=words, overwrite=True, cache=folder / "mechanisms",
                                 **form.request)
        written, prepared = ea.released_columns(request, cli()(request), words)
        drawn = ea.conditioned_columns(prepared, words)
        assert drawn.keys() == written.keys()
        for name, values in written.items():
            assert np.array_equal(drawn[name], values)
            seen.add(tuple(values))
    assert len(seen) > 1  # the seeds are used: the comparison is not between constants


def squared_alpha(design):
    """Planted: the noise comes from the design for alpha^2 while the request (and sidecar) say alpha."""
    return lambda request: (lambda k, n: design)


def shifted(design, shift):
    """Planted: count c is sampled from column c - shift of the cumulative table (wrapping around)."""
    return lambda request: (lambda k, n: ea.ShiftedDesign(design, shift))


def column_loss(weights: np.ndarray, a: int, b: int) -> float:
    """The exact largest ``ln(W[i, a] / W[i, b])`` over outputs: the loss of releasing column a against b."""
    return float(np.max(np.log(weights[:, a].astype(float)) - np.log(weights[:, b].astype(float))))


@pytest.mark.parametrize("defect", ["alpha^2", "column c-1", "column c+1"])
def test_planted_defects_in_a_file_release_are_flagged(folder, wm_file, defect):
    path, design = wm_file
    W = design.released.weights
    if defect == "alpha^2":
        planted = design_named("WM", 6, ALPHA**2)
        mechanisms, true_loss = squared_alpha(planted), 2 * EPSILON
    else:
        shift = 1 if defect == "column c-1" else -1
        mechanisms = shifted(design, shift)
        true_loss = max(column_loss(W, 0, 6), column_loss(W, 6, 0))  # the wrapped pair samples columns 0 and n
    result = ea.audit_form(ea.file_form(path, 6, ALPHA), mechanisms, folder, SAMPLES, seed=6)
    assert not result.passed
    assert result.bound.lower_bound > 1.5 * EPSILON
    assert result.bound.lower_bound <= true_loss + 1e-9  # the bound stays sound for the defective release too


def test_planted_defects_in_the_cached_size_lookup_are_flagged(folder):
    """The same defects where the CLI's cache serves sizes 3, 5, 8 (WM: the merged table)."""
    form = ea.sizes_form("WM", ALPHA, (3, 5, 8))
    cache = MechanismCache(folder / "mechanisms")

    def wrong_alpha(request):
        return lambda k, n: cache.get("WM", n, ALPHA**2, "L0")

    def off_by_one(request):
        return lambda k, n: ea.ShiftedDesign(cache.get("WM", n, ALPHA, "L0"), 1)

    for mechanisms in (wrong_alpha, off_by_one):
        result = ea.audit_form(form, mechanisms, folder, SAMPLES, seed=7)
        assert not result.passed
        assert result.bound.lower_bound > 1.5 * EPSILON
