"""The evaluation jobs (workflow/lib/jobs_extrinsic.py): artifacts in, raw and summary CSVs out.

UM reports a uniform count, so its exact L0 is n/(n+1) on any data; EM is fair, so its exact
L0 is 1 - EM[0, 0] on any data (Theorem 4's setting).  A tampered artifact stops the job before
any output exists.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from jobs_extrinsic import eval_adult, eval_binomial

from countdp.design.designer import design_named
from countdp.evaluate.data import write_adult
from countdp.mechanisms.closed_forms import explicit_fair
from countdp.services.artifact import save_design
from tests.helpers.artifact_files import read_file, write_file


@pytest.fixture
def artifacts(tmp_path):
    files = []
    for m in ("UM", "EM"):
        for n in (3, 5):
            path = tmp_path / "mechanisms" / f"{m}-{n}.json"
            save_design(design_named(m, n, "0.9"), path)
            files.append([m, n, str(path)])
    return files


def test_binomial_job_writes_exact_expectations_of_closed_forms(tmp_path, artifacts):
    points = [{"n": n, "p": p, "alpha": 0.9} for n in (3, 5) for p in (0.2, 0.5)]
    out = tmp_path / "out"
    eval_binomial("test", 0.9, artifacts, points, ["L0"], 12, 600, 7, out / "summary.csv", out / "raw.csv",
                  out / "job.log")
    raw, summary = pd.read_csv(out / "raw.csv"), pd.read_csv(out / "summary.csv")
    assert len(raw) == 4 * 2 * 12 and len(summary) == 4 * 2
    assert list(dict.fromkeys(summary["mechanism"])) == ["UM", "EM"]
    for r in summary.to_dict("records"):
        want = r["n"] / (r["n"] + 1) if r["mechanism"] == "UM" else 1 - explicit_fair(r["n"], 0.9)[0, 0]
        assert r["exact"] == pytest.approx(want, rel=1e-9) and r["groups"] == 600 // r["n"]
    assert summary["z"].abs().max() < 4.5
    assert "test alpha=0.9: 4 points x 2 mechanisms" in (out / "job.log").read_text()


def test_adult_job_reads_the_checked_table(tmp_path, artifacts):
    rng = np.random.default_rng(0)
    bits = (rng.random(901) < 0.3).astype(np.int64)
    table = pd.DataFrame({"young": bits, "gender": 1 - bits, "income": bits})
    csv, sidecar = tmp_path / "adult.csv", tmp_path / "adult.json"
    write_adult(table, {"source": "test"}, csv, sidecar)
    out = tmp_path / "out"
    eval_adult(csv, sidecar, "young", 0.9, artifacts, [3, 5], 10, 3, out / "summary.csv", out / "raw.csv",
               out / "job.log")
    summary = pd.read_csv(out / "summary.csv").set_index(["mechanism", "n"])
    assert summary.loc[("UM", 5), "exact"] == pytest.approx(5 / 6)
    assert summary.loc[("EM", 3), "exact"] == pytest.approx(1 - explicit_fair(3, 0.9)[0, 0])
    assert summary.loc[("UM", 3), "groups"] == 300 and (summary["repetitions"] == 10).all()
    csv.write_text(csv.read_text().replace("\n1,", "\n0,", 1))  # the sidecar's checksum no longer matches
    with pytest.raises(ValueError, match="SHA-256 does not match"):
        eval_adult(csv, sidecar, "young", 0.9, artifacts, [3], 10, 3, out / "s2.csv", out / "r2.csv", out / "l2")
    assert not (out / "r2.csv").exists()


def test_a_tampered_artifact_stops_the_job_before_any_output(tmp_path, artifacts):
    path = artifacts[-1][2]
    record, _, weights = read_file(path)
    weights = weights.copy()
    weights[0, 0] += 1  # column 0 no longer sums to 2^62 (and the npz no longer matches its SHA-256)
    write_file(path, record, weights=weights, digests=False)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=path.replace("+", r"\+")):
        eval_binomial("t", 0.9, artifacts, [{"n": 5, "p": 0.5, "alpha": 0.9}], ["L0"], 3, 1000, 1,
                      out / "summary.csv", out / "raw.csv", out / "job.log")
    assert not out.exists()
