"""The reductions' chain: applied in order, undone in reverse order, refused where a reduction does
not apply; and the reductions of the design LP composed by it (CM relaxed, then S folded)."""

from __future__ import annotations

import numpy as np
import pytest

from countdp.design.reductions.chain import Chain, Reduction, Unchanged
from countdp.design.reductions.fold_symmetry import DropS, FoldS, Symmetrize, Unfold
from countdp.design.reductions.relax_cm import RelaxCM, Spread
from countdp.design.request import DesignRequest


class Shift(Reduction):
    """``x -> x + k`` (refuses negative ``x``); its inverse subtracts ``k`` and records the order."""

    refusal = "negative"

    def __init__(self, k: int, log: list):
        self.k, self.log = k, log

    def accepts(self, problem: int) -> bool:
        return problem >= 0

    def apply(self, problem: int):
        shift, log = self.k, self.log

        class Back:
            def invert_primal(self, point):
                log.append(shift)
                return point - shift

            def invert_dual(self, u, v):
                return (u, v) if shift != 99 else None

        return problem + shift, Back()


def test_a_chain_applies_in_order_and_inverts_in_reverse():
    log: list = []
    chain = Chain([Shift(1, log), Shift(10, log), Shift(100, log)])
    reduced, inverse = chain.apply(5)
    assert reduced == 116
    assert inverse.invert_primal(reduced) == 5 and log == [100, 10, 1]
    assert inverse.invert_dual("u", "v") == ("u", "v")
    assert Chain([Shift(1, log), Shift(99, log)]).apply(0)[1].invert_dual("u", "v") is None


def test_a_reduction_that_does_not_accept_is_refused():
    chain = Chain([Shift(-10, []), Shift(1, [])])  # the second sees -5
    assert not chain.accepts(5) and chain.refused(5) == "negative"
    with pytest.raises(ValueError, match="does not accept"):
        chain.apply(5)
    kept = Chain.accepted([Shift(-10, []), Shift(1, []), Shift(20, [])], 5)
    assert [r.k for r in kept.reductions] == [-10]  # the later ones see -5 and refuse it
    assert Chain().apply(7)[0] == 7 and Unchanged().invert_dual(1, 2) == (1, 2)


def test_cm_relaxed_then_s_folded_as_one_chain():
    target = DesignRequest.of(20, 0.9, ("RM", "CM", "WH"), "L1").problem
    chain = Chain.accepted([RelaxCM(), FoldS()], target)
    reduced, inverse = chain.apply(target)
    assert set(reduced.properties) == {"RM", "CH", "WH", "S"}
    assert [type(i) for i in inverse.inverses] == [Spread, Unfold]
    P = np.eye(21)
    assert inverse.invert_primal(P) is P  # both keep a point as it is (the proof checks it)
    asymmetric = DesignRequest.of(20, 0.9, ("RM", "CM"), "L1", np.arange(1.0, 22.0) / 231).problem
    assert [type(r) for r in Chain.accepted([RelaxCM(), FoldS()], asymmetric).reductions] == [RelaxCM]
    assert Chain([DropS()]).refused(target) == "not mirror symmetric"
    with_s = DesignRequest.of(20, 0.9, ("RM", "S"), "L1").problem
    assert isinstance(Chain([DropS()]).apply(with_s)[1].inverses[0], Symmetrize)
