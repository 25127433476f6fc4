"""``countdp release --invariant total``: noisy counts conditioned on the published total (Gong-Meng).

Independent facts: the released counts sum to the true total exactly (per partition with
``--invariant-by``); the guarantee recorded in the sidecar is compared with the worst ratio over
invariant neighbours computed here by brute-force enumeration of every table with the same
group sizes and total, on the integer weights the release samples.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from countdp.cli import main
from countdp.design.designer import design_named


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith("countdp: error:"), err
    return lines[0]


def _rows(path):
    header, *rows = path.read_text().splitlines()
    return header.split(","), [row.split(",") for row in rows]


def _worst_ratio(weights: list[np.ndarray], counts: list[int]) -> Fraction:
    """max P(y | x) / P(y | x') over tables x, x' with these sizes and total that differ by one person moving
    between groups, and outputs y with the same total: plain enumeration in Python integers."""
    sizes = [w.shape[0] - 1 for w in weights]
    total = sum(counts)
    tables = [x for x in itertools.product(*(range(n + 1) for n in sizes)) if sum(x) == total]
    def weight(y, x):
        return math.prod(int(w[y[g], x[g]]) for g, w in enumerate(weights))
    normaliser = {x: sum(weight(y, x) for y in tables) for x in tables}
    worst = Fraction(1)
    for x in tables:
        for a, b in itertools.permutations(range(len(sizes)), 2):
            if x[a] == 0 or x[b] == sizes[b]:
                continue
            other = tuple(v - (g == a) + (g == b) for g, v in enumerate(x))
            for y in tables:
                p, q = Fraction(weight(y, x), normaliser[x]), Fraction(weight(y, other), normaliser[other])
                worst = max(worst, p / q)
    return worst


@pytest.fixture()
def table(tmp_path):
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(8)
    sizes = rng.choice([4, 6, 9], 60)
    counts = rng.integers(0, sizes + 1)
    path.write_text("id,region,n,c\n" + "".join(f"g{k},r{k % 4},{n},{c}\n"
                                               for k, (n, c) in enumerate(zip(sizes, counts, strict=True))))
    return path, sizes, counts


KEEP = ("--keep", "id,region,n")
"""The fixture table's columns beside its count, all published (publication is default-deny)."""


def _release(table_path, out, *extra) -> int:
    return main(["release", "--input", str(table_path), "--count-column", "c", "--size-column", "n",
                 "--invariant", "total", "--out", str(out), *extra])


def test_the_release_keeps_the_total_and_records_its_guarantee(tmp_path, table):
    path, _, counts = table
    out = tmp_path / "o.csv"
    assert _release(path, out, *KEEP, "--mechanism", "GM", "--alpha", "2/3") == 0
    header, rows = _rows(out)
    assert header == ["id", "region", "n", "noisy_c", "mechanism"]
    assert sum(int(r[3]) for r in rows) == int(counts.sum())
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    [column] = sidecar["guarantee"]["columns"]
    assert column["per_group_alpha"] == "2/3" and column["invariant"]["partitions"] == 1
    assert column["published_totals"] == [{"total": int(counts.sum())}]  # the one total it makes public
    alpha = Fraction(column["alpha_exact"])
    assert alpha <= Fraction(2, 3) ** 2  # one person moving changes two groups' counts: never better than alpha^2
    assert alpha >= Fraction(2, 3) ** 4  # Gong-Meng Theorem 2.1 with gamma <= 1
    assert "invariant neighbours" in sidecar["guarantee"]["unit_of_privacy"]
    # the spent epsilon is a 30-digit upper bound of ln(1/alpha); math.log's float may round above it
    assert Fraction(column["epsilon_spent"]) >= Fraction(-math.log(alpha)) * (1 - Fraction(1, 10**15))
    seeded, again = tmp_path / "seeded.csv", tmp_path / "again.csv"
    assert _release(path, seeded, *KEEP, "--mechanism", "GM", "--alpha", "2/3", "--seed", "4") == 0
    assert _release(path, again, *KEEP, "--mechanism", "GM", "--alpha", "2/3", "--seed", "4") == 0
    assert _rows(again)[1] == _rows(seeded)[1]  # a seeded release is reproducible
    assert sum(int(r[3]) for r in _rows(seeded)[1]) == int(counts.sum())
    # ... and so claims no guarantee: its seed, in the sidecar, regenerates the noise
    claim = json.loads((tmp_path / "seeded.csv.release.json").read_text())["guarantee"]
    assert list(claim) == ["claimed", "published_totals"] and claim["claimed"].startswith("none")
    assert claim["published_totals"] == {"c": [{"total": int(counts.sum())}]}  # the total it published all the same


def test_one_total_per_partition(tmp_path, table):
    path, _, counts = table
    out = tmp_path / "o.csv"
    assert _release(path, out, *KEEP, "--mechanism", "EM", "--alpha", "9/10", "--invariant-by", "region") == 0
    _, rows = _rows(out)
    for region in ("r0", "r1", "r2", "r3"):
        members = [k for k, r in enumerate(rows) if r[1] == region]
        assert sum(int(rows[k][3]) for k in members) == int(counts[members].sum())
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    [column] = sidecar["guarantee"]["columns"]
    assert column["invariant"]["partitions"] == 4
    totals = {f"r{r}": int(counts[[k for k in range(len(counts)) if k % 4 == r]].sum()) for r in range(4)}
    assert column["published_totals"] == [{"region": region, "total": total} for region, total in totals.items()]


@pytest.mark.parametrize("mechanism, alpha", [("GM", "1/2"), ("EM", "2/3")])
def test_the_recorded_guarantee_is_the_enumerated_worst_ratio(tmp_path, mechanism, alpha):
    """Three small groups: the sidecar's alpha is exactly 1 / (the brute-force worst ratio) on the sampled weights."""
    sizes, counts = [2, 3, 2], [1, 2, 0]
    path = tmp_path / "small.csv"
    path.write_text("n,c\n" + "".join(f"{n},{c}\n" for n, c in zip(sizes, counts, strict=True)))
    out = tmp_path / "o.csv"
    assert _release(path, out, "--mechanism", mechanism, "--alpha", alpha, "--cache", str(tmp_path / "cache")) == 0
    sidecar = json.loads((tmp_path / "o.csv.release.json").read_text())
    column = sidecar["guarantee"]["columns"][0]
    weights = [design_named(mechanism, n, Fraction(alpha)).released.weights for n in sizes]
    digests = {e["n"]: e["release_weights_sha256"] for e in sidecar["mechanisms"]}
    import hashlib

    for n, w in zip(sizes, weights, strict=True):
        assert hashlib.sha256(w.astype("<i8").tobytes()).hexdigest() == digests[n]  # the very weights sampled
    worst = _worst_ratio(weights, counts)
    assert column["invariant"]["guarantee"]["kind"] == "exact"
    assert Fraction(column["alpha_exact"]) == 1 / worst


def test_target_alpha_is_met_on_the_sampled_weights(tmp_path, table):
    path, _, _ = table
    out = tmp_path / "o.csv"
    assert _release(path, out, *KEEP, "--mechanism", "GM", "--target-alpha", "1/2") == 0
    column = json.loads((tmp_path / "o.csv.release.json").read_text())["guarantee"]["columns"][0]
    assert Fraction(column["alpha_exact"]) >= Fraction(1, 2)
    assert Fraction(1, 2) < Fraction(column["per_group_alpha"]) < 1


def test_the_budget_is_charged_the_conditioned_epsilon(tmp_path, table, capsys):
    path, _, _ = table
    ledger = tmp_path / "b.json"
    bit_only = tmp_path / "bit.json"
    assert main(["budget", "init", str(bit_only), "--epsilon", "5"]) == 0
    # a ledger without an invariant account refuses: its epsilon is in another unit of privacy
    assert _release(path, tmp_path / "o.csv", *KEEP, "--mechanism", "GM", "--alpha", "2/3",
                    "--budget", str(bit_only)) == 2
    assert "no account for invariant" in _one_line_error(capsys)
    assert json.loads(bit_only.read_text())["entries"] == [] and not (tmp_path / "o.csv").exists()
    assert main(["budget", "init", str(ledger), "--epsilon", "5", "--invariant-epsilon", "5"]) == 0
    assert _release(path, tmp_path / "o.csv", *KEEP, "--mechanism", "GM", "--alpha", "2/3",
                    "--budget", str(ledger)) == 0
    column = json.loads((tmp_path / "o.csv.release.json").read_text())["guarantee"]["columns"][0]
    [entry] = json.loads(ledger.read_text())["entries"]
    assert entry["account"] == "invariant"  # never added to the bit-level account
    assert Fraction(entry["epsilon"]) == Fraction(column["epsilon_spent"])
    assert Fraction(entry["epsilon"]) > Fraction(-math.log(Fraction(2, 3)))  # more than the unconditioned column


@pytest.mark.parametrize("extra, message", [
    (["--mechanism", "WM", "--target-alpha", "1/2"], "GM or EM"),
    (["--mechanism", "GM", "--alpha", "1/2", "--invariant-by", "c"], "is a count column"),
    (["--mechanism", "GM", "--alpha", "1/2", "--invariant-by", "nope"], "no column 'nope'"),
    (["--mechanism", "GM", "--alpha", "1/2", "--target-alpha", "1/2"], "exactly one of"),
])
def test_bad_invariant_requests_are_one_line(tmp_path, table, capsys, extra, message):
    path, _, _ = table
    assert _release(path, tmp_path / "o.csv", *extra) == 2
    assert message in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_invariant_by_needs_the_invariant_and_levels_do_not_mix(tmp_path, table, capsys):
    path, _, _ = table
    base = ["release", "--input", str(path), "--count-column", "c", "--size-column", "n", "--out",
            str(tmp_path / "o.csv")]
    assert main(base + ["--mechanism", "GM", "--alpha", "1/2", "--invariant-by", "region"]) == 2
    assert "--invariant-by goes with --invariant" in _one_line_error(capsys)
    assert main(base + ["--levels", "1/2,2/3", "--invariant", "total"]) == 2
    assert "cannot be combined" in _one_line_error(capsys)


def test_a_missing_partition_value_is_refused(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("region,n,c\nr0,4,1\n,4,2\n")
    assert _release(path, tmp_path / "o.csv", "--mechanism", "GM", "--alpha", "1/2", "--invariant-by", "region") == 2
    line = _one_line_error(capsys)
    assert str(path) in line and "row 2, column 'region'" in line
    assert not (tmp_path / "o.csv").exists()


def test_public_counts_depend_only_on_the_sizes_and_the_total():
    from countdp.release.invariant import public_counts

    sizes = np.array([4, 6, 9, 1, 30])
    for total in (0, 1, 17, 49, 50):
        counts = public_counts(sizes, total)
        assert counts.sum() == total and (counts >= 0).all() and (counts <= sizes).all()


def test_a_padded_draw_takes_its_deadline_whatever_the_work_takes():
    """Real sleeps: a fast and a slow piece of work both return at 3 x the calibration's time (0.1 s), not sooner."""
    import time

    from countdp.release.invariant import run_padded

    elapsed = []
    for work in (0.02, 0.2):
        start = time.perf_counter()
        assert run_padded(lambda w=work: time.sleep(w) or "done", lambda: time.sleep(0.1), 3.0) == "done"
        elapsed.append(time.perf_counter() - start)
    # both end at the deadline, 3 x the calibration (at least 0.3 s, later on a loaded machine): without the
    # padding they would take 0.12 and 0.3 s
    assert min(elapsed) >= 0.3 and max(elapsed) / min(elapsed) < 1.25, elapsed
