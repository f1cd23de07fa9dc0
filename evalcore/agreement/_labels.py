"""Labels in long format: one row per (item, annotator) label, integer-encoded.

Every agreement statistic starts from a ``LongLabels``. It never holds an
items x annotators matrix: memory is O(n_labels), so 200k items rated by 5 of
50 annotators cost five rows per item, not fifty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.stats._validation import BoolArray, FloatArray, IntArray, StatsInputError

# A dense scratch array (an items x values count matrix of float64s, or a bitmap of the
# (item, annotator) cells, 1 byte each) replaces a sort when it has at most this many cells, or at
# most this many per label: memory stays O(n_labels).
_DENSE_MIN_CELLS = 2**22
_DENSE_CELLS_PER_LABEL = 8
_BITMAP_CELLS_PER_LABEL = 32
# Integer-valued labels spanning at most this many consecutive integers are encoded by offset, without a sort.
_MAX_OFFSET_RANGE = 2**20


def dense_is_small(n_cells: int, n_labels: int, *, per_label: int | None = None) -> bool:
    """Whether a dense scratch array of ``n_cells`` keeps memory O(``n_labels``)."""
    limit = _DENSE_CELLS_PER_LABEL if per_label is None else per_label
    return n_cells <= max(_DENSE_MIN_CELLS, limit * n_labels)


@dataclass(frozen=True, eq=False)
class LongLabels:
    """Labels in long format, integer-encoded: the input of every agreement statistic.

    Row ``j`` says that annotator ``annotators[annotator[j]]`` gave item
    ``items[item[j]]`` the label ``value[j]``, which is ``values[code[j]]``.
    ``values`` is the sorted value domain (the distinct labels). An (item,
    annotator) cell holds at most one label; cells without a label are simply
    absent, which is how missing data is represented. Items and annotators
    without any label may be listed (for example all the items of a project);
    they count in ``n_items`` / ``n_annotators`` and are ignored by the statistics.

    Build one with ``from_records`` (any ids), ``from_codes`` (integer indices,
    the fast path) or ``from_matrix`` (an items x annotators array with NaN for
    missing labels); the constructors validate and encode, so the fields can be
    trusted.

    >>> labels = LongLabels.from_records(["q1", "q1", "q2"], ["ann", "bob", "ann"], [2, 3, 0])
    >>> labels.n_items, labels.n_annotators, labels.n_labels, labels.values.tolist()
    (2, 2, 3, [0.0, 2.0, 3.0])
    """

    item: IntArray
    annotator: IntArray
    value: FloatArray
    code: IntArray
    values: FloatArray
    items: NDArray[Any]
    annotators: NDArray[Any]

    @classmethod
    def from_records(cls, items: ArrayLike, annotators: ArrayLike, labels: ArrayLike) -> LongLabels:
        """Labels from three aligned arrays: item id, annotator id and numeric label of each row.

        Ids may be strings or numbers; they are encoded in sorted order, so
        ``items`` and ``annotators`` come out sorted whatever the row order.
        """
        item_ids = np.asarray(items)
        annotator_ids = np.asarray(annotators)
        if item_ids.ndim != 1 or annotator_ids.ndim != 1:
            raise StatsInputError("items and annotators must be one-dimensional")
        if item_ids.size != annotator_ids.size:
            raise StatsInputError(
                f"items and annotators must be aligned: {item_ids.size} items, {annotator_ids.size} annotators"
            )
        unique_items, item = np.unique(item_ids, return_inverse=True)
        unique_annotators, annotator = np.unique(annotator_ids, return_inverse=True)
        return cls._build(item, annotator, labels, unique_items, unique_annotators)

    @classmethod
    def from_codes(
        cls,
        item: ArrayLike,
        annotator: ArrayLike,
        labels: ArrayLike,
        *,
        n_items: int | None = None,
        n_annotators: int | None = None,
        items: ArrayLike | None = None,
        annotators: ArrayLike | None = None,
    ) -> LongLabels:
        """Labels from integer item and annotator indices (``0 <= item < n_items``).

        The ids default to the indices themselves (``items == arange(n_items)``);
        pass ``items`` / ``annotators`` to name them (their lengths then give
        ``n_items`` / ``n_annotators``). This is the fast path for data that is
        already encoded, such as rows read from the database.
        """
        item_codes = _as_codes(item, name="item")
        annotator_codes = _as_codes(annotator, name="annotator")
        item_ids = _ids(items, n_items, name="item")
        annotator_ids = _ids(annotators, n_annotators, name="annotator")
        n_items = _code_bound(item_codes, None if item_ids is None else item_ids.size, name="item")
        n_annotators = _code_bound(
            annotator_codes, None if annotator_ids is None else annotator_ids.size, name="annotator"
        )
        return cls._build(
            item_codes,
            annotator_codes,
            labels,
            np.arange(n_items) if item_ids is None else item_ids,
            np.arange(n_annotators) if annotator_ids is None else annotator_ids,
        )

    @classmethod
    def from_matrix(cls, matrix: ArrayLike) -> LongLabels:
        """Labels from an items x annotators array, NaN where an annotator did not rate an item.

        This is the transpose of the ``reliability_data`` of the ``krippendorff``
        package (annotators x items).
        """
        dense = np.asarray(matrix, dtype=np.float64)
        if dense.ndim != 2:
            raise StatsInputError(
                f"matrix must be two-dimensional (items x annotators), got shape {dense.shape}"
            )
        item, annotator = np.nonzero(~np.isnan(dense))
        return cls._build(
            item, annotator, dense[item, annotator], np.arange(dense.shape[0]), np.arange(dense.shape[1])
        )

    @classmethod
    def _build(
        cls,
        item: NDArray[Any],
        annotator: NDArray[Any],
        labels: ArrayLike,
        items: NDArray[Any],
        annotators: NDArray[Any],
    ) -> LongLabels:
        value = np.asarray(labels, dtype=np.float64)
        if annotator.size != item.size:
            raise StatsInputError(
                f"items and annotators must be aligned: {item.size} items, {annotator.size} annotators"
            )
        if value.ndim != 1 or value.size != item.size:
            raise StatsInputError(
                f"labels must be one-dimensional and aligned with the items: {value.size} labels, {item.size} items"
            )
        if not np.isfinite(value).all():
            raise StatsInputError("labels contain NaN or infinite values (leave missing labels out)")
        item = item.astype(np.int64, copy=False)
        annotator = annotator.astype(np.int64, copy=False)
        _check_one_label_per_cell(item, annotator, items, annotators)
        values, code = _encode_values(value)
        return cls(item, annotator, value, code, values, items, annotators)

    # --- sizes -------------------------------------------------------------------------------------

    @property
    def n_labels(self) -> int:
        return int(self.value.size)

    @property
    def n_items(self) -> int:
        return int(self.items.size)

    @property
    def n_annotators(self) -> int:
        return int(self.annotators.size)

    @property
    def n_values(self) -> int:
        return int(self.values.size)

    @cached_property
    def labels_per_item(self) -> IntArray:
        """The number of labels ``m_u`` of each item."""
        return np.bincount(self.item, minlength=self.n_items)

    @cached_property
    def item_starts(self) -> IntArray:
        """Offsets of each item's labels in ``by_item``: item ``u`` owns ``by_item[starts[u]:starts[u + 1]]``."""
        starts = np.zeros(self.n_items + 1, dtype=np.int64)
        np.cumsum(self.labels_per_item, out=starts[1:])
        return starts

    @cached_property
    def by_item(self) -> IntArray:
        """Row order sorted by item, then by label value: each item's labels are contiguous and sorted."""
        return stable_argsort(self.item * max(1, self.n_values) + self.code)

    # --- conversions -------------------------------------------------------------------------------

    def select(self, mask: ArrayLike) -> LongLabels:
        """The labels of the rows where ``mask`` is true, with the same items and annotators.

        Use it to keep, say, only reliable annotators' labels; the value domain
        is recomputed from the rows kept.
        """
        keep = np.asarray(mask, dtype=np.bool_)
        if keep.shape != self.value.shape:
            raise StatsInputError(
                f"mask must have one entry per label ({self.n_labels}), got shape {keep.shape}"
            )
        value = self.value[keep]
        values, code = _encode_values(value)
        return LongLabels(
            self.item[keep], self.annotator[keep], value, code, values, self.items, self.annotators
        )

    def item_codes(self, ids: ArrayLike) -> IntArray:
        """The item index of each id in ``ids``, -1 for ids that are not among ``items``."""
        return _lookup(self.items, np.asarray(ids))

    def annotator_codes(self, ids: ArrayLike) -> IntArray:
        """The annotator index of each id in ``ids``, -1 for ids that are not among ``annotators``."""
        return _lookup(self.annotators, np.asarray(ids))

    def to_matrix(self) -> FloatArray:
        """The dense items x annotators matrix, NaN where there is no label (for small data)."""
        dense = np.full((self.n_items, self.n_annotators), np.nan)
        dense[self.item, self.annotator] = self.value
        return dense


def stable_argsort(keys: IntArray) -> IntArray:
    """``np.argsort(keys, kind="stable")`` of non-negative integer keys; faster below 2**32.

    Two stable passes over 16-bit halves, low then high (an LSD radix sort): NumPy sorts 16-bit
    keys by radix, in linear time, and int64 keys by timsort.
    """
    if keys.size == 0 or int(keys.max()) >= 2**32 or int(keys.min()) < 0:
        return np.argsort(keys, kind="stable")
    low_first = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    high = (keys >> 16).astype(np.uint16)[low_first]
    return low_first[np.argsort(high, kind="stable")]


def _as_codes(codes: ArrayLike, *, name: str) -> IntArray:
    array = np.asarray(codes)
    if array.ndim != 1:
        raise StatsInputError(f"{name} indices must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise StatsInputError(f"{name} indices must be integers, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _ids(ids: ArrayLike | None, count: int | None, *, name: str) -> NDArray[Any] | None:
    """The id array, or ``arange(count)`` when only the count is given, or None for neither."""
    if ids is None:
        return None if count is None else np.arange(count)
    array = np.asarray(ids)
    if array.ndim != 1 or (count is not None and array.size != count):
        raise StatsInputError(f"{name} ids must be one-dimensional, one per {name} (n_{name}s={count})")
    return array


def _code_bound(codes: IntArray, bound: int | None, *, name: str) -> int:
    largest = int(codes.max()) + 1 if codes.size else 0
    if codes.size and int(codes.min()) < 0:
        raise StatsInputError(f"{name} indices must be >= 0")
    if bound is None:
        return largest
    if largest > bound:
        raise StatsInputError(f"{name} index {largest - 1} is out of range for n_{name}s={bound}")
    return int(bound)


def _check_one_label_per_cell(
    item: IntArray, annotator: IntArray, items: NDArray[Any], annotators: NDArray[Any]
) -> None:
    """Raise if an (item, annotator) cell holds two labels, naming the first such cell."""
    n_cells = items.size * annotators.size
    cell = item * annotators.size + annotator
    if dense_is_small(n_cells, item.size, per_label=_BITMAP_CELLS_PER_LABEL):
        seen = np.zeros(n_cells, dtype=np.bool_)
        seen[cell] = True
        if np.count_nonzero(seen) == item.size:
            return
    ordered = np.sort(cell)
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    if repeated.size:
        first = int(ordered[repeated[0]])
        item_id, annotator_id = items[first // annotators.size], annotators[first % annotators.size]
        raise StatsInputError(
            f"item {_plain(item_id)!r} has more than one label from annotator {_plain(annotator_id)!r}"
        )


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds, for messages."""
    return value.item() if isinstance(value, np.generic) else value


def _encode_values(value: FloatArray) -> tuple[FloatArray, IntArray]:
    """The sorted distinct values and the index of each label in them.

    Integer labels on a short range (relevance grades) are encoded by their
    offset from the minimum and one ``bincount``, which is several times faster
    than the sort inside ``np.unique``.
    """
    if value.size == 0:
        return np.empty(0), np.empty(0, dtype=np.int64)
    low = value.min()
    span = value.max() - low
    if span < _MAX_OFFSET_RANGE:
        shifted = value - low
        offset = shifted.astype(np.int64)
        if np.array_equal(offset, shifted):
            present = np.bincount(offset, minlength=int(span) + 1) > 0
            rank = np.cumsum(present) - 1
            return low + np.flatnonzero(present).astype(np.float64), rank[offset]
    values, code = np.unique(value, return_inverse=True)
    return values, code.astype(np.int64, copy=False)


def _lookup(domain: NDArray[Any], ids: NDArray[Any]) -> IntArray:
    if domain.size == 0 or ids.size == 0:
        return np.full(ids.shape, -1, dtype=np.int64)
    order = np.argsort(domain, kind="stable")
    ranked = domain[order]
    try:
        position = np.clip(np.searchsorted(ranked, ids), 0, domain.size - 1)
    except TypeError:  # ids of another kind (strings against integer ids) match nothing
        return np.full(ids.shape, -1, dtype=np.int64)
    found: BoolArray = ranked[position] == ids
    return np.where(found, order[position], -1).astype(np.int64)
