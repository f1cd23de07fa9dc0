"""Discriminative power of a measure (Sakai, "Evaluating evaluation metrics based on the bootstrap",
SIGIR 2006): the share of system pairs whose difference a paired test finds significant at alpha.

``scores`` is an (m systems, n topics) matrix of one measure; every one of the m (m - 1) / 2 pairs is
tested, two-sided, with no correction for multiplicity (as Sakai reports it). Tests:

- ``"bootstrap"``: Sakai's paired bootstrap test (fig. 2 of the paper). With z = x - y and
  t(z) = mean(z) / (sd(z) / sqrt(n)), the null is imposed by centring, w = z - mean(z); B bootstrap
  samples w*b (n topics drawn with replacement) give the achieved significance level
  ASL = #{b : |t(w*b)| >= |t(z)|} / B. A sample whose sd is 0 has t = 0 when its mean is 0.
  All pairs share the same B resamples of topics, drawn as an (B, n) index matrix from
  ``np.random.default_rng(seed).integers(0, n, (B, n))``; each t(w*b) comes from two matrix products
  (sum of w and of w^2 weighted by how often each topic was drawn), so no loop runs per resample.
- ``"t"``: the paired t-test (``paired_t_test``), vectorised over pairs.
- ``"randomization"``: the sign-flip randomization test (``randomization_test``): the same sign
  matrices, drawn in the same batches from the same seed, serve every pair, so each pair's p-value
  equals ``randomization_test(x, y, n_permutations=B, seed=seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._anova import as_system_matrix
from evalcore.stats._effect_size import cohens_dz, hedges_correction
from evalcore.stats._significance import _TIE_RTOL
from evalcore.stats._validation import FloatArray, batch_rows, check_choice, check_count, check_probability

__all__ = ["DiscriminativePower", "DiscriminativeTest", "discriminative_power"]

DiscriminativeTest: TypeAlias = Literal["bootstrap", "t", "randomization"]


@dataclass(frozen=True, slots=True)
class DiscriminativePower:
    """``pairs`` lists (i, j) with i < j; ``p_values``, ``mean_difference`` (x_i. - x_j.),
    ``cohens_dz`` and ``hedges_g`` (NaN below three topics) align with it; ``share`` = significant /
    len(pairs)."""

    test: str
    alpha: float
    pairs: np.ndarray  # (P, 2)
    p_values: FloatArray
    mean_difference: FloatArray
    cohens_dz: FloatArray
    hedges_g: FloatArray

    @property
    def significant(self) -> int:
        return int(np.count_nonzero(self.p_values < self.alpha))

    @property
    def share(self) -> float:
        return self.significant / len(self.pairs)

    @property
    def min_significant_difference(self) -> float:
        """The smallest |mean difference| among the significant pairs (NaN when none is)."""
        chosen = np.abs(self.mean_difference[self.p_values < self.alpha])
        return float(chosen.min()) if len(chosen) else float("nan")


def _bootstrap_asl(z: FloatArray, n_resamples: int, seed: int | None) -> FloatArray:
    p_count, n = z.shape
    t_observed = np.abs(_t_statistics(z.sum(axis=1), (z**2).sum(axis=1), n))
    w = z - z.mean(axis=1, keepdims=True)
    w2 = w**2
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_resamples, n))
    extreme = np.zeros(p_count, dtype=np.int64)
    rows = batch_rows(max(n, p_count))
    for start in range(0, n_resamples, rows):
        block = draws[start : start + rows]
        cells = (np.arange(len(block))[:, None] * n + block).ravel()
        counts = np.bincount(cells, minlength=len(block) * n).reshape(len(block), n).astype(np.float64)
        t_star = np.abs(_t_statistics(w @ counts.T, w2 @ counts.T, n))
        extreme += np.count_nonzero(t_star >= t_observed[:, None] * (1 - 1e-12), axis=1)
    return extreme / n_resamples


def _t_statistics(total: np.ndarray, total_sq: np.ndarray, n: int) -> np.ndarray:
    """t = mean / (sd / sqrt(n)) from sums; 0 for a zero mean with zero sd, +-inf for a non-zero one."""
    mean = total / n
    variance = np.maximum((total_sq - n * mean**2) / (n - 1), 0.0)
    sd = np.sqrt(variance)
    # sums of equal values leave rounding noise in the variance: treat sd below it as zero
    flat = sd <= 1e-12 * np.maximum(np.abs(mean), 1e-300) + 1e-15
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    return np.where(flat, np.where(np.abs(mean) <= 1e-15, 0.0, np.copysign(np.inf, mean)), t)


def _t_test(z: FloatArray) -> FloatArray:
    from scipy import stats as scipy_stats

    n = z.shape[1]
    mean, sd = z.mean(axis=1), z.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mean / (np.where(sd > 0, sd, 1.0) / np.sqrt(n)), 0.0)
    p = 2.0 * scipy_stats.t.sf(np.abs(t), n - 1)
    return np.asarray(np.where(sd > 0, p, np.where(mean == 0, 1.0, 0.0)), dtype=np.float64)


def _randomization(z: FloatArray, n_permutations: int, seed: int | None) -> FloatArray:
    n = z.shape[1]
    threshold = np.abs(z.sum(axis=1)) - _TIE_RTOL * np.abs(z).sum(axis=1)
    rng = np.random.default_rng(seed)
    rows = batch_rows(n)
    extreme = np.zeros(len(z), dtype=np.int64)
    for start in range(0, n_permutations, rows):
        size = min(rows, n_permutations - start)
        signs = 1.0 - 2.0 * (rng.random((size, n)) < 0.5)
        extreme += np.count_nonzero(np.abs(z @ signs.T) >= threshold[:, None], axis=1)
    return (1 + extreme) / (1 + n_permutations)


def discriminative_power(
    scores: ArrayLike,
    *,
    alpha: float = 0.05,
    test: DiscriminativeTest = "bootstrap",
    n_resamples: int = 1000,
    seed: int | None = 0,
) -> DiscriminativePower:
    """Test every pair of an (m systems, n topics) matrix and count the significant ones.

    ``n_resamples`` is B for the bootstrap (Sakai used 1000) and the number of sign vectors for the
    randomization test; the t-test ignores it and ``seed``.

    >>> rng = np.random.default_rng(3)
    >>> scores = rng.random((1, 30)) + np.array([[0.0], [0.02], [0.3]]) + rng.normal(0, 0.05, (3, 30))
    >>> power = discriminative_power(scores, test="bootstrap", seed=1)
    >>> power.pairs.tolist(), power.significant, round(power.share, 3)
    ([[0, 1], [0, 2], [1, 2]], 2, 0.667)
    """
    choice = check_choice(test, name="test", choices=("bootstrap", "t", "randomization"))
    check_probability(alpha, name="alpha")
    check_count(n_resamples, name="n_resamples")
    x = as_system_matrix(scores)
    first, second = np.triu_indices(len(x), k=1)
    z = x[first] - x[second]
    if choice == "bootstrap":
        p_values = _bootstrap_asl(z, n_resamples, seed)
    elif choice == "t":
        p_values = _t_test(z)
    else:
        p_values = _randomization(z, n_resamples, seed)
    dz = cohens_dz(z)
    correction = hedges_correction(z.shape[1] - 1) if z.shape[1] >= 3 else float("nan")
    return DiscriminativePower(
        test=choice, alpha=alpha, pairs=np.stack([first, second], axis=1), p_values=p_values,
        mean_difference=z.mean(axis=1), cohens_dz=dz, hedges_g=dz * correction,
    )  # fmt: skip
