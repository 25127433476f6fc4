"""The one way figures are made and saved: no pyplot state, one lock, atomic files.

Every figure of the project is a :class:`matplotlib.figure.Figure` of its own (registered with
no figure manager, never a backend switch), drawn inside :func:`drawing` and written by
:func:`save_figure`, which renames each file into place (a temporary name in the same folder,
then ``os.replace``), so a figure never exists half-written under its final name.

The workflow runs its jobs as threads of one Snakemake process, and matplotlib keeps
module-level state (``rcParams``, font caches), so :func:`drawing` holds :data:`PLOT_LOCK` and
applies the figure's style as an ``rc_context`` for the whole draw-and-save.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from countdp.services.artifact import atomic_path

PLOT_LOCK = threading.RLock()
"""Serialises drawing: matplotlib's rcParams and caches are shared by every thread."""


@contextmanager
def drawing(rc: Mapping | None = None) -> Iterator[None]:
    """Hold :data:`PLOT_LOCK` with ``rc`` applied to matplotlib's defaults (restored on exit)."""
    with PLOT_LOCK, matplotlib.rc_context(dict(rc or {})):
        yield


def drawn(plot):
    """Decorate a plotting function to run inside :func:`drawing` (matplotlib's default style)."""

    @functools.wraps(plot)
    def locked(*args, **kwargs):
        with drawing():
            return plot(*args, **kwargs)

    return locked


def new_figure(figsize: tuple[float, float]):
    """A new figure, attached to an Agg canvas and to no pyplot manager."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def subplots(*args, figsize: tuple[float, float], **kwargs):
    """``pyplot.subplots`` without pyplot: a :func:`new_figure` and its axes."""
    fig = new_figure(figsize)
    return fig, fig.subplots(*args, **kwargs)


def save_figure(fig, paths: Sequence[str | Path], **savefig) -> None:
    """Save ``fig`` to every path (format from the suffix), each renamed into place atomically.

    ``savefig`` keywords go to :meth:`Figure.savefig` (e.g. ``dpi``, ``bbox_inches``);
    ``dpi`` may be a mapping from suffix to dpi (``{"png": 200}``; others use the default).
    """
    dpi = savefig.pop("dpi", None)
    for path in paths:
        kind = Path(path).suffix.lstrip(".")
        kwargs = dict(savefig)
        chosen = dpi.get(kind) if isinstance(dpi, Mapping) else dpi
        if chosen is not None:
            kwargs["dpi"] = chosen
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=kind, **kwargs)


def save_tight(fig, paths: Sequence[str | Path]) -> None:
    """:func:`save_figure` at 150 dpi, cropped to the drawing (the studies' figures)."""
    save_figure(fig, paths, dpi=150, bbox_inches="tight")
