"""HiGHS's thread pool is one per process: no model of countdp may ask for its own thread count.

Each case runs in a fresh interpreter whose pool an earlier solve fixed at 3 threads (a count no
model here would choose), as a pipeline job does when another job in the same Snakemake process
solved first.
"""

import subprocess
import sys

import pytest

POOL_OF_THREE = """
import highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.setOptionValue("threads", 3)
h.addVar(0.0, 1.0)
h.changeColCost(0, 1.0)
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
"""

CASES = {
    "the plain HiGHS model": """
from countdp.design.highs_model import DesignModel
model = DesignModel(4, 0.91)
_, value = model.minimise(model.cost("sum"))
assert value > 0, value
""",
    "the reduced model's simplex": """
from countdp.design.fast import fast_design
found = fast_design(12, 0.91, ("WH",), "L0", method="simplex", use_closed_forms=False)
assert found.status == "optimal", found.status
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_solves_after_another_solve_fixed_the_thread_pool(case):
    done = subprocess.run([sys.executable, "-c", POOL_OF_THREE + CASES[case]], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
