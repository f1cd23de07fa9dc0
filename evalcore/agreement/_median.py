"""Per-item medians, with and without one label, from the labels sorted within each item.

``LongLabels.by_item`` orders the labels by item and then by value, so the
middle labels of item ``u`` sit at fixed offsets from its start: the median is
two gathers, and the median of the *other* labels (leave-one-out) two more.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import numpy as np

from evalcore.agreement._labels import LongLabels
from evalcore.stats._validation import FloatArray, IntArray, check_choice

Rounding: TypeAlias = Literal["floor", "ceil", "half_up", "half_even", "low", "high", "none"]
ROUNDINGS: tuple[Rounding, ...] = ("floor", "ceil", "half_up", "half_even", "low", "high", "none")


def item_medians(labels: LongLabels, *, rounding: Rounding = "floor") -> FloatArray:
    """The median label of each item (``NaN`` for an item without labels).

    With an even number of labels the two middle labels ``lo <= hi`` are
    combined by ``rounding``:

    - ``"floor"``: ``floor((lo + hi) / 2)``, the seed's ``int(np.median(values))``
      for non-negative labels (relevance grades). The default.
    - ``"ceil"``, ``"half_up"`` (``floor(x + 0.5)``), ``"half_even"`` (``np.round``):
      other roundings of the midpoint to an integer.
    - ``"low"`` / ``"high"``: the lower / upper middle label (``statistics.median_low``
      / ``median_high``), always one of the labels given.
    - ``"none"``: the midpoint ``(lo + hi) / 2``, as ``np.median``.

    The integer roundings also apply to an odd count (``floor(2.5) == 2``);
    use ``"low"``, ``"high"`` or ``"none"`` for labels that are not integers.
    Within a ±1 agreement filter ``lo`` and ``hi`` differ by at most one grade,
    so ``"floor"`` and ``"low"`` agree there.
    """
    check_choice(rounding, name="rounding", choices=ROUNDINGS)
    return _sorted_group_medians(
        labels.value[labels.by_item], labels.item_starts[:-1], labels.labels_per_item, rounding
    )


def group_medians(
    group: IntArray, values: FloatArray, *, n_groups: int, rounding: Rounding = "none"
) -> FloatArray:
    """The median of ``values`` within each group ``0..n_groups-1`` (``NaN`` for an empty group).

    One sort by (group, value); the middle values then sit at fixed offsets from each group's start.

    >>> group_medians(np.array([0, 0, 1, 0]), np.array([3.0, 1.0, 5.0, 2.0]), n_groups=3).tolist()
    [2.0, 5.0, nan]
    """
    check_choice(rounding, name="rounding", choices=ROUNDINGS)
    group = np.asarray(group, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return _sorted_group_medians(values[np.lexsort((values, group))], starts, counts, rounding)


def _sorted_group_medians(
    ordered: FloatArray, starts: IntArray, counts: IntArray, rounding: Rounding
) -> FloatArray:
    """Medians of consecutive groups of ``ordered`` (sorted within each group), given starts and counts."""
    low = np.full(counts.size, np.nan)
    high = np.full(counts.size, np.nan)
    some = counts > 0
    low[some] = ordered[starts[some] + (counts[some] - 1) // 2]
    high[some] = ordered[starts[some] + counts[some] // 2]
    return combine_middle(low, high, rounding)


def leave_one_out_medians(labels: LongLabels, *, rounding: Rounding = "floor") -> FloatArray:
    """For each label (row), the median of the *other* labels on its item; ``NaN`` if it is alone.

    The label at sorted position ``r`` of its item is removed by skipping that
    position: the ``p``-th other label is at ``start + p + (p >= r)``.
    """
    check_choice(rounding, name="rounding", choices=ROUNDINGS)
    order = labels.by_item
    ordered = labels.value[order]
    item = labels.item[order]
    start = labels.item_starts[item]
    rank = np.arange(labels.n_labels) - start
    others = labels.labels_per_item[item] - 1
    has_others = others > 0
    result_sorted = np.full(labels.n_labels, np.nan)
    low_pos = _skip(start, (others - 1) // 2, rank)[has_others]
    high_pos = _skip(start, others // 2, rank)[has_others]
    result_sorted[has_others] = combine_middle(ordered[low_pos], ordered[high_pos], rounding)
    result = np.empty(labels.n_labels)
    result[order] = result_sorted
    return result


def combine_middle(low: FloatArray, high: FloatArray, rounding: Rounding) -> FloatArray:
    """Combine the lower and upper middle values into a median by ``rounding`` (see ``item_medians``)."""
    if rounding == "low":
        return low
    if rounding == "high":
        return high
    midpoint = (low + high) / 2.0
    if rounding == "floor":
        return np.floor(midpoint)
    if rounding == "ceil":
        return np.ceil(midpoint)
    if rounding == "half_up":
        return np.floor(midpoint + 0.5)
    if rounding == "half_even":
        return np.round(midpoint)
    return midpoint


def _skip(start: IntArray, position: IntArray, removed: IntArray) -> IntArray:
    return start + position + (position >= removed)
