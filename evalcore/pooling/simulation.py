"""Replay a pooling strategy with complete qrels as the oracle, before paying for judgments.

At every `step` judgments (and at the end) it reports how many judged documents are relevant, and
Kendall's tau-b (`evalcore.stats.kendall_tau`) between the ranking of the runs by `measure` on the
judgments so far and on the full qrels. Documents the qrels lack are judged non-relevant (grade 0),
as trec_eval reads unjudged documents. Runs are evaluated only at the steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyarrow._compute import SetLookupOptions, call_function

from evalcore.arrow import to_numpy
from evalcore.pooling.candidates import PoolCandidates, candidates_from_runs
from evalcore.pooling.order import allot_budget, pool_order, topic_arms
from evalcore.pooling.params import ADAPTIVE_STRATEGIES, PoolParams
from evalcore.retrieval import NoCommonQueriesError, Qrels, Run, evaluate
from evalcore.stats import kendall_tau

__all__ = ["SimulationStep", "candidate_grades", "judging_sequence", "simulate_pooling"]


@dataclass(frozen=True)
class SimulationStep:
    judged: int
    relevant_found: int
    kendall_tau: float | None  # the system ranking on the judgments so far vs on the full qrels


def candidate_grades(candidates: PoolCandidates, qrels: Qrels) -> np.ndarray:
    """The qrels grade of every candidate (0 where the qrels lack it)."""
    if not len(candidates) or not len(qrels):
        return np.zeros(len(candidates), dtype=np.int64)
    qids = np.array(candidates.qids, dtype=object)
    sep = pa.scalar(b"\t", pa.binary())
    wanted = call_function(
        "binary_join_element_wise",
        [pa.array(qids[candidates.query], pa.binary()), pa.array(candidates.docnos, pa.binary()), sep],
    )
    known = call_function(
        "binary_join_element_wise",
        [pa.array(qrels.qids[qrels.qid_codes], pa.binary()), qrels.docnos.cast(pa.binary()), sep],
    )
    found = call_function("index_in", [wanted], SetLookupOptions(value_set=known.combine_chunks()))
    position = to_numpy(found.fill_null(-1)).astype(np.int64)
    return np.where(position >= 0, qrels.rels[np.maximum(position, 0)], 0)


def judging_sequence(candidates: PoolCandidates, params: PoolParams, relevant: np.ndarray) -> np.ndarray:
    """Candidate indices in the order they would be judged when `relevant[i]` answers for candidate i.

    The same as judging, each time, the first of `pool_order(candidates, params, judged_so_far)`;
    adaptive strategies run once per topic with the oracle, and the topics are then taken in turn.
    """
    if params.strategy not in ADAPTIVE_STRATEGIES:
        return pool_order(candidates, params)
    quota = allot_budget(params.budget, np.diff(candidates.topic_bounds))
    parts, turns = [], []
    for topic in np.flatnonzero(quota).tolist():
        arms = topic_arms(candidates, params, topic)
        base = int(candidates.topic_bounds[topic])
        sequence = np.empty(int(quota[topic]), dtype=np.int64)
        for k in range(len(sequence)):
            arm = arms.choose()
            doc = arms.next_document(arm)
            arms.observe(doc, bool(relevant[base + doc]), arm)
            sequence[k] = base + doc
        parts.append(sequence)
        turns.append(np.arange(len(sequence)))
    if not parts:
        return np.zeros(0, dtype=np.int64)
    order = np.concatenate(parts)
    query = candidates.query[order]
    return order[np.lexsort((query, np.concatenate(turns)))]


def simulate_pooling(
    runs: Sequence[Run],
    qrels: Qrels,
    params: PoolParams,
    *,
    step: int,
    measure: str = "map",
    rel_level: int = 1,
    names: Sequence[str] | None = None,
) -> list[SimulationStep]:
    """Replay `params.strategy` on the runs' pool over the qrels' topics, a step every `step` judgments.

    >>> qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 1}})
    >>> runs = [Run.from_dict({"q1": {"a": 2.0, "b": 1.0}}), Run.from_dict({"q1": {"b": 2.0, "c": 1.0}})]
    >>> [(s.judged, s.relevant_found) for s in simulate_pooling(runs, qrels, PoolParams("depth"), step=2)]
    [(2, 1), (3, 2)]
    """
    if step < 1:
        raise ValueError("step must be at least 1")
    candidates = candidates_from_runs(runs, depth=params.depth, names=names, qids=list(qrels.qids))
    grades = candidate_grades(candidates, qrels)
    relevant = grades >= rel_level
    sequence = judging_sequence(candidates, params, relevant)
    found = np.cumsum(relevant[sequence])
    truth = _scores(runs, qrels, measure, rel_level)
    marks = list(range(step, len(sequence), step)) + ([len(sequence)] if len(sequence) else [])
    steps = []
    for k in marks:
        chosen = sequence[:k]
        partial = Qrels.from_codes(
            np.array(candidates.qids, dtype=object),
            candidates.query[chosen],
            [candidates.docnos[i] for i in chosen.tolist()],
            grades[chosen],
        )
        tau = kendall_tau(truth, _scores(runs, partial, measure, rel_level))
        steps.append(SimulationStep(k, int(found[k - 1]), tau))
    return steps


def _scores(runs: Sequence[Run], qrels: Qrels, measure: str, rel_level: int) -> np.ndarray:
    values = []
    for run in runs:
        try:
            result = evaluate(qrels, run, [measure], rel_level=rel_level)
        except NoCommonQueriesError:
            values.append(0.0)
            continue
        values.append(float(next(iter(result.aggregate.values()))))
    return np.array(values)
