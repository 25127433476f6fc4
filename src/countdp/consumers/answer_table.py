"""A remap held as a short list of answers per release, with exact dyadic probabilities.

At large ``n`` a consumer's remap ``R[a, r]`` (answer ``a`` on release ``r``) has a few answers
per release, not ``n + 1``: a basic optimum of the remap LP has at most as many non-zero entries as
the LP has rows.  :class:`AnswerTable` holds them by release (compressed columns): the answers, and
their probabilities as integers over ``2^``:data:`REMAP_BITS` summing *exactly* to it in every
release, so each probability is a float exactly (integers below 2^53) and every column of the
remap sums to one exactly: the remap a certificate evaluates is a remap, with no repair left.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

REMAP_BITS = 52
"""A remap's probabilities are multiples of ``2^-52`` (exact floats; a column's sum is exact in int64)."""


@dataclass(frozen=True)
class AnswerTable:
    """Per release ``r``: answers ``answers[indptr[r]:indptr[r+1]]`` with probabilities ``numerators / 2^52``."""

    indptr: np.ndarray
    answers: np.ndarray
    numerators: np.ndarray

    @property
    def N(self) -> int:
        return int(self.indptr.size - 1)

    @property
    def releases(self) -> np.ndarray:
        """The release of every entry (aligned with ``answers``)."""
        return np.repeat(np.arange(self.N), np.diff(self.indptr))

    @property
    def probabilities(self) -> np.ndarray:
        return self.numerators / float(1 << REMAP_BITS)

    @classmethod
    def deterministic(cls, answers: np.ndarray) -> AnswerTable:
        """Release ``r`` answers ``answers[r]`` with probability one."""
        answers = np.asarray(answers, dtype=np.int64)
        return cls(np.arange(answers.size + 1), answers.copy(), np.full(answers.size, 1 << REMAP_BITS, np.int64))

    @classmethod
    def from_entries(cls, N: int, releases: np.ndarray, answers: np.ndarray, weights: np.ndarray) -> AnswerTable:
        """The remap with ``R[answers[k], releases[k]]`` proportional to ``weights[k]`` (an LP's answer:
        negatives and entries below ``2^-52`` of their release dropped, each release normalised and
        rounded to multiples of ``2^-52``, its shortfall put on its largest entry).  Every release
        must keep a positive weight."""
        releases, answers = np.asarray(releases, dtype=np.int64), np.asarray(answers, dtype=np.int64)
        w = np.clip(np.asarray(weights, dtype=float), 0.0, None)
        order = np.lexsort((answers, releases))
        releases, answers, w = releases[order], answers[order], w[order]
        totals = np.bincount(releases, weights=w, minlength=N)
        if np.any(totals <= 0):
            raise ValueError(f"release {int(np.argmin(totals))} has no answer of positive weight")
        numerators = np.rint(w / totals[releases] * float(1 << REMAP_BITS)).astype(np.int64)
        keep = numerators > 0
        releases, answers, numerators = releases[keep], answers[keep], numerators[keep]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(releases, minlength=N))])
        largest = np.lexsort((-numerators, releases))[indptr[:-1]]  # each release's largest entry
        short = (1 << REMAP_BITS) - np.add.reduceat(numerators, indptr[:-1])
        numerators[largest] += short
        table = cls(indptr, answers, numerators)
        table.check()
        return table

    def check(self) -> None:
        """Raise ``ValueError`` unless every release has answers in ``0..N-1`` whose numerators are
        non-negative and sum exactly to ``2^52``."""
        counts = np.diff(self.indptr)
        if self.indptr[0] != 0 or np.any(counts < 1) or self.indptr[-1] != self.answers.size:
            raise ValueError("every release of a remap needs at least one answer")
        if self.answers.min() < 0 or self.answers.max() >= self.N or self.numerators.min() < 0:
            raise ValueError("a remap's answers must lie in 0..n with non-negative probabilities")
        if np.any(np.add.reduceat(self.numerators, self.indptr[:-1]) != 1 << REMAP_BITS):
            raise ValueError("a remap's probabilities must sum exactly to one for every release")

    def patched(self, releases: np.ndarray, other: AnswerTable) -> AnswerTable:
        """This table with the releases ``releases`` taking ``other``'s answers (same ``N``)."""
        take = np.zeros(self.N, dtype=bool)
        take[np.asarray(releases, dtype=np.int64)] = True
        mine, theirs = ~take[self.releases], take[other.releases]
        rel = np.concatenate([self.releases[mine], other.releases[theirs]])
        ans = np.concatenate([self.answers[mine], other.answers[theirs]])
        num = np.concatenate([self.numerators[mine], other.numerators[theirs]])
        order = np.lexsort((ans, rel))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rel, minlength=self.N))])
        return AnswerTable(indptr, ans[order], num[order])

    def slots(self, releases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(answers, probabilities)`` of ``releases`` padded to the most answers any of them has
        (``len(releases) x k``; padding answers 0 with probability 0)."""
        releases = np.asarray(releases, dtype=np.int64)
        counts = np.diff(self.indptr)[releases]
        k = int(counts.max(initial=1))
        answers = np.zeros((releases.size, k), dtype=np.int64)
        probs = np.zeros((releases.size, k))
        slot = np.arange(k)[None, :]
        inside = slot < counts[:, None]
        index = (self.indptr[releases][:, None] + slot)[inside]
        answers[inside] = self.answers[index]
        probs[inside] = self.probabilities[index]
        return answers, probs

    def to_sparse(self) -> sp.csc_matrix:
        """``R[a, r]`` as an ``N x N`` sparse matrix (columns: releases)."""
        return sp.csc_matrix((self.probabilities, self.answers, self.indptr), shape=(self.N, self.N))


__all__ = ["REMAP_BITS", "AnswerTable"]
