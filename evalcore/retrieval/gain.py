"""Kernels of the graded measures: nDCG and its variants (ndcg_rel, Rndcg), G and binG.

A document's gain is its grade (trec_eval), or 2^grade - 1 (the seeds' nDCG), or an override given as
a parameter (`ndcg.1=3,2=9`); unjudged documents gain 0. The ideal ranking orders each query's
judged documents of positive gain by gain, descending. Running sums (DCG at each rank, the ideal DCG
at each position) restart at every query and add their terms in rank order, as trec_eval's loops do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalcore.retrieval.precision import MeasureParam, cutoff, safe_div
from evalcore.retrieval.ranking import Gains, IdealGains, RankingContext, segmented_cumsum

LINEAR = Gains()
EXPONENTIAL = Gains("exp")


def _gains(param: MeasureParam) -> Gains:
    return param if isinstance(param, Gains) else LINEAR


def _hit_gain(ctx: RankingContext, gains: Gains) -> np.ndarray:
    return gains.of(ctx.hit_rel)


def _discounted(ctx: RankingContext, gains: Gains) -> np.ndarray:
    """Per hit: gain / log2(rank + 1)."""
    return _hit_gain(ctx, gains) / np.log2(ctx.hit_rank + 1.0)


def _dcg(ctx: RankingContext, k: float, gains: Gains) -> np.ndarray:
    gain = _hit_gain(ctx, gains)
    keep = (gain != 0) & (ctx.hit_rank <= k)
    return ctx.count(ctx.hit_query[keep], gain[keep] / np.log2(ctx.hit_rank[keep] + 1.0))


def _ideal_terms(ideal: IdealGains) -> np.ndarray:
    return ideal.gain / np.log2(ideal.position + 2.0)


def _ideal_dcg(ctx: RankingContext, k: float, gains: Gains) -> np.ndarray:
    ideal = ctx.ideal(gains)
    keep = ideal.position < k
    return ctx.count(ideal.query[keep], _ideal_terms(ideal)[keep])


def _ndcg(ctx: RankingContext, k: float, gains: Gains) -> np.ndarray:
    ideal = _ideal_dcg(ctx, k, gains)
    return np.where(ideal > 0, safe_div(_dcg(ctx, k, gains), ideal), 0.0)


@dataclass(frozen=True)
class GainsAt(Gains):
    """Gains with a cutoff: ir-measures' `nDCG(gains={0:0,1:1,2:3})@10`, which nDCG's kernel takes."""

    cutoff: float = np.inf


def ndcg(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    gains = _gains(param)
    if isinstance(gains, GainsAt):
        return _ndcg(ctx, gains.cutoff, Gains(gains.kind, gains.overrides))
    return _ndcg(ctx, np.inf, gains)


def ndcg_cut(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _ndcg(ctx, cutoff(param), LINEAR)


def ndcg_exp(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _ndcg(ctx, np.inf, EXPONENTIAL)


def ndcg_exp_cut(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _ndcg(ctx, cutoff(param), EXPONENTIAL)


def _running_dcg(ctx: RankingContext, gains: Gains) -> np.ndarray:
    """Per hit: the DCG of its query's ranking down to its rank."""
    return segmented_cumsum(ctx.hit_query, _discounted(ctx, gains), ctx.num_queries)


def _running_ideal_dcg(ctx: RankingContext, ideal: IdealGains) -> np.ndarray:
    """Per ideal position: the ideal DCG down to it."""
    return segmented_cumsum(ideal.query, _ideal_terms(ideal), ctx.num_queries)


def _total(ctx: RankingContext, running: np.ndarray, query: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Each query's last running value (0 for a query without entries)."""
    count = np.bincount(query, minlength=ctx.num_queries)
    out = np.zeros(ctx.num_queries)
    has = count > 0
    out[has] = running[first[has] + count[has] - 1]
    return out


def _dcg_at(ctx: RankingContext, running: np.ndarray, query: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """DCG of `query`'s ranking down to rank `depth`, from the running DCG of the hits."""
    span = int(ctx.hit_rank.max()) + 1 if len(ctx.hit_rank) else 1
    keys = ctx.hit_query.astype(np.int64) * span + ctx.hit_rank
    at = np.searchsorted(keys, query.astype(np.int64) * span + np.minimum(depth, span - 1), side="right") - 1
    valid = at >= 0
    valid[valid] = ctx.hit_query[at[valid]] == query[valid]
    return np.where(valid, running[np.maximum(at, 0)] if len(running) else 0.0, 0.0)


def ndcg_rel(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """nDCG averaged over the relevant (positive-gain) documents: at each one retrieved, DCG / ideal
    DCG at its rank; each one missed counts the final DCG / ideal DCG."""
    gains = _gains(param)
    ideal = ctx.ideal(gains)
    running, ideal_running = _running_dcg(ctx, gains), _running_ideal_dcg(ctx, ideal)
    positive = _hit_gain(ctx, gains) > 0
    query, rank = ctx.hit_query[positive], ctx.hit_rank[positive]
    # The ideal DCG stops growing after the last positive gain.
    depth = np.minimum(rank, ideal.per_query[query])
    at_rank = ideal_running[ideal.first[query] + depth - 1]
    total = ctx.count(query, running[positive] / at_rank)
    found = ctx.count(query)
    dcg = _total(ctx, running, ctx.hit_query, ctx.hit_first)
    ideal_dcg = _total(ctx, ideal_running, ideal.query, ideal.first)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = total + (ideal.per_query - found) * dcg / ideal_dcg
        return np.where(total > 0, total / ideal.per_query, 0.0)


def r_ndcg(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """nDCG averaged at the R-levels: the ideal positions after which the ideal gain drops (the
    last documents of each gain level), plus the end of the ranking when it goes past them."""
    gains = _gains(param)
    ideal = ctx.ideal(gains)
    running, ideal_running = _running_dcg(ctx, gains), _running_ideal_dcg(ctx, ideal)
    last = ideal.position + 1 == ideal.per_query[ideal.query]
    following = np.append(ideal.gain[1:], 0.0)
    boundary = last | (following != ideal.gain)
    query, depth = ideal.query[boundary], ideal.position[boundary] + 1
    ret = ctx.num_ret.astype(np.int64)
    dcg_at = _dcg_at(ctx, running, query, np.minimum(depth, ret[query]))
    total = ctx.count(query, dcg_at / ideal_running[boundary])
    points = ctx.count(query)
    past = (ret > ideal.per_query + 1) & (ideal.per_query > 0)
    dcg = _total(ctx, running, ctx.hit_query, ctx.hit_first)
    ideal_dcg = _total(ctx, ideal_running, ideal.query, ideal.first)
    total[past] = total[past] + dcg[past] / ideal_dcg[past]
    points[past] += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        value = total / points  # NaN where no R-level has a positive ideal DCG, as in trec_eval
    return np.where(ctx.num_rel(level) > 0, value, 0.0)


def g_measure(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """G: each retrieved document's gain / log2(2 + cost so far - gain so far), summed and divided by
    the ideal total gain; the cost at a rank adds the ideal gain there, at least 1."""
    gains = _gains(param)
    ideal = ctx.ideal(gains)
    gain = _hit_gain(ctx, gains)
    gained = segmented_cumsum(ctx.hit_query, gain, ctx.num_queries)
    excess = segmented_cumsum(ideal.query, np.maximum(ideal.gain, 1.0) - 1.0, ctx.num_queries)
    nonzero = gain != 0
    query, rank = ctx.hit_query[nonzero], ctx.hit_rank[nonzero]
    depth = np.minimum(rank, ideal.per_query[query])
    # A query without positive gains has no ideal entries: point it at a trailing 0.
    excess = np.append(excess, 0.0)
    cost = rank + excess[np.where(depth > 0, ideal.first[query] + depth - 1, len(excess) - 1)]
    total = ctx.count(query, gain[nonzero] / np.log2(2.0 + cost - gained[nonzero]))
    return safe_div(total, ctx.count(ideal.query, ideal.gain))


def binary_g(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """binG: over the relevant documents retrieved, 1 / log2(2 + non-relevant documents above),
    summed and divided by R."""
    rel = ctx.relevant(level)
    term = 1.0 / np.log2(2.0 + rel.rank - rel.count_so_far)
    return safe_div(ctx.count(rel.query, term), ctx.num_rel(level))
