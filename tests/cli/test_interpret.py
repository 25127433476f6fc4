"""``countdp interpret``: the optimal remap of a design file's release weights, its one-line refusals
(exit 2, nothing printed or written), and the command's independence from the LP stack at import."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from countdp.cli import interpret_command, main
from countdp.cli.arguments import Parser, UsageError
from countdp.consumers.losses import loss_matrix
from countdp.consumers.remap import optimal_private_mechanism
from countdp.services.loader import load_certified


def _parser() -> Parser:
    parser = Parser(prog="countdp")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    interpret_command.register(sub)
    return parser


def _run(argv: list[str]) -> int:
    """As :func:`countdp.cli.main` runs a command: a UsageError is one line on stderr and exit 2."""
    try:
        args = _parser().parse_args(argv)
        return args.handler(args)
    except UsageError as exc:
        print(f"countdp: error: {exc}", file=sys.stderr)
        return 2


@pytest.fixture(scope="module")
def designs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("designs")
    paths = {}
    for mechanism, n in (("GM", 4), ("EM", 5)):
        paths[mechanism] = folder / f"{mechanism}.json"
        assert main(["design", mechanism, "--n", str(n), "--alpha", "1/2", "--out", str(paths[mechanism])]) == 0
    return paths


def _json(argv, capsys) -> dict:
    assert _run([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_gm_plus_remap_reaches_the_private_optimum_for_l1(designs, capsys):
    """G-S Theorem 1: for the monotone L1 loss, remapping GM is as good as the best 1/2-DP mechanism."""
    result = _json(["interpret", str(designs["GM"]), "--loss", "L1"], capsys)
    assert result["side_info"] == "0..4" and result["privacy_budget_used"] == 0
    optimum = optimal_private_mechanism(4, 0.5, loss_matrix("L1", 4)).value
    assert result["worst_case_loss"] == pytest.approx(optimum, abs=1e-9)
    assert result["certificate"]["exact"] and result["certificate"]["gap"] <= 1e-9


def test_reported_losses_are_those_of_the_remap_applied_to_the_release(designs, capsys):
    result = _json(["interpret", str(designs["EM"]), "--loss", "L0d:1", "--side-info", "1..3"], capsys)
    released = load_certified(designs["EM"])["released"]
    M = released.weights / float(released.denominator)
    R = np.zeros((6, 6))
    for r, dist in result["remap"].items():
        for answer, p in dist.items():
            R[int(answer), int(r)] = p
    assert np.allclose(R.sum(axis=0), 1.0, atol=1e-12)
    L = loss_matrix("L0d:1", 5)
    per_input = [sum(L[i, a] * (R @ M)[a, i] for a in range(6)) for i in range(6)]
    assert np.allclose(result["per_input_loss"], per_input, atol=1e-12)
    assert result["worst_case_loss"] == pytest.approx(max(per_input[1:4]), abs=1e-12)
    assert set(result["attained_by"]) <= {1, 2, 3}
    optimum = optimal_private_mechanism(5, 0.5, L, [1, 2, 3]).value
    assert result["worst_case_loss"] >= optimum - 1e-9  # EM + remap is 1/2-DP: it cannot beat the optimum


def test_text_output(designs, capsys):
    assert _run(["interpret", str(designs["GM"]), "--loss", "l1", "--side-info", "2"]) == 0
    out = capsys.readouterr().out
    assert "no privacy budget" in out and "side information 2" in out
    assert "worst-case expected loss" in out and "attained at true count(s) 2" in out
    remap_lines = [line for line in out.splitlines() if line.startswith("  ") and "->" in line]
    # the truth is known to be 2, and GM gives every release a positive chance: answer 2 always, lose 0
    assert remap_lines == [f"  {r} -> 2 (1)" for r in range(5)]
    assert "worst-case expected loss 0," in out


def test_help_says_no_budget_is_needed(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["interpret", "-h"])
    assert "privacy budget" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("extra, word", [(["--loss", "L3"], "unknown loss 'L3'"), (["--loss", "L0d:x"], "L0d:x"),
                                         (["--loss", "L1", "--side-info", "5..2"], "reversed"),
                                         (["--loss", "L1", "--side-info", "7"], "leaves the inputs 0..4"),
                                         (["--loss", "L1", "--side-info", ""], "empty"),
                                         (["--loss", "L1", "--side-info", "1,,2"], "empty item")])
def test_bad_arguments_exit_2_with_one_line_and_nothing_written(designs, extra, word, capsys):
    before = sorted(designs["GM"].parent.iterdir())
    assert _run(["interpret", str(designs["GM"]), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and word in captured.err and captured.err.count("\n") == 1
    assert sorted(designs["GM"].parent.iterdir()) == before


def test_bad_files_exit_2_naming_the_path(tmp_path, designs, capsys):
    missing = tmp_path / "none.json"
    assert _run(["interpret", str(missing), "--loss", "L1"]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and err.count("\n") == 1
    tampered = tmp_path / "tampered.json"
    record = json.loads(designs["GM"].read_text())
    record["n"] = 7
    tampered.write_text(json.dumps(record))
    (tmp_path / record["arrays"]["file"]).write_bytes((designs["GM"].parent / record["arrays"]["file"]).read_bytes())
    assert _run(["interpret", str(tampered), "--loss", "L1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and str(tampered) in captured.err and captured.err.count("\n") == 1
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    assert _run(["interpret", str(garbage), "--loss", "L1"]) == 2
    assert str(garbage) in capsys.readouterr().err


def test_beyond_the_dense_lp_the_structured_path_answers(tmp_path, capsys):
    """n = 300: the structured path, its certificate in bounded floats; GM deep inside 0..n is worth its
    noise's expected L1 loss, 2a / (1 - a^2) = 4/3 at a = 1/2 (a closed form, not the code's output)."""
    path = tmp_path / "gm300.json"
    assert main(["design", "GM", "--n", "300", "--alpha", "1/2", "--out", str(path)]) == 0
    capsys.readouterr()
    result = _json(["interpret", str(path), "--loss", "L1"], capsys)
    certificate = result["certificate"]
    assert not certificate["exact"] and "floating point" in certificate["method"] and certificate["gap"] <= 1e-9
    assert float(certificate["dual"]) <= 4 / 3 * (1 + 1e-12) and 4 / 3 <= float(certificate["primal"]) * (1 + 1e-12)
    assert len(result["per_input_loss"]) == 301 and len(result["remap"]) == 301
    assert all(abs(sum(dist.values()) - 1.0) < 1e-12 for dist in result["remap"].values())
    assert _run(["interpret", str(path), "--loss", "L1", "--side-info", "10..20"]) == 0
    out = capsys.readouterr().out
    assert "side information 10..20" in out and "in floating point, its rounding bounded" in out


@pytest.mark.parametrize("n", [10001, (1 << 62) - 1])
def test_too_large_a_mechanism_is_refused(n, tmp_path, capsys):
    """Refused before anything of size n is built: at n + 1 = 2^62 the side information's counts
    alone would need 32 EiB."""
    path = tmp_path / "big.json"
    assert main(["design", "GM", "--n", str(n), "--alpha", "1/2", "--out", str(path)]) == 0
    capsys.readouterr()
    before = sorted(tmp_path.iterdir())
    assert _run(["interpret", str(path), "--loss", "L1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "too large" in captured.err and "at most 10,000" in captured.err
    assert "MiB" in captured.err and captured.err.count("\n") == 1
    assert sorted(tmp_path.iterdir()) == before


def test_an_uncertified_remap_is_refused(tmp_path, capsys):
    """GM at alpha = 9/10 under L1 at n = 2000: the least favourable prior spreads over the whole range
    (its decay ``2a/(1+a^2) = 0.9945`` leaves ``rho^1000 ~ 4e-3``), more than a window LP may hold: exit 2,
    one error line (after the stages shown on stderr), nothing printed or written."""
    path = tmp_path / "gm2000.json"
    assert main(["design", "GM", "--n", "2000", "--alpha", "9/10", "--out", str(path)]) == 0
    capsys.readouterr()
    before = sorted(tmp_path.iterdir())
    assert _run(["interpret", str(path), "--loss", "L1"]) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if not line.startswith("countdp: [")]
    assert captured.out == "" and len(errors) == 1 and errors[0].startswith("countdp: error: the remap could not")
    assert "window LP" in errors[0] and sorted(tmp_path.iterdir()) == before


def test_importing_the_command_loads_no_lp_stack():
    code = ("import sys, countdp.cli.interpret_command\n"
            "print(sorted(m for m in ('scipy', 'cvxpy', 'highspy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
