"""Write operations of the judging workflow: claiming tasks, answering, undoing, membership.

Each public function is keyword-only and runs in one transaction. The task counters (`assigned_count`,
`label_count`) change only here, under the task's row lock.

Concurrency: a claim locks the annotator's membership row (one claim at a time per annotator), then
takes the first candidate task with `SELECT ... FOR UPDATE SKIP LOCKED`, re-counts the task's occupied
places under that lock, and inserts the assignment; the (task, annotator) unique constraint and the
one-live-reservation-per-annotator partial unique constraint back it up. Counter updates that touch
several tasks go in task id order, so lockers never deadlock.

After an answer or an undo commits, the project's quality recompute is requested (debounced, and never
failing the answer when the broker is down; see `annotations.quality.services.quality_recompute_request`);
in a project with priorities, the apps that asked are told too (`annotations.hooks`).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial, wraps
from typing import Any, Literal, ParamSpec, TypeVar

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import OperationalError, transaction
from django.http import HttpRequest
from django.utils import timezone

from annotations import hooks, hotpath, kept_sign_ins, selectors
from annotations.models import (
    COMMENT_MAX_LENGTH,
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
from annotations.quality.services import quality_recompute_request
from evalplatform import sqlrows
from evalplatform.auth import User
from evalplatform.people import Invitation, Person, person_account
from evalplatform.roles import Role as PlatformRole

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


class CommentTooLong(JudgingError):
    status_code = 400

    def __init__(self, length: int) -> None:
        super().__init__(
            f"Your comment is {length} characters long; the most is {COMMENT_MAX_LENGTH}. "
            "Please shorten it and send again."
        )


class NothingToUndo(JudgingError):
    def __init__(self) -> None:
        super().__init__(
            f"There is no answer left to undo: undo reaches back over your current work session, up to "
            f"your {selectors.UNDO_DEPTH} newest answers, and stops at a break."
        )


class AnswerNotFound(JudgingError):
    status_code = 404

    def __init__(self) -> None:
        super().__init__("That answer is not one of yours in this project.")


class AnswerClosed(JudgingError):
    def __init__(self) -> None:
        super().__init__(
            "That answer can no longer be changed: only answers of your current work session "
            f"(up to your {selectors.UNDO_DEPTH} newest, not before a break) can."
        )


class UndoConflict(JudgingError):
    def __init__(self) -> None:
        super().__init__("That task has been given to another annotator since; it cannot be undone.")


@dataclass(frozen=True)
class Claim:
    """What the annotator gets next: a task, an empty queue, or a break prompt."""

    status: Literal["task", "empty", "break"]
    assignment: Assignment | None = None
    #: The annotator's queue counts after a new claim (None when the claim served a held reservation or
    #: a break prompt), so that a view need not count the queue a second time.
    counts: selectors.QueueCounts | None = None


@dataclass(frozen=True)
class Answered:
    """An answer and the claim of the annotator's next task made with it (`..._and_claim`)."""

    annotation: Annotation
    #: None when the annotator is no longer an annotator of the project (the answer is kept all the same).
    claim: Claim | None


class _ClaimWouldWait(Exception):
    """Every open candidate was locked by another claim, and this claim may not wait for them."""


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


@_retried_on_conflict
@transaction.atomic
def membership_set(*, project: Project, user: User, role: str) -> ProjectMembership:
    """Add a member, or change their role. The annotator's queue order (their seed) is kept.

    One who stops being an annotator hands the tasks they hold back to the pool at once, rather than
    keeping those places from the others until the reservations expire.
    """
    membership, _ = ProjectMembership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    if role != Role.ANNOTATOR:
        reservations_release_held(project=project, annotator=user)
    return membership


def member_what(project: Project, role: str) -> str:
    """How messages and invitations name what a person joins ("the Alpha project as annotator")."""
    return f"the {project.name} project as {ProjectMembership.Role(role).label.lower()}"


class LastLeadError(ValueError):
    """A change would leave the project with no lead."""


def _keep_a_lead(*, project: Project, user: User, role: str | None) -> None:
    """Refuse (LastLeadError) giving `user` the role `role` (None: taking them off) where they are the
    project's only lead. Only a lead losing the role locks anything: the project's lead rows, so that two
    leads demoting each other cannot both win (in the caller's transaction). Any other change takes no
    lock here, and so keeps the lock order of a role change against the answers (the member's row first)."""
    if role == ProjectMembership.Role.LEAD:
        return
    if not ProjectMembership.objects.filter(
        project=project, user=user, role=ProjectMembership.Role.LEAD
    ).exists():
        return
    leads = list(
        ProjectMembership.objects.select_for_update()
        .filter(project=project, role=ProjectMembership.Role.LEAD)
        .values_list("user_id", flat=True)
    )
    if leads == [user.pk]:
        raise LastLeadError(
            f"{user.get_username()} is the project's only lead: make another member a lead first."
        )


@transaction.atomic
def member_add(
    *, project: Project, person: Person, role: str, invited_by: User | None, request: HttpRequest | None
) -> tuple[ProjectMembership, Invitation]:
    """Add a person (an account, or an email to invite: `evalplatform.people`) to the project with `role`,
    or change their role (`membership_set`); ValidationError, nothing changed, when the email's account
    cannot be made, and LastLeadError when it would demote the project's only lead. An invited account
    joins the platform's group of the role (leads or annotators)."""
    group = PlatformRole.PROJECT_LEAD if role == ProjectMembership.Role.LEAD else PlatformRole.ANNOTATOR
    invitation = person_account(
        person, group=group, invited_by=invited_by, request=request, what=member_what(project, role)
    )
    _keep_a_lead(project=project, user=invitation.user, role=role)
    return membership_set(project=project, user=invitation.user, role=role), invitation


@transaction.atomic
def member_change(*, project: Project, user: User, role: str | None) -> ProjectMembership | None:
    """A lead's change to a member: their new role (`membership_set`), or with `role=None` taking them off
    the project (`membership_remove`); LastLeadError, nothing changed, where it would leave no lead."""
    _keep_a_lead(project=project, user=user, role=role)
    if role is None:
        membership_remove(project=project, user=user)
        return None
    return membership_set(project=project, user=user, role=role)


@_retried_on_conflict
@transaction.atomic
def membership_remove(*, project: Project, user: User) -> None:
    """Take a member off the project; the tasks they hold go back to the pool, their answers stay."""
    ProjectMembership.objects.filter(project=project, user=user).delete()
    reservations_release_held(project=project, annotator=user)


def reservations_release_held(*, project: Project, annotator: User) -> int:
    """Delete the annotator's unanswered reservations (locked first: an answer in flight wins or waits).

    Runs in the caller's transaction, with the membership change that calls for it."""
    rows = list(
        Assignment.objects.filter(project=project, annotator=annotator, state=State.RESERVED)
        .order_by("pk")
        .select_for_update(of=("self",))
        .values_list("id", "task_id")
    )
    if rows:
        Assignment.objects.filter(id__in=[row_id for row_id, _ in rows]).delete()
        _apply_counter_deltas({task_id: (-n, 0) for task_id, n in Counter(t for _, t in rows).items()})
    return len(rows)


def _annotator_membership(*, project: Project, annotator: User, no_key: bool = False) -> ProjectMembership:
    """The annotator's membership, locked; PermissionDenied (a 403, not a 500) when the lead removed them or
    changed their role after the view let the request in."""
    try:
        return (
            ProjectMembership.objects.select_for_update(no_key=no_key, of=("self",))
            .select_related("project")
            .get(project=project, user=annotator, role=Role.ANNOTATOR)
        )
    except ProjectMembership.DoesNotExist:
        raise PermissionDenied("You are no longer an annotator of this project.") from None


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


#: Project id -> when this process last released its expired reservations (`time.monotonic()`).
_last_expiry_sweep: dict[int, float] = {}


def _expiry_sweep_due(project: Project) -> bool:
    """Whether this process should release the project's expired reservations before a claim: at most
    once in JUDGING_EXPIRY_SWEEP_SECONDS (a reservation lasts minutes; sweeping on every claim cost a
    transaction of its own per request under load)."""
    every = settings.JUDGING_EXPIRY_SWEEP_SECONDS
    clock = time.monotonic()
    last = _last_expiry_sweep.get(project.pk)
    if every > 0 and last is not None and clock - last < every:
        return False
    _last_expiry_sweep[project.pk] = clock
    return True


@_retried_on_conflict
def task_claim(*, project: Project, annotator: User, now: datetime | None = None) -> Claim:
    """Serve the annotator's next task: their live reservation if they hold one, else a new one.

    Expired reservations are released first (at most every JUDGING_EXPIRY_SWEEP_SECONDS per process, and
    always before answering "empty", so that an expired reservation never hides the last tasks)."""
    swept = now is not None or _expiry_sweep_due(project)
    now = now or timezone.now()
    if swept:
        reservations_release_expired(project=project, now=now)
    claim = _claim(project=project, annotator=annotator, now=now)
    if claim.status == "empty" and not swept and reservations_release_expired(project=project, now=now):
        claim = _claim(project=project, annotator=annotator, now=now)
    return claim


def _claim(*, project: Project, annotator: User, now: datetime) -> Claim:
    with transaction.atomic():
        # Locks only the membership row: claims of one annotator queue up, other annotators' do not.
        seed = hotpath.membership_lock(project_id=project.pk, user_id=annotator.pk)
        if seed is None:
            raise PermissionDenied("You are no longer an annotator of this project.")
        return _claim_locked(project=project, annotator=annotator, now=now, seed=seed, may_wait=True)


def _claim_locked(*, project: Project, annotator: User, now: datetime, seed: int, may_wait: bool) -> Claim:
    """The claim, in a transaction that holds the annotator's membership row. Unless `may_wait`, it does
    not wait for tasks that other claims hold locked (_ClaimWouldWait instead)."""
    # The counts, with the first ordinary candidates read in the same statement (PostgreSQL).
    own, prefetched = hotpath.own_counts_with_candidates(
        project_id=project.pk, user_id=annotator.pk, now=now, overlap=project.overlap,
        gold_overlap=project.gold_overlap, started_cap=_started_cap(project, is_gold=False), seed=seed,
        start=selectors.rank_start(seed), window=CLAIM_WINDOWS[0], prioritised=project.has_priorities,
    )  # fmt: skip
    if own.reserved:
        held = _held_claim(project=project, annotator=annotator, now=now)
        if held is not None:
            return held
        own = selectors.own_counts(project=project, annotator=annotator, now=now)  # it was let go
    if project.session_cap_minutes:
        membership = _annotator_membership(project=project, annotator=annotator)
        if selectors.session_state(membership=membership, now=now).break_due:
            return Claim("break")
    counts = selectors.queue_counts(project=project, annotator=annotator, now=now, own=own)
    gold_first = selectors.gold_turn(counts=counts, project=project, seed=seed)
    kinds = [True, False] if gold_first else [False, True] if counts.gold_allowed else [False]
    for is_gold in kinds:
        assignment = _claim_one(
            project=project, annotator=annotator, seed=seed, is_gold=is_gold, now=now, may_wait=may_wait,
            prefetched=None if is_gold else prefetched,
        )  # fmt: skip
        if assignment is not None:
            kind = "gold" if is_gold else "ordinary"
            after = {f"live_{kind}": getattr(counts, f"live_{kind}") + 1,
                     f"available_{kind}": max(0, getattr(counts, f"available_{kind}") - 1)}  # fmt: skip
            return Claim("task", assignment, replace(counts, **after))
    return Claim("empty", counts=counts)


def _held_claim(*, project: Project, annotator: User, now: datetime) -> Claim | None:
    """The reservation the annotator holds, its expiry moved on; None when it expired and lost its place
    (then it is deleted and the annotator claims afresh)."""
    current = selectors.current_reservation(project=project, annotator=annotator)
    if current is None:
        return None
    if current.expires_at <= now and not _expired_place_free(
        project=project, task_id=current.task_id, assignment_id=current.pk, now=now
    ):
        current.delete()
        _apply_counter_deltas({current.task_id: (-1, 0)})
        return None
    current.expires_at = now + project.reservation_timeout
    current.save(update_fields=["expires_at"])
    return Claim("task", current)


# Candidates are ranked without locks, then locked one by one with SKIP LOCKED: a single
# `ORDER BY ... FOR UPDATE SKIP LOCKED LIMIT 1` would make PostgreSQL sort every candidate row in full.
CLAIM_WINDOWS = (16, 256)


def _claim_one(
    *,
    project: Project,
    annotator: User,
    seed: int,
    is_gold: bool,
    now: datetime,
    may_wait: bool,
    prefetched: hotpath.Candidates | None = None,
) -> Assignment | None:
    """Reserve one task of the kind for the annotator: the new assignment as served, or None.
    `prefetched`: the first window of each stage's candidates, already read (ordinary tasks only)."""
    cap = project.cap_for(is_gold=is_gold)
    where = {"project_id": project.pk, "user_id": annotator.pk}
    # Started tasks first (ordinary tasks with more than one place), in the annotator's own order. Then
    # fresh tasks: those with a priority in priority order (a project with a pool built from runs), then
    # the others round the rank ring from the annotator's starting point, each read off an index. Each
    # stage gives its query for a window of so many candidates.
    stages = [
        partial(hotpath.fresh_candidates_sql, **where, is_gold=is_gold, gold_overlap=project.gold_overlap,
                start=selectors.rank_start(seed), wrapped=wrapped)
        for wrapped in (False, True)
    ]  # fmt: skip
    # Each stage's first window, where the caller read it already.
    first: list[list[int] | None] = (
        [prefetched.fresh, prefetched.fresh_wrapped] if prefetched else [None, None]
    )
    if project.has_priorities and not is_gold:
        stages.insert(0, partial(hotpath.prioritised_candidates_sql, **where))
        first.insert(0, prefetched.prioritised if prefetched else None)
    started_cap = _started_cap(project, is_gold=is_gold)
    if started_cap is not None:
        stages.insert(0, partial(hotpath.started_candidates_sql, **where, overlap=started_cap, seed=seed))
        first.insert(0, prefetched.started if prefetched else None)
    if project.has_extra_places and not is_gold:  # one more judgment a machine judge's routing asked for
        stages.insert(0, partial(hotpath.extra_candidates_sql, **where, overlap=project.overlap))
        first.insert(0, None)
    claim: dict[str, Any] = {"project": project, "annotator": annotator, "cap": cap, "now": now}
    tried: set[int] = set()
    busy: list[int] = []
    for stage, read in zip(stages, first, strict=True):
        for window in CLAIM_WINDOWS:
            if window == CLAIM_WINDOWS[0] and read is not None:
                ids = read
            else:
                ids = hotpath.candidate_ids(stage(limit=window))
            untried = [task_id for task_id in dict.fromkeys(ids) if task_id not in tried]
            if untried:
                # The window's candidates tried in order, in one round trip (PostgreSQL).
                tried.update(untried)
                first_free = hotpath.reservation_take_first(
                    **where, task_ids=untried, now=now, expires_at=now + project.reservation_timeout, cap=cap
                )
                if first_free.served is not None:
                    return first_free.served
                busy.extend(first_free.busy)
            if len(ids) < window:
                break
    # Every open candidate was locked by another claim a moment ago (near the end of a queue, many
    # annotators want the same few tasks): wait for those short transactions rather than report "empty".
    if busy and not may_wait:
        raise _ClaimWouldWait()
    for task_id in busy:
        served = _claim_task_waiting(task_id=task_id, **claim)
        if served is not None:
            return served
    return None


def _started_cap(project: Project, *, is_gold: bool) -> int | None:
    """The cap of the tasks a claim reads as started ones first (ordinary tasks with more than one place),
    or None when a claim of this kind has no such stage."""
    cap = project.cap_for(is_gold=is_gold)
    return cap if not is_gold and cap is not None and cap > 1 else None


def _claim_task_waiting(
    *, project: Project, annotator: User, task_id: int, cap: int | None, now: datetime
) -> Assignment | None:
    """Wait for the task's lock, re-count its places and reserve it: the new assignment as served, with
    its task, topic and document, or None (no place left)."""
    assigned = hotpath.task_lock(task_id=task_id, cap=cap, wait=True)
    if assigned is None:
        return None
    taken = hotpath.reservation_take(
        project_id=project.pk, task_id=task_id, user_id=annotator.pk, now=now,
        expires_at=now + project.reservation_timeout, cap=cap,
    )  # fmt: skip
    if taken.assignment_id is None:
        if taken.occupied is not None and cap is not None:
            # The counter fell behind the places taken; correct it so the fast filter passes over this task.
            hotpath.assigned_count_set(task_id=task_id, value=max(taken.occupied, assigned, cap))
        return None
    return taken.served or hotpath.served_assignment(taken.assignment_id)


# --- answering ------------------------------------------------------------------------------------------


def annotation_submit(
    *,
    project: Project,
    annotator: User,
    assignment_id: int,
    grade: int | None = None,
    unclear: bool = False,
    comment: str = "",
    now: datetime | None = None,
) -> Annotation:
    """Answer a reserved task with a grade, or flag it as unclear (no grade).

    The seconds spent are measured on the server from when the task was served. An answer under the
    project's minimum time is refused (TooFast) or stored flagged as too fast, by the project's policy.
    The optional comment is a note for the lead (see `annotation_comment_set` to change it later).
    """
    fields = _submitted(project, grade=grade, unclear=unclear, comment=comment)
    return _answer(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(),
        claim_next=False, **fields,
    )[0]  # fmt: skip


def annotation_submit_and_claim(
    *,
    project: Project,
    annotator: User,
    assignment_id: int,
    grade: int | None = None,
    unclear: bool = False,
    comment: str = "",
    now: datetime | None = None,
) -> Answered:
    """`annotation_submit`, and the claim of the annotator's next task (what `task_claim` gives) made in
    the same transaction: one commit where an answer and then a claim take two (see `_answer`)."""
    fields = _submitted(project, grade=grade, unclear=unclear, comment=comment)
    return _answer_and_claim(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(), **fields
    )


def _submitted(project: Project, *, grade: int | None, unclear: bool, comment: str) -> dict[str, Any]:
    """A submitted answer's stored fields, checked before anything is written."""
    if not unclear and grade not in project.grades:
        raise InvalidGrade(grade, project.grades)
    return {"grade": None if unclear else grade, "skipped": False, "unclear": unclear,
            "comment": _clean_comment(comment)}  # fmt: skip


def annotation_skip(
    *, project: Project, annotator: User, assignment_id: int, comment: str = "", now: datetime | None = None
) -> Annotation:
    """Decline a task. It goes to another annotator; this one is not served it again.

    A comment says why, for the lead (a broken document, a query they cannot judge).
    """
    return _answer(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(),
        claim_next=False, **_skipped(comment),
    )[0]  # fmt: skip


def annotation_skip_and_claim(
    *, project: Project, annotator: User, assignment_id: int, comment: str = "", now: datetime | None = None
) -> Answered:
    """`annotation_skip`, and the claim of the annotator's next task in the same transaction."""
    return _answer_and_claim(
        project=project, annotator=annotator, assignment_id=assignment_id, now=now or timezone.now(),
        **_skipped(comment),
    )  # fmt: skip


def _skipped(comment: str) -> dict[str, Any]:
    return {"grade": None, "skipped": True, "unclear": False, "comment": _clean_comment(comment)}


def _clean_comment(comment: str) -> str:
    """The comment as stored: stripped, refused (before anything is written) when over the limit."""
    comment = comment.strip()
    if len(comment) > COMMENT_MAX_LENGTH:
        raise CommentTooLong(len(comment))
    return comment


def _answer_and_claim(*, project: Project, annotator: User, now: datetime, **answer: Any) -> Answered:
    """Answer, and claim the next task in the answer's transaction when that needs no waiting.

    The claim falls back to its own transaction after the answer's commit (`task_claim`) when the queue's
    open tasks were all locked by other claims (waiting for them while holding the answered task's lock
    could deadlock), or when it found the queue empty before this process's expiry sweep was due (the
    fallback sweeps and looks again)."""
    swept = _expiry_sweep_due(project)
    if swept:
        reservations_release_expired(project=project, now=now)
    done = _answer_and_claim_at_once(project=project, annotator=annotator, now=now, swept=swept, **answer)
    annotation, claim, member = done or _answer(
        project=project, annotator=annotator, now=now, claim_next=True, swept=swept, **answer
    )
    if member and claim is None:
        with contextlib.suppress(PermissionDenied):  # removed meanwhile: the answer is kept, no claim
            claim = task_claim(project=project, annotator=annotator)
    return Answered(annotation, claim)


@_retried_on_conflict
def _answer_and_claim_at_once(
    *, project: Project, annotator: User, assignment_id: int, now: datetime, grade: int | None,
    skipped: bool, unclear: bool, comment: str, swept: bool,
) -> tuple[Annotation, Claim | None, Literal[True]] | None:  # fmt: skip
    """`_answer` with the next claim, in one call (`hotpath.answer_and_claim`: PostgreSQL): the plain
    answer and a claim that needs nothing the call leaves to Python. None, with nothing written, where it
    is not the plain case (then `_answer`), and in SQLite. The claim is None where the call left it to a
    transaction of its own (`_answer_and_claim` then claims), as `_claim_after_answer` leaves one."""
    if sqlrows.vendor() != "postgresql":
        return None
    answer = _plain_answer(project, annotator, assignment_id, now, grade, skipped, unclear, comment)
    done = hotpath.answer_and_claim(
        answer, effect=answer_effect(grade=grade, too_fast=False),
        min_seconds=answer_min_seconds(project, grade=grade), project=project,
        expires_at=now + project.reservation_timeout, totals=selectors.open_totals_kept(project),
    )  # fmt: skip
    if done.outcome == "fallback":
        return None
    _answers_changed_on_commit(project)
    if done.totals is not None:
        selectors.open_totals_keep(project, done.totals)
    claim = Claim("break") if done.outcome == "break" else None
    if done.counts is not None and (done.outcome == "task" or swept):
        counts = selectors.QueueCounts(*done.counts, gold_share=project.gold_share_target)
        claim = Claim("task" if done.outcome == "task" else "empty", done.served, counts)
    return answer, claim, True


@_retried_on_conflict
def _answer(
    *,
    project: Project,
    annotator: User,
    assignment_id: int,
    now: datetime,
    grade: int | None,
    skipped: bool,
    unclear: bool,
    comment: str,
    claim_next: bool,
    swept: bool = False,
) -> tuple[Annotation, Claim | None, bool]:
    """Store the answer; with `claim_next`, claim the next task in the same transaction. Returns the
    answer, the claim (None when not asked for, or left to a transaction of its own: see
    `_answer_and_claim`) and whether the annotator is still an annotator of the project. Retried as a
    whole, the claim included, when PostgreSQL picks it as a deadlock victim: nothing of it was committed."""
    kept_sign_ins.require_confirmed()  # a kept sign-in is checked by `hotpath.answer_and_claim` only
    min_seconds = answer_min_seconds(project, grade=grade)
    if not claim_next:
        # The plain case in one statement (PostgreSQL): an answer in time, whose effect is decided here
        # before its seconds are known; anything else goes the step-by-step way below.
        plain = _plain_answer(project, annotator, assignment_id, now, grade, skipped, unclear, comment)
        if hotpath.answer_plain(
            plain, effect=answer_effect(grade=grade, too_fast=False), min_seconds=min_seconds
        ):
            _answers_changed_on_commit(project)
            return plain, None, False
    # With `claim_next` the plain case was tried already, in one call with the claim
    # (`_answer_and_claim_at_once`, PostgreSQL): what reaches here goes the step-by-step way.
    with transaction.atomic():
        seed, assignment = _answer_locks(
            project=project, annotator=annotator, assignment_id=assignment_id, claim_next=claim_next
        )
        if assignment is None:
            raise AssignmentNotFound()
        if assignment.state != State.RESERVED:
            raise AlreadyAnswered()
        seconds = max(0.0, (now - assignment.reserved_at).total_seconds())
        too_fast = seconds < min_seconds
        if too_fast and project.too_fast_policy == Project.TooFastPolicy.REFUSE:
            raise TooFast(seconds_spent=seconds, min_seconds=project.min_seconds_per_task)
        if assignment.expires_at <= now and not _expired_place_free(
            project=project, task_id=assignment.task_id, assignment_id=assignment.id, now=now
        ):
            raise ReservationExpired()  # the release is left to `reservations_release_expired`
        effect = answer_effect(grade=grade, too_fast=too_fast)
        _answers_changed_on_commit(project)
        answer = Annotation(
            assignment_id=assignment.id, project=project, task_id=assignment.task_id, annotator=annotator,
            grade=grade, seconds_spent=seconds, skipped=skipped, unclear=unclear, too_fast=effect.too_fast,
            created_at=now, comment=comment,
        )  # fmt: skip
        # The assignment answered (or released), the task's counters and the answer, written together.
        hotpath.answer_record(answer, effect)
        claim = (
            None if seed is None else _claim_after_answer(project, annotator, now=now, seed=seed, swept=swept)
        )
        return answer, claim, seed is not None


def _plain_answer(
    project: Project, annotator: User, assignment_id: int, now: datetime, grade: int | None, skipped: bool,
    unclear: bool, comment: str,
) -> Annotation:  # fmt: skip
    """The (unsaved) answer a one-statement plain answer stores: its task and seconds come from the row."""
    return Annotation(
        assignment_id=assignment_id, project=project, annotator=annotator, grade=grade, skipped=skipped,
        unclear=unclear, created_at=now, comment=comment,
    )  # fmt: skip


def _answers_changed_on_commit(project: Project) -> None:
    """After the answer's commit: the quality recompute's request and the answers' hooks."""
    transaction.on_commit(partial(quality_recompute_request, project_id=project.pk))
    hooks.answers_changed_on_commit(project)


def _claim_after_answer(
    project: Project, annotator: User, *, now: datetime, seed: int, swept: bool
) -> Claim | None:
    """The next claim in the answer's transaction, which holds the membership's lock; None where it is
    left to a transaction of its own (see `_answer_and_claim`)."""
    claim = None
    with contextlib.suppress(_ClaimWouldWait):
        claim = _claim_locked(project=project, annotator=annotator, now=now, seed=seed, may_wait=False)
    if claim is not None and claim.status == "empty" and not swept:
        return None
    return claim


def answer_min_seconds(project: Project, *, grade: int | None) -> int:
    """The fewest seconds an answer must have been worked on not to be too fast: the project's minimum for
    a grade; a skip or an unclear answer (no grade) is never too fast."""
    return project.min_seconds_per_task if grade is not None else 0


def answer_effect(*, grade: int | None, too_fast: bool) -> hotpath.AnswerEffect:
    """What an answer does, decided once for both of the answer's statements (`hotpath.answer_plain`,
    `hotpath.answer_record`): a grade given in time counts (its assignment labelled, its place kept, one
    more label on the task, toward the overlap and the quality figures); a skip, an unclear answer or a
    too-fast grade is stored but gives its place back (released, one fewer assigned) and counts nowhere."""
    counts = grade is not None and not too_fast
    return hotpath.AnswerEffect(
        state=State.LABELLED.value if counts else State.RELEASED.value,
        assigned=0 if counts else -1,
        labels=1 if counts else 0,
        too_fast=too_fast,
    )


def _answer_locks(
    *, project: Project, annotator: User, assignment_id: int, claim_next: bool
) -> tuple[int | None, hotpath.LockedAssignment | None]:
    """Lock the assignment answered; with `claim_next`, the annotator's membership row first (the order
    a claim and an undo take them in), in the same statement: (their shuffle seed, or None, the assignment)."""
    where = {"project_id": project.pk, "user_id": annotator.pk}
    if not claim_next:
        return None, hotpath.assignment_lock(assignment_id=assignment_id, **where)
    locked = hotpath.membership_assignment_lock(assignment_id=assignment_id, **where)
    if locked is not None:
        return locked
    # No such assignment, or no longer an annotator: take them one by one to tell which.
    return hotpath.membership_lock(**where), hotpath.assignment_lock(assignment_id=assignment_id, **where)


def _expired_place_free(*, project: Project, task_id: int, assignment_id: int, now: datetime) -> bool:
    """Whether an expired reservation not yet released may keep its place: nobody took it meanwhile."""
    task = Task.objects.select_for_update(no_key=True, of=("self",)).get(pk=task_id)
    cap = task.cap(project)
    return cap is None or hotpath.occupying_count(task_id=task_id, now=now, excluding=assignment_id) < cap


def annotation_undo(*, project: Project, annotator: User, now: datetime | None = None) -> Assignment:
    """Take back the annotator's last undoable answer and serve that task again.

    Pressed again, it takes back the answer before, and so on over the current work session (the rule is
    `selectors.undoable_annotations`).
    """
    return annotation_reopen(project=project, annotator=annotator, now=now)


@_retried_on_conflict
@transaction.atomic
def annotation_reopen(
    *, project: Project, annotator: User, annotation_id: int | None = None, now: datetime | None = None
) -> Assignment:
    """Take back one of the annotator's own answers (`annotation_id`, or None for the last one) and
    serve that task again; the answer must still be undoable (`selectors.undoable_annotations`).

    Any other task they hold goes back to the pool, so the reopened one is next. A skipped, unclear or
    too-fast answer gave its place up; when another annotator has taken that place since, UndoConflict.
    """
    now = now or timezone.now()
    # Every lock below is taken on the rows meant and nothing joined to them (`of=("self",)`, no ordering
    # join): a lock on the project row would deadlock with a concurrent answer's foreign-key check.
    # The membership lock comes first: it queues this annotator's claims, answers' undos and reopens.
    membership = _annotator_membership(project=project, annotator=annotator, no_key=True)
    answer = _reopenable(membership=membership, annotation_id=annotation_id, now=now)
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("task").get(pk=answer.assignment_id)
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
        cap = task.cap(project)
        if cap is not None and hotpath.occupying_count(task_id=task.pk, now=now) >= cap:
            raise UndoConflict()
        deltas[assignment.task_id] = (deltas.get(assignment.task_id, (0, 0))[0] + 1, 0)
    answer.delete()
    assignment.state = State.RESERVED
    assignment.answered_at = None
    # `reserved_at` stays: the task was read once already, so the minimum time does not start over.
    assignment.expires_at = max(now, assignment.reserved_at) + project.reservation_timeout
    assignment.save(update_fields=["state", "answered_at", "expires_at"])
    _apply_counter_deltas(deltas)
    transaction.on_commit(partial(selectors.open_totals_forget, project))  # they may hold it as open
    transaction.on_commit(partial(quality_recompute_request, project_id=project.pk))
    hooks.answers_changed_on_commit(project)
    return assignment


def _reopenable(*, membership: ProjectMembership, annotation_id: int | None, now: datetime) -> Annotation:
    """The answer to reopen: the newest undoable one, or the one asked for if it is still undoable."""
    undoable = selectors.undoable_annotations(membership=membership, now=now)
    if annotation_id is None:
        if not undoable:
            raise NothingToUndo()
        return undoable[0]
    for answer in undoable:
        if answer.pk == annotation_id:
            return answer
    own = Annotation.objects.filter(
        pk=annotation_id, project=membership.project_id, annotator=membership.user_id
    ).exists()
    raise AnswerClosed() if own else AnswerNotFound()


@transaction.atomic
def annotation_comment_set(
    *, project: Project, annotator: User, annotation_id: int, comment: str
) -> Annotation:
    """Add, change or clear the comment on one of the annotator's own answers, at any time.

    Only the note changes: the grade, and so the counters and quality figures, stay as they are.
    """
    comment = _clean_comment(comment)
    answer = (
        Annotation.objects.select_for_update(of=("self",))
        .filter(pk=annotation_id, project=project, annotator=annotator)
        .first()
    )
    if answer is None:
        raise AnswerNotFound()
    answer.comment = comment
    answer.save(update_fields=["comment"])
    return answer


def _apply_counter_deltas(deltas: dict[int, tuple[int, int]]) -> None:
    """Add (assigned, labels) deltas to task counters, in task id order so that lockers never deadlock."""
    for task_id in sorted(deltas):
        d_assigned, d_labels = deltas[task_id]
        if d_assigned or d_labels:
            hotpath.counters_add(task_id=task_id, assigned=d_assigned, labels=d_labels)
