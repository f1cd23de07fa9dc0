"""`evalcore.coverage`: the unjudged pairs of a run's top k against a direct loop over trec_eval's ranking,
and their agreement with the registry's Judged@k."""

from __future__ import annotations

import numpy as np
import pytest

from evalcore.coverage import (
    COVERAGE_MEASURES,
    JUDGED_WARNING,
    coverage_warning,
    unjudged_pairs,
    unjudged_share,
)
from evalcore.retrieval import evaluate
from evalcore.retrieval.data import Qrels, Run


def collection(seed: int) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """A run with score ties over 6 queries, and qrels judging about half its documents (and some others)."""
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(6):
        qid = f"q{q}"
        run[qid] = {f"d{q}-{d}": float(np.round(rng.normal(), 1)) for d in range(int(rng.integers(3, 25)))}
        judged = [doc for doc in run[qid] if rng.random() < 0.5] + [f"other{q}"]
        if q != 5:  # q5 has no judgment at all
            qrels[qid] = {doc: int(rng.integers(0, 3)) for doc in judged}
    return run, qrels


def top_by_loop(run: dict[str, dict[str, float]], depth: int) -> list[tuple[str, str]]:
    """trec_eval's order written out: score descending, then docno descending."""
    pairs = []
    for qid in sorted(run):
        ranked = sorted(run[qid].items(), key=lambda item: (item[1], item[0]), reverse=True)
        pairs += [(qid, doc) for doc, _ in ranked[:depth]]
    return pairs


class TestUnjudgedPairs:
    @pytest.mark.parametrize("seed", [0, 1, 2, 3])
    @pytest.mark.parametrize("depth", [1, 5, 10, 100])
    def test_it_lists_the_unjudged_top_k_pairs_as_a_direct_loop_does(self, seed: int, depth: int) -> None:
        run, qrels = collection(seed)
        want = [(qid, doc) for qid, doc in top_by_loop(run, depth) if doc not in qrels.get(qid, {})]
        got = unjudged_pairs(Run.from_dict(run), Qrels.from_dict(qrels), depth=depth)
        assert sorted(got) == sorted(want) and len(got) == len(set(got))

    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_it_agrees_with_the_registrys_judged_at_k(self, seed: int) -> None:
        """Per query judged by the qrels: |unjudged in top k| = (1 - Judged@k) * min(k, n)."""
        run, qrels = collection(seed)
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), list(COVERAGE_MEASURES))
        for key, k in (("Judged@10", 10), ("Judged@100", 100)):
            qids, values = result.per_query_array(key)
            missing = unjudged_pairs(Run.from_dict(run), Qrels.from_dict(qrels), depth=k)
            for qid, value in zip(qids, values, strict=True):
                count = sum(1 for q, _ in missing if q == str(qid))
                assert count == pytest.approx((1 - value) * min(k, len(run[str(qid)])))

    def test_it_counts_a_negative_grade_as_judged_and_an_empty_run_as_nothing(self) -> None:
        run = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}})
        assert unjudged_pairs(run, Qrels.from_dict({"q1": {"a": -1}})) == [("q1", "b")]
        assert unjudged_pairs(run, Qrels.from_dict({})) == [("q1", "a"), ("q1", "b")]


class TestWarning:
    def test_it_warns_strictly_under_the_threshold_and_never_on_unknown(self) -> None:
        assert coverage_warning(JUDGED_WARNING - 1e-9) and not coverage_warning(JUDGED_WARNING)
        assert not coverage_warning(None) and unjudged_share(None) is None
        assert unjudged_share(0.9) == pytest.approx(0.1)
