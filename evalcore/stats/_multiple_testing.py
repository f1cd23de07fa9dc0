"""Corrections of p-values for multiple comparisons."""

from __future__ import annotations

from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import (
    BoolArray,
    FloatArray,
    StatsInputError,
    check_choice,
    check_probability,
)

CorrectionMethod: TypeAlias = Literal["bonferroni", "holm", "bh"]


def adjust_p_values(
    p_values: ArrayLike,
    *,
    method: CorrectionMethod = "bonferroni",
    alpha: float = 0.05,
) -> tuple[FloatArray, BoolArray]:
    """Adjust p-values for ``m`` simultaneous tests; return ``(p_adjusted, significant)``.

    - ``"bonferroni"`` controls the family-wise error rate: ``min(1, m * p)``,
      significant where ``p <= alpha / m``.
    - ``"holm"`` (step-down Bonferroni) also controls the family-wise error rate
      and is never less powerful: the i-th smallest p (1-based) gets
      ``max_{j <= i} (m - j + 1) p_(j)``; hypotheses are rejected in order until
      the first ``p_(i) > alpha / (m - i + 1)``.
    - ``"bh"`` (Benjamini-Hochberg step-up) controls the false discovery rate:
      ``min_{j >= i} m p_(j) / j``; every hypothesis up to the largest ``i`` with
      ``p_(i) <= i alpha / m`` is rejected.

    Both arrays are in the order of ``p_values``. The arithmetic follows
    ``statsmodels.stats.multitest.multipletests`` (methods ``"bonferroni"``,
    ``"holm"``, ``"fdr_bh"``) operation for operation, so the results are equal
    bit for bit, ties and the empty input included.

    >>> adjusted, significant = adjust_p_values([0.01, 0.04, 0.03], method="holm")
    >>> print(adjusted.round(3).tolist(), significant.tolist())
    [0.03, 0.06, 0.06] [True, False, False]
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1:
        raise StatsInputError(f"p_values must be one-dimensional, got shape {p.shape}")
    if not ((p >= 0.0) & (p <= 1.0)).all():
        raise StatsInputError("p_values must lie in [0, 1] (NaN is not a p-value)")
    choice = check_choice(method, name="method", choices=("bonferroni", "holm", "bh"))
    check_probability(alpha, name="alpha")
    m = p.size
    order = np.argsort(p, kind="stable")
    sorted_p = p[order]
    if choice == "bonferroni":
        adjusted, rejected = _bonferroni(sorted_p, alpha)
    elif choice == "holm":
        adjusted, rejected = _holm(sorted_p, alpha)
    else:
        adjusted, rejected = _benjamini_hochberg(sorted_p, alpha)
    adjusted = np.minimum(adjusted, 1.0)
    p_adjusted = np.empty(m, dtype=np.float64)
    significant = np.empty(m, dtype=np.bool_)
    p_adjusted[order] = adjusted
    significant[order] = rejected
    return p_adjusted, significant


def _bonferroni(sorted_p: FloatArray, alpha: float) -> tuple[FloatArray, BoolArray]:
    m = sorted_p.size
    if m == 0:
        return sorted_p.copy(), np.zeros(0, dtype=np.bool_)
    return sorted_p * float(m), sorted_p <= alpha / float(m)


def _holm(sorted_p: FloatArray, alpha: float) -> tuple[FloatArray, BoolArray]:
    m = sorted_p.size
    remaining = np.arange(m, 0, -1)
    not_rejected = sorted_p > alpha / remaining
    first_kept = int(np.argmax(not_rejected)) if not_rejected.any() else m
    rejected = np.arange(m) < first_kept
    return np.maximum.accumulate(sorted_p * remaining), rejected


def _benjamini_hochberg(sorted_p: FloatArray, alpha: float) -> tuple[FloatArray, BoolArray]:
    m = sorted_p.size
    rank_share = np.arange(1, m + 1) / float(max(m, 1))
    passes = sorted_p <= rank_share * alpha
    last_passing = int(np.flatnonzero(passes)[-1]) + 1 if passes.any() else 0
    rejected = np.arange(m) < last_passing
    adjusted = np.minimum.accumulate((sorted_p / rank_share)[::-1])[::-1]
    return adjusted, rejected
