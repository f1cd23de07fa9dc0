"""Comparing several systems on the same queries: means with bootstrap CIs, and paired tests per pair.

Every pair of runs is tested on every measure, and the p-values of the whole family (pairs × measures)
are corrected together, so adding a measure makes each claim more conservative, as it should.

Two sets of queries are involved, and each figure says which it averages over. A run's mean and its
interval (`measure_summary`) follow trec_eval's rule, as `eval_retrieval` and the web's evaluation do:
the qrels queries the run answered, or with `complete` (-c) every qrels query, a missing one as 0; the
interval is `DEFAULT_BOOTSTRAP`'s. The paired tests need every run on the same queries
(`align_results`): those any run answered (or every qrels query with -c), a run's missing ones as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import get_args

import numpy as np

# The parameters are declared in a light module (the file-reading commands import it alone); here too.
from evalcore.comparison_params import CORRECTIONS as CORRECTIONS
from evalcore.comparison_params import DEFAULT_MEASURES as DEFAULT_MEASURES
from evalcore.comparison_params import TESTS as TESTS
from evalcore.comparison_params import ComparisonParams as ComparisonParams
from evalcore.comparison_params import ComparisonParamsError as ComparisonParamsError
from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from evalcore.retrieval import RetrievalResult
from evalcore.stats import (
    DEFAULT_BOOTSTRAP,
    BootstrapOptions,
    CorrectionMethod,
    PairedTestName,
    adjust_p_values,
    paired_test,
)

__all__ = [
    "CORRECTIONS",
    "DEFAULT_MEASURES",
    "TESTS",
    "ComparisonParams",
    "ComparisonParamsError",
]  # and below

# The parameters' choices are the statistics' own.
assert set(TESTS) == set(get_args(PairedTestName)) and set(CORRECTIONS) == set(get_args(CorrectionMethod))


@dataclass(frozen=True)
class RunSummary:
    """A run's mean of one measure, its interval (NaN without one) and how many queries it averages."""

    mean: float
    ci_low: float
    ci_high: float
    n_queries: int = 0


def mean_rule(*, complete: bool) -> str:
    """In words, the queries a run's mean averages over (trec_eval's rule)."""
    if complete:
        return "every qrels query, those the run did not answer as 0 (trec_eval -c)"
    return "the qrels queries the run answered (trec_eval's default)"


def paired_rule(*, complete: bool) -> str:
    """In words, the queries the paired tests and differences are computed on."""
    if complete:
        return "every qrels query, a run's missing ones as 0"
    return "the qrels queries any of the runs answered, a run's missing ones as 0"


def measure_summary(
    result: RetrievalResult, measure: str, *, bootstrap: BootstrapOptions = DEFAULT_BOOTSTRAP
) -> RunSummary:
    """The run's aggregate of `measure` as `evaluate` gives it (its `complete` decides the queries), with
    the percentile bootstrap interval of `bootstrap` for a mean over at least two finite values."""
    spec = next(s for s in result.specs if s.key == measure)
    _, values = result.per_query_array(measure)
    finite = values[np.isfinite(values)]
    low = high = float("nan")
    if spec.measure.aggregate == "mean" and finite.size >= 2:
        interval = bootstrap.interval(finite)
        low, high = interval.low, interval.high
    return RunSummary(float(result.aggregate[measure]), float(low), float(high), int(values.size))


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
    n_queries: int  # the paired tests' queries
    test: PairedTestName
    correction: CorrectionMethod
    alpha: float
    confidence: float
    means_over: str = ""  # the rule of the runs' means, in words
    pairs_over: str = ""  # the rule of the paired queries, in words

    def as_dict(self) -> dict[str, object]:
        """The JSON contract of `compare_runs --json` (NaN, an interval not drawn, as null)."""
        return {
            "means_over": self.means_over,
            "pairs_over": self.pairs_over,
            "n_queries_paired": self.n_queries,
            "runs": {
                name: {
                    measure: {key: json_number(value) if isinstance(value, float) else value
                              for key, value in asdict(summary).items()}
                    for measure, summary in measures.items()
                }
                for name, measures in self.runs.items()
            },
            "pairs": [asdict(pair) for pair in self.pairs],
        }  # fmt: skip


def compare_scores(
    scores: Mapping[str, Mapping[str, np.ndarray]],
    *,
    test: PairedTestName = ComparisonParams.test,
    correction: CorrectionMethod = ComparisonParams.correction,
    alpha: float = ComparisonParams.alpha,
    confidence: float = ComparisonParams.confidence,
    n_resamples: int = DEFAULT_BOOTSTRAP.n_resamples,
    seed: int = 0,
    runs: Mapping[str, Mapping[str, RunSummary]] | None = None,
    means_over: str = "",
    pairs_over: str = "",
) -> Comparison:
    """Compare runs given their per-query scores, aligned on the same queries.

    ``scores[run][measure]`` is a 1-D array with one value per query, in the same query order for
    every run. ``diff`` is ``mean(a) - mean(b)`` over those queries: positive means run ``a`` scored
    higher. ``runs``: each run's summaries as reported (`measure_summary`, on trec_eval's rule);
    without them, the means and intervals are over the aligned queries.
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
    undefined = [m for m in measures if not all(np.isfinite(np.asarray(scores[n][m], dtype=np.float64)).all()
                                                 for n in names)]  # fmt: skip
    if undefined:
        raise EvalCoreError(
            f"{', '.join(undefined)}: no value for some queries (Accuracy has none where no relevant or no"
            " non-relevant document is retrieved); the paired tests need one for every query of every run"
        )

    bootstrap = BootstrapOptions(n_resamples=n_resamples, confidence=confidence, seed=seed)
    summaries = {
        name: dict(runs[name]) if runs is not None else {
            m: _summary(np.asarray(scores[name][m], dtype=np.float64), bootstrap) for m in measures
        }
        for name in names
    }  # fmt: skip
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
    return Comparison(
        summaries, pairs, n_queries, test, correction, alpha, confidence, means_over, pairs_over
    )


def _summary(values: np.ndarray, bootstrap: BootstrapOptions) -> RunSummary:
    interval = bootstrap.interval(values)
    return RunSummary(float(values.mean()), float(interval.low), float(interval.high), int(values.size))


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
