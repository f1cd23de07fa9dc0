"""The recommendation and fraud pages: upload forms, a set's page with its evaluations and the form that
starts one, the two dashboards (charts from the stored curves, numbers beside them, CSV equal to the stored
rows), the team page's links; permissions and query-count ceilings."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from evalcore.fraud import FraudOptions
from evalcore.recsys import RecsysOptions
from evalplatform.models import Team
from monitoring.demo import FRAUD_OPTIONS, demo_fraud_text, demo_recsys_texts
from monitoring.models import (
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
)
from monitoring.recsys_fraud import services as recsys_fraud
from tests.conftest import QueuedTasks

RECSYS = demo_recsys_texts()
SCORES = demo_fraud_text()


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


def figure(page: str, name: str) -> dict[str, Any]:
    found = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', page, re.S)
    assert found, f"no figure {name}"
    return json.loads(found[1])  # type: ignore[no-any-return]


def csv_rows(response: Any) -> list[list[str]]:
    assert response.status_code == 200 and response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(response.content.decode())))


def cell(value: Any) -> str:
    """A stored value as the CSV writes it (shortest round-trip floats, None empty)."""
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


@pytest.fixture
def recommendations(team: Team, theo: User) -> RecommendationSet:
    files = {role: csv_file(f"{role}.csv", text) for role, text in RECSYS.items()}
    return recsys_fraud.recommendation_set_upload(team=team, name="popular", uploaded_by=theo, **files)


@pytest.fixture
def scores(team: Team, theo: User) -> FraudScoreSet:
    return recsys_fraud.fraud_score_set_upload(
        team=team, name="card-model", scores=csv_file("scores.csv", SCORES), uploaded_by=theo
    )


@pytest.fixture
def recsys_done(recommendations: RecommendationSet) -> RecommendationEvaluation:
    evaluation = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recommendations, enqueue=False
    )
    assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


@pytest.fixture
def fraud_done(scores: FraudScoreSet) -> FraudScoreEvaluation:
    evaluation = recsys_fraud.fraud_evaluation_create(score_set=scores, options=FRAUD_OPTIONS, enqueue=False)
    assert recsys_fraud.fraud_evaluation_run(evaluation_id=evaluation.pk).status == "done"
    evaluation.refresh_from_db()
    return evaluation


@pytest.mark.django_db
class TestUploadForms:
    def test_it_uploads_a_recommendation_set_and_queues_its_evaluation(
        self,
        client: Client,
        team: Team,
        theo: User,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        logged_in(client, theo)
        assert client.get("/teams/search/recommendations/new/").status_code == 200
        files = {role: csv_file(f"{role}.csv", text) for role, text in RECSYS.items()}
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/teams/search/recommendations/new/",
                {**files, "name": "from the form", "evaluate": "on", "k": "10", "head_share": "0.8"},
            )
        evaluation = RecommendationEvaluation.objects.get()
        assert response.status_code == 302 and response["Location"] == evaluation.get_absolute_url()
        assert (evaluation.recommendation_set.name, evaluation.k) == ("from the form", 10)
        assert queued.names() == ["monitoring.tasks.recommendation_evaluation_run"]
        page = client.get(response["Location"]).content.decode()
        assert "Queued" in page or "Evaluation queued" in page
        assert f'data-job-url="/teams/search/jobs/recommendation/{evaluation.pk}.json"' in page
        state = client.get(f"/teams/search/jobs/recommendation/{evaluation.pk}.json").json()
        assert state["status"] == "pending"

    def test_it_uploads_fraud_scores_without_evaluating_them(
        self, client: Client, team: Team, theo: User
    ) -> None:
        logged_in(client, theo)
        response = client.post(
            "/teams/search/fraud-scores/new/",
            {"scores": csv_file("scores.csv", SCORES), "target_fpr": "0.01", "fp_cost": "1", "fn_cost": "1"},
        )
        uploaded = FraudScoreSet.objects.get()
        assert response.status_code == 302 and response["Location"] == uploaded.get_absolute_url()
        assert uploaded.name == "scores" and not FraudScoreEvaluation.objects.exists()

    def test_it_refuses_a_bad_file_on_the_form_naming_the_line(
        self, client: Client, team: Team, theo: User
    ) -> None:
        logged_in(client, theo)
        bad = {**RECSYS, "recs": "user,item,rank\nuser0001,item0001,1\nuser0001,item0002,one\n"}
        files = {role: csv_file(f"{role}.csv", text) for role, text in bad.items()}
        response = client.post("/teams/search/recommendations/new/", {**files, "head_share": "0.8"})
        assert response.status_code == 400
        assert "recs.csv:3:" in response.content.decode() and not RecommendationSet.objects.exists()
        response = client.post(
            "/teams/search/fraud-scores/new/",
            {"scores": csv_file("s.csv", "id,score,label\na,0.5,maybe\n"), "target_fpr": "0.01", "fp_cost": "1",
             "fn_cost": "1"},
        )  # fmt: skip
        assert response.status_code == 400 and "s.csv:2:" in response.content.decode()

    def test_it_lets_only_editors_upload_and_evaluate(
        self,
        client: Client,
        vera: User,
        otto: User,
        recommendations: RecommendationSet,
        scores: FraudScoreSet,
    ) -> None:
        logged_in(client, vera)
        assert client.get("/teams/search/recommendations/new/").status_code == 403
        assert client.get("/teams/search/fraud-scores/new/").status_code == 403
        assert (
            client.post(f"/teams/search/recommendations/{recommendations.pk}/evaluate/", {}).status_code
            == 403
        )
        assert client.post(f"/teams/search/fraud-scores/{scores.pk}/evaluate/", {}).status_code == 403
        page = client.get(f"/teams/search/recommendations/{recommendations.pk}/").content.decode()
        assert 'id="evaluate-form"' not in page
        logged_in(client, otto)
        assert client.get(f"/teams/search/recommendations/{recommendations.pk}/").status_code == 404
        assert client.get(f"/teams/search/fraud-scores/{scores.pk}/").status_code == 404
        assert client.get("/teams/search/recommendations/new/").status_code == 404


@pytest.mark.django_db
class TestSetPages:
    def test_it_starts_an_evaluation_from_the_set_page_once(
        self, client: Client, theo: User, scores: FraudScoreSet, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        logged_in(client, theo)
        page = client.get(f"/teams/search/fraud-scores/{scores.pk}/").content.decode()
        assert 'id="evaluate-form"' in page and "Not evaluated yet." in page
        body = {"target_fpr": "0.02", "fp_cost": "5", "fn_cost": "1", "budget": "100", "threshold": ""}
        with django_capture_on_commit_callbacks(execute=True):
            first = client.post(f"/teams/search/fraud-scores/{scores.pk}/evaluate/", body)
            again = client.post(f"/teams/search/fraud-scores/{scores.pk}/evaluate/", body)
        evaluation = FraudScoreEvaluation.objects.get()
        assert first["Location"] == again["Location"] == evaluation.get_absolute_url()
        assert (evaluation.target_fpr, evaluation.budget, evaluation.threshold) == (0.02, 100, None)
        assert len(queued.sent) == 1

    def test_it_refuses_options_out_of_range_naming_the_field(
        self, client: Client, theo: User, recommendations: RecommendationSet
    ) -> None:
        logged_in(client, theo)
        url = f"/teams/search/recommendations/{recommendations.pk}/evaluate/"
        response = client.post(url, {"k": "0", "head_share": "1.5"})
        assert response.status_code == 400
        errors = response.context["form"].errors
        assert set(errors) == {"k", "head_share"} and not RecommendationEvaluation.objects.exists()

    def test_it_lists_the_sets_evaluations_with_their_headline_metrics(
        self, client: Client, vera: User, recsys_done: RecommendationEvaluation
    ) -> None:
        page = logged_in(client, vera).get(recsys_done.recommendation_set.get_absolute_url()).content.decode()
        assert f'href="{recsys_done.get_absolute_url()}"' in page and "Catalog coverage" in page
        hit_rate = recsys_done.metric_values()["hit_rate"]
        assert f"{hit_rate:.4f}".rstrip("0") in page
        assert 'id="download-recs"' in page and "history.csv" in page

    def test_it_reads_a_set_with_many_evaluations_in_a_fixed_number_of_queries(
        self,
        client: Client,
        vera: User,
        recommendations: RecommendationSet,
        django_assert_max_num_queries: Any,
    ) -> None:
        logged_in(client, vera)
        url = recommendations.get_absolute_url()
        recsys_fraud.recommendation_evaluation_create(recommendation_set=recommendations, enqueue=False)
        with django_assert_max_num_queries(8) as few:
            client.get(url)
        for k in range(1, 12):
            recsys_fraud.recommendation_evaluation_create(
                recommendation_set=recommendations, options=RecsysOptions(k=k), enqueue=False
            )
        with django_assert_max_num_queries(len(few.captured_queries)):
            page = client.get(url).content.decode()
        assert page.count('class="job"') == 12


@pytest.mark.django_db
class TestRecommendationDashboard:
    def test_it_draws_the_lorenz_curve_and_the_popularity_histogram_with_their_numbers(
        self, client: Client, vera: User, recsys_done: RecommendationEvaluation
    ) -> None:
        response = logged_in(client, vera).get(recsys_done.get_absolute_url())
        page = response.content.decode()
        assert response.status_code == 200 and "/static/evalplatform/charts.js" in page
        lorenz = figure(page, "figure-lorenz")
        assert lorenz["data"][1]["x"] == recsys_done.curves["lorenz"]["items"]
        gini = recsys_done.metric_values()["gini"]
        assert f"Gini {gini:.3f}" in lorenz["layout"]["title"]["text"]
        popularity = figure(page, "figure-popularity")
        assert [trace["name"] for trace in popularity["data"]] == ["catalog items", "recommended slots"]
        assert page.count('<tr><th scope="row">') >= len(recsys_done.curves["popularity"]["edges"]) - 1
        assert 'id="coverage-table"' in page and "books" in page and "(all items)" in page
        assert "Gini of exposure" in page and "Popularity bias (ARP ratio)" in page  # the registry's labels

    def test_it_serves_every_table_as_csv_equal_to_the_stored_rows(
        self, client: Client, vera: User, recsys_done: RecommendationEvaluation
    ) -> None:
        logged_in(client, vera)
        base = recsys_done.get_absolute_url()
        curves = recsys_done.curves
        lorenz = csv_rows(client.get(base + "lorenz.csv"))
        assert lorenz[0] == ["items", "exposure"]
        assert lorenz[1:] == [
            [cell(x), cell(y)]
            for x, y in zip(curves["lorenz"]["items"], curves["lorenz"]["exposure"], strict=True)
        ]
        histogram = curves["popularity"]
        popularity = csv_rows(client.get(base + "popularity.csv"))
        assert [row[2] for row in popularity[1:]] == [str(count) for count in histogram["catalog_items"]]
        assert [row[4] for row in popularity[1:]] == [str(count) for count in histogram["slots"]]
        coverage = csv_rows(client.get(base + "coverage.csv"))
        assert coverage[1][:3] == ["(all items)", "1500", str(curves["coverage"]["total"]["recommended"])]
        assert [row[0] for row in coverage[2:]] == [
            row["category"] for row in curves["coverage"]["categories"]
        ]
        metrics = csv_rows(client.get(base + "metrics.csv"))
        stored = recsys_done.metric_values()
        assert {row[0]: row[2] for row in metrics[1:]} == {
            name: cell(value) for name, value in stored.items()
        }
        assert client.get(base + "roc.csv").status_code == 404  # a fraud table

    def test_it_shows_a_failed_evaluation_with_its_reason_and_no_charts(
        self, client: Client, vera: User, team: Team
    ) -> None:
        files = {role: csv_file(f"{role}.csv", text) for role, text in RECSYS.items()}
        files["recs"] = csv_file("recs.csv", RECSYS["recs"] + "user0001,item9999,30\n")
        broken = recsys_fraud.recommendation_set_upload(team=team, **files)
        evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=broken, enqueue=False)
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk).status == "failed"
        page = logged_in(client, vera).get(evaluation.get_absolute_url()).content.decode()
        assert "recs.csv:12002: item &#x27;item9999&#x27; is not in the catalog" in page
        assert "figure-lorenz" not in page and "plotly" not in page

    def test_it_reads_the_dashboard_in_a_fixed_number_of_queries(
        self,
        client: Client,
        vera: User,
        recsys_done: RecommendationEvaluation,
        django_assert_max_num_queries: Any,
    ) -> None:
        url = logged_in(client, vera) and recsys_done.get_absolute_url()
        with django_assert_max_num_queries(8):  # 7, and the comparisons the page lists
            assert client.get(url).status_code == 200


@pytest.mark.django_db
class TestFraudDashboard:
    def test_it_draws_the_roc_pr_cost_and_detection_charts_with_the_operating_point(
        self, client: Client, vera: User, fraud_done: FraudScoreEvaluation
    ) -> None:
        page = logged_in(client, vera).get(fraud_done.get_absolute_url()).content.decode()
        operating = fraud_done.curves["operating"]
        roc = figure(page, "figure-roc")
        marker = roc["data"][-1]
        assert (marker["x"], marker["y"]) == ([operating["fpr"]], [operating["tpr"]])
        assert roc["data"][1]["x"] == fraud_done.curves["roc"]["fpr"]
        assert figure(page, "figure-pr")["data"][-1]["y"] == [operating["precision"]]
        cost = figure(page, "figure-cost")
        assert cost["data"][-1]["x"] == [operating["threshold"]] and cost["data"][0]["name"] == "flag nothing"
        ttd = figure(page, "figure-ttd")
        assert sum(ttd["data"][0]["y"]) == fraud_done.curves["ttd"]["n_detected"]
        confusion = fraud_done.summary["confusion"]
        assert f'<td class="num" id="confusion-tp">{confusion["tp"]}</td>' in page
        assert "Detection rate at target FPR" in page and "median" in page and " h" in page

    def test_it_draws_the_times_to_detection_in_a_readable_unit_with_its_numbers(
        self, client: Client, vera: User, fraud_done: FraudScoreEvaluation
    ) -> None:
        from monitoring.recsys_fraud.charts import delay_unit

        assert fraud_done.score_set.time_unit == "seconds"
        ttd = fraud_done.curves["ttd"]
        unit, size = delay_unit(ttd, unit="seconds")
        assert unit in {"min", "h", "d"} and ttd["edges"][-1] / size >= 2
        page = logged_in(client, vera).get(fraud_done.get_absolute_url()).content.decode()
        bars = figure(page, "figure-ttd")
        edges = [edge / size for edge in ttd["edges"]]
        assert (
            bars["layout"]["xaxis"]["title"]["text"]
            == f"delay from the first fraud to the first flag ({unit})"
        )
        assert bars["data"][0]["x"] == pytest.approx(
            [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:], strict=True)]
        )
        assert bars["data"][0]["y"] == ttd["counts"]
        assert f"<caption>Entities by delay ({unit})</caption>" in page
        assert max(bars["data"][0]["x"]) < 1000  # not raw seconds
        for seconds, want in ((90.0, "s"), (600.0, "min"), (7_200.0, "h"), (604_800.0, "d")):
            assert delay_unit({"edges": [0.0, seconds]}, unit="seconds")[0] == want
        assert delay_unit({"edges": [0.0, 604_800.0]}, unit="ticks") == ("ticks", 1.0)

    def test_it_says_when_the_operating_point_flags_nothing(
        self, client: Client, vera: User, team: Team
    ) -> None:
        rows = "".join(f"t{i},0.{9 - i},{int(i == 8)}\n" for i in range(9))
        eight = recsys_fraud.fraud_score_set_upload(
            team=team, scores=csv_file("s.csv", "id,score,label\n" + rows)
        )
        evaluation = recsys_fraud.fraud_evaluation_create(
            score_set=eight, options=FraudOptions(target_fpr=0.25), enqueue=False
        )
        assert recsys_fraud.fraud_evaluation_run(evaluation_id=evaluation.pk).status == "done"
        page = logged_in(client, vera).get(evaluation.get_absolute_url()).content.decode()
        assert "Flagging nothing: no threshold within the target FPR catches a fraud." in page

    def test_it_serves_every_table_as_csv_equal_to_the_stored_rows(
        self, client: Client, vera: User, fraud_done: FraudScoreEvaluation
    ) -> None:
        logged_in(client, vera)
        base, curves = fraud_done.get_absolute_url(), fraud_done.curves
        for name, columns in {"roc": ["fpr", "tpr", "threshold"], "pr": ["recall", "precision", "threshold"],
                              "cost": ["threshold", "total_cost"]}.items():  # fmt: skip
            rows = csv_rows(client.get(f"{base}{name}.csv"))
            assert rows[0] == columns
            want = [
                [cell(value) for value in row]
                for row in zip(*(curves[name][c] for c in columns), strict=True)
            ]
            assert rows[1:] == want
        ttd = csv_rows(client.get(base + "ttd.csv"))
        assert [row[2] for row in ttd[1:]] == [str(count) for count in curves["ttd"]["counts"]]
        metrics = csv_rows(client.get(base + "metrics.csv"))
        stored = fraud_done.metric_values()
        assert {row[0]: row[2] for row in metrics[1:]} == {
            name: cell(value) for name, value in stored.items()
        }
        assert client.get(base + "lorenz.csv").status_code == 404

    def test_it_hides_another_teams_dashboard_and_csv(
        self, client: Client, otto: User, fraud_done: FraudScoreEvaluation
    ) -> None:
        logged_in(client, otto)
        assert client.get(fraud_done.get_absolute_url()).status_code == 404
        assert client.get(fraud_done.get_absolute_url() + "roc.csv").status_code == 404
        assert client.get(f"/teams/search/jobs/fraud/{fraud_done.pk}.json").status_code == 404

    def test_it_reads_the_dashboard_in_a_fixed_number_of_queries(
        self, client: Client, vera: User, fraud_done: FraudScoreEvaluation, django_assert_max_num_queries: Any
    ) -> None:
        url = logged_in(client, vera) and fraud_done.get_absolute_url()
        with django_assert_max_num_queries(8):  # 7, and the comparisons the page lists
            assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_it_renders_the_dashboards_of_sets_without_the_optional_inputs(
    client: Client, team: Team, vera: User
) -> None:
    files = {"recs": "user,item,rank\nu1,a,1\nu1,b,2\nu2,c,1\n", "interactions": "user,item\nu1,b\nu2,d\n"}
    bare = recsys_fraud.recommendation_set_upload(
        team=team, **{r: csv_file(f"{r}.csv", t) for r, t in files.items()}
    )
    evaluation = recsys_fraud.recommendation_evaluation_create(recommendation_set=bare, enqueue=False)
    recsys_fraud.recommendation_evaluation_run(evaluation_id=evaluation.pk)
    logged_in(client, vera)
    page = client.get(evaluation.get_absolute_url()).content.decode()
    assert "figure-lorenz" in page and "Upload an items file with a category column" in page
    assert "needs a history file" in page and "needs an items file with categories" in page
    for text in (
        "id,score,label\na,0.9,1\nb,0.1,1\n",
        "id,score,label,entity,timestamp\na,0.9,0,e,1\nb,0.1,0,e,2\n",
    ):
        one_class = recsys_fraud.fraud_score_set_upload(team=team, scores=csv_file("one.csv", text))
        fraud = recsys_fraud.fraud_evaluation_create(score_set=one_class, enqueue=False)
        assert recsys_fraud.fraud_evaluation_run(evaluation_id=fraud.pk).status == "done"
        page = client.get(fraud.get_absolute_url()).content.decode()
        assert 'id="metric-roc_auc"' in page and 'title="undefined"' in page  # one class: no ROC-AUC
        for table in ("roc", "pr", "cost", "ttd", "metrics"):
            assert client.get(f"{fraud.get_absolute_url()}{table}.csv").status_code == 200
    assert "no time to detection" not in page and "0 of 0 entities detected" in page


@pytest.mark.django_db
def test_it_links_the_sets_from_the_team_page_in_a_fixed_number_of_queries(
    client: Client, theo: User, recommendations: RecommendationSet, scores: FraudScoreSet,
    django_assert_max_num_queries: Any,
) -> None:  # fmt: skip
    logged_in(client, theo)
    with django_assert_max_num_queries(17) as few:
        page = client.get("/teams/search/").content.decode()
    assert (
        f'href="{recommendations.get_absolute_url()}"' in page
        and f'href="{scores.get_absolute_url()}"' in page
    )
    assert (
        'href="/teams/search/recommendations/new/"' in page
        and 'href="/teams/search/fraud-scores/new/"' in page
    )
    for i in range(3):
        recsys_fraud.fraud_score_set_upload(
            team=recommendations.team, scores=csv_file(f"s{i}.csv", "id,score,label\na,1,1\n")
        )
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert "s2" in client.get("/teams/search/").content.decode()


@pytest.mark.django_db
def test_the_demo_gives_the_search_team_both_sets_evaluated_with_dashboards_that_render(
    client: Client,
) -> None:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("load_demo", "--json", stdout=out)
    summary = json.loads(out.getvalue())["team"]
    recsys, fraud = RecommendationEvaluation.objects.get(), FraudScoreEvaluation.objects.get()
    assert (recsys.status, fraud.status) == (
        "done",
        "done",
    ) and recsys.team.slug == fraud.team.slug == "search"
    assert summary["recommendation"]["url"] == recsys.get_absolute_url()
    assert summary["fraud"]["metrics"]["roc_auc"] == fraud.metric_values()["roc_auc"] > 0.9
    assert 0.01 < fraud.summary["n_positive"] / fraud.summary["n"] < 0.03  # a small fraud rate
    assert recsys.metric_values()["popularity_bias"] > 2  # a popularity-biased recommender
    before = [(e.pk, e.finished_at) for e in (recsys, fraud)]
    call_command("load_demo", stdout=io.StringIO())
    assert [(e.pk, e.finished_at) for e in RecommendationEvaluation.objects.all()] == before[:1]
    assert FraudScoreEvaluation.objects.get().finished_at == before[1][1]
    assert RecommendationSet.objects.count() == FraudScoreSet.objects.count() == 1

    logged_in(client, User.objects.get(username="analyst"))
    team_page = client.get("/teams/search/").content.decode()
    for evaluation, figures in ((recsys, ["figure-lorenz", "figure-popularity"]),
                                (fraud, ["figure-roc", "figure-pr", "figure-cost", "figure-ttd"])):  # fmt: skip
        owner = evaluation.recommendation_set if evaluation == recsys else evaluation.score_set
        assert f'href="{owner.get_absolute_url()}"' in team_page
        assert (
            f'href="{evaluation.get_absolute_url()}"' in client.get(owner.get_absolute_url()).content.decode()
        )
        page = client.get(evaluation.get_absolute_url()).content.decode()
        assert all(figure(page, name)["data"] for name in figures)
