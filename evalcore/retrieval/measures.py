"""The registry of retrieval measures: each defined once, with its names, formula and kernel.

Notation, per query: rank r = 1, 2, ... in trec_eval's order (score descending, then document id
descending); rel(r) the judged grade at rank r (unjudged documents count as non-relevant); "relevant"
means rel >= l, the relevance level (trec_eval -l, default 1); R the number of relevant judged
documents; N the number of judged documents below the level; n the number retrieved.

A kernel takes the ranking context, the measure's parameter (a cutoff k, or a recall level) and the
relevance level, and returns one value per evaluated query.

The examples use one query judged {d1: 2, d2: 0, d3: 1, d5: 3} and ranked d1, d2, d3, d4:

>>> example("P@2")
0.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evalcore.metrics import MetricSpec
from evalcore.retrieval.ranking import Gain, RankingContext

Kernel = Callable[[RankingContext, float | None, int], np.ndarray]
Param = Literal["none", "cutoff", "recall"]
Aggregate = Literal["mean", "sum", "gmean"]

#: trec_eval's floor for a query's AP inside the geometric mean (MIN_GEO_MEAN).
MIN_GEO_MEAN = 0.00001
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
DEFAULT_RECALL_LEVELS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Measure:
    """One retrieval measure. `doc` holds its formula and an example."""

    name: str  # trec_eval-style name; parametrised ones are written name_k (P_10, ndcg_cut_10)
    ir_name: str | None  # ir-measures-style name; parametrised ones are written name@k (P@10)
    kernel: Kernel
    doc: str
    param: Param = "none"
    aggregate: Aggregate = "mean"
    higher_is_better: bool = True
    integer: bool = False  # printed as an integer (trec_eval's num_* measures)
    uses_rel_level: bool = True
    trec_eval: bool = False  # trec_eval (and pytrec_eval) computes it under `name`
    defaults: tuple[float, ...] | None = None  # parameters of the bare name, when not the usual ones

    @property
    def missing_value(self) -> float:
        """What a query of the qrels that the run lacks contributes under complete=True (-c)."""
        return float(np.log(MIN_GEO_MEAN)) if self.aggregate == "gmean" else 0.0

    @property
    def default_params(self) -> tuple[float, ...]:
        if self.defaults is not None:
            return self.defaults
        if self.param == "cutoff":
            return DEFAULT_CUTOFFS
        if self.param == "recall":
            return DEFAULT_RECALL_LEVELS
        return ()


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _k(param: float | None) -> int:
    assert param is not None
    return int(param)


# --- counts ----------------------------------------------------------------------------------------


def num_q(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return np.ones(ctx.num_queries)


def num_ret(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return ctx.num_ret.copy()


def num_rel(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return ctx.num_rel(level).copy()


def num_rel_ret(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return ctx.relevant(level).per_query.astype(np.float64)


# --- precision and recall --------------------------------------------------------------------------


def _relevant_within(ctx: RankingContext, k: int, level: int) -> np.ndarray:
    rel = ctx.relevant(level)
    return ctx.count(rel.query[rel.rank <= k])


def precision(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    k = _k(param)
    return _relevant_within(ctx, k, level) / k


def recall(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _safe_div(_relevant_within(ctx, _k(param), level), ctx.num_rel(level))


def recall_capped(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    k = _k(param)
    return _safe_div(_relevant_within(ctx, k, level), np.minimum(ctx.num_rel(level), k))


def success(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return (_relevant_within(ctx, _k(param), level) > 0).astype(np.float64)


def r_precision(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    rel, big_r = ctx.relevant(level), ctx.num_rel(level)
    within = ctx.count(rel.query[rel.rank <= big_r[rel.query]])
    return _safe_div(within, big_r)


def judged(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    k = _k(param)
    return ctx.count(ctx.hit_query[ctx.hit_rank <= k]) / k


# --- average precision -----------------------------------------------------------------------------


def _precision_sum(ctx: RankingContext, k: float, level: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the sum of precision at each relevant rank <= k, and how many there are."""
    rel = ctx.relevant(level)
    within = rel.rank <= k
    sums = ctx.count(rel.query[within], rel.count_so_far[within] / rel.rank[within])
    return sums, ctx.count(rel.query[within])


def average_precision(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    sums, _ = _precision_sum(ctx, np.inf, level)
    return _safe_div(sums, ctx.num_rel(level))


def average_precision_cut(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    sums, _ = _precision_sum(ctx, _k(param), level)
    return _safe_div(sums, ctx.num_rel(level))


def average_precision_retrieved(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    sums, found = _precision_sum(ctx, _k(param), level)
    return _safe_div(sums, found)


def log_average_precision(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return np.log(np.maximum(average_precision(ctx, None, level), MIN_GEO_MEAN))


# --- reciprocal rank -------------------------------------------------------------------------------


def _reciprocal_rank(ctx: RankingContext, k: float, level: int) -> np.ndarray:
    rel = ctx.relevant(level)
    has = rel.per_query > 0
    out = np.zeros(ctx.num_queries)
    first_rank = rel.rank[rel.first[has]]
    out[has] = np.where(first_rank <= k, 1.0 / first_rank, 0.0)
    return out


def reciprocal_rank(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _reciprocal_rank(ctx, np.inf, level)


def reciprocal_rank_cut(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _reciprocal_rank(ctx, _k(param), level)


# --- bpref -----------------------------------------------------------------------------------------


def bpref(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    judged_hit = ctx.hit_rel >= 0
    query, rel = ctx.hit_query[judged_hit], ctx.hit_rel[judged_hit]
    nonrel = (rel < level).astype(np.int64)
    # Non-relevant judged documents above each hit: a cumulative sum restarted at each query.
    running = np.cumsum(nonrel) - nonrel
    first = np.searchsorted(query, np.arange(ctx.num_queries))
    start = running[np.minimum(first, max(len(running) - 1, 0))] if len(running) else running
    above = running - start[query] if len(running) else running
    big_r, big_n = ctx.num_rel(level), ctx.num_nonrel(level)
    is_rel = rel >= level
    q = query[is_rel]
    cap_above = np.minimum(above[is_rel], big_r[q])
    denom = np.minimum(big_n, big_r)[q]
    penalty = np.zeros(len(q))
    np.divide(cap_above, denom, out=penalty, where=above[is_rel] > 0)
    return _safe_div(ctx.count(q, 1.0 - penalty), big_r)


# --- nDCG ------------------------------------------------------------------------------------------


def _gain(grade: np.ndarray, gain: Gain) -> np.ndarray:
    g = grade.astype(np.float64)
    return g if gain == "linear" else np.exp2(g) - 1.0


def _dcg(ctx: RankingContext, k: float, gain: Gain) -> np.ndarray:
    keep = (ctx.hit_rel > 0) & (ctx.hit_rank <= k)
    rank = ctx.hit_rank[keep]
    return ctx.count(ctx.hit_query[keep], _gain(ctx.hit_rel[keep], gain) / np.log2(rank + 1.0))


def _ideal_dcg(ctx: RankingContext, k: float, gain: Gain) -> np.ndarray:
    ideal = ctx.ideal()
    keep = ideal.position < k
    discount = np.log2(ideal.position[keep] + 2.0)
    return ctx.count(ideal.query[keep], _gain(ideal.grade[keep], gain) / discount)


def _ndcg(ctx: RankingContext, k: float, gain: Gain) -> np.ndarray:
    dcg = _dcg(ctx, k, gain)
    ideal = _ideal_dcg(ctx, k, gain)
    # trec_eval leaves the DCG (which is 0) when the ideal DCG is 0.
    return np.where(ideal > 0, _safe_div(dcg, ideal), dcg)


def ndcg(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _ndcg(ctx, np.inf, "linear")


def ndcg_cut(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _ndcg(ctx, _k(param), "linear")


def ndcg_exp(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _ndcg(ctx, np.inf, "exp")


def ndcg_exp_cut(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    return _ndcg(ctx, _k(param), "exp")


# --- interpolated precision ------------------------------------------------------------------------


def iprec_at_recall(ctx: RankingContext, param: float | None, level: int) -> np.ndarray:
    assert param is not None
    rel = ctx.relevant(level)
    interpolated = ctx.interpolated_precision(level)
    found = rel.per_query
    # trec_eval 9: the number of relevant documents at this recall, rounded up from x.1.
    needed = (float(param) * ctx.num_rel(level) + 0.9).astype(np.int64)
    out = np.zeros(ctx.num_queries)
    at = (needed >= 1) & (needed <= found)
    out[at] = interpolated[rel.first[at] + needed[at] - 1]
    zero = (needed == 0) & (found > 0)
    out[zero] = interpolated[rel.first[zero]]
    none = (needed == 0) & (found == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out[none] = 0.0 / ctx.num_ret[none]  # NaN for an empty ranking, as trec_eval prints
    return out


# --- the registry ----------------------------------------------------------------------------------

_REGISTRY: tuple[Measure, ...] = (
    Measure(
        "num_q",
        "NumQ",
        num_q,
        "Number of evaluated queries: 1 per query, summed.\n\n>>> example('num_q')\n1.0",
        aggregate="sum",
        integer=True,
        uses_rel_level=False,
        trec_eval=True,
    ),
    Measure(
        "num_ret",
        "NumRet",
        num_ret,
        "n, the number of documents retrieved, summed over queries.\n\n>>> example('num_ret')\n4.0",
        aggregate="sum",
        integer=True,
        uses_rel_level=False,
        trec_eval=True,
    ),
    Measure(
        "num_rel",
        "NumRel",
        num_rel,
        "R, the number of judged documents with rel >= l, summed.\n\n>>> example('num_rel')\n3.0",
        aggregate="sum",
        integer=True,
        trec_eval=True,
    ),
    Measure(
        "num_rel_ret",
        "NumRelRet",
        num_rel_ret,
        "Relevant documents retrieved, summed.\n\n>>> example('num_rel_ret')\n2.0",
        aggregate="sum",
        integer=True,
        trec_eval=True,
    ),
    Measure(
        "P",
        "P",
        precision,
        "P@k = |relevant in the top k| / k, dividing by k even when fewer are retrieved.\n\n"
        ">>> example('P@2')\n0.5",
        param="cutoff",
        trec_eval=True,
    ),
    Measure(
        "recall",
        "R",
        recall,
        "R@k = |relevant in the top k| / R (0 when R = 0).\n\n>>> example('R@3')\n0.6667",
        param="cutoff",
        trec_eval=True,
    ),
    Measure(
        "recall_capped",
        "R(cap)",
        recall_capped,
        "Seed 000's recall: |relevant in the top k| / min(k, R) (0 when R = 0).\n\n"
        ">>> example('R(cap)@2')\n0.5",
        param="cutoff",
    ),
    Measure(
        "success",
        "Success",
        success,
        "Success@k = 1 if a relevant document is in the top k, else 0 (hit rate).\n\n"
        ">>> example('Success@1')\n1.0",
        param="cutoff",
        trec_eval=True,
        defaults=(1, 5, 10),
    ),
    Measure(
        "Rprec",
        "Rprec",
        r_precision,
        "R-precision = |relevant in the top R| / R.\n\n>>> example('Rprec')\n0.6667",
        trec_eval=True,
    ),
    Measure(
        "map",
        "AP",
        average_precision,
        "AP = (1/R) * sum over relevant ranks r of P@r; MAP is its mean over queries.\n\n"
        ">>> example('AP')\n0.5556",
        trec_eval=True,
    ),
    Measure(
        "map_cut",
        "AP",
        average_precision_cut,
        "AP@k = (1/R) * sum over relevant ranks r <= k of P@r.\n\n>>> example('AP@2')\n0.3333",
        param="cutoff",
        trec_eval=True,
    ),
    Measure(
        "ap_retrieved",
        "AP(ret)",
        average_precision_retrieved,
        "Seed 000's AP: sum over relevant ranks r <= k of P@r, divided by the number of relevant\n"
        "documents in the top k instead of R (0 when there are none).\n\n>>> example('AP(ret)@3')\n0.8333",
        param="cutoff",
    ),
    Measure(
        "gm_map",
        "GMAP",
        log_average_precision,
        "Geometric mean AP: per query log(max(AP, 0.00001)); the aggregate is exp(mean).\n"
        "Per-query values are the logs, as pytrec_eval reports them.\n\n"
        ">>> example('gm_map')\n0.5556",
        aggregate="gmean",
        trec_eval=True,
    ),
    Measure(
        "recip_rank",
        "RR",
        reciprocal_rank,
        "RR = 1 / (rank of the first relevant document), 0 if none is retrieved; MRR is its mean.\n"
        "RR(rel=g) counts only grades >= g (seed 003's MRR uses g = 2).\n\n"
        ">>> example('RR(rel=3)')\n0.0",
        trec_eval=True,
    ),
    Measure(
        "recip_rank_cut",
        "RR",
        reciprocal_rank_cut,
        "RR@k = 1 / (rank of the first relevant document) if that rank is <= k, else 0.\n\n"
        ">>> example('RR(rel=1)@1')\n1.0",
        param="cutoff",
    ),
    Measure(
        "bpref",
        "Bpref",
        bpref,
        "bpref = (1/R) * sum over relevant retrieved r of (1 - min(n_r, R) / min(N, R)), where n_r is\n"
        "the number of judged non-relevant documents above r (the term is 1 when n_r = 0).\n"
        "Unjudged documents, and judged ones with a negative grade, are skipped.\n\n"
        ">>> example('bpref')\n0.3333",
        trec_eval=True,
    ),
    Measure(
        "ndcg",
        "nDCG",
        ndcg,
        "nDCG = DCG / IDCG with linear gain: DCG = sum over ranks r of max(rel(r), 0) / log2(r + 1);\n"
        "IDCG is the DCG of all judged documents sorted by grade. The level l does not apply.\n\n"
        ">>> example('nDCG')\n0.525",
        uses_rel_level=False,
        trec_eval=True,
    ),
    Measure(
        "ndcg_cut",
        "nDCG",
        ndcg_cut,
        "nDCG@k = DCG@k / IDCG@k with linear gain; IDCG@k takes the k best judged documents.\n\n"
        ">>> example('nDCG@2')\n0.4693",
        param="cutoff",
        uses_rel_level=False,
        trec_eval=True,
    ),
    Measure(
        "ndcg_exp",
        "nDCG(gain=exp)",
        ndcg_exp,
        "nDCG with exponential gain 2^rel - 1 (the seeds' formula), over the whole ranking.\n\n"
        ">>> example('nDCG(gain=exp)')\n0.3726",
        uses_rel_level=False,
    ),
    Measure(
        "ndcg_exp_cut",
        "nDCG(gain=exp)",
        ndcg_exp_cut,
        "nDCG@k with exponential gain: sum over r <= k of (2^rel(r) - 1) / log2(r + 1), divided by the\n"
        "same sum over the k best judged documents.\n\n>>> example('nDCG(gain=exp)@2')\n0.3374",
        param="cutoff",
        uses_rel_level=False,
    ),
    Measure(
        "judged",
        "Judged",
        judged,
        "Judged@k = |documents in the top k that have any judgment| / k (ir-measures' definition).\n\n"
        ">>> example('Judged@4')\n0.75",
        param="cutoff",
        uses_rel_level=False,
    ),
    Measure(
        "iprec_at_recall",
        "IPrec",
        iprec_at_recall,
        "Interpolated precision at recall x: the best P@r over ranks r at or after the point where\n"
        "floor(x * R + 0.9) relevant documents have been seen (trec_eval 9's rounding).\n\n"
        ">>> example('iprec_at_recall_0.50')\n0.6667",
        param="recall",
        trec_eval=True,
    ),
)

MEASURES: dict[str, Measure] = {m.name: m for m in _REGISTRY}


def example(name: str) -> float:
    """Evaluate one measure on the module's example (for the doctests), rounded to 4 decimals."""
    from evalcore.retrieval.data import Qrels, Run
    from evalcore.retrieval.evaluation import evaluate

    qrels = Qrels.from_dict({"q1": {"d1": 2, "d2": 0, "d3": 1, "d5": 3}})
    run = Run.from_dict({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6}})
    return round(next(iter(evaluate(qrels, run, [name]).aggregate.values())), 4)


def _metric_spec(measure: Measure) -> MetricSpec:
    count = measure.integer
    return MetricSpec(
        name=measure.name,
        label=measure.ir_name or measure.name,
        family="retrieval",
        direction="neutral" if count else ("higher" if measure.higher_is_better else "lower"),
        definition=measure.doc.split("\n\n", 1)[0].replace("\n", " "),
        kernel=measure.kernel,
        range=(0.0, None) if count else (None, 0.0) if measure.aggregate == "gmean" else (0.0, 1.0),
        unit="count" if count else "",
    )


#: The registry's view of the retrieval family (`evalcore.metrics.metric_registry`).
METRIC_SPECS: tuple[MetricSpec, ...] = tuple(_metric_spec(m) for m in _REGISTRY)
