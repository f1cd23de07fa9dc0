"""The order in which to judge a pool's candidates, per strategy, spread over topics.

Fixed strategies rank each topic's candidates once (vectorised over every topic at once):

- `depth`: TREC's depth-k pool read breadth first: by the best (smallest) rank any run gives the
  document, then by document id.
- `take-rrf`: Take@N by reciprocal rank fusion, priority sum over runs of 1 / (k + rank) (Cormack,
  Clarke and Buettcher, SIGIR 2009), k = `rrf_k`.
- `take-rbp`: Take@N by rank-biased precision weights, priority sum over runs of (1 - p) p^(rank - 1)
  (Moffat, Webber and Zobel, "Strategic system comparisons via targeted relevance judgments", SIGIR
  2007), p = `rbp_p`. Priorities equal to 12 decimals are ties, settled by document id.
- `random`: a seeded shuffle of each topic's candidates.

Adaptive strategies (`evalcore.pooling.adaptive`) replay the judgments per topic.

The budget is spread evenly over the topics (the remainder to the first topics in qid order); a topic
with fewer candidates than its share gives the rest to the others, evenly again. The order takes the
topics in turn: the next document of the topic with the fewest judgments comes first (ties: qid
order), so a partly judged pool stays balanced.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evalcore.pooling.adaptive import TopicArms
from evalcore.pooling.candidates import PoolCandidates
from evalcore.pooling.params import ADAPTIVE_STRATEGIES, PoolParams

__all__ = ["allot_budget", "fixed_priority", "pool_order", "topic_arms"]


def allot_budget(budget: int | None, counts: np.ndarray) -> np.ndarray:
    """Judgments allotted to each topic: an even share, capped at its candidates, the rest re-spread.

    >>> allot_budget(10, np.array([2, 10, 10])).tolist()
    [2, 4, 4]
    >>> allot_budget(7, np.array([5, 5, 5])).tolist()
    [3, 2, 2]
    """
    counts = np.asarray(counts, dtype=np.int64)
    if budget is None:
        return counts.copy()
    quota = np.zeros(len(counts), dtype=np.int64)
    left = min(int(budget), int(counts.sum()))
    while left > 0:
        open_topics = np.flatnonzero(quota < counts)
        share, extra = divmod(left, len(open_topics))
        give = np.full(len(open_topics), share, dtype=np.int64)
        give[:extra] += 1
        quota[open_topics] = np.minimum(quota[open_topics] + give, counts[open_topics])
        left = min(int(budget), int(counts.sum())) - int(quota.sum())
    return quota


def fixed_priority(candidates: PoolCandidates, params: PoolParams) -> np.ndarray:
    """All candidate indices, by topic, each topic's in the fixed strategy's order."""
    n = len(candidates)
    index = np.arange(n)
    query = candidates.query
    rank = candidates.hit_rank.astype(np.float64)
    if params.strategy == "depth":
        best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, candidates.hit_candidate, candidates.hit_rank.astype(np.int64))
        return np.lexsort((index, best, query))
    if params.strategy in ("take-rrf", "take-rbp"):
        if params.strategy == "take-rrf":
            weight = 1.0 / (params.rrf_k + rank)
        else:
            weight = (1.0 - params.rbp_p) * params.rbp_p ** (rank - 1.0)
        priority = np.bincount(candidates.hit_candidate, weights=weight, minlength=n)
        return np.lexsort((index, -np.round(priority, 12), query))
    if params.strategy == "random":
        keys = np.random.default_rng(params.seed).random(n)
        return np.lexsort((keys, query))
    raise ValueError(f"{params.strategy!r} is not a fixed strategy")


def topic_arms(candidates: PoolCandidates, params: PoolParams, topic: int) -> TopicArms:
    """The arms of `topic` (local document numbers: candidate index - the topic's first)."""
    lo, hi = candidates.hit_bounds[topic], candidates.hit_bounds[topic + 1]
    base = candidates.topic_bounds[topic]
    count = int(candidates.topic_bounds[topic + 1] - base)
    return TopicArms(
        params.strategy,
        count,
        candidates.hit_run[lo:hi],
        candidates.hit_candidate[lo:hi] - base,
        discount=params.discount,
        seed=params.seed,
        topic=topic,
    )


def _check_judged(candidates: PoolCandidates, judged: Sequence[tuple[int, bool]]) -> np.ndarray:
    done = np.array([int(i) for i, _ in judged], dtype=np.int64)
    if len(done) and (done.min() < 0 or done.max() >= len(candidates)):
        raise ValueError("a judged index is not a candidate")
    if len(np.unique(done)) != len(done):
        raise ValueError("a candidate is judged twice")
    return done


def pool_order(
    candidates: PoolCandidates, params: PoolParams, judged: Sequence[tuple[int, bool]] = ()
) -> np.ndarray:
    """Candidate indices not in `judged`, in the order to judge them, cut to what is left of the budget.

    `judged` holds (candidate index, relevant) in the order the judgments arrived; adaptive strategies
    replay them. Deterministic in (candidates, params, judged).

    >>> from evalcore.pooling import candidates_from_runs
    >>> from evalcore.retrieval.data import Run
    >>> runs = [Run.from_dict({"q1": {"a": 3, "b": 2}, "q2": {"x": 1}}), Run.from_dict({"q1": {"c": 1}})]
    >>> pool = candidates_from_runs(runs, depth=10)
    >>> [pool.pair(i) for i in pool_order(pool, PoolParams("depth"))]
    [('q1', 'a'), ('q2', 'x'), ('q1', 'c'), ('q1', 'b')]
    """
    done = _check_judged(candidates, judged)
    topics = len(candidates.qids)
    counts = np.diff(candidates.topic_bounds)
    quota = allot_budget(params.budget, counts)
    judged_per_topic = np.bincount(candidates.query[done], minlength=topics).astype(np.int64)
    remaining = np.maximum(quota - judged_per_topic, 0)
    if params.strategy in ADAPTIVE_STRATEGIES:
        order = _adaptive_order(candidates, params, judged, remaining)
    else:
        order = fixed_priority(candidates, params)
        taken = np.zeros(len(candidates), dtype=bool)
        taken[done] = True
        order = order[~taken[order]]
    query = candidates.query[order].astype(np.int64)
    position = np.arange(len(order)) - np.searchsorted(query, query, side="left")
    keep = position < remaining[query]
    order, query, position = order[keep], query[keep], position[keep]
    turn = judged_per_topic[query] + position
    order = order[np.lexsort((query, turn))]
    left = len(order) if params.budget is None else max(params.budget - len(done), 0)
    return order[:left].astype(np.int64)


def _adaptive_order(
    candidates: PoolCandidates,
    params: PoolParams,
    judged: Sequence[tuple[int, bool]],
    remaining: np.ndarray,
) -> np.ndarray:
    """Per topic: replay the judgments, then the frozen-state order (topics in qid order)."""
    by_topic: dict[int, list[tuple[int, bool]]] = {}
    for index, relevant in judged:
        by_topic.setdefault(int(candidates.query[index]), []).append((int(index), bool(relevant)))
    parts = []
    for topic in np.flatnonzero(remaining).tolist():
        arms = topic_arms(candidates, params, topic)
        base = int(candidates.topic_bounds[topic])
        for index, relevant in by_topic.get(topic, []):
            arms.observe(index - base, relevant)
        parts.append(arms.frozen_order(int(remaining[topic])) + base)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
