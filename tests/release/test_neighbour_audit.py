"""Neighbour audit of every release form: nothing published may depend on a confidential value
except through the noise.

Each form of ``countdp release`` (a mechanism file for every row; a size column, CSV and Parquet,
one and two count columns, and published as a release folder, ``--out o/``; ``--levels``;
``--invariant total`` with and without ``--invariant-by``),
as a release and as a ``--dry-run``, with and without ``--budget``, is run on a small table and on
its neighbours under the form's unit of privacy (:mod:`tests.helpers.neighbour_audit`): one
person's bit for the bit-level forms, invariant neighbours (one count -1, another of the same
partition +1) for the conditioned ones, and both for a conditioned dry run, which publishes no total.
Every published byte but the noisy values, and every printed line, must be the same; a field that
differs fails the test with its name.  Tables have a public ``region`` column, kept with ``--keep``.
The first tests show the comparator naming planted leaks, so the audit cannot pass vacuously.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.neighbour_audit import (
    SET_ASIDE,
    Form,
    Publication,
    Table,
    audit,
    bit_neighbours,
    csv_differences,
    differences,
    invariant_neighbours,
    json_differences,
    parquet_differences,
    prepare_template,
    publish,
    report,
)

SIZED = Table(("region", "n", "a"), (("north", 3, 1), ("south", 4, 2), ("east", 5, 3), ("west", 2, 1)))
TWO = Table(("region", "n", "a", "b"), (("north", 3, 1, 2), ("south", 4, 2, 1), ("east", 5, 3, 0)))
FILE = Table(("region", "c"), (("north", 1), ("south", 3), ("east", 6), ("west", 0)))
PARTS = Table(("region", "g", "n", "a"),
              (("north", "x", 3, 1), ("south", "x", 4, 2), ("east", "y", 5, 3), ("west", "y", 2, 0)))
EM = ("--size-column", "n", "--mechanism", "EM", "--alpha", "2/3")

FORMS = [
    Form("mechanism file", FILE, ("m.json", "--count-column", "c", "--keep", "region"), ("noisy_c",), ("c",), 6,
         design=("design", "WM", "--n", "6", "--alpha", "9/10", "--out", "m.json")),
    Form("size column csv", SIZED, ("--count-column", "a", *EM, "--keep", "region"), ("noisy_a",), ("a",), "n"),
    Form("size column folder", SIZED, ("--count-column", "a", *EM, "--keep", "region"), ("noisy_a",), ("a",), "n",
         folder=True),
    Form("size column parquet", SIZED, ("--count-column", "a", *EM, "--keep", "region"), ("noisy_a",), ("a",), "n",
         fmt="parquet"),
    Form("two count columns", TWO, ("--count-column", "a,b", "--size-column", "n", "--mechanism", "EM",
                                    "--total-epsilon", "1", "--keep", "region"), ("noisy_a", "noisy_b"), ("a", "b"),
         "n"),
    Form("two count columns parquet", TWO, ("--count-column", "a,b", "--size-column", "n", "--mechanism", "EM",
                                            "--total-epsilon", "1", "--keep", "region"), ("noisy_a", "noisy_b"),
         ("a", "b"), "n", fmt="parquet"),
    Form("levels", SIZED, ("--count-column", "a", "--size-column", "n", "--levels", "1/2,2/3,9/10", "--keep",
                           "region"), ("noisy_a_level1", "noisy_a_level2", "noisy_a_level3"), ("a",), "n"),
    Form("invariant total", SIZED, ("--count-column", "a", "--size-column", "n", "--mechanism", "GM", "--alpha",
                                    "2/3", "--invariant", "total", "--keep", "region"), ("noisy_a",), ("a",), "n",
         invariant=True),
    Form("invariant by", PARTS, ("--count-column", "a", *EM, "--invariant", "total", "--invariant-by", "g",
                                 "--keep", "region,g"), ("noisy_a",), ("a",), "n", invariant=True, by="g"),
]
MOST = 40
"""Neighbours audited per form and kind: every one of these small tables (at most 21), or a seeded sample of 40."""


def test_the_set_aside_list_is_short_and_explained():
    """Every field the audit ignores is named with the reason it depends on nothing confidential."""
    assert set(SET_ASIDE) == {"sidecar created_utc", "sidecar output.sha256", "sidecar budget.entry",
                              "table noisy columns"}
    assert all(len(why) > 40 for why in SET_ASIDE.values())


def test_a_digest_added_to_the_sidecar_is_named():
    sidecar = {"created_utc": "2026-01-01T00:00:00+00:00", "input": {"path": "t.csv", "rows": 4},
               "output": {"sha256": "aa"}, "budget": {"entry": "1-ab", "epsilon": "1"}}
    leaked = json.loads(json.dumps(sidecar))
    leaked["input"]["sha256"] = "0f" * 32
    assert json_differences(sidecar, leaked) == ["input.sha256"]
    other = json.loads(json.dumps(sidecar))
    other.update(created_utc="2027-01-01T00:00:00+00:00", output={"sha256": "bb"}, budget={"entry": "1-cd",
                                                                                           "epsilon": "1"})
    assert json_differences(sidecar, other) == []
    other["budget"]["epsilon"] = "2"
    assert json_differences(sidecar, other) == ["budget.epsilon"]
    assert json_differences({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ["a[1].b"]
    assert json_differences({"a": 1, "b": 2}, {"b": 2, "a": 1}) == ["key order"]


def test_a_kept_column_that_differs_is_named_and_the_noisy_one_is_not():
    base = b"region,noisy_a,mechanism\nnorth,2,EM n=3\nsouth,1,EM n=4\n"
    assert csv_differences(base, b"region,noisy_a,mechanism\nnorth,0,EM n=3\nsouth,4,EM n=4\n",
                           ("noisy_a",), "o.csv") == []
    assert csv_differences(base, b"region,noisy_a,mechanism\nnorth,2,EM n=3\nsouth2,1,EM n=4\n",
                           ("noisy_a",), "o.csv") == ["o.csv column 'region' row 2"]
    assert csv_differences(base, b'region,noisy_a,mechanism\n"north",2,EM n=3\nsouth,1,EM n=4\n',
                           ("noisy_a",), "o.csv") == ["o.csv column 'region' row 1"]
    assert csv_differences(base, b"region,noisy_a,mechanism,a\nnorth,2,EM n=3,1\nsouth,1,EM n=4,2\n",
                           ("noisy_a",), "o.csv") == ["o.csv header"]


def _parquet(region: list[str], noisy: list[int]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table({"region": region, "noisy_a": pa.array(noisy, pa.int64())}), sink)
    return sink.getvalue().to_pybytes()


def test_a_parquet_kept_column_that_differs_is_named():
    base = _parquet(["north", "south"], [2, 1])
    assert parquet_differences(base, _parquet(["north", "south"], [7, 0]), ("noisy_a",), "o.parquet") == []
    names = parquet_differences(base, _parquet(["north", "south!"], [2, 1]), ("noisy_a",), "o.parquet")
    assert "o.parquet column 'region'" in names and all("region" in name for name in names)


def test_printed_lines_and_files_are_named():
    base = Publication(0, "# dry run\n# budget 9 would remain\n", "", {})
    assert differences(base, Publication(0, "# dry run\n# budget 8 would remain\n", "", {}), ()) == ["stdout line 2"]
    assert differences(base, Publication(0, base.stdout, "# note\n", {}), ()) == ["stderr line 1"]
    assert differences(base, Publication(2, base.stdout, "", {"o.csv": b""}), ()) == ["exit status", "file o.csv"]


def test_a_real_release_of_a_changed_kept_column_is_named(tmp_path):
    """End to end: two real releases whose tables differ only in a kept cell differ only by that cell's name
    (same counts and seed, so the noisy values agree; the output's digest is set aside)."""
    form = FORMS[1]
    template = prepare_template(form, False, tmp_path / "setup")
    argv = form.argv(dry_run=False, budget=False)
    base = publish(form, form.table, argv, template, tmp_path / "base")
    moved = Table(SIZED.header, (SIZED.rows[0], ("south-east", *SIZED.rows[1][1:]), *SIZED.rows[2:]))
    assert differences(base, publish(form, moved, argv, template, tmp_path / "moved"), form.noisy) == \
        ["o.csv column 'region' row 2"]


def test_neighbours_are_one_record_away():
    two = bit_neighbours(TWO, ("a", "b"), "n")
    assert len(two) == 8 + 8 + 5  # row 3 has b = 0: b cannot go down
    assert all(sum(abs(x - y) for r, s in zip(TWO.rows, t.rows, strict=True) for x, y in zip(r[2:], s[2:],
                                                                                           strict=True)) in (1, 2)
               for _, t in two)
    parts = invariant_neighbours(PARTS, ("a",), "n", "g")
    assert [label for label, _ in parts] == ["a: row 1 -1, row 2 +1", "a: row 2 -1, row 1 +1",
                                             "a: row 3 -1, row 4 +1"]
    for _, table in parts:
        for g in ("x", "y"):
            assert sum(r[3] for r in table.rows if r[1] == g) == sum(r[3] for r in PARTS.rows if r[1] == g)


@pytest.mark.parametrize("budget", [False, True], ids=["no budget", "budget"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["release", "dry run"])
@pytest.mark.parametrize("form", FORMS, ids=[form.name for form in FORMS])
def test_neighbours_publish_the_same_bytes_but_the_noise(form, dry_run, budget, tmp_path):
    """Every neighbour publishes what the table does, noisy values and the set-aside fields excepted."""
    leaks = audit(form, dry_run, budget, tmp_path, MOST)
    assert not leaks, f"{form.name}: published fields that depend on the confidential counts:\n{report(leaks)}"
