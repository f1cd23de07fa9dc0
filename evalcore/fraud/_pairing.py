"""Two models' scores of the same examples, paired by id: what comparing two fraud models rests on.

`read_ids` reads a scores file's `id` column (the metrics ignore it); `pair_by_id` matches two files'
rows by it and refuses what cannot be paired: a repeated id, ids one file lacks, or an example labelled
fraud in one file and legitimate in the other.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.arrow import small_pages
from evalcore.csvfiles import read_csv
from evalcore.fraud._curve import FraudInputError, IntArray
from evalcore.fraud._files import SCORES

#: Ids named in a refusal, at most.
NAMED_IDS = 5

_IDS = replace(SCORES, ignored=tuple(name for name in SCORES.columns if name != "id"))


def read_ids(path: str | Path) -> NDArray[Any]:
    """The `id` of each row of a scores file, in the file's order (bytes, as written)."""
    with small_pages():
        column = read_csv(path, _IDS).column("id")
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)


@dataclass(frozen=True, eq=False)
class PairedRows:
    """Rows `a[i]` of the first file and `b[i]` of the second hold the same example, in id order."""

    a: IntArray
    b: IntArray

    @property
    def n(self) -> int:
        return int(self.a.size)


def _named(ids: NDArray[Any]) -> str:
    shown = [
        value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        for value in ids[:NAMED_IDS]
    ]
    more = f" and {ids.size - NAMED_IDS} more" if ids.size > NAMED_IDS else ""
    return ", ".join(repr(value) for value in shown) + more


def _unique(ids: NDArray[Any], name: str) -> None:
    values, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise FraudInputError(
            f"{name} repeats the id {_named(values[counts > 1])}: each example needs one row"
        )


def pair_by_id(
    ids_a: ArrayLike,
    ids_b: ArrayLike,
    *,
    labels_a: ArrayLike,
    labels_b: ArrayLike,
    names: tuple[str, str] = ("a", "b"),
) -> PairedRows:
    """Match the rows of two scores files by id. Both must hold the same examples, once each, with the
    same labels; otherwise a `FraudInputError` says which ids are at fault.

    >>> paired = pair_by_id(["t1", "t2", "t3"], ["t3", "t1", "t2"], labels_a=[1, 0, 0], labels_b=[0, 1, 0])
    >>> paired.a.tolist(), paired.b.tolist()
    ([0, 1, 2], [1, 2, 0])
    """
    a, b = np.asarray(ids_a, dtype=object), np.asarray(ids_b, dtype=object)
    _unique(a, names[0])
    _unique(b, names[1])
    common, rows_a, rows_b = np.intersect1d(a, b, assume_unique=True, return_indices=True)
    if common.size < max(a.size, b.size):
        only_a = np.setdiff1d(a, common, assume_unique=True)
        only_b = np.setdiff1d(b, common, assume_unique=True)
        parts = [
            f"{ids.size} ids only in {name} ({_named(ids)})"
            for ids, name in ((only_a, names[0]), (only_b, names[1]))
            if ids.size
        ]
        raise FraudInputError(
            "the two models must score the same examples to be compared: " + "; ".join(parts)
        )
    differ = np.asarray(labels_a, dtype=bool)[rows_a] != np.asarray(labels_b, dtype=bool)[rows_b]
    if differ.any():
        raise FraudInputError(
            f"{int(differ.sum())} examples have different labels in {names[0]} and {names[1]} "
            f"({_named(common[differ])}): the two models must be judged against the same truth"
        )
    return PairedRows(rows_a.astype(np.int64), rows_b.astype(np.int64))
