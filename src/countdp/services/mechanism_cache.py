"""A folder of designed mechanisms, one certified mechanism file per (mechanism, objective, n, alpha).

``MechanismCache(root).get("WM", 12, "9/10")`` loads ``root/WM/L0/n=12/alpha=9_10.json`` (with
its arrays in ``alpha=9_10.npz`` beside it) if it is there, verified by
:func:`countdp.services.artifact.load_design` as every mechanism file is (a file that fails is
an error naming it), and otherwise designs the mechanism and saves it atomically.

GM, EM and UM (for group sizes above ``matrix_max_n``, by default all) are held as structure
(:mod:`countdp.structural`): a table shared by a whole range of sizes, a few hundred bytes on
disk (``root/GM/structural-v1/alpha=9_10/K=124/sizes=lo-hi.json``, its parameters and the
digest of its tables; ``v1`` the construction's version, so another version's records are never
read as this one's) instead of ``16 (n+1)^2`` bytes per size.  They sample exactly the distribution of
their matrix form (:func:`countdp.design.designer.design_named` releases the same weights).  A
stored record is compared with the table this countdp builds, so a stale or altered one is
refused by name.  WH under L0 is served by GM's tables from the size where GM is proven an optimum
of its LP (:data:`countdp.structural.catalogue.STAND_INS`), and designed as a matrix below it.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np

from countdp.design.designer import design_named
from countdp.design.forms import FORMS, spread_sizes, structural_design
from countdp.services.artifact import load_design, save_design
from countdp.services.atomic import write_bytes_atomic, write_text_atomic
from countdp.structural.catalogue import (
    NARROW_MAX_N,
    SPREADS,
    GroupMechanism,
    served_as_structure,
    stand_in,
    stand_in_lower_bound,
    weakly_honest_from,
)
from countdp.structural.form import CONSTRUCTION
from countdp.structural.template import stored_spread
from countdp.values.alpha import exact_alpha

MATRIX_MAX_N = 0
"""Largest group size whose GM, EM or UM the cache stores as a matrix (above it: as structure)."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/countdp/mechanisms`` (``~/.cache/countdp/mechanisms`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "countdp" / "mechanisms"


class MechanismCache:
    """Designs on first use, loads afterwards; ``hits`` and ``designed`` list the sizes served each way.

    ``store=False`` (a dry run) designs what is missing without writing anything.
    """

    def __init__(self, root: str | os.PathLike | None = None, matrix_max_n: int = MATRIX_MAX_N,
                 store: bool = True) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self.matrix_max_n, self.store = int(matrix_max_n), store
        self.hits: list[int] = []
        self.designed: list[int] = []
        self._tables: dict[tuple[str, object], list] = {}

    def path(self, mechanism: str, n: int, alpha: object, objective: str = "L0") -> Path:
        a = exact_alpha(alpha)
        slug = objective.replace(":", "")
        return self.root / mechanism / slug / f"n={int(n)}" / f"alpha={a.numerator}_{a.denominator}.json"

    def structural_path(self, design: GroupMechanism) -> Path:
        form = design.released
        a, (lo, hi) = form.alpha, form.sizes
        return (self.root / form.mechanism / f"structural-v{CONSTRUCTION}" / f"alpha={a.numerator}_{a.denominator}"
                / f"K={form.K}" / f"sizes={lo}-{hi}.json")

    def get(self, mechanism: str, n: int, alpha: object, objective: str = "L0", **design_options):
        served = None if design_options else self.as_structure(mechanism, int(n), alpha, objective)
        if served is not None:
            return served
        path = self.path(mechanism, n, alpha, objective)
        if path.is_file():
            design = load_design(path)
            if (design.mechanism, design.n, design.alpha_exact, design.objective) != \
                    (mechanism, int(n), exact_alpha(alpha), objective):
                raise ValueError(f"{path}: holds {design.mechanism} n={design.n} alpha={design.alpha_exact} "
                                 f"{design.objective}, not what its path names; remove it to design again")
            self.hits.append(int(n))
            return design
        design = design_named(mechanism, n, alpha, objective=objective, **design_options)
        if self.store:
            save_design(design, path)
        self.designed.append(int(n))
        return design

    def matrix_sizes(self, mechanism: str, sizes: np.ndarray, alpha: object = None,
                     objective: str = "L0") -> np.ndarray:
        """The sizes among ``sizes`` that :meth:`get` serves as matrices (the others as structure; for a
        stand-in, the sizes below :func:`~countdp.structural.catalogue.stand_in_lower_bound`)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        if mechanism in SPREADS:  # a template design: matrices up to NARROW_MAX_N, or for another objective
            return sizes if objective != "L0" else sizes[sizes <= max(self.matrix_max_n, NARROW_MAX_N)]
        if mechanism in FORMS:
            return sizes[sizes <= self.matrix_max_n]
        if stand_in(mechanism, objective) is None or alpha is None:
            return sizes
        a = exact_alpha(alpha)
        matrix = (sizes <= self.matrix_max_n) | (sizes < stand_in_lower_bound(mechanism, a))
        for index in np.flatnonzero(~matrix).tolist():  # the exact bound is at most a size or two higher
            if self.as_structure(mechanism, int(sizes[index]), a, objective) is not None:
                break
            matrix[index] = True
        return sizes[matrix]

    def as_structure(self, mechanism: str, n: int, alpha: object, objective: str = "L0") -> GroupMechanism | None:
        """Size ``n``'s mechanism as structure, or ``None`` when it is served as a matrix: GM, EM and UM
        above ``matrix_max_n``; a stand-in (WH under L0) where its structural optimum is proven."""
        if n <= self.matrix_max_n:
            return None
        if mechanism in FORMS:
            return self.structural(mechanism, n, alpha, objective) if served_as_structure(mechanism, n, objective) \
                else None
        form_name = stand_in(mechanism, objective)
        if form_name is None or n < stand_in_lower_bound(mechanism, exact_alpha(alpha)):
            return None
        design = self.structural(form_name, n, alpha, objective)
        if n < weakly_honest_from(design.released):
            return None
        return GroupMechanism(mechanism, n, objective, design.released)

    def get_many(self, mechanism: str, sizes: np.ndarray, alpha: object, objective: str = "L0") -> list:
        """:meth:`get` for every size of an increasing array; structural sizes take one pass per table."""
        a = exact_alpha(alpha)
        sizes = np.asarray(sizes, dtype=np.int64)
        out, start = [], 0
        while start < sizes.size:
            n = int(sizes[start])
            first = self.as_structure(mechanism, n, a, objective)
            if first is None:
                out.append(self.get(mechanism, n, a, objective))
                start += 1
                continue
            form = first.released
            end = int(np.searchsorted(sizes, form.sizes[1], side="right"))
            out.append(first)
            out += [GroupMechanism(mechanism, m, objective, form) for m in sizes[start + 1:end].tolist()]
            self.hits += sizes[start + 1:end].tolist()
            start = end
        return out

    def structural(self, mechanism: str, n: int, alpha: object, objective: str = "L0") -> GroupMechanism:
        """GM, EM or UM for size ``n`` as structure: from a table already built for its size range, else
        built, checked against the stored record (or stored).  The design's ``released`` is the
        range's table (its own ``n`` is the size it was built for; ``design.n`` is the size served)."""
        key = (mechanism, exact_alpha(alpha))
        for form in self._tables.get(key, []):  # a stand-in's sizes come here under its form's name
            if form.sizes[0] <= n <= form.sizes[1]:
                self.hits.append(n)
                return GroupMechanism(mechanism, n, objective, form)
        stored = self.stored_spread(mechanism, n, alpha) if mechanism in SPREADS else None
        if stored is not None:
            self.hits.append(n)
            self._tables.setdefault(key, []).append(stored)
            return GroupMechanism(mechanism, n, objective, stored)
        design = structural_design(mechanism, n, alpha)
        path = self.structural_path(design)
        record = design.released.describe()
        if path.is_file():
            try:
                stored = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: not a structural mechanism record ({exc})") from None
            if stored != record:
                raise ValueError(f"{path}: differs from the table this countdp builds for {mechanism} "
                                 f"alpha={alpha} sizes {design.released.sizes}; remove it to build again")
            self.hits.append(n)
        else:
            if self.store:
                if mechanism in SPREADS:  # its tables first: a record is never without them
                    buffer = io.BytesIO()
                    np.savez_compressed(buffer, **design.released.table_arrays())
                    write_bytes_atomic(path.with_suffix(".npz"), buffer.getvalue())
                write_text_atomic(path, json.dumps(record, indent=1) + "\n")
            self.designed.append(n)
        self._tables.setdefault(key, []).append(design.released)
        return GroupMechanism(mechanism, n, objective, design.released)


    def stored_spread(self, mechanism: str, n: int, alpha: object):
        """A template design's table for size ``n`` from the cache (its record and ``.npz`` of tables),
        re-certified and compared with its record; ``None`` when not stored (it is then solved)."""
        a = exact_alpha(alpha)
        lo, hi = spread_sizes(n, a)
        path = (self.root / mechanism / f"structural-v{CONSTRUCTION}" / f"alpha={a.numerator}_{a.denominator}"
                / "K=62" / f"sizes={lo}-{hi}.json")
        arrays = path.with_suffix(".npz")
        if not (path.is_file() and arrays.is_file()):
            return None
        try:
            record = json.loads(path.read_text())
            with np.load(arrays) as tables:
                form = stored_spread(record, tables)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a template design's record and tables ({exc}); remove it to build again") \
                from None
        if form.describe() != record or not form.certify().holds:
            raise ValueError(f"{path}: its tables do not match its record or are not certified; remove it to build "
                             "again")
        return form.for_size(n)


__all__ = ["MATRIX_MAX_N", "MechanismCache", "default_cache_dir"]
