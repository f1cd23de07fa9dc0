"""Accuracy at k: hit rate, precision, recall and nDCG, from one users x k matrix of hits.

The sufficient statistic is `RelevanceHits`: whether the item at each rank is relevant to its user,
and each user's number of relevant items. Every measure is a per-user value averaged over the users
with at least one relevant item (a user without any says nothing about accuracy; trec_eval skips
such queries too). A user with relevant items and an empty list scores 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.recsys._data import (
    BLOCK_ELEMENTS,
    BoolArray,
    FloatArray,
    IntArray,
    Interactions,
    RecommendationLists,
    _cutoff,
)


@dataclass(frozen=True, eq=False)
class RelevanceHits:
    """`hits[u, j]`: the item at rank j + 1 of user u's list is relevant; `n_relevant[u]`: how many are."""

    hits: BoolArray
    n_relevant: IntArray
    k: int

    @property
    def evaluated(self) -> BoolArray:
        """The users the averages run over: those with at least one relevant item."""
        return self.n_relevant > 0

    def hit_count(self) -> IntArray:
        return self.hits.sum(axis=1, dtype=np.int64)


def relevance_hits(
    lists: RecommendationLists, relevant: Interactions, *, k: int | None = None
) -> RelevanceHits:
    """Mark the relevant items of each top-k list.

    Each distinct relevant (user, item) pair is compared with its user's k items, a block of pairs at
    a time: O(pairs x k), linear in the number of users, never a users x catalog matrix.
    """
    relevant.check_matches(lists, name="relevant items")
    cutoff = lists.depth if k is None else _cutoff(k)
    top = lists.top(k).items
    hits = np.zeros(top.shape, dtype=bool)
    users, items = relevant.pairs()
    block = max(1, BLOCK_ELEMENTS // max(top.shape[1], 1))
    for start in range(0, users.size, block):
        u = users[start : start + block]
        # An item appears at most once in a list, so each pair marks at most one rank.
        pair, rank = np.nonzero(top[u] == items[start : start + block, None])
        hits[u[pair], rank] = True
    return RelevanceHits(hits, relevant.per_user(), max(cutoff, 1))


def mean_over_evaluated(values: FloatArray, stats: RelevanceHits) -> float:
    evaluated = stats.evaluated
    return float(values[evaluated].mean()) if evaluated.any() else float("nan")


def per_user_hit(stats: RelevanceHits) -> FloatArray:
    return (stats.hit_count() > 0).astype(np.float64)


def per_user_precision(stats: RelevanceHits) -> FloatArray:
    return stats.hit_count() / stats.k


def per_user_recall(stats: RelevanceHits) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats.hit_count() / stats.n_relevant


def _discounts(k: int) -> FloatArray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def per_user_ndcg(stats: RelevanceHits) -> FloatArray:
    discounts = _discounts(stats.k)
    dcg = np.zeros(stats.hits.shape[0])
    for rank in range(stats.hits.shape[1]):  # a pass per rank: no users x k float temporary
        dcg[stats.hits[:, rank]] += discounts[rank]
    ideal = np.concatenate([[0.0], np.cumsum(discounts)])[np.minimum(stats.n_relevant, stats.k)]
    with np.errstate(divide="ignore", invalid="ignore"):
        return dcg / ideal


def hit_rate(lists: RecommendationLists, relevant: Interactions, *, k: int | None = None) -> float:
    """Share of users with at least one relevant item in their top k.

    Averaged over the users with a relevant item. Seed 004 divides by every user, including those
    without one; the two agree when every user has relevant items.

    >>> lists = RecommendationLists.from_matrix([[0, 1, 2], [3, 4, -1]], n_items=6)
    >>> hit_rate(lists, Interactions.from_codes([0, 1], [2, 5], n_users=2, n_items=6))
    0.5
    """
    stats = relevance_hits(lists, relevant, k=k)
    return mean_over_evaluated(per_user_hit(stats), stats)


def precision_at_k(lists: RecommendationLists, relevant: Interactions, *, k: int | None = None) -> float:
    """Mean over users of |top k ∩ relevant| / k (divided by k even when a list is shorter, as P@k)."""
    stats = relevance_hits(lists, relevant, k=k)
    return mean_over_evaluated(per_user_precision(stats), stats)


def recall_at_k(lists: RecommendationLists, relevant: Interactions, *, k: int | None = None) -> float:
    """Mean over users of |top k ∩ relevant| / |relevant|."""
    stats = relevance_hits(lists, relevant, k=k)
    return mean_over_evaluated(per_user_recall(stats), stats)


def ndcg_at_k(lists: RecommendationLists, relevant: Interactions, *, k: int | None = None) -> float:
    """Mean over users of DCG@k / ideal DCG@k with binary gains.

    DCG@k = sum over ranks r <= k holding a relevant item of 1 / log2(r + 1); the ideal puts
    min(k, |relevant|) relevant items first.
    """
    stats = relevance_hits(lists, relevant, k=k)
    return mean_over_evaluated(per_user_ndcg(stats), stats)
