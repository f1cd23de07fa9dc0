"""The measures ir-measures names, each checked against ir-measures itself with the provider that
computes it: cwl_eval (RBP, SDCG, NERR8-11, INST, INSQ, BPM; RBP's residual against cwl_eval's own
ruler), gdeval (ERR@k, nDCG with 2^rel - 1 gains), compat (Compat), pytrec_eval (infAP, NumRet,
SetF, and every measure with judged_only=True) and accuracy (Accuracy), per query on seeded random
runs with ties, unjudged and negatively judged documents, queries without relevant documents and
qrels queries the run lacks.

Ties: trec_eval and gdeval order tied documents by document id descending, as we do. cwl_eval keeps
the run's own order among ties, so its runs are written in that order; compat, judged and msmarco
order ties by id ascending, so their runs have no ties and a test pins our order instead.
"""

from __future__ import annotations

import logging
import math
import random
import re

import ir_measures
import numpy as np
import pytest
from cwl.ruler.measures.cwl_rbp import RBPCWLMetric
from cwl.ruler.ranking import RankingMaker
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ir_measures.providers.cwl_eval import IrmQrelHandler

from evalcore.metrics import UnknownMetricError, metric_registry
from evalcore.retrieval import Qrels, Run, UnknownMeasureError, evaluate, format_trec, parse_measure
from evalcore.retrieval.gain import GainsAt
from evalcore.retrieval.measures import MEASURES

Judgments = dict[str, dict[str, int]]
Ranking = dict[str, dict[str, float]]

CWL = [
    "RBP(p=0.8,rel=1)",
    "RBP(p=0.95,rel=2)",
    "RBP(p=0.5,rel=3)",
    "RBP(p=0.9,rel=0)",
    "SDCG(max_rel=4)@5",
    "SDCG(min_rel=1,max_rel=3)@10",
    "NERR8(max_rel=4)@5",
    "NERR9(max_rel=3)@10",
    "NERR10(p=0.7,max_rel=4)",
    "NERR11(T=2,max_rel=4)",
    "INST(T=2,max_rel=4)",
    "INSQ(T=1.5,max_rel=4)",
    "BPM(T=1.5,max_rel=4)@7",
]
GDEVAL = ["ERR@5", "ERR@20", "nDCG(dcg='exp-log2')@10", "nDCG(dcg='exp-log2')@3"]
COMPAT = ["Compat", "Compat(p=0.8,normalize=False)", "Compat(p=0.99)", "Compat(p=1.0)"]
PYTREC = ["infAP", "infAP(rel=2)", "NumRet", "NumRet(rel=2)", "SetF(beta=0.5)", "SetF(rel=2)"]
#: ir-measures' other spellings, and its defaults written out.
PYTREC_ALIASES = [
    "BPref", "Precision@5", "Recall@10", "RPrec", "NDCG@10", "MAP@10", "SetRelP", "SetP(relative=True)",
    "P(judged_only=False)@3", "nDCG(dcg='log2',judged_only=False)@5", "AP(rel=2,judged_only=False)",
    "Success@3", "IPrec@0.3", "SetAP", "SetR", "NumRel(rel=2)", "RR(rel=2)", "Rprec(rel=3)",
    "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10", "nDCG(gains={1:5,3:0})", "NDCG(gains={0:1})@4",
]  # fmt: skip


def random_case(rng: random.Random, *, ties: bool) -> tuple[Judgments, Ranking]:
    """Qrels and a run of up to 6 numeric queries (gdeval reads only those), grades -1 to 4.

    With `ties`, scores are quarters in [-1, 1]; without, distinct values of either sign, exact in
    single precision. Run documents are listed by id descending, so that a provider that keeps the
    run's order among ties (cwl_eval) sees trec_eval's order.
    """
    qrels: Judgments = {}
    run: Ranking = {}
    for q in range(rng.randint(1, 6)):
        qid = str(q + 1)
        docs = [f"d{i}" for i in range(rng.randint(1, 30))]
        judged = rng.sample(docs, rng.randint(0, min(len(docs), 40)))
        qrels[qid] = {d: rng.randint(-1, 4) for d in judged} or {"x": 0}
        if rng.random() < 0.8:  # else the run lacks the query
            ret = rng.sample(docs, rng.randint(1, len(docs)))
            if ties:
                scores = {d: rng.randint(-4, 4) / 4 for d in ret}
            else:
                distinct = rng.sample(range(10_000), len(ret))
                scores = {d: (v - 5000 + 0.5) / 64 for d, v in zip(ret, distinct, strict=True)}
            run[qid] = dict(sorted(scores.items(), reverse=True))
    if not set(run) & set(qrels):
        run["1"] = {"d0": 1.0}
    return qrels, run


def ours(qrels: Judgments, run: Ranking, names: list[str], **options) -> dict[str, dict[str, float]]:
    return evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, **options).per_query  # type: ignore[return-value]


def theirs(provider: str, qrels: Judgments, run: Ranking, names: list[str]) -> dict[str, dict[str, float]]:
    """Per query and measure name, the provider's values for the queries both files hold."""
    parsed = {ir_measures.parse_measure(name): name for name in names}
    out: dict[str, dict[str, float]] = {}
    for metric in ir_measures.providers.registry[provider].iter_calc(list(parsed), qrels, run):
        if metric.query_id in run:
            out.setdefault(metric.query_id, {})[parsed[metric.measure]] = float(metric.value)
    return out


def assert_match(provider: str, names: list[str], *, ties: bool, seed: int, cases: int, tol: float) -> None:
    rng = random.Random(seed)
    for _ in range(cases):
        qrels, run = random_case(rng, ties=ties)
        expected = theirs(provider, qrels, run, names)
        got = ours(qrels, run, names)
        assert set(got) == set(expected)
        for qid, values in expected.items():
            for name, value in values.items():
                assert got[qid][name] == pytest.approx(value, abs=tol), (name, qid, qrels[qid], run[qid])


@pytest.fixture(autouse=True)
def quiet_cwl():
    # cwl_eval warns about every query whose grades do not reach max_rel.
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


class TestAgainstCwlEval:
    @pytest.mark.parametrize("ties", [False, True])
    def test_it_matches_cwl_eval_per_query(self, ties) -> None:
        assert_match("cwl_eval", CWL, ties=ties, seed=27, cases=25, tol=1e-12)

    def test_it_looks_at_cwl_evals_1000_ranks_only(self) -> None:
        # Query 2's relevant documents straddle rank 1000.
        rng = random.Random(5)
        docs = [f"d{i:04d}" for i in range(1500)]
        qrels = {"1": {d: rng.randint(0, 4) for d in docs[::7]}, "2": {d: 1 for d in docs[990:1010]}}
        run = {"1": {d: -i / 8 for i, d in enumerate(docs)}, "2": {d: -i / 8 for i, d in enumerate(docs)}}
        names = ["RBP(p=0.999,rel=1)", "INSQ(T=20,max_rel=4)", "NERR10(p=0.999,max_rel=4)"]
        expected, got = theirs("cwl_eval", qrels, run, names), ours(qrels, run, names)
        for qid, values in expected.items():
            assert got[qid] == pytest.approx(values, abs=1e-12)

    @pytest.mark.parametrize(("p", "rel"), [(0.8, 1), (0.95, 2), (0.5, 1)])
    def test_it_reports_rbps_residual_as_cwl_eval_does(self, p, rel) -> None:
        rng = random.Random(int(p * 100) + rel)
        for _ in range(20):
            qrels, run = random_case(rng, ties=False)
            got = ours(qrels, run, [f"RBP_residual(p={p},rel={rel})", f"RBP(p={p},rel={rel})"])
            handler = IrmQrelHandler(rel, None, None)
            for qid, docs in qrels.items():
                for doc, grade in docs.items():
                    handler.put_value(qid, doc, max(grade, 0))
            for qid in got:
                maker = RankingMaker(qid, handler, max_n=1000)
                for doc in sorted(run[qid], key=run[qid].__getitem__, reverse=True):
                    maker.add(doc, "_")
                metric = RBPCWLMetric(p)
                metric.residuals = True
                value = metric.measure(maker.get_ranking())
                assert got[qid][f"RBP(p={p},rel={rel})"] == pytest.approx(value, abs=1e-12)
                assert got[qid][f"RBP_residual(p={p},rel={rel})"] == pytest.approx(
                    metric.residual_expected_utility, abs=1e-12
                )

    def test_it_counts_a_whole_unjudged_ranking_as_residual(self) -> None:
        qrels = {"1": {"a": 1}, "2": {"b": 1}}
        run = {"1": {"x": 2.0, "y": 1.0}, "2": {"b": 1.0}}
        values = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["RBP(p=0.5)", "RBP_residual(p=0.5)"])
        assert values.values["RBP(p=0.5)"].tolist() == [0.0, pytest.approx(0.5)]
        assert values.values["RBP_residual(p=0.5)"].tolist() == [pytest.approx(1.0), pytest.approx(0.5)]


class TestAgainstGdeval:
    @pytest.mark.parametrize("ties", [False, True])
    def test_it_matches_gdeval_to_its_five_printed_decimals(self, ties) -> None:
        assert_match("gdeval", GDEVAL, ties=ties, seed=9, cases=12, tol=5.1e-6)

    def test_it_takes_the_whole_ranking_for_err_without_a_cutoff(self) -> None:
        rng = random.Random(12)
        for _ in range(5):
            qrels, run = random_case(rng, ties=True)
            expected = theirs("gdeval", qrels, run, ["ERR@1000"])
            got = ours(qrels, run, ["ERR"])
            assert {q: v["ERR"] for q, v in got.items()} == pytest.approx(
                {q: v["ERR@1000"] for q, v in expected.items()}, abs=5.1e-6
            )

    def test_it_computes_err_by_hand(self) -> None:
        # Grades 3 then 4: R = 7/16, then 15/16 reached with 9/16.
        result = evaluate(
            Qrels.from_dict({"1": {"a": 3, "b": 4}}), Run.from_dict({"1": {"a": 2.0, "b": 1.0}}), "ERR@10"
        )
        assert result.aggregate["ERR@10"] == pytest.approx(7 / 16 + 15 / 16 * 9 / 16 / 2)


class TestAgainstCompat:
    def test_it_matches_compat_per_query(self) -> None:
        assert_match("compat", COMPAT, ties=False, seed=3, cases=30, tol=1e-12)

    def test_it_ranks_tied_documents_by_id_descending_where_compat_takes_them_ascending(self) -> None:
        qrels = {"1": {"b": 1, "c": 1}}
        run = {"1": {"a": 1.0, "b": 1.0, "c": 0.5}}
        # Ours: b, a, c (trec_eval's order); compat's: a, b, c. The same run without the tie:
        untied = {"1": {"b": 1.0, "a": 0.9, "c": 0.5}}
        ideal_first = theirs("compat", qrels, untied, ["Compat"])["1"]["Compat"]
        assert ours(qrels, run, ["Compat"])["1"]["Compat"] == pytest.approx(ideal_first, abs=1e-12)
        assert theirs("compat", qrels, run, ["Compat"])["1"]["Compat"] < ideal_first


class TestAgainstPytrecEval:
    @pytest.mark.parametrize("ties", [False, True])
    def test_it_matches_ir_measures_pytrec_eval_provider(self, ties) -> None:
        assert_match("pytrec_eval", PYTREC, ties=ties, seed=4, cases=15, tol=1e-12)

    def test_it_reads_ir_measures_other_spellings_of_trec_eval_measures(self) -> None:
        assert_match("pytrec_eval", PYTREC_ALIASES, ties=True, seed=6, cases=10, tol=1e-12)

    def test_it_matches_the_msmarco_provider(self) -> None:
        # MS MARCO's script orders tied documents by id ascending: no ties here.
        assert_match("msmarco", ["RR@10", "RR(rel=2)@5", "RR"], ties=False, seed=13, cases=10, tol=1e-12)

    def test_it_matches_the_judged_provider(self) -> None:
        # The judged provider orders tied documents by id ascending: no ties here.
        assert_match("judged", ["Judged@5", "Judged@20"], ties=False, seed=8, cases=10, tol=1e-12)


class TestAggregates:
    def test_it_averages_over_every_qrels_query_as_ir_measures_does_with_complete(self) -> None:
        rng = random.Random(11)
        for provider, names in (("cwl_eval", CWL[:4]), ("gdeval", GDEVAL[:2]), ("compat", COMPAT[:2])):
            for _ in range(5):
                qrels, run = random_case(rng, ties=False)
                parsed = {ir_measures.parse_measure(n): n for n in names}
                expected = ir_measures.providers.registry[provider].calc_aggregate(list(parsed), qrels, run)
                got = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, complete=True).aggregate
                tol = 5.1e-6 if provider == "gdeval" else 1e-12
                assert got == pytest.approx({parsed[m]: v for m, v in expected.items()}, abs=tol)

    def test_it_sums_the_counts_over_the_evaluated_queries_as_ir_measures_does_without_complete(self) -> None:
        rng = random.Random(2)
        names = ["NumQ", "NumRet", "NumRel", "NumRelRet", "NumRet(rel=2)", "NumRel(rel=2)"]
        parsed = {ir_measures.parse_measure(n): n for n in names}
        for _ in range(8):
            qrels, run = random_case(rng, ties=True)
            expected = ir_measures.providers.registry["pytrec_eval"].calc_aggregate(list(parsed), qrels, run)
            got = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names).aggregate
            assert got == {parsed[m]: v for m, v in expected.items()}

    def test_it_scores_zero_without_relevant_documents_and_one_residual_for_a_missing_query(self) -> None:
        qrels = {"1": {"a": 0, "b": -1}, "2": {"c": 2}}
        run = {"1": {"a": 1.0, "b": 0.5, "z": 0.1}}
        names = ["RBP", "ERR@10", "Compat", "SDCG(max_rel=2)@5", "INST(max_rel=2)", "RBP_residual(p=0.5)"]
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, complete=True)
        assert [result.values[n][0] for n in names[:-1]] == [0.0] * 5
        # z at rank 3 is unjudged, and ranks 4 on lie past the run: 1/8 + 1/8.
        assert result.values["RBP_residual(p=0.5)"][0] == pytest.approx(0.25)
        assert result.aggregate["RBP_residual(p=0.5)"] == pytest.approx((0.25 + 1.0) / 2)
        assert result.aggregate["ERR@10"] == 0.0


class TestNames:
    @pytest.mark.parametrize(
        ("name", "base", "param", "rel"),
        [
            ("RBP", "RBP", (0.8,), None),
            ("RBP(p=0.9,rel=2)", "RBP", (0.9,), 2),
            ("RBP_residual(p=0.9)", "RBP_residual", (0.9,), None),
            ("ERR", "ERR", (math.inf,), None),
            ("ERR@20", "ERR", (20.0,), None),
            ("Compat", "Compat", (0.95, 1.0), None),
            ("Compat(p=0.8,normalize=False)", "Compat", (0.8, 0.0), None),
            ("compat(normalize=true)", "Compat", (0.95, 1.0), None),
            ("SDCG(dcg='log2',max_rel=3)@10", "SDCG", (10.0, 0.0, 3.0), None),
            ("NERR11(T=2,min_rel=1,max_rel=4)", "NERR11", (2.0, 1.0, 4.0), None),
            ("BPM(T=2,max_rel=4)@5", "BPM", (5.0, 2.0, 0.0, 4.0), None),
            ("nDCG(dcg='exp-log2')@10", "ndcg_exp_cut", 10.0, None),
            ("nDCG(dcg=log2)@10", "ndcg_cut", 10.0, None),
            (
                "nDCG(gains={0:0,1:1,2:3})@10",
                "ndcg",
                GainsAt("linear", ((0, 0.0), (1, 1.0), (2, 3.0)), 10.0),
                None,
            ),
            ("nDCG(gains={2:9})", "ndcg", GainsAt("linear", ((2, 9.0),)), None),
        ],
    )
    def test_it_reads_ir_measures_keyword_parameters(self, name, base, param, rel) -> None:
        (spec,) = parse_measure(name)
        assert (spec.measure.name, spec.param, spec.rel_level, spec.key) == (base, param, rel, name)

    @pytest.mark.parametrize(
        ("name", "message"),
        [
            ("SDCG@10", "SDCG needs max_rel="),
            ("SDCG(max_rel=3)", "SDCG needs @k"),
            ("RBP(q=0.9)", "RBP takes p, not q"),
            ("INST(max_rel=3)@5", "INST takes T, min_rel, max_rel, not @k"),
            ("RBP(p=1.5)", r"p lies in \(0, 1\]"),
            ("ERR(rel=2)@10", "ERR does not use a relevance level"),
            ("Compat(normalize=maybe)", "normalize is true or false"),
            ("SDCG(min_rel=3,max_rel=3)@5", "max_rel must be above min_rel"),
            ("ERR@0", "a cutoff must be a positive integer"),
            ("INST(T=0,max_rel=3)", "T, the gain wanted, must be above 0"),
            ("P(gains={1:2})@3", "gains apply to nDCG with dcg='log2' only"),
            ("nDCG(gains={1})@3", "gains are written as in"),
            ("Bpref(judged_only=True)", "Bpref does not take judged_only"),
            ("P(judged_only=maybe)@5", "judged_only is true or false"),
            ("RBP(judged_only=True)", "RBP takes p, not judged_only"),
        ],
    )
    def test_it_refuses_parameters_the_measure_does_not_take(self, name, message) -> None:
        with pytest.raises(UnknownMeasureError, match=message):
            parse_measure(name)

    def test_it_carries_judged_only_in_the_spec_keyed_as_written(self) -> None:
        specs = {s.key: s for n in ("P(judged_only=True)@10", "AP(rel=2,judged_only=true)", "P@10",
                                    "nDCG(judged_only=False)@5", "SetF(beta=0.5,judged_only=True)")
                 for s in parse_measure(n)}  # fmt: skip
        assert {k: (s.measure.name, s.param, s.rel_level, s.judged_only) for k, s in specs.items()} == {
            "P(judged_only=True)@10": ("P", 10.0, None, True),
            "AP(rel=2,judged_only=true)": ("map", None, 2, True),
            "P@10": ("P", 10.0, None, False),
            "nDCG(judged_only=False)@5": ("ndcg_cut", 5.0, None, False),
            "SetF(beta=0.5,judged_only=True)": ("set_F", (0.5,), None, True),
        }
        assert [s.key for s in parse_measure("P(judged_only=True)")][:2] == [
            "P(judged_only=True)@5", "P(judged_only=True)@10"]  # fmt: skip
        assert metric_registry().resolve("nDCG(judged_only=True)@10") is MEASURES["ndcg_cut"]

    @pytest.mark.parametrize(
        ("name", "suggestion"),
        [
            ("RBPP(p=0.9)", "'RBP(p=0.9)'"),
            ("Compt", "'Compat'"),
            ("EER@10", "'ERR@10'"),
            ("SDGC(max_rel=3)@10", "'SDCG(max_rel=3)@10'"),
            ("NERR12(max_rel=3)", "'NERR1"),
            ("Pp(judged_only=True)@10", "'P(judged_only=True)@10'"),
            ("Acuracy@10", "'Accuracy@10'"),
        ],
    )
    def test_it_suggests_the_closest_names_with_the_parameters_kept(self, name, suggestion) -> None:
        with pytest.raises(
            UnknownMeasureError,
            match=f"unknown measure '{re.escape(name)}'; did you mean .*{re.escape(suggestion)}",
        ):
            parse_measure(name)

    def test_it_resolves_and_suggests_them_in_the_metric_registry_as_alert_rules_do(self) -> None:
        registry = metric_registry()
        assert registry.resolve("SDCG(max_rel=3)@10") is MEASURES["SDCG"]
        assert registry.resolve("RBP_residual(p=0.9)").direction == "lower"
        with pytest.raises(UnknownMetricError, match=re.escape("did you mean 'SDCG(max_rel=3)@10'?")):
            registry.resolve("SDGC(max_rel=3)@10")

    def test_it_declares_each_new_measure_with_its_direction_and_range(self) -> None:
        assert MEASURES["RBP_residual"].direction == "lower"
        assert all(MEASURES[n].range == (0.0, 1.0) for n in ("RBP", "ERR", "Compat", "SDCG", "INST", "BPM"))
        assert np.isnan(MEASURES["SDCG"].default_params[-1])  # max_rel is required


# --- judged_only=True and Accuracy, on hypothesis' cases ---------------------------------------------

QUARTERS = [-1.0, -0.25, 0.0, 0.25, 0.5, 1.0, 2.25]  # exact in single precision, and often tied


@st.composite
def tied_cases(draw: st.DrawFn) -> tuple[Judgments, Ranking]:
    """Up to 4 judged queries (grades -1 to 4, one >= 0 each: pytrec_eval misreads a query whose
    judgments are all negative) and a run of up to 5 queries, with unjudged documents and tied scores.

    Each query's documents are listed by id descending, so that a provider that keeps the run's order
    among ties (the accuracy provider's stable sort) sees trec_eval's order.
    """
    docs = [f"d{i}" for i in range(12)]
    grades = st.dictionaries(st.sampled_from(docs), st.integers(-1, 4), min_size=1, max_size=9)
    qids = draw(st.lists(st.sampled_from("1234"), unique=True, min_size=1, max_size=4))
    qrels = {q: draw(grades.filter(lambda d: max(d.values()) >= 0)) for q in qids}
    retrieved = st.dictionaries(
        st.sampled_from([*docs, "u1", "u2", "u3"]), st.sampled_from(QUARTERS), min_size=1, max_size=12
    )
    run_qids = draw(st.lists(st.sampled_from("12345"), unique=True, min_size=1, max_size=5))
    run = {q: dict(sorted(draw(retrieved).items(), reverse=True)) for q in run_qids}
    assume(set(run) & set(qrels))
    return qrels, run


JUDGED_ONLY = [
    "P(judged_only=True)@5", "P(rel=2,judged_only=True)@3", "AP(judged_only=True)", "AP(judged_only=True)@4",
    "nDCG(judged_only=True)@5", "nDCG(judged_only=True)", "nDCG(gains={0:0,1:1,2:3},judged_only=True)@5",
    "RR(judged_only=True)", "RR(rel=2,judged_only=True)", "Rprec(judged_only=True)", "R(judged_only=True)@5",
    "Success(judged_only=True)@3", "IPrec(judged_only=True)@0.2", "SetP(judged_only=True)",
    "SetRelP(judged_only=True)", "SetF(beta=0.5,judged_only=True)", "SetAP(judged_only=True)",
]  # fmt: skip
#: The same measures without the flag, asked in between: each column must come from its own ranking.
PLAIN = ["P@5", "AP", "nDCG@5", "RR", "SetP"]


class TestJudgedOnly:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tied_cases())
    def test_it_matches_ir_measures_pytrec_eval_provider_per_query(self, case) -> None:
        qrels, run = case
        names = [n for pair in zip(JUDGED_ONLY, PLAIN + [""] * 12, strict=True) for n in pair if n]
        expected = theirs("pytrec_eval", qrels, run, names)
        got = ours(qrels, run, names)
        assert set(got) == set(expected)
        for qid, values in expected.items():
            assert list(got[qid]) == names  # in the order asked
            assert got[qid] == pytest.approx(values, abs=1e-12, nan_ok=True), (qid, qrels.get(qid), run[qid])

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tied_cases(), st.booleans())
    def test_it_averages_as_ir_measures_does(self, case, complete) -> None:
        qrels, run = case
        names = ["P(judged_only=True)@5", "AP(judged_only=True)", "nDCG(judged_only=True)@5", "AP"]
        parsed = {ir_measures.parse_measure(n): n for n in names}
        provider = ir_measures.providers.registry["pytrec_eval"]
        if complete:  # ir-measures averages over the qrels queries, a missing one scoring 0
            expected = provider.calc_aggregate(list(parsed), qrels, run)
        else:
            expected = provider.calc_aggregate(list(parsed), {q: qrels[q] for q in run if q in qrels}, run)
        got = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, complete=complete).aggregate
        assert got == pytest.approx({parsed[m]: v for m, v in expected.items()}, abs=1e-12)

    def test_it_keeps_a_query_without_a_judged_document_retrieved_as_trec_eval_does(self) -> None:
        # pytrec_eval (trec_eval's code, judged_docs_only_flag) keeps query 2 with nothing retrieved.
        qrels = {"1": {"a": 1, "b": 0, "n": -1}, "2": {"c": 1}}
        run = {"1": {"x": 3.0, "n": 2.0, "a": 1.0}, "2": {"z": 1.0}}
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["num_q", "num_ret", "P_1", "map"],
                          judged_only=True)  # fmt: skip
        assert result.per_query == {
            "1": {"num_q": 1.0, "num_ret": 1.0, "P_1": 1.0, "map": 1.0},
            "2": {"num_q": 1.0, "num_ret": 0.0, "P_1": 0.0, "map": 0.0},
        }
        assert result.aggregate["num_q"] == 2.0
        per_measure = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["P(judged_only=True)@1", "P@1"])
        assert per_measure.per_query == {
            "1": {"P(judged_only=True)@1": 1.0, "P@1": 0.0},
            "2": {"P(judged_only=True)@1": 0.0, "P@1": 0.0},
        }

    def test_it_evaluates_everything_on_judged_documents_under_the_whole_run_flag(self) -> None:
        qrels = Qrels.from_dict({"1": {"a": 1, "b": 0}})
        run = Run.from_dict({"1": {"x": 3.0, "a": 1.0}})
        result = evaluate(qrels, run, ["P@1", "P(judged_only=True)@1"], judged_only=True)
        assert result.aggregate == {"P@1": 1.0, "P(judged_only=True)@1": 1.0}


def accuracy_reference(qrels: Judgments, run: Ranking, name: str) -> dict[str, float | None]:
    """ir-measures' accuracy provider, one query at a time: the value, or None where it reports nothing
    (no relevant document retrieved) or divides by zero (no non-relevant one)."""
    # ir-measures' parser reads no negative number: Accuracy(rel=-1) is built.
    measure = ir_measures.Accuracy(rel=-1) if name == "Accuracy(rel=-1)" else ir_measures.parse_measure(name)
    provider = ir_measures.providers.registry["accuracy"]
    out: dict[str, float | None] = {}
    for qid in sorted(set(run) & set(qrels)):
        try:
            found = list(provider.iter_calc([measure], {qid: qrels[qid]}, {qid: run[qid]}))
        except ZeroDivisionError:
            found = []
        out[qid] = float(found[0].value) if found else None
    return out


ACCURACY = [
    "Accuracy",
    "Accuracy@3",
    "Accuracy(rel=2)",
    "Accuracy(rel=3)@6",
    "Accuracy(rel=0)",
    "Accuracy(rel=-1)",
]


class TestAccuracy:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tied_cases())
    def test_it_matches_ir_measures_accuracy_provider_per_query(self, case) -> None:
        qrels, run = case
        result = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ACCURACY)
        for name in ACCURACY:
            expected = accuracy_reference(qrels, run, name)
            got = dict(zip(result.qids.tolist(), result.values[name].tolist(), strict=True))
            assert set(got) == set(expected)
            for qid, value in expected.items():
                if value is None:
                    assert math.isnan(got[qid]), (name, qid)
                else:
                    assert got[qid] == value, (name, qid, qrels[qid], run[qid])

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(tied_cases(), st.booleans())
    def test_its_mean_skips_the_queries_ir_measures_skips(self, case, complete) -> None:
        qrels, run = case
        names = ["Accuracy", "Accuracy@3", "Accuracy(rel=2)"]
        got = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), names, complete=complete).aggregate
        for name in names:
            defined = [v for v in accuracy_reference(qrels, run, name).values() if v is not None]
            try:
                expected = ir_measures.providers.registry["accuracy"].calc_aggregate(
                    [ir_measures.parse_measure(name)], qrels, run
                )[ir_measures.parse_measure(name)]
            except ZeroDivisionError:  # a query without a non-relevant document: the mean of the others
                expected = sum(defined) / len(defined) if defined else math.nan
            assert got[name] == pytest.approx(expected, abs=1e-12, nan_ok=True), name

    def test_it_handles_the_corner_cases(self) -> None:
        qrels = {
            "none": {"a": 0, "b": 0},  # no relevant document: skipped
            "all": {"a": 1, "b": 2},  # every retrieved document relevant: skipped (ir-measures divides by 0)
            "unjudged": {"a": 1},  # the unjudged documents count as non-relevant
            "lacks": {"a": 1},  # the run lacks it: skipped, even under complete
            "perfect": {"a": 1, "b": 0},
        }
        run = {
            "none": {"a": 2.0, "b": 1.0},
            "all": {"a": 2.0, "b": 1.0},
            "unjudged": {"x": 3.0, "a": 2.0, "y": 1.0},
            "perfect": {"a": 2.0, "b": 1.0},
        }
        result = evaluate(
            Qrels.from_dict(qrels), Run.from_dict(run), ["Accuracy", "Accuracy(rel=0)"], complete=True
        )
        values = dict(zip(result.qids.tolist(), result.values["Accuracy"].tolist(), strict=True))
        assert [math.isnan(values[q]) for q in ("none", "all")] == [True, True]
        assert (values["unjudged"], values["perfect"]) == (0.5, 1.0)
        assert result.aggregate["Accuracy"] == 0.75
        qids, filled = result.per_query_array("Accuracy")
        assert math.isnan(filled[qids.tolist().index("lacks")])
        # rel=0: every document but a negatively judged one is relevant; none here, so none is defined.
        assert math.isnan(result.aggregate["Accuracy(rel=0)"])
        # trec_eval's text leaves the undefined queries out, as ir-measures reports nothing for them.
        lines = format_trec(result, per_query=True).splitlines()
        assert [line.split("\t")[1] for line in lines if line.startswith("Accuracy ")] == [
            "perfect", "unjudged", "all"]  # fmt: skip

    def test_it_names_its_parameters_as_ir_measures_does(self) -> None:
        (spec,) = parse_measure("Accuracy(rel=2)@10")
        assert (spec.measure.name, spec.param, spec.rel_level) == ("Accuracy", (10.0,), 2)
        assert parse_measure("Accuracy")[0].param == (math.inf,)
        assert metric_registry().resolve("Accuracy@5") is MEASURES["Accuracy"]
        assert (MEASURES["Accuracy"].direction, MEASURES["Accuracy"].range) == ("higher", (0.0, 1.0))
        with pytest.raises(UnknownMeasureError, match="Accuracy takes @k, not p"):
            parse_measure("Accuracy(p=0.5)")
