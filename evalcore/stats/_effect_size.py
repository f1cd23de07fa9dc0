"""Paired effect sizes of two runs on the same queries: Cohen's d_z and Hedges' g.

With d_i = a_i - b_i over n queries, mean(d) and sd(d) (ddof = 1):

    d_z = mean(d) / sd(d)                                   (Cohen 1988; Lakens 2013, eq. 6)
    g   = J(n - 1) d_z,  J(v) = Gamma(v / 2) / (sqrt(v / 2) Gamma((v - 1) / 2))

J is Hedges' (1981) exact small-sample correction with v = n - 1 degrees of freedom (the paired
t-test's), close to the common approximation 1 - 3 / (4 v - 1). d_z = t / sqrt(n) for the paired t
statistic t. Where sd(d) = 0, d_z is 0 for identical runs and +-inf for a constant non-zero difference.
Both work along the last axis, so a (pairs, n) matrix of differences gives one value per pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import StatsInputError, as_differences

__all__ = ["EffectSize", "cohens_dz", "hedges_correction", "paired_effect_size"]


@dataclass(frozen=True, slots=True)
class EffectSize:
    cohens_dz: float
    hedges_g: float
    n: int


def hedges_correction(df: int) -> float:
    """J(df), the exact bias correction of a standardised mean difference with ``df`` degrees of freedom.

    >>> round(hedges_correction(9), 4), round(1 - 3 / (4 * 9 - 1), 4)
    (0.9139, 0.9143)
    """
    if df < 2:
        raise StatsInputError(f"Hedges' correction needs at least 2 degrees of freedom, got {df}")
    return math.exp(math.lgamma(df / 2) - math.lgamma((df - 1) / 2)) / math.sqrt(df / 2)


def cohens_dz(differences: np.ndarray) -> np.ndarray:
    """mean / sd (ddof 1) along the last axis of ``differences`` (at least two values)."""
    mean = differences.mean(axis=-1)
    sd = differences.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            sd > 0, mean / np.where(sd > 0, sd, 1.0), np.where(mean == 0, 0.0, np.copysign(np.inf, mean))
        )


def paired_effect_size(a: ArrayLike, b: ArrayLike) -> EffectSize:
    """Cohen's d_z and Hedges' g of ``a - b`` (needs three or more queries for g's correction).

    Lakens (2013, "Calculating and reporting effect sizes to facilitate cumulative science", table 1:
    ten people rating two movies) reports d_z = 1.50 with t(9) = 4.74:

    >>> movie1 = [9, 7, 8, 9, 8, 9, 9, 10, 9, 9]
    >>> movie2 = [9, 6, 7, 8, 7, 9, 8, 8, 8, 7]
    >>> size = paired_effect_size(movie1, movie2)
    >>> print(f"d_z={size.cohens_dz:.2f} g={size.hedges_g:.2f}")
    d_z=1.50 g=1.37
    """
    differences = as_differences(a, b, min_size=3)
    dz = float(cohens_dz(differences))
    return EffectSize(cohens_dz=dz, hedges_g=hedges_correction(differences.size - 1) * dz, n=differences.size)
