"""countdp's standard output carries only what it was asked for, even where HiGHS solves."""

import subprocess
import sys

import numpy as np
import pytest


@pytest.mark.parametrize("n", [6, 20], ids=["through cvxpy", "on the reduced model"])
def test_a_highs_design_as_csv_on_stdout_is_the_matrix_alone(n):
    done = subprocess.run([sys.executable, "-m", "countdp.cli", "design", "WH", "--n", str(n), "--alpha", "0.91",
                           "--solver", "HIGHS", "--format", "csv"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    P = np.loadtxt(done.stdout.splitlines(), delimiter=",")  # a banner line would not parse
    assert P.shape == (n + 1, n + 1)
    assert np.allclose(P.sum(axis=0), 1.0, atol=1e-9) and P.min() >= 0  # columns are distributions
