"""Pooling: which (topic, document) pairs to judge, in which order, from a set of runs.

    candidates = candidates_from_runs(runs, depth=100)
    order = pool_order(candidates, PoolParams("bandit-mm-ns", budget=2000), judged=[(index, True), ...])
    steps = simulate_pooling(runs, qrels, PoolParams("mtf", budget=2000), step=200)

`candidates_from_runs` pools every run's top `depth` per topic in trec_eval's order; `pool_order` gives
the pending candidates in the order to judge them (adaptive strategies replay the judgments so far);
`simulate_pooling` replays a strategy with complete qrels as the oracle and reports, every `step`
judgments, the relevant documents found and Kendall's tau between the system rankings on the judgments
so far and on the full qrels. The strategies and their formulas are in `evalcore.pooling.order` and
`evalcore.pooling.adaptive`. Nothing here imports Django.
"""

from evalcore.pooling.candidates import PoolCandidates, candidates_from_runs
from evalcore.pooling.order import allot_budget, pool_order
from evalcore.pooling.params import ADAPTIVE_STRATEGIES, STRATEGIES, PoolParams
from evalcore.pooling.simulation import SimulationStep, judging_sequence, simulate_pooling

__all__ = [
    "ADAPTIVE_STRATEGIES",
    "STRATEGIES",
    "PoolCandidates",
    "PoolParams",
    "SimulationStep",
    "allot_budget",
    "candidates_from_runs",
    "judging_sequence",
    "pool_order",
    "simulate_pooling",
]
