"""Retrieval measures: every measure trec_eval knows matches pytrec_eval-terrier (trec_eval 9.0.8) per
query to 1e-9 on random runs with ties; the others are checked against the seeds' worked examples and
by hand."""

from __future__ import annotations

import doctest
import math
from dataclasses import replace

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
from evalcore.metrics import MetricSpec, metric_registry
from evalcore.retrieval import (
    MEASURES,
    OFFICIAL_MEASURES,
    NoCommonQueriesError,
    Prefs,
    Qrels,
    Run,
    UnknownMeasureError,
    canonical_measure,
    evaluate,
    evaluate_prefs,
    f1_weighted,
    format_trec,
    parse_measure,
    parse_measures,
    topk_accuracy,
)
from evalcore.retrieval.evaluation import evaluate_jg
from evalcore.retrieval.judgment_groups import QrelsJG
from evalcore.retrieval.layout import KeyedLayout
from evalcore.retrieval.measures import DEFAULT_RECALL_LEVELS, MIN_GEO_MEAN
from evalcore.retrieval.ranking import Gains

# Measures pytrec_eval computes, as pytrec_eval spells them: every measure of trec_eval's all_trec but
# runid and relstring (text, which pytrec_eval reports as 0). Cutoffs stay single-digit because
# pytrec_eval sorts them as strings; the bare names add trec_eval's default parameters.
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
    "iprec_at_recall",
    "P",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
]
# Other parameters. pytrec_eval (like trec_eval) takes one parameter list per measure, so these go to a
# second evaluator.
PYTREC_PARAMETERS = [
    "P.1,2,3,4",
    "recall.1,2,3",
    "success.2,3",
    "map_cut.1,2,3",
    "ndcg_cut.1,2,3,4",
    "relative_P.1,2,3",
    "Rprec_mult.0.5",
    "iprec_at_recall.0.35",
]
ALL_MEASURES = PYTREC_MEASURES + PYTREC_PARAMETERS
#: trec_eval prints these only for "all", not per query.
SUMMARY_ONLY = {"num_q", "gm_map", "gm_bpref"}

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
    merged: dict[str, dict[str, float]] = {}
    for measures in (PYTREC_MEASURES, PYTREC_PARAMETERS):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
        for qid, values in evaluator.evaluate(run).items():
            merged.setdefault(qid, {}).update(values)
    return merged


def sequential_sum(values: list[float]) -> float:
    """Term by term, as trec_eval adds per-query values (Python 3.12's sum() compensates)."""
    total = 0.0
    for value in values:
        total += value
    return total


def trec_eval_aggregate(
    key: str, values: list[float], *, complete: bool, missing: int, qrels: dict[str, dict[str, int]]
) -> float:
    """trec_eval 9.0.8's summary of per-query values given in query order; under -c (`complete`) the
    `missing` qrels queries the run lacks count too."""
    count = len(values) + missing
    if key == "num_q":
        return count
    if key == "num_rel" and complete:  # m_num_rel.c under -c: every judgment with rel > 0
        return sum(1 for docs in qrels.values() for rel in docs.values() if rel > 0)
    if key.startswith("num_"):
        return sequential_sum(values)
    if key.startswith("gm_"):
        return math.exp((sequential_sum(values) + missing * math.log(MIN_GEO_MEAN)) / count)
    return sequential_sum(values) / count


def printed(key: str, value: float) -> str:
    return str(int(round(value))) if key.startswith("num_") else f"{value:6.4f}"


def reference_lines(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], level: int, complete: bool
) -> dict[tuple[str, str], str]:
    """trec_eval -q's lines {(measure, qid or all): value} built from pytrec_eval's per-query values."""
    per_query = pytrec(qrels, run, level)
    qids = sorted(per_query)  # trec_eval's order: strcmp
    missing = len(set(qrels) - set(per_query)) if complete else 0
    lines = {(key, qid): printed(key, value) for qid in qids for key, value in per_query[qid].items()}
    lines = {k: v for k, v in lines.items() if k[0] not in SUMMARY_ONLY}
    for key in per_query[qids[0]]:
        values = [per_query[q][key] for q in qids]
        total = trec_eval_aggregate(key, values, complete=complete, missing=missing, qrels=qrels)
        lines[(key, "all")] = printed(key, total)
    return lines


def our_lines(text: str) -> dict[tuple[str, str], str]:
    fields = [line.split("\t") for line in text.splitlines()]
    return {(name.strip(), qid): value for name, qid, value in fields}


class TestAgainstPytrecEval:
    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases())
    def test_it_matches_every_trec_eval_measure_per_query(self, case) -> None:
        qrels, run, level = case
        reference = pytrec(qrels, run, level)
        if not reference:
            with pytest.raises(NoCommonQueriesError):
                evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ALL_MEASURES, rel_level=level)
            return
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ALL_MEASURES, rel_level=level)
        assert sorted(result.per_query) == sorted(reference)
        labels = {spec.label: spec.key for spec in result.specs}
        for qid, values in reference.items():
            ours = result.per_query[qid]
            for key, value in values.items():
                assert ours[labels[key]] == pytest.approx(value, abs=1e-9, nan_ok=True), (qid, key)

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cases(), st.booleans())
    def test_it_prints_what_trec_eval_prints(self, case, complete: bool) -> None:
        qrels, run, level = case
        if not pytrec(qrels, run, level):
            return
        result = evaluate(
            Qrels.from_dict(qrels), Run.from_dict(run), ALL_MEASURES, rel_level=level, complete=complete
        )
        ours = our_lines(format_trec(result, per_query=True))
        reference = reference_lines(qrels, run, level, complete)
        assert {k: ours[k] for k in reference} == reference
        assert set(ours) == set(reference)

    def test_it_sums_the_queries_in_trec_eval_order(self) -> None:
        rng = np.random.default_rng(11)
        qids = [f"q{i:04d}" for i in range(2000)]
        qrels = Qrels.from_dict({q: {f"d{j}": int(rng.integers(0, 2)) for j in range(12)} for q in qids})
        run = Run.from_dict({q: {f"d{j}": float(rng.random()) for j in range(12)} for q in qids})
        values = evaluate(qrels, run, ["map"]).values["map"].tolist()
        assert float(np.sum(values)) != sequential_sum(values)  # numpy adds pairwise: other last bits
        assert evaluate(qrels, run, ["map"]).aggregate["map"] == sequential_sum(values) / len(values)

    def test_it_covers_every_measure_pytrec_eval_supports(self) -> None:
        covered = {spec.measure.trec_name for name in ALL_MEASURES for spec in parse_measure(name)}
        text_only = {"runid", "relstring"}
        assert covered | text_only == set(pytrec_eval.supported_measures)
        # pytrec_eval reads qrels only (no -R prefs or qrels_jg) and lacks yaap, which trec_eval 9.0.8
        # names in no measure set.
        qrels_measures = {m.trec_name for m in MEASURES.values() if m.trec_eval and m.rel_format == "qrels"}
        assert covered | text_only == qrels_measures - {"yaap"}

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
        assert isinstance(shuffled.layout, KeyedLayout)
        reference = pytrec(qrels, run, 1)
        result = evaluate(Qrels.from_dict(qrels), shuffled, ALL_MEASURES)
        labels = {spec.label: spec.key for spec in result.specs}
        for qid, values in reference.items():
            for key, value in values.items():
                assert result.per_query[qid][labels[key]] == pytest.approx(value, abs=1e-9)

    def test_it_matches_judged_ids_longer_than_any_retrieved_one(self) -> None:
        qrels = {"q": {"a": 1, "b": 2, "clueweb09-en0000-00-00001": 1, "c": 0}}
        run = {"q": {"b": 1.0, "a": 1.0, "x": 1.0, "c": 0.5}}
        reference = pytrec(qrels, run, 1)["q"]
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ALL_MEASURES)
        labels = {spec.label: spec.key for spec in result.specs}
        for key, value in reference.items():
            assert result.per_query["q"][labels[key]] == pytest.approx(value, abs=1e-9), key

    def test_it_scores_a_query_judged_only_as_unjudged_as_having_no_relevant_document(self) -> None:
        # pytrec_eval cannot be the reference here (see `judgments`).
        qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": -1, "c": -2}})
        run = Run.from_dict({"q1": {"a": 1.0}, "q2": {"b": 2.0, "x": 1.0}})
        result = evaluate(
            qrels,
            run,
            ["num_rel", "map", "ndcg", "bpref", "P@1", "Judged@2", "iprec_at_recall_0.00", "infAP"],
        )
        assert result.per_query["q2"] == {
            "num_rel": 0.0,
            "map": 0.0,
            "ndcg": 0.0,
            "bpref": 0.0,
            "P@1": 0.0,
            "Judged@2": 0.5,
            "iprec_at_recall_0.00": 0.0,
            "infAP": 0.0,
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
            ("nDCG", "ndcg", Gains(), None),
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
            ("Judged@10", "Judged", 10, None),
            ("judged_10", "judged", 10, None),
            ("nDCG(gain=exp)@10", "ndcg_exp_cut", 10, None),
            ("ndcg_exp", "ndcg_exp", None, None),
            ("R(cap)@10", "relative_P", 10, None),
            ("recall_capped_10", "relative_P", 10, None),
            ("relative_P_10", "relative_P", 10, None),
            ("AP(ret)@10", "ap_retrieved", 10, None),
            ("iprec_at_recall_0.50", "iprec_at_recall", 0.5, None),
            ("IPrec@0.5", "iprec_at_recall", 0.5, None),
            ("bpref", "bpref", None, None),
            ("Rprec", "Rprec", None, None),
            ("num_rel_ret", "num_rel_ret", None, None),
            ("NumRet(rel=1)", "num_rel_ret", None, 1),
            ("NumRet", "num_ret", None, None),
            ("infAP", "infAP", None, None),
            ("SetF(beta=0.5)", "set_F", (0.5,), None),
            ("set_F.0.5", "set_F", (0.5,), None),
            ("utility.2,-1,0,0", "utility", (2.0, -1.0, 0.0, 0.0), None),
            ("11pt_avg", "eleven_pt_avg", DEFAULT_RECALL_LEVELS, None),
            ("Rprec_mult_0.20", "Rprec_mult", 0.2, None),
            ("ndcg.1=3,2=9,4=4.5", "ndcg", Gains("linear", ((1, 3.0), (2, 9.0), (4, 4.5))), None),
            ("relstring.20", "relstring", (20.0,), None),
            ("gm_bpref", "gm_bpref", None, None),
        ],
    )
    def test_it_parses_trec_eval_and_ir_measures_names(self, name, base, param, rel) -> None:
        (spec,) = parse_measure(name)
        assert (spec.measure.name, spec.param, spec.rel_level, spec.key) == (base, param, rel, name)

    @pytest.mark.parametrize(
        ("name", "labels"),
        [
            ("P.5,10", ["P_5", "P_10"]),
            ("P.10", ["P_10"]),
            ("ndcg_cut.10,20,23.4", ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]),  # C's atol
            (
                "iprec_at_recall..10,.20,.25,.75,.50",
                [f"iprec_at_recall_{x}" for x in ("0.10", "0.20", "0.25", "0.50", "0.75")],
            ),
            ("Rprec_mult.5.0,0.2,0.35", ["Rprec_mult_0.20", "Rprec_mult_0.35", "Rprec_mult_5.00"]),
            ("utility.2,-1,0,0", ["utility_2,-1,0,0"]),
            ("11pt_avg..25,.5,.75", ["11pt_avg_.25,.5,.75"]),
            ("ndcg.1=3,2=9,4=4.5", ["ndcg_1=3,2=9,4=4.5"]),
            ("relstring.20", ["relstring_20"]),
            ("recall_capped_10", ["relative_P_10"]),
            ("nDCG@10", ["nDCG@10"]),
        ],
    )
    def test_it_labels_columns_as_trec_eval_prints_them(self, name, labels) -> None:
        assert [spec.label for spec in parse_measure(name)] == labels

    def test_it_expands_bare_names_to_trec_eval_default_cutoffs(self) -> None:
        assert [s.key for s in parse_measure("P")] == [
            f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
        ]
        assert [s.key for s in parse_measure("success")] == ["success_1", "success_5", "success_10"]
        assert parse_measure("iprec_at_recall")[0].key == "iprec_at_recall_0.00"
        assert [s.key for s in parse_measure("P.5,10")] == ["P_5", "P_10"]
        assert [s.key for s in parse_measure("Rprec_mult")][-1] == "Rprec_mult_2.00"

    def test_it_expands_trec_eval_measure_sets(self) -> None:
        official = [s.label for s in parse_measure("official")]
        assert official[:7] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map"]
        assert len(official) == 10 + 11 + 9
        all_trec = {s.measure.trec_name for s in parse_measure("all_trec")}
        assert all_trec == set(pytrec_eval.supported_measures)
        assert {s.measure.name for s in parse_measure("set")} >= {"utility", "set_F"}

    def test_it_lets_parameters_replace_a_sets_defaults(self) -> None:
        labels = [s.label for s in parse_measures(["all_trec", "relstring.20", "P.7"])]
        assert "relstring_20" in labels and "relstring" not in labels
        assert "P_7" in labels and "P_5" not in labels and "recall_5" in labels

    @pytest.mark.parametrize(
        "name",
        ["nonsense", "P_0", "P@x", "nDCG(rel=2)", "map_7", "iprec_at_recall_2", "RR(rel=x)", "P.5,5",
         "utility.1,2", "ndcg.1", "ndcg.-1=2", "num_q_min_rel_2"],
    )  # fmt: skip
    def test_it_rejects_unknown_names(self, name) -> None:
        with pytest.raises(UnknownMeasureError):
            parse_measure(name)

    @pytest.mark.parametrize(
        ("name", "suggestion"),
        [
            ("mapp", "'map'"),
            ("ndcg_cutt_10", "'ndcg_cut_10'"),
            ("nDGC@10", "'nDCG@10'"),
            ("Rprek", "'Rprec'"),
        ],
    )
    def test_it_suggests_the_closest_names(self, name, suggestion) -> None:
        with pytest.raises(
            UnknownMeasureError, match=f"unknown measure '{name}'; did you mean .*{suggestion}"
        ):
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
        assert OFFICIAL_MEASURES[0] == "num_q"


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
    def test_it_declares_every_measure_once_in_the_metric_registry(self, name) -> None:
        measure = MEASURES[name]
        assert isinstance(measure, MetricSpec) and measure.family == "retrieval"
        assert metric_registry().resolve(name) is measure
        assert measure.definition and "\n" not in measure.definition
        counted = "preferences" if measure.rel_format == "prefs" else "documents"
        assert measure.unit == (
            "queries" if name == "num_q" else counted if measure.integer else measure.unit
        )

    @pytest.mark.parametrize("name", sorted(MEASURES))
    def test_it_gives_every_spelling_of_a_measure_one_name_for_the_same_column(self, name) -> None:
        measure = MEASURES[name]
        names = [spec.key for spec in parse_measure(measure.example_name or name)]
        if measure.ir_name and measure.param == "cutoff" and not measure.options:
            names.append(f"{measure.ir_name}@10")
        for key in names:
            canonical = canonical_measure(key)
            assert canonical_measure(canonical) == canonical, key
            found = [parse_measure(each) for each in (key, canonical)]
            if len(found[0]) == 1:
                (a,), (b,) = found
                assert (a.measure, a.param, a.rel_level, a.judged_only) == (
                    b.measure, b.param, b.rel_level, b.judged_only
                ), key  # fmt: skip

    def test_it_names_ir_measures_spellings_as_trec_eval_prints_them(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1, "c": 2}})
        run = Run.from_dict({"q": {"a": 1.0, "b": 0.5, "c": 0.2}})
        pairs = {
            "nDCG@10": "ndcg_cut_10",
            "P@10": "P_10",
            "AP": "map",
            "RR": "recip_rank",
            "R@100": "recall_100",
        }
        assert {name: canonical_measure(name) for name in pairs} == pairs
        result = evaluate(qrels, run, [*pairs, *pairs.values()])
        assert all(result.aggregate[a] == result.aggregate[b] for a, b in pairs.items())
        kept = ("RBP(p=0.9)", "Judged@10", "P(judged_only=True)@10", "P", "ndcg_cut.10,20", "no_such")
        assert [canonical_measure(name) for name in kept] == list(kept)

    @pytest.mark.parametrize("name", sorted(m for m in MEASURES if not MEASURES[m].text))
    def test_it_computes_every_measure_within_its_range(self, name) -> None:
        measure = MEASURES[name]
        qrels = Qrels.from_dict({"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"x": 1}, "q3": {"y": 0}})
        run = Run.from_dict(
            {"q1": {"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.1}, "q2": {"z": 2.0}, "q3": {"y": 1.0}}
        )
        prefs = Prefs.from_rows(
            ["q1", "q1", "q1", "q2", "q3"], ["u"] * 5, ["0"] * 5, ["a", "b", "c", "x", "y"], [2, 0, 1, 1, 0]
        )
        for spec in parse_measure(measure.example_name or name):  # a name with the parameters it needs
            if measure.rel_format == "prefs":
                result = evaluate_prefs(prefs, run, [spec.key])
            elif measure.rel_format == "qrels_jg":
                rows = [(q, "u", d, g) for q, docs in qrels.to_dict().items() for d, g in docs.items()]
                groups = QrelsJG.from_rows(*(list(c) for c in zip(*rows, strict=True)))
                result = evaluate_jg(groups, run, [spec.key])
            else:
                result = evaluate(qrels, run, [spec.key])
            assert result.values[spec.key].shape == (3,)
            assert measure.in_range(result.aggregate[spec.key]), spec.key
            if measure.aggregate == "mean":
                assert all(measure.in_range(v) for v in result.values[spec.key]), spec.key
            if measure.aggregate == "defined":  # NaN where undefined (Accuracy), in range elsewhere
                defined = result.values[spec.key][~np.isnan(result.values[spec.key])]
                assert len(defined) and all(measure.in_range(v) for v in defined), spec.key


def trec_eval_gain_loops(ranking: list[int], judged: list[int], gains: dict[int, float]) -> dict[str, float]:
    """trec_eval's ndcg, ndcg_rel, Rndcg and G for one query, written as its loops run (the reference
    for gain overrides, which pytrec_eval cannot take). `ranking` holds the grades in rank order (-1:
    not judged), `judged` every judged grade of the query, relevance level 1."""

    def gain(grade: int) -> float:
        return 0.0 if grade < 0 else gains.get(grade, float(grade))

    ideal = sorted((gain(g) for g in judged if g >= 0 and gain(g) > 0), reverse=True)
    n, big_p, r = len(ranking), len(ideal), sum(1 for g in judged if g >= 1)
    dcg = [0.0]
    for i, grade in enumerate(ranking):
        dcg.append(dcg[-1] + (gain(grade) / math.log2(i + 2) if gain(grade) != 0 else 0.0))
    idcg = [0.0]
    for i, value in enumerate(ideal):
        idcg.append(idcg[-1] + value / math.log2(i + 2))
    out = {"ndcg": dcg[n] / idcg[big_p] if big_p else 0.0}
    total, found = 0.0, 0
    for i, grade in enumerate(ranking):
        if gain(grade) > 0:
            total += dcg[i + 1] / idcg[min(i + 1, big_p)]
            found += 1
    if big_p:
        total += (big_p - found) * dcg[n] / idcg[big_p]
    out["ndcg_rel"] = total / big_p if total > 0 else 0.0
    points = [dcg[min(k, n)] / idcg[k] for k in range(1, big_p + 1) if k == big_p or ideal[k] != ideal[k - 1]]
    if big_p and n > big_p + 1:
        points.append(dcg[n] / idcg[big_p])
    out["Rndcg"] = (sum(points) / len(points) if points else math.nan) if r else 0.0
    cost = gained = g_total = 0.0
    for i, grade in enumerate(ranking):
        cost += max(ideal[i] if i < big_p else 0.0, 1.0)
        gained += gain(grade)
        if gain(grade) != 0:
            g_total += gain(grade) / math.log2(2 + cost - gained)
    out["G"] = g_total / sum(ideal) if ideal else 0.0
    return out


class TestGainMeasures:
    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.integers(-1, 3), min_size=1, max_size=12),
        st.lists(st.integers(-1, 3), max_size=6),
        st.dictionaries(st.integers(0, 3), st.sampled_from([0.0, 0.5, 2.0, 5.0, -1.0]), max_size=3),
    )
    def test_it_applies_gain_overrides_as_trec_eval_does(self, ranking, unretrieved, gains) -> None:
        docs = {f"d{i}": grade for i, grade in enumerate(ranking) if grade >= 0}
        docs.update({f"u{i}": grade for i, grade in enumerate(unretrieved)})
        if not docs or max(docs.values()) < 0:
            return
        qrels = Qrels.from_dict({"q": docs})
        run = Run.from_dict({"q": {f"d{i}": float(len(ranking) - i) for i in range(len(ranking))}})
        text = ",".join(f"{level}={value}" for level, value in sorted(gains.items()))
        names = [f"{m}.{text}" if gains else m for m in ("ndcg", "ndcg_rel", "Rndcg", "G")]
        ours = evaluate(qrels, run, names).per_query["q"]
        reference = trec_eval_gain_loops(ranking, list(docs.values()), gains)
        for name, key in zip(names, ("ndcg", "ndcg_rel", "Rndcg", "G"), strict=True):
            assert ours[name] == pytest.approx(reference[key], abs=1e-12, nan_ok=True), name


class TestTextMeasures:
    def test_it_writes_the_relevance_string(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 12, "b": 0, "c": -1, "d": 3}})
        run = Run.from_dict({"q": {"a": 5.0, "x": 4.0, "b": 3.0, "c": 2.0, "d": 1.0, "y": 0.5}})
        result = evaluate(qrels, run, ["relstring", "relstring.3"])
        assert result.per_query["q"] == {"relstring": ">-0.3-", "relstring.3": ">-0"}
        assert not result.aggregate

    def test_it_takes_the_run_id_and_prints_it_for_all_only(self, tmp_path) -> None:
        qrels = Qrels.from_dict({"q": {"a": 1}})
        run = replace(Run.from_dict({"q": {"a": 1.0}}), run_id="bm25")
        text = format_trec(evaluate(qrels, run, ["runid", "map"]), per_query=True)
        assert text.splitlines() == [
            "map                   \tq\t1.0000",
            "runid                 \tall\tbm25",
            "map                   \tall\t1.0000",
        ]


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

    def test_it_counts_every_qrels_query_and_judgment_in_complete_mode(self) -> None:
        # trec_eval 9.0.8 under -c: num_q counts the qrels queries and num_rel every judgment with
        # rel > 0, whatever the level (m_num_q.c, m_num_rel.c).
        qrels = Qrels.from_dict({"q1": {"a": 1, "b": 2}, "q2": {"c": 1, "d": 3}, "q3": {"e": 0}})
        run = Run.from_dict({"q1": {"a": 1.0, "b": 0.5}})
        complete = evaluate(qrels, run, ["num_q", "num_rel", "num_rel_min_rel_2"], rel_level=2, complete=True)
        assert complete.aggregate == {"num_q": 3.0, "num_rel": 4.0, "num_rel_min_rel_2": 2.0}
        plain = evaluate(qrels, run, ["num_q", "num_rel"], rel_level=2)
        assert plain.aggregate == {"num_q": 1.0, "num_rel": 1.0}

    def test_it_fills_missing_queries_for_paired_statistics(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}, "q0": {"c": 1}})
        run = Run.from_dict({"q1": {"a": 1.0}})
        result = evaluate(qrels, run, ["map", "gm_map"], complete=True)
        qids, values = result.per_query_array("map")
        assert list(qids) == ["q0", "q1", "q2"] and list(values) == [0.0, 1.0, 0.0]
        assert result.aggregate["map"] == pytest.approx(1 / 3)
        assert result.per_query_array("gm_map")[1][0] == pytest.approx(math.log(MIN_GEO_MEAN))
        assert list(evaluate(qrels, run, ["map"]).per_query_array("map")[0]) == ["q1"]

    def test_it_prints_trec_eval_text_in_trec_eval_order(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
        run = Run.from_dict({"q1": {"a": 1.0, "b": 2.0}, "q2": {"c": 1.0}})
        text = format_trec(evaluate(qrels, run, ["P_5", "gm_map", "map", "num_ret", "num_q"]), per_query=True)
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

    def test_it_divides_judged_by_k_and_ir_measures_judged_by_the_documents_retrieved(self) -> None:
        qrels = Qrels.from_dict({"q": {"a": 0, "b": -1}})
        run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}})
        result = evaluate(qrels, run, ["Judged@2", "Judged@4", "judged_2", "judged_4"])
        assert result.aggregate == {
            "Judged@2": 1.0,
            "Judged@4": pytest.approx(2 / 3),  # ir-measures: over min(k, retrieved)
            "judged_2": 1.0,
            "judged_4": 0.5,
        }
