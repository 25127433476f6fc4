"""Job of the design_sweep rule: the sweep's designs, then its manifest.

The manifest is the rule's output (Snakemake cannot name a wildcard-dependent list of files as
outputs): it says which designs the sweep wrote, with each design's JSON and the npz its arrays
are in, and is written last, so it exists only when every design it names does.  The designs
themselves are saved one by one, each stamped with the design code's version and the solver
setting, so a sweep cut short, or rerun for one more n, designs only what it lacks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from engine_refusal import DesignRefused, in_config_words

from countdp.progress import StageLog
from countdp.services.arrays import arrays_path
from countdp.services.atomic import write_text_atomic
from countdp.studies.sweeps import design_sweep


class SweepRefused(DesignRefused):
    """A design of the sweep the engine refused, in the config's words (:mod:`engine_refusal`)."""


def sweep(mechanism: str, objective: str, alpha: str, ns: Sequence[int], solver: str, artifacts: Sequence[str],
          log: str, alpha_exact: str, manifest: str, code_version: str,
          keys: Sequence[tuple[str, object]] = ()) -> None:
    """Design and save every n of one sweep (:func:`countdp.studies.sweeps.design_sweep`: one
    certified artifact per n, each design's line in ``log`` and on stderr as it is saved; a design
    saved by the same ``code_version`` and solver setting is reused), then write its ``manifest``.
    A design past a second also shows its stages on stderr, each line labelled with the design
    (:class:`countdp.progress.StageLog`, as ``countdp design`` shows them); a quicker one nothing.
    ``keys``: the config keys asking for the sweep's designs, named if the engine refuses one
    (:class:`SweepRefused`, :func:`engine_refusal.in_config_words`)."""
    with in_config_words(keys, lambda refused: f"{mechanism} {objective} n={refused.n} alpha={alpha}",
                         error=SweepRefused):
        design_sweep(mechanism, objective, alpha, ns, solver, artifacts, log, alpha_exact, code_version=code_version,
                     progress=sys.stderr, stages=lambda label: StageLog("countdp", sys.stderr, label=label))
    write_sweep_manifest(manifest, mechanism, objective, alpha, alpha_exact, solver, ns, artifacts)


def write_sweep_manifest(manifest: str, mechanism: str, objective: str, alpha: str, alpha_exact: str, solver: str,
                         ns: Sequence[int], artifacts: Sequence[str]) -> None:
    """Write ``manifest`` (JSON) for the sweep that saved ``artifacts`` (one JSON per n of ``ns``).

    Refuses (FileNotFoundError) if a design's JSON or npz is missing, so a manifest never names
    a file that is not there.  Holds no timings or digests: rerunning a sweep rewrites the same
    manifest, and the artifacts' content is pinned by their own JSON (the npz's SHA-256).
    """
    ns, artifacts = [int(n) for n in ns], [str(p) for p in artifacts]
    if len(ns) != len(artifacts):
        raise ValueError(f"{manifest}: {len(ns)} values of n for {len(artifacts)} artifacts")
    designs = [{"n": n, "json": path, "npz": arrays_path(path).as_posix()}
               for n, path in zip(ns, artifacts, strict=True)]
    missing = [f for d in designs for f in (d["json"], d["npz"]) if not Path(f).is_file()]
    if missing:
        raise FileNotFoundError(f"{manifest}: the sweep did not write {missing}")
    record = {"mechanism": mechanism, "objective": objective, "alpha": alpha, "alpha_exact": alpha_exact,
              "solver": solver, "designs": designs}
    write_text_atomic(manifest, json.dumps(record, indent=1) + "\n")
