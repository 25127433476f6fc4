"""``countdp interpret``: a consumer's optimal reading of a released mechanism (pure post-processing).

A consumer with a loss ``l(i, r)`` and side information ``S`` (the true counts it considers
possible) who receives a release ``r`` answers ``r'`` with probability ``R[r', r]``, the remap
minimising its worst expected loss over ``S`` (Gupte and Sundararajan, Section 2.4.3).  The remap is
computed for the object that is actually sampled: the file's integer release weights over
``2**K``, loaded and verified by :func:`countdp.services.loader.load_certified`.  Up to
``n = 128`` (:attr:`~countdp.consumers.remap.RemapSettings.max_n`) it is the dense remap LP,
certified by weak duality in exact arithmetic on those weights; beyond, up to ``n = 10^4``
(``structured_max_n``), the structured path (:mod:`countdp.consumers.structured_remap`), certified
by weak duality over all ``(n+1)^2`` weights in floating point with its rounding bounded.  The
remap only post-processes the release, so it spends no privacy budget.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from countdp.cli.arguments import UsageError, checked
from countdp.consumers.losses import loss_matrix, parse_loss, parse_side_info, side_info_text
from countdp.progress import StageLog
from countdp.services.loader import load_certified
from countdp.values.alpha import alpha_text

DISPLAY_DIGITS = 6
"""Significant digits of the probabilities and losses in the text output (JSON keeps full floats)."""
DISPLAY_FLOOR = 1e-9
"""Remap probabilities below this are left out of the text output (JSON lists every non-zero one)."""

EXACT_METHOD = "weak duality in exact arithmetic on the release weights"
"""How the dense LP's remap (``n <= 128``) is certified."""
FLOAT_METHOD = "weak duality over every release weight in floating point, its rounding bounded"
"""How the structured path's remap (``128 < n <= 10^4``) is certified."""

DESCRIPTION = (
    "Print a consumer's optimal remap of a released mechanism: for each released count r, the "
    "distribution of the answer r' that minimises the consumer's worst expected loss over its side "
    "information (G-S Section 2.4.3), computed for the file's integer release weights (the object "
    "that is sampled) and certified by weak duality: exactly up to n = 128, and up to n = 10,000 from the "
    "mechanism's structure, over every weight in floating point with the rounding bounded.  This is "
    "post-processing of a release: it needs no privacy budget and touches no ledger.")


def register(sub) -> None:
    """Add the ``interpret`` command to the ``countdp`` subparsers ``sub``."""
    p = sub.add_parser("interpret", help="a consumer's optimal remap of a released mechanism "
                                         "(post-processing: no privacy budget)", description=DESCRIPTION)
    p.set_defaults(handler=_interpret)
    p.add_argument("file", type=Path, help="a mechanism file written by `countdp design ... --out F`")
    p.add_argument("--loss", type=lambda text: checked(parse_loss, text), required=True,
                   help="the consumer's loss l(i, r): L1 = |i-r|, L2 = (i-r)^2, L0 = [r != i], "
                        "L0d:D = [|i-r| > D]")
    p.add_argument("--side-info", default=None,
                   help="the true counts the consumer considers possible: 3..7 (inclusive), 1,4,5, or a "
                        "mix such as 0,3..5 (default: all of 0..n)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _load(path: Path) -> dict:
    try:
        return load_certified(path)
    except ValueError as exc:  # the loader's one line already names the path
        raise UsageError(str(exc)) from None


def _refuse_beyond(n: int) -> None:
    """A :class:`UsageError` (one line) where ``n`` is past the structured path's largest size, before
    anything of size ``n`` is built (the side information's ``n + 1`` counts included)."""
    from countdp.consumers.remap import RemapSettings  # lazy: scipy
    from countdp.consumers.structured_remap import memory_estimate  # lazy: scipy, HiGHS

    settings = RemapSettings()
    if n > settings.structured_max_n:
        raise UsageError(f"n = {n:,} is too large to interpret (at most {settings.structured_max_n:,}: every pass "
                         f"reads all (n+1)^2 = {(n + 1) ** 2:.2g} release weights, so the time grows as n^2; "
                         f"its memory would stay under about {memory_estimate(n, settings) / 2**20:,.0f} MiB)")


def _solve(record: dict, loss_spec, side: np.ndarray):
    """The certified optimal remap of the release weights: the dense LP up to ``max_n``, the structured
    path up to ``structured_max_n`` (beyond it the caller has refused, :func:`_refuse_beyond`; the LP
    stack is imported only here)."""
    from countdp.consumers.remap import CertificateError, RemapSettings, optimal_release_remap  # lazy: scipy
    from countdp.consumers.structured_remap import structured_remap  # lazy: scipy, HiGHS

    settings, n = RemapSettings(), record["n"]
    try:
        if n <= settings.max_n:
            return optimal_release_remap(record["released"], loss_matrix(loss_spec, n), side, settings)
        return structured_remap(record["released"], loss_spec, side, settings)
    except CertificateError as exc:
        raise UsageError(f"the remap could not be certified: {exc}") from None
    except ValueError as exc:  # a mechanism the structured path cannot read (no float blocks of its weights)
        raise UsageError(f"the remap cannot be computed: {exc}") from None


def _distributions(remap, floor: float) -> list[dict[int, float]]:
    """Per release ``r``: ``{r': probability}`` over the answers of release ``r`` above ``floor`` (a dense
    remap's column, or a structured remap's answer table)."""
    table = getattr(remap, "table", None)
    if table is None:
        R = remap.remap
        return [{int(k): float(R[k, r]) for k in np.flatnonzero(R[:, r] > floor)} for r in range(R.shape[1])]
    probs, out = table.probabilities, []
    for start, stop in zip(table.indptr[:-1].tolist(), table.indptr[1:].tolist(), strict=True):
        out.append({int(a): float(p) for a, p in zip(table.answers[start:stop].tolist(), probs[start:stop].tolist(),
                                                       strict=True) if p > floor})
    return out


def _result(path: Path, record: dict, loss_spec, side: np.ndarray, remap) -> dict:
    certificate = remap.certificate
    return {"file": str(path), "mechanism": record["mechanism"], "n": record["n"],
            "alpha": alpha_text(record["released"].alpha), "released_denominator": record["released"].denominator,
            "loss": str(loss_spec), "side_info": side_info_text(side), "privacy_budget_used": 0,
            "remap": {str(r): {str(k): p for k, p in dist.items()}
                      for r, dist in enumerate(_distributions(remap, 0.0))},
            "worst_case_loss": remap.worst_loss, "attained_by": [int(i) for i in remap.attained],
            "per_input_loss": [float(v) for v in remap.per_input],
            "certificate": {"exact": certificate.exact, "primal": str(certificate.primal),
                            "dual": str(certificate.dual), "gap": float(certificate.gap),
                            "method": EXACT_METHOD if certificate.exact else FLOAT_METHOD}}


def _text(result: dict, remap) -> str:
    g = DISPLAY_DIGITS
    lines = [f"optimal remap of {result['file']} ({result['mechanism']}, n = {result['n']}, alpha = {result['alpha']}; "
             f"the release weights / {result['released_denominator']})",
             f"consumer: loss {result['loss']}, side information {result['side_info']}",
             "post-processing of the release: no privacy budget is used",
             f"release r -> answer r' with probability (entries below {DISPLAY_FLOOR:g} not shown)"]
    for r, dist in enumerate(_distributions(remap, DISPLAY_FLOOR)):
        lines.append(f"  {r} -> " + ", ".join(f"{k} ({p:.{g}g})" for k, p in dist.items()))
    attained = ", ".join(str(i) for i in result["attained_by"])
    lines.append(f"worst-case expected loss {result['worst_case_loss']:.{g}g}, attained at true count(s) {attained}")
    lines.append(f"certified: {result['certificate']['method']}, gap {result['certificate']['gap']:.2g}")
    return "\n".join(lines)


def _interpret(args: argparse.Namespace) -> int:
    record = _load(args.file)
    n = record["n"]
    _refuse_beyond(n)
    try:
        side = np.arange(n + 1) if args.side_info is None else parse_side_info(args.side_info, n)
    except ValueError as exc:
        raise UsageError(f"--side-info: {exc}") from None
    with StageLog("countdp"):  # what a remap past a second is doing, on stderr
        remap = _solve(record, args.loss, side)
    result = _result(args.file, record, args.loss, side, remap)
    print(json.dumps(result, indent=2) if args.json else _text(result, remap))
    return 0
