"""Qrels builds: what is kept and why, aggregation, reliability, reproducible exports, the idempotent task
with its lease (and through a real worker), the commands, and the demo end to end with eval_retrieval."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client, RequestFactory
from django.utils import timezone

from annotations import qrels, services
from annotations.demo import DEMO_SLUG
from annotations.models import Project, QrelsBuild, QrelsJudgment, Task, Topic
from annotations.quality import services as quality
from evalcore.judging import QrelsError
from evalplatform.celery import app
from tests.annotations.conftest import QueuedTasks, build_project, record_answers
from tests.conftest import WorkerProcess

Status = QrelsBuild.Status


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(4)  # ann0-ann2 careful, ann3 careless


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """Ten gold pairs (grade 3) and ten ordinary ones, answered so that every drop reason occurs.

    Ordinary pairs o0..o9: o0 ann0 2, ann1 3 (kept); o1 0 and 3 (disagreement); o2 one label (too few);
    o3 none; o4 ann0 4 and careless ann3 4 (too few once ann3 is excluded); o5 1, 1 and a too-fast 2;
    o6 4, 4, 3; o7-o9 none. An attention check answered by ann0 never enters the qrels.
    """
    project = build_project(lead=lena, annotators=people, topics=2, docs_per_topic=10, gold_per_topic=5)
    gold = list(Task.objects.filter(project=project, is_gold=True).order_by("pk"))
    o = list(Task.objects.filter(project=project, is_gold=False).order_by("pk"))
    ann0, ann1, ann2, ann3 = people
    check = services.attention_check_create(
        project=project, topic=Topic.objects.get(project=project, qid="q0"), doc_id="check", title="Check",
        text="Rate this page 0.", expected_grade=0, reason="Says so.",
    )  # fmt: skip
    record_answers(
        project,
        [(person, task, 3) for person in (ann0, ann1, ann2) for task in gold]
        + [(ann3, task, 0, 2.0) for task in gold]
        + [(ann0, o[0], 2), (ann1, o[0], 3), (ann0, o[1], 0), (ann1, o[1], 3), (ann0, o[2], 2)]
        + [(ann0, o[4], 4), (ann3, o[4], 4, 2.0)]
        + [(ann0, o[5], 1, 12.5), (ann1, o[5], 1, 30.25), (ann2, o[5], 2, 1.0, {"too_fast": True})]
        + [(ann0, o[6], 4), (ann1, o[6], 4), (ann2, o[6], 3), (ann0, check.task, 0)],
    )
    return project


def build(project: Project, **params: Any) -> QrelsBuild:
    created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False, **params)
    assert qrels.qrels_build_run(build_id=created.pk).status == "done"
    created.refresh_from_db()
    return created


def rels(build: QrelsBuild) -> dict[str, int]:
    return {f"{j.qid}/{j.doc_id}": j.rel for j in QrelsJudgment.objects.filter(build=build)}


@pytest.mark.django_db
class TestBuilding:
    def test_it_counts_the_pairs_and_labels_kept_and_dropped_by_reason(self, project: Project) -> None:
        result = build(project)
        assert result.status == Status.DONE and result.version == 1
        assert result.counts == {
            "pairs": {
                "total": 20,
                "kept": 13,
                "dropped": {"no_labels": 4, "too_few_labels": 2, "disagreement": 1},
            },
            "labels": {
                "total": 54,
                "used": 41,
                "in_kept_pairs": 37,
                "dropped": {"attention_check": 1, "too_fast": 1, "excluded_annotator": 11},
            },
            "adjudicated": 0,
            "sources": {"crowd": 13, "adjudication": 0},
            "use_adjudications": True,
            "gold_mismatches": [],  # the gold pairs are kept with their gold grade
        }
        assert result.pairs_kept == 13 == QrelsJudgment.objects.filter(build=result).count()
        assert result.annotators == {
            "included": [
                {"username": "ann0", "reason": "reliable"},
                {"username": "ann1", "reason": "reliable"},
                {"username": "ann2", "reason": "reliable"},
            ],
            "excluded": [{"username": "ann3", "reason": "low_accuracy"}],
        }
        kept = rels(result)
        assert (kept["q0/d0-5"], kept["q0/d0-0"], kept["q1/d1-0"]) == (2, 3, 3)  # o0: median 2.5 rounds down
        assert (kept["q1/d1-5"], kept["q1/d1-6"]) == (1, 4)  # o5 without its too-fast label; o6
        assert {"q0/d0-6", "q0/d0-7", "q0/d0-8", "q0/d0-9", "q1/d1-7"}.isdisjoint(kept)
        assert result.agreement["used_labels"]["n_labels"] == 41
        assert result.agreement["kept_pairs"]["pairwise_agreement_within_1"] == 1.0
        assert (
            result.content_hash == hashlib.sha256(qrels.qrels_export(result, fmt="trec").encode()).hexdigest()
        )

    @pytest.mark.parametrize(
        ("aggregation", "o0", "o6"),
        [("median", 2, 4), ("mean", 3, 4), ("majority", 2, 4), ("dawid_skene", None, 4)],
    )
    def test_it_aggregates_each_pair_by_the_chosen_method(
        self, project: Project, aggregation: str, o0: int | None, o6: int
    ) -> None:
        result = build(project, aggregation=aggregation)
        kept = rels(result)
        assert kept["q1/d1-6"] == o6
        assert kept["q0/d0-5"] in ((2, 3) if o0 is None else (o0,))
        if aggregation == "mean":
            judgment = QrelsJudgment.objects.get(build=result, qid="q0", doc_id="d0-5")
            assert judgment.score == 2.5  # kept before rounding half up

    def test_it_follows_the_leads_overrides(self, project: Project, people: list[User], lena: User) -> None:
        quality.annotator_override_set(project=project, annotator=people[3], decision="include", by=lena)
        quality.annotator_override_set(project=project, annotator=people[2], decision="exclude", by=lena)
        result = build(project)
        assert {a["username"]: a["reason"] for a in result.annotators["excluded"]} == {"ann2": "disqualified"}
        assert {"username": "ann3", "reason": "reinstated"} in result.annotators["included"]
        kept = rels(result)
        assert kept["q0/d0-9"] == 4  # o4: ann0 and the reinstated ann3
        assert "q0/d0-0" not in kept  # gold pairs now disagree: 3, 3 from ann0-1 and 0 from ann3

    def test_it_gives_byte_identical_exports_for_the_same_inputs_and_parameters(
        self, project: Project
    ) -> None:
        first, second = build(project), build(project)
        assert (first.version, second.version) == (1, 2)
        for fmt in qrels.EXPORT_FORMATS:
            assert qrels.qrels_export(first, fmt=fmt).encode() == qrels.qrels_export(second, fmt=fmt).encode()
        assert first.content_hash == second.content_hash
        looser = build(project, tolerance=3)
        assert looser.content_hash != first.content_hash
        assert looser.counts["pairs"]["dropped"]["disagreement"] == 0

    def test_it_writes_trec_sorted_by_qid_then_docno(self, project: Project) -> None:
        lines = qrels.qrels_export(build(project), fmt="trec").splitlines()
        assert lines[0] == "q0 0 d0-0 3"
        assert "q0 0 d0-5 2" in lines and "q1 0 d1-5 1" in lines
        keys = [(line.split()[0], line.split()[2]) for line in lines]
        assert keys == sorted(keys) and len(keys) == 13
        assert all(line.split()[1] == "0" for line in lines)

    def test_it_writes_jsonl_with_each_labels_provenance(self, project: Project) -> None:
        lines = [json.loads(line) for line in qrels.qrels_export(build(project), fmt="jsonl").splitlines()]
        pair = next(line for line in lines if line["doc_id"] == "d1-5")
        assert pair == {
            "qid": "q1",
            "doc_id": "d1-5",
            "rel": 1,
            "score": 1.0,
            "n_labels": 2,
            "labels": [
                {
                    "annotator": "ann0",
                    "grade": 1,
                    "seconds": 12.5,
                    "created_at": pair["labels"][0]["created_at"],
                },
                {
                    "annotator": "ann1",
                    "grade": 1,
                    "seconds": 30.25,
                    "created_at": pair["labels"][1]["created_at"],
                },
            ],
        }
        assert pair["labels"][0]["created_at"].startswith("2026-03-02T") and pair["labels"][0][
            "created_at"
        ].endswith("Z")

    def test_it_numbers_versions_per_project(self, project: Project, lena: User) -> None:
        other = build_project(lead=lena, slug="other")
        versions = [
            qrels.qrels_build_create(project=p, created_by=lena, enqueue=False).version
            for p in (project, project, other, project)
        ]
        assert versions == [1, 2, 1, 3]

    def test_it_refuses_bad_parameters(self, project: Project) -> None:
        for params in ({"aggregation": "mode"}, {"tolerance": -1}, {"min_accuracy": 1.5}, {"min_labels": 0}):
            with pytest.raises(QrelsError):
                qrels.qrels_build_create(project=project, created_by=None, enqueue=False, **params)
        assert not QrelsBuild.objects.exists()

    def test_it_fails_with_a_clear_message_on_ids_trec_cannot_hold(self, project: Project) -> None:
        Topic.objects.filter(project=project, qid="q0").update(qid="query zero")
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        assert qrels.qrels_build_run(build_id=created.pk).status == "failed"
        created.refresh_from_db()
        assert created.status == Status.FAILED and "cannot be written as TREC qrels" in created.error
        assert not QrelsJudgment.objects.filter(build=created).exists()


@pytest.mark.django_db
class TestBuildTask:
    def test_it_does_nothing_when_run_again(self, project: Project) -> None:
        done = build(project)
        assert qrels.qrels_build_run(build_id=done.pk).status == "finished"
        again = QrelsBuild.objects.get(pk=done.pk)
        assert (again.finished_at, again.attempts, again.content_hash) == (
            done.finished_at,
            1,
            done.content_hash,
        )
        assert QrelsJudgment.objects.filter(build=done).count() == 13

    def test_it_retries_while_another_worker_holds_a_live_lease(self, project: Project) -> None:
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        QrelsBuild.objects.filter(pk=created.pk).update(
            status=Status.RUNNING, lease_token=uuid.uuid4(), lease_expires_at=timezone.now() + timedelta(minutes=5),
            attempts=1,
        )  # fmt: skip
        outcome = qrels.qrels_build_run(build_id=created.pk)
        assert outcome.status == "busy" and 290 < outcome.retry_in < 310
        assert not QrelsJudgment.objects.filter(build=created).exists()

    def test_it_takes_over_a_build_whose_worker_died_without_duplicating_rows(self, project: Project) -> None:
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        QrelsBuild.objects.filter(pk=created.pk).update(
            status=Status.RUNNING, lease_token=uuid.uuid4(), lease_expires_at=timezone.now() - timedelta(seconds=1),
            attempts=1,
        )  # fmt: skip
        QrelsJudgment.objects.create(build=created, qid="q0", doc_id="d0-0", rel=0, score=0, n_labels=0)
        assert qrels.qrels_build_run(build_id=created.pk).status == "done"
        created.refresh_from_db()
        assert (created.status, created.attempts, created.lease_token) == (Status.DONE, 2, None)
        assert QrelsJudgment.objects.filter(build=created).count() == 13
        assert QrelsJudgment.objects.get(build=created, qid="q0", doc_id="d0-0").rel == 3

    def test_it_discards_its_result_when_its_lease_was_taken_over(
        self, project: Project, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        compute = qrels.qrels_compute
        usurper = uuid.uuid4()

        def slow_compute(*args: Any, **kwargs: Any) -> Any:
            # Meanwhile our lease lapsed and another worker claimed the build.
            QrelsBuild.objects.filter(pk=created.pk).update(lease_token=usurper)
            return compute(*args, **kwargs)

        monkeypatch.setattr(qrels, "qrels_compute", slow_compute)
        assert qrels.qrels_build_run(build_id=created.pk).status == "lost"
        created.refresh_from_db()
        assert (created.status, created.lease_token) == (Status.RUNNING, usurper)
        assert not QrelsJudgment.objects.filter(build=created).exists()

    def test_it_gives_up_after_repeated_lost_runs(self, project: Project) -> None:
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        QrelsBuild.objects.filter(pk=created.pk).update(
            status=Status.RUNNING,
            lease_expires_at=timezone.now() - timedelta(seconds=1),
            attempts=QrelsBuild.max_attempts,
        )
        assert qrels.qrels_build_run(build_id=created.pk).status == "failed"
        created.refresh_from_db()
        assert created.status == Status.FAILED and "Gave up after 3 attempts" in created.error

    def test_it_queues_the_build_on_the_heavy_queue_after_commit(
        self, project: Project, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            created = qrels.qrels_build_create(project=project, created_by=None)
        assert queued.sent == [
            ("annotations.tasks.qrels_build", (created.pk,), {"countdown": 0, "retry": False})
        ]
        assert app.amqp.router.route({}, "annotations.tasks.qrels_build")["queue"].name == "heavy"
        assert app.amqp.router.route({}, "annotations.tasks.quality_recompute")["queue"].name == "heavy"

    def test_it_fails_the_build_with_the_reason_when_the_broker_is_down(
        self, project: Project, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        queued.broker_down = True
        with django_capture_on_commit_callbacks(execute=True):
            created = qrels.qrels_build_create(project=project, created_by=None)
        created.refresh_from_db()
        assert created.status == Status.FAILED
        assert "task queue is unreachable" in created.error and "--sync" in created.error


@pytest.mark.django_db
class TestExportCounts:
    """`qrels_export_counts`, summed by the database, against the TREC export's own text."""

    def test_they_are_the_trec_exports_queries_and_bytes(self, project: Project) -> None:
        done = build(project)
        text = qrels.qrels_export(done, fmt="trec")
        assert qrels.qrels_export_counts(done) == (len({line.split()[0] for line in text.splitlines()}),
                                                   len(text.encode()))  # fmt: skip

    def test_they_count_bytes_not_characters_and_signed_grades(self, project: Project) -> None:
        done = build(project)
        QrelsJudgment.objects.bulk_create(
            QrelsJudgment(build=done, qid=qid, doc_id=doc_id, rel=rel, score=rel, n_labels=1)
            for qid, doc_id, rel in (("q-é", "文書-1", -1), ("q-é", "doc-2", 12), ("z", "ü", 0))
        )
        text = qrels.qrels_export(done, fmt="trec")
        assert "q-é 0 文書-1 -1\n" in text
        assert qrels.qrels_export_counts(done) == (len({line.split()[0] for line in text.splitlines()}),
                                                   len(text.encode()))  # fmt: skip

    def test_an_unfinished_build_has_none(self, project: Project) -> None:
        created = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        assert qrels.qrels_export_counts(created) == (0, 0)


@pytest.mark.django_db
class TestImmutability:
    def test_it_shows_builds_read_only_in_the_admin(self, project: Project, lena: User) -> None:
        done = build(project)
        model_admin = site._registry[QrelsBuild]
        request = RequestFactory().get("/")
        request.user = User.objects.create_superuser("root", "root@example.org", "root-password-123")
        assert not model_admin.has_change_permission(request, done)
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_delete_permission(request, done)
        assert not site._registry[QrelsJudgment].has_change_permission(request)
        client = Client()
        client.force_login(request.user)
        response = client.post(f"/admin/annotations/qrelsbuild/{done.pk}/change/", {"tolerance": 3})
        assert response.status_code == 403
        done.refresh_from_db()
        assert done.tolerance == 1.0

    def test_it_never_claims_a_finished_build(self, project: Project) -> None:
        done = build(project)
        assert not QrelsBuild.objects.unfinished().filter(pk=done.pk).exists()
        assert (
            not QrelsBuild.objects.claimable(timezone.now() + timedelta(days=1)).filter(pk=done.pk).exists()
        )


@pytest.mark.django_db
class TestCommands:
    def test_it_builds_in_process_with_sync_and_prints_one_json_object(self, project: Project) -> None:
        out = StringIO()
        call_command("build_qrels", project.slug, "--sync", "--json", "--aggregation", "mean", stdout=out)
        data = json.loads(out.getvalue())
        assert data["status"] == "done" and data["version"] == 1 and data["pairs_kept"] == 13
        assert data["parameters"] == {
            "tolerance": 1.0, "aggregation": "mean", "min_accuracy": 0.7, "min_gold": 10, "min_labels": 2,
            "use_adjudications": True,
        }  # fmt: skip
        assert data["adjudicated"] == 0
        assert [a["username"] for a in data["annotators"]["excluded"]] == ["ann3"]
        assert data["content_hash"] == QrelsBuild.objects.get(pk=data["build"]).content_hash

    def test_it_queues_the_build_by_default_and_prints_its_id(
        self, project: Project, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        out = StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command("build_qrels", project.slug, "--min-gold", "5", stdout=out)
        created = QrelsBuild.objects.get()
        assert (created.status, created.min_gold) == (Status.PENDING, 5)
        assert f"build id {created.pk}" in out.getvalue()
        assert queued.names() == ["annotations.tasks.qrels_build"]

    def test_it_reports_bad_arguments(self, project: Project) -> None:
        with pytest.raises(CommandError, match="no project"):
            call_command("build_qrels", "nope", "--sync", stdout=StringIO())
        with pytest.raises(CommandError, match="minimum accuracy"):
            call_command("build_qrels", project.slug, "--sync", "--min-accuracy", "2", stdout=StringIO())

    def test_it_exports_a_build_by_id_or_by_project_and_version(
        self, project: Project, tmp_path: Path
    ) -> None:
        done = build(project)
        by_id, by_version = StringIO(), StringIO()
        call_command("export_qrels", str(done.pk), stdout=by_id)
        call_command("export_qrels", f"{project.slug}:1", "--format", "trec", stdout=by_version)
        assert by_id.getvalue() == by_version.getvalue() == qrels.qrels_export(done, fmt="trec")
        target = tmp_path / "qrels.jsonl"
        call_command(
            "export_qrels", str(done.pk), "--format", "jsonl", "--output", str(target), stderr=StringIO()
        )
        assert target.read_bytes() == qrels.qrels_export(done, fmt="jsonl").encode()
        assert len(target.read_text().splitlines()) == 13

    def test_it_refuses_to_export_an_unfinished_or_unknown_build(self, project: Project) -> None:
        pending = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
        with pytest.raises(CommandError, match="only a done build"):
            call_command("export_qrels", str(pending.pk), stdout=StringIO())
        with pytest.raises(CommandError, match="no qrels build"):
            call_command("export_qrels", f"{project.slug}:9", stdout=StringIO())
        with pytest.raises(CommandError, match="PROJECT:VERSION"):
            call_command("export_qrels", "latest", stdout=StringIO())


@pytest.mark.django_db
class TestDemo:
    def test_it_excludes_the_careless_demo_annotators_and_the_export_evaluates(self, tmp_path: Path) -> None:
        call_command("load_demo", stdout=StringIO())
        # load_demo built v1, and v2 once the judging loop's pool was judged: a build now equals v2.
        latest = QrelsBuild.objects.filter(project__slug=DEMO_SLUG).order_by("-version").first()
        assert latest is not None and latest.version == 2
        out = StringIO()
        call_command("build_qrels", DEMO_SLUG, "--sync", "--json", stdout=out)
        data = json.loads(out.getvalue())
        excluded = {a["username"]: a["reason"] for a in data["annotators"]["excluded"]}
        included = [a["username"] for a in data["annotators"]["included"]]
        assert excluded == {"eve": "low_accuracy", "mallory": "low_accuracy"}
        assert included == ["carol", "dave"]
        assert data["content_hash"] == latest.content_hash and data["pairs_kept"] > 30
        qrels_file, run_file = tmp_path / "demo.qrels", tmp_path / "demo.run"
        call_command("export_qrels", str(data["build"]), "--output", str(qrels_file), stderr=StringIO())
        pool = Task.objects.filter(project__slug=DEMO_SLUG).values_list("topic__qid", "document__doc_id")
        run_file.write_text(
            "".join(
                f"{qid} Q0 {doc} {rank} {100 - rank} pool\n" for rank, (qid, doc) in enumerate(sorted(pool))
            )
        )
        result = StringIO()
        call_command(
            "eval_retrieval", "--qrels", str(qrels_file), "--run", str(run_file), "-m", "map", "-m", "ndcg_cut_10",
            "--json", stdout=result, stderr=StringIO(),
        )  # fmt: skip
        aggregate = json.loads(result.getvalue())["aggregate"]
        assert 0 < aggregate["map"] <= 1 and 0 < aggregate["ndcg_cut_10"] <= 1


def wait_for(predicate: Any, timeout: float = 30.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestBuildInTheWorker:
    def test_it_builds_in_a_real_worker_process(
        self, celery_worker_process: WorkerProcess, project: Project
    ) -> None:
        out = StringIO()
        call_command("build_qrels", project.slug, "--wait", "--timeout", "60", "--json", stdout=out)
        data = json.loads(out.getvalue())
        assert (data["status"], data["pairs_kept"]) == ("done", 13), celery_worker_process.log()
        assert QrelsJudgment.objects.filter(build_id=data["build"]).count() == 13
        # Delivered again (acks_late re-delivery, or a duplicate), the task changes nothing.
        from annotations.tasks import qrels_build

        qrels_build.delay(data["build"])
        assert wait_for(lambda: "finished" in celery_worker_process.log()), celery_worker_process.log()
        assert QrelsJudgment.objects.filter(build_id=data["build"]).count() == 13
        assert QrelsBuild.objects.get(pk=data["build"]).attempts == 1
