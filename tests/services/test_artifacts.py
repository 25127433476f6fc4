"""Mechanism files: the compact JSON + npz pair, the one loader's verdict, and files written under the umask.

Every edit a person could make to a mechanism file is refused by the loader with one line naming
the file as the user gave it, and ``countdp check`` prints exactly that line (exit 2), as
``countdp release`` does; each check of the loader is shown failing on an input made to break it.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from countdp.cli import main
from countdp.design.designer import design_named
from countdp.mechanisms.closed_forms import geometric
from countdp.mechanisms.properties import check_all
from countdp.mechanisms.property_scan import worst_violations
from countdp.services.arrays import npz_bytes
from countdp.services.artifact import design_to_dict, load_certified, load_design, save_design, to_json
from tests.helpers.artifact_files import python_int_dp, read_file, write_file

D = 2**62


@pytest.fixture(scope="module")
def gm():
    return design_named("GM", 5, "2/3")


@pytest.fixture
def folder(tmp_path, monkeypatch, gm):
    """``good.json`` (GM, n = 5, alpha = 2/3) and ``other.json`` (GM, n = 5, alpha = 1/2), run from their folder."""
    monkeypatch.chdir(tmp_path)
    save_design(gm, tmp_path / "good.json")
    save_design(design_named("GM", 5, "1/2"), tmp_path / "other.json")
    return tmp_path


# ---------------------------------------------------------------- the compact pair
def test_save_writes_a_json_and_an_npz_that_plain_numpy_reads(folder, gm):
    record = json.loads((folder / "good.json").read_text())
    assert "matrix" not in record and "weights" not in record["release"]
    data = (folder / "good.npz").read_bytes()
    assert record["arrays"] == {"file": "good.npz", "sha256": hashlib.sha256(data).hexdigest(),
                                "weights_sha256": hashlib.sha256(gm.released.weights.astype("<i8").tobytes())
                                .hexdigest()}
    with np.load(folder / "good.npz") as arrays:
        assert sorted(arrays.files) == ["matrix", "weights"]
        assert arrays["matrix"].dtype == np.float64 and arrays["weights"].dtype == np.int64
        assert np.array_equal(arrays["matrix"], gm.matrix) and np.array_equal(arrays["weights"], gm.released.weights)
    assert python_int_dp(np.load(folder / "good.npz")["weights"], record["alpha_exact"], D)
    np.testing.assert_allclose(np.load(folder / "good.npz")["matrix"], geometric(5, 2 / 3), rtol=0, atol=1e-12)
    loaded = load_design("good.json")
    assert loaded.alpha_exact == Fraction(2, 3) and loaded.n == 5 and np.array_equal(loaded.matrix, gm.matrix)
    assert np.array_equal(loaded.released.weights, gm.released.weights)
    assert sorted(p.name for p in folder.iterdir()) == ["good.json", "good.npz", "other.json", "other.npz"]


def test_the_npz_is_the_same_bytes_whenever_it_is_written(gm, monkeypatch):
    """Same design, same npz bytes (its SHA-256 is in the JSON; reruns must reproduce it) however much later it
    is written.  The control, a zip written with ``writestr`` (which stamps the time), shows the clock moved."""
    def both():
        control = io.BytesIO()
        with zipfile.ZipFile(control, "w") as archive:
            archive.writestr("matrix.npy", b"x")
        return control.getvalue(), npz_bytes(gm.matrix, gm.released.weights)

    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    first = both()
    monkeypatch.setattr(time, "time", lambda: now + 86_400 * 400)
    second = both()
    assert first[0] != second[0] and first[1] == second[1]


def test_the_inline_format_still_loads(tmp_path, gm):
    """What ``countdp design`` prints (and what countdp wrote before the npz): matrix and weights inline."""
    path = tmp_path / "inline.json"
    path.write_text(to_json(design_to_dict(gm)))
    record = json.loads(path.read_text())
    assert np.array_equal(np.array(record["release"]["weights"]), gm.released.weights)
    loaded = load_certified(path)
    assert np.array_equal(loaded["matrix"], gm.matrix) and np.array_equal(loaded["released"].weights,
                                                                            gm.released.weights)


def _balanced(W: np.ndarray) -> np.ndarray:
    """One unit moved between two weights of column 0: still exactly DP (every inequality keeps >= 1 unit
    of slack after rounding), but not the same weights."""
    W = W.copy()
    W[0, 0] += 1
    W[1, 0] -= 1
    return W


def _breaking(W: np.ndarray) -> np.ndarray:
    """A zero next to a positive weight, the column still summing to 2^62."""
    W = W.copy()
    W[1, 0] += W[0, 0]
    W[0, 0] = 0
    return W


def _mixed(P: np.ndarray, lam: float = 1e-6) -> np.ndarray:
    """Mixed with the uniform mechanism: more private, columns still summing to 1, 1e-7 away from W/D."""
    return (1 - lam) * P + lam / P.shape[0]


def _float_dp(P: np.ndarray, alpha: float) -> bool:
    return all(alpha * P[i, k] <= P[i, j] for i in range(len(P)) for j in range(len(P) - 1) for k in (j - 1, j + 1)
               if 0 <= k < len(P)) and np.all(np.abs(P.sum(axis=0) - 1) <= 1e-12) and P.min() >= 0


def _nudged(P: np.ndarray) -> np.ndarray:
    P = P.copy()
    P[2, 3] += 1e-3
    return P


def _broken_matrix(P: np.ndarray, alpha: float) -> np.ndarray:
    P = P.copy()
    P[0, 1] = P[0, 0] / alpha * (1 + 1e-6)
    P[:, 1] /= P[:, 1].sum()
    return P


def _edit(field: str, value):
    def edit(record, P, W):
        block = record
        *parents, last = field.split(".")
        for key in parents:
            block = block[key]
        if value is KeyError:
            del block[last]
        else:
            block[last] = value
        return {}
    return edit


EDITS = {  # name: (edit(record, matrix, weights) -> write_file keywords, a word of the reason)
    "n": (_edit("n", 9), "n = 9, but the arrays are 6x6 (n = 5)"),
    "alpha": (_edit("alpha", 0.5), "alpha 0.5 is not float(alpha_exact = 2/3)"),
    "alpha_exact": (_edit("alpha_exact", "3/4"), "is not float(alpha_exact = 3/4)"),
    "alpha and alpha_exact": (lambda r, P, W: r.update(alpha=0.75, alpha_exact="3/4") or {},
                              "not certified alpha-DP on its stored values"),
    "alpha_exact unreadable": (_edit("alpha_exact", "two thirds"), "good.json: alpha_exact: "),
    "one matrix entry": (lambda r, P, W: {"matrix": _nudged(P), "digests": False},
                         "not the one this JSON records (SHA-256 differs"),
    "one matrix entry, digests re-recorded": (lambda r, P, W: {"matrix": _broken_matrix(P, r["alpha"])},
                                              "not certified alpha-DP on its stored values"),
    "matrix mixed with UM, digests re-recorded": (lambda r, P, W: {"matrix": _mixed(P)},
                                                  "the float matrix and the release weights differ by more than"),
    "one weight re-balanced": (lambda r, P, W: {"weights": _balanced(W), "digests": False}, "SHA-256 differs"),
    "one weight re-balanced, npz digest re-recorded": (lambda r, P, W: {"weights": _balanced(W), "digests": "npz"},
                                                       "weights SHA-256 differs"),
    "one weight breaking DP, digests re-recorded": (lambda r, P, W: {"weights": _breaking(W)},
                                                    "release weights are not alpha-DP"),
    "npz swapped for another design's": (lambda r, P, W: shutil.copy("other.npz", "good.npz") and {},
                                         "SHA-256 differs: a stale or foreign file"),
    "npz deleted": (lambda r, P, W: Path("good.npz").unlink() or {}, "its arrays file good.npz is missing"),
    "property F flipped to true": (_edit("properties.F", True), "property F is recorded as holding"),
    "property RH flipped to false": (_edit("properties.RH", False), "property RH is recorded as not holding"),
    "property tolerance raised": (_edit("property_tolerance", 1.0), "property CH is recorded as not holding"),
    "dp.certified false": (_edit("dp.certified", False), "not certified alpha-DP"),
    "dp removed": (_edit("dp", KeyError), "field 'dp' is missing"),
    "n a string": (_edit("n", "5"), "field 'n' has the wrong type"),
    "dp.certified a string": (_edit("dp.certified", "yes"), "field 'dp.certified' has the wrong type"),
    "solver_objective a string": (_edit("solver_objective", "x"), "field 'solver_objective' has the wrong type"),
    "a property missing": (_edit("properties.S", KeyError), "field 'properties' must map each"),
    "negative property tolerance": (_edit("property_tolerance", -1), "'property_tolerance' must be a finite number"),
    "denominator not a power of two": (_edit("release.denominator", 3 * 2**60), "must be a power of two"),
    "denominator 2^10": (_edit("release.denominator", 2**10), "60 <= K <= 62"),
    "arrays file outside the folder": (_edit("arrays.file", "../good.npz"), "must name an .npz file beside"),
    "arrays digest not hex": (_edit("arrays.sha256", "xyz"), "'arrays.sha256' must be a SHA-256"),
    "inline matrix beside the arrays": (_edit("matrix", [[1.0, 0.0], [0.0, 1.0]]), "inline arrays as well"),
    "npz not a zip, digest re-recorded": (lambda r, P, W: _npz_bytes(r, b"not a zip archive"), "not a readable npz"),
    "npz with a float32 matrix, digests re-recorded": (lambda r, P, W: {"matrix": P.astype(np.float32)},
                                                       "matrix has dtype float32"),
    "npz with a non-finite entry, digests re-recorded": (lambda r, P, W: {"matrix": np.where(P == P.max(), np.nan, P)},
                                                         "finite entries"),
    "npz with a third array, digests re-recorded": (lambda r, P, W: _npz_bytes(r, _three_arrays(P, W)),
                                                    "holds arrays ['extra', 'matrix', 'weights']"),
    "npz header claiming 10^6 x 10^6, digests re-recorded": (lambda r, P, W: _npz_bytes(r, _huge_header(P, W)),
                                                             "n = 5, but the arrays are 1000000x1000000"),
    "npz header and n both 10^6, digests re-recorded": (lambda r, P, W: _npz_bytes(r, _huge_header(P, W)) or
                                                        r.update(n=999_999) or {},
                                                        "n = 999999 is beyond this machine: reading and verifying"),
    "npz member a zip bomb, digests re-recorded": (lambda r, P, W: _npz_bytes(r, _bomb(P, W)),
                                                   "its weights holds more bytes than its header declares"),
    "npz with pickled objects, digests re-recorded": (lambda r, P, W: {"weights": W.astype(object)},
                                                      "weights has dtype object"),
}


def _npy(array: np.ndarray, header: dict | None = None, tail: bytes = b"") -> bytes:
    """A .npy member: ``array``'s bytes after ``header`` (default: its own), then ``tail``."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header or np.lib.format.header_data_from_array_1_0(array))
    return buffer.getvalue() + array.tobytes() + tail


def _huge_header(P, W) -> bytes:
    """The matrix's header says (10^6, 10^6) over the 6x6 matrix's bytes (np.load: MemoryError, 7.3 TiB)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        huge = {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)}
        archive.writestr("matrix.npy", _npy(P, huge))
        archive.writestr("weights.npy", _npy(W, {**huge, "descr": "<i8"}))
    return buffer.getvalue()


def _bomb(P, W) -> bytes:
    """The weights' member declares 6x6 and holds 256 MiB of zeros more (a quarter of a MiB compressed)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("matrix.npy", _npy(P))
        archive.writestr("weights.npy", _npy(W, tail=bytes(256 * 2**20)))
    return buffer.getvalue()


def _npz_bytes(record: dict, data: bytes) -> dict:
    Path("good.npz").write_bytes(data)
    record["arrays"]["sha256"] = hashlib.sha256(data).hexdigest()
    return {}


def _three_arrays(P, W) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, matrix=P, weights=W, extra=np.zeros(2))
    return buffer.getvalue()


def _refusal(path: str, capsys) -> str:
    """The loader's one line for ``path``; ``check`` must print exactly it and exit 2."""
    with pytest.raises(ValueError) as refused:
        load_certified(path)
    message = str(refused.value)
    with pytest.raises(ValueError) as refused_again:
        load_design(path)
    assert str(refused_again.value) == message
    capsys.readouterr()
    assert main(["check", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"countdp: error: {message}\n"
    return message


@pytest.mark.parametrize("name", EDITS)
def test_every_edit_is_refused_by_check_and_the_loader_with_one_line(name, folder, capsys):
    edit, reason = EDITS[name]
    assert main(["check", "good.json"]) == 0 and load_certified("good.json")
    record, P, W = read_file("good.json")
    options = edit(record, P, W)
    digests = options.pop("digests", True)
    if digests == "npz":  # the npz's digest re-recorded, the weights' one left as it was
        weights_sha = record["arrays"]["weights_sha256"]
        write_file("good.json", record, **options)
        record = json.loads(Path("good.json").read_text())
        record["arrays"]["weights_sha256"] = weights_sha
        write_file("good.json", record)
    else:
        write_file("good.json", record, digests=digests, **options)
    message = _refusal("good.json", capsys)
    assert message.startswith("good.json: ") and reason in message, message
    assert "/tmp" not in message and ".good.json." not in message  # the user's path, never a temporary


def test_the_edits_that_should_keep_dp_do(folder, gm):
    """The premises of the edits above: re-balanced weights and the UM mixture stay DP; the others do not."""
    record, P, W = read_file("good.json")
    assert python_int_dp(_balanced(W), "2/3", D) and not np.array_equal(_balanced(W), W)
    assert not python_int_dp(_breaking(W), "2/3", D)
    assert _float_dp(P, 2 / 3) and _float_dp(_mixed(P), 2 / 3) and np.max(np.abs(_mixed(P) - W / D)) > 1e-9
    assert not _float_dp(_broken_matrix(P, 2 / 3), 2 / 3) and not _float_dp(P, 3 / 4)


def test_a_careful_edit_with_both_digests_re_recorded_is_another_certified_mechanism(folder):
    """The digests tie the JSON to its arrays, they do not sign them: re-balanced weights whose digests are
    re-recorded are a different, still exactly DP, mechanism, and load."""
    record, P, W = read_file("good.json")
    write_file("good.json", record, weights=_balanced(W))
    assert np.array_equal(load_design("good.json").released.weights, _balanced(W))


INLINE_EDITS = {
    "n": (lambda r: r.update(n=9), "n = 9, but the arrays are 6x6"),
    "one matrix entry": (lambda r: r["matrix"][0].__setitem__(1, r["matrix"][0][1] * 1.5), "not certified"),
    "ragged weights": (lambda r: r["release"]["weights"][0].pop(), "release weights must be a 6x6 matrix of integers"),
    "float weights": (lambda r: r["release"]["weights"][0].__setitem__(0, 0.5),
                      "release weights must be a 6x6 matrix of integers"),
    "weights above 2^63": (lambda r: r["release"]["weights"][0].__setitem__(0, 2**64),
                           "release weights must be a 6x6 matrix of integers"),
    "no release weights": (lambda r: r["release"].pop("weights"), "no release weights"),
    "no matrix": (lambda r: r.pop("matrix"), "needs a 'matrix' (inline) or an 'arrays' entry"),
    "weights breaking DP": (lambda r: r["release"].update(weights=_breaking(np.array(r["release"]["weights"]))
                                                          .tolist()), "release weights are not alpha-DP"),
}


@pytest.mark.parametrize("name", INLINE_EDITS)
def test_inline_files_get_the_same_verdicts(name, tmp_path, monkeypatch, gm, capsys):
    monkeypatch.chdir(tmp_path)
    Path("inline.json").write_text(to_json(design_to_dict(gm)))
    assert main(["check", "inline.json"]) == 0
    record = json.loads(Path("inline.json").read_text())
    edit, reason = INLINE_EDITS[name]
    edit(record)
    Path("inline.json").write_text(json.dumps(record))
    message = _refusal("inline.json", capsys)
    assert message.startswith("inline.json: ") and reason in message, message


@pytest.mark.parametrize("content, reason", [("not json", "not a readable mechanism JSON"), ("[1, 2]", "an object"),
                                             ('{"n": 3}', "field 'mechanism' is missing"),
                                             ("[" * 100_000 + "]" * 100_000,
                                              "not a readable mechanism JSON (nested too deeply)"),
                                             ('{"n": ' + "9" * 5000 + "}",
                                              "not a readable mechanism JSON (an integer of more than 4300 digits)")])
def test_unreadable_files_get_one_line(content, reason, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("bad.json").write_text(content)
    assert reason in _refusal("bad.json", capsys)


def test_a_missing_file_is_one_line_from_the_loader_too(tmp_path):
    with pytest.raises(ValueError, match=r"nothing.json: no such file$"):
        load_certified(tmp_path / "nothing.json")


# ---------------------------------------------------------------- property scan = the row checkers
def _matrices():
    rng = np.random.default_rng(7)
    yield design_named("WM", 6, "0.91").matrix
    yield design_named("EM", 7, "0.8").matrix
    for n in (1, 2, 5, 12):
        P = rng.dirichlet(np.ones(n + 1), size=n + 1).T
        yield P
        yield (P + P[::-1, ::-1]) / 2  # symmetric: S holds exactly
        yield np.full((n + 1, n + 1), 1 / (n + 1))
    E = design_named("EM", 9, "0.8").matrix
    for i, j in [(0, 0), (3, 4), (4, 4), (9, 0), (5, 2)]:  # one entry nudged: each property's rows near it
        for delta in (1e-3, -1e-3, 1e-12):
            B = E.copy()
            B[i, j] += delta
            yield B


def test_the_property_scan_equals_the_defining_rows_bit_for_bit():
    from countdp.design.constraints import property_rows
    from countdp.values.properties import PROPERTIES

    for P in _matrices():
        rows = {name: property_rows(name, P.shape[0] - 1).violation(P.ravel()) for name in PROPERTIES}
        assert worst_violations(P) == rows
        assert {name: c.worst_violation for name, c in check_all(P, 0.0).items()} == rows


def test_the_matrices_above_break_and_keep_every_property():
    """The comparison is not vacuous: each property is broken by some matrix above and held by another."""
    scans = [worst_violations(P) for P in _matrices()]
    for name in ("RH", "RM", "CH", "CM", "F", "WH", "S"):
        assert any(s[name] > 0 for s in scans) and any(s[name] == 0 for s in scans), name


# ---------------------------------------------------------------- alpha the release cannot state
def test_an_alpha_below_2_to_the_minus_62_is_one_line_from_every_entry(tmp_path, capsys):
    from countdp.design.designer import design_lp
    from countdp.services.mechanism_cache import MechanismCache

    assert main(["design", "GM", "--n", "5", "--alpha", "1e-300"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "alpha = 1e-300 is below 2^-62" in err
    for call in (lambda: design_named("GM", 5, "1e-300"), lambda: design_named("WM", 5, "1e-300"),
                 lambda: design_lp(3, Fraction(1, 2**62) - Fraction(1, 2**80)),
                 lambda: MechanismCache(tmp_path).get("EM", 4, "1e-300")):
        with pytest.raises(ValueError, match=r"is below 2\^-62"):
            call()
    assert not any(tmp_path.iterdir())


def test_alpha_2_to_the_minus_62_and_long_denominators_design_and_load(tmp_path):
    """The smallest alpha allowed designs and is exactly DP; an alpha near 1/2 with a 302-digit denominator
    (which overflowed the rounding's float conversion) designs, saves and loads."""
    smallest = design_named("GM", 3, Fraction(1, 2**62))
    assert python_int_dp(smallest.released.weights, f"1/{2**62}", D)
    long = "0.5" + "0" * 300 + "1"
    design = design_named("GM", 4, long)
    save_design(design, tmp_path / "long.json")
    loaded = load_certified(tmp_path / "long.json")
    assert loaded["alpha_exact"] == f"{5 * 10**301 + 1}/{10**302}"
    assert python_int_dp(loaded["released"].weights, loaded["alpha_exact"], D)


# ---------------------------------------------------------------- files created under the user's umask
_WRITER = textwrap.dedent("""
    import os, sys
    os.umask(int(sys.argv[2], 8))
    folder = sys.argv[1]
    import pandas as pd
    from countdp.design.designer import design_named
    from countdp.services.artifact import save_design, write_csv_atomic, write_text_atomic
    from countdp.plots.canvas import save_figure, subplots
    save_design(design_named("GM", 3, "1/2"), os.path.join(folder, "m.json"))
    save_design(design_named("GM", 3, "1/2"), os.path.join(folder, "m.csv"))
    write_text_atomic(os.path.join(folder, "t.txt"), "x")
    write_csv_atomic(pd.DataFrame({"a": [1]}), os.path.join(folder, "t.csv"))
    fig, ax = subplots(figsize=(1, 1))
    save_figure(fig, [os.path.join(folder, "f.png")])
""")


@pytest.mark.parametrize("umask, mode", [("022", 0o644), ("077", 0o600), ("002", 0o664)])
def test_files_are_created_with_the_users_umask(umask, mode, tmp_path):
    done = subprocess.run([sys.executable, "-c", _WRITER, str(tmp_path), umask], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    written = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert set(written) == {"m.json", "m.npz", "m.csv", "t.txt", "t.csv", "f.png"}
    assert all(m == mode for m in written.values()), {k: oct(v) for k, v in written.items()}
