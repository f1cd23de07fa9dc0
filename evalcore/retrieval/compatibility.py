"""Compatibility (Clarke, Vtyurina and Smucker 2020): the rank-biased overlap of a ranking with an
ideal ranking of the relevant documents, as ir-measures' `Compat(p=, normalize=)` computes it.

The ideal ranking lists each query's documents of grade > 0 by grade, descending; within a grade,
by the run's score, descending, a document the run lacks counting as score 0 (so that it comes
after the retrieved documents of positive score and before those of negative score). At depth i
the overlap is the number of documents in the first i of both rankings; RBO sums
p^(i-1) * overlap(i) / i over depths 1 to D = max(n, ideal length) and divides by the sum of
p^(i-1). Normalised, it is divided by the same sum for the ideal ranking against itself.

A relevant retrieved document d counts at every depth from m(d) = max(its rank, its ideal position)
to D, so the sum is, per document, P(D) - P(m(d) - 1) with P the prefix sums of p^(i-1) / i: one
gather per relevant hit, no loop over depths.
"""

from __future__ import annotations

import numpy as np

from evalcore.retrieval.precision import MeasureParam, safe_div, values
from evalcore.retrieval.ranking import RankingContext


def _ideal_positions(ctx: RankingContext) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the relevant hits, the 1-based ideal position of each)."""
    positive = ctx.judged_rel > 0
    top = int(ctx.judged_rel[positive].max()) if positive.any() else 1
    width = np.int64(top + 1)
    # One key per (query, grade), better grades first within a query.
    judged_key = np.sort(
        ctx.judged_query[positive].astype(np.int64) * width + (top - ctx.judged_rel[positive])
    )
    hit = ctx.hit_rel > 0
    query, rank = ctx.hit_query[hit].astype(np.int64), ctx.hit_rank[hit]
    key = query * width + (top - ctx.hit_rel[hit])
    better = np.searchsorted(judged_key, key, side="left") - np.searchsorted(judged_key, query * width)
    same_grade = np.searchsorted(judged_key, key, side="right") - np.searchsorted(judged_key, key)
    # The retrieved documents of the same grade: in rank order, which is the run's score order.
    order = np.lexsort((rank, key))
    sorted_key = key[order]
    start = np.searchsorted(sorted_key, sorted_key, side="left")
    before = np.empty(len(key), dtype=np.int64)
    before[order] = np.arange(len(key)) - start
    retrieved = np.empty(len(key), dtype=np.int64)
    retrieved[order] = np.searchsorted(sorted_key, sorted_key, side="right") - start
    behind_missing = np.where(ctx.hit_score[hit] < 0, same_grade - retrieved, 0)
    return hit, 1 + better + before + behind_missing


def compat(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    p, normalize = values(param)
    ideal_length = ctx.count(ctx.judged_query[ctx.judged_rel > 0]).astype(np.int64)
    depth = np.maximum(ctx.num_ret.astype(np.int64), ideal_length)
    deepest = int(depth.max()) if len(depth) else 0
    weight = np.power(p, np.arange(deepest, dtype=np.float64))
    steps = np.arange(1, deepest + 1, dtype=np.float64)
    overlap_sum = np.concatenate([[0.0], np.cumsum(weight / steps)])  # P(i)
    normaliser = np.concatenate([[0.0], np.cumsum(weight)])
    hit, position = _ideal_positions(ctx)
    query = ctx.hit_query[hit]
    reached = np.maximum(ctx.hit_rank[hit], position)
    score = ctx.count(query, overlap_sum[depth[query]] - overlap_sum[reached - 1])
    if not normalize:
        return safe_div(score, normaliser[depth])
    # The ideal ranking against itself: its document j counts from depth j on.
    best = ideal_length * overlap_sum[depth] - np.concatenate([[0.0], np.cumsum(overlap_sum)])[ideal_length]
    return np.where(best > 0, safe_div(score, best), safe_div(score, normaliser[depth]))
