"""The countdp command line: certified designs, checks, releases and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from countdp.cli import main
from countdp.mechanisms.closed_forms import explicit_fair, geometric
from countdp.privacy.certify import is_alpha_dp
from tests.helpers.artifact_files import python_int_dp, read_file, write_file

JSON_KEYS = {"mechanism", "n", "alpha", "alpha_exact", "release", "objective", "properties_requested", "matrix",
             "objective_value", "l0", "properties", "dp", "solver"}


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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.npz"]
    for name in ("e", "e.txt", "e.csv"):  # exactly the path given, whatever its suffix
        csv_out = tmp_path / name
        assert main(["design", "EM", "--n", "3", "--alpha", "0.5", "--format", "csv", "--out", str(csv_out)]) == 0
        written = np.loadtxt(csv_out, delimiter=",")
        np.testing.assert_allclose(written, explicit_fair(3, 0.5), atol=1e-15)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e", "e.csv", "e.txt", "m.json", "m.npz"]


@pytest.mark.parametrize("argv, word", [
    (["--format", "csv", "--out", "m.json"], "--format csv writes a CSV matrix, not a .json file"),
    (["--format", "csv", "--out", "m.npz"], "--format csv writes a CSV matrix, not a .npz file"),
    (["--out", "m.txt"], "--format json writes a .json file"),
    (["--out", "m.csv"], "--format json writes a .json file"),
    (["--out", "m"], "--format json writes a .json file"),
])
def test_design_refuses_an_out_whose_suffix_contradicts_the_format(argv, word, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["design", "GM", "--n", "3", "--alpha", "0.5", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"countdp: error: {argv[-1]}: ") and word in err
    assert not any(tmp_path.iterdir())


def test_design_that_cannot_write_its_file_is_one_line(tmp_path, capsys):
    (tmp_path / "taken.json").mkdir()
    assert main(["design", "GM", "--n", "3", "--alpha", "0.5", "--out", str(tmp_path / "taken.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{tmp_path / 'taken.json'}: cannot write it" in err and "/." not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.json"]  # no npz without its JSON


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


@pytest.mark.parametrize("seed", ["-1", "1.5", "x", "", "²"])
@pytest.mark.parametrize("form", ["counts", "table"])
def test_a_bad_seed_is_one_line_naming_the_option(tmp_path, capsys, form, seed):
    """Each form of ``countdp release`` (the only command with ``--seed``) names the option, before any
    line about the noise: ``--seed -1`` once printed numpy's "expected non-negative integer" alone."""
    design = tmp_path / "em.json"
    assert main(["design", "EM", "--n", "3", "--alpha", "1/2", "--out", str(design)]) == 0
    (tmp_path / "t.csv").write_text("n,c\n3,1\n")
    argv = {"counts": ["release", str(design), "1", "2"],
            "table": ["release", "--input", str(tmp_path / "t.csv"), "--count-column", "c", "--size-column", "n",
                      "--mechanism", "EM", "--epsilon", "1", "--cache", str(tmp_path / "cache"),
                      "--out", str(tmp_path / "o.csv")]}[form]
    before = sorted(p.name for p in tmp_path.iterdir())
    capsys.readouterr()
    assert main([*argv, "--seed", seed]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"countdp: error: argument --seed: must be an integer >= 0, got {seed!r}\n"
    assert captured.out == "" and sorted(p.name for p in tmp_path.iterdir()) == before


def _special_files(tmp_path) -> dict:
    """Paths that are not regular files: a read of a FIFO blocks, of /dev/zero never ends."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    return {"folder": (str(tmp_path / "folder"), "a directory, not a mechanism file"),
            "fifo": (str(tmp_path / "fifo"), "a named pipe (FIFO), not a mechanism file"),
            "device": ("/dev/zero", "a device, not a mechanism file")}


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
@pytest.mark.parametrize("command", [["check"], ["interpret", "--loss", "L1"], ["release", "1"]])
def test_a_file_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path, capsys, kind, command):
    path, what = _special_files(tmp_path)[kind]
    argv = [command[0], path, *command[1:]]
    assert main(argv) == 2  # once "no such file" (check, release), or a read that blocked (interpret on a FIFO)
    assert capsys.readouterr().err == f"countdp: error: {path}: {what}\n"


def test_an_empty_csv_is_one_line_without_numpys_warning(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    done = subprocess.run([sys.executable, "-m", "countdp.cli", "check", "empty.csv", "--alpha", "0.5"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("countdp: error: empty.csv: not a readable CSV matrix")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("content", ["not json", '{"n": 3}', '{"matrix": [[1, 0], [0]]}', '{"matrix": "x"}'])
def test_bad_files_exit_2(tmp_path, content, capsys):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err


def test_console_script_entry_point():
    result = subprocess.run([sys.executable, "-m", "countdp.cli", "design", "GM", "--n", "2", "--alpha", "2"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# ---------------------------------------------------------------- exact alpha and the release weights
def _python_int_dp(weights: list[list[int]], p: int, q: int, D: int) -> bool:
    N = len(weights)
    if any(sum(weights[i][j] for i in range(N)) != D for j in range(N)):
        return False
    return all(p * r[j + 1] <= q * r[j] and p * r[j] <= q * r[j + 1] for r in weights for j in range(N - 1))


def test_design_prints_integer_weights_whose_exact_test_holds(capsys):
    assert main(["design", "GM", "--n", "60", "--alpha", "1/2"]) == 0
    record = json.loads(capsys.readouterr().out)
    release = record["release"]
    assert record["alpha_exact"] == "1/2" and release["denominator"] == 2**62
    assert all(isinstance(v, int) for row in release["weights"] for v in row)
    assert _python_int_dp(release["weights"], 1, 2, 2**62)
    cert = release["certificate"]
    assert cert["holds"] is True and cert["K"] == 62 and abs(cert["objective_change"]) <= 1e-9
    assert set(record["dp"]) >= {"objective_before_repair", "repair_lambda"}


def test_design_takes_epsilon_and_records_both(capsys):
    assert main(["design", "EM", "--n", "5", "--epsilon", "0.1"]) == 0
    record = json.loads(capsys.readouterr().out)
    p, q = map(int, record["alpha_exact"].split("/"))
    assert record["extra"]["epsilon_requested"] == "0.1"
    assert p / q == pytest.approx(np.exp(-0.1), rel=1e-15) and q <= 2**63
    assert record["extra"]["epsilon_guaranteed"] <= 0.1
    assert main(["design", "EM", "--n", "5", "--epsilon", "0.1", "--alpha", "0.5"]) == 2
    assert "not allowed with" in capsys.readouterr().err


def _tamper_weights(path):
    """A zero next to a positive weight (the column still sums to 2**62), with the file's digests re-recorded,
    so that the exact test is what must catch it."""
    record, _, W = read_file(path)
    W = W.copy()
    W[1, 0] += W[0, 0]
    W[0, 0] = 0
    assert not python_int_dp(W, record["alpha_exact"], 2**62)
    write_file(path, record, weights=W)


def test_check_and_release_refuse_tampered_weights(tmp_path, capsys):
    """One verdict: ``check`` prints the loader's line and exits 2; ``release`` (whose mechanism comes from the
    same loader) refuses with that line too."""
    from countdp.services.artifact import load_design

    path = tmp_path / "gm.json"
    assert main(["design", "GM", "--n", "4", "--alpha", "2/3", "--out", str(path)]) == 0
    assert main(["check", str(path)]) == 0
    assert "certified exactly on the integer release weights" in capsys.readouterr().out
    _tamper_weights(path)
    with pytest.raises(ValueError) as refused:
        load_design(path)
    line = str(refused.value)
    assert line.startswith(f"{path}: release weights are not alpha-DP")
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"countdp: error: {line}\n" and captured.out == ""
    assert main(["release", str(path), "1", "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert line in err and len(err.strip().splitlines()) == 1


def test_check_at_another_alpha_tests_the_weights_there(tmp_path, capsys):
    """A file certified at 2/3 is also 3/4-DP? No (GM's inequalities are tight): exit 1 with the reason;
    at 1/2 (less private) it is."""
    path = tmp_path / "gm.json"
    assert main(["design", "GM", "--n", "4", "--alpha", "2/3", "--out", str(path)]) == 0
    record, _, W = read_file(path)
    assert not python_int_dp(W, "3/4", 2**62) and python_int_dp(W, "1/2", 2**62)
    assert main(["check", str(path), "--alpha", "3/4"]) == 1
    assert "alpha = 3/4: NOT alpha-DP on the integer release weights" in capsys.readouterr().out
    assert main(["check", str(path), "--alpha", "1/2"]) == 0
    assert "alpha = 1/2: certified exactly" in capsys.readouterr().out


def test_progress_bar_appears_only_for_slow_work():
    import io

    from countdp.progress import Progress

    quick, slow = io.StringIO(), io.StringIO()
    bar = Progress(3, "sizes", stream=quick)
    for _ in range(3):
        bar.advance()
    bar.close()
    assert quick.getvalue() == ""
    bar = Progress(2, "sizes", stream=slow, delay=0.0)
    bar.advance()
    bar.advance()
    bar.close()
    assert "2/2 sizes" in slow.getvalue() and slow.getvalue().endswith("\n")


def test_check_a_dp_csv_passes_on_its_floats_and_says_it_has_no_release_weights(tmp_path, capsys):
    path = tmp_path / "um.csv"
    np.savetxt(path, np.full((4, 4), 0.25), delimiter=",")
    assert main(["check", str(path), "--alpha", "2/3"]) == 0
    out = capsys.readouterr().out
    assert "holds on the float matrix" in out and "no integer release weights" in out


@pytest.mark.parametrize("mechanism, n", [("WM", 100_000), ("GM", 100_000)])
def test_a_size_beyond_the_machine_is_one_line_before_allocating(mechanism, n, capsys):
    from countdp.validation import available_memory

    assert main(["design", mechanism, "--n", str(n), "--alpha", "0.9", "--representation", "matrix"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"n = {n} is beyond this machine" in err
    need = float(err.split("needs about ")[1].split(" GiB")[0].replace(",", ""))
    assert need * 2**30 > available_memory()
    assert "countdp release draws" in err  # GM from its structure, WM under L0 from its template structure


def test_stage_log_shows_the_stage_under_way_once_work_is_slow():
    """Nothing before the delay; at the delay, the latest stage with the time it started; after
    it, each stage as it starts; nothing once the block is left, and the logger's level restored."""
    import io
    import logging
    import time

    from countdp.progress import StageLog

    log, stream = logging.getLogger("countdp.test_stage"), io.StringIO()
    level = logging.getLogger("countdp").level
    with StageLog("countdp", stream=stream, delay=0.5):
        log.info("first")
        log.info("second")
        assert stream.getvalue() == ""
        time.sleep(0.8)
        log.info("third")
    log.info("after")
    lines = stream.getvalue().splitlines()
    assert [line.split("] ")[1] for line in lines] == ["second", "third"]
    started = [float(line.split("[")[1].split(" s]")[0]) for line in lines]
    assert started[0] < 0.5 <= 0.8 <= started[1]
    assert logging.getLogger("countdp").level == level
    quick = io.StringIO()
    with StageLog("countdp", stream=quick, delay=0.3):
        log.info("done at once")
    time.sleep(0.4)
    assert quick.getvalue() == ""


def test_design_reports_its_stages_on_stderr_only_when_slow(monkeypatch, tmp_path, capsys):
    """``countdp design`` names each stage of an LP design on stderr (here with the delay set to 0),
    prints nothing there for a quick closed form (default delay), and the library alone is silent."""
    import re

    from countdp import progress
    from countdp.design.designer import design_named

    assert main(["design", "GM", "--n", "4", "--alpha", "0.5"]) == 0
    assert capsys.readouterr().err == ""
    design_named("WH", 20, 0.91)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "STAGE_DELAY", 0.0)
    assert main(["design", "WH", "--n", "20", "--alpha", "0.91", "--out", str(tmp_path / "wh.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(re.fullmatch(r"countdp: \[ *\d+\.\d s\] \S.*", line) for line in err)
    assert any("the reduced LP" in line for line in err) and "certifying alpha-DP" in err[-1]


@pytest.mark.parametrize("argv, flag", [
    (["design", "GM", "--n", "3", "--n", "4", "--alpha", "1/2"], "--n"),
    (["design", "GM", "--n", "3", "--alpha", "1/2", "--alpha", "1/3"], "--alpha"),
    (["check", "x.json", "--tol", "1", "--tol", "2"], "--tol"),
    (["budget", "init", "x.json", "--epsilon", "1", "--epsilon", "2"], "--epsilon"),
    (["release", "--input", "t.csv", "--count-column", "c", "--count-column", "d"], "--count-column"),
])
def test_an_option_given_twice_is_refused_not_silently_overridden(argv, flag, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err == f"countdp: error: {flag} is given more than once\n"
