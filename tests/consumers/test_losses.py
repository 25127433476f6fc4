"""Consumer losses and side information: the named losses against their definitions, the monotone
test (G-S's hypothesis) and the parsing of specs, including every refusal."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.consumers.losses import (
    LossSpec,
    check_side,
    is_monotone,
    loss_matrix,
    parse_loss,
    parse_side_info,
    side_info_text,
)


def test_named_losses_match_their_definitions_entry_by_entry():
    n = 3
    for i in range(n + 1):
        for r in range(n + 1):
            assert loss_matrix("L1", n)[i, r] == abs(i - r)
            assert loss_matrix("L2", n)[i, r] == (i - r) ** 2
            assert loss_matrix("L0", n)[i, r] == (1 if i != r else 0)
            assert loss_matrix("L0d:1", n)[i, r] == (1 if abs(i - r) > 1 else 0)
    assert loss_matrix("L1", 2).tolist() == [[0, 1, 2], [1, 0, 1], [2, 1, 0]]


def test_l0d_0_is_l0_and_l0d_n_is_zero():
    for n in (1, 4, 9):
        assert np.array_equal(loss_matrix("L0d:0", n), loss_matrix("L0", n))
        assert not loss_matrix(f"L0d:{n}", n).any()


@pytest.mark.parametrize("spec, parsed", [("L1", LossSpec("L1")), ("l2", LossSpec("L2")), (" L0 ", LossSpec("L0")),
                                          ("L0d:3", LossSpec("L0d", 3)), ("l0D:0", LossSpec("L0d", 0))])
def test_parse_loss_accepts_the_four_spellings(spec, parsed):
    assert parse_loss(spec) == parsed
    assert parse_loss(str(parsed)) == parsed  # str() is a spec again


@pytest.mark.parametrize("spec", ["L3", "L0d", "L0d:", "L0d:-1", "L0d:x", "L0d:1.5", "", "L1x", "abs"])
def test_parse_loss_refuses_a_bad_spec_in_one_line_naming_it(spec):
    with pytest.raises(ValueError) as info:
        parse_loss(spec)
    message = str(info.value)
    assert "\n" not in message and repr(spec) in message


def test_named_losses_are_monotone_and_broken_ones_are_not():
    for spec in ("L0", "L1", "L2", "L0d:0", "L0d:2"):
        assert is_monotone(loss_matrix(spec, 6))
    L = loss_matrix("L1", 4)
    L[2, 4] = 0.5  # answering 4 when the truth is 2 costs less than answering 3
    assert not is_monotone(L)
    i = np.arange(5)
    one_sided = np.where(i[None, :] >= i[:, None], 2.0, 1.0) * np.abs(i[:, None] - i[None, :])
    assert not is_monotone(one_sided)  # grows on each side, but at different rates
    assert is_monotone(one_sided, tol=np.inf)


def test_is_monotone_allows_any_profile_that_never_decreases():
    rng = np.random.default_rng(5)
    for _ in range(50):
        n = int(rng.integers(1, 8))
        profile = np.cumsum(rng.random((n + 1, n + 1)) * (rng.random((n + 1, n + 1)) < 0.6), axis=1)
        i = np.arange(n + 1)
        assert is_monotone(np.take_along_axis(profile, np.abs(i[:, None] - i[None, :]), axis=1))


@pytest.mark.parametrize("spec, inputs", [("3..7", [3, 4, 5, 6, 7]), ("1,4,5", [1, 4, 5]), ("0,3..5", [0, 3, 4, 5]),
                                          (" 2 ", [2]), ("4..4", [4]), ("5,1,5", [1, 5]), ("0..8", list(range(9)))])
def test_parse_side_info(spec, inputs):
    assert parse_side_info(spec, 8).tolist() == inputs


@pytest.mark.parametrize("spec, word", [("", "empty"), ("   ", "empty"), ("5..3", "reversed"), ("9", "leaves"),
                                        ("7..9", "leaves"), ("-1", "leaves"), ("a", "not an input"),
                                        ("1,,2", "empty item"), ("1..", "not an input"), ("..3", "not an input"),
                                        ("1.5", "not an input")])
def test_parse_side_info_refuses_in_one_line(spec, word):
    with pytest.raises(ValueError) as info:
        parse_side_info(spec, 8)
    assert word in str(info.value) and "\n" not in str(info.value)


def test_side_info_text_round_trips():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 20))
        side = np.flatnonzero(rng.random(n + 1) < 0.5)
        if side.size:
            assert parse_side_info(side_info_text(side), n).tolist() == side.tolist()
    assert side_info_text([0, 1, 2, 5]) == "0..2,5"


@pytest.mark.parametrize("side", [[], [0.5, 1.0], [0, 9], [-1, 2]])
def test_check_side_refuses(side):
    with pytest.raises(ValueError):
        check_side(np.array(side), 8)
