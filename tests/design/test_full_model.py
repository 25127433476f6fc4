"""The full model's predicted size and memory against the model HiGHS is given and a fresh process's peak.

Independent facts: the columns, rows and non-zeros of the LP :class:`DesignModel` passes to HiGHS
(read back with ``getLp``), and the peak resident growth of a fresh process that solves it
lexicographically, as the minimax and prior studies do (``VmHWM``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from countdp.design.full_model import (
    ALL_PROPERTIES,
    LEXICOGRAPHIC_BYTES_PER_ENTRY,
    full_model_bytes,
    full_model_size,
)
from countdp.design.highs_model import DesignModel
from countdp.design.memory import PATH_OVERHEAD_BYTES, PROCESS_BYTES
from countdp.studies.minimax import MINIMAX_SETS
from countdp.studies.prior import PRIOR_SETS


def built_size(n: int, properties: tuple[str, ...], objective: str) -> tuple[int, int, int]:
    lp = DesignModel(n, 0.8, properties, objective).h.getLp()
    return lp.num_col_, lp.num_row_, len(lp.a_matrix_.value_)


SETS = sorted({*MINIMAX_SETS.values(), *PRIOR_SETS.values(), ("CH", "S"), ("RM",), ("F",)})


@pytest.mark.parametrize("properties", SETS, ids=lambda p: "+".join(p) or "none")
@pytest.mark.parametrize("n", [1, 6, 11])
def test_the_size_is_the_built_models(n, properties):
    size = full_model_size(n, properties)
    for objective in ("L0", "L1", "L2"):
        assert (size.columns, size.rows, size.nonzeros) == built_size(n, properties, objective)
    columns, rows, nonzeros = built_size(n, properties, "L0d:1")  # fewer charged entries: an upper bound
    assert (columns, rows) == (size.columns, size.rows) and nonzeros <= size.nonzeros


def test_the_memory_model_is_the_design_estimates():
    n = 300
    assert full_model_bytes(n) == PROCESS_BYTES + PATH_OVERHEAD_BYTES + LEXICOGRAPHIC_BYTES_PER_ENTRY * 301**2
    assert full_model_bytes(n, 1) < full_model_bytes(n)
    assert full_model_size(6, ("S", "S", "WH")) == full_model_size(6, ("WH", "S"))  # a repeat is one property
    assert full_model_size(100, ALL_PROPERTIES).describe() == "10,202 columns, 76,304 rows, 162,304 non-zeros"


MEASURE = """
import json, sys
import numpy, scipy.sparse, highspy  # the LP stack before the baseline
from countdp.design.highs_model import lexicographic_design

def peak():  # this process's own high-water mark
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

n, props = json.loads(sys.argv[1])
before = peak()
for first in ("sum", "max"):
    lexicographic_design(n, 0.91, tuple(props), "L0", first)
print(peak() - before)
"""


@pytest.mark.parametrize("request_", [(60, list(ALL_PROPERTIES)), (60, [])])
def test_the_memory_bounds_measured_peak_growth(request_):
    """A minimax pair of solves (sum then max, max then sum) in a fresh process grows less than the
    estimate's path share (the process itself is counted apart)."""
    done = subprocess.run([sys.executable, "-c", MEASURE, json.dumps(request_)], capture_output=True, text=True,
                          timeout=300, check=True)
    grown = int(done.stdout.split()[-1])
    assert 0 < grown <= full_model_bytes(request_[0]) - PROCESS_BYTES
