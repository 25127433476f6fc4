"""The countdp command line: certified designs, checks, releases and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from countdp.certify import is_alpha_dp
from countdp.cli import main
from countdp.mechanisms import explicit_fair, geometric

JSON_KEYS = {"mechanism", "n", "alpha", "objective", "properties_requested", "matrix", "objective_value",
             "l0", "properties", "dp", "solver"}


@pytest.mark.parametrize("mech", ["GM", "EM", "UM", "WM", "WH"])
@pytest.mark.parametrize("n", [1, 2, 7, 8, 64])
def test_design_prints_certified_mechanisms(mech, n, capsys):
    alpha = 0.91
    assert main(["design", mech, "--n", str(n), "--alpha", str(alpha)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert JSON_KEYS <= set(record)
    P = np.array(record["matrix"])
    assert P.shape == (n + 1, n + 1)
    assert record["dp"]["certified"] and is_alpha_dp(P, alpha)
    assert set(record["dp"]) >= {"max_violation", "certified", "repair_lambda"}
    if mech == "GM":
        np.testing.assert_allclose(P, geometric(n, alpha), atol=1e-12)
        assert record["l0"] == pytest.approx(2 * alpha / (1 + alpha))
    if mech == "EM":
        np.testing.assert_allclose(P, explicit_fair(n, alpha), atol=1e-12)
        assert all(record["properties"].values())


def test_design_lp_with_props_objective_and_csv_out(tmp_path):
    out = tmp_path / "m.json"
    assert main(["design", "LP", "--n", "5", "--alpha", "0.62", "--objective", "L0d:1", "--props", "wh,cm",
                 "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["objective"] == "L0d:1" and record["properties_requested"] == ["CM", "WH"]
    assert record["properties"]["CM"] and record["properties"]["WH"]
    csv_out = tmp_path / "e"
    assert main(["design", "EM", "--n", "3", "--alpha", "0.5", "--format", "csv", "--out", str(csv_out)]) == 0
    written = np.loadtxt(tmp_path / "e.csv", delimiter=",")
    np.testing.assert_allclose(written, explicit_fair(3, 0.5), atol=1e-15)


def test_check_reports_properties_and_dp(tmp_path, capsys):
    path = tmp_path / "wm.json"
    main(["design", "WM", "--n", "4", "--alpha", "0.91", "--out", str(path)])
    capsys.readouterr()
    assert main(["check", str(path)]) == 0
    text = capsys.readouterr().out
    assert "CM  yes" in text and "F   no" in text and "certified" in text


def test_check_flags_a_non_dp_csv(tmp_path, capsys):
    path = tmp_path / "m.csv"
    np.savetxt(path, np.eye(3) * 0.8 + 0.1, delimiter=",")
    assert main(["check", str(path), "--alpha", "0.9"]) == 1
    assert "FAILS on the float matrix" in capsys.readouterr().out


def test_release_uses_os_entropy_unless_seeded(tmp_path, capsys):
    path = tmp_path / "gm.json"
    main(["design", "GM", "--n", "4", "--alpha", "0.5", "--out", str(path)])
    assert main(["release", str(path), "0", "4", "2"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) == 3 and "OS's secure random source" in captured.err
    main(["release", str(path), "1", "1", "--seed", "5"])
    first = capsys.readouterr()
    main(["release", str(path), "1", "1", "--seed", "5"])
    assert capsys.readouterr().out == first.out and "never for real data" in first.err


@pytest.mark.parametrize("argv, word", [
    (["design", "XX", "--n", "3", "--alpha", "0.5"], "invalid choice"),
    (["design", "GM", "--n", "0", "--alpha", "0.5"], "n must be"),
    (["design", "GM", "--n", "2.5", "--alpha", "0.5"], "n must be"),
    (["design", "GM", "--n", "x", "--alpha", "0.5"], "n must be"),
    (["design", "GM", "--n", "3", "--alpha", "1"], "alpha"),
    (["design", "GM", "--n", "3", "--alpha", "0"], "alpha"),
    (["design", "GM", "--n", "3", "--alpha", "nan"], "alpha"),
    (["design", "GM", "--n", "3"], "required"),
    (["design", "LP", "--n", "3", "--alpha", "0.5", "--props", "WH,XX"], "unknown property"),
    (["design", "LP", "--n", "3", "--alpha", "0.5", "--objective", "L9"], "unknown objective"),
    (["design", "WM", "--n", "3", "--alpha", "0.5", "--props", "F"], "--props applies to LP only"),
    (["design", "WM", "--n", "3", "--alpha", "0.5", "--solver", "GLPK"], "invalid choice"),
    (["design", "WM", "--n", "3", "--alpha", "0.5", "--method", "barrier"], "no method"),
    (["check", "/no/such/file.json"], "no such file"),
    (["frobnicate"], "invalid choice"),
    ([], "required"),
])
def test_bad_arguments_exit_2_with_one_line(argv, word, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("countdp: error:") and word in err


@pytest.mark.parametrize("content", ["not json", '{"n": 3}', '{"matrix": [[1, 0], [0]]}', '{"matrix": "x"}'])
def test_bad_files_exit_2(tmp_path, content, capsys):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err


def test_release_refuses_uncertified(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"matrix": [[0.9, 0.1], [0.1, 0.9]], "alpha": 0.5}))
    assert main(["release", str(path), "0"]) == 2
    assert "not certified" in capsys.readouterr().err


def test_console_script_entry_point():
    result = subprocess.run([sys.executable, "-m", "countdp.cli", "design", "GM", "--n", "2", "--alpha", "2"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
