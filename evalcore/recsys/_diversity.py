"""Intra-list diversity, unexpectedness and serendipity: how unlike each other, and unlike what the
user already knows, the recommended items are.

Two items are alike through an `ItemSimilarity`: by category (1 when they share it, else 0) or by
the cosine of their feature vectors. The distance is 1 - similarity: in [0, 1] for categories and
non-negative features, in [0, 2] for features with negative components.

Nothing here builds an items x items or a k x k matrix. Intra-list diversity sums unit feature
vectors (sum_{i<j} cos = (|sum_i f_i|^2 - n) / 2) or counts equal categories in each sorted row;
unexpectedness compares each recommended item with the user's history as ragged (slot, history item)
pairs, a block at a time. All of it is linear in the number of users.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalcore.recsys._accuracy import RelevanceHits, mean_over_evaluated, relevance_hits
from evalcore.recsys._data import (
    BLOCK_ELEMENTS,
    BoolArray,
    FloatArray,
    IntArray,
    Interactions,
    RecommendationLists,
    RecsysInputError,
    distinct,
    mean_over_lists,
)
from evalcore.recsys._exposure import item_categories


@dataclass(frozen=True, eq=False)
class ItemSimilarity:
    """How alike two catalog items are: the same category, or the cosine of their features.

    Build it with `from_categories` (an item without a category, -1, is unlike every other item) or
    `from_features` (an items x d matrix; every row must be non-zero).
    """

    categories: IntArray | None = None
    unit_features: FloatArray | None = None

    @classmethod
    def from_categories(cls, categories: ArrayLike) -> ItemSimilarity:
        codes = np.asarray(categories)
        codes = item_categories(codes, codes.shape[0] if codes.ndim == 1 else -1).copy()
        # An item without a category gets a code of its own, so it equals no other item's.
        missing = np.flatnonzero(codes < 0)
        codes[missing] = codes.max(initial=-1) + 1 + np.arange(missing.size)
        return cls(categories=codes)

    @classmethod
    def from_features(cls, features: ArrayLike) -> ItemSimilarity:
        matrix = np.asarray(features, dtype=np.float64)
        if matrix.ndim != 2:
            raise RecsysInputError(f"features must be an items x dimensions matrix, got shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise RecsysInputError("features must be finite")
        norms = np.linalg.norm(matrix, axis=1)
        if (norms == 0).any():
            raise RecsysInputError(
                f"item {int(np.flatnonzero(norms == 0)[0])} has an all-zero feature vector"
            )
        return cls(unit_features=matrix / norms[:, None])

    @property
    def n_items(self) -> int:
        source = self.categories if self.categories is not None else self.unit_features
        assert source is not None
        return int(source.shape[0])

    @property
    def width(self) -> int:
        """Numbers touched per pair compared (1 for categories, d for features): sets the block size."""
        return 1 if self.unit_features is None else int(self.unit_features.shape[1])

    def check_matches(self, lists: RecommendationLists) -> None:
        if self.n_items != lists.n_items:
            raise RecsysInputError(
                f"the similarity describes {self.n_items} items, the catalog has {lists.n_items}"
            )

    def profile(self, history: Interactions) -> tuple[IntArray, IntArray]:
        """A user's history as the tokens compared: distinct categories, or distinct items."""
        users, items = history.pairs()
        if self.categories is None:
            return users, items
        width = int(self.categories.max(initial=0)) + 1
        keys = distinct(users * width + self.categories[items])
        return keys // width, keys % width

    def to_tokens(self, items: IntArray, tokens: IntArray) -> FloatArray:
        """Similarity of each item to the matching profile token."""
        if self.categories is not None:
            return (self.categories[items] == tokens).astype(np.float64)
        assert self.unit_features is not None
        return np.einsum("pd,pd->p", self.unit_features[items], self.unit_features[tokens])


# --- intra-list diversity --------------------------------------------------------------------------


def per_user_intra_list_diversity(lists: RecommendationLists, similarity: ItemSimilarity) -> FloatArray:
    similarity.check_matches(lists)
    n = lists.lengths.astype(np.float64)
    pairs = n * (n - 1) / 2
    alike = np.zeros(lists.n_users)
    categories = similarity.categories
    # Few categories (at most a few per list slot): count each list's items per category, a block of
    # lists at a time; else sort each list's categories.
    n_categories = 0 if categories is None else int(categories.max(initial=-1)) + 1
    tally = categories is not None and n_categories <= _TALLY_PER_SLOT * max(lists.depth, 1)
    width = n_categories + 1 if tally else lists.depth * similarity.width
    block = max(1, (_TALLY_CELLS if tally else BLOCK_ELEMENTS) // max(width, lists.depth, 1))
    for start in range(0, lists.n_users, block):
        rows = lists.items[start : start + block]
        if tally:
            assert categories is not None
            alike[start : start + block] = _alike_by_tally(rows, categories, n_categories)
        else:
            alike[start : start + block] = _alike_pairs(rows, similarity)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n >= 2, 1.0 - alike / pairs, np.nan)


#: The tally of `_alike_by_tally` is used when there are at most this many categories per list slot,
#: over blocks of lists of at most `_TALLY_CELLS` (list, category) cells.
_TALLY_PER_SLOT = 8
_TALLY_CELLS = 1 << 20


def _alike_by_tally(rows: np.ndarray, categories: IntArray, n_categories: int) -> FloatArray:
    """sum over pairs i < j of a list of [cat(i) = cat(j)], for a block of rows: with c items of a
    category, a list has c (c - 1) / 2 alike pairs of it. Padding is counted in a bin of its own."""
    width = n_categories + 1
    cats = categories[rows]
    cats[rows < 0] = n_categories
    cats += np.arange(0, rows.shape[0] * width, width)[:, None]
    counts = np.bincount(cats.ravel(), minlength=rows.shape[0] * width).reshape(rows.shape[0], width)
    counts = counts[:, :n_categories]
    return (counts * (counts - 1) // 2).sum(axis=1).astype(np.float64)


def _alike_pairs(rows: np.ndarray, similarity: ItemSimilarity) -> FloatArray:
    """sum over pairs i < j of a list of sim(i, j), for a block of rows."""
    valid = rows >= 0
    if similarity.categories is not None:
        # Sort each row's categories (padding first, as -1); within a run of equal categories the
        # j-th member closes j - 1 alike pairs, so the pairs are the positions minus the run starts.
        cats = np.sort(np.where(valid, similarity.categories[rows], -1), axis=1)
        index = np.broadcast_to(np.arange(cats.shape[1]), cats.shape)
        starts = np.concatenate([np.ones((cats.shape[0], 1), bool), cats[:, 1:] != cats[:, :-1]], axis=1)
        run_start = np.maximum.accumulate(np.where(starts, index, 0), axis=1)
        return np.where(cats >= 0, index - run_start, 0).sum(axis=1).astype(np.float64)
    assert similarity.unit_features is not None
    vectors = similarity.unit_features[rows] * valid[:, :, None]
    total = vectors.sum(axis=1)
    return (np.einsum("ud,ud->u", total, total) - valid.sum(axis=1)) / 2


def intra_list_diversity(
    lists: RecommendationLists, similarity: ItemSimilarity, *, k: int | None = None
) -> float:
    """ILD: mean over users of the average distance between two items of their top-k list.

    ILD(L) = 2 / (n (n - 1)) sum_{i<j in L} (1 - sim(i, j)), averaged over users with at least two
    items. With categories it is the share of item pairs in different categories.
    """
    return mean_over_lists(per_user_intra_list_diversity(lists.top(k), similarity))


# --- unexpectedness relative to the user's history -------------------------------------------------


def history_similarity(
    users: IntArray, items: IntArray, history: Interactions, similarity: ItemSimilarity
) -> FloatArray:
    """For each (user, item), the largest similarity of the item to the user's history (-inf if empty)."""
    h_users, tokens = similarity.profile(history)
    offsets = np.searchsorted(h_users, np.arange(history.n_users + 1))
    counts = offsets[users + 1] - offsets[users]
    best = np.full(users.size, -np.inf)
    cumulative = np.cumsum(counts)
    per_block = max(1, BLOCK_ELEMENTS // similarity.width)
    bounds = np.searchsorted(
        cumulative, np.arange(per_block, cumulative[-1] if cumulative.size else 0, per_block)
    )
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, users.size], strict=True):
        sel = lo + np.flatnonzero(counts[lo:hi] > 0)
        if sel.size == 0:
            continue
        c = counts[sel]
        slot = np.repeat(np.arange(sel.size), c)
        group_start = np.cumsum(c) - c
        token = offsets[users[sel]][slot] + np.arange(slot.size) - group_start[slot]
        sims = similarity.to_tokens(items[sel][slot], tokens[token])
        best[sel] = np.maximum.reduceat(sims, group_start)
    return best


def _unexpected(
    users: IntArray, items: IntArray, history: Interactions, similarity: ItemSimilarity
) -> FloatArray:
    """min over the history of 1 - sim; 1 for a user with no history (nothing is expected yet)."""
    best = history_similarity(users, items, history, similarity)
    return np.where(np.isneginf(best), 1.0, 1.0 - best)


def _check(lists: RecommendationLists, history: Interactions, similarity: ItemSimilarity) -> None:
    history.check_matches(lists, name="the history")
    similarity.check_matches(lists)


def per_user_unexpectedness(
    lists: RecommendationLists, history: Interactions, similarity: ItemSimilarity
) -> FloatArray:
    _check(lists, history, similarity)
    users, ranks = np.nonzero(lists.valid)
    unexpected = np.zeros(lists.items.shape)
    unexpected[users, ranks] = _unexpected(
        users, lists.items[users, ranks].astype(np.int64), history, similarity
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return unexpected.sum(axis=1) / lists.lengths


def unexpectedness(
    lists: RecommendationLists, history: Interactions, similarity: ItemSimilarity, *, k: int | None = None
) -> float:
    """Mean over users of the mean distance of each top-k item to the closest item of their history.

    unexp(u, i) = min_{h in H_u} (1 - sim(i, h)), 1 when H_u is empty. This is seed 004's
    "serendipity" as its comment describes it (1 - the largest similarity); its code takes the
    smallest similarity instead, which calls an item unexpected when it differs from any one history
    item, and it scores a user without history 0. It has no relevance term: see `serendipity_history`.
    """
    return mean_over_lists(per_user_unexpectedness(lists.top(k), history, similarity))


def per_user_serendipity_history(
    stats: RelevanceHits, lists: RecommendationLists, history: Interactions, similarity: ItemSimilarity
) -> FloatArray:
    _check(lists, history, similarity)
    users, ranks = np.nonzero(stats.hits)
    items = lists.items[users, ranks].astype(np.int64)
    sums = np.bincount(users, _unexpected(users, items, history, similarity), minlength=lists.n_users)
    return sums / stats.k


def serendipity_history(
    lists: RecommendationLists,
    relevant: Interactions,
    history: Interactions,
    similarity: ItemSimilarity,
    *,
    k: int | None = None,
) -> float:
    """Relevant and unexpected relative to the user's history: mean over users of
    (1/k) sum_{i in top k, i relevant} unexp(u, i), unexp as in `unexpectedness`.

    Averaged over the users with a relevant item, like precision@k, which bounds it from above when
    distances are at most 1.
    """
    top = lists.top(k)
    stats = relevance_hits(top, relevant, k=k)
    return mean_over_evaluated(per_user_serendipity_history(stats, top, history, similarity), stats)


# --- serendipity relative to a baseline list -------------------------------------------------------


def baseline_membership(lists: RecommendationLists, baseline: RecommendationLists | ArrayLike) -> BoolArray:
    """Whether each recommended item is also in the baseline's list for the same user.

    `baseline` is either one list of item codes for everyone (a most-popular list, say) or a
    `RecommendationLists` with a list per user (a primitive recommender's output).
    """
    items = lists.items
    if isinstance(baseline, RecommendationLists):
        if (baseline.n_users, baseline.n_items) != (lists.n_users, lists.n_items):
            raise RecsysInputError("the baseline lists must be coded for the same users and catalog")
        inside = np.zeros(items.shape, dtype=bool)
        block = max(1, BLOCK_ELEMENTS // max(items.shape[1] * baseline.depth, 1))
        for start in range(0, lists.n_users, block):
            rows, base = items[start : start + block], baseline.items[start : start + block]
            inside[start : start + block] = (rows[:, :, None] == base[:, None, :]).any(axis=2) & (rows >= 0)
        return inside
    codes = np.asarray(baseline)
    if codes.ndim != 1 or (codes.size and (codes.min() < 0 or codes.max() >= lists.n_items)):
        raise RecsysInputError("a baseline list must be one-dimensional item codes of the catalog")
    member = np.zeros(lists.n_items + 1, dtype=bool)  # the extra slot answers the padding (-1)
    member[codes.astype(np.int64)] = True
    return member[items]


def per_user_serendipity_baseline(stats: RelevanceHits, inside: BoolArray) -> FloatArray:
    return (stats.hits & ~inside[:, : stats.hits.shape[1]]).sum(axis=1) / stats.k


def serendipity_baseline(
    lists: RecommendationLists,
    relevant: Interactions,
    baseline: RecommendationLists | ArrayLike,
    *,
    k: int | None = None,
) -> float:
    """Relevant items that a baseline would not have recommended: mean over users of
    |{i in top k : i relevant, i not in B_u}| / k (Murakami et al. 2008; Ge et al. 2010).

    B_u is the baseline's list for user u: one list for everyone (the command uses the k most
    popular items) or a list per user. Averaged over the users with a relevant item.
    """
    top = lists.top(k)
    stats = relevance_hits(top, relevant, k=k)
    return mean_over_evaluated(
        per_user_serendipity_baseline(stats, baseline_membership(top, baseline)), stats
    )
