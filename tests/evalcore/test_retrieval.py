"""Retrieval measures: every measure trec_eval knows matches pytrec_eval-terrier (trec_eval 9.0.8) per
query to 1e-9 on random runs with ties; the others are checked against the seeds' worked examples and
by hand."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score, top_k_accuracy_score

import evalcore.retrieval.classification
import evalcore.retrieval.evaluation
import evalcore.retrieval.measures
import evalcore.retrieval.names
from evalcore.retrieval import (
    DEFAULT_MEASURES,
    MEASURES,
    NoCommonQueriesError,
    Qrels,
    Run,
    UnknownMeasureError,
    evaluate,
    f1_weighted,
    format_trec,
    parse_measure,
    topk_accuracy,
)
from evalcore.retrieval.measures import MIN_GEO_MEAN

# Measures pytrec_eval computes, as pytrec_eval spells them. Cutoffs stay single-digit because
# pytrec_eval sorts them as strings; the bare names add trec_eval's default cutoffs.
PYTREC_MEASURES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "ndcg",
    "iprec_at_recall",
    "P",
    "recall",
    "success",
    "map_cut",
    "ndcg_cut",
    "P.1,2,3,4",
    "recall.1,2,3",
    "success.2,3",
    "map_cut.1,2,3",
    "ndcg_cut.1,2,3,4",
]

DOCNOS = ["d1", "d2", "d3", "d10", "D2", "a", "B", "9", "10", "zz", "d1x", "é", "doc-000000000001"]
QIDS = ["q1", "q2", "q3", "10", "9"]
SCORES = [0.0, 0.5, 1.0, 1.0, 2.25, -1.0, 1e-9, 3.5]


@st.composite
def judgments(draw: st.DrawFn, long_ids: bool) -> dict[str, dict[str, int]]:
    docs = DOCNOS if long_ids else DOCNOS[:-2]
    qids = draw(st.lists(st.sampled_from(QIDS), unique=True, max_size=4))
    # trec_eval 9.0.8 reads freed memory for a query whose judgments are all negative (a stale
    # num_rel_levels in form_res_rels), and pytrec_eval then crashes or hangs: keep one >= 0.
    judged = st.dictionaries(st.sampled_from(docs), st.integers(-1, 4), min_size=1, max_size=8)
    return {q: draw(judged.filter(lambda d: max(d.values()) >= 0)) for q in qids}


@st.composite
def rankings(draw: st.DrawFn, long_ids: bool) -> dict[str, dict[str, float]]:
    docs = DOCNOS if long_ids else DOCNOS[:-2]
    qids = draw(st.lists(st.sampled_from(QIDS), unique=True, max_size=4))
    score = st.one_of(st.sampled_from(SCORES), st.floats(-5, 5, allow_nan=False))
    return {q: draw(st.dictionaries(st.sampled_from(docs), score, min_size=1, max_size=9)) for q in qids}


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], int]:
    long_ids = draw(st.booleans())
    return draw(judgments(long_ids)), draw(rankings(long_ids)), draw(st.sampled_from([1, 2, 3]))


def pytrec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], level: int) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=level)
    return evaluator.evaluate(run)


def pytrec_aggregate(name: str, values: list[float]) -> float:
    return pytrec_eval.compute_aggregated_measure(name, values)


class TestAgainstPytrecEval:
    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases())
    def test_it_matches_every_trec_eval_measure_per_query(self, case) -> None:
        qrels, run, level = case
        reference = pytrec(qrels, run, level)
        if not reference:
            with pytest.raises(NoCommonQueriesError):
                evaluate(Qrels.from_dict(qrels), Run.from_dict(run), PYTREC_MEASURES, rel_level=level)
            return
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), PYTREC_MEASURES, rel_level=level)
        assert sorted(result.per_query) == sorted(reference)
        for qid, values in reference.items():
            ours = result.per_query[qid]
            for key, value in values.items():
                assert ours[key] == pytest.approx(value, abs=1e-9, nan_ok=True), (qid, key)
        for key in reference[next(iter(reference))]:
            expected = pytrec_aggregate(key, [v[key] for v in reference.values()])
            assert result.aggregate[key] == pytest.approx(expected, abs=1e-9), key

    @settings(max_examples=100, deadline=None)
    @given(cases())
    def test_it_averages_over_every_qrels_query_in_complete_mode(self, case) -> None:
        qrels, run, level = case
        reference = pytrec(qrels, run, level)
        if not reference:
            return
        result = evaluate(
            Qrels.from_dict(qrels), Run.from_dict(run), PYTREC_MEASURES, rel_level=level, complete=True
        )
        n_qrels = len(qrels)
        for key in reference[next(iter(reference))]:
            values = [v[key] for v in reference.values()]
            if key.startswith("num_"):
                expected = sum(values)
            elif key == "gm_map":
                missing = n_qrels - len(values)
                expected = math.exp((sum(values) + missing * math.log(MIN_GEO_MEAN)) / n_qrels)
            else:
                expected = sum(values) / n_qrels
            assert result.aggregate[key] == pytest.approx(expected, abs=1e-9), key
            qids, array = result.per_query_array(key)
            assert len(qids) == n_qrels
            if not key.startswith(("num_", "gm_")):
                assert array.mean() == pytest.approx(result.aggregate[key], abs=1e-9)

    def test_it_covers_every_measure_pytrec_eval_supports(self) -> None:
        covered = {parse_measure(name)[0].measure.name for name in PYTREC_MEASURES}
        assert covered == {m.name for m in MEASURES.values() if m.trec_eval}
        assert all(
            m.name.split("_cut")[0] in pytrec_eval.supported_measures
            for m in MEASURES.values()
            if m.trec_eval
        )

    def test_it_breaks_ties_by_docno_descending_bytewise(self) -> None:
        qrels = {"q": {"B": 1, "a": 0, "10": 0, "9": 1}}
        run = {"q": {"B": 1.0, "a": 1.0, "10": 1.0, "9": 1.0}}
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["recip_rank", "P_1", "P_2", "P_3"])
        assert result.aggregate == {"recip_rank": 0.5, "P_1": 0.0, "P_2": 0.5, "P_3": pytest.approx(2 / 3)}

    def test_it_evaluates_a_deep_ranking_without_a_depth_limit(self) -> None:
        qrels = {"q": {f"d{i}": 1 for i in range(0, 3000, 7)}}
        run = {"q": {f"d{i}": -float(i) for i in range(3000)}}
        reference = pytrec(qrels, run, 1)["q"]
        ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["num_ret", "map", "P_1000"]).per_query[
            "q"
        ]
        assert ours["num_ret"] == reference["num_ret"] == 3000
        assert ours["map"] == pytest.approx(reference["map"], abs=1e-12)

    @pytest.mark.parametrize("prefix", ["d", "clueweb09-en0000-"])
    def test_it_sorts_an_unsorted_run_like_trec_eval(self, prefix: str) -> None:
        rng = np.random.default_rng(7)
        docs = [f"{prefix}{i}" for i in range(300)]
        qrels = {
            f"q{q}": {d: int(rng.integers(-1, 4)) for d in rng.choice(docs, 40, replace=False)}
            for q in range(5)
        }
        run = {
            f"q{q}": {d: float(rng.integers(0, 20)) for d in rng.permutation(docs)[:200]} for q in range(5)
        }
        # Interleave the queries' rows so the fast path (rows grouped by query) is off.
        rows = [(q, d, s) for q, ranking in run.items() for d, s in ranking.items()]
        order = rng.permutation(len(rows))
        shuffled = Run.from_codes(
            sorted(run),
            [sorted(run).index(rows[i][0]) for i in order],
            [rows[i][1] for i in order],
            [rows[i][2] for i in order],
        )
        assert shuffled.layout.perm is not None
        reference = pytrec(qrels, run, 1)
        result = evaluate(Qrels.from_dict(qrels), shuffled, PYTREC_MEASURES)
        for qid, values in reference.items():
            for key, value in values.items():
                assert result.per_query[qid][key] == pytest.approx(value, abs=1e-9)

    def test_it_matches_judged_ids_longer_than_any_retrieved_one(self) -> None:
        qrels = {"q": {"a": 1, "b": 2, "clueweb09-en0000-00-00001": 1, "c": 0}}
        run = {"q": {"b": 1.0, "a": 1.0, "x": 1.0, "c": 0.5}}
        reference = pytrec(qrels, run, 1)["q"]
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), PYTREC_MEASURES).per_query["q"]
        for key, value in reference.items():
            assert result[key] == pytest.approx(value, abs=1e-9), key

    def test_it_scores_a_query_judged_only_as_unjudged_as_having_no_relevant_document(self) -> None:
        # pytrec_eval cannot be the reference here (see `judgments`).
        qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": -1, "c": -2}})
        run = Run.from_dict({"q1": {"a": 1.0}, "q2": {"b": 2.0, "x": 1.0}})
        result = evaluate(
            qrels, run, ["num_rel", "map", "ndcg", "bpref", "P@1", "Judged@2", "iprec_at_recall_0.00"]
        )
        assert result.per_query["q2"] == {
            "num_rel": 0.0,
            "map": 0.0,
            "ndcg": 0.0,
            "bpref": 0.0,
            "P@1": 0.0,
            "Judged@2": 0.5,
            "iprec_at_recall_0.00": 0.0,
        }

    def test_it_ties_scores_that_are_equal_in_single_precision(self) -> None:
        # trec_eval stores scores as C floats: 1.0 and 1.00000001 tie, and the tie goes to "b".
        qrels = {"q": {"a": 1, "b": 0}}
        run = {"q": {"a": 1.00000001, "b": 1.0}}
        assert pytrec(qrels, run, 1)["q"]["recip_rank"] == 0.5
        assert (
            evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["recip_rank"]).aggregate["recip_rank"]
            == 0.5
        )


class TestSeedExamples:
    """The seeds' worked examples, under the variant names that reproduce their printed numbers."""

    @staticmethod
    def ranked(lists: dict[str, list[str]]) -> Run:
        return Run.from_dict(
            {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in lists.items()}
        )

    def test_it_reproduces_seed_001_mrr(self) -> None:
        run = self.ranked({"q1": ["d1", "d2", "d3"], "q2": ["d2", "d3", "d1"]})
        qrels = Qrels.from_dict({"q1": {"d3": 1}, "q2": {"d2": 1}})
        assert round(evaluate(qrels, run, ["RR"]).aggregate["RR"], 4) == 0.6667

    def test_it_reproduces_seed_001_ndcg_with_exponential_gain(self) -> None:
        run = self.ranked({"q": ["d1", "d2", "d3", "d4", "d5"]})
        qrels = Qrels.from_dict({"q": {"d1": 3, "d2": 2, "d3": 3, "d4": 0, "d5": 1}})
        result = evaluate(qrels, run, ["nDCG(gain=exp)@5", "ndcg_exp_cut_5", "nDCG@5"]).aggregate
        assert round(result["nDCG(gain=exp)@5"], 4) == 0.9575
        assert result["ndcg_exp_cut_5"] == result["nDCG(gain=exp)@5"]
        assert round(result["nDCG@5"], 4) == 0.9724  # trec_eval's linear gain differs

    def test_it_reproduces_seed_000(self) -> None:
        truth = [[11, 1, 7, 17, 21], [4, 16, 1], [26, 10, 22, 8]]
        results = [
            [11, 1, 17, 7, 21, 8, 0, 28, 9, 20],
            [16, 1, 6, 18, 3, 4, 25, 19, 8, 14],
            [24, 10, 26, 2, 8, 28, 4, 23, 13, 21],
        ]
        run = self.ranked({f"q{i}": [str(d) for d in r] for i, r in enumerate(results)})
        qrels = Qrels.from_dict({f"q{i}": {str(d): 1 for d in t} for i, t in enumerate(truth)})
        expected = {
            1: (0.666667, 0.666667, 0.666667, 0.666667, 0.666667),
            5: (0.805556, 0.666667, 0.833333, 0.862963, 0.785958),
            10: (0.916667, 0.366667, 0.833333, 0.807407, 0.841678),
        }
        for k, values in expected.items():
            names = [f"R(cap)@{k}", f"P@{k}", f"RR@{k}", f"AP(ret)@{k}", f"nDCG@{k}"]
            got = evaluate(qrels, run, names).aggregate
            assert [round(got[n], 6) for n in names] == list(values), k
        assert evaluate(qrels, run, ["recall_capped_5"]).aggregate["recall_capped_5"] == pytest.approx(
            0.805556, abs=1e-6
        )

    @pytest.mark.parametrize(
        ("relevance", "predictions", "ndcg", "rr", "ap"),
        [
            ([2, 2, 1, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.1], 1.0, 1.0, 0.75),
            ([2, 2, 1, 1, 0], [0.1, 0.2, 0.3, 0.4, 0.9], 1.0, 0.25, 0.2917),
            ([2, 2, 1, 1, 0], [0.7, 0.3, 0.9, 0.1, 0.5], 1.0, 0.5, 0.5),
            ([2, 2, 1, 1, 0], [0.1, 0.2, 0.3, 0.9, 0.8], 1.0, 0.25, 0.4167),
            ([2, 1, 0, 0, 1], [0.9, 0.8, 0.3, 0.2, 0.7], 0.879, 1.0, 1.0),
            ([0, 0, 1, 2, 1], [0.2, 0.3, 0.9, 0.8, 0.7], 0.121, 0.5, 1.0),
            ([1, 0, 2, 1, 0], [0.6, 0.8, 0.4, 0.7, 0.5], 0.6052, 0.2, 0.3889),
        ],
    )
    def test_it_reproduces_seed_003_scenarios(self, relevance, predictions, ndcg, rr, ap) -> None:
        docs = [f"d{i}" for i in range(len(relevance))]
        qrels = Qrels.from_dict({"q": dict(zip(docs, relevance, strict=True))})
        by_prediction = Run.from_dict({"q": dict(zip(docs, predictions, strict=True))})
        # Seed 003 scores nDCG on the relevance list in its given order, whatever the predictions.
        in_given_order = self.ranked({"q": docs})
        assert (
            round(evaluate(qrels, in_given_order, ["nDCG(gain=exp)@3"]).aggregate["nDCG(gain=exp)@3"], 4)
            == ndcg
        )
        got = evaluate(qrels, by_prediction, ["RR(rel=2)", "recip_rank_min_rel_2", "AP@3"]).aggregate
        assert round(got["RR(rel=2)"], 4) == rr == round(got["recip_rank_min_rel_2"], 4)
        assert round(got["AP@3"], 4) == ap

    def test_it_reproduces_seed_003_demos(self) -> None:
        docs = ["d0", "d1", "d2", "d3", "d4"]
        ndcg_qrels = Qrels.from_dict({"q": dict(zip(docs, [2, 1, 0, 1, 2], strict=True))})
        assert (
            round(
                evaluate(ndcg_qrels, self.ranked({"q": docs}), ["nDCG(gain=exp)@3"]).aggregate[
                    "nDCG(gain=exp)@3"
                ],
                4,
            )
            == 0.6733
        )
        mrr = evaluate(
            Qrels.from_dict({"q": dict(zip(docs, [0, 2, 1, 0, 1], strict=True))}),
            Run.from_dict({"q": dict(zip(docs, [0.9, 0.3, 0.7, 0.1, 0.5], strict=True))}),
            ["RR(rel=2)"],
        )
        assert mrr.aggregate["RR(rel=2)"] == 0.25
        ap = evaluate(
            Qrels.from_dict({"q": dict(zip(docs, [1, 0, 2, 1, 0], strict=True))}),
            Run.from_dict({"q": dict(zip(docs, [0.8, 0.2, 0.6, 0.9, 0.1], strict=True))}),
            ["AP@3"],
        )
        assert ap.aggregate["AP@3"] == 1.0

    def test_it_matches_scikit_learn_on_seed_002_top_k_accuracy(self) -> None:
        logits = np.array([[0.5, 0.3, 0.1, 0.1], [0.1, 0.5, 0.3, 0.1], [0.2, 0.2, 0.4, 0.2]])
        labels = np.array([0, 0, 2])
        assert topk_accuracy(logits, labels, 1) == pytest.approx(2 / 3)
        assert topk_accuracy(logits, labels, 2) == pytest.approx(2 / 3)
        rng = np.random.default_rng(3)
        for _ in range(20):
            scores = rng.integers(0, 4, size=(50, 6)).astype(float)  # many ties
            y = rng.integers(0, 6, size=50)
            for k in (1, 2, 3, 5):
                expected = top_k_accuracy_score(y, scores, k=k, labels=np.arange(6))
                assert topk_accuracy(scores, y, k) == pytest.approx(expected, abs=1e-12)

    def test_it_takes_torch_tensors(self) -> None:
        torch = pytest.importorskip("torch")
        logits = torch.tensor([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]])
        assert topk_accuracy(logits, torch.tensor([1, 2]), 1) == 0.5

    def test_it_matches_scikit_learn_weighted_f1(self) -> None:
        rng = np.random.default_rng(4)
        for _ in range(30):
            y_true = rng.integers(0, 5, size=40)
            y_pred = np.where(rng.random(40) < 0.6, y_true, rng.integers(0, 7, size=40))
            expected = f1_score(y_true, y_pred, average="weighted", zero_division=0)
            assert f1_weighted(y_true, y_pred) == pytest.approx(expected, abs=1e-12)
        assert f1_weighted(["a", "b", "b"], ["a", "b", "a"]) == pytest.approx(
            f1_score(["a", "b", "b"], ["a", "b", "a"], average="weighted")
        )


class TestMeasureNames:
    @pytest.mark.parametrize(
        ("name", "base", "param", "rel"),
        [
            ("P_10", "P", 10, None),
            ("P@10", "P", 10, None),
            ("P.10", "P", 10, None),
            ("nDCG@10", "ndcg_cut", 10, None),
            ("ndcg_cut_10", "ndcg_cut", 10, None),
            ("nDCG", "ndcg", None, None),
            ("AP", "map", None, None),
            ("AP@100", "map_cut", 100, None),
            ("AP(rel=2)@100", "map_cut", 100, 2),
            ("map_cut_5", "map_cut", 5, None),
            ("R@5", "recall", 5, None),
            ("recall_5", "recall", 5, None),
            ("RR", "recip_rank", None, None),
            ("MRR", "recip_rank", None, None),
            ("RR@10", "recip_rank_cut", 10, None),
            ("RR(rel=2)", "recip_rank", None, 2),
            ("recip_rank_min_rel_2", "recip_rank", None, 2),
            ("P_10_min_rel_3", "P", 10, 3),
            ("Success@1", "success", 1, None),
            ("Judged@10", "judged", 10, None),
            ("judged_10", "judged", 10, None),
            ("nDCG(gain=exp)@10", "ndcg_exp_cut", 10, None),
            ("ndcg_exp", "ndcg_exp", None, None),
            ("R(cap)@10", "recall_capped", 10, None),
            ("AP(ret)@10", "ap_retrieved", 10, None),
            ("iprec_at_recall_0.50", "iprec_at_recall", 0.5, None),
            ("IPrec@0.5", "iprec_at_recall", 0.5, None),
            ("bpref", "bpref", None, None),
            ("Rprec", "Rprec", None, None),
            ("num_rel_ret", "num_rel_ret", None, None),
        ],
    )
    def test_it_parses_trec_eval_and_ir_measures_names(self, name, base, param, rel) -> None:
        (spec,) = parse_measure(name)
        assert (spec.measure.name, spec.param, spec.rel_level, spec.key) == (base, param, rel, name)

    def test_it_expands_bare_names_to_trec_eval_default_cutoffs(self) -> None:
        assert [s.key for s in parse_measure("P")] == [
            f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
        ]
        assert [s.key for s in parse_measure("success")] == ["success_1", "success_5", "success_10"]
        assert parse_measure("iprec_at_recall")[0].key == "iprec_at_recall_0.00"
        assert [s.key for s in parse_measure("P.5,10")] == ["P_5", "P_10"]

    @pytest.mark.parametrize(
        "name", ["nonsense", "P_0", "P@x", "nDCG(rel=2)", "map_7", "iprec_at_recall_2", "RR(rel=x)"]
    )
    def test_it_rejects_unknown_names(self, name) -> None:
        with pytest.raises(UnknownMeasureError):
            parse_measure(name)

    def test_it_keys_the_output_by_the_names_given(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1}})
        run = Run.from_dict({"q": {"a": 1.0, "b": 0.5}})
        result = evaluate(qrels, run, ["P@1", "P_1", "nDCG@10", "P"])
        assert list(result.aggregate)[:3] == ["P@1", "P_1", "nDCG@10"]
        assert result.aggregate["P@1"] == result.aggregate["P_1"] == 1.0
        assert "P_1000" in result.aggregate

    def test_it_defaults_to_trec_eval_standard_set(self) -> None:
        result = evaluate(Qrels.from_dict({"q": {"a": 1}}), Run.from_dict({"q": {"a": 1.0}}))
        keys = list(result.aggregate)
        assert keys[:9] == [
            "num_q",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
        ]
        assert len(keys) == 9 + 11 + 9
        assert DEFAULT_MEASURES[0] == "num_q"


class TestRegistry:
    @pytest.mark.parametrize("name", sorted(MEASURES))
    def test_it_documents_every_measure_with_a_working_example(self, name) -> None:
        measure = MEASURES[name]
        assert ">>> example(" in measure.doc
        test = doctest.DocTestParser().get_doctest(
            measure.doc, vars(evalcore.retrieval.measures), name, None, 0
        )
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.failures == 0

    @pytest.mark.parametrize("name", sorted(MEASURES))
    def test_it_computes_every_measure_within_its_range(self, name) -> None:
        measure = MEASURES[name]
        qrels = Qrels.from_dict({"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"x": 1}, "q3": {"y": 0}})
        run = Run.from_dict(
            {"q1": {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.1}, "q2": {"z": 2.0}, "q3": {"y": 1.0}}
        )
        for spec in parse_measure(name):
            values = evaluate(qrels, run, [spec.key]).values[spec.key]
            assert values.shape == (3,)
            if measure.aggregate == "mean":
                assert np.all((values >= 0) & (values <= 1)), spec.key
            assert measure.higher_is_better

    @pytest.mark.parametrize(
        "module",
        [evalcore.retrieval.names, evalcore.retrieval.evaluation, evalcore.retrieval.classification],
    )
    def test_it_runs_the_module_doctests(self, module) -> None:
        assert doctest.testmod(module).failed == 0


class TestEvaluate:
    def test_it_ignores_run_queries_without_judgments(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1}})
        run = Run.from_dict({"q1": {"a": 1.0}, "q2": {"a": 1.0}})
        result = evaluate(qrels, run, ["map", "num_q"])
        assert list(result.per_query) == ["q1"]
        assert result.aggregate == {"map": 1.0, "num_q": 1.0}

    def test_it_evaluates_a_query_with_no_relevant_document(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 0}})
        run = Run.from_dict({"q1": {"a": 1.0}, "q2": {"b": 1.0}})
        assert evaluate(qrels, run, ["map"]).aggregate["map"] == 0.5

    def test_it_raises_when_no_query_is_shared(self) -> None:
        with pytest.raises(NoCommonQueriesError):
            evaluate(Qrels.from_dict({"q1": {"a": 1}}), Run.from_dict({"q2": {"a": 1.0}}), ["map"])

    def test_it_applies_the_relevance_level_to_binary_measures_only(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1, "b": 2}})
        run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}})
        result = evaluate(qrels, run, ["P@1", "ndcg", "RR", "RR(rel=1)"], rel_level=2)
        assert result.aggregate["P@1"] == 0.0
        assert result.aggregate["RR"] == 0.5
        assert result.aggregate["RR(rel=1)"] == 1.0
        assert result.aggregate["ndcg"] == evaluate(qrels, run, ["ndcg"]).aggregate["ndcg"]

    def test_it_fills_missing_queries_for_paired_statistics(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}, "q0": {"c": 1}})
        run = Run.from_dict({"q1": {"a": 1.0}})
        result = evaluate(qrels, run, ["map", "gm_map"], complete=True)
        qids, values = result.per_query_array("map")
        assert list(qids) == ["q0", "q1", "q2"] and list(values) == [0.0, 1.0, 0.0]
        assert result.aggregate["map"] == pytest.approx(1 / 3)
        assert result.per_query_array("gm_map")[1][0] == pytest.approx(math.log(MIN_GEO_MEAN))
        assert list(evaluate(qrels, run, ["map"]).per_query_array("map")[0]) == ["q1"]

    def test_it_prints_trec_eval_text(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
        run = Run.from_dict({"q1": {"a": 1.0, "b": 2.0}, "q2": {"c": 1.0}})
        text = format_trec(evaluate(qrels, run, ["num_q", "num_ret", "map", "gm_map", "P_5"]), per_query=True)
        assert text.splitlines() == [
            "num_ret               \tq1\t2",
            "map                   \tq1\t0.5000",
            "P_5                   \tq1\t0.2000",
            "num_ret               \tq2\t1",
            "map                   \tq2\t1.0000",
            "P_5                   \tq2\t0.2000",
            "num_q                 \tall\t2",
            "num_ret               \tall\t3",
            "map                   \tall\t0.7500",
            "gm_map                \tall\t0.7071",
            "P_5                   \tall\t0.2000",
        ]

    def test_it_takes_a_single_measure_name(self) -> None:
        result = evaluate(Qrels.from_dict({"q": {"a": 1}}), Run.from_dict({"q": {"a": 1.0}}), "P@1")
        assert result.aggregate == {"P@1": 1.0}
        with pytest.raises(KeyError, match="was not evaluated"):
            result.per_query_array("map")

    def test_it_reuses_a_run_against_several_qrels(self) -> None:
        run = Run.from_dict({"q": {"a": 1.0, "b": 0.5}})
        first = evaluate(Qrels.from_dict({"q": {"a": 1}}), run, ["map"]).aggregate["map"]
        second = evaluate(Qrels.from_dict({"q": {"b": 1}}), run, ["map"]).aggregate["map"]
        assert (first, second) == (1.0, 0.5)

    def test_it_counts_judged_documents_including_unjudged_pool_entries(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 0, "b": -1}})
        run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
        assert evaluate(qrels, run, ["Judged@2", "Judged@4"]).aggregate == {"Judged@2": 1.0, "Judged@4": 0.5}
