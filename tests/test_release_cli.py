"""countdp release on the command line: counts, tables, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from countdp.cli import main


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


def test_release_refuses_uncertified(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"matrix": [[0.9, 0.1], [0.1, 0.9]], "alpha": 0.5}))
    assert main(["release", str(path), "0"]) == 2
    assert "not certified" in capsys.readouterr().err


def test_release_a_table_keeps_every_column_and_adds_the_noisy_count(tmp_path, capsys):
    from countdp.mechanisms.artifact import load_design
    from countdp.privacy.sampling import release

    path = tmp_path / "em.json"
    assert main(["design", "EM", "--n", "10", "--alpha", "9/10", "--out", str(path)]) == 0
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 11, 500)
    table = tmp_path / "groups.csv"
    lines = ["group,region,c,note"] + [f"g{k},r{k % 7},{c},\"a, b\"" for k, c in enumerate(counts)]
    table.write_text("\n".join(lines) + "\n")
    out = tmp_path / "noisy.csv"
    assert main(["release", str(path), "--input", str(table), "--count-column", "c", "--out", str(out),
                 "--seed", "9"]) == 0
    import pandas as pd

    written = pd.read_csv(out, dtype=str, keep_default_na=False)
    original = pd.read_csv(table, dtype=str, keep_default_na=False)
    assert list(written.columns) == ["group", "region", "c", "note", "noisy_c"]
    assert written[original.columns].equals(original)
    expected = release(load_design(path), counts, np.random.default_rng(9))
    assert np.array_equal(written["noisy_c"].astype(int).to_numpy(), expected)


@pytest.mark.parametrize("body, message", [
    ("c\n1\n11\n", "row 2, column 'c': count 11 is outside 0..10"),
    ("c\n1\n-1\n", "row 2, column 'c': count -1 is outside 0..10"),
    ("c\n1\n2.5\n", "row 2, column 'c': '2.5' is not an integer count"),
    ("c\n1\n\n", None),  # a blank line is skipped by CSV readers: not an error
    ("c,d\n1,\nx,2\n", "row 2, column 'c': 'x' is not an integer count"),
    ("d\n1\n", "no column 'c'"),
    ("c\n", "no rows"),
])
def test_release_a_bad_table_is_one_line_and_writes_nothing(tmp_path, capsys, body, message):
    path = tmp_path / "em.json"
    main(["design", "EM", "--n", "10", "--alpha", "9/10", "--out", str(path)])
    table, out = tmp_path / "t.csv", tmp_path / "noisy.csv"
    table.write_text(body)
    code = main(["release", str(path), "--input", str(table), "--count-column", "c", "--out", str(out)])
    err = capsys.readouterr().err
    if message is None:
        assert code == 0 and out.exists()
        return
    assert code == 2 and message in err and len([e for e in err.splitlines() if "error" in e]) == 1
    assert not out.exists() and list(tmp_path.glob(".noisy*")) == []


# ---------------------------------------------------------------- a table of mixed group sizes
def _groups(tmp_path, rows: int = 2_000, seed: int = 1):
    import pandas as pd

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 13, rows)
    frame = pd.DataFrame({"block": [f"b{k}" for k in range(rows)], "n": sizes, "c": rng.integers(0, sizes + 1),
                          "weight": rng.random(rows).round(3)})
    return frame


def _release_sizes(tmp_path, table, out, *extra):
    return main(["release", "--input", str(table), "--count-column", "c", "--size-column", "n", "--mechanism", "EM",
                 "--alpha", "9/10", "--out", str(out), "--cache", str(tmp_path / "cache"), *extra])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_release_mixed_sizes_round_trip_and_cache(tmp_path, capsys, suffix):
    import pandas as pd

    from countdp.design.designer import design_named
    from countdp.privacy.sampling import release

    frame = _groups(tmp_path)
    table, out = tmp_path / f"groups{suffix}", tmp_path / f"noisy{suffix}"
    frame.to_parquet(table, index=False) if suffix == ".parquet" else frame.to_csv(table, index=False)
    assert _release_sizes(tmp_path, table, out, "--seed", "3") == 0
    written = pd.read_parquet(out) if suffix == ".parquet" else pd.read_csv(out)
    assert list(written.columns) == ["block", "n", "c", "weight", "noisy_c", "mechanism"]
    assert written[frame.columns].equals(frame)
    assert (written["mechanism"] == "EM n=" + written["n"].astype(str)).all()
    assert ((written["noisy_c"] >= 0) & (written["noisy_c"] <= written["n"])).all()
    # independent: each size's rows, released in size order with the same seed, by the library itself
    rng = np.random.default_rng(3)
    for n in sorted(frame["n"].unique()):
        rows = frame["n"] == n
        expected = release(design_named("EM", int(n), "9/10"), frame.loc[rows, "c"].to_numpy(), rng)
        assert np.array_equal(written.loc[rows, "noisy_c"].to_numpy(), expected)
    sidecar = json.loads((tmp_path / f"noisy{suffix}.release.json").read_text())
    assert sidecar["alpha_exact"] == "9/10" and sidecar["rows"] == len(frame) and "PCG64" in sidecar["randomness"]
    assert sorted(sidecar["designed_sizes"]) == sorted(frame["n"].unique().tolist()) and sidecar["cached_sizes"] == []
    assert sum(m["rows"] for m in sidecar["mechanisms"]) == len(frame)
    assert all(m["exact_certificate"]["holds"] and len(m["certificate_sha256"]) == 64 for m in sidecar["mechanisms"])
    capsys.readouterr()
    assert _release_sizes(tmp_path, table, out) == 0  # second run: every size from the cache, OS randomness
    again = json.loads((tmp_path / f"noisy{suffix}.release.json").read_text())
    assert again["designed_sizes"] == [] and sorted(again["cached_sizes"]) == sorted(sidecar["designed_sizes"])
    digests = [m["certificate_sha256"] for m in sidecar["mechanisms"]]
    assert [m["certificate_sha256"] for m in again["mechanisms"]] == digests
    assert "os.urandom" in again["randomness"]


@pytest.mark.parametrize("body, message", [
    ("n,c\n4,2\n3,5\n", "row 2, column 'c': count 5 is outside 0..3 (the group size in 'n')"),
    ("n,c\n4,2\n0,0\n", "row 2, column 'n': group size 0 is not >= 1"),
    ("n,c\n4,2\nx,1\n", "row 2, column 'n': 'x' is not an integer group size"),
    ("n,c\n4,2\n3,1.5\n", "row 2, column 'c': '1.5' is not an integer count"),
    ("n,d\n4,2\n", "no column 'c'"),
    ("m,c\n4,2\n", "no column 'n'"),
    ("n,c\n", "no rows"),
])
def test_release_mixed_sizes_bad_table_is_one_line_and_writes_nothing(tmp_path, capsys, body, message):
    table, out = tmp_path / "t.csv", tmp_path / "noisy.csv"
    table.write_text(body)
    assert _release_sizes(tmp_path, table, out) == 2
    err = capsys.readouterr().err
    assert message in err and len([e for e in err.splitlines() if "error" in e]) == 1
    assert not out.exists() and not (tmp_path / "noisy.csv.release.json").exists()
    assert not (tmp_path / "cache").exists()  # validated before anything was designed


@pytest.mark.parametrize("argv, word", [
    (["release", "--input", "t.csv", "--count-column", "c", "--size-column", "n", "--out", "o.csv"], "--mechanism"),
    (["release", "--input", "t.csv", "--count-column", "c", "--size-column", "n", "--mechanism", "EM"], "--out"),
    (["release", "x.json", "--input", "t.csv", "--count-column", "c", "--mechanism", "EM"], "--size-column"),
])
def test_release_mode_errors(argv, word, capsys):
    assert main(argv) == 2
    assert word in capsys.readouterr().err

