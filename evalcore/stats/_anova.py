"""Many systems over the same topics: two-way ANOVA without replication and Tukey's HSD.

``scores`` is an (m systems, n topics) matrix: row i holds system i's per-topic scores, every system on
the same topics in the same order. With x_ij the score of system i on topic j, x_i. the system means,
x_.j the topic means and x_.. the grand mean:

    SS_systems = n sum_i (x_i. - x_..)^2                   df = m - 1
    SS_topics  = m sum_j (x_.j - x_..)^2                   df = n - 1
    SS_residual = sum_ij (x_ij - x_i. - x_.j + x_..)^2     df = (m - 1)(n - 1)
    F = (SS_effect / df_effect) / (SS_residual / df_residual), p = P(F_{df_effect, df_residual} >= F)

(the additive model ``score ~ C(system) + C(topic)``; statsmodels' ``anova_lm`` on that OLS fit gives
the same table). The residual mean square MS_residual is the residual variance.

Tukey's honestly significant difference compares every pair of systems at once:
q_ij = |x_i. - x_j.| / sqrt(MSE / n), p_ij = P(Q_{m, df} >= q_ij) with Q the studentized range.
Two designs, by which MSE and df they take:

- ``"randomised-block"`` (the default here): topics are blocks, so the topic effect is removed and
  MSE = MS_residual of the two-way ANOVA, df = (m - 1)(n - 1). This is the design of an IR test
  collection (Carterette, "Multiple testing in statistical analysis of systems-based information
  retrieval experiments", TOIS 2012), and it is the more powerful one when topics differ.
- ``"one-way"``: systems as independent groups, MSE = the pooled within-system variance
  sum_ij (x_ij - x_i.)^2 / (m (n - 1)), df = m (n - 1). This is what ranx does (it calls
  ``scipy.stats.tukey_hsd`` on the per-system score vectors) and what statsmodels'
  ``pairwise_tukeyhsd`` computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import FloatArray, StatsInputError, check_choice, check_probability

__all__ = ["AnovaEffect", "TukeyDesign", "TukeyHSD", "TwoWayAnova", "tukey_hsd", "two_way_anova"]

TukeyDesign: TypeAlias = Literal["randomised-block", "one-way"]


def as_system_matrix(scores: ArrayLike, *, min_systems: int = 2, min_topics: int = 2) -> FloatArray:
    """``scores`` as a finite (systems, topics) float64 matrix of at least the given size."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2:
        raise StatsInputError(f"scores must be a (systems, topics) matrix, got shape {matrix.shape}")
    m, n = matrix.shape
    if m < min_systems or n < min_topics:
        raise StatsInputError(
            f"scores need at least {min_systems} systems and {min_topics} topics, got {m} and {n}"
        )
    if not np.isfinite(matrix).all():
        raise StatsInputError("scores contain NaN or infinite values")
    return matrix


@dataclass(frozen=True, slots=True)
class AnovaEffect:
    """One row of the ANOVA table; ``f`` and ``p_value`` are NaN for the residual row."""

    sum_sq: float
    df: int
    mean_sq: float
    f: float
    p_value: float


@dataclass(frozen=True, slots=True)
class TwoWayAnova:
    systems: AnovaEffect
    topics: AnovaEffect
    residual: AnovaEffect

    @property
    def residual_variance(self) -> float:
        """MS_residual, the error variance of the additive model (the MSE of a blocked Tukey HSD)."""
        return self.residual.mean_sq


def _effect(sum_sq: float, df: int, residual_mean_sq: float, residual_df: int) -> AnovaEffect:
    from scipy import stats as scipy_stats  # imported when needed: it takes a second to import

    mean_sq = sum_sq / df
    if residual_mean_sq > 0:
        f = mean_sq / residual_mean_sq
        p_value = float(scipy_stats.f.sf(f, df, residual_df))
    else:  # a perfectly additive table: any effect is exact, none is undefined
        f = float("inf") if mean_sq > 0 else float("nan")
        p_value = 0.0 if mean_sq > 0 else float("nan")
    return AnovaEffect(sum_sq=float(sum_sq), df=df, mean_sq=float(mean_sq), f=float(f), p_value=p_value)


def two_way_anova(scores: ArrayLike) -> TwoWayAnova:
    """Two-way ANOVA without replication of an (m systems, n topics) matrix (module docstring).

    >>> table = two_way_anova([[0.5, 0.6, 0.3, 0.8], [0.4, 0.5, 0.3, 0.6], [0.2, 0.4, 0.1, 0.5]])
    >>> print(f"F_sys={table.systems.f:.2f} p={table.systems.p_value:.4f} MSE={table.residual_variance:.5f}")
    F_sys=28.50 p=0.0009 MSE=0.00222
    """
    x = as_system_matrix(scores)
    m, n = x.shape
    grand = x.mean()
    system_means, topic_means = x.mean(axis=1), x.mean(axis=0)
    ss_systems = n * float(np.sum((system_means - grand) ** 2))
    ss_topics = m * float(np.sum((topic_means - grand) ** 2))
    residuals = x - system_means[:, None] - topic_means[None, :] + grand
    ss_residual = float(np.sum(residuals**2))
    if ss_residual <= 64 * np.finfo(np.float64).eps * float(np.sum((x - grand) ** 2)):
        ss_residual = 0.0  # rounding noise of an exactly additive table
    df_residual = (m - 1) * (n - 1)
    ms_residual = ss_residual / df_residual
    nan = float("nan")
    return TwoWayAnova(
        systems=_effect(ss_systems, m - 1, ms_residual, df_residual),
        topics=_effect(ss_topics, n - 1, ms_residual, df_residual),
        residual=AnovaEffect(sum_sq=ss_residual, df=df_residual, mean_sq=ms_residual, f=nan, p_value=nan),
    )


@dataclass(frozen=True, slots=True)
class TukeyHSD:
    """Every pair of systems: ``mean_difference[i, j] = x_i. - x_j.``, its q, p and simultaneous
    interval at ``confidence`` (arrays of shape (m, m); the diagonal compares a system with itself)."""

    design: str
    mse: float
    df: int
    mean_difference: FloatArray
    statistic: FloatArray
    p_values: FloatArray
    lower: FloatArray
    upper: FloatArray
    confidence: float

    def significant(self, alpha: float = 0.05) -> np.ndarray:
        """(m, m) booleans: the pairs whose difference is significant at ``alpha`` (p < alpha)."""
        return self.p_values < alpha


def tukey_hsd(
    scores: ArrayLike, *, design: TukeyDesign = "randomised-block", confidence: float = 0.95
) -> TukeyHSD:
    """Tukey's HSD over the systems of an (m, n) matrix, with the MSE of ``design`` (module docstring).

    >>> hsd = tukey_hsd([[0.5, 0.6, 0.3, 0.8], [0.4, 0.5, 0.3, 0.6], [0.2, 0.4, 0.1, 0.5]])
    >>> print(f"{hsd.mean_difference[0, 2]:.3f} p={hsd.p_values[0, 2]:.4f}")
    0.250 p=0.0007
    """
    choice = check_choice(design, name="design", choices=("randomised-block", "one-way"))
    check_probability(confidence, name="confidence")
    x = as_system_matrix(scores)
    m, n = x.shape
    means = x.mean(axis=1)
    if choice == "randomised-block":
        mse, df = two_way_anova(x).residual_variance, (m - 1) * (n - 1)
    else:
        mse, df = float(np.sum((x - means[:, None]) ** 2)) / (m * (n - 1)), m * (n - 1)
    from scipy import stats as scipy_stats

    difference = means[:, None] - means[None, :]
    standard_error = np.sqrt(mse / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(difference == 0, 0.0, np.abs(difference) / standard_error)
    # The studentized range's tail is a numerical integral per value: evaluate each pair once.
    first, second = np.triu_indices(m, k=1)
    p_values = np.ones((m, m))
    upper = np.asarray(scipy_stats.studentized_range.sf(q[first, second], m, df), dtype=np.float64)
    p_values[first, second] = p_values[second, first] = np.where(q[first, second] == 0, 1.0, upper)
    half_width = float(scipy_stats.studentized_range.ppf(confidence, m, df)) * standard_error
    return TukeyHSD(
        design=choice, mse=mse, df=df, mean_difference=difference, statistic=q, p_values=p_values,
        lower=difference - half_width, upper=difference + half_width, confidence=confidence,
    )  # fmt: skip
