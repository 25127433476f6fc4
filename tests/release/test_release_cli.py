"""countdp release on the command line: what a released table holds, its sidecar, and one-line refusals.

Expected noisy values are computed here independently of the release code, from the documented
seeding (count column k draws from ``SeedSequence(seed).spawn(columns)[k]``, one 64-bit word per
row in row order; the draw is the word's top K bits; the output is the smallest i whose
cumulative weight exceeds the draw) and the mechanism's integer weights.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from countdp.cli import main
from countdp.design.designer import design_named
from countdp.design.forms import structural_form
from tests.helpers.structural_draw import documented_outputs


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _expected(weights_for_row, counts, seed: int, column: int, columns: int) -> list[int]:
    """The seeded release of ``counts`` by brute force: inverse CDF of each row's integer weights."""
    stream = np.random.SeedSequence(seed).spawn(columns)[column]
    words = np.random.Generator(np.random.PCG64(stream)).bit_generator.random_raw(len(counts))
    out = []
    for row, (count, word) in enumerate(zip(counts, words, strict=True)):
        released = weights_for_row(row)
        draw = int(word) >> (64 - released.K)
        cumulative = np.cumsum(released.weights[:, int(count)].astype(object))
        out.append(next(i for i, c in enumerate(cumulative) if draw < c))
    return out


def _words(seed: int, column: int, columns: int, rows: int) -> np.ndarray:
    stream = np.random.SeedSequence(seed).spawn(columns)[column]
    return np.random.Generator(np.random.PCG64(stream)).bit_generator.random_raw(rows)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("countdp: error:"), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------- counts on the command line
def test_release_uses_os_entropy_unless_seeded(tmp_path, capsys):
    path = tmp_path / "gm.json"
    main(["design", "GM", "--n", "4", "--alpha", "0.5", "--out", str(path)])
    assert main(["release", str(path), "0", "4", "2"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) == 3 and "OS's secure random source" in captured.err
    main(["release", str(path), "1", "1", "--seed", "5"])
    first = capsys.readouterr()
    main(["release", str(path), "1", "1", "--seed", "5"])
    assert capsys.readouterr().out == first.out and "experiment only, not a privacy release" in first.err


def test_counts_form_states_its_guarantee_beside_the_counts(tmp_path, capsys):
    """The counts form writes no sidecar, so the guarantee is said on stderr beside the counts: the
    alpha and size the mechanism was designed for, its file, and that no budget was debited; a
    seeded release claims none."""
    path = tmp_path / "em.json"
    main(["design", "EM", "--n", "6", "--alpha", "2/3", "--out", str(path)])
    capsys.readouterr()
    assert main(["release", str(path), "0", "6", "3"]) == 0
    err = capsys.readouterr().err
    note = [line for line in err.splitlines() if line.startswith("# guarantee:")]
    assert len(note) == 1, err
    assert "alpha = 2/3 exactly" in note[0] and f"epsilon = {math.log(3 / 2):.6g}" in note[0]
    assert "group of n = 6" in note[0] and "by EM from " + str(path) in note[0]
    assert "no privacy budget is debited" in note[0]
    assert main(["release", str(path), "1", "--seed", "3"]) == 0
    assert "# guarantee:" not in capsys.readouterr().err


def test_release_refuses_uncertified(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"matrix": [[0.9, 0.1], [0.1, 0.9]], "alpha": 0.5}))
    assert main(["release", str(path), "0"]) == 2
    assert str(path) in _one_line_error(capsys)


# ---------------------------------------------------------------- one mechanism for every row
@pytest.fixture()
def em10(tmp_path):
    path = tmp_path / "em.json"
    assert main(["design", "EM", "--n", "10", "--alpha", "9/10", "--out", str(path)]) == 0
    return path


def test_release_a_table_publishes_kept_columns_noisy_counts_and_the_mechanism_never_the_count(tmp_path, em10):
    import pandas as pd

    from countdp.services.artifact import load_design

    counts = np.random.default_rng(4).integers(0, 11, 500)
    table = tmp_path / "groups.csv"
    lines = ["group,region,c,note"] + [f"g{k},r{k % 7},{c},\"a, b\"" for k, c in enumerate(counts)]
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "noisy.csv"
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--keep", "group,region,note",
                 "--out", str(out), "--seed", "9"]) == 0
    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    original = pd.read_csv(table, dtype=str, keep_default_na=False)
    assert list(written.columns) == ["group", "region", "note", "noisy_c", "mechanism"]
    assert written[["group", "region", "note"]].equals(original[["group", "region", "note"]])
    assert (written["mechanism"] == "EM n=10").all()
    released = load_design(em10).released
    expected = _expected(lambda row: released, counts, seed=9, column=0, columns=1)
    assert written["noisy_c"].astype(int).tolist() == expected
    text = (tmp_path / "noisy.csv.release.json").read_text()
    sidecar = json.loads(text)
    assert sidecar["format"] == "countdp-release/2" and sidecar["output"]["sha256"] == _sha256(out)
    # the input's digest would let a reader who knows every row but one test each candidate count: it is
    # published nowhere (the input names only its path and its number of rows)
    assert sidecar["input"] == {"path": str(table), "rows": 500} and _sha256(table) not in text
    assert sidecar["output"]["kept_columns"] == ["group", "region", "note"]
    assert sidecar["randomness"]["privacy_release"] is False
    assert "experiment only" in sidecar["randomness"]["note"]
    assert sidecar["guarantee"]["claimed"].startswith("none")  # the seed regenerates the noise
    assert "threat-model" in sidecar["threat_model"]
    assert sidecar["mechanisms_from"] == str(em10)
    [entry] = sidecar["mechanisms"]
    assert entry["release_weights_sha256"] == hashlib.sha256(released.weights.astype("<i8").tobytes()).hexdigest()
    assert entry["release_weights_sha256"] == json.loads(em10.read_text())["arrays"]["weights_sha256"]
    # a privacy release (the OS's secure source) states its guarantee
    private = tmp_path / "private.csv"
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--keep", "group,region,note",
                 "--out", str(private)]) == 0
    record = json.loads((tmp_path / "private.csv.release.json").read_text())
    assert record["randomness"]["privacy_release"] is True
    assert "one person's bit" in record["guarantee"]["unit_of_privacy"]
    assert record["guarantee"]["alpha_total"] == "9/10"
    assert pd.read_csv(private, dtype=str, keep_default_na=False)[["group", "region", "note"]].equals(
        original[["group", "region", "note"]])


def test_keep_chooses_the_published_columns_and_never_a_count(tmp_path, em10, capsys):
    table, out = tmp_path / "t.csv", tmp_path / "o.csv"
    table.write_text("a,b,c,d\nx,1,3,7\ny,2,4,8\n")
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c,d", "--keep", "a",
                 "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0] == "a,noisy_c,noisy_d,mechanism_c,mechanism_d"
    out.unlink()
    (tmp_path / "o.csv.release.json").unlink()
    capsys.readouterr()
    for keep, word in (("c", "never released"), ("zz", "no column 'zz'"), ("a,a", "twice")):
        assert main(["release", str(em10), "--input", str(table), "--count-column", "c,d", "--keep", keep,
                     "--out", str(out)]) == 2
        assert word in _one_line_error(capsys)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["em.json", "em.npz", "t.csv"] or \
            sorted(p.name for p in tmp_path.iterdir()) == ["em.json", "t.csv"]


def test_a_kept_copy_of_a_count_column_is_refused(tmp_path, em10, capsys):
    table, out = tmp_path / "t.csv", tmp_path / "o.csv"
    table.write_text("id,c,c_copy\n1,3,3\n2,5, 5\n3,0,0\n")
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--keep", "id,c_copy",
                 "--out", str(out)]) == 2
    assert "'c_copy' equals the count column 'c'" in _one_line_error(capsys)
    assert not out.exists()


def test_the_pair_judge_names_a_published_input_digest(tmp_path, em10):
    """The shared judge (tests/helpers/release_checks.py) accepts a real release and names an input
    digest planted anywhere in what is published: the sidecar's input, another field, the table."""
    from tests.helpers.release_checks import pair_problems

    table, out = tmp_path / "t.csv", tmp_path / "o.csv"
    table.write_text("id,c\na,3\nb,5\nc,0\n")
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--keep", "id",
                 "--out", str(out)]) == 0
    assert pair_problems(out, table) == []
    sidecar, digest = tmp_path / "o.csv.release.json", _sha256(table)
    text, table_bytes = sidecar.read_text(), out.read_bytes()
    record = json.loads(text)
    record["input"]["sha256"] = digest
    sidecar.write_text(json.dumps(record))
    problems = pair_problems(out, table)
    assert len(problems) == 2 and "input.sha256 is published" in problems[0], problems
    assert "holds the SHA-256 of the input" in problems[1], problems
    record = json.loads(text)
    record["note"] = f"made from {digest}"
    sidecar.write_text(json.dumps(record))
    assert ["holds the SHA-256 of the input" in p for p in pair_problems(out, table)] == [True]
    sidecar.write_text(text)
    out.write_bytes(table_bytes + f"d,{digest},EM n=10\n".encode())
    assert any(f"{out}: holds the SHA-256 of the input" in p for p in pair_problems(out, table))


@pytest.mark.parametrize("body, message", [
    ("c\n1\n11\n", "row 2, column 'c': count 11 is outside 0..10"),
    ("c\n1\n-1\n", "row 2, column 'c': count -1 is outside 0..10"),
    ("c\n1\n2.5\n", "row 2, column 'c': '2.5' is not an integer count"),
    ("c\n1\n0x3\n", "row 2, column 'c': '0x3' is not an integer count"),
    ("c,d\n1,\nx,2\n", "row 2, column 'c': 'x' is not an integer count"),
    ("d\n1\n", "no column 'c'"),
    ("c\n", "no rows"),
    ("c,d,c\n1,2,3\n", "'c' appears more than once"),
    ("c,d\n1,2\n3\n", "not a readable CSV table"),
])
def test_release_a_bad_table_is_one_line_and_writes_nothing(tmp_path, em10, capsys, body, message):
    table, out = tmp_path / "t.csv", tmp_path / "noisy.csv"
    table.write_text(body)
    capsys.readouterr()
    keep = ["--keep", "d"] if body.startswith("c,d\n") else []  # d is published, so the table reaches its check
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", *keep, "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert message in line and str(table) in line
    assert not out.exists() and not (tmp_path / "noisy.csv.release.json").exists()


def test_blank_lines_are_skipped_not_counted(tmp_path, em10):
    table, out = tmp_path / "t.csv", tmp_path / "noisy.csv"
    table.write_text("c\n1\n\n2\n")
    assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 3


# ---------------------------------------------------------------- paths and repeated options
def test_out_naming_the_input_is_refused_even_through_a_link(tmp_path, em10, capsys):
    table = tmp_path / "t.csv"
    table.write_text("c\n1\n")
    link = tmp_path / "link.csv"
    link.symlink_to(table)
    for out in (table, link):
        assert main(["release", str(em10), "--input", str(table), "--count-column", "c", "--out", str(out)]) == 2
        assert "is the input table" in _one_line_error(capsys)
    assert table.read_text() == "c\n1\n"


def test_an_existing_release_is_replaced_only_with_overwrite(tmp_path, em10, capsys):
    table, out = tmp_path / "t.csv", tmp_path / "o.csv"
    table.write_text("c\n1\n")
    argv = ["release", str(em10), "--input", str(table), "--count-column", "c", "--out", str(out)]
    assert main(argv) == 0
    first = out.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2 and "already exists" in _one_line_error(capsys)
    assert out.read_bytes() == first
    assert main([*argv, "--overwrite"]) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    assert sidecar["output"]["sha256"] == _sha256(out)


@pytest.mark.parametrize("argv, word", [
    (["--count-column", "c", "--count-column", "c"], "--count-column is given more than once"),
    (["--count-column", "c", "--out", "a.csv", "--out", "b.csv"], "--out is given more than once"),
    (["--count-column", "c", "--out", "o.parquet"], "a CSV table is released as CSV"),
    (["--count-column", "c,", "--out", "o.csv"], "empty name"),
    (["--count-column", "c", "--out", "o.csv", "--alpha", "1/2"], "go with --size-column"),
    (["--count-column", "c", "--out", "nowhere/o.csv"], "no folder"),
])
def test_bad_release_options_are_one_line(tmp_path, em10, capsys, argv, word, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("c\n1\n")
    assert main(["release", str(em10), "--input", "t.csv", *argv]) == 2
    assert word in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".npz") == ["em.json", "t.csv"]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_released_files_follow_the_umask(tmp_path, em10, umask, mode):
    table = tmp_path / "t.csv"
    table.write_text("c\n1\n2\n")
    code = (f"import os, sys; os.umask({umask}); from countdp.cli import main; "
            f"sys.exit(main(['release', r'{em10}', '--input', r'{table}', '--count-column', 'c', "
            f"'--out', r'{tmp_path / 'o.csv'}']))")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    for name in ("o.csv", "o.csv.release.json"):
        assert os.stat(tmp_path / name).st_mode & 0o777 == mode


# ---------------------------------------------------------------- a mechanism per group size, several columns
def _groups(rows: int = 2_000, seed: int = 1):
    import pandas as pd

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 13, rows)
    return pd.DataFrame({"block": [f"b{k}" for k in range(rows)], "n": sizes, "young": rng.integers(0, sizes + 1),
                         "male": rng.integers(0, sizes + 1), "weight": rng.random(rows).round(3)})


def _release_sizes(tmp_path, table, out, *extra):
    return main(["release", "--input", str(table), "--size-column", "n", "--mechanism", "EM",
                 "--out", str(out), "--cache", str(tmp_path / "cache"), *extra])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_several_columns_each_with_its_own_alpha_compose_exactly(tmp_path, capsys, suffix):
    import pandas as pd

    frame = _groups()
    table, out = tmp_path / f"groups{suffix}", tmp_path / f"noisy{suffix}"
    frame.to_parquet(table, index=False) if suffix == ".parquet" else frame.to_csv(table, index=False)
    assert _release_sizes(tmp_path, table, out, "--count-column", "young,male", "--alpha", "9/10,1/2",
                          "--keep", "block,n,weight", "--seed", "3") == 0
    written = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    assert list(written.columns) == ["block", "n", "weight", "noisy_young", "noisy_male", "mechanism_young",
                                     "mechanism_male"]
    assert written[["block", "n", "weight"]].equals(frame[["block", "n", "weight"]])
    if suffix == ".parquet":
        kept = pq.read_schema(out)
        assert kept.field("n").type == pa.int64() and kept.field("weight").type == pa.float64()
    tables = 0
    for k, (column, alpha) in enumerate((("young", "9/10"), ("male", "1/2"))):
        forms = {n: structural_form("EM", int(n), alpha) for n in frame["n"].unique()}
        tables += len({form.sizes for form in forms.values()})
        words = _words(seed=3, column=k, columns=2, rows=len(frame))
        expected = [int(documented_outputs(forms[n], [n], [c], [w])[0])
                    for n, c, w in zip(frame["n"], frame[column], words, strict=True)]
        assert written[f"noisy_{column}"].tolist() == expected
        # the same distribution as the matrix a mechanism file holds
        for n in frame["n"].unique()[:3]:
            matrix = design_named("EM", int(n), alpha).released.weights
            assert np.array_equal(forms[n].for_size(n).dense_weights(), matrix)
        assert (written[f"mechanism_{column}"].astype(str) == "EM n=" + frame["n"].astype(str)).all()
    sidecar = json.loads((tmp_path / f"noisy{suffix}.release.json").read_text())
    assert sidecar["guarantee"]["claimed"].startswith("none")  # seeded: no guarantee claimed
    # the same release from the OS's secure source states the composed guarantee
    private = tmp_path / f"private{suffix}"
    assert _release_sizes(tmp_path, table, private, "--count-column", "young,male", "--alpha", "9/10,1/2",
                          "--keep", "block,n,weight") == 0
    guarantee = json.loads((tmp_path / f"private{suffix}.release.json").read_text())["guarantee"]
    assert guarantee["alpha_total"] == "9/20"
    spent = [Fraction(c["epsilon_spent"]) for c in guarantee["columns"]]
    assert Fraction(guarantee["epsilon_total"]) == sum(spent)
    assert all(float(s) >= -np.log(float(Fraction(a))) for s, a in zip(spent, ("9/10", "1/2"), strict=True))
    assert len(sidecar["mechanisms"]) == tables  # one entry per structural table (a range of sizes)
    assert all(m["representation"] == "structural" and m["structural_certificate"]["holds"]
               for m in sidecar["mechanisms"])
    assert sum(m["rows"] for m in sidecar["mechanisms"]) == 2 * len(frame)


def test_a_total_epsilon_is_split_evenly_and_adds_back_exactly(tmp_path):
    frame = _groups(rows=50)
    table, out = tmp_path / "g.csv", tmp_path / "o.csv"
    frame.to_csv(table, index=False)
    assert _release_sizes(tmp_path, table, out, "--count-column", "young,male", "--total-epsilon", "1",
                          "--keep", "block,n,weight") == 0
    guarantee = json.loads((tmp_path / "o.csv.release.json").read_text())["guarantee"]
    assert [c["epsilon_requested"] for c in guarantee["columns"]] == ["0.5", "0.5"]
    assert guarantee["epsilon_total"] == "1"
    assert Fraction(guarantee["alpha_total"]) >= Fraction(np.exp(-1.0)) * (1 - Fraction(1, 10**12))


@pytest.mark.parametrize("body, message", [
    ("n,young\n4,2\n3,5\n", "row 2, column 'young': count 5 is outside 0..3 (the group size in 'n')"),
    ("n,young\n4,2\n0,0\n", "row 2, column 'n': group size 0 is not >= 1"),
    ("n,young\n4,2\n4611686018427387904,0\n",  # n + 1 = 2^62 + 1: noise added to a count could pass int64
     "row 2, column 'n': group size 4611686018427387904 is above the largest a mechanism serves (n + 1 <= 2^62)"),
    ("n,young\n4,2\nx,1\n", "row 2, column 'n': 'x' is not an integer group size"),
    ("n,young\n4,2\n3,1.5\n", "row 2, column 'young': '1.5' is not an integer count"),
    ("n,d\n4,2\n", "no column 'young'"),
    ("m,young\n4,2\n", "no column 'n'"),
    ("n,young\n", "no rows"),
])
def test_release_mixed_sizes_bad_table_is_one_line_and_writes_nothing(tmp_path, capsys, body, message):
    table, out = tmp_path / "t.csv", tmp_path / "noisy.csv"
    table.write_text(body)
    assert _release_sizes(tmp_path, table, out, "--count-column", "young", "--alpha", "9/10") == 2
    assert message in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # not even the cache: checked before designing


@pytest.mark.parametrize("argv, word", [
    (["--count-column", "c", "--size-column", "n", "--out", "o.csv", "--alpha", "1/2"], "--mechanism"),
    (["--count-column", "c", "--size-column", "n", "--mechanism", "EM", "--alpha", "1/2"], "--out"),
    (["--count-column", "c", "--size-column", "n", "--mechanism", "EM", "--out", "o.csv"], "exactly one of"),
    (["--count-column", "c,d", "--size-column", "n", "--mechanism", "EM", "--out", "o.csv", "--alpha", "1/2,1/3,1/4"],
     "3 values for 2 count columns"),
    (["--count-column", "c", "--size-column", "n", "--mechanism", "EM", "--out", "o.csv", "--epsilon", "-1"],
     "epsilon must be > 0"),
    (["--count-column", "c", "--size-column", "n", "--mechanism", "EM", "--out", "o.csv", "--alpha", "1e-300",
      "--keep", "n,d"], "alpha"),
])
def test_release_mode_errors(tmp_path, argv, word, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text("n,c,d\n3,1,2\n")
    assert main(["release", "--input", "t.csv", *argv]) == 2
    assert word in _one_line_error(capsys)
