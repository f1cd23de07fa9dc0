"""Kernels of the counting and set measures, and of precision and recall at cutoffs.

Notation as in `evalcore.retrieval.measures`: per query, R relevant judged documents, n retrieved,
r of them relevant. Every kernel takes the ranking context, the measure's parameter and the relevance
level, and returns one value per evaluated query, computed as trec_eval 9.0.8 computes it (the same
arithmetic in the same order, so that the printed values agree to the last digit).
"""

from __future__ import annotations

import numpy as np

from evalcore.retrieval.ranking import Gains, RankingContext

#: A measure's parameter: a cutoff or a fraction (one output each), a tuple of values (utility's
#: coefficients, 11pt_avg's recall levels, set_F's beta, relstring's length) or gain overrides.
MeasureParam = float | tuple[float, ...] | Gains | None


def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0."""
    out = np.zeros(np.broadcast(num, den).shape, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def cutoff(param: MeasureParam) -> int:
    assert isinstance(param, float | int), param
    return int(param)


def fraction(param: MeasureParam) -> float:
    assert isinstance(param, float | int), param
    return float(param)


def values(param: MeasureParam) -> tuple[float, ...]:
    assert isinstance(param, tuple), param
    return param


# --- counts --------------------------------------------------------------------------------------


def num_q(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return np.ones(ctx.num_queries)


def num_ret(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.num_ret.copy()


def num_rel(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.num_rel(level).copy()


def num_rel_ret(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.relevant(level).per_query.astype(np.float64)


def num_nonrel_judged_ret(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    judged_nonrel = (ctx.hit_rel >= 0) & (ctx.hit_rel < level)
    return ctx.count(ctx.hit_query[judged_nonrel])


def relstring(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """The grades of the first N documents as text: the digit, '>' above 9, '-' for a document
    outside the qrels and '.' for one in the pool but unjudged (a negative grade)."""
    width = max(0, int(values(param)[0]))
    length = np.minimum(ctx.num_ret.astype(np.int64), width)
    grid = np.zeros((ctx.num_queries, max(width, 1)), dtype=np.uint8)  # NUL ends a shorter string
    grid[np.arange(width)[None, :] < length[:, None]] = ord("-")
    top = ctx.hit_rank <= width
    rel = ctx.hit_rel[top]
    code = np.where(rel > 9, ord(">"), np.where(rel >= 0, ord("0") + np.clip(rel, 0, 9), ord(".")))
    grid[ctx.hit_query[top], ctx.hit_rank[top] - 1] = code
    text = grid.view(f"S{grid.shape[1]}").ravel() if width else np.full(ctx.num_queries, b"")
    return text.astype(str).astype(object)


# --- precision and recall at cutoffs -------------------------------------------------------------


def relevant_within(ctx: RankingContext, k: float, level: int) -> np.ndarray:
    rel = ctx.relevant(level)
    return ctx.count(rel.query[rel.rank <= k])


def precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k = cutoff(param)
    return relevant_within(ctx, k, level) / k


def recall(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return safe_div(relevant_within(ctx, cutoff(param), level), ctx.num_rel(level))


def relative_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k = cutoff(param)
    return safe_div(relevant_within(ctx, k, level), np.minimum(ctx.num_rel(level), k))


def success(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return (relevant_within(ctx, cutoff(param), level) > 0).astype(np.float64)


def r_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel, big_r = ctx.relevant(level), ctx.num_rel(level)
    within = ctx.count(rel.query[rel.rank <= big_r[rel.query]])
    return safe_div(within, big_r)


def r_precision_multiple(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    # trec_eval's cutoff for x * R: the integer part of x * R + 0.9.
    k = (fraction(param) * ctx.num_rel(level) + 0.9).astype(np.int64)
    rel = ctx.relevant(level)
    within = ctx.count(rel.query[rel.rank <= k[rel.query]])
    return safe_div(within, k.astype(np.float64))


def judged(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k = cutoff(param)
    return ctx.count(ctx.hit_query[ctx.hit_rank <= k]) / k


def judged_of_retrieved(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    k = cutoff(param)
    return safe_div(ctx.count(ctx.hit_query[ctx.hit_rank <= k]), np.minimum(ctx.num_ret, k))


# --- interpolated precision ----------------------------------------------------------------------


def iprec_at_recall(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return _iprec(ctx, fraction(param), level)


def _iprec(ctx: RankingContext, x: float, level: int) -> np.ndarray:
    rel = ctx.relevant(level)
    interpolated = ctx.interpolated_precision(level)
    found = rel.per_query
    # trec_eval 9: the number of relevant documents at this recall, rounded up from x.1.
    needed = (x * ctx.num_rel(level) + 0.9).astype(np.int64)
    out = np.zeros(ctx.num_queries)
    at = (needed >= 1) & (needed <= found)
    out[at] = interpolated[rel.first[at] + needed[at] - 1]
    zero = (needed == 0) & (found > 0)
    out[zero] = interpolated[rel.first[zero]]
    none = (needed == 0) & (found == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[none] = 0.0 / ctx.num_ret[none]  # NaN for an empty ranking, as trec_eval prints
    return out


def eleven_point_average(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    levels = sorted(values(param))
    total = np.zeros(ctx.num_queries)
    for x in reversed(levels):  # trec_eval adds them from the highest recall level down
        total = total + _iprec(ctx, x, level)
    return total / len(levels)


# --- set measures (the retrieved documents as an unranked set) -----------------------------------


def _set_counts(ctx: RankingContext, level: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return num_rel_ret(ctx, None, level), ctx.num_ret, ctx.num_rel(level)


def set_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel_ret, ret, _ = _set_counts(ctx, level)
    return safe_div(rel_ret, ret)


def set_recall(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel_ret, _, rel = _set_counts(ctx, level)
    return safe_div(rel_ret, rel)


def set_relative_precision(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel_ret, ret, rel = _set_counts(ctx, level)
    return safe_div(rel_ret, np.minimum(ret, rel))


def set_map(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    rel_ret, ret, rel = _set_counts(ctx, level)
    return safe_div(rel_ret * rel_ret, ret * rel)


def set_f(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    beta = values(param)[0]
    rel_ret, ret, rel = _set_counts(ctx, level)
    p, r = safe_div(rel_ret, ret), safe_div(rel_ret, rel)
    return np.where(rel_ret > 0, safe_div((beta + 1.0) * p * r, beta * p + r), 0.0)


def utility(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    a, b, c, d = values(param)
    rel_ret, ret, rel = _set_counts(ctx, level)
    # trec_eval's last term counts the collection's documents (-N), which it defaults to 0.
    return a * rel_ret + b * (ret - rel_ret) + c * (rel - rel_ret) + d * (ctx.num_docs + rel_ret - ret - rel)
