"""Popularity bias and novelty: how popular, or how rare, the recommended items are.

Popularity is a value per catalog item, by default its number of interactions in the data the
system learned from (`Interactions.popularity`, every row counting). The list-level measures
average over each user's list, then over the users with a non-empty list.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from evalcore.recsys._data import (
    BoolArray,
    FloatArray,
    IntArray,
    RecommendationLists,
    RecsysInputError,
    item_values,
    mean_of_list_means,
)

DEFAULT_HEAD_SHARE = 0.8


def popularity_bias(lists: RecommendationLists, popularity: ArrayLike, *, k: int | None = None) -> float:
    """Seed 004's ARP ratio: the mean popularity of the recommended slots over the catalog's mean.

    (sum_i e_i p_i / sum_i e_i) / (sum_i p_i / |catalog|), with e_i the number of top-k lists that
    hold item i. Above 1, the lists favour popular items. Slots are pooled over users (a user with
    a longer list weighs more), as in seed 004; `average_recommendation_popularity` averages per
    user instead.

    >>> lists = RecommendationLists.from_matrix([[0, 1], [0, 2]], n_items=4)
    >>> popularity_bias(lists, [40, 20, 10, 10])  # slots average 27.5, the catalog 20
    1.375
    """
    top = lists.top(k)
    values = item_values(popularity, top.n_items, name="popularity")
    exposure = top.exposure()
    if exposure.sum() == 0 or values.sum() == 0:
        return float("nan")
    return float((exposure @ values / exposure.sum()) / values.mean())


def average_recommendation_popularity(
    lists: RecommendationLists, popularity: ArrayLike, *, k: int | None = None
) -> float:
    """ARP: mean over users of the mean popularity of their top-k items.

    ARP = 1/|U| sum_u (1/|L_u|) sum_{i in L_u} p(i) (Abdollahpouri et al.), over users with a
    non-empty list; in the unit of `popularity` (interactions by default).
    """
    top = lists.top(k)
    return mean_of_list_means(top, item_values(popularity, top.n_items, name="popularity"))


def long_tail_items(popularity: ArrayLike, *, head_share: float = DEFAULT_HEAD_SHARE) -> BoolArray:
    """The long tail: every item outside the short head.

    The short head is the most popular items that together hold `head_share` of all interactions:
    item i is in it when the items strictly more popular than i hold less than `head_share` of the
    total, and p(i) > 0. Tied items fall on the same side, whatever their order (Elliot's split,
    with ties decided by value rather than by sort order). Items with no interaction are in the tail.
    """
    values = np.asarray(popularity, dtype=np.float64)
    if values.ndim != 1 or not np.isfinite(values).all() or (values < 0).any():
        raise RecsysInputError("popularity must be one finite, non-negative value per item")
    if not 0.0 < head_share <= 1.0:
        raise RecsysInputError(f"head_share must lie in (0, 1], got {head_share!r}")
    distinct, inverse, counts = _distinct(values)
    mass = distinct * counts
    more_popular = mass.sum() - np.cumsum(mass)  # held by the items strictly more popular than each value
    in_head = (more_popular < head_share * mass.sum()) & (distinct > 0)
    return ~in_head[inverse.reshape(-1)]


def _distinct(values: FloatArray) -> tuple[FloatArray, IntArray, IntArray]:
    """`np.unique(values, return_inverse=True, return_counts=True)`. Popularity is usually a count per
    item, whole numbers below a few times the number of items: a bincount then finds the same arrays
    without sorting a value per item (a fifth of a second on a 1M-item catalog)."""
    if values.size and values.max() <= 4 * values.size and (values == np.floor(values)).all():
        whole = values.astype(np.int64)
        tally = np.bincount(whole)
        present = np.flatnonzero(tally)
        rank = np.zeros(tally.size, dtype=np.intp)
        rank[present] = np.arange(present.size)
        return present.astype(np.float64), rank[whole], tally[present]
    distinct, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return distinct, inverse, counts


def average_percentage_long_tail(
    lists: RecommendationLists,
    popularity: ArrayLike,
    *,
    k: int | None = None,
    head_share: float = DEFAULT_HEAD_SHARE,
) -> float:
    """APLT: mean over users of the share of their top-k items that are in the long tail.

    APLT = 1/|U| sum_u |L_u ∩ tail| / |L_u| (Abdollahpouri et al.), the tail as `long_tail_items`.
    """
    top = lists.top(k)
    values = item_values(popularity, top.n_items, name="popularity")
    tail = long_tail_items(values, head_share=head_share).astype(np.float64)
    return mean_of_list_means(top, tail)


def self_information(popularity: ArrayLike) -> FloatArray:
    """-log2 p(i) for every item, with p(i) = interactions(i) / total interactions.

    An item with no interaction would be infinitely novel; it is given the self-information of an
    item seen once, log2(total), the largest finite value the data can show.
    """
    values = np.asarray(popularity, dtype=np.float64)
    total = values.sum()
    if total <= 0:
        return np.full(values.shape, np.nan)
    return np.log2(total) - np.log2(np.maximum(values, min(1.0, total)))


def novelty(lists: RecommendationLists, popularity: ArrayLike, *, k: int | None = None) -> float:
    """Mean self-information of the recommended items, in bits.

    novelty = 1/|U| sum_u (1/|L_u|) sum_{i in L_u} -log2 p(i), p(i) = interactions(i) / total
    interactions (Zhou et al. 2010 use the share of users instead). Items with no interaction
    count as seen once (see `self_information`). Higher means rarer items.

    >>> lists = RecommendationLists.from_matrix([[0, 1]], n_items=2)
    >>> round(novelty(lists, [6, 2]), 4)  # (-log2 0.75 - log2 0.25) / 2
    1.2075
    """
    top = lists.top(k)
    values = item_values(popularity, top.n_items, name="popularity")
    return mean_of_list_means(top, self_information(values))


def most_popular_items(popularity: ArrayLike, k: int) -> IntArray:
    """The codes of the k most popular items, ties broken by the lower code (a "most popular" list)."""
    values = np.asarray(popularity, dtype=np.float64)
    return np.argsort(-values, kind="stable")[:k].astype(np.int64)
