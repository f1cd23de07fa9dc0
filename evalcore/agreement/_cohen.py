"""Cohen's kappa for every pair of annotators, from per-pair confusion matrices built at once.

The within-item label pairs are generated for all items together, one group
of items per number of labels (``m`` labels give the ``m (m - 1) / 2`` pairs
of ``np.triu_indices(m, 1)``), and counted by one ``bincount`` over
``(annotator pair, label of the first, label of the second)`` codes. No Python
loop runs per item or per annotator pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.agreement._labels import LongLabels
from evalcore.stats._validation import FloatArray, IntArray, StatsInputError

KappaWeights: TypeAlias = Literal["linear", "quadratic"] | None
KAPPA_WEIGHTS: tuple[KappaWeights, ...] = (None, "linear", "quadratic")
#: What the linear and quadratic weights measure distances on: the label *values* (the default, and
#: what the quality dashboard shows: grades 0, 1 and 3 are 1 and 2 apart), or the label *positions*
#: among the labels a pair used, as ``sklearn.metrics.cohen_kappa_score`` (0, 1 and 3 are 1 and 1
#: apart). They agree when the pair's grades are consecutive integers.
KappaScale: TypeAlias = Literal["values", "positions"]
KAPPA_SCALES: tuple[KappaScale, ...] = ("values", "positions")

# Row indices per chunk of within-item pairs (two int64 arrays of this length, plus their codes).
_CHUNK_PAIRS = 2**21
# The (annotator pairs x values x values) count array stays below 1 GiB of float64.
# Below this many (annotator, annotator, value, value) cells, pairs are counted in both orders.
_MAX_ORDERED_CELLS = 2**22
_MAX_PAIR_CELLS = 2**27


@dataclass(frozen=True, eq=False)
class PairConfusion:
    """One confusion matrix per annotator pair: the mergeable sufficient statistic of Cohen's kappa.

    ``counts[p]`` is the ``len(values)`` square confusion matrix of the ``p``-th
    pair ``(i, j)``, ``i < j``, in ``np.triu_indices(n_annotators, 1)`` order:
    ``counts[p, c, k]`` items got value ``values[c]`` from annotator ``i`` and
    ``values[k]`` from annotator ``j``.

    >>> labels = LongLabels.from_records([1, 1, 2, 2, 3, 3], ["a", "b"] * 3, [0, 0, 1, 1, 1, 0])
    >>> confusion = pair_confusion(labels)
    >>> confusion.confusion(0, 1).tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    >>> print(round(confusion.kappa_matrix()[0, 1], 4))
    0.4
    """

    annotators: NDArray[Any]
    values: FloatArray
    counts: FloatArray

    @property
    def n_annotators(self) -> int:
        return int(self.annotators.size)

    def pair_index(self, i: int, j: int) -> int:
        """The index in ``counts`` of annotators ``i != j`` (in either order)."""
        if i == j or not (0 <= i < self.n_annotators and 0 <= j < self.n_annotators):
            raise StatsInputError(f"no annotator pair ({i}, {j}) among {self.n_annotators} annotators")
        low, high = min(i, j), max(i, j)
        return int(_pair_codes(np.int64(low), np.int64(high), self.n_annotators))

    def confusion(self, i: int, j: int) -> FloatArray:
        """The confusion matrix of annotators ``i`` (rows) and ``j`` (columns)."""
        matrix = self.counts[self.pair_index(i, j)]
        return matrix if i < j else matrix.T

    def shared_items(self) -> IntArray:
        """The number of items each pair of annotators both labelled; 0 on the diagonal."""
        return self._symmetric(self.counts.sum(axis=(1, 2)), diagonal=0.0).astype(np.int64)

    def kappa_matrix(self, *, weights: KappaWeights = None, scale: KappaScale = "values") -> FloatArray:
        """Cohen's kappa of every annotator pair as a symmetric matrix; see ``cohen_kappa_matrix``."""
        kappas = cohen_kappa_from_confusion(self.counts, values=self.values, weights=weights, scale=scale)
        return self._symmetric(kappas, diagonal=np.nan)

    def merge(self, other: PairConfusion) -> PairConfusion:
        """The confusions of the union of two disjoint sets of items, over the union of annotators and values."""
        annotators = np.union1d(self.annotators, other.annotators)
        values = np.union1d(self.values, other.values)
        counts = _reindex(self, annotators, values) + _reindex(other, annotators, values)
        return PairConfusion(annotators, values, counts)

    def __add__(self, other: PairConfusion) -> PairConfusion:
        return self.merge(other)

    def _symmetric(self, per_pair: FloatArray, *, diagonal: float) -> FloatArray:
        matrix = np.full((self.n_annotators, self.n_annotators), diagonal)
        first, second = np.triu_indices(self.n_annotators, 1)
        matrix[first, second] = per_pair
        matrix[second, first] = per_pair
        return matrix


def pair_confusion(labels: LongLabels) -> PairConfusion:
    """The confusion matrix of every annotator pair over the items both labelled."""
    n_annotators, n_values = labels.n_annotators, labels.n_values
    n_pairs = n_annotators * (n_annotators - 1) // 2
    n_cells = n_pairs * n_values * n_values
    if n_cells > _MAX_PAIR_CELLS:
        raise StatsInputError(
            f"{n_pairs} annotator pairs x {n_values}^2 values is too many confusion cells ({n_cells})"
        )
    # In item order, so that a pair's two labels are read from neighbouring rows, not from anywhere.
    annotator = labels.annotator[labels.by_item]
    code = labels.code[labels.by_item]
    n_ordered = n_annotators * n_annotators * n_values * n_values
    if n_ordered <= _MAX_ORDERED_CELLS:
        # Count ordered pairs (a, b) as they come, then fold (b, a) onto (a, b): no swap per pair.
        ordered = np.zeros(n_ordered)
        for first, second in _within_item_positions(labels):
            cell = ((annotator[first] * n_annotators + annotator[second]) * n_values + code[first]) * n_values
            ordered += np.bincount(cell + code[second], minlength=n_ordered)
        square = ordered.reshape(n_annotators, n_annotators, n_values, n_values)
        low, high = np.triu_indices(n_annotators, 1)
        counts = square[low, high] + square[high, low].transpose(0, 2, 1)
        return PairConfusion(labels.annotators, labels.values, counts)
    flat = np.zeros(n_cells)
    for first, second in _within_item_positions(labels):
        annotator_a, annotator_b = annotator[first], annotator[second]
        swap = annotator_a > annotator_b
        low = np.where(swap, annotator_b, annotator_a)
        high = np.where(swap, annotator_a, annotator_b)
        code_low = np.where(swap, code[second], code[first])
        code_high = np.where(swap, code[first], code[second])
        cell = (_pair_codes(low, high, n_annotators) * n_values + code_low) * n_values + code_high
        flat += np.bincount(cell, minlength=n_cells)
    return PairConfusion(labels.annotators, labels.values, flat.reshape(n_pairs, n_values, n_values))


def cohen_kappa_matrix(
    labels: LongLabels, *, weights: KappaWeights = None, scale: KappaScale = "values"
) -> FloatArray:
    """Cohen's kappa of every annotator pair, as an ``n_annotators`` square symmetric matrix.

    Entry ``[i, j]`` is the kappa of annotators ``i`` and ``j`` on the items both
    labelled, ``1 - sum(w * C) / sum(w * E)``, with ``C`` their confusion matrix and
    ``E`` the product of its margins divided by the number of shared items.
    Unweighted: ``w = [c != k]``; ``"linear"``: ``|v_c - v_k|``;
    ``"quadratic"``: ``(v_c - v_k)^2``. Two definitions of ``v`` are both in use:

    - ``scale="values"`` (the default, and what the quality dashboard shows): the label
      *values*, so a grade nobody used still counts as a step (grades 0, 1, 3: 0 and 3 are
      3 apart). For integer grades this equals ``sklearn.metrics.cohen_kappa_score(y_i, y_j,
      labels=range(min, max + 1), weights=weights)``, the scale's every grade listed.
    - ``scale="positions"``: the labels' positions among those the pair used, as
      ``sklearn.metrics.cohen_kappa_score(y_i, y_j, weights=weights)`` with its default
      labels (0, 1, 3 become 0, 1, 2). The two differ only when a pair skips a value
      between the ones it used (by up to 0.07 on small ordinal scales).

    ``NaN`` where a pair shares no item, where kappa is undefined (both always
    gave one and the same label: ``sum(w * E) = 0``, where scikit-learn also
    gives ``nan``), and on the diagonal: an annotator is not compared with
    themselves, so ``np.nanmean`` of the matrix is the mean over pairs.

    >>> labels = LongLabels.from_matrix([[0, 0, 1], [1, 1, 1], [2, 1, 2], [2, 2, 2]])
    >>> print(np.round(cohen_kappa_matrix(labels, weights="linear"), 3))
    [[  nan 0.714 0.667]
     [0.714   nan 0.333]
     [0.667 0.333   nan]]
    """
    return pair_confusion(labels).kappa_matrix(weights=weights, scale=scale)


def cohen_kappa_from_confusion(
    confusion: ArrayLike,
    *,
    values: ArrayLike | None = None,
    weights: KappaWeights = None,
    scale: KappaScale = "values",
) -> FloatArray:
    """Cohen's kappa of one confusion matrix (``K x K``) or a stack of them (``... x K x K``).

    ``values`` are the label values of the rows and columns (default ``0 .. K - 1``),
    used by the linear and quadratic weights with ``scale="values"``; with
    ``scale="positions"`` each matrix weighs by the rank of a value among those with a
    non-zero margin in it (scikit-learn's label indices). ``NaN`` where kappa is undefined.
    """
    counts = np.asarray(confusion, dtype=np.float64)
    if counts.ndim < 2 or counts.shape[-1] != counts.shape[-2]:
        raise StatsInputError(f"confusion must be square in its last two axes, got shape {counts.shape}")
    domain = (
        np.arange(counts.shape[-1], dtype=np.float64) if values is None else np.asarray(values, np.float64)
    )
    if domain.shape != counts.shape[-1:]:
        raise StatsInputError(
            f"values must have one entry per row of the confusion matrix ({counts.shape[-1]})"
        )
    if scale not in KAPPA_SCALES:
        raise StatsInputError(f"scale must be 'values' or 'positions'; got {scale!r}")
    order = np.argsort(domain, kind="stable")
    if scale == "positions" and weights is not None:
        # Each matrix's used values, ranked in value order: a stack of weight matrices.
        used = (counts.sum(axis=-1) + counts.sum(axis=-2))[..., order] > 0
        ranks = np.empty(used.shape)
        ranks[..., order] = np.cumsum(used, axis=-1) - 1.0
        w = _weights_of(ranks[..., :, None] - ranks[..., None, :], weights)
    else:
        w = np.broadcast_to(kappa_weights(domain, weights), counts.shape)
    n = counts.sum(axis=(-2, -1))
    observed = np.einsum("...ck,...ck->...", counts, w)
    expected = np.einsum("...c,...ck,...k->...", counts.sum(axis=-1), w, counts.sum(axis=-2))
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - n * observed / expected
    # ``expected`` is a sum of non-negative terms: exactly 0 when kappa is undefined.
    return np.where(expected > 0, kappa, np.nan)


def kappa_weights(values: FloatArray, weights: KappaWeights) -> FloatArray:
    """The disagreement weights ``w[c, k]`` of Cohen's kappa over label values."""
    if weights is None:
        return 1.0 - np.eye(values.size)
    return _weights_of(values[:, None] - values[None, :], weights)


def _weights_of(difference: FloatArray, weights: KappaWeights) -> FloatArray:
    if weights == "linear":
        return np.abs(difference)
    if weights == "quadratic":
        return difference**2
    raise StatsInputError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}")


def within_item_pairs(labels: LongLabels) -> Iterator[tuple[IntArray, IntArray]]:
    """Row indices ``(a, b)`` of every unordered pair of labels on the same item, in chunks.

    Items are grouped by their number of labels ``m``; a group's pairs are
    ``starts[:, None] + np.triu_indices(m, 1)``, so the loop runs per distinct
    ``m`` and per memory chunk, never per item.
    """
    order = labels.by_item
    for first, second in _within_item_positions(labels):
        yield order[first], order[second]


def _within_item_positions(labels: LongLabels) -> Iterator[tuple[IntArray, IntArray]]:
    """``within_item_pairs`` as positions in ``labels.by_item`` instead of row indices."""
    per_item = labels.labels_per_item
    starts = labels.item_starts[:-1]
    by_size = np.argsort(per_item, kind="stable")
    sizes = per_item[by_size]
    for size in np.unique(sizes[sizes >= 2]):
        low, high = np.searchsorted(sizes, [size, size + 1])
        first, second = np.triu_indices(int(size), 1)
        step = max(1, _CHUNK_PAIRS // first.size)
        for start in range(low, high, step):
            base = starts[by_size[start : min(start + step, high)], None]
            yield (base + first).ravel(), (base + second).ravel()


def _pair_codes(low: IntArray | np.int64, high: IntArray | np.int64, n_annotators: int) -> Any:
    """Index of the pair ``(low, high)``, ``low < high``, in ``np.triu_indices(n_annotators, 1)`` order."""
    return low * (2 * n_annotators - low - 1) // 2 + (high - low - 1)


def _reindex(confusion: PairConfusion, annotators: NDArray[Any], values: FloatArray) -> FloatArray:
    n_annotators, n_values = annotators.size, values.size
    counts = np.zeros((n_annotators * (n_annotators - 1) // 2, n_values, n_values))
    if confusion.counts.size == 0:
        return counts
    where = np.searchsorted(annotators, confusion.annotators)
    value_index = np.searchsorted(values, confusion.values)
    first, second = np.triu_indices(confusion.n_annotators, 1)
    a, b = where[first], where[second]
    swapped = a > b
    source = np.where(swapped[:, None, None], confusion.counts.transpose(0, 2, 1), confusion.counts)
    pair = _pair_codes(np.minimum(a, b), np.maximum(a, b), n_annotators)
    counts[pair[:, None, None], value_index[None, :, None], value_index[None, None, :]] = source
    return counts
