"""Paired significance tests between two runs over the same queries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import (
    as_differences,
    batch_rows,
    check_choice,
    check_count,
)

PairedTestName: TypeAlias = Literal["t", "wilcoxon", "randomization"]

# Relative tolerance for "a permuted statistic is at least the observed one".
# The observed sum and each sign-flipped sum are computed in different orders
# (a reduction versus a matrix product), so a flip that is mathematically equal
# to the observation (the identity, its mirror, or flips of equal |d_i|) can
# land a few ulps below it and be missed. The rounding error of a sum is bounded
# by about n * eps * sum|d_i| (1e-11 for n = 1e5), far below this tolerance,
# and genuinely different sums are never this close in practice.
_TIE_RTOL = 1e-9


@dataclass(frozen=True, slots=True)
class TestResult:
    """The outcome of a paired significance test.

    ``statistic`` is the test's own statistic: t for the t-test, the smaller of
    the signed-rank sums for Wilcoxon (as scipy reports it), and the observed
    mean difference ``mean(a - b)`` for the randomization test. ``n`` is the
    number of pairs given, zero differences included.
    """

    __test__: ClassVar[bool] = False  # not a pytest test class despite its name

    statistic: float
    p_value: float
    test_name: str
    n: int


def paired_t_test(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Two-sided paired t-test of ``mean(a - b) == 0``; matches ``scipy.stats.ttest_rel``.

    ``t = mean(d) / (sd(d, ddof=1) / sqrt(n))`` with ``n - 1`` degrees of freedom.
    Needs at least two pairs. Where scipy returns NaN, that is for identical
    runs (every difference 0), this returns ``t = 0`` and ``p = 1``: no evidence
    of a difference. A constant non-zero difference gives ``t = +-inf`` and
    ``p = 0``, as in scipy.

    >>> result = paired_t_test([0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.7, 0.6])
    >>> print(f"t={result.statistic:.3f} p={result.p_value:.3f}")
    t=1.987 p=0.141
    """
    differences = as_differences(a, b, min_size=2)
    n = differences.size
    mean = differences.mean()
    sd = differences.std(ddof=1)
    if sd == 0.0:
        statistic = 0.0 if mean == 0.0 else float(np.copysign(np.inf, mean))
        p_value = 1.0 if mean == 0.0 else 0.0
    else:
        statistic = float(mean / (sd / np.sqrt(n)))
        from scipy import stats as scipy_stats  # imported when needed: it takes a second to import

        p_value = float(2.0 * scipy_stats.t.sf(abs(statistic), n - 1))
    return TestResult(statistic=statistic, p_value=p_value, test_name="t", n=n)


def wilcoxon_test(a: ArrayLike, b: ArrayLike) -> TestResult:
    """Two-sided Wilcoxon signed-rank test of the differences ``a - b``; delegates to scipy.

    Uses ``scipy.stats.wilcoxon`` with its defaults: ``zero_method="wilcox"``
    (zero differences are dropped before ranking, so ``n`` effective is the
    number of non-zero differences), no continuity correction, and
    ``method="auto"``: the exact null distribution for up to 50 pairs without
    ties or zeros, an exhaustive permutation test for up to 13 pairs with ties
    or zeros, and the normal approximation otherwise. When every difference is
    zero the p-value is 1 (scipy would warn and divide by zero on the way).

    Wilcoxon tests a shift in the median of the differences, not their mean; for
    comparing mean effectiveness prefer the t-test or the randomization test.

    >>> result = wilcoxon_test([0.5, 0.6, 0.7, 0.9, 0.3], [0.4, 0.5, 0.6, 0.6, 0.35])
    >>> print(f"W={result.statistic:.1f} p={result.p_value:.4f}")
    W=1.0 p=0.1250
    """
    differences = as_differences(a, b)
    if not differences.any():
        return TestResult(statistic=0.0, p_value=1.0, test_name="wilcoxon", n=differences.size)
    from scipy import stats as scipy_stats

    result = scipy_stats.wilcoxon(differences)
    return TestResult(
        statistic=float(result.statistic),
        p_value=float(result.pvalue),
        test_name="wilcoxon",
        n=differences.size,
    )


def randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_permutations: int = 10_000,
    seed: int | None = 0,
) -> TestResult:
    """Two-sided Fisher randomization (sign-flip permutation) test for paired scores.

    Under the null hypothesis the two runs are exchangeable per query, so each
    difference ``d_i = a_i - b_i`` is equally likely to have either sign. The test
    draws ``n_permutations`` random sign vectors (a ``(batch, n)`` matrix per batch
    from ``np.random.default_rng(seed)``, so a seed always gives the same p-value)
    and counts how often ``|mean(s * d)| >= |mean(d)|``, comparing with a relative
    tolerance so that flips equal to the observation up to rounding count as ties.
    With the +1 correction (the observed assignment is one of the permutations),

        p = (1 + #{|T*| >= |T_obs|}) / (1 + n_permutations),

    which is never 0 and is exactly 1 for identical runs.

    >>> result = randomization_test([0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.7, 0.6], seed=1)
    >>> print(f"diff={result.statistic:.3f} p={result.p_value:.3f}")
    diff=0.125 p=0.245
    """
    differences = as_differences(a, b)
    check_count(n_permutations, name="n_permutations")
    n = differences.size
    observed = abs(differences.sum())
    threshold = observed - _TIE_RTOL * np.abs(differences).sum()
    rng = np.random.default_rng(seed)
    rows = batch_rows(n)
    at_least_as_extreme = 0
    for start in range(0, n_permutations, rows):
        size = min(rows, n_permutations - start)
        signs = 1.0 - 2.0 * (rng.random((size, n)) < 0.5)
        at_least_as_extreme += int(np.count_nonzero(np.abs(signs @ differences) >= threshold))
    p_value = (1 + at_least_as_extreme) / (1 + n_permutations)
    return TestResult(
        statistic=float(differences.mean()),
        p_value=float(p_value),
        test_name="randomization",
        n=n,
    )


def paired_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    test: PairedTestName = "t",
    seed: int | None = 0,
    n_permutations: int = 10_000,
) -> TestResult:
    """Run the named two-sided paired test on aligned per-query scores of two runs.

    ``test`` is ``"t"`` (``paired_t_test``), ``"wilcoxon"`` (``wilcoxon_test``) or
    ``"randomization"`` (``randomization_test``, which alone uses ``seed`` and
    ``n_permutations``).
    """
    choice = check_choice(test, name="test", choices=("t", "wilcoxon", "randomization"))
    if choice == "t":
        return paired_t_test(a, b)
    if choice == "wilcoxon":
        return wilcoxon_test(a, b)
    return randomization_test(a, b, n_permutations=n_permutations, seed=seed)
