"""Stratified sampling of queries (or items) and the stratified mean estimator.

A stratified sample draws ``n_h`` of the ``N_h`` members of each stratum ``h``
without replacement. Giving rare strata more than their proportional share
(``allocation="equal"``, ``min_per_stratum``, ``oversample``) buys precision
where it matters; the inverse inclusion probabilities ``N_h / n_h`` returned as
weights undo that tilt, so weighted means stay unbiased for the population.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.stats._validation import (
    FloatArray,
    IntArray,
    StatsInputError,
    as_scores,
    check_choice,
    check_count,
)

Allocation: TypeAlias = Literal["proportional", "equal"]

# Products remaining * N_h must stay exact in int64.
_MAX_EXACT = 2**62


@dataclass(frozen=True, slots=True)
class StratifiedEstimate:
    """A stratified estimate of a population mean.

    ``std_error`` includes the finite population correction ``1 - n_h / N_h``.
    It is NaN when a stratum has a single sampled item out of several, since
    that stratum's variance cannot be estimated.
    """

    mean: float
    std_error: float
    n: int
    population_size: float


def stratum_allocation(
    stratum_sizes: ArrayLike,
    n: int,
    *,
    allocation: Allocation = "proportional",
    min_per_stratum: int = 0,
) -> IntArray:
    """How many of ``n`` sample items each stratum gets; the counts sum to exactly ``n``.

    Each stratum first gets ``min(min_per_stratum, N_h)``. The rest of ``n`` is
    shared in proportion to the stratum sizes (``"proportional"``) or evenly
    (``"equal"``), capped at each stratum's size with the excess passed on to the
    other strata, and rounded by the largest-remainder method (ties go to the
    earlier stratum). The shares are exact integer fractions, so no rounding
    drift can lose or add an item.

    Seed 004's example (strata of 1,000, 99,000 and 9,900,000 items, 10,000
    samples, at least 100 each) prints 100 / 196 / 9,703 because it truncates
    each share and so draws only 9,999; largest-remainder rounding gives the
    lost item to the stratum with the largest fractional share:

    >>> stratum_allocation([1_000, 99_000, 9_900_000], 10_000, min_per_stratum=100).tolist()
    [101, 196, 9703]
    """
    sizes = _as_sizes(stratum_sizes)
    total = check_count(n, name="n", minimum=0)
    check_count(min_per_stratum, name="min_per_stratum", minimum=0)
    choice = check_choice(allocation, name="allocation", choices=("proportional", "equal"))
    if total > sizes.sum():
        raise StatsInputError(f"cannot draw {total} items without replacement from {sizes.sum()}")
    counts = np.minimum(sizes, min_per_stratum)
    if counts.sum() > total:
        raise StatsInputError(
            f"min_per_stratum={min_per_stratum} needs {counts.sum()} items, more than n={total}"
        )
    shares = sizes if choice == "proportional" else np.ones_like(sizes)
    return counts + _largest_remainder(shares, sizes - counts, total - int(counts.sum()))


def stratified_sample(
    strata_labels: ArrayLike,
    n: int,
    *,
    allocation: Allocation = "proportional",
    min_per_stratum: int = 0,
    oversample: Mapping[Hashable, float] | None = None,
    seed: int | None = 0,
) -> tuple[IntArray, FloatArray]:
    """Draw a stratified sample; return ``(indices, weights)`` sorted by index.

    ``strata_labels[i]`` is the stratum of item ``i``. The ``n`` items are
    allocated with ``stratum_allocation`` and drawn without replacement within
    each stratum from ``np.random.default_rng(seed)``. ``oversample`` then
    multiplies the named strata's counts by a factor >= 1 (rounded down, capped
    at the stratum size), as seed 004's ``oversample_rare_strata`` does; the
    sample then holds more than ``n`` items, on purpose.

    ``weights[k] = N_h / n_h`` is the inverse inclusion probability of item
    ``indices[k]``, so ``sum(weights * y) / sum(weights)`` estimates the
    population mean without bias (see ``stratified_mean``).

    >>> indices, weights = stratified_sample(["a"] * 6 + ["b"] * 2, 4, allocation="equal")
    >>> weights.tolist()
    [3.0, 3.0, 1.0, 1.0]
    """
    labels = np.asarray(strata_labels)
    if labels.ndim != 1:
        raise StatsInputError(f"strata_labels must be one-dimensional, got shape {labels.shape}")
    if labels.size == 0:
        raise StatsInputError("strata_labels is empty")
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    sizes = np.diff(np.r_[starts, labels.size]).astype(np.int64)
    counts = stratum_allocation(sizes, n, allocation=allocation, min_per_stratum=min_per_stratum)
    if oversample:
        counts = _oversampled(counts, sizes, sorted_labels[starts], oversample)
    rng = np.random.default_rng(seed)
    chosen = [
        order[start + rng.choice(size, size=count, replace=False)]
        for start, size, count in zip(starts.tolist(), sizes.tolist(), counts.tolist(), strict=True)
    ]
    indices = np.concatenate([np.zeros(0, dtype=np.int64), *chosen]).astype(np.int64)
    weights = np.repeat(sizes / np.maximum(counts, 1), counts).astype(np.float64)
    by_index = np.argsort(indices, kind="stable")
    return indices[by_index], weights[by_index]


def stratified_mean(values: ArrayLike, strata: ArrayLike, weights: ArrayLike) -> StratifiedEstimate:
    """Stratified estimate of the population mean from a weighted stratified sample.

    ``values``, ``strata`` and ``weights`` are aligned per sampled item, the
    weights being ``N_h / n_h`` as returned by ``stratified_sample`` (constant
    within a stratum). With ``W_h = N_h / N``, the sample mean ``ybar_h`` and
    variance ``s_h^2`` (ddof=1) of stratum ``h``:

        mean = sum_h W_h ybar_h            (equal to sum(w y) / sum(w))
        SE^2 = sum_h W_h^2 (1 - n_h / N_h) s_h^2 / n_h

    >>> estimate = stratified_mean([1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"], [5.0, 5.0, 1.0, 1.0])
    >>> print(f"{estimate.mean:.4f} {estimate.population_size:.0f}")
    0.5833 12
    """
    y = as_scores(values, name="values")
    w = as_scores(weights, name="weights")
    labels = np.asarray(strata)
    if not y.shape == w.shape == labels.shape:
        raise StatsInputError("values, strata and weights must be aligned one-dimensional arrays")
    if (w <= 0).any():
        raise StatsInputError("weights must be positive (N_h / n_h)")
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    stratum_weight = w[first]
    if not np.allclose(w, stratum_weight[inverse], rtol=1e-9, atol=0.0):
        raise StatsInputError("weights must be constant within each stratum (N_h / n_h)")
    sampled = np.bincount(inverse).astype(np.float64)
    population = stratum_weight * sampled
    stratum_mean = np.bincount(inverse, weights=y) / sampled
    squares = np.bincount(inverse, weights=(y - stratum_mean[inverse]) ** 2)
    census = sampled >= population * (1.0 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.where(sampled > 1, squares / (sampled - 1.0), np.nan)
        fpc = np.where(census, 0.0, 1.0 - sampled / population)
        terms = np.where(census, 0.0, fpc * variance / sampled)
    total = population.sum()
    share = population / total
    return StratifiedEstimate(
        mean=float(share @ stratum_mean),
        std_error=float(np.sqrt(share**2 @ terms)),
        n=int(y.size),
        population_size=float(total),
    )


def _largest_remainder(shares: IntArray, capacity: IntArray, remaining: int) -> IntArray:
    """Split ``remaining`` units in proportion to integer ``shares``, capped at ``capacity``.

    Strata whose exact quota reaches their capacity are filled and removed, and
    the rest is re-shared among the others (at most one round per stratum).
    """
    extra = np.zeros_like(capacity)
    open_ = (capacity > 0) & (shares > 0)
    while remaining > 0:
        active = np.where(open_, shares, 0)
        total_share = int(active.sum())
        if max(remaining * int(active.max()), int(capacity.max()) * total_share) > _MAX_EXACT:
            raise StatsInputError("population too large for exact allocation arithmetic")
        quota = remaining * active  # quota / total_share is the exact share
        full = open_ & (quota >= capacity * total_share)
        if full.any():
            extra[full] += capacity[full]
            remaining -= int(capacity[full].sum())
            open_ &= ~full
            continue
        floors, remainders = np.divmod(quota, total_share)
        leftover = remaining - int(floors.sum())
        by_remainder = np.lexsort((np.arange(active.size), -remainders))
        floors[by_remainder[:leftover]] += 1
        extra += floors
        remaining = 0
    return extra


def _oversampled(
    counts: IntArray,
    sizes: IntArray,
    labels: NDArray[np.generic],
    oversample: Mapping[Hashable, float],
) -> IntArray:
    factors = np.ones(counts.size, dtype=np.float64)
    positions = {label: position for position, label in enumerate(labels.tolist())}
    for label, factor in oversample.items():
        if label not in positions:
            raise StatsInputError(f"oversample names an unknown stratum {label!r}")
        if not factor >= 1.0:
            raise StatsInputError(f"oversample factors must be >= 1, got {factor!r} for {label!r}")
        factors[positions[label]] = factor
    return np.minimum(np.floor(counts * factors).astype(np.int64), sizes)


def _as_sizes(stratum_sizes: ArrayLike) -> IntArray:
    sizes = np.asarray(stratum_sizes)
    if sizes.ndim != 1 or sizes.size == 0:
        raise StatsInputError("stratum_sizes must be a non-empty one-dimensional array")
    if not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any():
        raise StatsInputError("stratum_sizes must be non-negative integers")
    return sizes.astype(np.int64)
