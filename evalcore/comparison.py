"""Comparing several systems on the same queries: means with bootstrap CIs, and paired tests per pair.

Every pair of runs is tested on every measure, and the p-values of the whole family (pairs × measures)
are corrected together, so adding a measure makes each claim more conservative, as it should.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

from evalcore.errors import EvalCoreError
from evalcore.retrieval import RetrievalResult
from evalcore.stats import CorrectionMethod, PairedTestName, adjust_p_values, bootstrap_ci, paired_test


@dataclass(frozen=True)
class RunSummary:
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class PairComparison:
    a: str
    b: str
    measure: str
    diff: float
    p_value: float
    p_adjusted: float
    significant: bool


@dataclass(frozen=True)
class Comparison:
    runs: dict[str, dict[str, RunSummary]]
    pairs: list[PairComparison]
    n_queries: int
    test: PairedTestName
    correction: CorrectionMethod
    alpha: float
    confidence: float

    def as_dict(self) -> dict[str, object]:
        """The JSON contract of `compare_runs --json`."""
        return {
            "runs": {
                name: {measure: asdict(summary) for measure, summary in measures.items()}
                for name, measures in self.runs.items()
            },
            "pairs": [asdict(pair) for pair in self.pairs],
        }


def compare_scores(
    scores: Mapping[str, Mapping[str, np.ndarray]],
    *,
    test: PairedTestName = "t",
    correction: CorrectionMethod = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Compare runs given their per-query scores, aligned on the same queries.

    ``scores[run][measure]`` is a 1-D array with one value per query, in the same query order for
    every run. ``diff`` is ``mean(a) - mean(b)``: positive means run ``a`` scored higher.
    """
    names = list(scores)
    if len(names) < 2:
        raise EvalCoreError("comparing needs at least two runs")
    measures = list(scores[names[0]])
    lengths = {len(np.asarray(scores[name][m])) for name in names for m in measures}
    if len(lengths) != 1:
        raise EvalCoreError(f"per-query scores are not aligned: lengths {sorted(lengths)}")
    n_queries = lengths.pop()
    if n_queries == 0:
        raise EvalCoreError("no query is evaluated in every run")

    runs = {
        name: {
            m: _summary(np.asarray(scores[name][m], dtype=np.float64), confidence, n_resamples, seed)
            for m in measures
        }
        for name in names
    }
    raw: list[tuple[str, str, str, float, float]] = []
    for a, b in combinations(names, 2):
        for measure in measures:
            left = np.asarray(scores[a][measure], dtype=np.float64)
            right = np.asarray(scores[b][measure], dtype=np.float64)
            result = paired_test(left, right, test=test, seed=seed)
            raw.append((a, b, measure, float(left.mean() - right.mean()), float(result.p_value)))
    p_adjusted, significant = adjust_p_values(
        np.array([row[4] for row in raw]), method=correction, alpha=alpha
    )
    pairs = [
        PairComparison(a, b, measure, diff, p_value, float(adjusted), bool(sig))
        for (a, b, measure, diff, p_value), adjusted, sig in zip(raw, p_adjusted, significant, strict=True)
    ]
    return Comparison(runs, pairs, n_queries, test, correction, alpha, confidence)


def _summary(values: np.ndarray, confidence: float, n_resamples: int, seed: int) -> RunSummary:
    interval = bootstrap_ci(values, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return RunSummary(float(values.mean()), float(interval.low), float(interval.high))


def align_results(
    results: Mapping[str, RetrievalResult], measures: Sequence[str], *, complete: bool
) -> tuple[np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """Per-query scores of several runs on the same queries, ready for `compare_scores`.

    Every result must come from ``evaluate(..., complete=True)`` against the same qrels, so that each
    covers every qrels query (a query a run lacks scores 0). With ``complete`` every qrels query is
    kept, as ``trec_eval -c`` averages; otherwise the queries that at least one run retrieved for.
    """
    per_run = {name: {m: result.per_query_array(m) for m in measures} for name, result in results.items()}
    first = next(iter(per_run.values()))
    qids = first[measures[0]][0]
    for name, arrays in per_run.items():
        for measure, (run_qids, _) in arrays.items():
            if not np.array_equal(run_qids, qids):
                raise EvalCoreError(f"{name}: {measure} is not evaluated on the same qrels queries")
    keep = np.ones(len(qids), dtype=bool)
    if not complete:
        retrieved = np.unique(np.concatenate([result.qids for result in results.values()]))
        keep = np.isin(qids, retrieved)
    scores = {
        name: {m: values[keep] for m, (_, values) in arrays.items()} for name, arrays in per_run.items()
    }
    return qids[keep], scores
