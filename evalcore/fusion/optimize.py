"""Weights of `wsum`/`wmnz` (or RRF's k) chosen by grid search, as ranx's `optimize_fusion`, with
k-fold cross-validation over queries for an honest, held-out score.

The grid is ranx's: every weight vector whose weights are multiples of `step` in [0, 1] summing to 1
(ranx tests the float sum `== 1.0` and so drops some, such as (0.1, 0.2, 0.7); here the weights are
counted in integer multiples of `step`, so none is dropped), or k in `range(min_k, max_k + 1, k_step)`
for RRF (ranx's 10..100 by 10). As ranx, the last of equally good candidates (in grid order) wins.

The queries evaluated (those of both the fused runs and the qrels) are shuffled with `seed` and dealt
into `folds` folds. For each fold the candidate best on the other folds' queries is scored on the
fold's own queries. A set of queries scores the mean of the measure's per-query values, which is the
measure's aggregate for every measure but the geometric ones (gm_*), which are refused here.
Each candidate is fused once over all queries: fusion treats every query apart, so this equals
fusing the training queries alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evalcore.fusion.combine import combine, fused_run, prepare, stack
from evalcore.fusion.params import WEIGHTED_METHODS, FusionParams
from evalcore.jsonable import json_number
from evalcore.retrieval import Qrels, Run, evaluate, parse_measure


@dataclass(frozen=True)
class FoldResult:
    """One fold: the candidate chosen on the other folds, its score there and on this fold."""

    fold: int
    params: FusionParams
    train_score: float
    test_score: float
    test_queries: int


@dataclass(frozen=True)
class Optimization:
    """The candidate best on all queries (`params`, `score`), and the cross-validated folds."""

    params: FusionParams
    score: float
    folds: tuple[FoldResult, ...]
    trials: int
    measure: str

    @property
    def mean_test_score(self) -> float:
        """The mean held-out score over the folds."""
        return float(np.mean([f.test_score for f in self.folds]))


def weight_grid(n_runs: int, step: float) -> list[tuple[float, ...]]:
    """Weight vectors on the simplex with weights in multiples of `step`, in ranx's product order."""
    units = round(1.0 / step)
    if units < 1 or not np.isclose(units * step, 1.0):
        raise ValueError(f"step must divide 1 (0.1, 0.25, ...), not {step}")
    return [
        tuple(round(c * step, 10) for c in counts)
        for counts in itertools.product(range(units + 1), repeat=n_runs)
        if sum(counts) == units
    ]


def candidates(
    params: FusionParams, n_runs: int, *, step: float, min_k: int, max_k: int, k_step: int
) -> list[FusionParams]:
    if params.method in WEIGHTED_METHODS:
        return [replace(params, weights=w) for w in weight_grid(n_runs, step)]
    if params.method == "rrf":
        return [replace(params, k=float(k)) for k in range(min_k, max_k + 1, k_step)]
    raise ValueError(f"only wsum, wmnz (weights) and rrf (k) can be optimised, not {params.method}")


def fold_of(qids: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each query's fold (0..folds-1): sorted queries shuffled with `seed`, dealt in turn."""
    if folds < 2 or folds > len(qids):
        raise ValueError(f"folds must be between 2 and the {len(qids)} evaluated queries, not {folds}")
    perm = np.random.default_rng(seed).permutation(len(qids))
    fold = np.empty(len(qids), dtype=np.int64)
    fold[perm] = np.arange(len(qids)) % folds
    return fold


def _per_query_scores(
    runs: Sequence[Run], qrels: Qrels, trials: list[FusionParams], measure: str, rel_level: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    stacked = stack(runs)
    prep = None
    for params in trials:
        if prep is None or params.method == "rrf":
            prep = prepare(stacked, params)  # rrf's values depend on k; weights do not touch them
        result = evaluate(qrels, fused_run(prep, combine(prep, params)), [measure], rel_level=rel_level)
        key = result.specs[0].key
        yield result.qids, result.values[key]


def optimize_fusion(
    runs: Sequence[Run],
    qrels: Qrels,
    params: FusionParams,
    *,
    measure: str,
    folds: int = 5,
    seed: int = 0,
    step: float = 0.1,
    min_k: int = 10,
    max_k: int = 100,
    k_step: int = 10,
    rel_level: int = 1,
) -> Optimization:
    """Grid-search `params`' weights (wsum, wmnz) or k (rrf) to maximise `measure` on `qrels`."""
    specs = parse_measure(measure)
    if len(specs) != 1 or specs[0].measure.text or specs[0].key.startswith("gm_"):
        raise ValueError(f"{measure}: give one arithmetic-mean measure, such as map or ndcg_cut_10")
    trials = candidates(params, len(runs), step=step, min_k=min_k, max_k=max_k, k_step=k_step)
    qids: np.ndarray | None = None
    table = []
    for trial_qids, values in _per_query_scores(runs, qrels, trials, measure, rel_level):
        qids = trial_qids if qids is None else qids
        if not np.array_equal(qids, trial_qids):
            raise AssertionError("every candidate evaluates the same queries")  # fusion keeps them all
        table.append(values)
    assert qids is not None
    scores = np.vstack(table)  # trials x queries
    fold = fold_of(qids, folds, seed)
    results = []
    for f in range(folds):
        train, test = fold != f, fold == f
        train_means = scores[:, train].mean(axis=1)
        best = _last_best(train_means)
        results.append(
            FoldResult(
                f, trials[best], float(train_means[best]), float(scores[best, test].mean()), int(test.sum())
            )
        )
    overall = scores.mean(axis=1)
    best = _last_best(overall)
    return Optimization(trials[best], float(overall[best]), tuple(results), len(trials), measure)


def _last_best(means: np.ndarray) -> int:
    """The last index of the maximum, as ranx's `if score >= best_score` keeps the last."""
    return int(len(means) - 1 - np.argmax(means[::-1]))


def chosen_text(params: FusionParams) -> str:
    """What a search chose, as `fuse_runs` prints it: `k=60` for rrf, else `weights=0.3,0.7`."""
    if params.method == "rrf":
        return f"k={params.k:g}"
    return "weights=" + ",".join(f"{w:g}" for w in params.weights or ())


def optimization_json(optimization: Optimization) -> dict[str, Any]:
    """The search as JSON (`fuse_runs --json`'s `optimization`, the fusion job's stored provenance):
    `{"measure", "trials", "score", "chosen", "weights", "k", "mean_test_score", "folds": [...]}`."""
    params = optimization.params
    return {
        "measure": optimization.measure,
        "trials": optimization.trials,
        "score": json_number(optimization.score),
        "chosen": chosen_text(params),
        "weights": list(params.weights) if params.weights is not None else None,
        "k": params.k if params.method == "rrf" else None,
        "mean_test_score": json_number(optimization.mean_test_score),
        "folds": [
            {
                "fold": f.fold,
                "test_queries": f.test_queries,
                "train_score": json_number(f.train_score),
                "test_score": json_number(f.test_score),
                "chosen": chosen_text(f.params),
            }
            for f in optimization.folds
        ],
    }
