"""Statistical audit of a mechanism's *sampler*: does what it releases look alpha-DP?

:func:`countdp.privacy.certify.is_alpha_dp` proves that a matrix ``P`` is alpha-DP on its floats.  It
says nothing about the code that turns ``P`` into noisy counts: an off-by-one in the inverse
CDF, a column index mix-up or a mechanism built for the wrong alpha all release outputs whose
distribution is not ``P``.  This module tests the *released outputs* as a black box, in the
style of the stochastic tester of Google's differential-privacy library and of DP-Sniper
(Bichsel et al., IEEE S&P 2021):

1. For every input ``j`` in ``0..n``, draw ``m`` releases from the sampler (by default
   :func:`countdp.privacy.sampling.release` on a certified mechanism's integer weights, or the same
   sampler on plain integer weights of a bare matrix) and count how often each output occurs.
2. For every *event* ``E`` (a set of outputs: single outputs, prefixes ``{i <= k}``, suffixes
   ``{i >= k}`` or sets given by the caller) and every input ``j``, compute one-sided
   Clopper-Pearson bounds ``L(E, j) <= Pr[E | j] <= U(E, j)``.
3. For every pair of neighbouring inputs, in both directions (``j -> j+1`` and ``j+1 -> j``),
   the ratio ``Pr[E | j] / Pr[E | j']`` is at least ``L(E, j) / U(E, j')`` with the stated
   confidence.  A **violation** is a test with ``L(E, j) > U(E, j') / alpha``: the lower
   confidence bound of the ratio exceeds what alpha-DP allows.

**False-positive control.**  Every bound is computed at level ``delta / B``, where ``delta =
1 - confidence`` and ``B`` is the number of distinct one-sided bounds the audit uses
(``2 x events x (n+1)`` for a fixed event family).  By the union bound, with probability at
least ``1 - delta`` every bound holds simultaneously, whatever the dependence between them
(outputs of one column are multinomially dependent); and when every bound holds, a truly
alpha-DP sampler cannot produce a violation, because ``L(E, j) <= Pr[E|j] <= Pr[E|j']/alpha
<= U(E, j')/alpha``.  So a DP sampler is flagged with probability at most ``delta``, for
any ``m``, any events and any ``P``, including GM whose DP inequalities are all tight.

**Power.**  With ``m`` draws per input, a ratio exceeding ``1/alpha`` by a factor ``1 + r``
on an event of probability ``p`` is found once ``r`` is a few times ``z * sqrt(2 / (m p))``,
``z`` the normal quantile of ``delta / B`` (about 4 to 4.5 for the sizes used in the tests).
With ``m = 200,000`` and ``p`` about 0.2 this is a few percent; a broken column with ratio
``1.5/alpha`` or a mechanism for alpha = 0.5 audited at alpha = 0.9 is found with certainty
in practice.  Coarser events (prefixes, suffixes) have larger ``p`` and so more power when a
violation is spread over many small outputs; :func:`audit_sniper` goes further, like
DP-Sniper: it splits the samples, uses the first part to choose, for every neighbouring pair,
the event made of the outputs with the largest empirical likelihood ratio, and tests only
those events on the held-out part (so the choice costs no multiple-testing correction).

**Where the randomness comes from.**  Releases of *real* data go through
``countdp.privacy.sampling.release(mechanism, counts)``, which draws its bits from the operating
system's cryptographically secure source (``os.urandom``), so nobody can regenerate the noise
and subtract it.  Experiments and this audit use *seeded* generators instead
(``numpy.random.default_rng(seed)``), so that a figure or a failing audit can be reproduced
exactly; the mapping from uniform integers to outputs is the same function, so auditing it
with a seeded generator audits the code path that releases real data.  When no
generator or seed is passed, :func:`audit` draws a fresh seed from the OS and records its
entropy in the result, so a failure can still be replayed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from countdp.privacy.audit_events import clopper_pearson, event_masks
from countdp.privacy.exact import RELEASE_K
from countdp.privacy.rounding import largest_remainder_weights
from countdp.privacy.sampling import SystemRandomSource, guide_table, outputs_for_draws, release, uniform_draws
from countdp.validation import check_alpha, check_matrix, check_n
from countdp.values.mechanism import Mechanism

Sampler = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""``sampler(true_counts, rng) -> outputs``: one released count per true count."""

DEFAULT_SAMPLES = 200_000
DEFAULT_CONFIDENCE = 0.99
_CHUNK = 2_000_000  # draws per call of the sampler (bounds memory)


@dataclass(frozen=True)
class Violation:
    """One test whose ratio lower bound exceeds ``1/alpha``.

    ``event`` lists the outputs of the event; ``numerator``/``denominator`` are the two
    neighbouring inputs; ``ratio_lower = lower / upper`` bounds ``Pr[E|numerator] /
    Pr[E|denominator]`` from below with the audit's confidence.
    """

    event: tuple[int, ...]
    numerator: int
    denominator: int
    lower: float
    upper: float
    ratio_lower: float
    empirical_ratio: float


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    ``passed`` iff no test's ratio lower bound exceeds ``1/alpha``.  ``worst_ratio_lower`` is
    the largest ratio lower bound over all tests, ``worst`` the test that attains it (reported
    whether or not it is a violation), ``epsilon_lower_bound = max(0, ln worst_ratio_lower)``
    the privacy loss the samples prove (compare with ``epsilon = -ln alpha``).
    ``samples`` is the total number of draws, ``confidence`` the family-wise level:
    a truly alpha-DP sampler fails with probability at most ``1 - confidence``.
    """

    passed: bool
    alpha: float
    n: int
    worst_ratio_lower: float
    worst: Violation
    violations: tuple[Violation, ...]
    max_empirical_ratio: float
    samples_per_input: int
    samples: int
    confidence: float
    bounds: int
    per_bound_delta: float
    tests: int
    seed_entropy: int | None = None
    counts: np.ndarray = field(default=None, repr=False, compare=False)

    @property
    def epsilon_lower_bound(self) -> float:
        return float(max(0.0, np.log(self.worst_ratio_lower)))

    @property
    def worst_pair(self) -> tuple[int, int]:
        """``(numerator input, denominator input)`` of the worst test."""
        return self.worst.numerator, self.worst.denominator

    @property
    def worst_event(self) -> tuple[int, ...]:
        return self.worst.event

    def summary(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        w = self.worst
        return (f"{verdict} alpha={self.alpha:g} n={self.n}: worst ratio lower bound "
                f"{self.worst_ratio_lower:.4f} (1/alpha = {1 / self.alpha:.4f}) at event {list(w.event)}, "
                f"inputs {w.numerator} vs {w.denominator}; {len(self.violations)} violation(s); "
                f"{self.samples} draws, confidence {self.confidence}")


# ---------------------------------------------------------------------------------------------
# Sampling


def _generator(rng: object) -> tuple[object, int | None]:
    if isinstance(rng, np.random.Generator | SystemRandomSource):
        return rng, None
    if rng is None:
        seq = np.random.SeedSequence()
        return np.random.default_rng(seq), int(seq.entropy)
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral) or rng < 0:
        raise ValueError(f"rng must be a numpy Generator, a SystemRandomSource, a seed >= 0 or None, got {rng!r}")
    return np.random.default_rng(int(rng)), int(rng)


def matrix_sampler(P: np.ndarray) -> Sampler:
    """The release sampler run on plain largest-remainder weights of any column-stochastic ``P``.

    For auditing matrices that are *not* certified (a release refuses them): the draws go
    through the very mapping :func:`countdp.privacy.sampling.release` uses, on ``W / 2**62``, which
    differs from ``P`` by at most one unit of ``2**-62`` per entry.
    """
    cumulative = np.cumsum(largest_remainder_weights(P, RELEASE_K).T, axis=1)
    guide = guide_table(cumulative, RELEASE_K)

    def sampler(true_counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        columns = np.asarray(true_counts, dtype=np.int64)
        draws = uniform_draws(rng, columns.size, RELEASE_K)
        return outputs_for_draws(cumulative, RELEASE_K, columns, draws, guide)

    return sampler


def _resolve(mechanism: object, n: int | None) -> tuple[Sampler, int]:
    released = getattr(mechanism, "released", mechanism)
    if isinstance(released, Mechanism) and released.values_per_count == 1:
        if n is not None and check_n(n) != released.n:
            raise ValueError(f"n = {n} does not match a mechanism for n = {released.n}")
        return partial(release, released), released.n
    if callable(mechanism):
        if n is None:
            raise ValueError("n is required when the mechanism is a sampler function")
        return mechanism, check_n(n)
    P = check_matrix(mechanism)
    if n is not None and check_n(n) != P.shape[0] - 1:
        raise ValueError(f"n = {n} does not match a {P.shape[0]}x{P.shape[0]} mechanism")
    return matrix_sampler(P), P.shape[0] - 1


def _check_samples(samples_per_input: object) -> int:
    if isinstance(samples_per_input, bool) or not isinstance(samples_per_input, numbers.Integral) \
            or samples_per_input < 1:
        raise ValueError(f"samples_per_input must be an integer >= 1, got {samples_per_input!r}")
    return int(samples_per_input)


def _check_confidence(confidence: object) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) \
            or not (0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


def sample_counts(sampler: Sampler, n: int, samples_per_input: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``counts[i, j]``: how often ``sampler`` released ``i`` in ``samples_per_input`` draws at input ``j``.

    Raises ``ValueError`` if the sampler returns the wrong number of outputs or an output that
    is not an integer in ``0..n``.
    """
    N = n + 1
    m = _check_samples(samples_per_input)
    counts = np.zeros((N, N), dtype=np.int64)
    per_chunk = max(1, _CHUNK // N)
    done = 0
    while done < m:
        size = min(per_chunk, m - done)
        inputs = np.repeat(np.arange(N, dtype=np.int64), size)
        out = np.asarray(sampler(inputs, rng))
        if out.shape != inputs.shape:
            raise ValueError(f"sampler returned shape {out.shape} for {inputs.shape} inputs")
        if out.size and (not np.issubdtype(out.dtype, np.integer) or out.min() < 0 or out.max() > n):
            raise ValueError(f"sampler outputs must be integers in 0..{n}")
        counts += np.bincount(inputs * N + out, minlength=N * N).reshape(N, N).T
        done += size
    return counts


# ---------------------------------------------------------------------------------------------
# Tests of ratios


def _run_tests(counts: np.ndarray, m: int, alpha: float, masks: np.ndarray,
               tests: Sequence[tuple[int, int, int]], confidence: float) -> dict:
    """Evaluate tests ``(event index, numerator input, denominator input)`` on ``counts``."""
    delta = 1.0 - confidence
    E = masks.astype(np.int64) @ counts  # (events, inputs): draws that fell in each event
    t = np.asarray(tests, dtype=np.int64).reshape(-1, 3)
    lower_keys = {(int(e), int(a)) for e, a, _ in t}
    upper_keys = {(int(e), int(b)) for e, _, b in t}
    bounds = len(lower_keys) + len(upper_keys)
    per_bound = delta / bounds
    lower_all, upper_all = clopper_pearson(E, m, per_bound)
    e, a, b = t[:, 0], t[:, 1], t[:, 2]
    low, up = lower_all[e, a], upper_all[e, b]
    ratio = low / up
    with np.errstate(divide="ignore", invalid="ignore"):
        emp = np.where(E[e, b] > 0, E[e, a] / np.maximum(E[e, b], 1),
                       np.where(E[e, a] > 0, np.inf, 1.0))
    return dict(low=low, up=up, ratio=ratio, emp=emp, e=e, a=a, b=b, bounds=bounds, per_bound=per_bound)


def _result(r: dict, masks: np.ndarray, alpha: float, n: int, m: int, confidence: float,
            counts: np.ndarray, entropy: int | None, samples: int) -> AuditResult:
    def violation(k: int) -> Violation:
        return Violation(tuple(int(o) for o in np.flatnonzero(masks[r["e"][k]])), int(r["a"][k]),
                         int(r["b"][k]), float(r["low"][k]), float(r["up"][k]), float(r["ratio"][k]),
                         float(r["emp"][k]))

    order = np.argsort(-r["ratio"], kind="stable")
    flagged = [int(k) for k in order if alpha * r["low"][k] > r["up"][k]]
    worst = violation(int(order[0]))
    return AuditResult(
        passed=not flagged, alpha=alpha, n=n, worst_ratio_lower=worst.ratio_lower, worst=worst,
        violations=tuple(violation(k) for k in flagged[:100]),
        max_empirical_ratio=float(np.max(r["emp"])), samples_per_input=m, samples=samples,
        confidence=confidence, bounds=r["bounds"], per_bound_delta=r["per_bound"],
        tests=int(r["ratio"].size), seed_entropy=entropy, counts=counts,
    )


def audit_counts(counts: np.ndarray, alpha: float, events: object = "outputs",
                 confidence: float = DEFAULT_CONFIDENCE, seed_entropy: int | None = None) -> AuditResult:
    """Audit a table ``counts[i, j]`` of releases (the same number of draws in every column).

    Tests every event of ``events`` for every neighbouring pair in both directions, with the
    Bonferroni-corrected Clopper-Pearson bounds described in the module docstring.
    """
    a = check_alpha(alpha)
    conf = _check_confidence(confidence)
    C = np.asarray(counts)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] < 2 or not np.issubdtype(C.dtype, np.integer) \
            or np.any(C < 0):
        raise ValueError(f"counts must be a square table of non-negative integers, got shape {C.shape}")
    m = int(C[:, 0].sum())
    if m < 1 or np.any(C.sum(axis=0) != m):
        raise ValueError("every input must have the same number (>= 1) of draws")
    N = C.shape[0]
    masks = event_masks(N, events)
    pairs = [(j, j + s) for j in range(N) for s in (-1, 1) if 0 <= j + s < N]
    tests = [(e, j, k) for e in range(masks.shape[0]) for j, k in pairs]
    r = _run_tests(C, m, a, masks, tests, conf)
    return _result(r, masks, a, N - 1, m, conf, C, seed_entropy, m * N)


def audit(mechanism: object, alpha: float, *, samples_per_input: int = DEFAULT_SAMPLES,
          confidence: float = DEFAULT_CONFIDENCE, events: object = "outputs", rng: object = None,
          n: int | None = None) -> AuditResult:
    """Audit ``mechanism`` (a certified Design or IntegerMechanism, sampled with
    :func:`~countdp.privacy.sampling.release`; a bare matrix, sampled by :func:`matrix_sampler`; or a
    sampler function ``f(true_counts, rng)`` with ``n`` given) for ``alpha``-DP.

    ``rng`` is a numpy ``Generator``, an integer seed (reproducible) or ``None`` (a fresh seed
    from the OS, recorded in ``seed_entropy``).  Draws ``samples_per_input`` releases at every
    input ``0..n`` and returns an :class:`AuditResult`.
    """
    a = check_alpha(alpha)
    sampler, n_ = _resolve(mechanism, n)
    m = _check_samples(samples_per_input)
    conf = _check_confidence(confidence)
    event_masks(n_ + 1, events)  # validate before sampling
    gen, entropy = _generator(rng)
    counts = sample_counts(sampler, n_, m, gen)
    return audit_counts(counts, a, events, conf, entropy)


def audit_sniper(mechanism: object, alpha: float, *, samples_per_input: int = DEFAULT_SAMPLES,
                 confidence: float = DEFAULT_CONFIDENCE, rng: object = None, n: int | None = None,
                 train_fraction: float = 0.5) -> AuditResult:
    """DP-Sniper-style audit: choose one event per neighbouring pair and direction, then test it.

    A ``train_fraction`` of the draws estimates, for inputs ``j`` and ``j'``, the likelihood
    ratio of every output; the candidate events are the top-k outputs by that ratio
    (k = 1..n), and the one with the largest ratio lower bound on the training draws is kept.
    The remaining draws test the ``2n`` chosen events, Bonferroni-corrected over those tests
    only.  Selection and testing use disjoint samples, so the false-positive guarantee of
    :func:`audit` still holds.
    """
    a = check_alpha(alpha)
    sampler, n_ = _resolve(mechanism, n)
    m = _check_samples(samples_per_input)
    conf = _check_confidence(confidence)
    if not (isinstance(train_fraction, numbers.Real) and 0.0 < train_fraction < 1.0):
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction!r}")
    m_train = int(round(m * train_fraction))
    if not (1 <= m_train < m):
        raise ValueError(f"samples_per_input = {m} is too small to split "
                         f"with train_fraction = {train_fraction}")
    gen, entropy = _generator(rng)
    train = sample_counts(sampler, n_, m_train, gen)
    test = sample_counts(sampler, n_, m - m_train, gen)
    N = n_ + 1
    pairs = [(j, j + s) for j in range(N) for s in (-1, 1) if 0 <= j + s < N]
    chosen = []
    delta_train = (1.0 - conf) / (2 * N * N)  # only used to rank candidates
    for j, k in pairs:
        score = (train[:, j] + 0.5) / (train[:, k] + 0.5)
        order = np.argsort(-score, kind="stable")
        cands = np.zeros((n_, N), dtype=bool)
        for size in range(1, N):
            cands[size - 1, order[:size]] = True
        hits = cands.astype(np.int64) @ train
        low, _ = clopper_pearson(hits[:, j], m_train, delta_train)
        _, up = clopper_pearson(hits[:, k], m_train, delta_train)
        chosen.append(cands[int(np.argmax(low / up))])
    masks = np.array(chosen)
    tests = [(t, j, k) for t, (j, k) in enumerate(pairs)]
    r = _run_tests(test, m - m_train, a, masks, tests, conf)
    return _result(r, masks, a, n_, m, conf, test, entropy, m * N)
