"""``countdp release --levels``: one count at several privacy levels (Gupte-Sundararajan), in a table.

Independent facts: each level's values follow GM(n, alpha_k), the closed form of
:func:`countdp.mechanisms.closed_forms.geometric` (a chi-square at a fixed seed); the column
spends alpha_1's epsilon once (the proven upper bound of ln(1/alpha_1)), whatever the number of
levels; the released table never holds the count.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from countdp.cli import main
from countdp.mechanisms.closed_forms import geometric
from countdp.values.alpha import epsilon_upper_bound, rational_text

LEVELS = ("1/2", "2/3", "9/10")


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("countdp: error:"), err
    return lines[0]


@pytest.fixture()
def groups(tmp_path):
    """4,000 groups: sizes 6 and 9, counts spread over 0..n."""
    rng = np.random.default_rng(3)
    sizes = rng.choice([6, 9], 4000)
    counts = rng.integers(0, sizes + 1)
    path = tmp_path / "groups.csv"
    path.write_text("id,n,c\n" + "".join(f"g{k},{n},{c}\n" for k, (n, c) in enumerate(zip(sizes, counts,
                                                                                            strict=True))))
    return path, sizes, counts


KEEP = ("--keep", "id,n")
"""The fixture table's published columns: its id and size (publication is default-deny)."""


def _release(table, out, *extra) -> int:
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n",
                 "--levels", ",".join(LEVELS), "--out", str(out), *extra])


def test_a_levels_release_has_one_noisy_column_per_level_and_no_count(tmp_path, groups):
    table, sizes, _ = groups
    out = tmp_path / "noisy.csv"
    assert _release(table, out, *KEEP) == 0  # unseeded: a seeded release claims no guarantee
    header, *rows = out.read_text().splitlines()
    assert header == "id,n,noisy_c_level1,noisy_c_level2,noisy_c_level3,mechanism"
    values = np.array([[int(v) for v in row.split(",")[2:5]] for row in rows])
    assert len(rows) == 4000 and (values >= 0).all() and (values <= sizes[:, None]).all()
    sidecar = json.loads((tmp_path / "noisy.csv.release.json").read_text())
    [column] = sidecar["guarantee"]["columns"]
    assert column["alpha_exact"] == "1/2"  # all levels together reveal no more than the least private one
    assert column["epsilon_spent"] == rational_text(epsilon_upper_bound(Fraction(1, 2)))
    assert [level["alpha_exact"] for level in column["levels"]["levels"]] == list(LEVELS)
    assert sidecar["guarantee"]["alpha_total"] == "1/2"
    assert {entry["n"] for entry in sidecar["mechanisms"]} == {6, 9}
    for entry in sidecar["mechanisms"]:
        assert entry["levels_certificate"]["holds"] is True
        assert entry["representation"].startswith("matrix chain")


def test_each_level_follows_gm_at_its_own_alpha(tmp_path):
    """12,000 rows with n = 6 and the count 2: level k's values are GM(6, alpha_k)'s column 2."""
    n, count, rows = 6, 2, 12000
    table = tmp_path / "same.csv"
    table.write_text("n,c\n" + f"{n},{count}\n" * rows)
    out = tmp_path / "noisy.csv"
    assert _release(table, out, "--seed", "5") == 0
    values = np.array([[int(v) for v in line.split(",")[1:4]] for line in out.read_text().splitlines()[1:]])
    for level, alpha in enumerate(LEVELS):
        expected = geometric(n, float(Fraction(alpha)))[:, count] * rows
        observed = np.bincount(values[:, level], minlength=n + 1)
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        assert chi2 < 30.0, (alpha, observed, expected.round(1))  # 6 degrees of freedom: p < 1e-4 above 30
    # the levels are not independent draws: level 2 is level 1 moved by the transition, so they agree
    # far more often than two independent GM draws would
    same = float(np.mean(values[:, 0] == values[:, 1]))
    independent = float(geometric(n, 0.5)[:, count] @ geometric(n, 2 / 3)[:, count])
    assert same > independent + 0.1


def test_levels_in_parquet(tmp_path, groups):
    table, _, counts = groups
    parquet = tmp_path / "groups.parquet"
    import pyarrow.csv as pacsv

    pq.write_table(pacsv.read_csv(table), parquet)
    out = tmp_path / "noisy.parquet"
    assert _release(parquet, out, *KEEP) == 0
    written = pq.read_table(out)
    assert written.column_names == ["id", "n", "noisy_c_level1", "noisy_c_level2", "noisy_c_level3", "mechanism"]
    assert written.schema.field("noisy_c_level3").type == pa.int64() and written.num_rows == len(counts)


def test_levels_spend_the_least_private_levels_epsilon_once(tmp_path, groups):
    table, _, _ = groups
    ledger = tmp_path / "budget.json"
    assert main(["budget", "init", str(ledger), "--epsilon", "1"]) == 0
    assert _release(table, tmp_path / "o.csv", *KEEP, "--budget", str(ledger)) == 0
    state = json.loads(ledger.read_text())
    [entry] = state["entries"]
    assert Fraction(entry["epsilon"]) == epsilon_upper_bound(Fraction(1, 2))
    assert entry["what"]["levels"] == list(LEVELS)
    assert entry["account"] == "bit"  # levels are bit-level releases


def test_dry_run_names_the_levels(tmp_path, groups, capsys):
    table, _, _ = groups
    assert _release(table, tmp_path / "o.csv", *KEEP, "--dry-run") == 0
    assert "levels at alpha 1/2, 2/3, 9/10" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.csv"]


@pytest.mark.parametrize("levels, extra, message", [
    ("2/3,1/2", [], "increase strictly"),
    ("1/2,1/2", [], "increase strictly"),
    ("1/2", [], "at least two alphas"),
    ("1/2,,2/3", [], "empty name"),
    ("1/2,3/2", [], "--levels"),
    ("1/2,2/3", ["--alpha", "1/2"], "exactly one of"),
    ("1/2,2/3", ["--mechanism", "UM"], "cannot be released at several levels"),
])
def test_bad_levels_are_one_line_and_nothing_is_written(tmp_path, groups, capsys, levels, extra, message):
    table, _, _ = groups
    out = tmp_path / "o.csv"
    assert main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--levels", levels,
                 "--out", str(out), *KEEP, *extra]) == 2
    assert message in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["groups.csv"]


def test_levels_need_a_size_column(tmp_path, groups, capsys):
    table, _, _ = groups
    design = tmp_path / "gm.json"
    assert main(["design", "GM", "--n", "9", "--alpha", "1/2", "--out", str(design)]) == 0
    capsys.readouterr()
    assert main(["release", str(design), "--input", str(table), "--count-column", "c", "--levels", "1/2,2/3",
                 "--out", str(tmp_path / "o.csv")]) == 2
    assert "--levels" in _one_line_error(capsys)
    assert not (tmp_path / "o.csv").exists()


def test_the_command_line_offers_the_mechanisms_the_library_chains(tmp_path, groups, capsys):
    """The CLI's refusal names exactly the mechanisms the library chains, and each of them is accepted."""
    from countdp.multilevel import CHAIN_MECHANISMS

    table, _, _ = groups
    command = ["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--levels", "1/2,2/3",
               "--out", str(tmp_path / "o.csv"), *KEEP, "--mechanism"]
    assert main([*command, "UM"]) == 2
    assert f"--levels chains {', '.join(CHAIN_MECHANISMS)};" in _one_line_error(capsys)
    for name in CHAIN_MECHANISMS:
        main([*command, name, "--dry-run"])
        assert "--levels chains" not in capsys.readouterr().err


def test_em_levels_where_derivable_and_a_one_line_refusal_where_not(tmp_path, capsys):
    """EM(n, beta) is a post-processing of EM(n, alpha) for small n; at n = 8, 51/100 is not one of 1/2."""
    table = tmp_path / "t.csv"
    table.write_text("n,c\n" + "".join(f"{n},{c}\n" for n in (3, 5) for c in range(n + 1)))
    out = tmp_path / "o.csv"
    assert main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "EM",
                 "--levels", "1/2,2/3", "--out", str(out)]) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    assert {e["mechanism"] for e in sidecar["mechanisms"]} == {"EM"}
    assert all(e["levels_certificate"]["holds"] for e in sidecar["mechanisms"])
    table.write_text("n,c\n8,3\n")
    capsys.readouterr()
    assert main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "EM",
                 "--levels", "1/2,51/100", "--out", str(tmp_path / "p.csv")]) == 2
    line = _one_line_error(capsys)
    assert "n = 8" in line and "1/2" in line and "51/100" in line
    assert not (tmp_path / "p.csv").exists()


def test_a_group_of_a_million_is_released_at_every_level_by_the_structural_chain(tmp_path):
    """A GM group of 10^6 (beyond the matrix chain) beside a small one: each level's noise has GM's variance."""
    rows = 3000
    counts = np.random.default_rng(8).integers(0, 10**6 + 1, rows)
    table = tmp_path / "big.csv"
    table.write_text("id,n,c\n" + "".join(f"g{k},1000000,{c}\n" for k, c in enumerate(counts)) + "s,6,2\n")
    out = tmp_path / "noisy.csv"
    assert _release(table, out, *KEEP) == 0
    values = np.array([[int(v) for v in line.split(",")[2:5]] for line in out.read_text().splitlines()[1:]])
    for level, alpha in enumerate(LEVELS):
        a = float(Fraction(alpha))
        noise = values[:rows, level] - counts
        assert abs(np.mean(noise**2.0) / (2 * a / (1 - a) ** 2) - 1) < 0.2, (alpha, np.mean(noise**2.0))
    sidecar = json.loads((tmp_path / "noisy.csv.release.json").read_text())
    entries = {entry["n"]: entry for entry in sidecar["mechanisms"]}
    assert entries[10**6]["representation"].startswith("structural chain") and entries[10**6]["K"] == 124
    assert entries[6]["representation"].startswith("matrix chain")
    assert all(entry["levels_certificate"]["holds"] for entry in entries.values())
    assert sidecar["guarantee"]["columns"][0]["alpha_exact"] == "1/2"
