"""A home that answers "what changed": the team's home and the home page list, newest first, the runs
evaluated (or failed), new qrels versions with the leaderboard diff a new version of a project makes, and
alerts opened and resolved; an annotator's home shows their queues and their own accuracy on gold at each
quality recompute, and never a gold label."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotations import qrels as qrels_builds
from annotations.models import GoldLabel, Task
from annotations.quality import services as quality
from annotations.selectors import annotator_accuracy_trend, annotator_queues
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import AlertEvent, Evaluation
from monitoring.teams.activity import team_activity
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import BOB, client_for, make_user
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_alerts import monitor, rule

pytestmark = pytest.mark.django_db
NOW = timezone.now()


def evaluated(team: Team, name: str, minutes_ago: int, *, failed: bool = False) -> Evaluation:
    qrels_text, make_run = synthetic_collection(queries=3, docs=5)
    qrels = team.qrels_sources.first() or uploads.qrels_upload(
        team=team, upload=upload("judged.qrels", qrels_text)
    )
    run = uploads.run_upload(team=team, upload=upload(f"{name}.run", make_run(1, 1.0)), name=name)
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=["map"], enqueue=False)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=JobStatus.FAILED if failed else JobStatus.DONE,
        error="late.run:3: not a number" if failed else "",
        finished_at=NOW - timedelta(minutes=minutes_ago),
    )
    return evaluation


class TestTeamActivity:
    def test_it_lists_evaluations_qrels_versions_leaderboard_diffs_and_alerts_newest_first(
        self, team: Team, lena: User, alice: User
    ) -> None:
        evaluated(team, "bm25", 50)
        evaluated(team, "late", 40, failed=True)
        bob = make_user(BOB)
        project = build_project(
            lead=lena, annotators=[alice, bob], slug="alpha", topics=1, docs_per_topic=3, team=team
        )
        tasks = list(Task.objects.filter(project=project))
        sources = []
        for person in (alice, bob):
            record_answers(project, [(person, task, 2) for task in tasks])
            build = qrels_builds.qrels_build_create(project=project, created_by=None, enqueue=False)
            qrels_builds.qrels_build_run(build_id=build.pk)
            build.refresh_from_db()
            sources.append(uploads.qrels_source_for_build(team=team, build=build))
        from monitoring.models import EmbeddingStream

        stream = EmbeddingStream.objects.create(team=team, slug="docs", name="Docs", dimension=8)
        r = rule(stream, threshold=0.5)
        monitor(stream, 0, avg_cosine_similarity=0.9)
        monitor(stream, 1, avg_cosine_similarity=0.1)
        event = AlertEvent.objects.get(rule=r)
        assert event.status == AlertEvent.Status.RESOLVED

        activity = team_activity(teams=[team], limit=50)
        kinds = [a.kind for a in activity]
        assert sorted(kinds) == sorted(
            ["evaluated", "failed", "qrels", "qrels", "qrels", "leaderboard", "opened", "resolved"]
        )
        assert [a.at for a in activity] == sorted((a.at for a in activity), reverse=True)
        (diff,) = [a for a in activity if a.kind == "leaderboard"]
        assert diff.text == f"Leaderboard of {project.name} on v2 against v1"
        assert diff.url == f"/teams/search/leaderboard/{sources[1].pk}/diff/?from={sources[0].pk}"
        (failed,) = [a for a in activity if a.kind == "failed"]
        assert failed.text == "late on judged failed: late.run:3: not a number"
        assert [a.text for a in activity if a.kind == "opened"] == [
            "too_similar: avg_cosine_similarity = 0.9"
        ]
        assert len(team_activity(teams=[team], limit=3)) == 3

    def test_it_reads_a_fixed_number_of_queries_and_nothing_of_other_teams(
        self, team: Team, other_team: Team, django_assert_num_queries: Any
    ) -> None:
        evaluated(team, "a", 5)
        with django_assert_num_queries(4) as counted:
            team_activity(teams=[team])
        few = len(counted.captured_queries)
        for n in range(5):
            evaluated(team, f"b{n}", n)
        evaluated(other_team, "theirs", 1)
        with django_assert_num_queries(few):
            activity = team_activity(teams=[team])
        assert "theirs" not in " ".join(a.text for a in activity)

    def test_the_team_page_and_the_home_page_show_it(self, team: Team, vera: User) -> None:
        evaluated(team, "bm25", 5)
        page = client_for(vera).get("/teams/search/").content.decode()
        assert "What changed" in page and "bm25 evaluated on judged" in page
        home = client_for(vera).get("/").content.decode()
        assert "What changed in your teams" in home and "bm25 evaluated on judged" in home


class TestAnnotatorHome:
    def test_queues_and_the_own_accuracy_trend_without_gold_labels(self, lena: User, alice: User) -> None:
        bob = make_user(BOB)
        project = build_project(
            lead=lena, annotators=[alice, bob], slug="alpha", topics=2, docs_per_topic=5, gold_per_topic=2
        )
        gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
        plain = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
        record_answers(
            project, [(alice, gold[0], 3), (alice, gold[1], 2), (alice, plain[0], 1), (bob, gold[0], 0)]
        )
        assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"
        record_answers(project, [(alice, gold[2], 3), (alice, gold[3], 3)])
        assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"

        (queue,) = annotator_queues(user=alice)
        assert (queue.answered, queue.remaining) == (5, 5)
        (trend,) = annotator_accuracy_trend(user=alice)
        assert [(p.exact, p.within_one) for p in trend.points] == [(0.5, 1.0), (0.75, 1.0)]

        page = client_for(alice).get("/").content.decode()
        assert (
            "Your queues" in page
            and "Your accuracy on the hidden checks" in page
            and "gold" not in page.lower()
        )
        assert "0.50" in page and "0.75" in page
        # Nothing that names gold items, their labels, or another annotator.
        for text in [gold[0].document.doc_id, "bob", "is_gold"]:
            assert text not in page
        assert GoldLabel.objects.filter(task__project=project).count() == 4


@pytest.mark.services
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_homes_answer_what_changed_and_a_lead_downloads_every_answer_in_chromium(
    page: Any, live_server: Any, team: Team, lena: User, alice: User
) -> None:
    from tests.conftest import ALICE, LENA, browser_log_in, screenshot_path
    from tests.monitoring.conftest import VERA

    evaluated(team, "bm25", 5)
    project = build_project(
        lead=lena, annotators=[alice], slug="alpha", topics=1, docs_per_topic=4, gold_per_topic=2
    )
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    record_answers(project, [(alice, tasks[0], 3), (alice, tasks[1], 1), (alice, tasks[2], 2)])
    assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"

    browser_log_in(page, live_server, VERA.username, VERA.password)
    assert "bm25 evaluated on judged" in page.locator("#activity").inner_text()
    page.screenshot(path=str(screenshot_path("home-what-changed.png")))
    page.locator("#activity").get_by_role("link", name="bm25 evaluated on judged").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Run bm25"

    page.context.clear_cookies()
    browser_log_in(page, live_server, ALICE.username, ALICE.password)
    queues = page.locator("#home-queues").inner_text()
    assert "Alpha" in queues and "1" in queues and "3" in queues
    assert page.locator("#accuracy-alpha tbody tr").count() == 1
    assert "0.50" in page.locator("#accuracy-alpha").inner_text() and "gold" not in page.content().lower()

    page.context.clear_cookies()
    browser_log_in(page, live_server, LENA.username, LENA.password)
    page.goto(f"{live_server.url}/projects/alpha/")
    with page.expect_download() as download:
        page.locator("#answers-export").get_by_role("link", name="CSV").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert text.splitlines()[0].startswith("annotator,qid,doc_id,grade") and len(text.splitlines()) == 4
