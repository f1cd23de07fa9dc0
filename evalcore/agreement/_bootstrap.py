"""Bootstrap confidence intervals of the agreement measures, resampling items.

Every measure is a function of sums over items (``_stats.Sums``), so a
resample's sums are ``r @ F``: the resample's count of each item times the
per-item contributions ``F`` (one row per pairable item: its pair counts, its
coincidences, whether it is unanimous and its Fleiss agreement). A batch of
resamples is one ``(batch x items) @ (items x features)`` matrix product.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from evalcore.agreement._labels import LongLabels
from evalcore.agreement._stats import MEASURES, Level, Sums, agreement_stats, check_level, item_value_counts
from evalcore.stats._bootstrap import ConfidenceInterval
from evalcore.stats._validation import (
    MAX_BATCH_ELEMENTS,
    FloatArray,
    StatsInputError,
    batch_rows,
    check_count,
    check_probability,
)

if TYPE_CHECKING:
    import scipy.sparse as sp

# Per-item contributions are kept between batches up to this many float64s (128 MiB).
_MAX_CACHED_FEATURES = 2**24


def bootstrap_agreement(
    labels: LongLabels,
    *,
    measures: Sequence[str] = tuple(MEASURES),
    level: Level = "ordinal",
    n_resamples: int = 1_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> dict[str, ConfidenceInterval]:
    """Percentile bootstrap intervals of agreement measures, resampling the pairable items.

    ``measures`` are names from ``MEASURES`` (``exact_agreement``,
    ``pairwise_agreement``, ``fleiss_kappa``, ``krippendorff_alpha``, the last
    at ``level``). The items with at least two labels are drawn with
    replacement ``n_resamples`` times from ``np.random.default_rng(seed)``;
    items with one label carry no agreement information and are left out.
    The interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    quantiles of the resampled measure, ignoring resamples where it is
    undefined (``NaN``; all labels equal, say); ``estimate`` is the measure on
    all the data. Cohen's kappa has no interval here: it has one value per
    annotator pair.

    >>> labels = LongLabels.from_matrix([[0, 0, 1], [1, 1, 1], [2, 1, 2], [2, 2, 2], [0, 1, 0], [1, 2, 2]])
    >>> ci = bootstrap_agreement(labels, measures=["krippendorff_alpha"], n_resamples=500)["krippendorff_alpha"]
    >>> print(f"{ci.estimate:.3f} [{ci.low:.3f}, {ci.high:.3f}]")
    0.647 [-0.062, 0.823]
    """
    unknown = [name for name in measures if name not in MEASURES]
    if unknown:
        raise StatsInputError(f"unknown measure(s) {unknown}; choose from {', '.join(MEASURES)}")
    level = check_level(level)
    check_count(n_resamples, name="n_resamples")
    check_probability(confidence, name="confidence")
    stats = agreement_stats(labels)
    point = stats.sums()
    estimates = {name: float(MEASURES[name](point, stats.values, level)) for name in measures}
    distributions = _resampled(labels, measures, level=level, n_resamples=n_resamples, seed=seed)
    tail = (1.0 - confidence) / 2.0
    intervals = {}
    for name in measures:
        distribution = distributions[name]
        defined = distribution[~np.isnan(distribution)]
        low, high = np.quantile(defined, [tail, 1.0 - tail]) if defined.size else (np.nan, np.nan)
        spread = float(defined.std(ddof=1)) if defined.size > 1 and np.ptp(defined) > 0 else 0.0
        intervals[name] = ConfidenceInterval(
            estimate=estimates[name],
            low=float(low),
            high=float(high),
            confidence=float(confidence),
            std_error=spread if defined.size else np.nan,
        )
    return intervals


def _resampled(
    labels: LongLabels, measures: Sequence[str], *, level: Level, n_resamples: int, seed: int | None
) -> dict[str, FloatArray]:
    counts = item_value_counts(labels)
    m = labels.labels_per_item
    pairable = np.flatnonzero(m >= 2)
    n = pairable.size
    if n == 0:
        return {name: np.full(n_resamples, np.nan) for name in measures}
    counts = counts[pairable]
    n_values = labels.n_values
    chunks = _feature_chunks(counts, m[pairable].astype(np.float64), n_values)
    rng = np.random.default_rng(seed)
    rows = batch_rows(n)
    distributions = {name: np.empty(n_resamples) for name in measures}
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        batch = stop - start
        drawn = rng.integers(0, n, size=(batch, n))
        weights = np.bincount((drawn + n * np.arange(batch)[:, None]).ravel(), minlength=batch * n)
        weights = weights.reshape(batch, n).astype(np.float64)
        totals = np.zeros((batch, 2 * n_values * n_values + 2))
        for part, features in chunks():
            totals += weights[:, part] @ features
        square = n_values * n_values
        sums = Sums(
            coincidence=totals[:, square : 2 * square].reshape(batch, n_values, n_values),
            pair_counts=totals[:, :square].reshape(batch, n_values, n_values),
            n_pairable=np.full(batch, float(n)),
            n_unanimous=totals[:, 2 * square],
            fleiss_sum=totals[:, 2 * square + 1],
        )
        for name in measures:
            distributions[name][start:stop] = MEASURES[name](sums, labels.values, level)
    return distributions


def _feature_chunks(
    counts: FloatArray | sp.csr_matrix, m: FloatArray, n_values: int
) -> Callable[[], Iterator[tuple[slice, FloatArray]]]:
    """Per-item contributions ``[Q_u, Q_u / (m_u - 1), unanimous_u, P_u]`` in memory-bounded row chunks.

    Up to ``_MAX_CACHED_FEATURES`` values they are computed once; beyond, each batch recomputes them.
    """
    n_features = 2 * n_values * n_values + 2
    step = max(1, MAX_BATCH_ELEMENTS // n_features)

    def features(part: slice) -> FloatArray:
        block = counts[part]
        c = block if isinstance(block, np.ndarray) else np.asarray(block.toarray())
        size = m[part]
        pairs = c[:, :, None] * c[:, None, :]
        diagonal = np.arange(n_values)
        pairs[:, diagonal, diagonal] -= c
        pairs = pairs.reshape(c.shape[0], -1)
        sum_squares = np.einsum("uc,uc->u", c, c)
        unanimous = (sum_squares == size * size).astype(np.float64)
        fleiss = (sum_squares - size) / (size * (size - 1.0))
        return np.column_stack([pairs, pairs / (size - 1.0)[:, None], unanimous, fleiss])

    parts = [slice(start, min(start + step, m.size)) for start in range(0, m.size, step)]
    if m.size * n_features <= _MAX_CACHED_FEATURES:
        cached = [(part, features(part)) for part in parts]
        return lambda: iter(cached)
    return lambda: ((part, features(part)) for part in parts)
