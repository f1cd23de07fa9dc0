"""The evaluation API's jobs: evaluations (start, poll, results with CIs and specs, per-query values),
comparisons, the leaderboard; permissions, bad input, query-count ceilings, and the whole flow through a
real worker with a token."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token

from evalcore import trec
from evalcore.comparison import DEFAULT_MEASURES, align_results, compare_scores
from evalcore.retrieval import evaluate
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import with_coverage
from monitoring.files import uploads
from monitoring.models import Comparison, Evaluation
from tests.conftest import ROOT, QueuedTasks, WorkerProcess, _database_url_for
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.stored import evaluation_rows

QRELS, RUN = synthetic_collection()
GOOD, WEAK = RUN(1, 1.5, "bm25"), RUN(2, 0.3, "dense")


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[Any, Any, Any]:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    good = uploads.run_upload(team=team, upload=upload("bm25.run", GOOD), uploaded_by=theo)
    weak = uploads.run_upload(team=team, upload=upload("dense.run", WEAK), uploaded_by=theo)
    return qrels, good, weak


@pytest.fixture
def editor(client: Client, theo: User, team: Team) -> Client:
    client.force_login(theo)
    return client


@pytest.fixture
def viewer(client: Client, vera: User, team: Team) -> Client:
    client.force_login(vera)
    return client


def post(client: Client, url: str, body: dict[str, Any], **extra: Any) -> Any:
    return client.post(url, body, content_type="application/json", **extra)


def local(path: str) -> str:
    return path.removeprefix("http://testserver")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def evaluated(run: Any, qrels: Any, measures: list[str] | None = None, **options: Any) -> Evaluation:
    evaluation = evaluations.evaluation_create(
        run=run, qrels=qrels, measures=measures or list(DEFAULT_MEASURES), enqueue=False, **options
    )
    assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
    return evaluation


@pytest.mark.django_db
class TestStartingAnEvaluation:
    def test_it_queues_an_evaluation_and_answers_202_with_its_state(
        self, editor: Client, sources: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels, run, _ = sources
        with django_capture_on_commit_callbacks(execute=True):
            response = post(editor, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk})
        assert response.status_code == 202, response.json()
        body = response.json()
        assert (body["status"], body["percent"], body["error"], body["results"]) == ("pending", None, "", [])
        assert body["measures"] == with_coverage(DEFAULT_MEASURES) and (
            body["rel_level"],
            body["complete"],
        ) == (
            1,
            False,
        )
        assert body["run"] == {"id": run.pk, "name": "bm25"} and body["created_by"] == "theo"
        assert body["url"] == f"http://testserver/api/teams/search/evaluations/{body['id']}/"
        assert queued.names() == ["monitoring.tasks.evaluation_run"]

    def test_it_returns_the_same_evaluation_for_the_same_request(
        self, editor: Client, sources: Any, queued: QueuedTasks
    ) -> None:
        qrels, run, _ = sources
        request = {"run": run.pk, "qrels": qrels.pk, "measures": ["map", "P_5"], "rel_level": 2}
        first = post(editor, "/api/teams/search/evaluations/", request)
        again = post(editor, "/api/teams/search/evaluations/", {**request, "measures": ["P_5", "map"]})
        assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
        evaluations.evaluation_run(evaluation_id=first.json()["id"])
        done = post(editor, "/api/teams/search/evaluations/", request)
        assert done.status_code == 200 and done.json()["status"] == "done"
        assert Evaluation.objects.count() == 1

    @pytest.mark.django_db(transaction=True)  # the job is queued on commit, inside the request
    def test_it_answers_503_when_the_queue_is_down(
        self, editor: Client, sources: Any, queued: QueuedTasks
    ) -> None:
        qrels, run, _ = sources
        queued.broker_down = True
        response = post(editor, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk})
        assert response.status_code == 503
        assert response.json()["status"] == "failed" and "queue is unreachable" in response.json()["error"]

    def test_it_refuses_unknown_measures_with_a_suggestion(self, editor: Client, sources: Any) -> None:
        qrels, run, _ = sources
        response = post(
            editor, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk, "measures": ["mpa"]}
        )
        assert response.status_code == 400
        assert (
            list(response.json()) == ["measures"] and "did you mean 'map'" in response.json()["measures"][0]
        )
        empty = post(
            editor, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk, "measures": []}
        )
        assert empty.json() == {"measures": ["Choose at least one measure."]}
        assert not Evaluation.objects.exists()

    def test_it_refuses_a_run_or_qrels_of_another_team(
        self, editor: Client, sources: Any, other_team: Team
    ) -> None:
        qrels, run, _ = sources
        foreign_run = uploads.run_upload(team=other_team, upload=upload("f.run", GOOD))
        foreign_qrels = uploads.qrels_upload(team=other_team, upload=upload("f.qrels", QRELS))
        response = post(
            editor, "/api/teams/search/evaluations/", {"run": foreign_run.pk, "qrels": foreign_qrels.pk}
        )
        assert response.status_code == 400
        assert response.json() == {
            "run": [f"The team has no run {foreign_run.pk}."],
            "qrels": [f"The team has no qrels source {foreign_qrels.pk}."],
        }
        missing = post(editor, "/api/teams/search/evaluations/", {"qrels": qrels.pk, "rel_level": "high"})
        assert set(missing.json()) == {"run", "rel_level"}

    def test_it_lets_only_editors_start_one(
        self, viewer: Client, sources: Any, other_team: Team, otto: User
    ) -> None:
        qrels, run, _ = sources
        refused = post(viewer, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk})
        assert refused.status_code == 403 and not Evaluation.objects.exists()
        viewer.force_login(otto)
        assert (
            post(viewer, "/api/teams/search/evaluations/", {"run": run.pk, "qrels": qrels.pk}).status_code
            == 404
        )


@pytest.mark.django_db
class TestReadingAnEvaluation:
    def test_it_serves_the_results_with_their_cis_and_registry_specs(
        self, viewer: Client, sources: Any, tmp_path: Path
    ) -> None:
        qrels, run, _ = sources
        measures = with_coverage(["map", "ndcg_cut_10", "num_ret"])
        evaluation = evaluated(run, qrels, measures[:3])
        body = viewer.get(f"/api/teams/search/evaluations/{evaluation.pk}/").json()
        assert (body["status"], body["percent"], body["num_queries"], body["num_missing"]) == (
            "done",
            100,
            20,
            0,
        )
        assert body["started_at"] and body["finished_at"] and body["seconds"] >= 0
        expected = evaluate(
            trec.read_qrels(write(tmp_path, "q", QRELS)), trec.read_run(write(tmp_path, "r", GOOD)), measures
        )
        results = {row["measure"]: row for row in body["results"]}
        assert list(results) == measures
        for measure in measures:
            assert results[measure]["value"] == pytest.approx(expected.aggregate[measure], abs=1e-12)
        assert results["map"]["ci_low"] < results["map"]["value"] < results["map"]["ci_high"]
        assert results["ndcg_cut_10"]["spec"] == {
            "name": "ndcg_cut", "label": "nDCG at k", "family": "retrieval", "direction": "higher",
            "range": [0.0, 1.0], "unit": "",
        }  # fmt: skip
        assert results["num_ret"]["spec"]["direction"] == "neutral" and results["num_ret"]["ci_low"] is None

    def test_it_serves_per_query_values_a_page_at_a_time(self, viewer: Client, sources: Any) -> None:
        qrels, run, _ = sources
        evaluation = evaluated(run, qrels, ["map", "P_10"])
        url = f"/api/teams/search/evaluations/{evaluation.pk}/per-query/"
        first = viewer.get(f"{url}?page_size=8").json()
        assert (first["count"], len(first["results"]), first["measures"]) == (
            20,
            8,
            with_coverage(["map", "P_10"]),
        )
        rows = first["results"]
        while first["next"]:
            first = viewer.get(local(first["next"])).json()
            rows += first["results"]
        stored = {r.measure: r.per_query for r in evaluation_rows(evaluation)}
        evaluation.refresh_from_db()
        assert [row["qid"] for row in rows] == evaluation.qids
        assert [row["values"]["map"] for row in rows] == stored["map"]
        only = viewer.get(f"{url}?measure=P_10&page_size=10000").json()
        assert only["measures"] == ["P_10"] and [row["values"] for row in only["results"]] == [
            {"P_10": value} for value in stored["P_10"]
        ]
        unknown = viewer.get(f"{url}?measure=ndcg")
        assert unknown.status_code == 400
        assert unknown.json() == {
            "measure": ["ndcg: not a measure of this evaluation; it has map, P_10, Judged@10, Judged@100."]
        }

    def test_it_has_no_per_query_values_before_the_job_is_done(self, viewer: Client, sources: Any) -> None:
        qrels, run, _ = sources
        evaluation = evaluations.evaluation_create(run=run, qrels=qrels, enqueue=False)
        response = viewer.get(f"/api/teams/search/evaluations/{evaluation.pk}/per-query/")
        assert response.status_code == 409 and "pending" in response.json()["detail"]

    def test_it_shows_why_a_job_failed(self, viewer: Client, team: Team, sources: Any) -> None:
        qrels, _, _ = sources
        stranger = uploads.run_upload(team=team, upload=upload("other.run", "x1 Q0 d1 1 1.0 t\n"))
        evaluation = evaluations.evaluation_create(run=stranger, qrels=qrels, enqueue=False)
        evaluations.evaluation_run(evaluation_id=evaluation.pk)
        body = viewer.get(f"/api/teams/search/evaluations/{evaluation.pk}/").json()
        assert body["status"] == "failed" and "no query" in body["error"] and body["results"] == []

    def test_it_hides_another_teams_evaluation(self, editor: Client, other_team: Team) -> None:
        qrels = uploads.qrels_upload(team=other_team, upload=upload("q.qrels", QRELS))
        run = uploads.run_upload(team=other_team, upload=upload("r.run", GOOD))
        evaluation = evaluations.evaluation_create(run=run, qrels=qrels, enqueue=False)
        assert editor.get(f"/api/teams/search/evaluations/{evaluation.pk}/").status_code == 404
        assert editor.get(f"/api/teams/search/evaluations/{evaluation.pk}/per-query/").status_code == 404
        assert editor.get(f"/api/teams/fraud/evaluations/{evaluation.pk}/").status_code == 404

    def test_it_lists_evaluations_by_status_in_a_fixed_number_of_queries(
        self, viewer: Client, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, good, weak = sources
        evaluated(good, qrels)
        evaluations.evaluation_create(run=weak, qrels=qrels, enqueue=False)
        with django_assert_max_num_queries(7) as few:
            body = viewer.get("/api/teams/search/evaluations/").json()
        assert body["count"] == 2 and len(body["results"][1]["results"]) == len(
            with_coverage(DEFAULT_MEASURES)
        )
        for level in range(2, 40):
            evaluated(good if level % 2 else weak, qrels, ["map", "P_10"], rel_level=level)
        with django_assert_max_num_queries(len(few.captured_queries)):
            body = viewer.get("/api/teams/search/evaluations/?page_size=50").json()
        assert body["count"] == 40 and len(body["results"]) == 40
        pending = viewer.get("/api/teams/search/evaluations/?status=pending").json()
        assert [row["run"]["id"] for row in pending["results"]] == [weak.pk]
        assert list(viewer.get("/api/teams/search/evaluations/?status=stuck").json()) == ["status"]


@pytest.mark.django_db
class TestComparisons:
    def test_it_starts_a_comparison_and_answers_202(
        self, editor: Client, sources: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        qrels, good, weak = sources
        with django_capture_on_commit_callbacks(execute=True):
            response = post(
                editor, "/api/teams/search/comparisons/",
                {"qrels": qrels.pk, "runs": [good.pk, weak.pk], "test": "randomization"},
            )  # fmt: skip
        assert response.status_code == 202, response.json()
        body = response.json()
        assert (body["status"], body["test"], body["correction"], body["alpha"]) == (
            "pending", "randomization", "holm", 0.05,
        )  # fmt: skip
        assert body["measures"] == ["map", "ndcg_cut_10"] and {run["id"] for run in body["runs"]} == {
            good.pk,
            weak.pk,
        }
        assert (body["summaries"], body["pairs"]) == ([], [])
        assert queued.names() == ["monitoring.tasks.comparison_run"]

    def test_it_serves_summaries_and_pairs_as_compare_runs_computes_them(
        self, viewer: Client, sources: Any, tmp_path: Path
    ) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(
            qrels=qrels, runs=[good, weak], measures=["map", "P_10"], enqueue=False
        )
        assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done"
        body = viewer.get(f"/api/teams/search/comparisons/{comparison.pk}/").json()
        assert (body["status"], body["num_queries"]) == ("done", 20)
        assert body["means_over"] == "the qrels queries the run answered (trec_eval's default)"
        assert body["pairs_over"] == "the qrels queries any of the runs answered, a run's missing ones as 0"
        assert {row["num_queries"] for row in body["summaries"]} == {20}
        assert body["specs"]["map"]["label"] == "Mean average precision"
        judged = trec.read_qrels(write(tmp_path, "q", QRELS))
        results = {
            str(run.pk): evaluate(
                judged, trec.read_run(write(tmp_path, f"{run.pk}", text)), ["map", "P_10"], complete=True
            )
            for run, text in ((good, GOOD), (weak, WEAK))
        }
        _, scores = align_results(results, ["map", "P_10"], complete=False)
        expected = compare_scores(scores, test="t", correction="holm", n_resamples=2000, seed=0)
        pairs = {pair["measure"]: pair for pair in body["pairs"]}
        for want in expected.pairs:
            got = pairs[want.measure]
            assert (got["run_a"]["id"], got["run_b"]["id"]) == (int(want.a), int(want.b))
            assert got["diff"] == pytest.approx(want.diff) and got["p_adjusted"] == pytest.approx(
                want.p_adjusted
            )
            assert got["significant"] == want.significant and got["wins"] + got["ties"] + got["losses"] == 20
        summaries = {(row["run"]["id"], row["measure"]): row for row in body["summaries"]}
        assert len(summaries) == 4
        for run_id, by_measure in expected.runs.items():
            for measure, summary in by_measure.items():
                row = summaries[(int(run_id), measure)]
                assert row["mean"] == pytest.approx(summary.mean)
                assert row["ci_low"] <= row["mean"] <= row["ci_high"]
        assert pairs["map"]["significant"] and pairs["map"]["run_a"]["name"] == "bm25"

    def test_it_refuses_a_bad_comparison_naming_the_field(
        self, editor: Client, sources: Any, other_team: Team
    ) -> None:
        qrels, good, weak = sources
        foreign = uploads.run_upload(team=other_team, upload=upload("f.run", GOOD))
        url = "/api/teams/search/comparisons/"
        one = post(editor, url, {"qrels": qrels.pk, "runs": [good.pk, good.pk]})
        assert one.json() == {"runs": ["Choose at least two different runs to compare."]}
        alien = post(editor, url, {"qrels": qrels.pk, "runs": [good.pk, foreign.pk]})
        assert alien.status_code == 400 and alien.json() == {
            "runs": {"1": [f"The team has no run {foreign.pk}."]}
        }
        odd = post(
            editor, url,
            {"qrels": qrels.pk, "runs": [good.pk, weak.pk], "alpha": 1.5, "test": "z", "measures": ["mpa"]},
        )  # fmt: skip
        assert odd.status_code == 400 and set(odd.json()) == {"alpha", "test", "measures"}
        assert not Comparison.objects.exists()

    def test_it_lets_viewers_read_but_not_compare(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        assert viewer.get(f"/api/teams/search/comparisons/{comparison.pk}/").status_code == 200
        refused = post(
            viewer, "/api/teams/search/comparisons/", {"qrels": qrels.pk, "runs": [good.pk, weak.pk]}
        )
        assert refused.status_code == 403 and Comparison.objects.count() == 1

    def test_it_hides_another_teams_comparison(self, client: Client, otto: User, sources: Any) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        client.force_login(otto)
        assert client.get(f"/api/teams/search/comparisons/{comparison.pk}/").status_code == 404

    def test_it_lists_comparisons_in_a_fixed_number_of_queries(
        self, viewer: Client, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, good, weak = sources
        evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        with django_assert_max_num_queries(6) as few:
            assert viewer.get("/api/teams/search/comparisons/").json()["count"] == 1
        for _ in range(30):
            evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        with django_assert_max_num_queries(len(few.captured_queries)):
            body = viewer.get("/api/teams/search/comparisons/").json()
        assert len(body["results"]) == 31 and all(len(row["runs"]) == 2 for row in body["results"])


@pytest.mark.django_db
class TestLeaderboard:
    def test_it_ranks_the_runs_by_a_measure_in_its_direction(self, viewer: Client, sources: Any) -> None:
        qrels, good, weak = sources
        evaluated(good, qrels, ["map", "num_ret"])
        evaluated(weak, qrels, ["map", "num_ret"])
        body = viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/").json()
        assert (body["qrels"], body["measures"], body["sort"]) == (
            {"id": qrels.pk, "name": "judged"}, ["map", "num_ret"], "map",
        )  # fmt: skip
        assert [(row["rank"], row["run"]["name"]) for row in body["rows"]] == [(1, "bm25"), (2, "dense")]
        top = body["rows"][0]["results"]["map"]
        assert top["ci_low"] < top["value"] < top["ci_high"]
        assert (
            body["specs"]["map"]["direction"] == "higher"
            and body["specs"]["num_ret"]["direction"] == "neutral"
        )
        wrong = viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/?sort=P_10")
        assert wrong.status_code == 400 and list(wrong.json()) == ["sort"]

    def test_it_is_empty_before_any_evaluation_and_hidden_from_other_teams(
        self, viewer: Client, sources: Any, other_team: Team
    ) -> None:
        qrels, _, _ = sources
        body = viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/").json()
        assert (body["rows"], body["sort"]) == ([], None)
        foreign = uploads.qrels_upload(team=other_team, upload=upload("f.qrels", QRELS))
        assert viewer.get(f"/api/teams/search/leaderboard/{foreign.pk}/").status_code == 404

    def test_it_reads_the_leaderboard_in_a_fixed_number_of_queries(
        self, viewer: Client, team: Team, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels, good, _ = sources
        evaluated(good, qrels, ["map"])
        with django_assert_max_num_queries(6) as few:
            viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/")
        for seed in range(10):
            run = uploads.run_upload(team=team, upload=upload(f"r{seed}.run", RUN(seed + 10, 1.0)))
            evaluated(run, qrels, ["map"])
        with django_assert_max_num_queries(len(few.captured_queries)):
            assert len(viewer.get(f"/api/teams/search/leaderboard/{qrels.pk}/").json()["rows"]) == 11


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
def test_it_evaluates_and_compares_through_the_api_with_a_token_on_a_real_worker(
    celery_worker_process: WorkerProcess, client: Client, theo: User, team: Team, tmp_path: Path
) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=theo).key}"}
    api = "/api/teams/search"
    qrels = client.post(f"{api}/qrels/", {"file": upload("judged.qrels", QRELS)}, **auth).json()
    good = client.post(f"{api}/runs/", {"file": upload("bm25.run", GOOD), "tags": "bm25"}, **auth).json()
    weak = client.post(f"{api}/runs/", {"file": upload("dense.run", WEAK)}, **auth).json()
    measures = ["map", "ndcg_cut_10", "P_10"]

    started = post(
        client, f"{api}/evaluations/", {"run": good["id"], "qrels": qrels["id"], "measures": measures}, **auth
    )
    assert started.status_code == 202, started.json()
    done = wait_for_job(client, local(started.json()["url"]), auth)
    assert done["status"] == "done", (done["error"], celery_worker_process.log())
    judged = trec.read_qrels(write(tmp_path, "judged.qrels", QRELS))
    expected = evaluate(judged, trec.read_run(write(tmp_path, "bm25.run", GOOD)), with_coverage(measures))
    assert {row["measure"]: row["value"] for row in done["results"]} == pytest.approx(
        expected.aggregate, abs=1e-12
    )
    per_query = client.get(local(done["per_query_url"]) + "?page_size=1000", **auth).json()
    for measure in measures:
        got = {row["qid"]: row["values"][measure] for row in per_query["results"]}
        want = dict(zip((str(q) for q in expected.qids), expected.values[measure], strict=True))
        assert got == pytest.approx(want, abs=1e-12)

    compared = post(
        client, f"{api}/comparisons/",
        {"qrels": qrels["id"], "runs": [good["id"], weak["id"]], "measures": measures}, **auth,
    )  # fmt: skip
    assert compared.status_code == 202
    result = wait_for_job(client, local(compared.json()["url"]), auth)
    assert result["status"] == "done", (result["error"], celery_worker_process.log())
    results = {
        str(good["id"]): evaluate(judged, trec.read_run(write(tmp_path, "g", GOOD)), measures, complete=True),
        str(weak["id"]): evaluate(judged, trec.read_run(write(tmp_path, "w", WEAK)), measures, complete=True),
    }
    _, scores = align_results(results, measures, complete=False)
    want_pairs = {p.measure: p for p in compare_scores(scores, test="t", correction="holm", seed=0).pairs}
    assert len(result["pairs"]) == len(measures)
    for pair in result["pairs"]:
        assert pair["p_adjusted"] == pytest.approx(want_pairs[pair["measure"]].p_adjusted)
        assert pair["diff"] == pytest.approx(want_pairs[pair["measure"]].diff)
    assert np.isclose(
        {(s["run"]["id"], s["measure"]): s["mean"] for s in result["summaries"]}[(good["id"], "map")],
        expected.aggregate["map"],
    )
    board = client.get(f"{api}/leaderboard/{qrels['id']}/", **auth).json()
    assert [row["run"]["name"] for row in board["rows"]] == ["bm25"]


FRESH_PROCESS_POST = """
import django, json
django.setup()
from django.test import Client
response = Client(HTTP_HOST="localhost").post(
    "/api/teams/search/evaluations/", json.dumps({"run": %d, "qrels": %d, "measures": ["map"]}),
    content_type="application/json", HTTP_AUTHORIZATION="Token %s",
)
print(response.status_code, response.json()["id"])
"""


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_queues_a_job_from_a_fresh_web_process(
    celery_worker_process: WorkerProcess, theo: User, sources: Any, media_root: Path
) -> None:
    """A web process has imported no app's tasks module (only the worker and the tests' `queued` fixture
    do): starting a job there must still find its task, not answer 500."""
    qrels, run, _ = sources
    script = FRESH_PROCESS_POST % (run.pk, qrels.pk, Token.objects.create(user=theo).key)
    env = {
        **os.environ,
        "DATABASE_URL": _database_url_for(connection.settings_dict),
        "MEDIA_ROOT": str(media_root),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    code, pk = done.stdout.split()[-2:]
    assert code == "202"
    deadline = time.monotonic() + 90
    while Evaluation.objects.get(pk=int(pk)).status != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Evaluation.objects.get(pk=int(pk)).status == "done", celery_worker_process.log()
