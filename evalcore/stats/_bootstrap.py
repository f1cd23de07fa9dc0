"""Percentile bootstrap confidence intervals over per-query scores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.stats._validation import (
    FloatArray,
    as_differences,
    as_scores,
    batch_rows,
    check_choice,
    check_count,
    check_probability,
)

Statistic: TypeAlias = Literal["mean", "median"]

_REDUCERS: dict[str, Callable[..., FloatArray]] = {"mean": np.mean, "median": np.median}


@dataclass(frozen=True)
class BootstrapOptions:
    """How a run's confidence interval of a mean is drawn, declared once for every caller.

    The evaluation job (the web and the API), `eval_retrieval`-style reports and `compare_runs` all
    read `DEFAULT_BOOTSTRAP`, so the same run and qrels give the same interval everywhere: a percentile
    bootstrap over the queries the mean averages over, `n_resamples` draws from
    ``np.random.default_rng(seed)``. Only `confidence` is an option of an evaluation.
    """

    n_resamples: int = 2_000
    confidence: float = 0.95
    seed: int = 0
    method: Literal["percentile"] = "percentile"

    def interval(self, scores: ArrayLike) -> ConfidenceInterval:
        return bootstrap_ci(scores, n_resamples=self.n_resamples, confidence=self.confidence, seed=self.seed)


#: The per-run interval of the web, the API and the commands.
DEFAULT_BOOTSTRAP = BootstrapOptions()


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A point estimate with a two-sided confidence interval.

    ``std_error`` is the standard deviation (ddof=1, as in ``scipy.stats.bootstrap``)
    of the bootstrap distribution of the statistic.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    std_error: float


def bootstrap_ci(
    scores: ArrayLike,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
    statistic: Statistic = "mean",
) -> ConfidenceInterval:
    """Percentile bootstrap confidence interval of the mean (or median) of per-query scores.

    Queries are resampled with replacement ``n_resamples`` times; the interval is
    the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (linear
    interpolation, as ``np.percentile``) of the resampled statistic. The resamples
    are drawn as ``(batch, n)`` index matrices from ``np.random.default_rng(seed)``,
    in batches of at most ``MAX_BATCH_ELEMENTS`` indices, and the draws do not
    depend on the batch size: the result equals
    ``scipy.stats.bootstrap((scores,), np.mean, method="percentile",
    rng=np.random.default_rng(seed), n_resamples=n_resamples)``.

    An empty ``scores`` raises ``StatsInputError``. A single score gives the
    degenerate interval ``[x, x]`` with a standard error of 0: one query says
    nothing about the spread, so report such an interval with its ``n``.

    >>> ci = bootstrap_ci([0.2, 0.4, 0.6, 0.8], n_resamples=2_000, seed=1)
    >>> print(f"{ci.estimate:.2f} [{ci.low:.2f}, {ci.high:.2f}]")
    0.50 [0.30, 0.70]
    """
    values = as_scores(scores)
    check_count(n_resamples, name="n_resamples")
    check_probability(confidence, name="confidence")
    reduce = _REDUCERS[check_choice(statistic, name="statistic", choices=tuple(_REDUCERS))]
    distribution = _bootstrap_distribution(values, reduce, n_resamples=n_resamples, seed=seed)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(distribution, [tail, 1.0 - tail])
    # A constant distribution (one score, or all equal) has no spread, whatever the rounding of its mean.
    constant = n_resamples == 1 or np.ptp(distribution) == 0.0
    std_error = 0.0 if constant else float(distribution.std(ddof=1))
    return ConfidenceInterval(
        estimate=float(reduce(values)),
        low=float(low),
        high=float(high),
        confidence=float(confidence),
        std_error=std_error,
    )


def paired_bootstrap_ci(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
    statistic: Statistic = "mean",
) -> ConfidenceInterval:
    """Bootstrap confidence interval of the per-query difference ``a - b`` of two runs.

    The queries are resampled jointly (the pairing is kept), which is the
    bootstrap of the differences; an interval that excludes 0 agrees with a
    two-sided test at level ``1 - confidence`` in most cases.

    >>> ci = paired_bootstrap_ci([0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.7, 0.6], seed=1)
    >>> print(f"{ci.estimate:.3f}")
    0.125
    """
    return bootstrap_ci(
        as_differences(a, b),
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        statistic=statistic,
    )


def _bootstrap_distribution(
    values: FloatArray,
    reduce: Callable[..., FloatArray],
    *,
    n_resamples: int,
    seed: int | None,
) -> FloatArray:
    """The statistic over ``n_resamples`` resamples, one ``(rows, n)`` index matrix per batch.

    Consecutive ``Generator.integers`` calls with the default int64 dtype draw the
    same stream as one large call, so batching changes memory, not results.
    """
    rng = np.random.default_rng(seed)
    n = values.size
    rows = batch_rows(n)
    distribution = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        indices = rng.integers(0, n, size=(stop - start, n))
        distribution[start:stop] = reduce(values[indices], axis=1)
    return distribution
