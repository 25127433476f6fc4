"""Design sweeps: one certified artifact per ``n`` for a (mechanism, objective, alpha), resumable.

The workflow's design rule calls :func:`design_sweep`.  Each design is saved (certified, JSON +
npz: :func:`countdp.services.artifact.save_design`) and its line logged the moment it is done,
so a sweep stopped part-way keeps every design it finished.  A design saved with a
``code_version`` carries a stamp of what made it (``extra["made_by"]``: that version and the
solver setting); a later sweep reuses the file, instead of designing it again, when the stamp,
the mechanism, objective, ``n`` and exact alpha all match and the loader verifies it
(:func:`countdp.services.loader.load_certified`: the npz's digest, both certificates).

A solver setting is ``"closed-form"`` (GM, EM, UM) or ``"NAME/method"``: the design planner
chooses the path exactly as :func:`countdp.design.designer.design_named` does by default (closed
forms, the template strategies, a template design's spread), and ``NAME`` (HIGHS or CLARABEL) with
``method`` (``auto``: the planner's choice by size) is only the backend of the general LP path.
``"NAME/method/plain"`` solves every LP with that solver and method alone, the paper's plain LP.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import TextIO

from countdp.design.designer import Design, check_solver, design_named
from countdp.services.artifact import load_certified, save_design
from countdp.studies.naming import alpha_spelling, lp_properties, parse_alpha
from countdp.studies.records import objective_from_slug
from countdp.values.alpha import alpha_text, exact_alpha
from countdp.values.catalogue import CLOSED_FORM_MECHANISMS

CLOSED_FORM_SETTING = "closed-form"
PLAIN = "plain"
"""The third part of a solver setting that asks for the plain LP (no planner shortcuts)."""


def lp_options(solver: str) -> dict:
    """The :func:`countdp.design.designer.design_named` options of an LP solver setting (module docstring)."""
    name, method, *mode = solver.split("/")
    if mode not in ([], [PLAIN]):
        raise ValueError(f"solver setting {solver!r}: expected NAME/method or NAME/method/{PLAIN}")
    if mode:  # the plain LP: an explicit method, honoured alone
        name, method = check_solver(name, None if method == "auto" else method)
        return {"solver": name, "method": method}
    name, chosen = check_solver(name, None if method == "auto" else method)
    return {"solver": name, "shortcuts": True, **({} if method == "auto" else {"method": chosen})}


def _design(mechanism: str, objective: str, n: int, exact: Fraction, solver: str) -> Design:
    """The design named by an artifact path's parts, by the solver setting ``solver``."""
    if mechanism in CLOSED_FORM_MECHANISMS:
        return design_named(mechanism, n, exact, objective=objective)
    props = lp_properties(mechanism)
    if props is None:
        return design_named(mechanism, n, exact, objective=objective, **lp_options(solver))
    design = design_named("LP", n, exact, objective=objective, properties=props, **lp_options(solver))
    design.mechanism = mechanism
    return design


def answered_by(design: Design) -> str:
    """The strategy whose answer the design is (the last one the planner did not skip), its method
    for a closed form or a spread."""
    tried = [a["strategy"] for a in design.extra.get("attempted", ()) if a.get("outcome") != "skipped"]
    return tried[-1] if tried else design.method


def checked_alpha(alpha: str, alpha_exact: str | None) -> Fraction:
    """The exact alpha of a canonical path spelling ``alpha`` (``alpha_exact``: the value the config
    gave, default the decimal itself), or ``ValueError``."""
    a = parse_alpha(alpha)
    if alpha_spelling(a) != alpha:
        raise ValueError(f"alpha={alpha!r} is not canonical; spell it {alpha_spelling(a)!r}")
    exact = exact_alpha(alpha if alpha_exact is None else alpha_exact)
    if float(exact) != a:
        raise ValueError(f"alpha_exact={alpha_exact!r} does not round to alpha={alpha!r}")
    return exact


def design_artifact(mechanism: str, objective: str, n: int, alpha: str, solver: str, path: str | Path,
                    alpha_exact: str | None = None, code_version: str | None = None) -> str:
    """Design one mechanism named by its artifact path's parts and save it (certified) as JSON.

    ``solver``: a solver setting (module docstring).  ``alpha`` must be spelled canonically
    (:func:`alpha_spelling`) so one parameter set has exactly one path; ``alpha_exact`` is the exact
    value it stands for (``"10/11"``; default: the decimal ``alpha`` itself), and must round to it.
    ``code_version``: the version of the code that designs, stamped on the file with ``solver``
    (what :func:`design_sweep` checks before reusing it); ``None``: no stamp.  Returns a one-line
    summary (for the job's log): the path the planner took, the solve's time and ``time``, the
    whole of the design's work (design, certificates, save).
    """
    began = time.perf_counter()
    exact = checked_alpha(alpha, alpha_exact)
    obj = objective_from_slug(objective)
    design = _design(mechanism, obj, n, exact, solver)
    if not design.certificate.certified:
        raise RuntimeError(f"{path}: design could not be certified alpha-DP")
    if code_version is not None:
        design.extra["made_by"] = made_by(code_version, solver)
    save_design(design, path)
    cert, rounding = design.certificate, design.released.certificate
    return (f"{path}: {mechanism} {obj} n={n} alpha={exact} solver={design.solver}/{design.method} "
            f"path={answered_by(design)} objective={design.objective_value:.12g} solve={design.solve_time:.3f}s "
            f"time={time.perf_counter() - began:.3f}s dp_violation_before={cert.violation_before:.2e} "
            f"repair_lambda={cert.repair_lambda:.2e} rounding_lambda={rounding.rounding_lambda:.2e} "
            f"exact_dp={rounding.holds}")


def made_by(code_version: str, solver: str) -> dict:
    """The stamp of a sweep's design: the code version and the solver setting that made it."""
    return {"code_version": code_version, "solver": solver}


def reuse_refused(path: str | Path, mechanism: str, objective: str, n: int, exact: Fraction,
                  stamp: dict) -> str | None:
    """``None`` when the artifact at ``path`` is this design, complete and verified (the loader's
    checks), made by ``stamp``; else why not (for the log)."""
    if not Path(path).is_file():
        return "no file"
    try:
        record = load_certified(path)
    except ValueError as exc:
        return f"not usable ({exc})"
    found = (record["mechanism"], record["objective"], record["n"], record["alpha_exact"])
    if found != (mechanism, objective_from_slug(objective), n, alpha_text(exact)):
        return f"another design ({found})"
    if record.get("extra", {}).get("made_by") != stamp:
        return f"made by {record.get('extra', {}).get('made_by')}, not {stamp}"
    return None


def design_sweep(mechanism: str, objective: str, alpha: str, ns: Sequence[int], solver: str,
                 paths: Sequence[str | Path], log: str | Path, alpha_exact: str | None = None,
                 code_version: str | None = None, progress: TextIO | None = None,
                 stages: Callable[[str], contextlib.AbstractContextManager] | None = None) -> None:
    """Design one mechanism per ``n`` in ``ns`` (same mechanism, objective and alpha), each saved to
    the matching entry of ``paths`` exactly as :func:`design_artifact` saves it (``alpha_exact``:
    the exact value the config gave), in the order of ``ns``.

    Each design's one-line summary goes to ``log`` (and to ``progress``, e.g. ``sys.stderr``) as
    soon as the design is saved, then a last line with the sweep's totals.  ``stages(label)``, if
    given, is entered around each design made (not one reused), ``label`` naming it (``"WM L2 n=1024
    alpha=0.95"``): the design job attaches :class:`countdp.progress.StageLog` with it, so a design
    past a second shows its stages and solver progress on stderr, a quicker one nothing.  With a
    ``code_version``, a design already saved by one with the same stamp is reused (module
    docstring), so a sweep stopped part-way, or given one more ``n``, designs only what is missing.
    """
    ns, paths = [int(n) for n in ns], list(paths)
    if len(ns) != len(paths):
        raise ValueError(f"design_sweep: {len(ns)} values of n for {len(paths)} paths")
    exact = checked_alpha(alpha, alpha_exact)
    stamp = None if code_version is None else made_by(code_version, solver)
    began, reused = time.perf_counter(), 0
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        def say(line: str) -> None:
            for stream in (out, progress) if progress is not None else (out,):
                stream.write(line + "\n")
                stream.flush()

        for n, path in zip(ns, paths, strict=True):
            start = time.perf_counter()
            why = "no stamp asked for" if stamp is None else reuse_refused(path, mechanism, objective, n, exact, stamp)
            if why is None:
                reused += 1
                say(f"{path}: reused (same code version, solver and alpha; verified) "
                    f"time={time.perf_counter() - start:.3f}s")
                continue
            with stages(f"{mechanism} {objective} n={n} alpha={alpha}") if stages else contextlib.nullcontext():
                line = design_artifact(mechanism, objective, n, alpha, solver, path, alpha_exact, code_version)
            say(line if why in ("no file", "no stamp asked for") else f"{line} (designed again: {why})")
        say(f"sweep {mechanism} {objective} alpha={alpha}: {len(ns)} designs, {len(ns) - reused} designed, "
            f"{reused} reused, time={time.perf_counter() - began:.3f}s")
