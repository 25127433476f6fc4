"""A folder of designed mechanisms, one certified mechanism file per (mechanism, objective, n, alpha).

``MechanismCache(root).get("EM", 12, "9/10")`` loads ``root/EM/L0/n=12/alpha=9_10.json`` (with
its arrays in ``alpha=9_10.npz`` beside it) if it is there, verified by
:func:`countdp.mechanisms.artifact.load_design` as every mechanism file is (a file that fails is
an error naming it), and otherwise designs the mechanism and saves it atomically.
"""

from __future__ import annotations

import os
from pathlib import Path

from countdp.design.designer import design_named
from countdp.mechanisms.artifact import load_design, save_design
from countdp.privacy.alpha import exact_alpha


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/countdp/mechanisms`` (``~/.cache/countdp/mechanisms`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "countdp" / "mechanisms"


class MechanismCache:
    """Designs on first use, loads afterwards; ``hits`` and ``designed`` list the sizes served each way."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self.hits: list[int] = []
        self.designed: list[int] = []

    def path(self, mechanism: str, n: int, alpha: object, objective: str = "L0") -> Path:
        a = exact_alpha(alpha)
        slug = objective.replace(":", "")
        return self.root / mechanism / slug / f"n={int(n)}" / f"alpha={a.numerator}_{a.denominator}.json"

    def get(self, mechanism: str, n: int, alpha: object, objective: str = "L0", **design_options):
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
        save_design(design, path)
        self.designed.append(int(n))
        return design


__all__ = ["MechanismCache", "default_cache_dir"]
