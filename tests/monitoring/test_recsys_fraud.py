"""Recommendation sets and fraud score sets: uploads checked on their first lines, evaluation jobs whose
results equal the cores' on the same files, idempotent re-runs, readable refusals, and a real worker."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from evalcore.fraud import FraudOptions, cost_at_threshold, evaluate_scores, read_scores, roc_curve
from evalcore.options import OptionsError
from evalcore.recsys import RecsysOptions, evaluate_recommendations, read_recsys_files
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.files.uploads import SNIFF_LINES, UploadError
from monitoring.models import (
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
)
from monitoring.recsys_fraud import services as recsys_fraud
from monitoring.recsys_fraud.curves import lorenz_curve
from series.models import MetricValue
from series.selectors import job_values
from tests.conftest import QueuedTasks, WorkerProcess

RECSYS = demo_recsys_texts()
SCORES = demo_fraud_text()
SMALL = {
    "recs": "user,item,rank\nu1,a,1\nu1,b,2\nu2,c,1\nu2,a,2\n",
    "interactions": "user,item\nu1,b\nu2,d\nu3,a\n",
    "items": "item,category\na,x\nb,x\nc,y\nd,z\ne,z\n",
}


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def recsys_uploads(texts: dict[str, str]) -> dict[str, SimpleUploadedFile]:
    return {role: csv_file(f"{role}.csv", text) for role, text in texts.items()}


def written(tmp_path: Path, texts: dict[str, str]) -> dict[str, str]:
    paths = {}
    for role, text in texts.items():
        paths[role] = str(tmp_path / f"{role}.csv")
        Path(paths[role]).write_text(text)
    return paths


@pytest.fixture
def recommendations(team: Team, theo: User) -> RecommendationSet:
    return recsys_fraud.recommendation_set_upload(team=team, uploaded_by=theo, **recsys_uploads(RECSYS))


@pytest.fixture
def scores(team: Team, theo: User) -> FraudScoreSet:
    return recsys_fraud.fraud_score_set_upload(
        team=team, scores=csv_file("scores.csv", SCORES), uploaded_by=theo
    )


def evaluated_recsys(chosen: RecommendationSet, **options: Any) -> RecommendationEvaluation:
    evaluation = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=chosen, options=RecsysOptions(**options), enqueue=False
    )
    assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


def evaluated_fraud(chosen: FraudScoreSet, options: FraudOptions = FRAUD_OPTIONS) -> FraudScoreEvaluation:
    evaluation = recsys_fraud.fraud_evaluation_create(score_set=chosen, options=options, enqueue=False)
    assert recsys_fraud.fraud_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


def stored(evaluation: Any) -> dict[str, float | None]:
    return evaluation.metric_values()


def same(core: dict[str, float]) -> dict[str, float | None]:
    return {name: None if value != value else value for name, value in core.items()}


@pytest.mark.django_db
class TestRecommendationUploads:
    def test_it_keeps_the_files_with_their_names_sizes_and_hashes(
        self, recommendations: RecommendationSet
    ) -> None:
        assert recommendations.name == "recs" and recommendations.team.slug == "search"
        assert set(recommendations.files) == {"recs", "interactions", "items", "history"}
        assert recommendations.files["items"]["name"] == "items.csv"
        assert recommendations.files["recs"]["size"] == len(RECSYS["recs"])
        assert Path(recommendations.recs.path).read_text() == RECSYS["recs"]
        # The lists run past the lines read on upload: the counts wait for the first evaluation.
        assert recommendations.num_users is None and RECSYS["recs"].count("\n") > SNIFF_LINES

    def test_it_counts_a_set_read_whole_on_upload(self, team: Team) -> None:
        small = recsys_fraud.recommendation_set_upload(team=team, name="tiny", **recsys_uploads(SMALL))
        assert (small.name, small.num_users, small.num_items, small.depth) == ("tiny", 2, 5, 2)
        assert not small.history and small.stored().keys() == {"recs", "interactions", "items"}

    @pytest.mark.parametrize(
        ("role", "text", "message"),
        [
            ("recs", "user,item,rank\nu1,a,1\nu1,b,first\n", r"^recs.csv:3: "),
            ("recs", "user,item,rank\nu1,a,1\nu1,a,2\n", r"^recs.csv:3: item 'a' appears twice"),
            ("recs", "user,item,rank\nu1,zz,1\n", r"^recs.csv:2: item 'zz' is not in the catalog"),
            ("interactions", "user,item\n", r"^interactions.csv: the file holds no interactions"),
            ("items", "item,category\na,x\na,y\n", r"^items.csv:3: item 'a' appears twice"),
            ("items", "", r"^items.csv: the file is empty"),
        ],
    )
    def test_it_refuses_a_bad_file_naming_it_and_the_line_and_stores_nothing(
        self, team: Team, media_root: Path, role: str, text: str, message: str
    ) -> None:
        before = sorted(media_root.rglob("*.csv"))
        with pytest.raises(UploadError, match=message):
            recsys_fraud.recommendation_set_upload(team=team, **recsys_uploads({**SMALL, role: text}))
        assert not RecommendationSet.objects.exists() and sorted(media_root.rglob("*.csv")) == before

    def test_it_checks_an_items_file_longer_than_the_lines_it_reads_on_its_own(self, team: Team) -> None:
        extra = "".join(f"extra{i},books\n" for i in range(SNIFF_LINES))  # never recommended
        items = RECSYS["items"] + extra + "item0000,books\n"  # the repetition lies beyond the lines read
        kept = recsys_fraud.recommendation_set_upload(team=team, **recsys_uploads({**RECSYS, "items": items}))
        evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=kept, enqueue=False)
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "failed"
        evaluation.refresh_from_db()
        assert evaluation.error == "items.csv:3502: item 'item0000' appears twice (first on line 2)"


@pytest.mark.django_db
class TestRecommendationEvaluations:
    def test_it_stores_every_metric_as_the_core_computes_it(
        self, recommendations: RecommendationSet, tmp_path: Path
    ) -> None:
        evaluation = evaluated_recsys(recommendations)
        paths = written(tmp_path, RECSYS)
        files = read_recsys_files(
            paths["recs"], paths["interactions"], items=paths["items"], history=paths["history"]
        )
        assert stored(evaluation) == pytest.approx(same(evaluate_recommendations(files.data)), abs=1e-12)
        assert len(job_values(evaluation)) == 17
        assert evaluation.summary["n_users"] == 600 and evaluation.summary["popularity_from"] == "history"
        recommendations.refresh_from_db()
        assert (recommendations.num_users, recommendations.num_items, recommendations.depth) == (
            600,
            1500,
            20,
        )

    def test_it_cuts_the_lists_at_k_as_a_separate_evaluation(
        self, recommendations: RecommendationSet, tmp_path: Path
    ) -> None:
        full, top5 = evaluated_recsys(recommendations), evaluated_recsys(recommendations, k=5, head_share=0.5)
        assert full.pk != top5.pk and top5.summary["k"] == 5
        paths = written(tmp_path, RECSYS)
        files = read_recsys_files(
            paths["recs"], paths["interactions"], items=paths["items"], history=paths["history"], k=5
        )
        want = evaluate_recommendations(replace(files.data, head_share=0.5))
        assert stored(top5) == pytest.approx(same(want), abs=1e-12)

    def test_it_scores_at_a_k_longer_than_every_list_as_the_core(self, team: Team, tmp_path: Path) -> None:
        texts = {"recs": "user,item,rank\nu1,a,1\n", "interactions": "user,item\nu1,a\nu1,b\n"}
        chosen = recsys_fraud.recommendation_set_upload(team=team, **recsys_uploads(texts))
        evaluation = evaluated_recsys(chosen, k=5)
        values = stored(evaluation)
        assert evaluation.summary["k"] == 5
        assert values["precision_at_k"] == pytest.approx(0.2, abs=1e-12)
        assert values["ndcg_at_k"] == pytest.approx(0.6131471927654584, abs=1e-12)
        paths = written(tmp_path, texts)
        files = read_recsys_files(paths["recs"], paths["interactions"], k=5)
        assert values == pytest.approx(same(evaluate_recommendations(files.data, k=5)), abs=1e-12)

    def test_it_draws_the_lorenz_curve_whose_area_gives_the_gini(
        self, recommendations: RecommendationSet
    ) -> None:
        evaluation = evaluated_recsys(recommendations)
        lorenz = evaluation.curves["lorenz"]
        assert len(lorenz["items"]) == 201 and lorenz["n_items"] == 1500 and lorenz["n_slots"] == 600 * 20
        assert lorenz["items"][0] == lorenz["exposure"][0] == 0.0 and lorenz["exposure"][-1] == pytest.approx(
            1.0
        )
        area = np.trapezoid(lorenz["exposure"], lorenz["items"])
        assert 1 - 2 * area == pytest.approx(stored(evaluation)["gini"], abs=0.01)  # 201 of 1,501 points
        exposure = np.random.default_rng(0).integers(0, 9, 120)
        exact = lorenz_curve(exposure)  # every point kept: the area gives the Gini exactly
        gini = float((2 * np.arange(1, 121) - 121) @ np.sort(exposure) / (120 * exposure.sum()))
        assert 1 - 2 * np.trapezoid(exact["exposure"], exact["items"]) == pytest.approx(gini, abs=1e-12)

    def test_it_counts_popularity_and_coverage_by_category(self, recommendations: RecommendationSet) -> None:
        curves = evaluated_recsys(recommendations).curves
        histogram, coverage = curves["popularity"], curves["coverage"]
        assert sum(histogram["catalog_items"]) == 1500 and sum(histogram["slots"]) == 12000
        assert histogram["edges"][:4] == [0.0, 1.0, 2.0, 4.0]
        assert coverage["total"]["items"] == 1500 and coverage["total"]["slots"] == 12000
        categories = coverage["categories"]
        assert len(categories) == 15 and coverage["other"] is None
        assert {row["category"] for row in categories} >= {"books", "pets", "fashion"}
        assert sum(row["items"] for row in categories) == 1500
        assert sum(row["recommended"] for row in categories) == coverage["total"]["recommended"]
        assert [row["slots"] for row in categories] == sorted(
            (row["slots"] for row in categories), reverse=True
        )

    def test_it_finds_the_same_evaluation_for_the_same_request_and_stores_once(
        self, recommendations: RecommendationSet, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            first = recsys_fraud.recommendation_evaluation_create(
                recommendation_set=recommendations, options=RecsysOptions(k=10)
            )
            again = recsys_fraud.recommendation_evaluation_create(
                recommendation_set=recommendations, options=RecsysOptions(k=10, head_share=0.8)
            )
        assert first.pk == again.pk
        assert queued.sent == [
            ("monitoring.tasks.recommendation_evaluation_run", (first.pk,), queued.sent[0][2])
        ]
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=first.pk).status == "done"
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=first.pk).status == "finished"
        before = list(MetricValue.objects.order_by("position").values_list("metric", "value"))
        RecommendationEvaluation.objects.filter(pk=first.pk).update(status=JobStatus.PENDING)  # redelivered
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=first.pk).status == "done"
        assert list(MetricValue.objects.order_by("position").values_list("metric", "value")) == before

    def test_it_refuses_options_out_of_range_naming_them(self) -> None:
        for changes, field in [({"k": 0}, "k"), ({"k": 2**31}, "k"), ({"head_share": 1.5}, "head_share"),
                               ({"head_share": 0.0}, "head_share"), ({"complete": "yes"}, "complete")]:  # fmt: skip
            with pytest.raises(recsys_fraud.OptionError, match=f"^{field} must") as refused:
                RecsysOptions(**changes)
            assert refused.value.field == field
        assert recsys_fraud.OptionError is OptionsError
        assert RecsysOptions(k=3.0, head_share=1).k == 3 and RecsysOptions(head_share=1).head_share == 1.0

    def test_it_fails_on_a_bad_line_beyond_the_upload_check_and_runs_again_when_asked(
        self, team: Team, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        broken = RECSYS["recs"] + "user0001,item0002,twenty-one\n"
        kept = recsys_fraud.recommendation_set_upload(team=team, **recsys_uploads({**RECSYS, "recs": broken}))
        evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=kept, enqueue=False)
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "failed"
        evaluation.refresh_from_db()
        assert evaluation.error.startswith("recs.csv:12002: ") and "twenty-one" in evaluation.error
        assert not job_values(evaluation)
        with django_capture_on_commit_callbacks(execute=True):
            again = recsys_fraud.recommendation_evaluation_create(recommendation_set=kept)
        assert again.pk == evaluation.pk and again.status == "pending" and len(queued.sent) == 1


@pytest.mark.django_db
class TestFraudScoreSets:
    def test_it_keeps_the_scores_with_their_columns_and_time_unit(self, scores: FraudScoreSet) -> None:
        assert (scores.name, scores.original_name, scores.time_unit) == ("scores", "scores.csv", "seconds")
        assert scores.columns == ["id", "score", "label", "amount", "entity", "timestamp"]
        assert scores.has_amounts and scores.has_entities and scores.num_rows is None  # 20,000 lines

    def test_it_refuses_a_bad_file_naming_the_line_and_stores_nothing(self, team: Team) -> None:
        cases = {
            "id,score,label\na,0.5,1\nb,high,0\n": r"^bad.csv:3: ",
            "id,score,label\na,0.5,2\n": r"^bad.csv:2: ",
            "id,score,label\n": r"^bad.csv: the file holds no scores",
            "id,score,label,entity\na,0.5,1,e\n": r"^bad.csv:1: missing column 'timestamp'",
        }
        for text, message in cases.items():
            with pytest.raises(UploadError, match=message):
                recsys_fraud.fraud_score_set_upload(team=team, scores=csv_file("bad.csv", text))
        assert not FraudScoreSet.objects.exists()

    def test_it_counts_a_small_file_and_keeps_its_numeric_time(self, team: Team) -> None:
        text = "id,score,label,entity,timestamp\na,0.9,1,e1,10\nb,0.2,0,e1,12\nc,0.4,1,e2,3\n"
        small = recsys_fraud.fraud_score_set_upload(team=team, scores=csv_file("small.csv", text))
        assert (small.num_rows, small.num_frauds, small.time_unit, small.has_amounts) == (3, 2, "", False)


@pytest.mark.django_db
class TestFraudEvaluations:
    def test_it_stores_every_metric_as_the_core_computes_it(
        self, scores: FraudScoreSet, tmp_path: Path
    ) -> None:
        evaluation = evaluated_fraud(scores)
        path = tmp_path / "scores.csv"
        path.write_text(SCORES)
        want = evaluate_scores(read_scores(path), FRAUD_OPTIONS)
        assert stored(evaluation) == pytest.approx(same(want.metrics()), abs=1e-12)
        assert len(job_values(evaluation)) == 16
        summary = evaluation.summary
        assert summary["confusion"] == {
            "tp": want.cost.tp,
            "fp": want.cost.fp,
            "tn": want.cost.tn,
            "fn": want.cost.fn,
        }
        assert summary["operating_threshold"] == want.operating_threshold == stored(evaluation)["threshold"]
        scores.refresh_from_db()
        assert (scores.num_rows, scores.num_frauds) == (20_000, want.curve.n_positive)

    def test_it_keeps_bounded_curves_on_the_cores_curves(self, scores: FraudScoreSet, tmp_path: Path) -> None:
        evaluation = evaluated_fraud(scores)
        path = tmp_path / "scores.csv"
        path.write_text(SCORES)
        examples = read_scores(path)
        curves = evaluation.curves
        fpr, tpr, _ = roc_curve(examples.labels, examples.scores)
        points = set(zip(fpr.tolist(), tpr.tolist(), strict=True))
        roc = curves["roc"]
        assert 50 < len(roc["fpr"]) <= 3 * 200 + 2
        assert set(zip(roc["fpr"], roc["tpr"], strict=True)) <= points
        assert (roc["fpr"][0], roc["tpr"][-1]) == (0.0, 1.0) and roc["threshold"][0] is None  # +inf
        assert len(curves["pr"]["recall"]) <= 2 * 200 + 2 and curves["pr"]["precision"][-1] == 1.0
        cost = curves["cost"]
        assert len(cost["threshold"]) <= 200 + 2
        for threshold, total in list(zip(cost["threshold"], cost["total_cost"], strict=True))[::25]:
            report = cost_at_threshold(
                examples.labels, examples.scores, threshold=threshold, fp_cost=5.0, fn_cost=examples.amounts
            )
            assert total == pytest.approx(report.total_cost, rel=1e-12)
        operating = curves["operating"]
        assert min(cost["total_cost"]) <= operating["total_cost"] == stored(evaluation)["total_cost"]
        assert operating["fpr"] == stored(evaluation)["realised_fpr"]
        assert operating["tpr"] == stored(evaluation)["detection_rate"]

    def test_it_counts_the_times_to_detection(self, scores: FraudScoreSet) -> None:
        evaluation = evaluated_fraud(scores)
        ttd = evaluation.curves["ttd"]
        assert sum(ttd["counts"]) == ttd["n_detected"] == evaluation.summary["n_entities_detected"]
        assert ttd["n_anomalous"] - ttd["n_detected"] == ttd["n_undetected"] == len(ttd["undetected"])
        assert ttd["edges"][0] == 0.0 and len(ttd["edges"]) == len(ttd["counts"]) + 1
        assert ttd["n_detected"] / ttd["n_anomalous"] == stored(evaluation)["entity_detection_rate"]

    def test_it_finds_the_same_evaluation_for_the_same_options_only(self, scores: FraudScoreSet) -> None:
        a = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS, enqueue=False)
        b = recsys_fraud.fraud_evaluation_create(
            score_set=scores, options=replace(FRAUD_OPTIONS), enqueue=False
        )
        c = recsys_fraud.fraud_evaluation_create(
            score_set=scores, options=replace(FRAUD_OPTIONS, threshold=0.5), enqueue=False
        )
        assert a.pk == b.pk != c.pk and c.threshold == 0.5 and c.budget == 200
        done = evaluated_fraud(scores, replace(FRAUD_OPTIONS, threshold=0.5))
        assert done.pk == c.pk and done.summary["operating_threshold"] == 0.5
        assert done.curves["operating"]["threshold"] == 0.5

    def test_it_refuses_options_out_of_range_naming_them(self) -> None:
        for changes, field in [
            ({"target_fpr": 1.5}, "target_fpr"),
            ({"fp_cost": -1.0}, "fp_cost"),
            ({"fn_cost": float("inf")}, "fn_cost"),
            ({"threshold": float("nan")}, "threshold"),
            ({"budget": -3}, "budget"),
        ]:
            with pytest.raises(recsys_fraud.OptionError, match=f"^{field} must") as refused:
                FraudOptions(**changes)
            assert refused.value.field == field

    def test_it_flags_nothing_when_the_target_catches_no_fraud_and_says_so(self, team: Team) -> None:
        rows = "".join(f"t{i},{float(s)!r},{int(i == 9)}\n" for i, s in enumerate(np.linspace(0.9, 0.1, 10)))
        ten = recsys_fraud.fraud_score_set_upload(
            team=team, scores=csv_file("ten.csv", "id,score,label\n" + rows)
        )
        evaluation = evaluated_fraud(ten, FraudOptions(target_fpr=0.25))
        assert stored(evaluation)["total_cost"] == 1.0 == evaluation.summary["flag_nothing_cost"]
        assert (
            evaluation.summary["confusion"]["fp"] == 0
            and evaluation.summary["operating_rule"] == "flag_nothing"
        )
        assert "catches a fraud" in evaluation.summary["operating_note"]
        assert evaluation.curves["operating"]["note"] == evaluation.summary["operating_note"]
        legit = recsys_fraud.fraud_score_set_upload(
            team=team, scores=csv_file("legit.csv", "id,score,label\na,0.9,0\nb,0.5,0\nc,0.1,0\n")
        )
        assert stored(evaluated_fraud(legit, FraudOptions(target_fpr=0.5)))["total_cost"] == 0.0

    def test_it_says_which_metrics_lack_an_input(self, team: Team) -> None:
        plain = recsys_fraud.fraud_score_set_upload(
            team=team, scores=csv_file("plain.csv", "id,score,label\na,0.9,1\nb,0.1,0\nc,0.5,0\n")
        )
        evaluation = evaluated_fraud(plain, FraudOptions())
        from monitoring.recsys_fraud.selectors import metric_lines

        missing = {line.name: line.missing for line in metric_lines(evaluation) if line.value is None}
        assert missing["precision_at_budget"] == "needs an alert budget"
        assert missing["median_ttd"] == "needs entity and timestamp columns"
        assert evaluation.curves["ttd"] is None


def wait_for(predicate: Any, timeout: float = 90.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_evaluates_both_kinds_in_a_real_worker_and_stores_the_results_once(
    celery_worker_process: WorkerProcess,
    recommendations: RecommendationSet,
    scores: FraudScoreSet,
    tmp_path: Path,
) -> None:
    recsys = recsys_fraud.recommendation_evaluation_create(recommendation_set=recommendations)
    fraud = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS)
    assert wait_for(
        lambda: {RecommendationEvaluation.objects.get(pk=recsys.pk).status,
                 FraudScoreEvaluation.objects.get(pk=fraud.pk).status} == {"done"}
    ), celery_worker_process.log()  # fmt: skip
    paths = written(tmp_path, RECSYS)
    files = read_recsys_files(
        paths["recs"], paths["interactions"], items=paths["items"], history=paths["history"]
    )
    assert stored(RecommendationEvaluation.objects.get(pk=recsys.pk)) == pytest.approx(
        same(evaluate_recommendations(files.data)), abs=1e-12
    )
    path = tmp_path / "scores.csv"
    path.write_text(SCORES)
    want = evaluate_scores(read_scores(path), FRAUD_OPTIONS).metrics()
    assert stored(FraudScoreEvaluation.objects.get(pk=fraud.pk)) == pytest.approx(same(want), abs=1e-12)
    assert MetricValue.objects.filter(family="recsys").count() == 17
    assert MetricValue.objects.filter(family="fraud").count() == 16
