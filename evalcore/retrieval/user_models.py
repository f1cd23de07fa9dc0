"""Kernels of the user-model measures ir-measures names: RBP and its residual, gdeval's ERR, and the
C/W/L measures of cwl_eval (SDCG, NERR, INST, INSQ, BPM).

A C/W/L measure (Azzopardi, Thomas and Moffat 2019) is a user who, after the document at rank i,
goes on with probability c(i). cwl_eval looks at 1,000 ranks (its `max_n`), padding a shorter ranking
with documents of gain 0, and weighs rank i by W(i) = prod(c(j), j < i) / sum over the 1,000 ranks of
the same products; the measure is the expected gain per document, sum of W(i) * gain(i). Gains lie in
[0, 1]: a binary measure gives 1 to a grade >= the level; a graded one clips a grade to [min_rel,
max_rel] and scales it to [0, 1]; a negative grade counts as 0 first and an unjudged document gains 0.

Each kernel works on the judged hits of `RankingContext`. RBP has a closed form; the measures whose
continuation depends on the gains seen so far fill a queries x 1,000 matrix of gains a block of
queries at a time (about 2 MB each), never a Python loop per query.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from evalcore.retrieval.precision import MeasureParam, values
from evalcore.retrieval.ranking import RankingContext, segmented_cumsum

#: The ranks cwl_eval looks at (its max_n, which ir-measures keeps).
CWL_DEPTH = 1000
#: gdeval's highest grade: ERR's stopping probability is (2^grade - 1) / 2^4.
GDEVAL_MAX_GRADE = 4
_BLOCK_CELLS = 1 << 18

Continuation = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _rbp_weights(p: float) -> np.ndarray:
    """cwl_eval's weight of each of its 1,000 ranks: p^(i-1) normalised over the 1,000."""
    products = np.concatenate([[1.0], np.cumprod(np.full(CWL_DEPTH - 1, p))])
    return products * (1.0 / products.sum())


def rbp(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """RBP = sum over relevant ranks i <= 1000 of W(i), W(i) = p^(i-1) / sum(p^(j-1), j <= 1000)."""
    weights = _rbp_weights(values(param)[0])
    # cwl_eval reads a negative grade as 0 first, so that with rel=0 every judged document counts.
    keep = (np.maximum(ctx.hit_rel, 0) >= level) & (ctx.hit_rank <= CWL_DEPTH)
    return ctx.count(ctx.hit_query[keep], weights[ctx.hit_rank[keep] - 1])


def rbp_residual(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """What RBP could still gain: the weight of the unjudged ranks and of the ranks past the run's
    end, down to 1000 (cwl_eval's residual: those documents counted as relevant)."""
    weights = _rbp_weights(values(param)[0])
    judged = ctx.hit_rank <= CWL_DEPTH
    return np.maximum(1.0 - ctx.count(ctx.hit_query[judged], weights[ctx.hit_rank[judged] - 1]), 0.0)


def err(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """gdeval's ERR@k: sum over ranks i <= k of R(i) / i * prod(1 - R(j), j < i), with
    R = (2^grade - 1) / 16 and grades above 4 counted as 4."""
    k = values(param)[0]
    keep = (ctx.hit_rel > 0) & (ctx.hit_rank <= k)
    query, rank = ctx.hit_query[keep], ctx.hit_rank[keep]
    stop = (np.exp2(np.minimum(ctx.hit_rel[keep], GDEVAL_MAX_GRADE)) - 1.0) / 2.0**GDEVAL_MAX_GRADE
    # The chance of reaching each hit: the running product of (1 - R) above it, as a sum of logs.
    log_go_on = np.log1p(-stop)
    reach = np.exp(segmented_cumsum(query, log_go_on, ctx.num_queries) - log_go_on)
    return ctx.count(query, stop * reach / rank)


# --- cwl_eval's C/W/L measures on a matrix of gains ----------------------------------------------


def scaled_gains(ctx: RankingContext, min_rel: float, max_rel: float) -> np.ndarray:
    """Per hit, cwl_eval's graded gain: max(grade, 0) clipped to [min_rel, max_rel], scaled to [0, 1]."""
    grade = np.clip(np.maximum(ctx.hit_rel, 0).astype(np.float64), min_rel, max_rel)
    return (grade - min_rel) / (max_rel - min_rel)


def expected_utility(ctx: RankingContext, gain: np.ndarray, continuation: Continuation) -> np.ndarray:
    """Per query, sum of W(i) * gain(i) over cwl_eval's 1,000 ranks, W from the continuation c(i).

    `gain` is per hit; `continuation(gains, rank)` maps a block's (queries x 1000) gains and the
    1-based ranks to c. cwl_eval ignores the last rank's c.
    """
    out = np.zeros(ctx.num_queries)
    keep = ctx.hit_rank <= CWL_DEPTH
    query, rank, gain = ctx.hit_query[keep], ctx.hit_rank[keep], gain[keep]
    ranks = np.arange(1, CWL_DEPTH + 1, dtype=np.float64)
    step = max(1, _BLOCK_CELLS // CWL_DEPTH)
    bounds = np.searchsorted(query, np.arange(0, ctx.num_queries + step, step))
    for block, lo in enumerate(range(0, ctx.num_queries, step)):
        hi = min(lo + step, ctx.num_queries)
        a, b = bounds[block], bounds[block + 1]
        gains = np.zeros((hi - lo, CWL_DEPTH))
        gains[query[a:b] - lo, rank[a:b] - 1] = gain[a:b]
        go_on = continuation(gains, ranks)
        reach = np.ones_like(gains)
        np.cumprod(go_on[:, :-1], axis=1, out=reach[:, 1:])
        out[lo:hi] = np.einsum("ij,ij->i", reach, gains) / reach.sum(axis=1)
    return out


def _graded(param: MeasureParam, at: int) -> tuple[float, float]:
    """(min_rel, max_rel) from the parameter tuple, starting at index `at`."""
    params = values(param)
    return params[at], params[at + 1]


def sdcg(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k, min_rel, max_rel = values(param)

    def go_on(gains: np.ndarray, rank: np.ndarray) -> np.ndarray:
        c = np.where(rank < k, np.log2(rank + 1.0) / np.log2(rank + 2.0), 0.0)
        return np.broadcast_to(c, gains.shape)

    return expected_utility(ctx, scaled_gains(ctx, min_rel, max_rel), go_on)


def nerr8(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k, min_rel, max_rel = values(param)
    return expected_utility(
        ctx, scaled_gains(ctx, min_rel, max_rel), lambda g, rank: np.where(rank < k, 1.0 - g, 0.0)
    )


def nerr9(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k, min_rel, max_rel = values(param)
    return expected_utility(
        ctx,
        scaled_gains(ctx, min_rel, max_rel),
        lambda g, rank: np.where(rank < k, rank / (rank + 1.0) * (1.0 - g), 0.0),
    )


def nerr10(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    p, min_rel, max_rel = values(param)
    return expected_utility(ctx, scaled_gains(ctx, min_rel, max_rel), lambda g, rank: p * (1.0 - g))


def nerr11(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    t, min_rel, max_rel = values(param)
    return expected_utility(
        ctx,
        scaled_gains(ctx, min_rel, max_rel),
        lambda g, rank: ((rank + 2.0 * t - 1.0) / (rank + 2.0 * t)) ** 2.0 * (1.0 - g),
    )


def inst(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    t, min_rel, max_rel = values(param)

    def go_on(gains: np.ndarray, rank: np.ndarray) -> np.ndarray:
        left = t - np.cumsum(gains, axis=1)  # T_i, the gain still wanted after rank i
        return ((rank + t + left - 1.0) / (rank + t + left)) ** 2.0

    return expected_utility(ctx, scaled_gains(ctx, min_rel, max_rel), go_on)


def insq(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    t, min_rel, max_rel = values(param)

    def go_on(gains: np.ndarray, rank: np.ndarray) -> np.ndarray:
        return np.broadcast_to(((rank + 2.0 * t - 1.0) / (rank + 2.0 * t)) ** 2.0, gains.shape)

    return expected_utility(ctx, scaled_gains(ctx, min_rel, max_rel), go_on)


def bpm(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """BPM-Static: go on while the gain so far is below T and fewer than k documents were seen."""
    k, t, min_rel, max_rel = values(param)
    return expected_utility(
        ctx,
        scaled_gains(ctx, min_rel, max_rel),
        lambda g, rank: ((np.cumsum(g, axis=1) < t) & (rank < k)).astype(np.float64),
    )
