"""Aligning several runs on the same queries, and comparing them pair by pair."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.comparison import align_results, compare_scores
from evalcore.errors import EvalCoreError
from evalcore.retrieval import Qrels, Run, evaluate

QRELS = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 1}, "q3": {"d": 1}})
RUN_A = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}})
RUN_B = Run.from_dict({"q1": {"a": 1.0, "b": 2.0}, "q9": {"x": 1.0}})


def results() -> dict:  # type: ignore[type-arg]
    return {name: evaluate(QRELS, run, ["map"], complete=True) for name, run in (("a", RUN_A), ("b", RUN_B))}


class TestAlignResults:
    def test_it_keeps_queries_some_run_retrieved_for_and_scores_the_others_zero(self) -> None:
        qids, scores = align_results(results(), ["map"], complete=False)
        assert list(qids) == ["q1", "q2"]
        assert list(scores["a"]["map"]) == [1.0, 1.0]
        assert list(scores["b"]["map"]) == [0.5, 0.0]

    def test_it_keeps_every_qrels_query_when_complete(self) -> None:
        qids, scores = align_results(results(), ["map"], complete=True)
        assert list(qids) == ["q1", "q2", "q3"]
        assert list(scores["b"]["map"]) == [0.5, 0.0, 0.0]


class TestCompareScores:
    def test_it_tests_every_pair_and_corrects_over_the_family(self) -> None:
        rng = np.random.default_rng(0)
        base = rng.uniform(size=50)
        scores = {"x": {"m": base + 0.2}, "y": {"m": base}, "z": {"m": base + rng.normal(0, 0.01, 50)}}
        comparison = compare_scores(scores, test="t", correction="bonferroni", n_resamples=500)
        assert [(p.a, p.b) for p in comparison.pairs] == [("x", "y"), ("x", "z"), ("y", "z")]
        assert all(p.p_adjusted == pytest.approx(min(1.0, 3 * p.p_value)) for p in comparison.pairs)
        assert comparison.pairs[0].diff == pytest.approx(0.2)
        assert comparison.pairs[0].significant

    def test_it_refuses_misaligned_or_single_runs(self) -> None:
        with pytest.raises(EvalCoreError, match="at least two runs"):
            compare_scores({"x": {"m": np.ones(3)}})
        with pytest.raises(EvalCoreError, match="not aligned"):
            compare_scores({"x": {"m": np.ones(3)}, "y": {"m": np.ones(4)}})

    def test_it_refuses_a_measure_without_a_value_for_some_queries(self) -> None:
        scored = {name: evaluate(QRELS, run, ["Accuracy", "map"], complete=True) for name, run in
                  (("a", RUN_A), ("b", RUN_B))}  # fmt: skip
        _, scores = align_results(scored, ["Accuracy", "map"], complete=True)
        assert np.isnan(scores["a"]["Accuracy"]).tolist() == [False, True, True]  # q2: nothing non-relevant
        with pytest.raises(EvalCoreError, match="^Accuracy: no value for some queries"):
            compare_scores(scores)
