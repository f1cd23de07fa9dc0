"""Power analysis: sample sizes for a minimum detectable effect, and the inverse.

All four functions use the normal (z) approximation for a two-sided test at
level ``alpha`` with power ``power``:

    two independent groups:  n per group = 2 ((z_{1-alpha/2} + z_{power}) sd / delta)^2
    paired (one sample):     n pairs     =   ((z_{1-alpha/2} + z_{power}) sd_diff / delta)^2

rounded up, where ``delta`` is the absolute effect, or ``mde * |baseline|`` when
a ``baseline`` is given (a relative effect, such as "a 5% lift on a 0.15 CTR").

``statsmodels.stats.power.NormalIndPower`` (``effect_size = delta / sd``,
``ratio=1``; ``ratio=0`` for the paired case) solves the same equation but
also counts the probability of rejecting in the wrong tail,
``Phi(-z_{1-alpha/2} - delta sqrt(n / 2) / sd)``, about 1e-6 at ``alpha=0.05,
power=0.8``, and solves numerically. Its sample sizes are therefore a few
millionths smaller (889,537.5 rather than 889,539.7 before rounding up, in seed
004's 1% example) and its effects agree to about 1e-5 relative (1e-6 from the
extra tail, the rest from its root finder's tolerance). Seed 004's closed form
is kept: it is the textbook formula and reproduces the seed's table exactly. The z
approximation is slightly optimistic for small samples (a t-test with 20
queries needs about 2 more); ``statsmodels.stats.power.TTestPower`` gives the
exact t-based answer there.
"""

from __future__ import annotations

import math

from evalcore.stats._validation import check_count, check_positive, check_probability


def sample_size_per_group(
    sd: float,
    mde: float,
    *,
    baseline: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Observations per group for a two-sample, two-sided z-test to detect ``mde``.

    ``sd`` is the standard deviation of the metric per observation (for a rate
    ``p``, ``sqrt(p (1 - p))``). ``mde`` is absolute, or relative to
    ``baseline`` when that is given.

    >>> sample_size_per_group(math.sqrt(0.15 * 0.85), 0.05, baseline=0.15)
    35582
    """
    delta = _absolute_effect(mde, baseline)
    return _ceil_sample_size(2.0 * (_z_sum(alpha, power) * check_positive(sd, name="sd") / delta) ** 2)


def minimum_detectable_effect(
    sd: float,
    n_per_group: int,
    *,
    baseline: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Smallest effect a two-sample, two-sided z-test detects with ``n_per_group`` per group.

    The effect is absolute, or relative to ``baseline`` when that is given.

    >>> print(f"{minimum_detectable_effect(math.sqrt(0.15 * 0.85), 10_000, baseline=0.15):.1%}")
    9.4%
    """
    n = check_count(n_per_group, name="n_per_group")
    delta = _z_sum(alpha, power) * check_positive(sd, name="sd") * math.sqrt(2.0 / n)
    return _relative_effect(delta, baseline)


def sample_size_paired(
    sd_diff: float,
    mde: float,
    *,
    baseline: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Pairs (queries judged under both systems) for a paired two-sided z-test to detect ``mde``.

    ``sd_diff`` is the standard deviation of the per-query differences, which is
    usually far below the per-query spread of either run, hence far fewer queries.

    >>> sample_size_paired(0.1, 0.02)
    197
    """
    delta = _absolute_effect(mde, baseline)
    return _ceil_sample_size((_z_sum(alpha, power) * check_positive(sd_diff, name="sd_diff") / delta) ** 2)


def minimum_detectable_effect_paired(
    sd_diff: float,
    n: int,
    *,
    baseline: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Smallest mean per-query difference a paired two-sided z-test detects with ``n`` pairs.

    >>> print(f"{minimum_detectable_effect_paired(0.1, 200):.4f}")
    0.0198
    """
    pairs = check_count(n, name="n")
    delta = _z_sum(alpha, power) * check_positive(sd_diff, name="sd_diff") / math.sqrt(pairs)
    return _relative_effect(delta, baseline)


def _z_sum(alpha: float, power: float) -> float:
    check_probability(alpha, name="alpha")
    check_probability(power, name="power")
    from scipy import stats as scipy_stats  # imported when needed: scipy.stats takes a second to import

    return float(scipy_stats.norm.ppf(1.0 - alpha / 2.0) + scipy_stats.norm.ppf(power))


def _absolute_effect(mde: float, baseline: float | None) -> float:
    effect = check_positive(mde, name="mde")
    if baseline is None:
        return effect
    return effect * check_positive(abs(baseline), name="|baseline|")


def _relative_effect(delta: float, baseline: float | None) -> float:
    if baseline is None:
        return delta
    return delta / check_positive(abs(baseline), name="|baseline|")


def _ceil_sample_size(n: float) -> int:
    # Round up, but not past an exact integer that floating point overshot by a hair.
    return max(1, math.ceil(n * (1.0 - 1e-12)))
