"""Two scorers' ROC areas on the same examples: DeLong's test and a paired bootstrap of the difference.

With m positives X and n negatives Y scored by model r, psi(x, y) = 1 if x > y, 1/2 if x = y, else 0,
and the AUC is the mean of psi over the m x n pairs. DeLong, DeLong and Clarke-Pearson (1988) estimate
the covariance of two correlated AUCs from the placement values

    V10_r(i) = mean_j psi(X_ri, Y_rj)   (a positive's share of negatives below it)
    V01_r(j) = mean_i psi(X_ri, Y_rj)   (a negative's share of positives above it)

as S = S10 / m + S01 / n, S10 and S01 the 2 x 2 sample covariances (ddof 1) of the V10 and V01 of the
two models. The difference's z = (AUC_a - AUC_b) / sqrt(S_aa + S_bb - 2 S_ab) is compared with the
standard normal (two-sided). Sun and Xu (2014, "Fast implementation of DeLong's algorithm for comparing
the areas under correlated receiver operating characteristic curves") get every placement value from
three midrank computations per model, O((m + n) log(m + n)) instead of O(m n):

    V10(i) = (Tz(i) - Tx(i)) / n,   V01(j) = 1 - (Tz(m + j) - Ty(j)) / m,
    AUC = (sum_i Tz(i) - m (m + 1) / 2) / (m n),

Tx, Ty, Tz the midranks of X, Y and their concatenation Z.

The bootstrap resamples the positives and the negatives apart (stratified, as pROC does: every
resample has m positives and n negatives, so the AUC is always defined), the same draws for both
models (paired over the same examples). Each resample is a vector of counts, and its AUC is
sum_i c_i sum_j d_j psi(X_i, Y_j) / (m n): with the negatives sorted once per model, the inner sum is
a difference of cumulative counts at two fixed positions per positive, so a batch of resamples costs
O(batch x (m + n)), no sort per resample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import (
    BoolArray,
    FloatArray,
    IntArray,
    StatsInputError,
    batch_rows,
    check_count,
    check_probability,
)

__all__ = ["AucDifferenceInterval", "DeLongTest", "auc_difference_ci", "delong_test", "midranks"]


@dataclass(frozen=True, slots=True)
class DeLongTest:
    """DeLong's test of AUC_a = AUC_b. `variance_*` and `covariance` are the estimated (co)variances of
    the two AUCs; `std_error` that of their difference. Where the difference has no variance (both
    models separate the classes the same way), z is 0 for equal areas and +-inf otherwise."""

    auc_a: float
    auc_b: float
    difference: float
    variance_a: float
    variance_b: float
    covariance: float
    std_error: float
    z: float
    p_value: float
    n_positive: int
    n_negative: int


@dataclass(frozen=True, slots=True)
class AucDifferenceInterval:
    """A percentile bootstrap interval of AUC_a - AUC_b; `std_error` is the resamples' sd (ddof 1)."""

    estimate: float
    low: float
    high: float
    confidence: float
    std_error: float
    n_resamples: int


def midranks(values: ArrayLike) -> FloatArray:
    """Ranks from 1, tied values sharing the mean of their ranks (`scipy.stats.rankdata`'s "average").

    >>> midranks([0.3, 0.1, 0.3, 0.7]).tolist()
    [2.5, 1.0, 2.5, 4.0]
    """
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    new = np.concatenate([[True], ordered[1:] != ordered[:-1]]) if x.size else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new)
    ends = np.concatenate([starts[1:], [x.size]])
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = ((starts + 1 + ends) / 2.0)[np.cumsum(new) - 1]
    return ranks


def _paired_inputs(y_true: ArrayLike, score_a: ArrayLike, score_b: ArrayLike) -> tuple[BoolArray, FloatArray]:
    labels = np.asarray(y_true)
    if labels.ndim != 1 or (labels.size and not np.isin(labels, (0, 1)).all()):
        raise StatsInputError("labels must be a one-dimensional array of 0 and 1")
    first, second = np.asarray(score_a, dtype=np.float64), np.asarray(score_b, dtype=np.float64)
    if first.shape != (labels.size,) or second.shape != (labels.size,):
        raise StatsInputError(
            f"scores must be aligned with the labels: {np.size(score_a)} and {np.size(score_b)} scores, "
            f"{labels.size} labels"
        )
    scores = np.vstack([first, second])
    if not np.isfinite(scores).all():
        raise StatsInputError("scores contain NaN or infinite values")
    positive = labels.astype(bool)
    if positive.all() or not positive.any():
        raise StatsInputError("comparing ROC areas needs both positives and negatives")
    return positive, scores


def _placements(positives: FloatArray, negatives: FloatArray) -> tuple[float, FloatArray, FloatArray]:
    """One model's AUC and placement values V10 (per positive) and V01 (per negative), by midranks."""
    m, n = positives.size, negatives.size
    tz = midranks(np.concatenate([positives, negatives]))
    v10 = (tz[:m] - midranks(positives)) / n
    v01 = 1.0 - (tz[m:] - midranks(negatives)) / m
    auc = (tz[:m].sum() - m * (m + 1) / 2.0) / (m * n)
    return float(auc), v10, v01


def _covariance(rows: FloatArray) -> FloatArray:
    """The 2 x 2 sample covariance (ddof 1) of two rows; zero for a single column."""
    if rows.shape[1] < 2:
        return np.zeros((2, 2))
    return np.atleast_2d(np.cov(rows, ddof=1))


def delong_test(y_true: ArrayLike, score_a: ArrayLike, score_b: ArrayLike) -> DeLongTest:
    """DeLong's two-sided test that two models' ROC areas on the same examples are equal (Sun and Xu's
    midrank algorithm). Labels are 0/1 (1 positive); higher scores mean positive.

    A worked example, by hand: positives scored (0.9, 0.6, 0.3) by a and (0.8, 0.4, 0.4) by b,
    negatives (0.5, 0.2) and (0.4, 0.7). Then V10_a = (1, 1, 1/2), V01_a = (2/3, 1), AUC_a = 5/6;
    V10_b = (1, 1/4, 1/4), V01_b = (2/3, 1/3), AUC_b = 1/2. S10 = [[1/12, 1/16], [1/16, 3/16]],
    S01 = [[1/18, -1/18], [-1/18, 1/18]], so Var_a = 1/18, Var_b = 13/144, Cov = -1/144, the
    difference's variance 23/144 and z = (1/3) / (sqrt(23) / 12) = 4 / sqrt(23) = 0.834, p = 0.404.

    >>> result = delong_test([1, 1, 1, 0, 0], [0.9, 0.6, 0.3, 0.5, 0.2], [0.8, 0.4, 0.4, 0.4, 0.7])
    >>> print(f"{result.auc_a:.4f} {result.auc_b:.4f} z={result.z:.4f} p={result.p_value:.4f}")
    0.8333 0.5000 z=0.8341 p=0.4042
    """
    positive, scores = _paired_inputs(y_true, score_a, score_b)
    m, n = int(positive.sum()), int((~positive).sum())
    a_auc, a10, a01 = _placements(scores[0, positive], scores[0, ~positive])
    b_auc, b10, b01 = _placements(scores[1, positive], scores[1, ~positive])
    s = _covariance(np.vstack([a10, b10])) / m + _covariance(np.vstack([a01, b01])) / n
    difference = a_auc - b_auc
    variance = max(float(s[0, 0] + s[1, 1] - 2.0 * s[0, 1]), 0.0)
    std_error = math.sqrt(variance)
    if std_error > 0.0:
        z = difference / std_error
        from scipy import stats as scipy_stats  # imported when needed: it takes a second to import

        p_value = float(2.0 * scipy_stats.norm.sf(abs(z)))
    else:
        z = 0.0 if difference == 0.0 else math.copysign(math.inf, difference)
        p_value = 1.0 if difference == 0.0 else 0.0
    return DeLongTest(
        auc_a=a_auc, auc_b=b_auc, difference=difference, variance_a=float(s[0, 0]),
        variance_b=float(s[1, 1]), covariance=float(s[0, 1]), std_error=std_error, z=float(z),
        p_value=p_value, n_positive=m, n_negative=n,
    )  # fmt: skip


def _counts(rng: np.random.Generator, rows: int, size: int) -> IntArray:
    """How often each of `size` items is drawn in each of `rows` resamples of `size` draws."""
    drawn = rng.integers(0, size, size=(rows, size))
    offsets = (np.arange(rows, dtype=np.int64) * size)[:, None]
    return np.bincount((drawn + offsets).ravel(), minlength=rows * size).reshape(rows, size)


class _Placement:
    """One model's positions of each positive among its sorted negatives (strictly below, at or below)."""

    def __init__(self, positives: FloatArray, negatives: FloatArray) -> None:
        self.order = np.argsort(negatives, kind="stable")
        ordered = negatives[self.order]
        self.below = np.searchsorted(ordered, positives, side="left")
        self.at_or_below = np.searchsorted(ordered, positives, side="right")

    def weighted_auc(self, positive_counts: IntArray, negative_counts: IntArray) -> FloatArray:
        """sum_i c_i sum_j d_j psi(X_i, Y_j) / (m n) for each row of counts."""
        rows, n = negative_counts.shape
        cumulative = np.zeros((rows, n + 1))
        np.cumsum(negative_counts[:, self.order], axis=1, out=cumulative[:, 1:])
        below = cumulative[:, self.below]
        psi = below + 0.5 * (cumulative[:, self.at_or_below] - below)
        return np.einsum("ij,ij->i", positive_counts, psi) / (positive_counts.shape[1] * n)


def auc_difference_ci(
    y_true: ArrayLike,
    score_a: ArrayLike,
    score_b: ArrayLike,
    *,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> AucDifferenceInterval:
    """Percentile bootstrap interval of AUC_a - AUC_b, resampling the examples (positives and negatives
    apart) with the same draws for both models.

    The draws: ``np.random.SeedSequence(seed).spawn(2)`` seeds one generator for the positives and one
    for the negatives; each batch draws a ``(rows, m)`` and a ``(rows, n)`` matrix of indices from
    them (``integers(0, m)``, ``integers(0, n)``), so the resamples do not depend on the batch size and
    resample r is exactly the r-th row of one big draw.

    >>> ci = auc_difference_ci([1, 1, 1, 0, 0], [0.9, 0.6, 0.3, 0.5, 0.2], [0.8, 0.4, 0.4, 0.4, 0.7])
    >>> print(f"{ci.estimate:.3f} in [{ci.low:.3f}, {ci.high:.3f}]")
    0.333 in [-0.333, 1.000]
    """
    positive, scores = _paired_inputs(y_true, score_a, score_b)
    check_count(n_resamples, name="n_resamples")
    check_probability(confidence, name="confidence")
    models = [_Placement(scores[r, positive], scores[r, ~positive]) for r in range(2)]
    m, n = int(positive.sum()), int((~positive).sum())
    observed = [
        model.weighted_auc(np.ones((1, m), np.int64), np.ones((1, n), np.int64))[0] for model in models
    ]
    positives_rng, negatives_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    differences = np.empty(n_resamples)
    rows = batch_rows(2 * (m + n))
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        c, d = _counts(positives_rng, size, m), _counts(negatives_rng, size, n)
        differences[start : start + size] = models[0].weighted_auc(c, d) - models[1].weighted_auc(c, d)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(differences, [tail, 1.0 - tail])
    spread = n_resamples > 1 and np.ptp(differences) > 0
    return AucDifferenceInterval(
        estimate=float(observed[0] - observed[1]), low=float(low), high=float(high),
        confidence=float(confidence), std_error=float(differences.std(ddof=1)) if spread else 0.0,
        n_resamples=n_resamples,
    )  # fmt: skip
