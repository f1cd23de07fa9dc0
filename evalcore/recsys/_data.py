"""Recommendation lists, interactions and item descriptions, integer-encoded.

Every recommendation metric reads a `RecommendationLists`: a users x depth matrix of item codes in
rank order, -1 after the end of a short list. Items are codes `0 .. n_items - 1` of the catalog, so
the catalog's size is part of the lists (catalog coverage and the Gini coefficient count the items
that were never recommended). Users are rows. `Interactions` are (user, item) pairs in the same
codes: the held-out relevant items, or a user's history. The constructors validate, so the kernels
can trust the fields.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.errors import EvalCoreError

IntArray: TypeAlias = NDArray[np.int64]
CodeMatrix: TypeAlias = NDArray[np.int32]
FloatArray: TypeAlias = NDArray[np.float64]
BoolArray: TypeAlias = NDArray[np.bool_]

#: Rows of a users x k block, or pairs of a ragged expansion, handled at once: temporaries stay small.
BLOCK_ELEMENTS = 1 << 22
# `from_ranked` builds the full-depth matrix when it has at most this many cells per input row (plus
# a constant), so that memory stays O(rows) even when a few lists are very long.
_DENSE_PER_ROW = 4
_DENSE_MIN_CELLS = 1 << 20


class RecsysInputError(EvalCoreError, ValueError):
    """Input a recommendation metric cannot be computed from: misaligned, out of range, repeated."""


class RepeatedEntryError(RecsysInputError):
    """A user's list holds an item twice, or a rank twice; `row` and `first_row` index the input rows."""

    def __init__(self, message: str, *, kind: Literal["item", "rank"], row: int, first_row: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.row = row
        self.first_row = first_row


def _codes(values: ArrayLike, *, name: str, narrow: bool = False) -> IntArray:
    """Integer codes as int64 (or, with `narrow`, int32 codes as they are: half the memory traffic)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise RecsysInputError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise RecsysInputError(f"{name} must be integer codes, not {array.dtype}")
    if narrow and array.dtype == np.int32:
        return array  # type: ignore[return-value]
    return array.astype(np.int64, copy=False)


def _check_range(codes: NDArray[Any], bound: int, *, name: str) -> None:
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= bound):
        raise RecsysInputError(f"{name} codes must lie in [0, {bound}), found {codes.min()}..{codes.max()}")


@dataclass(frozen=True, eq=False)
class RecommendationLists:
    """Each user's top-k list: `items[u, j]` is the code of the item at rank j + 1 for user u.

    A list shorter than the matrix is padded with -1 at its end. `n_items` is the catalog's size.
    `user_ids` / `item_ids`, when given, name the codes (index `u` of `user_ids` is row u).

    >>> lists = RecommendationLists.from_matrix([[0, 1, 2], [0, 3, -1]], n_items=5)
    >>> lists.n_users, lists.depth, lists.lengths.tolist()
    (2, 3, [3, 2])
    """

    items: CodeMatrix
    n_items: int
    user_ids: NDArray[Any] | None = None
    item_ids: NDArray[Any] | None = None

    @classmethod
    def from_matrix(
        cls,
        items: ArrayLike,
        *,
        n_items: int,
        user_ids: ArrayLike | None = None,
        item_ids: ArrayLike | None = None,
    ) -> RecommendationLists:
        """Lists from a users x depth matrix of item codes, -1 after the end of a short list."""
        matrix = np.asarray(items)
        if matrix.ndim != 2:
            raise RecsysInputError(f"items must be a users x depth matrix, got shape {matrix.shape}")
        if matrix.size and not np.issubdtype(matrix.dtype, np.integer):
            raise RecsysInputError(f"items must be integer codes, not {matrix.dtype}")
        if n_items < 0:
            raise RecsysInputError(f"n_items must be >= 0, got {n_items}")
        matrix = matrix.astype(np.int32)
        if matrix.size and (int(matrix.min()) < -1 or int(matrix.max()) >= n_items):
            raise RecsysInputError(f"item codes must lie in [0, {n_items}) or be -1 (padding)")
        valid = matrix >= 0
        if (valid[:, 1:] & ~valid[:, :-1]).any():
            raise RecsysInputError("padding (-1) must come after a list's last item")
        ordered = np.sort(matrix, axis=1)
        repeated = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
        if repeated.any():
            user = int(np.flatnonzero(repeated.any(axis=1))[0])
            raise RecsysInputError(f"user row {user} lists an item twice")
        return cls(matrix, int(n_items), _ids(user_ids, matrix.shape[0]), _ids(item_ids, n_items))

    @classmethod
    def from_ranked(
        cls,
        users: ArrayLike,
        items: ArrayLike,
        ranks: ArrayLike,
        *,
        n_users: int,
        n_items: int,
        k: int | None = None,
        user_ids: ArrayLike | None = None,
        item_ids: ArrayLike | None = None,
    ) -> RecommendationLists:
        """Lists from long-format rows (user code, item code, rank), in any order.

        Each user's items are ordered by rank (1 is the top; gaps are allowed) and the first `k` kept
        (all when None). A rank or an item repeated within a user's list raises `RepeatedEntryError`
        naming both rows. Users without a row get an empty list.
        """
        user = _codes(users, name="users", narrow=True)
        item = _codes(items, name="items", narrow=True)
        rank = _codes(ranks, name="ranks", narrow=True)
        if not (user.size == item.size == rank.size):
            raise RecsysInputError(
                f"users, items and ranks must be aligned: {user.size}, {item.size} and {rank.size} values"
            )
        _check_range(user, n_users, name="user")
        _check_range(item, n_items, name="item")
        order = _rank_order(user, rank)
        if order is not None:
            user, item, rank = user[order], item[order], rank[order]
            _check_repeated_ranks(user, rank, order)  # the sorted input passed a strict check already
        # The rows are sorted by user now: each user's rows start where a binary search finds them
        # (`bincount` would first copy the int32 codes to int64).
        counts = np.diff(np.searchsorted(user, np.arange(n_users + 1, dtype=user.dtype)))
        depth = int(counts.max()) if counts.size else 0
        width = depth if k is None else min(depth, _cutoff(k))
        if user.size == n_users * depth:
            # Every list is full (the usual top-k file): the sorted items are the matrix, row by row.
            matrix = item.reshape(n_users, depth).astype(np.int32, copy=False)
            dense = True
        else:
            # Each row's position in its list: its index minus the index of its user's first row.
            position = np.arange(user.size) - np.repeat(np.cumsum(counts) - counts, counts)
            # The full-depth matrix checks repeated items cheaply, row by row, unless a few very long
            # lists would make it much larger than the rows themselves.
            dense = n_users * depth <= _DENSE_PER_ROW * user.size + _DENSE_MIN_CELLS
            keep = slice(None) if dense else position < width
            matrix = np.full((n_users, depth if dense else width), -1, dtype=np.int32)
            matrix[user[keep], position[keep]] = item[keep]
        _check_repeated_items(matrix if dense else None, user, item, order, n_items)
        if matrix.shape[1] > width:
            matrix = np.ascontiguousarray(matrix[:, :width])
        return cls(matrix, int(n_items), _ids(user_ids, n_users), _ids(item_ids, n_items))

    @classmethod
    def from_ids(
        cls, lists: Mapping[Hashable, Sequence[Hashable]], *, catalog: Sequence[Hashable] | None = None
    ) -> RecommendationLists:
        """Lists from `{user: [item, ...]}` in rank order (small, in-memory data such as examples).

        The catalog defaults to every recommended item, in order of first appearance.
        """
        item_ids = (
            list(dict.fromkeys(i for items in lists.values() for i in items))
            if catalog is None
            else list(catalog)
        )
        code = {item: c for c, item in enumerate(item_ids)}
        unknown = [i for items in lists.values() for i in items if i not in code]
        if unknown:
            raise RecsysInputError(f"item {unknown[0]!r} is not in the catalog")
        depth = max((len(items) for items in lists.values()), default=0)
        matrix = np.full((len(lists), depth), -1, dtype=np.int64)
        for row, items in enumerate(lists.values()):  # examples only: the readers build from columns
            matrix[row, : len(items)] = [code[i] for i in items]
        users = np.array(list(lists), dtype=object)
        return cls.from_matrix(
            matrix, n_items=len(item_ids), user_ids=users, item_ids=np.array(item_ids, dtype=object)
        )

    # --- shape -------------------------------------------------------------------------------------

    @property
    def n_users(self) -> int:
        return int(self.items.shape[0])

    @property
    def depth(self) -> int:
        return int(self.items.shape[1])

    @cached_property
    def valid(self) -> BoolArray:
        """Where the matrix holds an item (not padding)."""
        return self.items >= 0

    @cached_property
    def lengths(self) -> IntArray:
        """Each user's list length."""
        return self.valid.sum(axis=1, dtype=np.int64)

    def top(self, k: int | None) -> RecommendationLists:
        """The first `k` items of every list (the lists themselves when `k` is None or >= depth)."""
        if k is None or _cutoff(k) >= self.depth:
            return self
        return RecommendationLists(self.items[:, :k], self.n_items, self.user_ids, self.item_ids)

    def exposure(self) -> IntArray:
        """How many lists recommend each catalog item (0 for items never recommended)."""
        full = self.lengths.size == 0 or int(self.lengths.min()) == self.depth
        items = self.items.ravel() if full else self.items[self.valid]
        # A block at a time: `bincount` copies its int32 codes to int64 first.
        counts = np.zeros(self.n_items, dtype=np.int64)
        for start in range(0, items.size, BLOCK_ELEMENTS):
            counts += np.bincount(items[start : start + BLOCK_ELEMENTS], minlength=self.n_items)
        return counts

    def permuted(self, order: ArrayLike) -> RecommendationLists:
        """The same lists with the users (rows) in another order (for invariance checks)."""
        index = np.asarray(order)
        users = None if self.user_ids is None else self.user_ids[index]
        return RecommendationLists(self.items[index], self.n_items, users, self.item_ids)


def distinct(values: NDArray[Any]) -> NDArray[Any]:
    """The sorted distinct values. numpy 2.4's `np.unique` takes a hashing path that is a hundred
    times slower than this sort on millions of integer keys."""
    ordered = np.sort(values)
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if ordered.size else ordered


def _cutoff(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise RecsysInputError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _ids(ids: ArrayLike | None, size: int) -> NDArray[Any] | None:
    if ids is None:
        return None
    array = np.asarray(ids, dtype=object) if not isinstance(ids, np.ndarray) else ids
    if array.shape != (size,):
        raise RecsysInputError(f"expected {size} ids, got {array.shape[0] if array.ndim else 0}")
    return array


def _rank_order(user: IntArray, rank: IntArray) -> IntArray | None:
    """The row order sorted by (user, rank), or None when the rows already are (the usual file)."""
    if user.size < 2:
        return None
    same = user[1:] == user[:-1]
    if bool(((user[1:] > user[:-1]) | (same & (rank[1:] > rank[:-1]))).all()):
        return None
    return np.lexsort((rank, user))


def _original_row(order: IntArray | None, sorted_row: int) -> int:
    return sorted_row if order is None else int(order[sorted_row])


def _check_repeated_ranks(user: IntArray, rank: IntArray, order: IntArray | None) -> None:
    repeated = np.flatnonzero((user[1:] == user[:-1]) & (rank[1:] == rank[:-1]))
    if repeated.size:
        pair = sorted((_original_row(order, int(repeated[0])), _original_row(order, int(repeated[0]) + 1)))
        raise RepeatedEntryError(
            f"rank {int(rank[repeated[0]])} appears twice in a user's list",
            kind="rank",
            row=pair[1],
            first_row=pair[0],
        )


def _check_repeated_items(
    matrix: CodeMatrix | None, user: IntArray, item: IntArray, order: IntArray | None, n_items: int
) -> None:
    """An item twice in one list. Sorting each row of the full-depth matrix is cheap (rows are short);
    without it, or once it finds a repeat, the rows are sorted as (user, item) keys."""
    if matrix is not None and not _repeats_in_rows(matrix):
        return
    keys = user.astype(np.int64) * max(n_items, 1) + item
    if matrix is None:
        ordered_keys = np.sort(keys)
        if not (ordered_keys[1:] == ordered_keys[:-1]).any():
            return
    if order is not None:
        in_file_order = np.empty_like(keys)
        in_file_order[order] = keys
        keys = in_file_order
    later, earlier = first_repeat(keys)
    raise RepeatedEntryError(
        "an item appears twice in a user's list", kind="item", row=later, first_row=earlier
    )


def _repeats_in_rows(matrix: CodeMatrix) -> bool:
    """Whether some row holds an item twice (padding, -1, may repeat): each row sorted, a block of
    rows at a time, so that the sorted copy and the comparisons stay small."""
    block = max(1, BLOCK_ELEMENTS // max(matrix.shape[1], 1))
    for start in range(0, matrix.shape[0], block):
        ordered = np.sort(matrix[start : start + block], axis=1)
        if ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any():
            return True
    return False


def first_repeat(keys: IntArray) -> tuple[int, int]:
    """The first index whose key an earlier index holds, and that earlier index (a repeat must exist)."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    repeated = ordered[1:] == ordered[:-1]
    later = int(order[1:][repeated].min())
    return later, int(order[np.searchsorted(ordered, keys[later])])


@dataclass(frozen=True, eq=False)
class Interactions:
    """(user, item) pairs in the codes of a `RecommendationLists`: relevant items, or a history.

    A pair may repeat (a user who bought an item twice): popularity counts every row, relevance and
    history count a pair once.

    >>> pairs = Interactions.from_codes([0, 0, 1, 0], [2, 3, 2, 2], n_users=2, n_items=5)
    >>> pairs.n_pairs, pairs.per_user().tolist(), pairs.popularity().tolist()
    (3, [2, 1], [0, 0, 3, 1, 0])
    """

    users: IntArray
    items: IntArray
    n_users: int
    n_items: int

    @classmethod
    def from_codes(cls, users: ArrayLike, items: ArrayLike, *, n_users: int, n_items: int) -> Interactions:
        user = _codes(users, name="users")
        item = _codes(items, name="items")
        if user.size != item.size:
            raise RecsysInputError(f"users and items must be aligned: {user.size} and {item.size} values")
        _check_range(user, n_users, name="user")
        _check_range(item, n_items, name="item")
        return cls(user, item, int(n_users), int(n_items))

    @classmethod
    def from_ids(
        cls, pairs: Mapping[Hashable, Sequence[Hashable]], lists: RecommendationLists
    ) -> Interactions:
        """`{user: [item, ...]}` in the ids of `lists`; users without a list are left out."""
        if lists.user_ids is None or lists.item_ids is None:
            raise RecsysInputError("the lists have no ids to match")
        user_code = {u: c for c, u in enumerate(lists.user_ids.tolist())}
        item_code = {i: c for c, i in enumerate(lists.item_ids.tolist())}
        unknown = [i for items in pairs.values() for i in items if i not in item_code]
        if unknown:
            raise RecsysInputError(f"item {unknown[0]!r} is not in the catalog")
        kept = [(u, items) for u, items in pairs.items() if u in user_code]
        users = np.array([user_code[u] for u, items in kept for _ in items], dtype=np.int64)
        codes = np.array([item_code[i] for _, items in kept for i in items], dtype=np.int64)
        return cls.from_codes(users, codes, n_users=lists.n_users, n_items=lists.n_items)

    @property
    def n_rows(self) -> int:
        return int(self.users.size)

    @cached_property
    def _pair_keys(self) -> IntArray:
        """Distinct (user, item) pairs as sorted keys user * n_items + item: grouped by user."""
        return distinct(self.users * max(self.n_items, 1) + self.items)

    @property
    def n_pairs(self) -> int:
        return int(self._pair_keys.size)

    def pairs(self) -> tuple[IntArray, IntArray]:
        """The distinct (user, item) pairs, sorted by user then item."""
        return self._pairs

    @cached_property
    def _pairs(self) -> tuple[IntArray, IntArray]:
        users, items = np.divmod(self._pair_keys, max(self.n_items, 1))
        return users, items

    def per_user(self) -> IntArray:
        """How many distinct items each user has."""
        return np.bincount(self.pairs()[0], minlength=self.n_users).astype(np.int64)

    def popularity(self) -> IntArray:
        """Each catalog item's number of interactions (every row counts)."""
        return np.bincount(self.items, minlength=self.n_items).astype(np.int64)

    def check_matches(self, lists: RecommendationLists, *, name: str) -> None:
        if (self.n_users, self.n_items) != (lists.n_users, lists.n_items):
            raise RecsysInputError(
                f"{name} are coded for {self.n_users} users and {self.n_items} items, the lists for "
                f"{lists.n_users} users and {lists.n_items} items"
            )

    def permuted(self, order: ArrayLike) -> Interactions:
        """The same pairs with users renumbered as `RecommendationLists.permuted(order)` does."""
        index = np.asarray(order)
        new_code = np.empty_like(index)
        new_code[index] = np.arange(index.size)
        return Interactions(new_code[self.users], self.items, self.n_users, self.n_items)


def per_list_mean(lists: RecommendationLists, item_values: FloatArray) -> FloatArray:
    """Each user's mean of `item_values` over the items of their list (NaN for an empty list).

    Gathers a block of rows at a time, so that the users x k temporaries stay in cache.
    """
    totals = np.zeros(lists.n_users, dtype=np.float64)
    if lists.n_items == 0:
        return np.full(lists.n_users, np.nan)
    block = max(1, BLOCK_ELEMENTS // max(lists.depth, 1))
    for start in range(0, lists.n_users, block):
        rows = lists.items[start : start + block]
        totals[start : start + block] = np.where(rows >= 0, item_values[rows], 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return totals / lists.lengths


def mean_of_list_means(
    lists: RecommendationLists, item_values: FloatArray, exposure: IntArray | None = None
) -> float:
    """The mean over users (with a non-empty list) of the mean of `item_values` over their list.

    When every non-empty list has the same length, this equals the exposure-weighted mean of the
    values, a dot product over the catalog instead of a gather over users x k; the usual top-k file
    takes that path.
    """
    lengths = lists.lengths[lists.lengths > 0]
    if lengths.size == 0:
        return float("nan")
    if lengths.min() == lengths.max():
        counts = lists.exposure() if exposure is None else exposure
        return float(counts @ item_values / counts.sum())
    return mean_over_lists(per_list_mean(lists, item_values))


def mean_over_lists(per_user: FloatArray) -> float:
    """The mean of per-user values over the users that have a value (a non-empty list); NaN if none."""
    present = ~np.isnan(per_user)
    return float(per_user[present].mean()) if present.any() else float("nan")


def item_values(values: ArrayLike, n_items: int, *, name: str) -> FloatArray:
    """A finite, non-negative value per catalog item (popularity counts, say)."""
    array = np.asarray(values, dtype=np.float64)
    if array.shape != (n_items,):
        raise RecsysInputError(
            f"{name} must hold one value per catalog item ({n_items}), got shape {array.shape}"
        )
    if not np.isfinite(array).all() or (array < 0).any():
        raise RecsysInputError(f"{name} must be finite and non-negative")
    return array
