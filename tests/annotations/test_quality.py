"""Annotator quality: accuracy on gold, too-fast answers, reliability with overrides, agreement, the snapshot
task's lease and debouncing, and the recompute queued after answers (and through a real worker)."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from annotations import selectors, services
from annotations.models import Project, ProjectMembership, QualityRecompute, QualitySnapshot, Task
from annotations.quality import services as quality
from tests.annotations.conftest import QueuedTasks, build_project, record_answers
from tests.conftest import WorkerProcess

RECOMPUTE = "annotations.tasks.quality_recompute"


@pytest.fixture
def people(annotators: Any) -> list[User]:
    return annotators(4)


@pytest.fixture
def project(lena: User, people: list[User]) -> Project:
    """Two topics of ten documents; the first five of each are gold (grade 3): ten gold tasks."""
    return build_project(lead=lena, annotators=people, topics=2, docs_per_topic=10, gold_per_topic=5)


def tasks(project: Project, *, gold: bool) -> list[Task]:
    return list(Task.objects.filter(project=project, is_gold=gold).order_by("pk"))


def snapshot_rows(project: Project) -> dict[str, dict[str, Any]]:
    assert quality.quality_snapshot_refresh(project_id=project.pk) == "done"
    return {row["username"]: row for row in QualitySnapshot.objects.get(project=project).annotators}


ANN1_GOLD = [3, 3, 3, 2, 2, 4, 0, 0, 1, 1]  # 3 exact, 6 within ±1, MAE 1.3


def answer_gold(project: Project, people: list[User]) -> None:
    gold = tasks(project, gold=True)
    ann0, ann1 = people[0], people[1]
    record_answers(
        project,
        [(ann0, task, 3, 10.0 + i) for i, task in enumerate(gold)]
        + [(ann1, task, grade, 30.0) for task, grade in zip(gold, ANN1_GOLD, strict=True)],
    )


@pytest.mark.django_db
class TestAnnotatorQuality:
    def test_it_scores_each_annotator_against_the_gold_labels(
        self, project: Project, people: list[User]
    ) -> None:
        answer_gold(project, people)
        rows = snapshot_rows(project)
        assert (rows["ann0"]["gold_seen"], rows["ann0"]["gold_accuracy"], rows["ann0"]["gold_mae"]) == (
            10,
            1.0,
            0.0,
        )
        assert rows["ann0"]["median_seconds"] == pytest.approx(14.5)
        assert rows["ann1"]["gold_seen"] == 10
        assert rows["ann1"]["gold_accuracy"] == pytest.approx(0.3)
        assert rows["ann1"]["gold_accuracy_within"] == pytest.approx(0.6)
        assert rows["ann1"]["gold_mae"] == pytest.approx(1.3)
        assert rows["ann1"]["consensus_seen"] == 10
        assert rows["ann1"]["consensus_agreement"] == pytest.approx(0.3)  # the other's label is the consensus

    def test_it_leaves_too_fast_answers_out_of_the_labels_but_counts_them(
        self, project: Project, people: list[User]
    ) -> None:
        gold, ordinary = tasks(project, gold=True), tasks(project, gold=False)
        ann2 = people[2]
        record_answers(
            project,
            [(ann2, task, 3, 20.0) for task in gold[:8]]
            + [(ann2, task, 0, 1.0, {"too_fast": True}) for task in gold[8:]]
            + [(ann2, ordinary[0], None, 5.0), (ann2, ordinary[1], None, 40.0, {"unclear": True})],
        )
        row = snapshot_rows(project)["ann2"]
        assert (row["answers"], row["graded"], row["labels"], row["too_fast"]) == (12, 10, 8, 2)
        assert row["too_fast_share"] == pytest.approx(0.2)
        assert (row["gold_seen"], row["gold_accuracy"]) == (8, 1.0)
        assert row["median_seconds"] == pytest.approx(20.0)  # over all 12 answers

    def test_it_judges_reliability_by_the_projects_thresholds(
        self, project: Project, people: list[User]
    ) -> None:
        answer_gold(project, people)
        record_answers(project, [(people[2], task, 3) for task in tasks(project, gold=True)[:8]])
        rows = snapshot_rows(project)
        assert [(rows[n]["included"], rows[n]["reason"]) for n in ("ann0", "ann1", "ann2")] == [
            (True, "reliable"),
            (False, "low_accuracy"),
            (False, "too_few_gold"),
        ]
        Project.objects.filter(pk=project.pk).update(min_gold_items=8, min_gold_accuracy=0.3)
        rows = snapshot_rows(project)
        assert [rows[n]["included"] for n in ("ann0", "ann1", "ann2")] == [True, True, True]
        assert QualitySnapshot.objects.get(project=project).min_gold_items == 8

    def test_it_lets_a_lead_override_the_thresholds_either_way(
        self, project: Project, people: list[User], lena: User, django_capture_on_commit_callbacks: Any
    ) -> None:
        answer_gold(project, people)
        snapshot_rows(project)
        with django_capture_on_commit_callbacks() as callbacks:
            quality.annotator_override_set(project=project, annotator=people[0], decision="exclude", by=lena)
            quality.annotator_override_set(
                project=project, annotator=people[1].pk, decision="include", by=lena
            )
        assert len(callbacks) == 2  # a recompute is requested after each commits
        membership = ProjectMembership.objects.get(project=project, user=people[0])
        assert membership.quality_override_by == lena
        assert timezone.now() - membership.quality_override_at < timedelta(minutes=1)
        # The dashboard shows the override at once, before the recompute.
        snapshot = QualitySnapshot.objects.get(project=project)
        shown = {
            row["username"]: (row["included"], row["reason"])
            for row in selectors.quality_rows(
                snapshot=snapshot, memberships=selectors.annotator_memberships(project=project)
            )
        }
        assert shown["ann0"] == (False, "disqualified") and shown["ann1"] == (True, "reinstated")
        rows = snapshot_rows(project)
        assert (rows["ann0"]["included"], rows["ann0"]["meets_thresholds"]) == (False, True)
        assert (rows["ann1"]["included"], rows["ann1"]["reason"]) == (True, "reinstated")
        quality.annotator_override_set(project=project, annotator=people[0], decision="auto", by=lena)
        assert snapshot_rows(project)["ann0"]["reason"] == "reliable"

    def test_it_refuses_to_override_someone_who_is_not_an_annotator(
        self, project: Project, lena: User
    ) -> None:
        with pytest.raises(ProjectMembership.DoesNotExist):
            quality.annotator_override_set(project=project, annotator=lena, decision="exclude", by=lena)


@pytest.mark.django_db
class TestProjectAgreement:
    def test_it_stores_agreement_with_bootstrap_intervals_and_the_sufficient_statistics(
        self, project: Project, people: list[User]
    ) -> None:
        answer_gold(project, people)
        ordinary = tasks(project, gold=False)
        grades0 = [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
        grades1 = [0, 1, 2, 3, 3, 1, 1, 2, 4, 4]
        record_answers(
            project,
            [(people[0], t, g) for t, g in zip(ordinary, grades0, strict=True)]
            + [(people[1], t, g) for t, g in zip(ordinary, grades1, strict=True)],
        )
        snapshot_rows(project)
        snapshot = QualitySnapshot.objects.get(project=project)
        everyone = snapshot.agreement["all"]
        assert (everyone["n_labels"], everyone["n_pairable"], everyone["n_annotators"]) == (40, 20, 2)
        for name, measure in everyone["measures"].items():
            assert measure["estimate"] is not None, name
            if measure["low"] is not None:
                assert measure["low"] <= measure["estimate"] <= measure["high"], name
        assert set(everyone["measures"]) >= {
            "fleiss_kappa",
            "krippendorff_alpha_ordinal",
            "krippendorff_alpha_interval",
        }
        # The kappa matrix matches scikit-learn on the two annotators' shared items.
        labels0 = [3] * 10 + grades0
        labels1 = ANN1_GOLD + grades1
        assert snapshot.kappa["annotators"] == ["ann0", "ann1"]
        for weights in ("unweighted", "linear", "quadratic"):
            expected = cohen_kappa_score(
                labels0, labels1, weights=None if weights == "unweighted" else weights
            )
            assert snapshot.kappa[weights][0][1] == pytest.approx(expected, abs=1e-12)
            assert snapshot.kappa[weights][0][0] is None
        assert snapshot.kappa["shared_items"][0][1] == 20
        stats = snapshot.statistics["all"]["agreement_stats"]
        assert np.asarray(stats["coincidence"]).sum() == 40
        assert stats["n_pairable"] == 20
        assert np.asarray(snapshot.statistics["all"]["pair_confusion"]["counts"]).sum() == 20
        assert snapshot.label_distribution["counts"][0][3] == 12  # ann0: ten gold 3s and two ordinary 3s

    def test_it_leaves_attention_checks_out_of_agreement_but_counts_them_as_gold(
        self, project: Project, people: list[User]
    ) -> None:
        answer_gold(project, people)
        check = services.attention_check_create(
            project=project, topic=project.topics.first(), doc_id="check", title="Check",
            text="Rate this page 0.", expected_grade=0, reason="Says so.",
        )  # fmt: skip
        record_answers(project, [(people[0], check.task, 0), (people[1], check.task, 4)])
        rows = snapshot_rows(project)
        assert rows["ann0"]["gold_seen"] == 11 and rows["ann1"]["gold_seen"] == 11
        assert QualitySnapshot.objects.get(project=project).agreement["all"]["n_pairable"] == 10

    def test_it_computes_a_snapshot_of_a_project_without_answers(self, project: Project) -> None:
        rows = snapshot_rows(project)
        assert set(rows) == {"ann0", "ann1", "ann2", "ann3"}
        snapshot = QualitySnapshot.objects.get(project=project)
        assert snapshot.agreement["all"]["measures"]["fleiss_kappa"]["estimate"] is None
        assert snapshot.kappa["annotators"] == []


def recomputes(project: Project) -> list[tuple[str, str]]:
    return list(
        QualityRecompute.objects.filter(project=project).order_by("pk").values_list("status", "reason")
    )


@pytest.mark.django_db
class TestRecomputeJob:
    def test_it_keeps_one_snapshot_per_project(self, project: Project, people: list[User]) -> None:
        answer_gold(project, people)
        snapshot_rows(project)
        first = QualitySnapshot.objects.get(project=project).computed_at
        snapshot_rows(project)
        assert QualitySnapshot.objects.filter(project=project).count() == 1
        assert QualitySnapshot.objects.get(project=project).computed_at > first
        assert recomputes(project) == [("done", "lead"), ("done", "lead")]

    def test_it_waits_while_another_worker_holds_the_job_and_takes_over_when_its_lease_lapses(
        self, project: Project
    ) -> None:
        now = timezone.now()
        job = QualityRecompute.objects.create(
            project=project,
            status="running",
            lease_token=uuid.uuid4(),
            lease_expires_at=now + timedelta(minutes=5),
        )
        outcome = quality.quality_recompute_run(job_id=job.pk)
        assert outcome.status == "busy" and outcome.retry_in > 200
        assert not QualitySnapshot.objects.filter(project=project).exists()
        QualityRecompute.objects.filter(pk=job.pk).update(lease_expires_at=now - timedelta(seconds=1))
        assert quality.quality_recompute_run(job_id=job.pk).status == "done"
        assert QualitySnapshot.objects.filter(project=project).exists()
        assert quality.quality_recompute_run(job_id=job.pk).status == "finished"

    def test_it_never_overwrites_fresher_figures_with_an_older_request(
        self, project: Project, people: list[User]
    ) -> None:
        older = QualityRecompute.objects.create(
            project=project, created_at=timezone.now() - timedelta(minutes=1)
        )
        answer_gold(project, people)
        assert (
            quality.quality_snapshot_refresh(project_id=project.pk) == "done"
        )  # runs `older`, the pending one
        newer = QualityRecompute.objects.create(project=project)
        assert quality.quality_recompute_run(job_id=newer.pk).status == "done"
        stored = QualitySnapshot.objects.get(project=project)
        assert stored.requested_at == newer.created_at and older.pk != newer.pk

    def test_it_ignores_a_deleted_project(self) -> None:
        assert quality.quality_snapshot_refresh(project_id=987654) == "missing"
        assert quality.quality_recompute_run(job_id=987654).status == "missing"


@pytest.mark.django_db
class TestRecomputeRequests:
    def test_it_queues_one_recompute_while_one_is_pending(
        self, project: Project, queued: QueuedTasks
    ) -> None:
        now = timezone.now()
        assert quality.quality_recompute_request(project_id=project.pk, now=now) is True
        assert (
            quality.quality_recompute_request(project_id=project.pk, now=now + timedelta(seconds=5)) is False
        )
        assert queued.names() == [RECOMPUTE]
        name, args, options = queued.sent[0]
        job = QualityRecompute.objects.get(project=project)
        assert args == (job.pk,) and options["countdown"] == quality.DEBOUNCE_SECONDS
        # Once the worker has run it, the next answer queues a new one.
        assert quality.quality_recompute_run(job_id=job.pk).status == "done"
        assert quality.quality_recompute_request(project_id=project.pk) is True
        # A lost message holds requests back only until it is PENDING_LEASE old: then it is sent again.
        later = timezone.now() + quality.PENDING_LEASE + timedelta(minutes=1)
        assert quality.quality_recompute_request(project_id=project.pk, now=later) is True
        assert len(queued.sent) == 3 and queued.sent[1][1] == queued.sent[2][1]
        assert recomputes(project) == [("done", "answers"), ("pending", "answers")]

    def test_a_process_joins_a_pending_recompute_it_saw_without_asking_again(
        self, project: Project, queued: QueuedTasks, settings: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        settings.QUALITY_JOIN_MEMO_SECONDS = 60
        monkeypatch.setattr(quality, "_joined", {})
        assert quality.quality_recompute_request(project_id=project.pk) is True  # creates and sends it
        asked = []
        real = quality._pending_recompute
        monkeypatch.setattr(quality, "_pending_recompute", lambda **kw: asked.append(kw) or real(**kw))
        assert quality.quality_recompute_request(project_id=project.pk) is False  # asks, sees it pending
        assert quality.quality_recompute_request(project_id=project.pk) is False  # remembers: no query
        assert len(asked) == 1
        # A lead's request is never held back by the memo.
        assert quality.quality_recompute_request(project_id=project.pk, force=True) is True
        assert [options["countdown"] for _, _, options in queued.sent] == [quality.DEBOUNCE_SECONDS, 0]

    def test_a_recompute_requests_the_next_when_answers_changed_while_it_ran(
        self,
        project: Project,
        people: list[User],
        queued: QueuedTasks,
        monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        first, later = tasks(project, gold=False)[:2]
        record_answers(project, [(people[0], first, 2)])
        job = QualityRecompute.objects.create(project=project)
        real_overrides = quality.project_overrides

        def an_answer_arrives_meanwhile(on: Project) -> Any:
            overrides = real_overrides(on)
            record_answers(project, [(people[1], later, 3)])  # after the answers were read
            return overrides

        monkeypatch.setattr(quality, "project_overrides", an_answer_arrives_meanwhile)
        with django_capture_on_commit_callbacks(execute=True):
            assert quality.quality_recompute_run(job_id=job.pk).status == "done"
        assert recomputes(project) == [("done", "answers"), ("pending", "answers")]
        assert queued.names() == [RECOMPUTE]
        # With nothing new since its read, a recompute requests nothing more.
        monkeypatch.setattr(quality, "project_overrides", real_overrides)
        pending = QualityRecompute.objects.get(project=project, status="pending")
        with django_capture_on_commit_callbacks(execute=True):
            assert quality.quality_recompute_run(job_id=pending.pk).status == "done"
        assert recomputes(project) == [("done", "answers"), ("done", "answers")]

    def test_it_queues_a_leads_recompute_at_once_even_when_one_is_pending(
        self, project: Project, queued: QueuedTasks
    ) -> None:
        quality.quality_recompute_request(project_id=project.pk)
        assert quality.quality_recompute_request(project_id=project.pk, force=True) is True
        assert [options["countdown"] for _, _, options in queued.sent] == [quality.DEBOUNCE_SECONDS, 0]
        assert len(recomputes(project)) == 1

    def test_it_requests_a_recompute_when_an_answer_or_an_undo_commits(
        self,
        project: Project,
        people: list[User],
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        ann0 = people[0]
        with django_capture_on_commit_callbacks(execute=True):
            held = services.task_claim(project=project, annotator=ann0).assignment
            services.annotation_submit(project=project, annotator=ann0, assignment_id=held.pk, grade=2)
        assert queued.names() == [RECOMPUTE]
        quality.quality_recompute_run(job_id=queued.sent[0][1][0])  # the worker took it
        with django_capture_on_commit_callbacks(execute=True):
            services.annotation_undo(project=project, annotator=ann0)
        assert queued.names() == [RECOMPUTE, RECOMPUTE]

    def test_it_recomputes_when_a_lead_changes_the_thresholds_in_the_form_or_the_admin(
        self, project: Project, lena: User, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            project.name = "Renamed"
            services.project_update(project=project, changed=["name"])
        assert queued.sent == []
        with django_capture_on_commit_callbacks(execute=True):
            project.min_gold_items = 3
            services.project_update(project=project, changed=["min_gold_items"])
        assert queued.names() == [RECOMPUTE] and recomputes(project) == [("pending", "thresholds")]

    def test_it_keeps_answering_when_the_broker_is_down(
        self,
        project: Project,
        people: list[User],
        queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:
        queued.broker_down = True
        ann0 = people[0]
        with django_capture_on_commit_callbacks(execute=True):
            held = services.task_claim(project=project, annotator=ann0).assignment
            answer = services.annotation_submit(
                project=project, annotator=ann0, assignment_id=held.pk, grade=2
            )
        assert answer.pk and answer.counts
        job = QualityRecompute.objects.get(project=project)
        assert job.status == "failed" and "task queue is unreachable" in job.error
        queued.broker_down = False  # the next answer tries again at once
        assert quality.quality_recompute_request(project_id=project.pk) is True
        assert queued.names() == [RECOMPUTE]


def wait_for(predicate: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
class TestRecomputeInTheWorker:
    def test_it_recomputes_the_snapshot_in_a_real_worker_process(
        self, celery_worker_process: WorkerProcess, project: Project, people: list[User]
    ) -> None:
        answer_gold(project, people)
        assert quality.quality_recompute_request(project_id=project.pk, force=True)
        assert wait_for(lambda: QualitySnapshot.objects.filter(project=project, answers=20).exists()), (
            celery_worker_process.log()
        )
        rows = {row["username"]: row for row in QualitySnapshot.objects.get(project=project).annotators}
        assert rows["ann0"]["included"] and not rows["ann1"]["included"]
        assert wait_for(lambda: recomputes(project) == [("done", "lead")]), celery_worker_process.log()


@pytest.mark.django_db(transaction=True)
class TestReadSnapshot:
    def test_it_reads_one_state_while_another_connection_writes(self) -> None:
        import threading

        from django.contrib.auth.models import Group
        from django.db import connection as db_connection

        from annotations.quality.services import read_snapshot

        def write_elsewhere() -> None:
            Group.objects.create(name="written-meanwhile")
            db_connection.close()

        with read_snapshot():
            before = Group.objects.count()
            writer = threading.Thread(target=write_elsewhere)
            writer.start()
            writer.join()
            during = Group.objects.count()
        assert during == before
        assert Group.objects.count() == before + 1
