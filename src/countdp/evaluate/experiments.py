"""Repeated evaluations of mechanisms on data (the paper's Section V-B and V-C).

One call of :func:`simulate` runs a whole sweep (a list of parameter points) for several
mechanisms.  For every point and repetition it draws the true group counts once (shared by
all mechanisms: common random numbers), releases noisy counts with each mechanism, and
records the empirical error together with its exact expectation given the drawn counts.
Mechanisms are certified :class:`~countdp.privacy.exact.IntegerMechanism` objects (the matrix path:
the noise is drawn by the release sampler itself, :func:`countdp.privacy.sampling.release`, on a
seeded generator, and the expectations use the distribution it samples, ``W / D``) or certified
structural forms (:class:`~countdp.structural.form.StructuralMechanism`, for group sizes whose
matrix would be large: drawn by the structural sampler and evaluated from the form's columns,
:mod:`countdp.evaluate.structural`; :mod:`countdp.evaluate.routing` says which).
:func:`summarise` turns the repetitions into mean, standard deviation, standard error and
the exact expectation under the model (Binomial(n, p) for synthetic data; for Adult the
mean over repetitions of the exact expectation given that repetition's group counts).

Seeds: every random stream comes from :func:`rng_for`, which hashes the config seed and a
canonical string of the stream's parameters into a :class:`numpy.random.SeedSequence`.
The data stream's parameters exclude the mechanism and alpha, the noise stream's include
them, so a result never depends on job order, core count, or which other mechanisms or
points were evaluated in the same job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from countdp.evaluate.data import POPULATION, binomial_groups, empirical_distribution, group_counts
from countdp.evaluate.metrics import binomial_distribution, empirical_errors, expected_error, expected_errors
from countdp.evaluate.routing import evaluation_form
from countdp.evaluate.structural import column_losses, structural_expected_errors
from countdp.privacy.sampling import release_each
from countdp.services.artifact import load_certified
from countdp.structural.form import REPRESENTATION
from countdp.values.mechanism import mechanism_of

NOISE_ONLY_KEYS = ("alpha", "mechanism")
"""Parameters that change the released noise but not the drawn data."""


def canonical(params: Mapping) -> str:
    """A stable text form of a parameter mapping (sorted keys, floats as shortest repr)."""
    return json.dumps({str(k): params[k] for k in params}, sort_keys=True, separators=(",", ":"), default=str)


def seed_sequence(seed: int, **params) -> np.random.SeedSequence:
    """``SeedSequence`` from the config ``seed`` and the SHA-256 of the canonical parameter text."""
    digest = hashlib.sha256(canonical(params).encode()).digest()
    words = np.frombuffer(digest, dtype="<u4").tolist()
    return np.random.SeedSequence([int(seed), *words])


def rng_for(seed: int, **params) -> np.random.Generator:
    """An independent generator for the stream named by ``params``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, **params)))


def measure_d(measure: str) -> int | None:
    """The threshold ``d`` of ``L0d:d`` (0 for ``L0``), or None for other measures."""
    m = measure.upper()
    if m == "L0":
        return 0
    if m.startswith("L0D"):
        return int(m[3:].lstrip(":="))
    return None


MechanismFor = Callable[[str, Mapping], object]
"""``mechanism_for(name, point)``: a certified mechanism (a Design or an IntegerMechanism)."""
DrawFor = Callable[[Mapping, np.random.Generator], np.ndarray]


def released_matrix(mechanism: object) -> np.ndarray:
    """The distribution a certified mechanism's sampler draws from, ``column / denominator``, as floats."""
    released = mechanism_of(mechanism, "an evaluation")
    return released.column(np.arange(released.n + 1)) / float(released.denominator)


def released_size(mechanism: object) -> int:
    """The group size ``n`` a certified mechanism (any representation) releases."""
    return int(mechanism_of(mechanism, "an evaluation").n)


def release_with(mechanism: object, counts: Sequence[np.ndarray], rngs: Sequence[np.random.Generator]) -> list:
    """Each array of counts released by ``mechanism``'s own sampler, with words from its generator."""
    return release_each(mechanism, counts, rngs)


def expected_with(mechanism: object, distributions: Sequence[object], measure: str) -> np.ndarray:
    """The exact expected error of ``mechanism``'s releases under each input distribution (a structural
    form's from its tables, without the matrix; any other representation's from its columns)."""
    released = mechanism_of(mechanism, "an evaluation")
    if released.representation == REPRESENTATION:
        return structural_expected_errors(released, distributions, measure)
    return expected_errors(released_matrix(released), distributions, measure)


def simulate(study: str, seed: int, points: Sequence[Mapping], mechanisms: Sequence[str],
             mechanism_for: MechanismFor, draw: DrawFor, measures: Sequence[str], repetitions: int) -> pd.DataFrame:
    """Run ``repetitions`` of every point for every mechanism; one row per (point, rep, mechanism, measure).

    ``points``: dicts with at least ``n`` (and ``alpha``); ``mechanism_for(mechanism, point)``
    returns the certified mechanism; ``draw(point, rng)`` returns the true group counts.
    Columns: the point's keys, ``mechanism``, ``rep``, ``measure``, ``d``, ``groups``,
    ``value`` (empirical) and ``exact_given_data`` (exact expectation given the counts).
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    rows = []
    for point in points:
        n = int(point["n"])
        data_params = {k: v for k, v in point.items() if k not in NOISE_ONLY_KEYS}
        chosen = {m: mechanism_for(m, point) for m in mechanisms}
        for m, mech in chosen.items():
            if released_size(mech) != n:
                raise ValueError(f"{m} at {dict(point)}: releases groups of {released_size(mech)}, expected {n}")
        reps = range(repetitions)
        counts = [draw(point, rng_for(seed, study=study, stream="data", rep=rep, **data_params)) for rep in reps]
        q = [empirical_distribution(c, n) for c in counts]
        values, exact = {}, {}  # (mechanism, measure) -> one value per repetition
        for m, mech in chosen.items():
            noise = [rng_for(seed, study=study, stream="noise", rep=rep, mechanism=m, **point) for rep in reps]
            released = release_with(mech, counts, noise)
            for measure in measures:
                values[m, measure] = empirical_errors(counts, released, measure)
                exact[m, measure] = expected_with(mech, q, measure)
        rows += [{**point, "mechanism": m, "rep": rep, "measure": measure, "d": measure_d(measure),
                  "groups": int(counts[rep].size), "value": float(values[m, measure][rep]),
                  "exact_given_data": float(exact[m, measure][rep])}
                 for rep in reps for m in chosen for measure in measures]
    return pd.DataFrame(rows)


def summarise(raw: pd.DataFrame, keys: Sequence[str],
              exact: Callable[[Mapping], float] | None = None) -> pd.DataFrame:
    """Mean, sd (ddof=1), se = sd/sqrt(reps) of ``value`` per ``keys``; ``exact`` per group.

    ``exact(row)`` gives the model's exact expectation (e.g. under Binomial(n, p)); without
    it, ``exact`` is the mean of ``exact_given_data``.  ``z`` = (mean - exact) / se; when
    se = 0, ``z`` is 0 for an exact match and +-inf for a deterministic mismatch (NaN with one
    repetition).
    """
    grouped = raw.groupby(list(keys), sort=False, dropna=False)
    out = grouped.agg(
        repetitions=("value", "size"), groups=("groups", "mean"), mean=("value", "mean"),
        sd=("value", "std"), exact_given_data=("exact_given_data", "mean"),
    ).reset_index()
    out["sd"] = out["sd"].fillna(0.0)
    out["se"] = out["sd"] / np.sqrt(out["repetitions"])
    out["exact"] = [exact(r) for r in out.to_dict("records")] if exact else out["exact_given_data"]
    gap = out["mean"] - out["exact"]
    with np.errstate(divide="ignore", invalid="ignore"):
        # se = 0: every repetition gave the same value, so a mismatch is deterministic (z = +-inf),
        # and a match is exact (z = 0); with one repetition there is no spread to judge by (NaN)
        deterministic = np.where(gap == 0, 0.0, np.sign(gap) * np.inf)
        out["z"] = np.where(out["se"] > 0, gap / out["se"], np.where(out["repetitions"] > 1, deterministic, np.nan))
    cols = [*keys, "repetitions", "groups", "mean", "sd", "se", "exact", "exact_given_data", "z"]
    return out[cols]


# --------------------------------------------------------------------------- the studies


def adult_sweep(bits: np.ndarray, target: str, alpha: float, ns: Sequence[int], mechanisms: Sequence[str],
                mechanism_for: MechanismFor, repetitions: int, seed: int, measure: str = "L0",
                study: str = "fig10", grouping=group_counts) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 10: one Adult target, error vs group size; each repetition a fresh random grouping.

    ``grouping(bits, n, rng)``: the groups' counts (the pipeline passes
    :func:`countdp.studies.adult_groups.adult_group_counts`, the same groups made from the person records).
    """
    bits = np.asarray(bits, dtype=np.int64)
    points = [{"dataset": "adult", "target": target, "n": int(n), "alpha": float(alpha)} for n in ns]

    def draw(point, rng):
        return grouping(bits, point["n"], rng)

    raw = simulate(study, seed, points, mechanisms, mechanism_for, draw, [measure], repetitions)
    keys = ["dataset", "target", "alpha", "n", "mechanism", "measure", "d"]
    return raw, summarise(raw, keys)


def binomial_sweep(points: Sequence[Mapping], mechanisms: Sequence[str], mechanism_for: MechanismFor,
                   measures: Sequence[str], repetitions: int, seed: int, study: str,
                   population: int = POPULATION) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figures 11-13: synthetic populations of ``population`` Bernoulli(p) bits in groups of n.

    ``points``: dicts with ``n``, ``p`` and ``alpha``.  The exact column is the expectation
    under Binomial(n, p); ``exact_given_data`` is the one given the drawn populations.
    """
    pts = [{"dataset": "binomial", "n": int(pt["n"]), "p": float(pt["p"]), "alpha": float(pt["alpha"])}
           for pt in points]

    def draw(point, rng):
        return binomial_groups(point["n"], point["p"], rng, population)

    raw = simulate(study, seed, pts, mechanisms, mechanism_for, draw, measures, repetitions)
    matrices: dict = {}
    losses: dict = {}  # a structural form's per-input losses, shared by the points that differ only in p

    def exact(row):
        key = (row["mechanism"], row["n"], row["alpha"])
        if key not in matrices:
            point = {"n": row["n"], "alpha": row["alpha"], "p": row["p"]}
            mech = mechanism_for(row["mechanism"], point)
            released = mechanism_of(mech, "an evaluation")
            matrices[key] = released if released.representation == REPRESENTATION else released_matrix(released)
        pmf = binomial_distribution(row["n"], row["p"])
        if not isinstance(matrices[key], np.ndarray):  # a structural form
            held = (key, row["measure"])
            if held not in losses:
                losses[held] = column_losses(matrices[key], row["measure"])
            return float(structural_expected_errors(matrices[key], [pmf], row["measure"], losses[held])[0])
        return expected_error(matrices[key], pmf, row["measure"])

    keys = ["dataset", "alpha", "n", "p", "mechanism", "measure", "d"]
    return raw, summarise(raw, keys, exact)


def load_mechanisms(files: Sequence[Sequence], alpha: float) -> dict[tuple[str, int], object]:
    """``{(mechanism, n): certified mechanism}`` from ``[mechanism, n, path]`` rows of design artifacts, and
    ``[mechanism, n, "structural", exact alpha]`` rows of structural forms.

    Every file is read with :func:`countdp.services.artifact.load_certified` (the float certificate and the
    exact certificate of the release weights are re-verified) and must hold the stated ``n``
    and ``alpha``: an :class:`~countdp.privacy.exact.IntegerMechanism`.  A structural row is built
    and certified by :func:`countdp.evaluate.routing.evaluation_form` (milliseconds), at the exact
    alpha given, which must be ``alpha``: a :class:`~countdp.structural.form.StructuralMechanism`.
    """
    out = {}
    for mechanism, n, path, *exact in files:
        if path == REPRESENTATION:
            form, _ = evaluation_form(mechanism, int(n), exact[0])
            if abs(float(form.alpha) - float(alpha)) > 1e-12:
                raise ValueError(f"{mechanism} n={n}: structural alpha {exact[0]} is not alpha={alpha}")
            out[(str(mechanism), int(n))] = form
            continue
        record = load_certified(path)
        if int(record["n"]) != int(n) or abs(float(record["alpha"]) - float(alpha)) > 1e-12:
            raise ValueError(f"{path}: holds n={record['n']}, alpha={record['alpha']}; expected n={n}, alpha={alpha}")
        out[(str(mechanism), int(n))] = record["released"]
    return out


__all__ = [
    "adult_sweep", "binomial_sweep", "canonical", "expected_with", "load_mechanisms", "release_with", "released_matrix",
    "released_size", "rng_for", "seed_sequence", "simulate", "summarise",
]
