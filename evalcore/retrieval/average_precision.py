"""Kernels of average precision, reciprocal rank, and the measures built for incomplete judgments
(bpref, infAP), each computed as trec_eval 9.0.8 computes it."""

from __future__ import annotations

import numpy as np

from evalcore.retrieval.precision import MeasureParam, cutoff, safe_div
from evalcore.retrieval.ranking import RankingContext

#: trec_eval's floor for a query's value inside a geometric mean (MIN_GEO_MEAN).
MIN_GEO_MEAN = 0.00001
#: trec_eval's smoothing constant in infAP (INFAP_EPSILON).
INFAP_EPSILON = 0.00001


def _precision_sum(ctx: RankingContext, k: float, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the sum of precision at each relevant rank <= k, and how many there are."""
    rel = ctx.relevant(level)
    within = rel.rank <= k
    sums = ctx.count(rel.query[within], rel.count_so_far[within] / rel.rank[within])
    return sums, ctx.count(rel.query[within])


def average_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    sums, _ = _precision_sum(ctx, np.inf, level)
    return safe_div(sums, ctx.num_rel(level))


def average_precision_cut(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    sums, _ = _precision_sum(ctx, cutoff(param), level)
    return safe_div(sums, ctx.num_rel(level))


def average_precision_retrieved(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    sums, found = _precision_sum(ctx, cutoff(param), level)
    return safe_div(sums, found)


def log_average_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return np.log(np.maximum(average_precision(ctx, None, level), MIN_GEO_MEAN))


def _reciprocal_rank(ctx: RankingContext, k: float, level: int) -> np.ndarray:
    rel = ctx.relevant(level)
    has = rel.per_query > 0
    out = np.zeros(ctx.num_queries)
    first_rank = rel.rank[rel.first[has]]
    out[has] = np.where(first_rank <= k, 1.0 / first_rank, 0.0)
    return out


def reciprocal_rank(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _reciprocal_rank(ctx, np.inf, level)


def reciprocal_rank_cut(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _reciprocal_rank(ctx, cutoff(param), level)


def _judged_above(ctx: RankingContext, level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per hit: the relevant, judged non-relevant and unjudged (negative grade) hits above it."""
    rel = ctx.hit_rel >= level
    nonrel = (ctx.hit_rel >= 0) & ~rel
    unjudged = ctx.hit_rel < 0
    start = ctx.hit_first[ctx.hit_query]

    def above(flags: np.ndarray) -> np.ndarray:
        running = np.cumsum(flags) - flags  # exclusive, over all hits; integers, so exact
        return running - running[start] if len(running) else running

    return above(rel), above(nonrel), above(unjudged)


def bpref(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _bpref(ctx, level)


def _bpref(ctx: RankingContext, level: int) -> np.ndarray:
    _, nonrel_above, _ = _judged_above(ctx, level)
    is_rel = ctx.hit_rel >= level
    query, above = ctx.hit_query[is_rel], nonrel_above[is_rel]
    big_r, big_n = ctx.num_rel(level), ctx.num_nonrel(level)
    penalty = np.zeros(len(query))
    np.divide(np.minimum(above, big_r[query]), np.minimum(big_n, big_r)[query], out=penalty, where=above > 0)
    return safe_div(ctx.count(query, 1.0 - penalty), big_r)


def log_bpref(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return np.log(np.maximum(_bpref(ctx, level), MIN_GEO_MEAN))


def inferred_average_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel_above, nonrel_above, unjudged_above = _judged_above(ctx, level)
    is_rel = ctx.hit_rel >= level
    query = ctx.hit_query[is_rel]
    rel_b, nonrel_b, unj_b = rel_above[is_rel], nonrel_above[is_rel], unjudged_above[is_rel]
    fj = (ctx.hit_rank[is_rel] - 1).astype(np.float64)  # documents above, judged or not
    with np.errstate(divide="ignore", invalid="ignore"):
        # trec_eval's expression, term by term, in its order of operations.
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_b + nonrel_b + unj_b) / fj) * (
            (rel_b + INFAP_EPSILON) / (rel_b + nonrel_b + 2 * INFAP_EPSILON)
        )
    term = np.where(fj == 0, 1.0, term)
    return safe_div(ctx.count(query, term), ctx.num_rel(level))
