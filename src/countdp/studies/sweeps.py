"""Design sweeps: one certified artifact per ``n`` for a (mechanism, objective, alpha).

The workflow's design rules call :func:`design_sweep`; each design is saved (certified) as
JSON by :func:`countdp.mechanisms.artifact.save_design`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from countdp.design.designer import design_named
from countdp.mechanisms.artifact import save_design, write_text_atomic
from countdp.privacy.alpha import exact_alpha
from countdp.studies.naming import alpha_spelling, lp_properties, parse_alpha
from countdp.studies.records import objective_from_slug

CLOSED_FORM_MECHANISMS = ("GM", "EM", "UM")


def design_artifact(mechanism: str, objective: str, n: int, alpha: str, solver: str, path: str | Path,
                    alpha_exact: str | None = None) -> str:
    """Design one mechanism named by its artifact path's parts and save it (certified) as JSON.

    ``solver`` is ``"closed-form"`` for GM/EM/UM, else ``"NAME/method"``.  ``alpha`` must be
    spelled canonically (:func:`alpha_spelling`) so one parameter set has exactly one path;
    ``alpha_exact`` is the exact value it stands for (``"10/11"``; default: the decimal
    ``alpha`` itself), and must round to it.  Returns a one-line summary (for the job's log).
    """
    a = parse_alpha(alpha)
    if alpha_spelling(a) != alpha:
        raise ValueError(f"alpha={alpha!r} is not canonical; spell it {alpha_spelling(a)!r}")
    exact = exact_alpha(alpha if alpha_exact is None else alpha_exact)
    if float(exact) != a:
        raise ValueError(f"alpha_exact={alpha_exact!r} does not round to alpha={alpha!r}")
    obj = objective_from_slug(objective)
    props = lp_properties(mechanism)
    if mechanism in CLOSED_FORM_MECHANISMS:
        design = design_named(mechanism, n, exact, objective=obj)
    else:
        name, method = solver.split("/")
        if props is None:
            design = design_named(mechanism, n, exact, objective=obj, solver=name, method=method)
        else:
            design = design_named("LP", n, exact, objective=obj, properties=props, solver=name, method=method)
            design.mechanism = mechanism
    if not design.certificate.certified:
        raise RuntimeError(f"{path}: design could not be certified alpha-DP")
    save_design(design, path)
    cert, rounding = design.certificate, design.released.certificate
    return (f"{path}: {mechanism} {obj} n={n} alpha={exact} solver={design.solver}/{design.method} "
            f"objective={design.objective_value:.12g} time={design.solve_time:.3f}s "
            f"dp_violation_before={cert.violation_before:.2e} repair_lambda={cert.repair_lambda:.2e} "
            f"rounding_lambda={rounding.rounding_lambda:.2e} exact_dp={rounding.holds}")


def design_sweep(mechanism: str, objective: str, alpha: str, ns: Sequence[int], solver: str,
                 paths: Sequence[str | Path], log: str | Path, alpha_exact: str | None = None) -> None:
    """Design one mechanism per ``n`` in ``ns`` (same mechanism, objective and alpha), each saved to
    the matching entry of ``paths`` exactly as :func:`design_artifact` saves it (``alpha_exact``:
    the exact value the config gave); the one-line summaries go to ``log``, one per design, in
    the order of ``ns``.
    """
    ns, paths = list(ns), list(paths)
    if len(ns) != len(paths):
        raise ValueError(f"design_sweep: {len(ns)} values of n for {len(paths)} paths")
    summaries = [design_artifact(mechanism, objective, int(n), alpha, solver, path, alpha_exact)
                 for n, path in zip(ns, paths, strict=True)]
    write_text_atomic(log, "".join(line + "\n" for line in summaries))
