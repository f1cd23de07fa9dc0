"""Write operations of the judging workflow: claiming tasks, answering, undoing, membership.

Each public function is keyword-only and runs in one transaction. The task counters (`assigned_count`,
`label_count`) change only here, under the task's row lock.

Concurrency: a claim locks the annotator's membership row (one claim at a time per annotator), then
takes the first candidate task with `SELECT ... FOR UPDATE SKIP LOCKED`, re-counts the task's occupied
places under that lock, and inserts the assignment; the (task, annotator) unique constraint and the
one-live-reservation-per-annotator partial unique constraint back it up. Counter updates that touch
several tasks go in task id order, so lockers never deadlock.

After an answer or an undo commits, the project's quality recompute is requested (debounced, and never
failing the answer when the broker is down; see `annotations.quality.quality_recompute_request`).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial, wraps
from typing import Any, Literal, ParamSpec, TypeVar

from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from annotations import selectors
from annotations.models import (
    Annotation,
    Assignment,
    AttentionCheck,
    Document,
    GoldLabel,
    Project,
    ProjectMembership,
    Task,
    Topic,
)
from annotations.quality import quality_recompute_request
from evalplatform.auth import User

Role = ProjectMembership.Role
State = Assignment.State

P = ParamSpec("P")
R = TypeVar("R")
CONFLICT_TRIES = 3
CONFLICT_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock_detected, serialization_failure


def _retried_on_conflict(fn: Callable[P, R]) -> Callable[P, R]:
    """Run a write again when PostgreSQL rolled its transaction back as a deadlock or serialization victim.

    The locks are taken in an order that should not deadlock; this is the second line of defence, so that
    an answer is never lost to a 500. Only an outermost transaction is retried (an inner one cannot be).
    """

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, CONFLICT_TRIES + 1):
            try:
                return fn(*args, **kwargs)
            except OperationalError as exc:
                sqlstate = getattr(exc.__cause__, "sqlstate", None)
                in_outer = transaction.get_connection().in_atomic_block
                if sqlstate not in CONFLICT_SQLSTATES or in_outer or attempt == CONFLICT_TRIES:
                    raise
                time.sleep(random.uniform(0.005, 0.02) * attempt)
        raise AssertionError("unreachable")

    return wrapper


class JudgingError(Exception):
    """A request the workflow refuses; the message is written for the annotator."""

    status_code = 409


class AssignmentNotFound(JudgingError):
    status_code = 404

    def __init__(self) -> None:
        super().__init__("That task is not reserved for you.")


class AlreadyAnswered(JudgingError):
    def __init__(self) -> None:
        super().__init__("You have already answered that task.")


class ReservationExpired(JudgingError):
    def __init__(self) -> None:
        super().__init__(
            "Your reservation of that task expired and it went to someone else. Here is a new one."
        )


class InvalidGrade(JudgingError):
    status_code = 400

    def __init__(self, grade: object, grades: list[int]) -> None:
        super().__init__(f"{grade!r} is not a grade of this project's scale ({', '.join(map(str, grades))}).")


class TooFast(JudgingError):
    def __init__(self, *, seconds_spent: float, min_seconds: int) -> None:
        self.seconds_spent = seconds_spent
        self.min_seconds = min_seconds
        self.seconds_left = max(0.0, min_seconds - seconds_spent)
        super().__init__(
            f"Too fast: you spent {seconds_spent:.1f} s on this task; the minimum is {min_seconds} s. "
            "Your answer was not saved; please read the document and answer again."
        )


class NothingToUndo(JudgingError):
    def __init__(self) -> None:
        window = int(selectors.UNDO_WINDOW.total_seconds())
        super().__init__(f"There is no answer from the last {window} seconds to undo.")


class UndoConflict(JudgingError):
    def __init__(self) -> None:
        super().__init__("That task has been given to another annotator since; it cannot be undone.")


@dataclass(frozen=True)
class Claim:
    """What the annotator gets next: a task, an empty queue, or a break prompt."""

    status: Literal["task", "empty", "break"]
    assignment: Assignment | None = None


# --- projects and members -----------------------------------------------------------------------------


@transaction.atomic
def project_create(*, creator: User, slug: str, name: str, **settings: Any) -> Project:
    """Create a project; its creator becomes its lead."""
    project = Project.objects.create(slug=slug, name=name, created_by=creator, **settings)
    ProjectMembership.objects.create(project=project, user=creator, role=Role.LEAD)
    return project


#: Changing these re-decides every annotator's reliability, so the quality figures are recomputed.
QUALITY_THRESHOLDS = frozenset({"min_gold_accuracy", "min_gold_items"})


@transaction.atomic
def project_update(*, project: Project, changed: Iterable[str]) -> Project:
    """Save a project whose fields `changed` were set on it (by the lead's form or the admin).

    New quality thresholds queue a recompute of the quality figures once the change commits.
    """
    project.full_clean()
    project.save()
    if QUALITY_THRESHOLDS & set(changed):
        transaction.on_commit(
            lambda: quality_recompute_request(project_id=project.pk, force=True, reason="thresholds")
        )
    return project


def membership_set(*, project: Project, user: User, role: str) -> ProjectMembership:
    """Add a member, or change their role. The annotator's queue order (their seed) is kept."""
    membership, _ = ProjectMembership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


def session_break_dismiss(*, membership: ProjectMembership, now: datetime | None = None) -> None:
    membership.break_dismissed_at = now or timezone.now()
    membership.save(update_fields=["break_dismissed_at"])


@transaction.atomic
def attention_check_create(
    *, project: Project, topic: Topic, doc_id: str, title: str, text: str, expected_grade: int, reason: str
) -> AttentionCheck:
    """A gold task on a purpose-written document whose right grade is obvious."""
    if expected_grade not in project.grades:
        raise InvalidGrade(expected_grade, project.grades)
    document, _ = Document.objects.update_or_create(
        project=project, doc_id=doc_id, defaults={"title": title, "text": text}
    )
    task, _ = Task.objects.get_or_create(project=project, topic=topic, document=document)
    Task.objects.filter(pk=task.pk).update(is_gold=True)
    GoldLabel.objects.update_or_create(task=task, defaults={"grade": expected_grade, "note": reason})
    check, _ = AttentionCheck.objects.update_or_create(task=task, defaults={"reason": reason})
    return check


# --- claiming -------------------------------------------------------------------------------------------


def reservations_release_expired(*, project: Project, now: datetime | None = None) -> int:
    """Delete expired reservations so their tasks return to the pool. Safe to run concurrently."""
    now = now or timezone.now()
    with transaction.atomic():
        rows = list(
            # Only the assignment rows: Meta.ordering would join (and lock) the project row otherwise.
            Assignment.objects.expired(now)
            .filter(project=project)
            .order_by("pk")
            .select_for_update(skip_locked=True, of=("self",))
            .values_list("id", "task_id")
        )
        if not rows:
            return 0
        Assignment.objects.filter(id__in=[row_id for row_id, _ in rows]).delete()
        _apply_counter_deltas({task_id: (-n, 0) for task_id, n in Counter(t for _, t in rows).items()})
    return len(rows)


@_retried_on_conflict
def task_claim(*, project: Project, annotator: User, now: datetime | None = None) -> Claim:
    """Serve the annotator's next task: their live reservation if they hold one, else a new one."""
    now = now or timezone.now()
    reservations_release_expired(project=project, now=now)
    with transaction.atomic():
        membership = (
            # Locks only the membership row: claims of one annotator queue up, other annotators' do not.
            ProjectMembership.objects.select_for_update(of=("self",))
            .select_related("project")
            .get(project=project, user=annotator, role=Role.ANNOTATOR)
        )
        current = selectors.current_reservation(project=project, annotator=annotator)
        if (
            current is not None
            and current.expires_at <= now
            and not _expired_place_free(project=project, assignment=current, now=now)
        ):
            current.delete()
            _apply_counter_deltas({current.task_id: (-1, 0)})
            current = None
        if current is not None:
            current.expires_at = now + project.reservation_timeout
            current.save(update_fields=["expires_at"])
            return Claim("task", current)
        if selectors.session_state(membership=membership, now=now).break_due:
            return Claim("break")
        counts = selectors.queue_counts(project=project, annotator=annotator, now=now)
        gold_first = selectors.gold_turn(counts=counts, project=project, seed=membership.shuffle_seed)
        kinds = [True, False] if gold_first else [False, True] if counts.gold_allowed else [False]
        for is_gold in kinds:
            assignment = _claim_one(
                project=project, annotator=annotator, membership=membership, is_gold=is_gold, now=now
            )
            if assignment is not None:
                return Claim("task", assignment)
    return Claim("empty")


# Candidates are ranked without locks (a top-N sort), then locked one by one with SKIP LOCKED: a single
# `ORDER BY ... FOR UPDATE SKIP LOCKED LIMIT 1` would make PostgreSQL sort every candidate row in full.
CLAIM_WINDOWS = (16, 256)


def _claim_one(
    *,
    project: Project,
    annotator: User,
    membership: ProjectMembership,
    is_gold: bool,
    now: datetime,
) -> Assignment | None:
    cap = project.cap_for(is_gold=is_gold)
    ranked = selectors.candidate_tasks(
        project=project, annotator=annotator, seed=membership.shuffle_seed, is_gold=is_gold
    ).values_list("id", flat=True)
    claim: dict[str, Any] = {"project": project, "annotator": annotator, "cap": cap, "now": now}
    tried: set[int] = set()
    busy: list[int] = []
    for window in CLAIM_WINDOWS:
        ids = list(ranked[:window])
        for task_id in ids:
            if task_id in tried:
                continue
            tried.add(task_id)
            assignment, held_by_another = _claim_task(task_id=task_id, wait=False, **claim)
            if assignment is not None:
                return assignment
            if held_by_another:
                busy.append(task_id)
        if len(ids) < window:
            break
    # Every open candidate was locked by another claim a moment ago (near the end of a queue, many
    # annotators want the same few tasks): wait for those short transactions rather than report "empty".
    for task_id in busy:
        assignment, _ = _claim_task(task_id=task_id, wait=True, **claim)
        if assignment is not None:
            return assignment
    return None


def _claim_task(
    *, project: Project, annotator: User, task_id: int, cap: int | None, now: datetime, wait: bool
) -> tuple[Assignment | None, bool]:
    """Lock the task, re-count its places and reserve it: (the assignment, whether another claim held it)."""
    locked = (
        Task.objects.select_for_update(skip_locked=not wait, no_key=True, of=("self",))
        .select_related("topic", "document")
        .filter(pk=task_id)
    )
    if cap is not None:
        locked = locked.filter(assigned_count__lt=cap)
    task = locked.first()
    if task is None:
        still_open = Task.objects.filter(pk=task_id)
        if cap is not None:
            still_open = still_open.filter(assigned_count__lt=cap)
        return None, not wait and still_open.exists()
    occupied = Assignment.objects.filter(task=task).occupying(now).count()
    if cap is not None and occupied >= cap:
        # The counter fell behind; correct it so the fast filter passes over this task.
        Task.objects.filter(pk=task.pk).update(assigned_count=max(occupied, task.assigned_count, cap))
        return None, False
    assignment = Assignment.objects.create(
        project=project,
        task=task,
        annotator=annotator,
        reserved_at=now,
        expires_at=now + project.reservation_timeout,
    )
    Task.objects.filter(pk=task.pk).update(assigned_count=F("assigned_count") + 1)
    return assignment, False


# --- answering ------------------------------------------------------------------------------------------


def annotation_submit(
    *,
    project: Project,
    annotator: User,
    assignment_id: int,
    grade: int | None = None,
    unclear: bool = False,
    now: datetime | None = None,
) -> Annotation:
    """Answer a reserved task with a grade, or flag it as unclear (no grade).

    The seconds spent are measured on the server from when the task was served. An answer under the
    project's minimum time is refused (TooFast) or stored flagged as too fast, by the project's policy.
    """
    if not unclear and grade not in project.grades:
        raise InvalidGrade(grade, project.grades)
    return _answer(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(),
        grade=None if unclear else grade, skipped=False, unclear=unclear,
    )  # fmt: skip


def annotation_skip(
    *, project: Project, annotator: User, assignment_id: int, now: datetime | None = None
) -> Annotation:
    """Decline a task. It goes to another annotator; this one is not served it again."""
    return _answer(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(),
        grade=None, skipped=True, unclear=False,
    )  # fmt: skip


@_retried_on_conflict
@transaction.atomic
def _answer(
    *,
    project: Project,
    annotator: User,
    assignment_id: int,
    now: datetime,
    grade: int | None,
    skipped: bool,
    unclear: bool,
) -> Annotation:
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("task")
        .filter(pk=assignment_id, project=project, annotator=annotator)
        .first()
    )
    if assignment is None:
        raise AssignmentNotFound()
    if assignment.state != State.RESERVED:
        raise AlreadyAnswered()
    seconds = max(0.0, (now - assignment.reserved_at).total_seconds())
    too_fast = grade is not None and seconds < project.min_seconds_per_task
    if too_fast and project.too_fast_policy == Project.TooFastPolicy.REFUSE:
        raise TooFast(seconds_spent=seconds, min_seconds=project.min_seconds_per_task)
    if assignment.expires_at <= now and not _expired_place_free(
        project=project, assignment=assignment, now=now
    ):
        raise ReservationExpired()  # the release is left to `reservations_release_expired`
    counts = grade is not None and not too_fast
    assignment.state = State.LABELLED if counts else State.RELEASED
    assignment.answered_at = now
    assignment.save(update_fields=["state", "answered_at"])
    _apply_counter_deltas({assignment.task_id: (0, 1) if counts else (-1, 0)})
    transaction.on_commit(partial(quality_recompute_request, project_id=project.pk))
    return Annotation.objects.create(
        assignment=assignment, project=project, task_id=assignment.task_id, annotator=annotator,
        grade=grade, seconds_spent=seconds, skipped=skipped, unclear=unclear, too_fast=too_fast, created_at=now,
    )  # fmt: skip


def _expired_place_free(*, project: Project, assignment: Assignment, now: datetime) -> bool:
    """Whether an expired reservation not yet released may keep its place: nobody took it meanwhile."""
    task = Task.objects.select_for_update(no_key=True, of=("self",)).get(pk=assignment.task_id)
    cap = project.cap_for(is_gold=task.is_gold)
    others = Assignment.objects.filter(task=task).exclude(pk=assignment.pk).occupying(now).count()
    return cap is None or others < cap


@_retried_on_conflict
@transaction.atomic
def annotation_undo(*, project: Project, annotator: User, now: datetime | None = None) -> Assignment:
    """Take back the annotator's last answer (within the undo window) and serve that task again.

    Any other task they hold goes back to the pool, so the undone one is next.
    """
    now = now or timezone.now()
    # Every lock below is taken on the rows meant and nothing joined to them (`of=("self",)`, no ordering
    # join): a lock on the project row would deadlock with a concurrent answer's foreign-key check.
    ProjectMembership.objects.select_for_update(no_key=True, of=("self",)).get(
        project=project, user=annotator, role=Role.ANNOTATOR
    )
    last = selectors.last_undoable_annotation(project=project, annotator=annotator, now=now)
    if last is None:
        raise NothingToUndo()
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("task").get(pk=last.assignment_id)
    )
    deltas: dict[int, tuple[int, int]] = {}
    held = list(
        Assignment.objects.filter(project=project, annotator=annotator, state=State.RESERVED)
        .order_by("pk")
        .select_for_update(of=("self",))
    )
    for other in held:
        deltas[other.task_id] = (deltas.get(other.task_id, (0, 0))[0] - 1, 0)
        other.delete()
    if assignment.state == State.LABELLED:
        d_assigned, d_labels = deltas.get(assignment.task_id, (0, 0))
        deltas[assignment.task_id] = (d_assigned, d_labels - 1)
    else:
        task = Task.objects.select_for_update(no_key=True, of=("self",)).get(pk=assignment.task_id)
        cap = project.cap_for(is_gold=task.is_gold)
        if cap is not None and Assignment.objects.filter(task=task).occupying(now).count() >= cap:
            raise UndoConflict()
        deltas[assignment.task_id] = (deltas.get(assignment.task_id, (0, 0))[0] + 1, 0)
    last.delete()
    assignment.state = State.RESERVED
    assignment.answered_at = None
    assignment.expires_at = max(now, assignment.reserved_at) + project.reservation_timeout
    assignment.save(update_fields=["state", "answered_at", "expires_at"])
    _apply_counter_deltas(deltas)
    transaction.on_commit(partial(quality_recompute_request, project_id=project.pk))
    return assignment


def _apply_counter_deltas(deltas: dict[int, tuple[int, int]]) -> None:
    """Add (assigned, labels) deltas to task counters, in task id order so that lockers never deadlock."""
    for task_id in sorted(deltas):
        d_assigned, d_labels = deltas[task_id]
        if d_assigned or d_labels:
            Task.objects.filter(pk=task_id).update(
                assigned_count=F("assigned_count") + d_assigned, label_count=F("label_count") + d_labels
            )
