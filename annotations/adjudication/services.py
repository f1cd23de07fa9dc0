"""Adjudication: the final grade of the pairs a qrels build drops because the annotators disagree.

The queue is what a build with the latest done build's parameters (the defaults, with the project's
thresholds, before the first build) would drop for disagreement now, computed from the current answers
by the same pure function (`evalcore.judging.qrels_disagreements`), less the pairs already adjudicated
(those are the `done` list, and can be changed). Leads adjudicate, and so do the annotators a lead chose
(`ProjectMembership.can_adjudicate`): on these pages only, they see the other annotators' labels, which
is the point of the role. A pair's gold grade is shown to leads only (`adjudication_queue(with_gold=True)`,
`gold_grade`): a lead overruling gold should know it, while an annotator who adjudicates must not learn
which pairs are gold.

`adjudication_set` stores one `Adjudication` per task; every later qrels build takes the pair's rel from
it (see `annotations.qrels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from annotations import selectors
from annotations.models import (
    COMMENT_MAX_LENGTH,
    Adjudication,
    Annotation,
    AttentionCheck,
    GoldLabel,
    Project,
    ProjectMembership,
    QrelsBuild,
    QualitySnapshot,
    Task,
)
from annotations.qrels import project_pairs
from annotations.quality.services import project_answers, project_overrides, read_snapshot
from evalcore.judging import DroppedPairs, QrelsParams, qrels_disagreements
from evalplatform.auth import AnyUser, User
from evalplatform.jobs import JobStatus

Role = ProjectMembership.Role


class AdjudicationError(ValueError):
    """A grade or pair the adjudication refuses; the message is written for the adjudicator."""


# --- who may adjudicate -------------------------------------------------------------------------------


def get_adjudicator_membership(user: AnyUser, slug: str) -> ProjectMembership:
    """The user's membership of `slug` if they may adjudicate: leads, and annotators the lead allowed.

    404 to non-members (through `selectors.get_project_for_member`), 403 to other annotators.
    """
    membership = selectors.get_project_for_member(user, slug)
    if not may_adjudicate(membership):
        raise PermissionDenied("Only the project's leads and the annotators they chose may adjudicate.")
    return membership


def may_adjudicate(membership: ProjectMembership | None) -> bool:
    return membership is not None and (membership.is_lead or membership.can_adjudicate)


def adjudicator_allow(*, project: Project, user_id: int, allowed: bool) -> ProjectMembership:
    """Let an annotator of the project adjudicate, or stop them. Raises DoesNotExist for anyone else."""
    membership = ProjectMembership.objects.select_related("user").get(
        project=project, user_id=user_id, role=Role.ANNOTATOR
    )
    membership.can_adjudicate = allowed
    membership.save(update_fields=["can_adjudicate"])
    return membership


# --- the queue ----------------------------------------------------------------------------------------


def queue_params(project: Project) -> tuple[QrelsParams, int | None]:
    """The parameters the queue is computed with, and the version of the build they come from (None: the
    defaults, with the project's reliability thresholds)."""
    latest = QrelsBuild.objects.filter(project=project, status=JobStatus.DONE).order_by("-version").first()
    if latest is not None:
        return latest.params, latest.version
    return QrelsParams(min_accuracy=project.min_gold_accuracy, min_gold=project.min_gold_items), None


def project_dropped_pairs(project: Project, params: QrelsParams) -> DroppedPairs:
    """The pairs a build with `params` would drop for disagreement now, read in one snapshot."""
    with read_snapshot():
        answers = project_answers(project)
        pairs = project_pairs(project)
        overrides = project_overrides(project)
    return qrels_disagreements(answers, pairs=pairs, overrides=overrides, params=params)


@dataclass(frozen=True)
class QueuePair:
    """One pair in the queue or the done list: the task (topic and document loaded), the spread of the
    labels a build uses (None when the pair is no longer dropped), and the grades given, sorted."""

    task: Task
    spread: float | None
    grades: list[int]
    adjudication: Adjudication | None = None
    #: The pair's gold grade, for a lead's eyes only (None for other pairs, and for other adjudicators).
    gold: int | None = None


@dataclass(frozen=True)
class AdjudicationQueue:
    params: QrelsParams
    build_version: int | None
    waiting: list[QueuePair] = field(default_factory=list)
    done: list[QueuePair] = field(default_factory=list)


def waiting_count(*, project: Project) -> int:
    """How many pairs wait for an adjudication (the project page's link)."""
    params, _ = queue_params(project)
    dropped = project_dropped_pairs(project, params)
    adjudicated = Adjudication.objects.filter(project=project, task_id__in=dropped.task.tolist())
    return len(dropped) - adjudicated.count()


def adjudication_queue(*, project: Project, with_gold: bool = False) -> AdjudicationQueue:
    """The pairs waiting (sorted by qid, doc_id) and those adjudicated (most recent first), in a fixed
    number of queries; `with_gold` (for leads) adds each gold pair's gold grade."""
    params, version = queue_params(project)
    dropped = project_dropped_pairs(project, params)
    spread = dict(zip(dropped.task.tolist(), dropped.spread.tolist(), strict=True))
    adjudications = list(
        Adjudication.objects.filter(project=project)
        .select_related("task__topic", "task__document", "adjudicator")
        .order_by("-updated_at", "task_id")
    )
    done_ids = {adjudication.task_id for adjudication in adjudications}
    waiting_tasks = list(
        Task.objects.filter(project=project, pk__in=[t for t in spread if t not in done_ids])
        .select_related("topic", "document")
        .order_by("topic__qid", "document__doc_id")
    )
    task_ids = [task.pk for task in waiting_tasks] + sorted(done_ids)
    grades = _grades(project, task_ids)
    gold = _gold(task_ids) if with_gold else {}
    return AdjudicationQueue(
        params=params,
        build_version=version,
        waiting=[
            QueuePair(task, spread[task.pk], grades.get(task.pk, []), gold=gold.get(task.pk))
            for task in waiting_tasks
        ],
        done=[
            QueuePair(
                a.task,
                spread.get(a.task_id),
                grades.get(a.task_id, []),
                adjudication=a,
                gold=gold.get(a.task_id),
            )
            for a in adjudications
        ],
    )


def _gold(task_ids: list[int]) -> dict[int, int]:
    return dict(GoldLabel.objects.filter(task_id__in=task_ids).values_list("task_id", "grade"))


def gold_grade(task: Task) -> int | None:
    """The pair's gold grade, or None: for a lead's page only (see the module docstring)."""
    return _gold([task.pk]).get(task.pk) if task.is_gold else None


def _grades(project: Project, task_ids: list[int]) -> dict[int, list[int]]:
    rows = Annotation.objects.filter(project=project, task_id__in=task_ids, grade__isnull=False)
    grades: dict[int, list[int]] = {}
    for task_id, grade in rows.values_list("task_id", "grade").order_by("task_id", "grade"):
        grades.setdefault(task_id, []).append(int(grade or 0))
    return grades


def next_waiting(queue: AdjudicationQueue, *, after: Task | None = None) -> Task | None:
    """The waiting pair after `after` in the queue's order (wrapping round), or the first."""
    if not queue.waiting:
        return None
    if after is not None:
        key = (after.topic.qid, after.document.doc_id)
        for pair in queue.waiting:
            if (pair.task.topic.qid, pair.task.document.doc_id) > key:
                return pair.task
    return queue.waiting[0].task


# --- one pair -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelGiven:
    """An answer to the pair, with the annotator's accuracy on gold from the latest quality figures."""

    username: str
    grade: int | None
    outcome: str
    comment: str
    too_fast: bool
    gold_accuracy: float | None
    gold_seen: int | None


def adjudication_task(*, project: Project, task_id: int) -> Task:
    """A pair of the project that can be adjudicated (not an attention check), or Task.DoesNotExist."""
    return (
        Task.objects.select_related("topic", "document")
        .exclude(pk__in=AttentionCheck.objects.values("task_id"))
        .get(project=project, pk=task_id)
    )


def task_for(membership: ProjectMembership, *, task_id: int) -> Task:
    """The pair `task_id` for this adjudicator, or Task.DoesNotExist. Leads may open any pair of the
    project; a chosen annotator only those in the queue or the done list, so the role shows no other
    pair's labels."""
    project = membership.project
    task = adjudication_task(project=project, task_id=task_id)
    if membership.is_lead or Adjudication.objects.filter(task=task).exists():
        return task
    if task.pk in project_dropped_pairs(project, queue_params(project)[0]).task.tolist():
        return task
    raise Task.DoesNotExist("Not in the adjudication queue.")


def labels_given(*, project: Project, task: Task) -> list[LabelGiven]:
    """Every answer to the pair (skips without a comment aside), by annotator."""
    accuracy = _accuracy(project)
    answers = (
        Annotation.objects.filter(project=project, task=task)
        .select_related("annotator")
        .order_by("annotator__username")
    )
    return [
        LabelGiven(
            username=answer.annotator.get_username(),
            grade=answer.grade,
            outcome=answer.outcome,
            comment=answer.comment,
            too_fast=answer.too_fast,
            gold_accuracy=accuracy.get(answer.annotator_id, {}).get("gold_accuracy"),
            gold_seen=accuracy.get(answer.annotator_id, {}).get("gold_seen"),
        )
        for answer in answers
        if not (answer.skipped and not answer.comment)
    ]


def _accuracy(project: Project) -> dict[int, dict[str, Any]]:
    snapshot = QualitySnapshot.objects.filter(project=project).only("annotators").first()
    return {int(row["user_id"]): row for row in snapshot.annotators} if snapshot else {}


# --- setting the grade --------------------------------------------------------------------------------


@transaction.atomic
def adjudication_set(
    *, project: Project, task: Task, grade: int | None, note: str, adjudicator: User
) -> Adjudication:
    """Set (or change) the pair's final grade. Refuses a grade off the project's scale, a pair of another
    project or an attention check, and anyone who may not adjudicate (PermissionDenied)."""
    membership = ProjectMembership.objects.filter(project=project, user=adjudicator).first()
    if not (getattr(adjudicator, "is_superuser", False) or may_adjudicate(membership)):
        raise PermissionDenied("Only the project's leads and the annotators they chose may adjudicate.")
    if grade not in project.grades:
        grades = ", ".join(str(g) for g in project.grades)
        raise AdjudicationError(f"Choose a grade of the project's scale ({grades}), not {grade!r}.")
    if task.project_id != project.pk or AttentionCheck.objects.filter(task=task).exists():
        raise AdjudicationError("This pair cannot be adjudicated in this project.")
    note = note.strip()
    if len(note) > COMMENT_MAX_LENGTH:
        raise AdjudicationError(f"Keep the note under {COMMENT_MAX_LENGTH} characters.")
    now = timezone.now()
    adjudication, _ = Adjudication.objects.update_or_create(
        task=task,
        defaults={
            "project": project,
            "grade": grade,
            "note": note,
            "adjudicator": adjudicator,
            "updated_at": now,
        },
        create_defaults={
            "project": project,
            "grade": grade,
            "note": note,
            "adjudicator": adjudicator,
            "created_at": now,
            "updated_at": now,
        },
    )
    return adjudication
