"""The REST API of recommendation sets and fraud score sets: upload (multipart), start, poll, read the
metrics with their registry specs and the curves; permissions, bad input naming the field, query-count
ceilings on the lists, and the whole flow with a token on a real worker."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from evalplatform.models import Team
from monitoring.demo import demo_fraud_text, demo_recsys_texts
from monitoring.models import FraudScoreEvaluation, FraudScoreSet, RecommendationEvaluation, RecommendationSet
from monitoring.recsys_fraud import services as recsys_fraud
from tests.conftest import QueuedTasks, WorkerProcess

RECSYS = demo_recsys_texts()
SCORES = demo_fraud_text()
API = "/api/teams/search"


def csv_file(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/csv")


def recsys_files(**changes: str) -> dict[str, SimpleUploadedFile]:
    return {role: csv_file(f"{role}.csv", text) for role, text in {**RECSYS, **changes}.items()}


def post(client: Client, url: str, body: dict[str, Any], **extra: Any) -> Any:
    return client.post(url, body, content_type="application/json", **extra)


def local(url: str) -> str:
    return url.removeprefix("http://testserver")


def content(response: Any) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    client.force_login(theo)
    return client


@pytest.fixture
def viewer(client: Client, vera: User, team: Team) -> Client:
    client.force_login(vera)
    return client


@pytest.fixture
def recommendations(team: Team, theo: User) -> RecommendationSet:
    return recsys_fraud.recommendation_set_upload(team=team, uploaded_by=theo, **recsys_files())


@pytest.fixture
def scores(team: Team, theo: User) -> FraudScoreSet:
    return recsys_fraud.fraud_score_set_upload(
        team=team, scores=csv_file("scores.csv", SCORES), uploaded_by=theo
    )


@pytest.mark.django_db
class TestUploads:
    def test_it_uploads_a_recommendation_set_and_serves_its_files(self, editor: Client) -> None:
        response = editor.post(f"{API}/recommendation-sets/", {**recsys_files(), "name": "popular"})
        assert response.status_code == 201, response.json()
        body = response.json()
        assert body["name"] == "popular" and set(body["file_urls"]) == {
            "recs",
            "interactions",
            "items",
            "history",
        }
        assert body["files"]["recs"] == {
            "name": "recs.csv", "size": len(RECSYS["recs"]), "sha256": RecommendationSet.objects.get().files["recs"]["sha256"]
        }  # fmt: skip
        download = editor.get(local(body["file_urls"]["items"]))
        assert download.status_code == 200 and content(download).decode() == RECSYS["items"]
        assert editor.get(local(body["url"]) + "files/nothing/").status_code == 404
        assert editor.get(local(body["url"])).json()["id"] == body["id"]

    def test_it_uploads_fraud_scores_and_serves_the_file(self, editor: Client) -> None:
        response = editor.post(f"{API}/fraud-score-sets/", {"scores": csv_file("card.csv", SCORES)})
        assert response.status_code == 201
        body = response.json()
        assert (body["name"], body["time_unit"], body["num_rows"]) == ("card", "seconds", None)
        assert body["columns"] == ["id", "score", "label", "amount", "entity", "timestamp"]
        assert content(editor.get(local(body["download_url"]))).decode() == SCORES

    def test_it_refuses_a_bad_file_on_its_field_and_keeps_nothing(self, editor: Client) -> None:
        bad = editor.post(
            f"{API}/recommendation-sets/",
            recsys_files(items="item,category\nitem0001,books\nitem0001,music\n"),
        )
        assert bad.status_code == 400
        assert bad.json() == {"items": ["items.csv:3: item 'item0001' appears twice (first on line 2)"]}
        missing = editor.post(f"{API}/recommendation-sets/", {"recs": csv_file("recs.csv", RECSYS["recs"])})
        assert missing.status_code == 400 and set(missing.json()) == {"interactions"}
        scores = editor.post(
            f"{API}/fraud-score-sets/", {"scores": csv_file("s.csv", "id,score,label\na,x,1\n")}
        )
        assert scores.status_code == 400 and scores.json()["scores"][0].startswith("s.csv:2: ")
        assert not RecommendationSet.objects.exists() and not FraudScoreSet.objects.exists()

    def test_it_lets_viewers_read_but_not_upload_and_hides_the_team_from_others(
        self, viewer: Client, otto: User, recommendations: RecommendationSet, scores: FraudScoreSet
    ) -> None:
        assert viewer.get(f"{API}/recommendation-sets/").json()["count"] == 1
        assert viewer.post(f"{API}/recommendation-sets/", recsys_files()).status_code == 403
        assert (
            viewer.post(f"{API}/fraud-score-sets/", {"scores": csv_file("s.csv", SCORES)}).status_code == 403
        )
        viewer.force_login(otto)
        for url in (f"{API}/recommendation-sets/", f"{API}/recommendation-sets/{recommendations.pk}/",
                    f"{API}/fraud-score-sets/{scores.pk}/download/", f"{API}/fraud-evaluations/"):  # fmt: skip
            assert viewer.get(url).status_code == 404, url

    def test_it_lists_sets_in_a_fixed_number_of_queries(
        self, viewer: Client, team: Team, recommendations: RecommendationSet, scores: FraudScoreSet,
        django_assert_max_num_queries: Any,
    ) -> None:  # fmt: skip
        for url in (f"{API}/recommendation-sets/", f"{API}/fraud-score-sets/"):
            with django_assert_max_num_queries(6) as few:
                viewer.get(url)
            for i in range(4):
                recsys_fraud.fraud_score_set_upload(
                    team=team, scores=csv_file(f"s{i}.csv", "id,score,label\na,1,1\n")
                )
                recsys_fraud.recommendation_set_upload(team=team, **recsys_files())
            with django_assert_max_num_queries(len(few.captured_queries)):
                assert viewer.get(url).json()["count"] >= 5


@pytest.mark.django_db
class TestEvaluations:
    def test_it_queues_an_evaluation_and_answers_the_same_one_for_the_same_request(
        self, editor: Client, recommendations: RecommendationSet, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        body = {"recommendation_set": recommendations.pk, "k": 10}
        with django_capture_on_commit_callbacks(execute=True):
            first = post(editor, f"{API}/recommendation-evaluations/", body)
            again = post(editor, f"{API}/recommendation-evaluations/", {**body, "head_share": 0.8})
        assert first.status_code == again.status_code == 202
        assert first.json()["id"] == again.json()["id"] and first.json()["status"] == "pending"
        assert queued.names() == ["monitoring.tasks.recommendation_evaluation_run"]
        url = local(first.json()["url"])
        assert editor.get(local(first.json()["curves_url"])).status_code == 409
        assert recsys_fraud.recommendation_evaluation_run(evaluation_id=first.json()["id"]).status == "done"
        done = editor.get(url).json()
        assert done["status"] == "done" and done["k"] == 10 and done["summary"]["k"] == 10
        results = {row["metric"]: row for row in done["results"]}
        assert len(results) == 17 and results["gini"]["spec"]["direction"] == "lower"
        assert results["ndcg_at_k"]["spec"]["label"] == "nDCG@k" and results["ndcg_at_k"]["spec"][
            "range"
        ] == [0.0, 1.0]
        stored = RecommendationEvaluation.objects.get().metric_values()
        assert {name: row["value"] for name, row in results.items()} == stored
        assert post(editor, f"{API}/recommendation-evaluations/", body).status_code == 200
        curves = editor.get(local(done["curves_url"])).json()
        assert set(curves["curves"]) == {"lorenz", "popularity", "coverage"}
        assert curves["curves"] == RecommendationEvaluation.objects.get().curves

    def test_it_starts_a_fraud_evaluation_and_serves_its_curves(
        self, editor: Client, scores: FraudScoreSet, queued: QueuedTasks
    ) -> None:
        body = {"score_set": scores.pk, "target_fpr": 0.02, "fp_cost": 5, "budget": 150}
        started = post(editor, f"{API}/fraud-evaluations/", body)
        assert started.status_code == 202, started.json()
        assert (started.json()["threshold"], started.json()["budget"], started.json()["fn_cost"]) == (
            None,
            150,
            1.0,
        )
        assert recsys_fraud.fraud_evaluation_run(evaluation_id=started.json()["id"]).status == "done"
        done = editor.get(local(started.json()["url"])).json()
        results = {row["metric"]: row["value"] for row in done["results"]}
        assert results["realised_fpr"] <= 0.02 and results["precision_at_budget"] is not None
        curves = editor.get(local(done["curves_url"])).json()["curves"]
        assert set(curves) == {"roc", "pr", "cost", "operating", "ttd"}
        assert curves["operating"]["fpr"] == results["realised_fpr"]

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"k": 0}, "k"),
            ({"k": 2**31}, "k"),  # past what the column holds: was a 500 (found by the API fuzz test)
            ({"head_share": 1.5}, "head_share"),
            ({"complete": "perhaps"}, "complete"),
            ({"recommendation_set": 999}, "recommendation_set"),
        ],
    )
    def test_it_refuses_bad_recommendation_options_naming_the_field(
        self, editor: Client, recommendations: RecommendationSet, body: dict[str, Any], field: str
    ) -> None:
        response = post(
            editor, f"{API}/recommendation-evaluations/", {"recommendation_set": recommendations.pk, **body}
        )
        assert response.status_code == 400 and set(response.json()) == {field}, response.json()

    @pytest.mark.parametrize(
        ("body", "field"),
        [({"target_fpr": 2}, "target_fpr"), ({"fp_cost": -1}, "fp_cost"), ({"budget": -5}, "budget"),
         ({"budget": 2**31}, "budget"), ({"threshold": "high"}, "threshold")],
    )  # fmt: skip
    def test_it_refuses_bad_fraud_options_naming_the_field(
        self, editor: Client, scores: FraudScoreSet, body: dict[str, Any], field: str
    ) -> None:
        response = post(editor, f"{API}/fraud-evaluations/", {"score_set": scores.pk, **body})
        assert response.status_code == 400 and set(response.json()) == {field}, response.json()
        assert not FraudScoreEvaluation.objects.exists()

    def test_it_refuses_another_teams_set_and_lets_only_editors_start(
        self, client: Client, vera: User, otto: User, other_team: Team, scores: FraudScoreSet
    ) -> None:
        theirs = recsys_fraud.fraud_score_set_upload(
            team=other_team, scores=csv_file("t.csv", "id,score,label\na,1,1\n")
        )
        client.force_login(vera)
        assert post(client, f"{API}/fraud-evaluations/", {"score_set": scores.pk}).status_code == 403
        client.force_login(otto)
        response = post(client, "/api/teams/fraud/fraud-evaluations/", {"score_set": scores.pk})
        assert response.status_code == 400 and response.json() == {
            "score_set": [f"The team has no fraud score set {scores.pk}."]
        }
        assert (
            post(client, "/api/teams/fraud/fraud-evaluations/", {"score_set": theirs.pk}).status_code == 202
        )

    @pytest.mark.django_db(transaction=True)  # the job is queued on commit, inside the request
    def test_it_answers_503_when_the_queue_is_down(
        self, editor: Client, scores: FraudScoreSet, queued: QueuedTasks
    ) -> None:
        queued.broker_down = True
        response = post(editor, f"{API}/fraud-evaluations/", {"score_set": scores.pk})
        assert response.status_code == 503 and "task queue is unreachable" in response.json()["error"]

    def test_it_lists_evaluations_by_status_in_a_fixed_number_of_queries(
        self, viewer: Client, recommendations: RecommendationSet, scores: FraudScoreSet,
        django_assert_max_num_queries: Any,
    ) -> None:  # fmt: skip
        first = recsys_fraud.recommendation_evaluation_create(
            recommendation_set=recommendations, enqueue=False
        )
        recsys_fraud.recommendation_evaluation_run(evaluation_id=first.pk)
        recsys_fraud.fraud_evaluation_run(
            evaluation_id=recsys_fraud.fraud_evaluation_create(score_set=scores, enqueue=False).pk
        )
        for url in (f"{API}/recommendation-evaluations/", f"{API}/fraud-evaluations/"):
            with django_assert_max_num_queries(7) as few:
                assert viewer.get(url).json()["count"] == 1
        from evalcore.fraud import FraudOptions
        from evalcore.recsys import RecsysOptions

        for k in range(1, 6):
            recsys_fraud.recommendation_evaluation_create(
                recommendation_set=recommendations, options=RecsysOptions(k=k), enqueue=False
            )
            recsys_fraud.fraud_evaluation_create(
                score_set=scores, options=FraudOptions(budget=k), enqueue=False
            )
        for url in (f"{API}/recommendation-evaluations/", f"{API}/fraud-evaluations/"):
            with django_assert_max_num_queries(len(few.captured_queries)):
                assert viewer.get(url).json()["count"] == 6
        done = viewer.get(f"{API}/recommendation-evaluations/?status=done").json()
        assert [row["id"] for row in done["results"]] == [first.pk]
        assert viewer.get(f"{API}/fraud-evaluations/?status=maybe").status_code == 400

    def test_it_describes_every_endpoint_in_the_schema(self, viewer: Client) -> None:
        schema = viewer.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
        for path in ("/recommendation-sets/", "/recommendation-evaluations/{id}/curves/", "/fraud-score-sets/",
                     "/fraud-evaluations/{id}/curves/"):  # fmt: skip
            assert f"/api/teams/{{team}}{path}" in schema


def wait_for_job(client: Client, url: str, auth: dict[str, str], timeout: float = 90.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(url, **auth).json()
        if body["status"] in {"done", "failed"}:
            return body
        time.sleep(0.1)
    raise AssertionError(f"{url} did not finish in {timeout} s")


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_uploads_evaluates_and_reads_both_kinds_with_a_token_on_a_real_worker(
    celery_worker_process: WorkerProcess, client: Client, theo: User, team: Team
) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=theo).key}"}
    recs = client.post(f"{API}/recommendation-sets/", recsys_files(), **auth).json()
    card = client.post(f"{API}/fraud-score-sets/", {"scores": csv_file("card.csv", SCORES)}, **auth).json()
    started = [
        post(
            client, f"{API}/recommendation-evaluations/", {"recommendation_set": recs["id"], "k": 10}, **auth
        ),
        post(client, f"{API}/fraud-evaluations/", {"score_set": card["id"], "budget": 100}, **auth),
    ]
    assert [response.status_code for response in started] == [202, 202]
    for response in started:
        done = wait_for_job(client, local(response.json()["url"]), auth)
        assert done["status"] == "done", (done["error"], celery_worker_process.log())
        assert all(row["spec"] is not None for row in done["results"])
        assert client.get(local(done["curves_url"]), **auth).status_code == 200
    assert client.get(local(recs["url"]), **auth).json()["num_users"] == 600  # counted by the job
