"""ir-measures' Accuracy: how often the ranking puts a relevant document above a non-relevant one.

Per query, over the first n = min(k, retrieved) documents, a document is relevant when its grade is
>= the level, an unjudged document having grade 0 (as ir-measures' accuracy provider reads the qrels,
so with a level of 0 or below the unjudged documents count as relevant). With r relevant and m
non-relevant documents among the n, and above(d) the non-relevant documents ranked above d,

    Accuracy = 1 - sum over relevant d of above(d) / (r * m),

the share of (relevant, non-relevant) pairs in the right order. The query has no value when r = 0
(ir-measures reports nothing for it, and its mean skips it) or m = 0 (ir-measures divides by zero
there; here the query is skipped too, having no pair to order).

Only one of the two classes needs the judged hits: the relevant documents when the level is 1 or
more (every other document is non-relevant), the non-relevant ones when it is 0 or less (every other
document, unjudged ones included, is relevant). Pairs are counted with one `np.bincount` per query set.
"""

from __future__ import annotations

import numpy as np

from evalcore.retrieval.precision import MeasureParam, values
from evalcore.retrieval.ranking import RankingContext


def accuracy(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """Accuracy@k per query (k = param[0], inf for the whole ranking); NaN where it is undefined."""
    k = values(param)[0]
    n = np.minimum(ctx.num_ret, k)
    cut = ctx.hit_rank <= k
    if level >= 1:
        query, rank = ctx.hit_query[cut], ctx.hit_rank[cut]
        is_rel = ctx.hit_rel[cut] >= level
        query, rank = query[is_rel], rank[is_rel]
        r = ctx.count(query)
        m = n - r
        # The j-th relevant document (0-based) at rank s has s - 1 - j non-relevant documents above it.
        first = np.searchsorted(query, np.arange(ctx.num_queries))
        before = np.arange(len(query)) - first[query] if len(query) else query.copy()
        wrong = ctx.count(query, rank - 1 - before)
    else:
        query, rank = ctx.hit_query[cut], ctx.hit_rank[cut]
        is_nonrel = ctx.hit_rel[cut] < level
        query, rank = query[is_nonrel], rank[is_nonrel]
        m = ctx.count(query)
        r = n - m
        # A non-relevant document at rank s is above n - s documents, of which the non-relevant ones
        # below it make m(m - 1) / 2 over the query.
        wrong = ctx.count(query, n[query] - rank) - m * (m - 1) / 2
    pairs = r * m
    out = np.full(ctx.num_queries, np.nan)
    np.subtract(1.0, wrong / np.where(pairs > 0, pairs, 1.0), out=out, where=pairs > 0)
    return out
