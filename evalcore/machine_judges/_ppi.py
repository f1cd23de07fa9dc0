"""Prediction-powered inference for a run's mean metric: many machine-judged queries, a few human ones.

Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference" (Science, 2023), for a
mean; applied to IR evaluation by Oosterhuis, Jagerman, Qin, Wang and Bendersky, "Reliable confidence
intervals for information retrieval evaluation using generative AI" (KDD 2024). The power-tuned variant
is Angelopoulos, Duchi and Zrnic, "PPI++: Efficient prediction-powered inference" (2023).

A run is scored per query twice: ``f_i``, its metric on the machine's labels, for all ``N`` queries the
machine judged, and ``Y_j``, its metric on the humans' labels, for ``n`` of them chosen at random and
judged completely by people (``f_j`` is the machine's value on the same query). With ``mean_N`` and
``var_N`` the mean and sample variance (``ddof=1``) over the ``N`` queries, and ``mean_n``, ``var_n``,
``cov_n`` over the ``n``:

- PPI: ``theta = mean_N(f) + mean_n(Y - f)``; the rectifier ``mean_n(Y - f)`` removes the machine's
  bias, whatever it is.
- PPI++ (power-tuned): ``theta_lambda = lambda mean_N(f) + mean_n(Y - lambda f)``; ``lambda = 1`` is PPI,
  ``lambda = 0`` the human-only mean.
- Human only: ``mean_n(Y)``, standard error ``sqrt(var_n(Y) / n)``: valid, but wide.
- Machine only: ``mean_N(f)``, standard error ``sqrt(var_N(f) / N)``: narrow, and wrong by the
  machine's bias.

The variance. The papers' ``var_N(f) / N + var_n(Y - f) / n`` holds when the human-judged queries are
*not* among the ``N`` (independent samples). Here they are (the ``n`` are drawn from the ``N``), so the
two means are correlated, ``Cov(mean_N(f), mean_n(r)) = cov(f, r) / N`` for the rectifier
``r = Y - lambda f``, and the variance is

    Var(theta_lambda) = lambda^2 var(f) / N + var(r) / n + 2 lambda cov(f, r) / N
                      = var(Y) / N + (1 / n - 1 / N) var(r),

the two-phase sampling form: it is estimated with ``var_N(f)``, ``var_n(r)`` and ``cov_n(f, r)``
(``var(Y)`` clipped at 0). Without the covariance term a machine whose errors shrink its spread
(``cov(f, r) < 0``) gets intervals that cover too often, one that exaggerates it intervals that cover
too rarely; the simulated coverage in the tests shows the difference. Minimising the variance over
``lambda`` gives PPI++'s power tuning for nested samples, ``lambda = cov_n(Y, f) / var_N(f)`` (the
``1 + n / N`` of PPI++'s independent samples becomes 1), clipped to ``[0, 1]`` so that the estimate
stays between plain PPI and the human-only mean.

Each interval is the normal approximation ``theta +- z_{1 - alpha/2} SE``. Two estimands:

- ``"population"`` (the default, the papers'): the mean metric over the population of queries the ``N``
  are drawn from, with the variances above.
- ``"queries"``: the mean over the ``N`` queries themselves. The machine's values on them are known, so
  the only sampling is the draw of the ``n`` among the ``N`` (without replacement), and
  ``Var(theta_lambda) = (1 / n - 1 / N) var(r)``: the ``var(Y) / N`` term goes. The human-only variance
  is ``(1 / n - 1 / N) var_n(Y)`` and the machine-only mean has none (its error is all bias). The
  population interval, used for this estimand, is conservative.

A standard error is ``NaN`` (undefined) when a variance has a single value to go on, ``n = 1`` or
``N = 1``, and so are the interval's ends.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import FloatArray, StatsInputError, as_scores, check_probability

#: What an interval is for: the mean over the population of queries, or over the ``N`` judged ones.
Estimand: TypeAlias = Literal["population", "queries"]
ESTIMANDS: tuple[Estimand, ...] = ("population", "queries")


class NoHumanQueriesError(StatsInputError):
    """PPI needs at least one query judged by people."""


@dataclass(frozen=True)
class MeanEstimate:
    """A mean metric with its standard error and ``1 - alpha`` normal interval (``NaN`` where undefined)."""

    estimate: float
    std_error: float
    ci_low: float
    ci_high: float
    queries: int

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2.0


@dataclass(frozen=True)
class PPIComparison:
    """A run's mean metric estimated four ways from the same queries; see the module docstring."""

    ppi: MeanEstimate
    ppi_plus_plus: MeanEstimate
    human_only: MeanEstimate
    machine_only: MeanEstimate
    tuning: float  # PPI++'s lambda
    alpha: float
    queries: int
    human_queries: int
    estimand: Estimand = "population"


def ppi_mean(
    machine_all: ArrayLike,
    human_sample: ArrayLike,
    machine_sample: ArrayLike,
    *,
    alpha: float = 0.05,
    tuning: float = 1.0,
    estimand: Estimand = "population",
) -> MeanEstimate:
    """PPI's estimate of a mean metric, ``tuning * mean_N(f) + mean_n(Y - tuning * f)``, with its interval.

    ``machine_all``: the metric on the machine's labels, one value per query (``N``); ``human_sample``
    and ``machine_sample``: the metric on the humans' and the machine's labels of the ``n`` randomly
    chosen, human-judged queries, aligned. ``tuning=1`` is PPI, ``0`` the human-only estimate; see
    ``ppi_tuning`` for PPI++'s choice; ``estimand`` see the module docstring.

    >>> estimate = ppi_mean([0.5, 0.7, 0.6, 0.8], [0.4, 0.5], [0.5, 0.7])
    >>> print(f"{estimate.estimate:.3f} {estimate.std_error:.4f}")
    0.500 0.0408
    """
    f_all, y, f = _checked(machine_all, human_sample, machine_sample)
    check_probability(alpha, name="alpha")
    _check_estimand(estimand)
    lam = float(tuning)
    rectifier = y - lam * f
    estimate = lam * f_all.mean() + rectifier.mean()
    spread = _variance(rectifier)
    variance = (1.0 / y.size - 1.0 / f_all.size) * spread
    if estimand == "population":
        spread_y = max(lam * lam * _variance(f_all) + 2.0 * lam * _covariance(f, rectifier) + spread, 0.0)
        variance += spread_y / f_all.size
    return _interval(float(estimate), variance, alpha, queries=f_all.size)


def ppi_tuning(machine_all: ArrayLike, human_sample: ArrayLike, machine_sample: ArrayLike) -> float:
    """PPI++'s power tuning for nested samples, ``lambda = cov_n(Y, f) / var_N(f)``, clipped to ``[0, 1]``.

    0 where the machine's values do not vary (``var_N(f) = 0``) or with a single human query.
    """
    f_all, y, f = _checked(machine_all, human_sample, machine_sample)
    spread = _variance(f_all)
    if y.size < 2 or not spread > 0:
        return 0.0
    return float(np.clip(_covariance(y, f) / spread, 0.0, 1.0))


def sample_mean(
    values: ArrayLike, *, alpha: float = 0.05, population_size: int | None = None
) -> MeanEstimate:
    """The plain mean with ``SE = sqrt(var / n)``: the human-only (or machine-only) estimate.

    With ``population_size`` ``N``, the mean of the ``N`` the ``n`` values were drawn from without
    replacement: ``SE = sqrt((1 / n - 1 / N) var)``, 0 when ``n = N``.
    """
    x = as_scores(values, name="values")
    check_probability(alpha, name="alpha")
    if population_size is not None and population_size < x.size:
        raise StatsInputError(f"population_size {population_size} is smaller than the sample ({x.size})")
    correction = 1.0 if population_size is None else 1.0 - x.size / population_size
    variance = _variance(x) * correction / x.size if correction > 0 else 0.0
    return _interval(float(x.mean()), variance, alpha, queries=x.size)


def ppi_compare(
    machine_all: ArrayLike,
    human_sample: ArrayLike,
    machine_sample: ArrayLike,
    *,
    alpha: float = 0.05,
    estimand: Estimand = "population",
) -> PPIComparison:
    """PPI, PPI++, human-only and machine-only estimates of one run's mean metric, side by side."""
    f_all, y, f = _checked(machine_all, human_sample, machine_sample)
    _check_estimand(estimand)
    lam = ppi_tuning(f_all, y, f)
    size = None if estimand == "population" else f_all.size
    return PPIComparison(
        ppi=ppi_mean(f_all, y, f, alpha=alpha, estimand=estimand),
        ppi_plus_plus=ppi_mean(f_all, y, f, alpha=alpha, tuning=lam, estimand=estimand),
        human_only=sample_mean(y, alpha=alpha, population_size=size),
        machine_only=sample_mean(f_all, alpha=alpha, population_size=size),
        tuning=lam,
        alpha=alpha,
        queries=int(f_all.size),
        human_queries=int(y.size),
        estimand=estimand,
    )


def _check_estimand(estimand: str) -> None:
    if estimand not in ESTIMANDS:
        raise StatsInputError(f"estimand must be 'population' or 'queries'; got {estimand!r}")


def _checked(machine_all: ArrayLike, human_sample: ArrayLike, machine_sample: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:  # fmt: skip
    y = np.asarray(human_sample, dtype=np.float64)
    if y.ndim == 1 and y.size == 0:
        raise NoHumanQueriesError(
            "no query was judged by people: prediction-powered inference needs a random sample of "
            "human-judged queries to correct the machine's labels"
        )
    f_all = as_scores(machine_all, name="machine_all")
    y = as_scores(y, name="human_sample")
    f = as_scores(machine_sample, name="machine_sample")
    if f.shape != y.shape:
        raise StatsInputError(
            f"human_sample and machine_sample must be aligned: {y.size} and {f.size} values"
        )
    if y.size > f_all.size:
        raise StatsInputError(
            f"{y.size} human-judged queries but {f_all.size} machine-judged ones: the human queries "
            "must be a sample of the machine's"
        )
    return f_all, y, f


def _variance(x: FloatArray) -> float:
    return float(x.var(ddof=1)) if x.size > 1 else math.nan


def _covariance(x: FloatArray, y: FloatArray) -> float:
    return float(np.cov(x, y, ddof=1)[0, 1]) if x.size > 1 else math.nan


def _interval(estimate: float, variance: float, alpha: float, *, queries: int) -> MeanEstimate:
    std_error = math.sqrt(variance) if variance >= 0 else math.nan
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    return MeanEstimate(estimate, std_error, estimate - z * std_error, estimate + z * std_error, queries)
