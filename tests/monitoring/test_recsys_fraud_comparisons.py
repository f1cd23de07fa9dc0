"""Comparing two evaluations of a kind: the comparison jobs' stored statistics against scipy and
scikit-learn on the same paired data, the refusal of files that do not score the same examples, the
pages (overlaid charts from the stored curves, numbers, CSV), the "compare with…" picker, the API, the
permissions and the query-count ceiling of an evaluation page's list of comparisons."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient
from scipy import stats as scipy_stats
from sklearn.metrics import roc_auc_score

from evalcore.recsys import RecsysStats, per_user_values, read_recsys_files
from evalplatform.models import Team
from monitoring.demo import demo_recsys_texts
from monitoring.models import (
    FraudComparison,
    FraudScoreEvaluation,
    RecommendationComparison,
    RecommendationEvaluation,
)
from monitoring.recsys_fraud import comparisons
from monitoring.recsys_fraud import services as recsys_fraud
from tests.conftest import QueuedTasks

N = 1_500


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def two_models(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = (rng.random(N) < 0.1).astype(int)
    shared = rng.normal(size=N)
    a = np.round(shared + 1.4 * labels + rng.normal(scale=0.7, size=N), 3)
    b = np.round(shared + 0.9 * labels + rng.normal(scale=0.7, size=N), 3)
    return labels, a, b


def scores_text(labels: np.ndarray, scores: np.ndarray, order: np.ndarray | None = None) -> str:
    rows = np.arange(N) if order is None else order
    return "label,score,id\n" + "".join(f"{labels[i]},{float(scores[i])!r},t{i:05d}\n" for i in rows)


def evaluated_scores(team: Team, name: str, text: str, **options: Any) -> FraudScoreEvaluation:
    uploaded = recsys_fraud.fraud_score_set_upload(team=team, name=name, scores=csv_file(f"{name}.csv", text))
    evaluation = recsys_fraud.fraud_evaluation_create(score_set=uploaded, enqueue=False)
    assert recsys_fraud.fraud_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


@pytest.fixture
def fraud_pair(team: Team) -> tuple[FraudScoreEvaluation, FraudScoreEvaluation]:
    labels, a, b = two_models()
    shuffled = np.random.default_rng(1).permutation(N)  # B lists the same transactions in another order
    return (
        evaluated_scores(team, "gradient-boosting", scores_text(labels, a)),
        evaluated_scores(team, "rules", scores_text(labels, b, shuffled)),
    )


def reversed_recs(text: str) -> str:
    """The same lists with each user's ranks reversed: same items, another order."""
    lines = text.strip().split("\n")
    rows = [line.split(",") for line in lines[1:]]
    depth: dict[str, int] = {}
    for user, _, rank in rows:
        depth[user] = max(depth.get(user, 0), int(rank))
    return lines[0] + "\n" + "".join(f"{u},{i},{depth[u] + 1 - int(r)}\n" for u, i, r in rows)


RECSYS = demo_recsys_texts()


def evaluated_recs(team: Team, name: str, texts: dict[str, str]) -> RecommendationEvaluation:
    files = {role: csv_file(f"{role}.csv", text) for role, text in texts.items()}
    uploaded = recsys_fraud.recommendation_set_upload(team=team, name=name, **files)
    evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=uploaded, enqueue=False)
    assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


@pytest.fixture
def recs_pair(team: Team) -> tuple[RecommendationEvaluation, RecommendationEvaluation]:
    return (
        evaluated_recs(team, "popular", RECSYS),
        evaluated_recs(team, "popular-reversed", {**RECSYS, "recs": reversed_recs(RECSYS["recs"])}),
    )


def run_fraud(a: FraudScoreEvaluation, b: FraudScoreEvaluation) -> FraudComparison:
    comparison = comparisons.fraud_comparison_create(a=a, b=b, enqueue=False)
    comparisons.fraud_comparison_run(comparison_id=comparison.pk)
    comparison.refresh_from_db()
    return comparison


def run_recs(a: RecommendationEvaluation, b: RecommendationEvaluation) -> RecommendationComparison:
    comparison = comparisons.recommendation_comparison_create(a=a, b=b, enqueue=False)
    comparisons.recommendation_comparison_run(comparison_id=comparison.pk)
    comparison.refresh_from_db()
    return comparison


def figure(page: str, name: str) -> dict[str, Any]:
    found = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', page, re.S)
    assert found, f"no figure {name}"
    return json.loads(found[1])  # type: ignore[no-any-return]


def csv_rows(response: Any) -> list[list[str]]:
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(response.content.decode())))


@pytest.mark.django_db
class TestFraudComparisonJob:
    def test_it_stores_delong_and_the_bootstrap_on_the_examples_paired_by_id(self, fraud_pair: Any) -> None:
        comparison = run_fraud(*fraud_pair)
        assert comparison.status == "done", comparison.error
        labels, a, b = two_models()
        result = comparison.result
        assert (result["n"], result["n_positive"]) == (N, int(labels.sum()))
        delong = result["delong"]
        assert delong["auc_a"] == pytest.approx(roc_auc_score(labels, a), abs=1e-12)
        assert delong["auc_b"] == pytest.approx(roc_auc_score(labels, b), abs=1e-12)
        assert delong["p_value"] == pytest.approx(2 * scipy_stats.norm.sf(abs(delong["z"])), rel=1e-9)
        assert delong["z"] > 2  # A is the better model by construction
        interval = result["bootstrap"]
        assert interval["n_resamples"] == comparison.n_resamples == 2_000
        assert interval["low"] < delong["difference"] < interval["high"]
        assert interval["std_error"] == pytest.approx(delong["std_error"], rel=0.2)
        assert result["options_differ"] == []

    def test_it_refuses_files_that_do_not_score_the_same_transactions(
        self, team: Team, fraud_pair: Any
    ) -> None:
        labels, _, b = two_models()
        fewer = scores_text(labels, b, np.arange(N - 3))
        other = evaluated_scores(team, "partial", fewer)
        comparison = run_fraud(fraud_pair[0], other)
        assert comparison.status == "failed"
        assert "3 ids only in gradient-boosting ('t01497', 't01498', 't01499')" in comparison.error
        assert "must score the same examples" in comparison.error

    def test_it_is_one_comparison_per_pair_and_runs_once(self, fraud_pair: Any) -> None:
        comparison = run_fraud(*fraud_pair)
        again = comparisons.fraud_comparison_create(a=fraud_pair[0], b=fraud_pair[1], enqueue=False)
        assert again.pk == comparison.pk and again.status == "done"
        assert comparisons.fraud_comparison_run(comparison_id=comparison.pk).status == "finished"
        with pytest.raises(comparisons.ComparisonRefused):
            comparisons.fraud_comparison_create(a=fraud_pair[0], b=fraud_pair[0], enqueue=False)


@pytest.mark.django_db
class TestRecommendationComparisonJob:
    def test_it_stores_paired_tests_equal_to_scipys_on_the_users_both_sets_count(
        self, recs_pair: Any, media_root: Any
    ) -> None:
        comparison = run_recs(*recs_pair)
        assert comparison.status == "done", comparison.error
        result = comparison.result
        by_metric = {row["metric"]: row for row in result["metrics"]}
        assert {"hit_rate", "ndcg_at_k", "arp", "intra_list_diversity"} <= set(by_metric)
        values = []
        for evaluation in recs_pair:
            stored = {role: f.path for role, f in evaluation.recommendation_set.stored().items()}
            files = read_recsys_files(stored["recs"], stored["interactions"], items=stored["items"],
                                      history=stored["history"])  # fmt: skip
            values.append(per_user_values(RecsysStats(files.data)))
        # The same users in the same order in both (the reversed file keeps the users' order).
        first, second = values[0]["ndcg_at_k"], values[1]["ndcg_at_k"]
        both = ~(np.isnan(first) | np.isnan(second))
        row = by_metric["ndcg_at_k"]
        assert row["n"] == int(both.sum())
        assert row["mean_a"] == pytest.approx(recs_pair[0].metric_values()["ndcg_at_k"])
        reference = scipy_stats.ttest_rel(first[both], second[both])
        assert (row["t"], row["p_t"]) == (pytest.approx(reference.statistic), pytest.approx(reference.pvalue))
        assert row["p_wilcoxon"] == pytest.approx(scipy_stats.wilcoxon(first[both], second[both]).pvalue)
        assert row["cohens_dz"] == pytest.approx(
            np.mean(first[both] - second[both]) / np.std(first[both] - second[both], ddof=1)
        )
        assert row["ci_low"] < row["difference"] < row["ci_high"] and row["difference"] > 0
        # Reversing the lists changes no list measure: no difference, no evidence.
        assert by_metric["arp"]["difference"] == pytest.approx(0.0, abs=1e-12)
        assert by_metric["arp"]["p_wilcoxon"] == 1.0
        assert row["p_t_holm"] >= row["p_t"]
        assert result["users_common"] == result["users_a"] == result["users_b"]


@pytest.mark.django_db
class TestComparisonPages:
    def test_the_picker_starts_a_comparison_and_its_page_overlays_both_curves(
        self,
        client: Client,
        theo: User,
        fraud_pair: Any,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        a, b = fraud_pair
        client.force_login(theo)
        page = client.get(a.get_absolute_url()).content.decode()
        assert 'id="compare-form"' in page and f'<option value="{b.pk}">rules: evaluation #{b.pk}' in page
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/teams/search/fraud-scores/evaluations/{a.pk}/compare/", {"other": b.pk})
        comparison = FraudComparison.objects.get()
        assert response.status_code == 302 and response["Location"] == comparison.get_absolute_url()
        assert queued.names() == ["monitoring.tasks.fraud_comparison_run"]
        comparisons.fraud_comparison_run(comparison_id=comparison.pk)
        comparison.refresh_from_db()
        page = client.get(comparison.get_absolute_url()).content.decode()
        roc = figure(page, "figure-roc")
        lines = [
            trace
            for trace in roc["data"]
            if trace.get("mode") == "lines" and trace["name"].startswith(("A:", "B:"))
        ]
        assert [trace["name"] for trace in lines] == ["A: gradient-boosting", "B: rules"]
        assert lines[0]["x"] == a.curves["roc"]["fpr"] and lines[1]["y"] == b.curves["roc"]["tpr"]
        assert {"figure-pr", "figure-cost"} <= set(re.findall(r'<script id="(figure-[a-z]+)"', page))
        assert f"{comparison.result['delong']['auc_a']:.4f}" in page and 'id="stat-z"' in page
        rows = csv_rows(client.get(f"/teams/search/fraud-scores/comparisons/{comparison.pk}/roc.csv"))
        assert rows[0] == ["model", "fpr", "tpr", "threshold"]
        assert len(rows) == 1 + len(a.curves["roc"]["fpr"]) + len(b.curves["roc"]["fpr"])
        tests = csv_rows(client.get(f"/teams/search/fraud-scores/comparisons/{comparison.pk}/tests.csv"))
        assert float(tests[1][tests[0].index("z")]) == pytest.approx(comparison.result["delong"]["z"])
        listed = client.get(a.get_absolute_url()).content.decode()
        assert f'href="{comparison.get_absolute_url()}"' in listed

    def test_the_picker_says_what_is_wrong_beside_the_field(
        self, client: Client, theo: User, fraud_pair: Any
    ) -> None:
        client.force_login(theo)
        response = client.post(
            f"/teams/search/fraud-scores/evaluations/{fraud_pair[0].pk}/compare/", {"other": fraud_pair[0].pk}
        )
        assert response.status_code == 400
        assert "Select a valid choice" in response.content.decode() and not FraudComparison.objects.exists()

    def test_it_evaluates_another_set_with_the_same_options_and_compares_it(
        self,
        client: Client,
        theo: User,
        team: Team,
        fraud_pair: Any,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        a = fraud_pair[0]
        labels, _, b = two_models()
        fresh = recsys_fraud.fraud_score_set_upload(
            team=team, name="fresh", scores=csv_file("f.csv", scores_text(labels, b))
        )
        client.force_login(theo)
        assert (
            f'<option value="{fresh.pk}">fresh</option>' in client.get(a.get_absolute_url()).content.decode()
        )
        url = f"/teams/search/fraud-scores/evaluations/{a.pk}/compare/"
        neither = client.post(url, {})
        assert neither.status_code == 400 and "one of the two" in neither.content.decode()
        both = client.post(url, {"other": fraud_pair[1].pk, "other_set": fresh.pk})
        assert both.status_code == 400 and not FraudComparison.objects.exists()
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url, {"other_set": fresh.pk})
        comparison = FraudComparison.objects.get()
        assert response.status_code == 302 and comparison.evaluation_b.score_set == fresh
        assert comparison.evaluation_b.options() == a.options()
        assert sorted(queued.names()) == [
            "monitoring.tasks.fraud_comparison_run",
            "monitoring.tasks.fraud_evaluation_run",
        ]

    def test_a_viewer_reads_but_cannot_start_a_comparison(
        self, client: Client, vera: User, fraud_pair: Any
    ) -> None:
        comparison = run_fraud(*fraud_pair)
        client.force_login(vera)
        assert 'id="compare-form"' not in client.get(fraud_pair[0].get_absolute_url()).content.decode()
        response = client.post(
            f"/teams/search/fraud-scores/evaluations/{fraud_pair[0].pk}/compare/", {"other": fraud_pair[1].pk}
        )
        assert response.status_code == 403
        assert client.get(comparison.get_absolute_url()).status_code == 200

    def test_the_recommendation_comparison_page_overlays_lorenz_popularity_and_coverage(
        self, client: Client, theo: User, recs_pair: Any
    ) -> None:
        comparison = run_recs(*recs_pair)
        client.force_login(theo)
        page = client.get(comparison.get_absolute_url()).content.decode()
        lorenz = figure(page, "figure-lorenz")
        assert [t["name"] for t in lorenz["data"]] == ["equal exposure", "A: popular", "B: popular-reversed"]
        coverage = figure(page, "figure-coverage")
        assert (
            len(coverage["data"]) == 2
            and coverage["data"][0]["y"][0] == recs_pair[0].curves["coverage"]["total"]["coverage"]
        )
        assert 'id="figure-popularity"' in page and 'id="test-ndcg_at_k"' in page
        rows = csv_rows(client.get(f"/teams/search/recommendations/comparisons/{comparison.pk}/tests.csv"))
        assert rows[0][:4] == ["metric", "label", "direction", "n"] and len(rows) == 1 + len(
            comparison.result["metrics"]
        )
        assert (
            client.get(f"/teams/search/recommendations/comparisons/{comparison.pk}/nope.csv").status_code
            == 404
        )

    def test_the_recommendation_picker_starts_a_comparison(
        self,
        client: Client,
        theo: User,
        recs_pair: Any,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        a, b = recs_pair
        client.force_login(theo)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                f"/teams/search/recommendations/evaluations/{a.pk}/compare/", {"other": b.pk}
            )
        comparison = RecommendationComparison.objects.get()
        assert (comparison.evaluation_a, comparison.evaluation_b) == (a, b)
        assert response.status_code == 302 and response["Location"] == comparison.get_absolute_url()
        assert queued.names() == ["monitoring.tasks.recommendation_comparison_run"]
        page = client.get(comparison.get_absolute_url()).content.decode()
        assert 'data-job-url="/teams/search/jobs/recommendation-comparison/' in page

    def test_an_evaluation_page_lists_its_comparisons_in_a_bounded_number_of_queries(
        self, client: Client, theo: User, team: Team, fraud_pair: Any
    ) -> None:
        a = fraud_pair[0]
        client.force_login(theo)
        labels, _, b = two_models()

        def count() -> int:
            with CaptureQueriesContext(connection) as queries:
                assert client.get(a.get_absolute_url()).status_code == 200
            return len(queries)

        comparisons.fraud_comparison_create(a=a, b=fraud_pair[1], enqueue=False)
        few = count()
        for i in range(4):
            other = recsys_fraud.fraud_score_set_upload(
                team=team, name=f"m{i}", scores=csv_file("s.csv", scores_text(labels, b))
            )
            evaluation = recsys_fraud.fraud_evaluation_create(score_set=other, enqueue=False)
            comparisons.fraud_comparison_create(a=evaluation, b=a, enqueue=False)
        assert count() <= few and few <= 30


@pytest.mark.django_db
class TestComparisonApi:
    def test_it_starts_and_reads_a_comparison(
        self, theo: User, fraud_pair: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        api = APIClient()
        api.force_authenticate(theo)
        a, b = fraud_pair
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(
                "/api/teams/search/fraud-comparisons/",
                {"evaluation_a": a.pk, "evaluation_b": b.pk},
                format="json",
            )
        assert response.status_code == 202, response.content
        body = response.json()
        assert (body["evaluation_a"], body["evaluation_b"], body["status"]) == (a.pk, b.pk, "pending")
        comparisons.fraud_comparison_run(comparison_id=body["id"])
        read = api.get(body["url"]).json()
        assert (
            read["status"] == "done"
            and read["result"]["delong"]["z"] == FraudComparison.objects.get().result["delong"]["z"]
        )
        again = api.post(
            "/api/teams/search/fraud-comparisons/",
            {"evaluation_a": a.pk, "evaluation_b": b.pk},
            format="json",
        )
        assert again.status_code == 200 and again.json()["id"] == body["id"]
        assert api.get("/api/teams/search/fraud-comparisons/").json()["count"] == 1

    def test_it_refuses_the_same_evaluation_twice_and_another_kinds(
        self, theo: User, fraud_pair: Any, recs_pair: Any
    ) -> None:
        api = APIClient()
        api.force_authenticate(theo)
        a = fraud_pair[0]
        same = api.post(
            "/api/teams/search/fraud-comparisons/",
            {"evaluation_a": a.pk, "evaluation_b": a.pk},
            format="json",
        )
        assert same.status_code == 400 and "evaluation_b" in same.json()
        wrong = api.post("/api/teams/search/recommendation-comparisons/",
                         {"evaluation_a": recs_pair[0].pk, "evaluation_b": 987654}, format="json")  # fmt: skip
        assert wrong.status_code == 400 and "The team has no recommendation evaluation 987654" in str(
            wrong.json()
        )
        neither = api.post("/api/teams/search/fraud-comparisons/", {"evaluation_a": a.pk}, format="json")
        assert neither.status_code == 400 and "one of the two" in str(neither.json())

    def test_it_compares_with_another_set_evaluated_with_the_same_options(
        self, theo: User, team: Team, recs_pair: Any, queued: QueuedTasks
    ) -> None:
        api = APIClient()
        api.force_authenticate(theo)
        a = recs_pair[0]
        other_set = recs_pair[1].recommendation_set
        recs_pair[1].delete()  # the set has no evaluation any more: the comparison starts one
        response = api.post("/api/teams/search/recommendation-comparisons/",
                            {"evaluation_a": a.pk, "recommendation_set_b": other_set.pk}, format="json")  # fmt: skip
        assert response.status_code == 202, response.content
        b = RecommendationEvaluation.objects.get(recommendation_set=other_set)
        assert (
            response.json()["evaluation_b"] == b.pk and b.options() == a.options() and b.status == "pending"
        )
        own = api.post("/api/teams/search/recommendation-comparisons/",
                       {"evaluation_a": a.pk, "recommendation_set_b": a.recommendation_set_id}, format="json")  # fmt: skip
        assert own.status_code == 400 and "compared with itself" in str(own.json()["recommendation_set_b"])

    def test_it_lists_comparisons_in_a_bounded_number_of_queries(
        self, theo: User, team: Team, fraud_pair: Any
    ) -> None:
        api = APIClient()
        api.force_authenticate(theo)
        a = fraud_pair[0]
        labels, _, b = two_models()

        def count() -> int:
            with CaptureQueriesContext(connection) as queries:
                assert api.get("/api/teams/search/fraud-comparisons/").status_code == 200
            return len(queries)

        comparisons.fraud_comparison_create(a=a, b=fraud_pair[1], enqueue=False)
        few = count()
        for i in range(4):
            text = scores_text(labels, b)
            other = recsys_fraud.fraud_score_set_upload(
                team=team, name=f"m{i}", scores=csv_file("s.csv", text)
            )
            comparisons.fraud_comparison_with_set(a=a, score_set=other, enqueue=False)
        assert count() <= few <= 8
        assert api.get("/api/teams/search/fraud-comparisons/").json()["count"] == 5
