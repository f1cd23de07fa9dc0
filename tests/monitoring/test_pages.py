"""The evaluation pages: who may see and do what, a team's home, the job state JSON and the home page.

theo edits the search team, vera views it, otto is in another team only. The forms are in
test_pages_forms.py and the dashboards in test_pages_dashboards.py; both use the builders here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from annotations.models import QrelsBuild
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import Comparison, Evaluation, QrelsSource, Run
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series
from tests.annotations.conftest import build_project
from tests.conftest import LENA, make_user
from tests.monitoring.conftest import synthetic_collection, upload

QRELS, RUN = synthetic_collection()


# --- builders (the other page tests import them) ------------------------------------------------------


def add_sources(team: Team, by: User | None = None) -> tuple[QrelsSource, Run, Run]:
    """The team's qrels and two runs: bm25 (good) and dense (weak)."""
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=by)
    good = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")), uploaded_by=by)
    weak = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.3, "dense")), uploaded_by=by)
    return qrels, good, weak


def evaluate_now(
    run: Run, qrels: QrelsSource, measures: tuple[str, ...] = ("map", "P_10", "ndcg_cut_10")
) -> Evaluation:
    """An evaluation computed here, as the worker would."""
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=measures, enqueue=False)
    assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
    return Evaluation.objects.get(pk=evaluation.pk)


def compare_now(qrels: QrelsSource, runs: list[Run], **options: Any) -> Comparison:
    options.setdefault("measures", ("map", "ndcg_cut_10"))
    comparison = evaluations.comparison_create(qrels=qrels, runs=runs, enqueue=False, **options)
    assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done"
    return Comparison.objects.get(pk=comparison.pk)


def stored_evaluation(run: Run, qrels: QrelsSource, values: dict[str, float], **fields: Any) -> Evaluation:
    """An evaluation row with results written directly (many runs, quickly)."""
    fields.setdefault("status", "done")
    fields.setdefault("finished_at", timezone.now())
    evaluation = Evaluation.objects.create(
        team=run.team, run=run, qrels=qrels, measures=list(values), options_key=f"k{run.pk}-{qrels.pk}",
        qids=["q1", "q2"], num_queries=2, per_query={m: [v, v] for m, v in values.items()}, **fields,
    )  # fmt: skip
    metric_values_write(
        job=evaluation, series=run_series(qrels, run.name), observed_at=evaluation.finished_at or timezone.now(),
        values=[MetricValueIn(m, v, ci_low=v - 0.1, ci_high=v + 0.1) for m, v in values.items()],
    )  # fmt: skip
    return evaluation


def many_runs(team: Team, qrels: QrelsSource, count: int, *, start: int = 0) -> list[Run]:
    runs = [
        Run.objects.create(team=team, name=f"run{start + i}", file=f"runs/x{start + i}.run", tags=["t"])
        for i in range(count)
    ]
    for i, run in enumerate(runs):
        stored_evaluation(run, qrels, {"map": 0.1 + 0.01 * i, "P_10": 0.2})
    return runs


def figure(page: str, name: str) -> dict[str, Any]:
    found = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', page, re.S)
    assert found, f"no figure {name}"
    return json.loads(found[1])  # type: ignore[no-any-return]


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


# --- fixtures -----------------------------------------------------------------------------------------


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[QrelsSource, Run, Run]:
    return add_sources(team, theo)


@pytest.fixture
def done(sources: tuple[QrelsSource, Run, Run]) -> dict[str, Any]:
    """Both runs evaluated and compared."""
    qrels, good, weak = sources
    return {
        "qrels": qrels,
        "good": good,
        "weak": weak,
        "evaluations": [evaluate_now(good, qrels), evaluate_now(weak, qrels)],
        "comparison": compare_now(qrels, [good, weak]),
    }


def read_urls(team: Team, done: dict[str, Any]) -> list[str]:
    base = f"/teams/{team.slug}/"
    evaluation, comparison = done["evaluations"][0], done["comparison"]
    pair = comparison.pairs.first()
    return [
        base,
        f"{base}runs/{done['good'].pk}/",
        f"{base}leaderboard/{done['qrels'].pk}/",
        f"{base}leaderboard/{done['qrels'].pk}/leaderboard.csv",
        f"{base}evaluations/{evaluation.pk}/per-query.csv",
        f"{base}comparisons/{comparison.pk}/",
        f"{base}comparisons/{comparison.pk}/significance.csv",
        f"{base}comparisons/{comparison.pk}/pairs/{pair.pk}.csv",
        f"{base}jobs/evaluation/{evaluation.pk}.json",
        f"{base}jobs/comparison/{comparison.pk}.json",
    ]


WRITE_PATHS = ["runs/new/", "qrels/new/", "evaluations/new/", "comparisons/new/"]


@pytest.mark.django_db
class TestAccess:
    def test_it_lets_editors_and_viewers_read_every_page(
        self, client: Client, team: Team, theo: User, vera: User, done: dict[str, Any]
    ) -> None:
        for user in (theo, vera):
            logged_in(client, user)
            assert [client.get(url).status_code for url in read_urls(team, done)] == [200] * 10, user

    def test_it_hides_the_team_from_other_teams_and_sends_visitors_to_log_in(
        self, client: Client, team: Team, otto: User, other_team: Team, done: dict[str, Any]
    ) -> None:
        urls = read_urls(team, done)
        for url in urls:
            response = client.get(url)
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
        logged_in(client, otto)
        assert [client.get(url).status_code for url in urls] == [404] * 10
        # Nor does another team's address reach the search team's objects.
        foreign = [url.replace("/teams/search/", "/teams/fraud/") for url in urls[1:]]
        assert [client.get(url).status_code for url in foreign] == [404] * 9
        assert client.get("/teams/fraud/").status_code == 200

    def test_it_gives_the_forms_to_editors_only(
        self, client: Client, team: Team, theo: User, vera: User, otto: User, sources: Any
    ) -> None:
        urls = [f"/teams/search/{path}" for path in WRITE_PATHS] + ["/teams/search/qrels/from-build/"]
        logged_in(client, theo)
        assert [client.get(url).status_code for url in urls[:4]] == [200] * 4
        assert b"Upload a run" in client.get("/teams/search/").content
        logged_in(client, vera)
        assert [client.get(url).status_code for url in urls] == [403, 403, 403, 403, 405]
        assert [client.post(url, {"name": "x"}).status_code for url in urls] == [403] * 5
        home = client.get("/teams/search/").content.decode()
        assert "Upload a run" not in home and "a viewer" in home
        assert (
            "Evaluate a run on these qrels"
            not in client.get(f"/teams/search/leaderboard/{sources[0].pk}/").content.decode()
        )
        logged_in(client, otto)
        assert [client.post(url, {"name": "x"}).status_code for url in urls] == [404] * 5
        assert not Run.objects.filter(name="x").exists()

    def test_it_lets_a_superuser_in_as_an_editor(self, client: Client, team: Team) -> None:
        admin = User.objects.create_superuser("root", "root@example.org", "pw")
        logged_in(client, admin)
        assert client.get("/teams/search/runs/new/").status_code == 200


@pytest.mark.django_db
class TestTeamHome:
    def test_it_lists_runs_qrels_evaluations_and_comparisons(
        self, client: Client, team: Team, vera: User, done: dict[str, Any]
    ) -> None:
        page = logged_in(client, vera).get("/teams/search/").content.decode()
        assert "bm25" in page and "dense" in page and "judged" in page
        assert f'href="/teams/search/leaderboard/{done["qrels"].pk}/"' in page
        assert f'href="/teams/search/comparisons/{done["comparison"].pk}/"' in page
        value = next(r.value for r in done["evaluations"][0].results if r.measure == "map")
        assert f"map <strong>{value:.4f}</strong>" in page
        assert page.count('status-done">Done') == 3 and "data-job-url" not in page

    def test_it_lets_an_unfinished_job_poll_its_state(
        self, client: Client, team: Team, vera: User, sources: Any
    ) -> None:
        qrels, good, _ = sources
        evaluation = evaluations.evaluation_create(run=good, qrels=qrels, enqueue=False)
        page = logged_in(client, vera).get("/teams/search/").content.decode()
        assert f'data-job-url="/teams/search/jobs/evaluation/{evaluation.pk}.json"' in page
        assert "data-reload-when-done" in page and 'src="/static/evalplatform/jobs.js"' in page

    def test_it_shows_a_failed_jobs_error(self, client: Client, team: Team, theo: User, sources: Any) -> None:
        qrels, _, _ = sources
        stranger = uploads.run_upload(team=team, upload=upload("other.run", "x1 Q0 d1 1 1.0 t\n"))
        evaluation = evaluations.evaluation_create(run=stranger, qrels=qrels, enqueue=False)
        evaluations.evaluation_run(evaluation_id=evaluation.pk)
        page = logged_in(client, theo).get("/teams/search/").content.decode()
        assert 'status-failed">Failed' in page
        assert Evaluation.objects.get(pk=evaluation.pk).error in page

    def test_it_reads_the_page_in_a_fixed_number_of_queries(
        self, client: Client, team: Team, theo: User, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels = sources[0]
        many_runs(team, qrels, 3)
        compare_now(qrels, list(sources[1:]))
        logged_in(client, theo)
        with django_assert_max_num_queries(17) as few:
            assert client.get("/teams/search/").status_code == 200
        many_runs(team, qrels, 30, start=3)
        for _ in range(5):
            evaluations.comparison_create(qrels=qrels, runs=list(sources[1:]), enqueue=False)
        with django_assert_max_num_queries(len(few.captured_queries)):
            page = client.get("/teams/search/").content.decode()
        assert "run32" in page

    def test_it_lists_the_users_teams(self, client: Client, team: Team, other_team: Team, vera: User) -> None:
        page = logged_in(client, vera).get("/teams/").content.decode()
        assert 'href="/teams/search/"' in page and "Viewer" in page and "/teams/fraud/" not in page


@pytest.mark.django_db
class TestJobState:
    def test_it_returns_the_jobs_state(self, client: Client, team: Team, vera: User, sources: Any) -> None:
        qrels, good, weak = sources
        evaluation = evaluations.evaluation_create(run=good, qrels=qrels, enqueue=False)
        Evaluation.objects.filter(pk=evaluation.pk).update(
            status="running", progress=0.25, progress_note="reading"
        )
        logged_in(client, vera)
        response = client.get(f"/teams/search/jobs/evaluation/{evaluation.pk}.json")
        assert response.status_code == 200 and "no-cache" in response["Cache-Control"]
        state = response.json()
        assert (state["status"], state["percent"], state["note"]) == ("running", 25, "reading")
        assert state == json.loads(json.dumps(Evaluation.objects.get(pk=evaluation.pk).state()))
        comparison = evaluations.comparison_create(qrels=qrels, runs=[good, weak], enqueue=False)
        assert client.get(f"/teams/search/jobs/comparison/{comparison.pk}.json").json()["status"] == "pending"

    def test_it_knows_only_evaluations_and_comparisons(self, client: Client, team: Team, vera: User) -> None:
        logged_in(client, vera)
        assert client.get("/teams/search/jobs/build/1.json").status_code == 404
        assert client.get("/teams/search/jobs/evaluation/999.json").status_code == 404


@pytest.mark.django_db
class TestHome:
    def test_it_shows_a_team_member_their_teams_and_latest_evaluations(
        self, client: Client, team: Team, theo: User, done: dict[str, Any]
    ) -> None:
        page = logged_in(client, theo).get("/").content.decode()
        assert "Welcome, theo" in page and 'href="/teams/search/"' in page and "Editor" in page
        for evaluation in done["evaluations"]:
            assert evaluation.get_absolute_url().replace("&", "&amp;") in page
        assert "Open alerts" in page and "No open alert in your teams." in page
        assert 'href="/teams/"' in page  # the navigation's Teams link
        pending = evaluations.evaluation_create(
            run=done["good"], qrels=done["qrels"], rel_level=2, enqueue=False
        )
        page = client.get("/").content.decode()
        assert f'data-job-url="/teams/search/jobs/evaluation/{pending.pk}.json"' in page and "jobs.js" in page

    def test_it_keeps_the_annotator_and_lead_parts(self, client: Client, alice: User) -> None:
        page = logged_in(client, alice).get("/").content.decode()
        assert "Judge" in page and "Your teams" not in page and 'href="/teams/"' not in page
        lena = make_user(LENA)
        assert "Lead projects" in logged_in(client, lena).get("/").content.decode()

    def test_it_reads_the_home_page_in_a_fixed_number_of_queries(
        self, client: Client, team: Team, theo: User, sources: Any, django_assert_max_num_queries: Any
    ) -> None:
        qrels = sources[0]
        many_runs(team, qrels, 2)
        logged_in(client, theo)
        # 10: the session and user, the roles, the projects, the teams, the evaluations with their values,
        # the latest observations (two) and the open alerts.
        with django_assert_max_num_queries(14) as few:
            client.get("/")
        many_runs(team, qrels, 20, start=2)
        with django_assert_max_num_queries(len(few.captured_queries)):
            client.get("/")


@pytest.mark.django_db
def test_it_lists_a_linked_projects_finished_builds_only(client: Client, team: Team, theo: User) -> None:
    project = build_project(lead=make_user(LENA), slug="judged")
    project.team = team
    project.save()
    QrelsBuild.objects.create(project=project, version=1, status="done", pairs_kept=3, content_hash="h")
    QrelsBuild.objects.create(project=project, version=2, status="running")
    page = logged_in(client, theo).get("/teams/search/qrels/new/").content.decode()
    assert "Judged v1 (3 judged pairs" in page and "Judged v2" not in page
