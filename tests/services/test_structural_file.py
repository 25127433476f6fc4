"""Designs held as structure: `countdp design` writes bytes at any n, `check` certifies, `release` draws.

The facts checked, each independent of the code under test: GM's exact expected L0 has a closed
form (CKS, Section IV: diagonal ``(1 - a)/(1 + a)`` inside, ``1/(1 + a)`` at the two ends), which
the structural file's objective value meets to within the rounding of weights over ``2^124``; below
the matrix path's largest size, the structural design and the matrix design are one mechanism
(the same integer columns); every edited file is refused in one line, exit status 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import countdp
from countdp.services.artifact import load_certified, load_design, save_design

HUGE = 10**7


def _countdp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "countdp.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def gm_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("structural") / "gm.json"
    done = _countdp("design", "GM", "--n", str(HUGE), "--alpha", "9/10", "--out", str(path))
    assert done.returncode == 0, done.stderr
    return path


def test_a_design_of_ten_million_is_a_file_of_kilobytes_with_gms_exact_l0(gm_file):
    assert gm_file.stat().st_size < 10_000 and not gm_file.with_suffix(".npz").exists()
    record = json.loads(gm_file.read_text())
    a, n = Fraction(9, 10), HUGE
    closed = 1 - ((n - 1) * (1 - a) / (1 + a) + 2 / (1 + a)) / (n + 1)  # GM's exact L0 (uniform prior)
    assert record["representation"] == "structural" and abs(record["objective_value"] - float(closed)) < 1e-9
    design = load_design(gm_file)
    assert design.matrix is None and design.released.representation == "structural"
    assert design.released.n == HUGE and design.released.certify().holds


def test_check_certifies_and_release_draws_from_the_file(gm_file):
    check = _countdp("check", str(gm_file))
    assert check.returncode == 0, check.stderr
    assert "certified exactly by its structure" in check.stdout and "no matrix" in check.stdout
    runs = [_countdp("release", str(gm_file), "0", "5000000", str(HUGE), "--seed", "4") for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    values = [int(v) for v in runs[0].stdout.split()]
    assert runs[0].stdout == runs[1].stdout and len(values) == 3 and all(0 <= v <= HUGE for v in values)


@pytest.mark.parametrize("edit, expected", [
    (lambda r: r["structure"].update(tables_sha256="0" * 64), "is not the one this countdp builds"),
    (lambda r: r["structure"].update(reserve=r["structure"]["reserve"] + 1), "is not the one this countdp builds"),
    (lambda r: r.update(alpha_exact="91/100"), r"is not float\(alpha_exact"),
    (lambda r: r.update(alpha=0.91, alpha_exact="91/100"), "is not the one this countdp builds"),
    (lambda r: r.pop("structure"), "field 'structure' is missing"),
    (lambda r: r.update(n="many"), "field 'n' has the wrong type"),
    # the bounds design applies (check_release_alpha, the tables' length): once OverflowError tracebacks
    (lambda r: r.update(alpha=1e-30, alpha_exact="1/" + "1" + "0" * 30), r"alpha = 1e-30 is below 2\^-62"),
    (lambda r: r.update(alpha=1.0, alpha_exact=f"{2**62 - 1}/{2**62}"), "alpha = 1 - 2.17e-19 is too close to 1"),
])
def test_an_edited_structural_file_is_refused_in_one_line(gm_file, tmp_path, edit, expected):
    record = json.loads(gm_file.read_text())
    edit(record)
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=expected) as error:
        load_certified(edited)
    assert str(error.value).startswith(f"{edited}: ") and "\n" not in str(error.value)
    done = _countdp("check", str(edited))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and str(edited) in done.stderr


@pytest.mark.parametrize("name", ["GM", "EM", "WM"])
@pytest.mark.parametrize("alpha", [f"{2**62 - 1}/{2**62}", "0.9999999999999999999"])
def test_an_alpha_within_a_float_of_1_is_refused_in_one_line_at_any_n(name, alpha, tmp_path):
    """Its float is 1.0: the tables' length was ln(...)/ln(1/1.0), an OverflowError traceback at n = 10^12
    (at n = 5 the designer refused it already)."""
    for n in ("5", str(10**12)):
        done = _countdp("design", name, "--n", n, "--alpha", alpha, "--out", str(tmp_path / "s.json"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("countdp: error: ") and "Traceback" not in done.stderr
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, n, alpha", [("GM", 9, "2/3"), ("EM", 12, "3/5"), ("UM", 5, "1/2"),
                                            ("WM", 400, "1/2")])
def test_below_the_matrix_paths_limit_the_structural_design_is_the_matrix_designs_mechanism(name, n, alpha, tmp_path):
    structural = countdp.design_named(name, n, alpha, representation="structural")
    matrix = countdp.design_named(name, n, alpha, representation="matrix")
    every = np.arange(n + 1)
    assert (np.asarray(structural.released.column(every), dtype=np.int64) == matrix.released.weights).all()
    save_design(structural, tmp_path / "s.json")
    again = load_design(tmp_path / "s.json")
    assert (np.asarray(again.released.column(every), dtype=np.int64) == matrix.released.weights).all()
    l0 = float(np.mean(1 - matrix.released.weights.diagonal() / 2.0**62))
    assert abs(structural.objective_value - l0) < 1e-12


def test_what_has_no_structure_is_refused_and_what_does_not_fit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="has no structural form under L1"):
        countdp.design_named("WM", 5000, "1/2", objective="L1", representation="structural")
    with pytest.raises(ValueError, match="beyond this machine"):
        countdp.design_named("GM", HUGE, "1/2", representation="matrix")
    csv = _countdp("design", "GM", "--n", str(HUGE), "--alpha", "1/2", "--format", "csv")
    assert csv.returncode == 2 and "held as structure" in csv.stderr and csv.stderr.count("\n") == 1
    other = _countdp("design", "EM", "--n", "5000", "--alpha", "1/2", "--out", str(tmp_path / "em.json"))
    assert other.returncode == 0, other.stderr
    at = _countdp("check", str(tmp_path / "em.json"), "--alpha", "2/3")
    assert at.returncode == 2 and "certified at its own alpha = 1/2" in at.stderr


@pytest.mark.parametrize("name", ["GM", "EM", "UM"])
def test_the_largest_group_a_structure_serves_is_a_file_and_one_more_is_refused_in_one_line(name, tmp_path):
    """n + 1 = 2^62 (inputs, outputs and counts are int64) is designed as bytes: nothing of size n is
    built, or this n would need exabytes.  GM's L0 is its closed form there.  One more is refused in
    one line, exit status 2, and no file is left."""
    largest, path = (1 << 62) - 1, tmp_path / "largest.json"
    done = _countdp("design", name, "--n", str(largest), "--alpha", "9/10", "--out", str(path))
    assert done.returncode == 0, done.stderr
    record = json.loads(path.read_text())
    assert record["n"] == largest and path.stat().st_size < 10_000
    if name == "GM":
        a, n = Fraction(9, 10), largest
        closed = 1 - ((n - 1) * (1 - a) / (1 + a) + 2 / (1 + a)) / (n + 1)
        assert abs(record["objective_value"] - float(closed)) < 1e-9
    over = _countdp("design", name, "--n", str(largest + 1), "--alpha", "9/10", "--out", str(tmp_path / "over.json"))
    assert over.returncode == 2 and over.stderr.count("\n") == 1 and "n + 1 <= 2^62" in over.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["largest.json"]


def test_a_table_release_draws_every_row_from_the_structural_file(gm_file, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("c\n0\n5\n" + f"{HUGE}\n")
    out = tmp_path / "out.csv"
    done = _countdp("release", str(gm_file), "--input", str(table), "--count-column", "c", "--out", str(out),
                    "--seed", "2")
    assert done.returncode == 0, done.stderr
    noisy = [int(line.split(",")[0]) for line in out.read_text().splitlines()[1:]]
    assert len(noisy) == 3 and all(0 <= v <= HUGE for v in noisy)
    sidecar = json.loads((tmp_path / "out.csv.release.json").read_text())
    [entry] = sidecar["mechanisms"]
    assert entry["representation"] == "structural" and entry["structural_certificate"]["holds"]
    assert entry["structure"] == json.loads(gm_file.read_text())["structure"]
