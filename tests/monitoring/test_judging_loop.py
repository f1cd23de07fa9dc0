"""The judging loop on a team's leaderboard (issue 23): coverage on every leaderboard (page, CSV, API),
"judge the gaps" (service, page, API, who may), and a new qrels version re-scoring the linked team (the
hook, its idempotence, and end to end through a real worker)."""

from __future__ import annotations

import csv
import io
import json
import time
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from annotations import qrels as builds
from annotations import services as project_services
from annotations.imports import pairs_add
from annotations.models import Project, ProjectMembership, QrelsBuild, Task
from evalcore.coverage import COVERAGE_MEASURES
from evalcore.retrieval import evaluate
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.evaluations import loop, selectors
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import with_coverage
from monitoring.files import uploads
from monitoring.models import Evaluation, GapsRequest, QrelsSource, Run
from tests.annotations.conftest import build_project, record_answers
from tests.conftest import Persona as PersonaOf
from tests.conftest import QueuedTasks, WorkerProcess, make_user
from tests.monitoring.conftest import upload
from tests.monitoring.test_pages import stored_evaluation

CAROL = PersonaOf("carol", "carol-password-123", "annotator")
TOPICS, DOCS, JUDGED = (
    3,
    6,
    3,
)  # topic i has documents d{i}-0..5; tasks for the first 4; v1 judges the first 3


def run_text(order: list[int], tag: str) -> str:
    """A run ranking, per project topic, its documents in `order`, then a document the project lacks; and
    a topic the project lacks."""
    lines = []
    for i in range(TOPICS):
        ranked = [f"d{i}-{j}" for j in order] + [f"zz{i}"]
        lines += [f"q{i} Q0 {doc} {rank} {100 - rank} {tag}" for rank, doc in enumerate(ranked, start=1)]
    lines += [f"q9 Q0 x{r} {r} {50 - r} {tag}" for r in range(1, 3)]
    return "\n".join(lines) + "\n"


def stable_grade(task: Task) -> int:
    """Carol's grade of an ordinary pair, from its document d{i}-{j} (never from a primary key, whose
    values depend on which tests ran before in the process)."""
    topic, document = (int(part) for part in task.document.doc_id[1:].split("-"))
    return 1 + (topic + document) % 3


def build_version(project: Project, carol: User, tasks: list[Task]) -> QrelsBuild:
    """A done build judging `tasks` (carol's answers, one label each kept)."""
    answered = set(
        Task.objects.filter(project=project, assignments__annotator=carol).values_list("pk", flat=True)
    )
    record_answers(
        project,
        [
            (carol, task, 3 if task.is_gold else stable_grade(task))
            for task in tasks
            if task.pk not in answered
        ],
    )
    build = builds.qrels_build_create(
        project=project, created_by=None, min_gold=1, min_labels=1, enqueue=False
    )
    assert builds.qrels_build_run(build_id=build.pk).status == "done"
    build.refresh_from_db()
    assert build.pairs_kept == len(Task.objects.filter(project=project, assignments__annotator=carol)), (
        build.counts,
        build.annotators,
    )
    return build


@pytest.fixture
def carol(db: None) -> User:
    return make_user(CAROL)  # type: ignore[no-any-return]


@pytest.fixture
def linked(team: Team, lena: User, theo: User, carol: User) -> dict[str, Any]:
    """Project `web` linked to the team (theo edits the team and co-leads the project), its qrels v1
    judging 3 of each topic's 6 documents, tasks for 4 of them, and two runs evaluated on v1."""
    project = build_project(lead=lena, annotators=[carol], slug="web", topics=TOPICS, docs_per_topic=DOCS, gold_per_topic=1,
                            team=team)  # fmt: skip
    project_services.membership_set(project=project, user=theo, role=ProjectMembership.Role.LEAD)
    Task.objects.filter(project=project, document__doc_id__regex=r"-[45]$").delete()
    judged = [
        t for t in Task.objects.filter(project=project).order_by("pk") if int(t.document.doc_id[-1]) < JUDGED
    ]
    v1 = build_version(project, carol, judged)
    source = uploads.qrels_source_for_build(team=team, build=v1)
    runs = [
        uploads.run_upload(team=team, upload=upload(f"{tag}.run", run_text(order, tag)), uploaded_by=theo)
        for tag, order in (("good", [0, 1, 2, 3, 4, 5]), ("late", [5, 4, 3, 0, 1, 2]))
    ]
    for run in runs:
        evaluation = evaluations.evaluation_create(
            run=run, qrels=source, measures=["map", "P_5"], enqueue=False
        )
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done", (
            Evaluation.objects.get(pk=evaluation.pk).error
        )
    return {"project": project, "v1": v1, "source": source, "runs": runs}


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
class TestCoverage:
    def test_it_stores_judged_at_10_and_100_with_every_evaluation_as_evalcore_computes_them(
        self, linked: dict[str, Any]
    ) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        board = selectors.leaderboard(qrels=source)
        assert board.measures == ["map", "P_5"]  # coverage apart from the measures asked for
        row = next(row for row in board.rows if row.run.pk == good.pk)
        qrels = evaluations.read_qrels(source)
        want = evaluate(qrels, evaluations.read_run(good), list(COVERAGE_MEASURES)).aggregate
        # Topic i: documents 0-2 judged of the top 7 retrieved (d0..d5, zz); q9 has no judgment.
        assert row.coverage.judged_10.value == pytest.approx(want["Judged@10"]) == pytest.approx(3 / 7)
        assert row.coverage.unjudged_10 == pytest.approx(4 / 7) and row.coverage.warning

    def test_it_shows_coverage_columns_whatever_the_measures_chosen_and_warns_under_0_9(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        source = linked["source"]
        page = signed_in(theo).get(f"/teams/search/leaderboard/{source.pk}/?measures=map").content.decode()
        assert "Judged@10" in page and "Judged@100" in page and "Unjudged top 10" in page
        assert page.count("coverage-warning") == 2 and "0.429" in page

    def test_it_says_not_computed_for_an_evaluation_made_before_coverage(
        self, team: Team, theo: User
    ) -> None:
        qrels = QrelsSource.objects.create(team=team, name="old", kind="upload", file="qrels/o.qrels")
        run = Run.objects.create(team=team, name="old-run", file="runs/o.run")
        stored_evaluation(run, qrels, {"map": 0.3})
        row = selectors.leaderboard(qrels=qrels).rows[0]
        assert not row.coverage.computed and row.coverage.judged_10 is None and not row.coverage.warning
        page = signed_in(theo).get(f"/teams/search/leaderboard/{qrels.pk}/").content.decode()
        assert "not computed" in page
        body = signed_in(theo).get(f"/api/teams/search/leaderboard/{qrels.pk}/").json()
        assert body["rows"][0]["coverage"] == {
            "computed": False, "judged_10": None, "judged_100": None, "unjudged_10": None,
            "unjudged_100": None, "warning": False,
        }  # fmt: skip

    def test_it_puts_coverage_in_the_csv_and_the_api(self, linked: dict[str, Any], theo: User) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        response = signed_in(theo).get(f"/teams/search/leaderboard/{source.pk}/leaderboard.csv?measures=map")
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        mine = next(row for row in rows if row["run_id"] == str(good.pk))
        assert float(mine["judged_10"]) == pytest.approx(3 / 7) and mine["coverage_warning"] == "true"
        assert float(mine["unjudged_10"]) == pytest.approx(4 / 7) and mine["coverage_computed"] == "true"
        assert "Judged@10" not in rows[0]  # coverage is not a chosen measure column
        body = signed_in(theo).get(f"/api/teams/search/leaderboard/{source.pk}/").json()
        api_row = next(row for row in body["rows"] if row["run"]["id"] == good.pk)
        assert api_row["coverage"]["judged_10"]["value"] == pytest.approx(3 / 7)
        assert api_row["coverage"]["warning"] is True and set(api_row["results"]) == {"map", "P_5"}


@pytest.mark.django_db
class TestComputingCoverage:
    def test_it_re_evaluates_a_run_whose_evaluation_predates_coverage_once(
        self, linked: dict[str, Any], theo: User, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        # An evaluation from before coverage was stored: map alone, the run's only one on these qrels (the
        # leaderboard takes each measure from the newest evaluation that has it, coverage included).
        Evaluation.objects.filter(run=good, qrels=source).delete()
        old = Evaluation.objects.create(
            team=good.team, run=good, qrels=source, measures=["map"], options_key="old"
        )
        assert evaluations.evaluation_run(evaluation_id=old.pk).status == "done"
        client = signed_in(theo)
        page = client.get(f"/teams/search/leaderboard/{source.pk}/").content.decode()
        assert "Coverage not computed for 1 run " in page and 'id="compute-coverage"' in page
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/teams/search/leaderboard/{source.pk}/coverage/", follow=True)
        assert "1 evaluations queued" in response.content.decode()
        new = Evaluation.objects.exclude(pk=old.pk).get(
            run=good, qrels=source, measures=with_coverage(["map"])
        )
        assert queued.names() == ["monitoring.tasks.evaluation_run"] and new.status == "pending"
        body = client.post(f"/api/teams/search/leaderboard/{source.pk}/coverage/").json()
        assert body == {"queued": 1, "evaluations": [new.pk]}  # the same evaluation, found
        assert evaluations.evaluation_run(evaluation_id=new.pk).status == "done"
        row = next(row for row in selectors.leaderboard(qrels=source).rows if row.run.pk == good.pk)
        assert row.evaluation.pk == new.pk and row.coverage.judged_10.value == pytest.approx(3 / 7)
        assert loop.leaderboard_coverage_compute(qrels=source) == []

    def test_a_viewer_may_not(self, linked: dict[str, Any], vera: User) -> None:
        response = signed_in(vera).post(f"/teams/search/leaderboard/{linked['source'].pk}/coverage/")
        assert response.status_code == 403


@pytest.mark.django_db
class TestJudgeTheGaps:
    def test_it_adds_the_unjudged_top_k_pairs_skips_what_the_project_lacks_and_is_idempotent(
        self, linked: dict[str, Any]
    ) -> None:
        project, source, (good, _) = linked["project"], linked["source"], linked["runs"]
        before = Task.objects.filter(project=project).count()
        done = loop.run_gaps_judge(run=good, qrels=source, depth=10)
        # Per topic: d-3 (a task already), d-4 and d-5 (new), zz (no such document); q9's two (no topic).
        assert (done.unjudged, done.created, done.existing) == (14, 6, 3)
        assert (done.missing_topic, done.missing_document) == (2, 3)
        assert Task.objects.filter(project=project).count() == before + 6
        again = loop.run_gaps_judge(run=good, qrels=source, depth=10)
        assert (again.created, again.existing) == (0, 9) and Task.objects.filter(
            project=project
        ).count() == before + 6

    def test_it_reads_only_the_top_k(self, linked: dict[str, Any]) -> None:
        done = loop.run_gaps_judge(run=linked["runs"][1], qrels=linked["source"], depth=2)
        # d-5 and d-4 of each topic (new tasks), and q9's two (no such topic).
        assert (done.unjudged, done.created, done.existing, done.missing_topic) == (8, 6, 0, 2)

    def test_it_refuses_uploaded_qrels_and_a_depth_out_of_range(
        self, linked: dict[str, Any], team: Team
    ) -> None:
        uploaded = uploads.qrels_upload(team=team, upload=upload("u.qrels", "q0 0 d0-0 1\n"))
        with pytest.raises(evaluations.InputError, match="no judging project"):
            loop.run_gaps_judge(run=linked["runs"][0], qrels=uploaded)
        with pytest.raises(evaluations.InputError, match="between 1 and"):
            loop.run_gaps_judge(run=linked["runs"][0], qrels=linked["source"], depth=0)

    def test_the_pairs_service_counts_each_pair_once(self, linked: dict[str, Any]) -> None:
        added = pairs_add(project=linked["project"], pairs=[("q0", "d0-5"), ("q0", "d0-5"), ("q7", "d0-1")])
        assert added.as_dict() == {"requested": 2, "created": 1, "existing": 0, "missing_topic": 1,
                                   "missing_document": 0}  # fmt: skip

    def test_the_button_shows_for_an_editor_who_leads_the_project_and_queues_the_job(
        self, linked: dict[str, Any], theo: User, queued: Any, django_capture_on_commit_callbacks: Any
    ) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        client = signed_in(theo)
        page = client.get(f"/teams/search/leaderboard/{source.pk}/").content.decode()
        assert page.count("Judge the gaps</button>") == 2 and 'id="gap-requests"' not in page
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/teams/search/leaderboard/{source.pk}/runs/{good.pk}/gaps/",
                                   {"depth": "10"}, follow=True)  # fmt: skip
        body = response.content.decode()
        assert "Judging the gaps of good in its top 10: queued." in body and "Waiting for a worker." in body
        job = GapsRequest.objects.get()
        assert (job.run, job.qrels, job.depth, job.created_by) == (good, source, 10, theo)
        assert queued.names() == ["monitoring.tasks.gaps_request_run"]
        before = Task.objects.filter(project=linked["project"]).count()
        assert loop.gaps_request_run(request_id=job.pk).status == "done"
        assert Task.objects.filter(project=linked["project"]).count() == before + 6
        page = client.get(f"/teams/search/leaderboard/{source.pk}/").content.decode()
        assert "6 added to web as tasks, 3 already tasks, 5 skipped" in page

    def test_a_refused_depth_queues_nothing(self, linked: dict[str, Any], theo: User, queued: Any) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        response = signed_in(theo).post(
            f"/teams/search/leaderboard/{source.pk}/runs/{good.pk}/gaps/", {"depth": "0"}, follow=True
        )
        assert "Choose a depth between 1 and 1000." in response.content.decode()
        assert not GapsRequest.objects.exists() and queued.names() == []

    def test_an_editor_who_does_not_lead_the_project_sees_no_button_and_is_refused(
        self, linked: dict[str, Any], theo: User
    ) -> None:
        ProjectMembership.objects.filter(project=linked["project"], user=theo).delete()
        source, (good, _) = linked["source"], linked["runs"]
        client = signed_in(theo)
        assert (
            "Judge the gaps</button>"
            not in client.get(f"/teams/search/leaderboard/{source.pk}/").content.decode()
        )
        assert client.post(f"/teams/search/leaderboard/{source.pk}/runs/{good.pk}/gaps/").status_code == 403
        assert (
            client.post(f"/api/teams/search/leaderboard/{source.pk}/runs/{good.pk}/gaps/").status_code == 403
        )

    def test_the_api_queues_the_gaps_and_its_request_answers_the_counts(
        self, linked: dict[str, Any], theo: User, vera: User, queued: Any
    ) -> None:
        source, (_, late) = linked["source"], linked["runs"]
        url = f"/api/teams/search/leaderboard/{source.pk}/runs/{late.pk}/gaps/"
        response = signed_in(theo).post(url, {"depth": 2}, content_type="application/json")
        assert response.status_code == 202
        body = response.json()
        assert {k: body[k] for k in ("run", "qrels", "depth", "result")} == {
            "run": late.pk, "qrels": source.pk, "depth": 2, "result": None,
        }  # fmt: skip
        assert body["state"]["status"] == "pending"
        assert loop.gaps_request_run(request_id=body["id"]).status == "done"
        # Any member of the team reads it (a viewer too); what it did is the command's counts.
        done = signed_in(vera).get(f"/api/teams/search/gaps-requests/{body['id']}/").json()
        assert done["state"]["status"] == "done"
        assert done["result"] == {"run": late.pk, "qrels": source.pk, "project": "web", "depth": 2, "unjudged": 8,
                                  "created": 6, "existing": 0, "missing_topic": 2, "missing_document": 0,
                                  "prioritised": 0}  # fmt: skip
        bad = signed_in(theo).post(url, {"depth": 5000}, content_type="application/json")
        assert bad.status_code == 400 and "depth" in bad.json()
        assert signed_in(theo).get("/api/teams/search/gaps-requests/999999/").status_code == 404

    def test_a_request_whose_run_file_is_gone_fails_with_its_reason(
        self, linked: dict[str, Any], theo: User, queued: Any
    ) -> None:
        source, (good, _) = linked["source"], linked["runs"]
        job = loop.gaps_request_create(run=good, qrels=source, depth=10, created_by=theo)
        good.file.storage.delete(good.file.name)
        outcome = loop.gaps_request_run(request_id=job.pk)
        job.refresh_from_db()
        assert outcome.status == "failed" and job.status == "failed" and job.error
        page = signed_in(theo).get(f"/teams/search/leaderboard/{source.pk}/").content.decode()
        assert 'data-status="failed"' in page

    def test_the_command_adds_the_gaps_once_and_prints_the_counts(self, linked: dict[str, Any]) -> None:
        source, (_, late) = linked["source"], linked["runs"]
        first, again = StringIO(), StringIO()
        args = ["--team", "search", "--qrels", str(source.pk), "--run", late.name, "--depth", "2"]
        call_command("judge_gaps", *args, "--json", stdout=first)
        assert json.loads(first.getvalue()) == {
            "run": late.pk, "qrels": source.pk, "project": "web", "depth": 2, "unjudged": 8, "created": 6,
            "existing": 0, "missing_topic": 2, "missing_document": 0, "prioritised": 0,
        }  # fmt: skip
        call_command("judge_gaps", *args, stdout=again)
        assert "0 added to web, 6 already there, 2 skipped (topic not in the project)" in again.getvalue()
        with pytest.raises(CommandError, match="no run 'nope'"):
            call_command("judge_gaps", "--team", "search", "--qrels", str(source.pk), "--run", "nope")
        with pytest.raises(CommandError, match="depth between 1 and"):
            call_command("judge_gaps", *args[:-1], "0")


@pytest.mark.django_db
class TestRescore:
    def test_a_finished_build_queues_the_rescoring_which_repeats_every_evaluation_once(
        self,
        linked: dict[str, Any],
        carol: User,
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        project, v1_source = linked["project"], linked["source"]
        with django_capture_on_commit_callbacks(execute=True):
            v2 = build_version(project, carol, list(Task.objects.filter(project=project)))
        assert ("monitoring.tasks.qrels_build_rescore", (v2.pk,)) in [(n, a) for n, a, _ in queued.sent]
        with django_capture_on_commit_callbacks(execute=True):
            created = loop.qrels_build_rescore(build_id=v2.pk)
        v2_source = QrelsSource.objects.get(build=v2)
        before = {(e.run_id, e.options_key) for e in Evaluation.objects.filter(qrels=v1_source)}
        assert {(e.run_id, e.options_key) for e in created} == before and len(created) == 2
        assert all(
            e.qrels_id == v2_source.pk and e.measures == ["map", "P_5", *COVERAGE_MEASURES] for e in created
        )
        assert queued.names().count("monitoring.tasks.evaluation_run") == 2
        again = loop.qrels_build_rescore(build_id=v2.pk)  # a re-delivered task adds nothing
        assert {e.pk for e in again} == {e.pk for e in created}
        assert (
            Evaluation.objects.filter(qrels=v2_source).count() == 2
            and QrelsSource.objects.filter(build=v2).count() == 1
        )

    def test_it_does_nothing_for_a_first_version_or_an_unlinked_project(
        self, linked: dict[str, Any], lena: User
    ) -> None:
        assert loop.qrels_build_rescore(build_id=linked["v1"].pk) == []  # v1 has no version before it
        other = build_project(lead=lena, slug="solo", topics=1, docs_per_topic=2)
        build = builds.qrels_build_create(
            project=other, created_by=None, min_gold=1, min_labels=1, enqueue=False
        )
        builds.qrels_build_run(build_id=build.pk)
        assert loop.qrels_build_rescore(build_id=build.pk) == [] and not QrelsSource.objects.filter(
            build=build
        )


def wait_for(predicate: Any, timeout: float = 90.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_build_on_the_worker_rescores_the_team_there(
    celery_worker_process: WorkerProcess, linked: dict[str, Any], carol: User
) -> None:
    """The build, the re-scoring and the evaluations all run on a real worker, each queued on commit."""
    project = linked["project"]
    record_answers(
        project, [(carol, task, 2) for task in Task.objects.filter(project=project, assignments__isnull=True)]
    )
    v2 = builds.qrels_build_create(project=project, created_by=None, min_gold=1, min_labels=1)

    def rescored() -> bool:
        done = Evaluation.objects.filter(qrels__build_id=v2.pk, status=JobStatus.DONE)
        return done.count() == 2

    assert wait_for(rescored), celery_worker_process.log()
    v2_source = QrelsSource.objects.get(build=v2)
    board = selectors.leaderboard(qrels=v2_source)
    good = next(row for row in board.rows if row.run.name == "good")
    want = evaluate(evaluations.read_qrels(v2_source), evaluations.read_run(good.run), ["map", "Judged@10"])
    assert good.results["map"].value == pytest.approx(want.aggregate["map"])
    assert good.coverage.judged_10.value == pytest.approx(want.aggregate["Judged@10"]) == pytest.approx(4 / 7)
