"""Empirical privacy audit of every table-release form, through the engine ``countdp release`` runs.

For each form (:mod:`countdp.release.empirical_audit`) it releases ``--samples`` tables' worth of
neighbouring data (10^6 releases per dataset by default; ``--invariant total`` has one partition
per table, so ``--total-tables`` of its ``--total-samples`` are whole releases, default 2,000 of 10^6,
and the rest repeat the engine's draw on the prepared table), with the CLI's own ``mechanism_for``
(``countdp.cli.release_command._mechanisms``: the mechanism file, the mechanism cache in a temporary
folder, or the levels chain), and prints one row per form: the declared epsilon (-ln alpha, the
sum over the count columns, or the conditioned release's computed guarantee), the point estimate,
the lower confidence bound epsilon_LB (family-wise delta = ``--delta``), the releases per dataset
and the seconds.  A form passes when epsilon_LB <= declared.  ``--planted`` adds the planted
defects (noise drawn at alpha^2, cumulative table shifted by one column), which must FAIL.

The conditioned release (``--invariant-by``) pads every partition's draw to a deadline, about
2-4 ms a partition on a loaded 2-core machine, so 10^6 partitions per dataset take hours: use
``--invariant-samples`` to shorten it (the test suite uses a few thousand).

    .venv/bin/python benchmarks/audit_release_forms.py --planted
    .venv/bin/python benchmarks/audit_release_forms.py --forms invariant-by --invariant-samples 100000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from countdp import design_named
from countdp.release import empirical_audit as ea
from countdp.release.run import mechanisms
from countdp.services.artifact import load_design, save_design

ALPHA = Fraction(2, 3)
LEVELS = (Fraction(1, 2), Fraction(2, 3), Fraction(9, 10))
FORMS = ("file", "sizes", "columns", "levels", "invariant-by", "invariant-total")


def cli(design=None):
    """The CLI's ``mechanism_for`` for a request (a mechanism file's design, the cache, or levels chains)."""
    return lambda request: mechanisms(request, design, False)


def cases(folder: Path, args: argparse.Namespace) -> list:
    """``(label, form, mechanisms, samples, planted)`` for every form asked for, then the planted defects."""
    path = folder / "WM-n6.json"
    save_design(design_named("WM", 6, ALPHA), path)
    design = load_design(path)
    m = args.samples
    chosen = {
        "file": [(ea.file_form(path, 6, ALPHA), cli(design), m)],
        "sizes": [(ea.sizes_form(name, ALPHA), cli(), m) for name in ("EM", "GM", "WM", "WH")],
        "columns": [(ea.columns_form("GM", ALPHA, 6, (2, 3)), cli(), m)],
        "levels": [(ea.levels_form(LEVELS, 8), cli(), m)],
        "invariant-by": [(ea.invariant_form("EM", ALPHA, (3, 5), (2, 1)), cli(), args.invariant_samples)],
        "invariant-total": [(ea.invariant_form("EM", ALPHA, (3, 5), (2, 1), by=False), cli(), args.total_samples)],
    }
    out = [(form.name, form, mechanisms, samples, False) for name in args.forms.split(",")
           for form, mechanisms, samples in chosen[name]]
    if args.planted:
        squared = design_named("WM", 6, ALPHA**2)
        form = ea.file_form(path, 6, ALPHA)
        out += [(f"{form.name} [noise at alpha^2]", form, lambda request: (lambda k, n: squared), m, True),
                (f"{form.name} [column c-1]", form, lambda request: (lambda k, n: ea.ShiftedDesign(design, 1)), m,
                 True),
                (f"{form.name} [column c+1]", form, lambda request: (lambda k, n: ea.ShiftedDesign(design, -1)), m,
                 True)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="releases per dataset (default 10^6)")
    parser.add_argument("--invariant-samples", type=int, default=1_000_000,
                        help="partitions per dataset (--invariant-by)")
    parser.add_argument("--total-samples", type=int, default=1_000_000,
                        help="releases per dataset (--invariant total, one partition per table)")
    parser.add_argument("--total-tables", type=int, default=2_000,
                        help="of those, whole tables written and read back (the rest: the engine's draw repeated)")
    parser.add_argument("--forms", default=",".join(FORMS), help=f"comma-separated, of {','.join(FORMS)}")
    parser.add_argument("--planted", action="store_true", help="add the planted defects (they must fail)")
    parser.add_argument("--delta", type=float, default=ea.DEFAULT_DELTA, help="family-wise false-positive rate")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    print(f"# empirical audit through the release engine: delta = {args.delta:g}, seed = {args.seed}, "
          f"load = {os.getloadavg()[0]:.1f}")
    print(f"{'form':<36} {'declared':>9} {'estimate':>9} {'eps_LB':>8} {'samples':>9} {'seconds':>8}  verdict")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for label, form, mechanisms, samples, planted in cases(Path(tmp), args):
            result = ea.audit_form(form, mechanisms, Path(tmp), samples, args.seed, args.delta, args.total_tables)
            verdict = "pass" if result.passed else "FAIL"
            failures += result.passed == planted
            b = result.bound
            print(f"{label:<36} {result.declared:9.4f} {b.estimate:9.4f} {b.lower_bound:8.4f} {b.samples:9d} "
                  f"{result.seconds:8.1f}  {verdict}  ({b.worst})", flush=True)
    print(f"# load = {os.getloadavg()[0]:.1f}; {'all as expected' if not failures else f'{failures} unexpected'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
