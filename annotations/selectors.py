"""Read-side queries for the judging views and API.

Every lookup of a project by a user goes through `get_project_for_member`, which answers 404 to
non-members, so no view can forget the membership check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import (
    Avg,
    Count,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce
from django.http import Http404
from django.utils import timezone

from annotations import hotpath
from annotations.models import (
    TASK_RANK_MODULUS,
    Annotation,
    Assignment,
    Project,
    ProjectMembership,
    QrelsBuild,
    QrelsJudgment,
    QualityRecompute,
    QualitySnapshot,
    Task,
)
from evalplatform.auth import AnyUser, User
from series.models import MetricValue, Series
from series.services import series_key

Role = ProjectMembership.Role
#: Undo reaches back over the current work session: at most this many answers...
UNDO_DEPTH = 20
#: ...and never across a pause this long or longer (or the project's break, when that is longer).
UNDO_WINDOW = timedelta(seconds=60)
#: The rule in words, for the judge page's key help and the history page.
UNDO_RULE = (
    f"Undo (z) takes back your last answer and shows that task again; press it again to go one further "
    f"back. It reaches back over your current work session, up to your {UNDO_DEPTH} newest answers, "
    "and stops at a break."
)

# --- access -------------------------------------------------------------------------------------------


def get_project_for_member(user: AnyUser, slug: str, *, role: str | None = None) -> ProjectMembership:
    """The user's membership of the project `slug`, with `.project` loaded.

    Raises Http404 when the project does not exist or the user is not a member, and PermissionDenied
    when the member's role is not `role`. Superusers act as leads of every project (an unsaved
    membership stands for that).
    """
    if not user.is_authenticated:
        raise Http404("No such project.")
    known, membership = hotpath.membership_known(user, slug)  # read with an API token's sign-in
    if not known:
        membership = hotpath.membership_of(slug=slug, user_id=user.pk)
    if membership is None and getattr(user, "is_superuser", False):
        project = Project.objects.filter(slug=slug).first()
        if project is not None:
            membership = ProjectMembership(project=project, user=user, role=Role.LEAD)  # type: ignore[misc]
    if membership is None:
        raise Http404("No such project.")
    if role is not None and membership.role != role:
        raise PermissionDenied(f"This page is for the project's {Role(role).label.lower()}s.")
    return membership


def get_lead_project(user: AnyUser, slug: str) -> Project:
    """The project `slug` if the user leads it: 404 to non-members, 403 to annotators."""
    return get_project_for_member(user, slug, role=Role.LEAD).project


@dataclass(frozen=True)
class ProjectAccess:
    """How a user may see a project's quality figures and qrels: as its lead, or read-only as a member of
    the team the project is linked to."""

    project: Project
    is_lead: bool


def get_project_for_reader(user: AnyUser, slug: str) -> ProjectAccess:
    """The project `slug` for its quality and qrels pages: leads, and members of the project's team.

    An annotator of the project never reads them, even as a team member (the qrels' provenance holds
    every annotator's labels): 403. Anyone else gets a 404.
    """
    if not user.is_authenticated:
        raise Http404("No such project.")
    membership = (
        ProjectMembership.objects.filter(project__slug=slug, user=user).select_related("project").first()
    )
    if membership is not None or getattr(user, "is_superuser", False):
        return ProjectAccess(get_lead_project(user, slug), is_lead=True)
    project = Project.objects.filter(slug=slug, team__memberships__user=user).first()
    if project is None:
        raise Http404("No such project.")
    return ProjectAccess(project, is_lead=False)


def projects_for_user(user: User) -> QuerySet[ProjectMembership]:
    """The user's memberships with per-project counts, in one query."""
    tasks = Task.objects.filter(project=OuterRef("project")).order_by().values("project")
    own = (
        Annotation.objects.filter(project=OuterRef("project"), annotator=OuterRef("user"))
        .order_by()
        .values("project")
    )
    return (
        ProjectMembership.objects.filter(user=user)
        .select_related("project")
        .annotate(
            task_count=Coalesce(Subquery(tasks.annotate(n=Count("id")).values("n")), 0),
            label_count=Coalesce(Subquery(tasks.annotate(n=Sum("label_count")).values("n")), 0),
            own_answer_count=Coalesce(Subquery(own.annotate(n=Count("id")).values("n")), 0),
        )
        .order_by("project__name")
    )


# --- the annotator's queue ----------------------------------------------------------------------------


def rank_start(seed: int) -> int:
    """Where in the shared `Task.rank` order one annotator starts: a point on the ring of ranks."""
    return seed % TASK_RANK_MODULUS


@dataclass(frozen=True)
class QueueCounts:
    """Where one annotator stands in a project, by kind of task.

    `done_*` are answered tasks, `live_*` reservations held now, `available_*` tasks they could still
    be served. Gold is planned at the project's target share of the whole queue; the annotator sees only
    the totals, which move by exactly one per answer whatever the kind of task.
    """

    done_ordinary: int
    done_gold: int
    live_ordinary: int
    live_gold: int
    available_ordinary: int
    available_gold: int
    gold_share: float

    @property
    def served(self) -> int:
        return self.done_ordinary + self.done_gold + self.live_ordinary + self.live_gold

    @property
    def served_gold(self) -> int:
        return self.done_gold + self.live_gold

    @property
    def planned_gold(self) -> int:
        ordinary_total = self.done_ordinary + self.live_ordinary + self.available_ordinary
        return round(ordinary_total * self.gold_share / (1 - self.gold_share)) if self.gold_share < 1 else 0

    @property
    def gold_allowed(self) -> bool:
        """Whether serving one more gold task stays within the planned number."""
        return self.available_gold > 0 and self.served_gold < self.planned_gold

    @property
    def done(self) -> int:
        return self.done_ordinary + self.done_gold

    @property
    def remaining(self) -> int:
        open_gold = min(self.available_gold + self.live_gold, max(0, self.planned_gold - self.done_gold))
        return self.live_ordinary + self.available_ordinary + max(self.live_gold, open_gold)

    @property
    def assigned(self) -> int:
        return self.done + self.remaining

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 100


def own_counts(*, project: Project, annotator: User, now: datetime | None = None) -> hotpath.OwnCounts:
    """One pass over the annotator's own assignments in the project (and their tasks' counters)."""
    return hotpath.own_counts(
        project_id=project.pk, user_id=annotator.pk, now=now or timezone.now(), overlap=project.overlap,
        gold_overlap=project.gold_overlap,
    )  # fmt: skip


def queue_counts(
    *,
    project: Project,
    annotator: User,
    now: datetime | None = None,
    own: hotpath.OwnCounts | None = None,
    fresh: bool = False,
) -> QueueCounts:
    """The annotator's counts: one pass over their own assignments (`own`, when the caller has just made
    it at `now`), and the project's open totals.

    A task is available to the annotator when it has a place and they never held it, so `available` is
    the project's open tasks less those among them the annotator holds or held: no scan of the whole
    project per annotator. The open totals may be up to `JUDGING_OPEN_TOTALS_SECONDS` old (see
    `open_totals`), unless `fresh`: what counts shown after an undo need."""
    own = own or own_counts(project=project, annotator=annotator, now=now)
    totals = open_totals(project, fresh=fresh)
    return QueueCounts(
        done_ordinary=own.done_ordinary,
        done_gold=own.done_gold,
        live_ordinary=own.live_ordinary,
        live_gold=own.live_gold,
        available_ordinary=max(0, totals.ordinary - own.held_open_ordinary),
        available_gold=max(0, totals.gold - own.held_open_gold),
        gold_share=project.gold_share_target,
    )


#: (project id, overlap, gold overlap) -> (monotonic time counted, totals); one per web process.
_open_totals_cache: dict[tuple[int, int, int | None], tuple[float, hotpath.OpenTotals]] = {}


def open_totals(project: Project, *, fresh: bool = False) -> hotpath.OpenTotals:
    """The project's tasks with a place left, by kind: a count over the project's open tasks (an index
    read), kept per process for `JUDGING_OPEN_TOTALS_SECONDS` (0: counted every time; `fresh`: counted
    now, and not kept: see below).

    Under load every claim would count the same thousands of index entries; with the cache a web
    process counts once a second. What it costs is the annotator's "remaining" figure and the gold plan
    lagging the other annotators' claims by that second, as they lag them between two page loads anyway:
    serving is unaffected, a claim locks and re-checks the task it takes.

    The annotator's own claims and answers never make their figures lag: `available` subtracts the
    open tasks they hold or held as counted now, and a task's place taken or given up by them moves it
    in or out of both counts alike. An undo is the exception: it takes back a place that a skipped,
    unclear or too-fast answer gave up, and the cached count, made after that answer, still holds the
    task as open while it is theirs again and full. Read from the cache right after an undo, the task
    counted once more ("24 remaining · 29 in your queue" where 22 and 27 were right, the gold plan
    rounding up with it). So counts that follow an undo or a reopen are `fresh`, and an undo forgets
    this process's count (`open_totals_forget`). A fresh count is not kept: made while the annotator
    holds a task, it would hold that task as full, and a skip of it right after would count one short.
    """
    cached = None if fresh else open_totals_kept(project)
    if cached is not None:
        return cached
    totals = hotpath.open_totals(
        project_id=project.pk, overlap=project.overlap, gold_overlap=project.gold_overlap
    )
    if not fresh:
        open_totals_keep(project, totals)
    return totals


def open_totals_kept(project: Project) -> hotpath.OpenTotals | None:
    """This process's count of the project's open totals while it is under `JUDGING_OPEN_TOTALS_SECONDS`
    old, else None (see `open_totals`)."""
    ttl = float(getattr(settings, "JUDGING_OPEN_TOTALS_SECONDS", 0))
    cached = _open_totals_cache.get((project.pk, project.overlap, project.gold_overlap))
    if ttl > 0 and cached is not None and cached[0] > time.monotonic() - ttl:
        return cached[1]
    return None


def open_totals_keep(project: Project, totals: hotpath.OpenTotals) -> None:
    """Keep a count of the project's open totals just made (not a `fresh` one: see `open_totals`)."""
    if float(getattr(settings, "JUDGING_OPEN_TOTALS_SECONDS", 0)) > 0:
        if len(_open_totals_cache) > 1000:
            _open_totals_cache.clear()
        _open_totals_cache[(project.pk, project.overlap, project.gold_overlap)] = (time.monotonic(), totals)


def open_totals_forget(project: Project) -> None:
    """Drop this process's cached open totals of the project (after an undo: see `open_totals`)."""
    _open_totals_cache.pop((project.pk, project.overlap, project.gold_overlap), None)


@dataclass(frozen=True)
class OpenProject:
    project: Project
    remaining: int
    #: The annotator's own answers in the project (skips included).
    answered: int = 0


def annotator_queues(*, user: User, limit: int = 10) -> list[OpenProject]:
    """Every project the user annotates (`limit` at most), with the tasks left for them and how many they
    answered: the `QueueCounts.remaining` the judge page shows (three small queries per project) and one
    count of their answers for all of them."""
    memberships = list(
        ProjectMembership.objects.filter(user=user, role=Role.ANNOTATOR)
        .select_related("project")
        .order_by("project__name")[:limit]
    )
    answered = dict(
        Annotation.objects.filter(annotator=user, project_id__in=[m.project_id for m in memberships])
        .values("project_id")
        .annotate(n=Count("pk"))
        .values_list("project_id", "n")
    )
    return [
        OpenProject(
            m.project,
            queue_counts(project=m.project, annotator=user).remaining,
            answered.get(m.project_id, 0),
        )
        for m in memberships
    ]


def annotator_open_projects(*, user: User, limit: int = 10) -> list[OpenProject]:
    """The projects where the user, as an annotator, still has tasks to judge, with how many."""
    return [entry for entry in annotator_queues(user=user, limit=limit) if entry.remaining > 0]


@dataclass(frozen=True)
class AccuracyPoint:
    observed_at: datetime
    exact: float | None
    within_one: float | None


@dataclass(frozen=True)
class AccuracyTrend:
    project: Project
    points: list[AccuracyPoint]  # oldest first


#: The annotator's figures on gold they see on their home: their accuracy, never which items were gold.
TREND_METRICS = ("gold_accuracy", "gold_accuracy_within")


def annotator_accuracy_trend(*, user: User, last: int = 12) -> list[AccuracyTrend]:
    """The user's own accuracy on gold (exact and within one grade) at each of the last `last` quality
    recomputes of every project they annotate, from the metric table (the annotator series that each
    recompute writes). Two queries. Only figures: no gold label, no item, no other annotator."""
    projects = {
        m.project_id: m.project
        for m in ProjectMembership.objects.filter(user=user, role=Role.ANNOTATOR).select_related("project")
    }
    if not projects:
        return []
    keys = {series_key(pk, user.pk): pk for pk in projects}
    rows = (
        MetricValue.objects.filter(
            series__kind=Series.Kind.ANNOTATOR,
            series__object_id=user.pk,
            series__key__in=list(keys),
            metric__in=TREND_METRICS,
            subgroup="",
        )  # fmt: skip
        .order_by("series__key", "-observed_at", "-job_id")
        .values_list("series__key", "job_id", "observed_at", "metric", "value")
    )
    by_project: dict[int, dict[int, dict[str, Any]]] = {}
    for key, job_id, observed_at, metric, value in rows:
        jobs = by_project.setdefault(keys[key], {})
        if job_id not in jobs and len(jobs) >= last:
            continue
        jobs.setdefault(job_id, {"at": observed_at})[metric] = value
    trends = []
    for project_id, jobs in by_project.items():
        points = sorted(
            (
                AccuracyPoint(j["at"], j.get("gold_accuracy"), j.get("gold_accuracy_within"))
                for j in jobs.values()
            ),
            key=lambda p: p.observed_at,
        )
        trends.append(AccuracyTrend(projects[project_id], points))
    return sorted(trends, key=lambda t: t.project.name)


def gold_turn(*, counts: QueueCounts, project: Project, seed: int) -> bool:
    """Whether the next task served should be gold.

    A seeded draw at the target share, kept within the project's minimum and maximum share with one task
    of slack either way, so gold lands at no fixed positions.
    """
    if not counts.gold_allowed:
        return False
    position = counts.served
    after = position + 1
    if counts.served_gold + 1 > project.gold_share_max * after + 1:
        return False
    if counts.served_gold < project.gold_share_min * after - 1:
        return True
    return gold_draw(seed, position) < project.gold_share_target


def gold_draw(seed: int, position: int) -> float:
    """The seeded draw of `gold_turn` for the annotator's `position` in their queue, in [0, 1): a 32-bit
    integer hash of the seed and the position. PostgreSQL's `annotations_gold_draw` (migration
    0017_answer_claim) computes the same, for the claim made in one call (`hotpath.answer_and_claim`);
    tests/annotations/test_gold_draw.py holds the two equal."""
    mask = 0xFFFFFFFF
    x = (seed ^ ((position & 0x7FFFFFFF) * 2654435761)) & mask
    x = ((x ^ (x >> 16)) * 73244475) & mask
    x = ((x ^ (x >> 16)) * 73244475) & mask
    return (x ^ (x >> 16)) / 4294967296.0


def current_reservation(*, project: Project, annotator: User) -> Assignment | None:
    return (
        Assignment.objects.filter(project=project, annotator=annotator, state=Assignment.State.RESERVED)
        .select_related("task__topic", "task__document")
        .order_by("reserved_at")
        .first()
    )


def undoable_annotations(*, membership: ProjectMembership, now: datetime | None = None) -> list[Annotation]:
    """The annotator's answers that undo (and "Change" on the history page) may still take back, newest first.

    The rule (`UNDO_RULE`): answers of the current work session, at most the `UNDO_DEPTH` newest. The
    session is cut at the first pause of the project's break length (`session_break_minutes`, but never
    under `UNDO_WINDOW`, so that a project with no break still lets a slip be undone), and at a dismissed
    break prompt. Older answers stay as they are: the lead's agreement figures and qrels may already
    rest on them.
    """
    now = now or timezone.now()
    gap = max(timedelta(minutes=membership.project.session_break_minutes), UNDO_WINDOW)
    answers = Annotation.objects.filter(project=membership.project_id, annotator=membership.user_id)
    if membership.break_dismissed_at is not None:
        answers = answers.filter(created_at__gt=membership.break_dismissed_at)
    undoable: list[Annotation] = []
    previous = now
    for answer in answers.order_by("-created_at", "-pk")[:UNDO_DEPTH]:
        if previous - answer.created_at >= gap:
            break
        undoable.append(answer)
        previous = answer.created_at
    return undoable


def last_undoable_annotation(
    *, project: Project, annotator: User, now: datetime | None = None
) -> Annotation | None:
    """The answer the undo button takes back next (see `undoable_annotations`), or None."""
    membership = (
        ProjectMembership.objects.select_related("project")
        .filter(project=project, user=annotator, role=Role.ANNOTATOR)
        .first()
    )
    if membership is None:
        return None
    undoable = undoable_annotations(membership=membership, now=now)
    return undoable[0] if undoable else None


def own_answers(*, membership: ProjectMembership) -> QuerySet[Annotation]:
    """The member's own answers in the project, newest first, with what the history page shows."""
    return (
        Annotation.objects.filter(project=membership.project_id, annotator=membership.user_id)
        .select_related("task__topic", "task__document")
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class SessionState:
    started_at: datetime
    minutes: float
    break_due: bool


def session_state(*, membership: ProjectMembership, now: datetime | None = None) -> SessionState:
    """How long the annotator has been working without a break.

    A session is a run of answers with no gap of `session_break_minutes` or more; dismissing the break
    prompt starts a new one.
    """
    now = now or timezone.now()
    project = membership.project
    cap = timedelta(minutes=project.session_cap_minutes)
    gap = timedelta(minutes=project.session_break_minutes)
    since = now - cap - gap
    if membership.break_dismissed_at and membership.break_dismissed_at > since:
        since = membership.break_dismissed_at
    times = (
        Annotation.objects.filter(project=project, annotator=membership.user_id, created_at__gte=since)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
    )
    started = previous = now
    for created in times:
        if previous - created >= gap:
            break
        started = previous = created
    minutes = (now - started).total_seconds() / 60
    return SessionState(started, minutes, project.session_cap_minutes > 0 and now - started >= cap)


# --- the lead's views ---------------------------------------------------------------------------------


def topic_progress(*, project: Project) -> QuerySet[Any]:
    """Per topic: tasks, gold tasks, answers that count, and tasks with all `overlap` answers."""
    return (
        Task.objects.filter(project=project)
        .values("topic__qid", "topic__title")
        .annotate(
            tasks=Count("id"),
            gold=Count("id", filter=Q(is_gold=True)),
            labels=Sum("label_count"),
            complete=Count(
                "id", filter=Q(is_gold=False, label_count__gte=F("extra_places") + project.overlap)
            ),
            ordinary=Count("id", filter=Q(is_gold=False)),
        )
        .order_by("topic__qid")
    )


def annotator_progress(*, project: Project) -> QuerySet[ProjectMembership]:
    """Per annotator member: answers by outcome, gold answers and labels, and mean seconds (one query)."""
    answers = (
        Annotation.objects.filter(project=project, annotator=OuterRef("user")).order_by().values("annotator")
    )

    def count(**filters: Any) -> Coalesce:
        query = answers.filter(**filters).annotate(n=Count("id")).values("n")
        return Coalesce(Subquery(query, output_field=IntegerField()), 0)

    mean_seconds = Subquery(answers.annotate(s=Avg("seconds_spent")).values("s"))
    return (
        ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR)
        .select_related("user")
        .annotate(
            answered=count(),
            graded=count(grade__isnull=False, too_fast=False),
            skipped=count(skipped=True),
            unclear=count(unclear=True),
            too_fast=count(too_fast=True),
            gold_answered=count(task__is_gold=True),
            # The quality page's "gold seen": gold answers with a grade given in time (the labels that
            # accuracy on gold is computed over); skipped, unclear and too-fast answers are left out.
            gold_seen=count(task__is_gold=True, grade__isnull=False, too_fast=False),
            mean_seconds=mean_seconds,
        )
        .order_by("user__username")
    )


def project_comments(*, project: Project) -> QuerySet[Annotation]:
    """The annotators' comments on their answers, newest first, for the lead (never for annotators)."""
    return (
        Annotation.objects.filter(project=project)
        .exclude(comment="")
        .select_related("annotator", "task__topic", "task__document")
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class ProjectTotals:
    topics: int
    documents: int
    tasks: int
    gold_tasks: int
    labels: int
    labels_needed: int
    complete_tasks: int

    @property
    def percent(self) -> int:
        return (
            round(100 * min(self.labels, self.labels_needed) / self.labels_needed)
            if self.labels_needed
            else 0
        )


def project_totals(*, project: Project) -> ProjectTotals:
    tasks = Task.objects.filter(project=project).aggregate(
        tasks=Count("id"),
        gold_tasks=Count("id", filter=Q(is_gold=True)),
        labels=Coalesce(Sum("label_count", filter=Q(is_gold=False)), 0),
        complete_tasks=Count(
            "id", filter=Q(is_gold=False, label_count__gte=F("extra_places") + project.overlap)
        ),
        extra=Coalesce(Sum("extra_places", filter=Q(is_gold=False)), 0),
    )
    ordinary = tasks["tasks"] - tasks["gold_tasks"]
    extra = tasks.pop("extra")
    return ProjectTotals(
        topics=project.topics.count(),
        documents=project.documents.count(),
        labels_needed=ordinary * project.overlap + extra,
        **tasks,
    )


# --- quality and qrels builds (leads) -----------------------------------------------------------------


def quality_snapshot(*, project: Project) -> QualitySnapshot | None:
    return QualitySnapshot.objects.filter(project=project).first()


def answers_since(*, project: Project, snapshot: QualitySnapshot | None) -> int:
    """Answers newer than the snapshot's latest (all of them without a snapshot): how stale it is."""
    answers = Annotation.objects.filter(project=project)
    if snapshot is not None and snapshot.latest_answer_at is not None:
        answers = answers.filter(created_at__gt=snapshot.latest_answer_at)
    return answers.count()


def annotator_memberships(*, project: Project) -> dict[int, ProjectMembership]:
    """The project's annotators by user id, with who last overrode their reliability."""
    rows = ProjectMembership.objects.filter(project=project, role=Role.ANNOTATOR).select_related(
        "user", "quality_override_by"
    )
    return {membership.user_id: membership for membership in rows}


def quality_rows(
    *, snapshot: QualitySnapshot, memberships: dict[int, ProjectMembership]
) -> list[dict[str, Any]]:
    """The snapshot's annotator rows with each lead's override applied as it stands now.

    The thresholds' verdict is the snapshot's; an override made since shows at once (the recompute it
    queues agrees).
    """
    Override = ProjectMembership.QualityOverride
    overridden = {Override.INCLUDE: (True, "reinstated"), Override.EXCLUDE: (False, "disqualified")}
    rows = []
    for row in snapshot.annotators:
        membership = memberships.get(row["user_id"])
        decision = membership.quality_override if membership else Override.AUTO
        included, reason = overridden.get(decision, (row["meets_thresholds"], row["threshold_reason"]))
        rows.append(
            {**row, "included": included, "reason": reason, "override": decision, "membership": membership}
        )
    return rows


def qrels_builds(*, project: Project) -> QuerySet[QrelsBuild]:
    return QrelsBuild.objects.filter(project=project).select_related("created_by").order_by("-version")


def qrels_build_for(*, project: Project, version: int) -> QrelsBuild:
    build = QrelsBuild.objects.filter(project=project, version=version).select_related("created_by").first()
    if build is None:
        raise Http404(f"No qrels build v{version} in this project.")
    build.project = project
    return build


def latest_recompute(*, project: Project) -> QualityRecompute | None:
    """The project's newest quality recompute (pending, running or finished), for its live status."""
    return QualityRecompute.objects.filter(project=project).order_by("-created_at", "-pk").first()


#: The quality page's status poll reports at least this many of the newest builds, finished or not.
WATCHED_BUILDS = 20


def qrels_builds_to_watch(*, project: Project) -> list[QrelsBuild]:
    """The newest builds and every unfinished one (two small queries), newest first: what the quality
    page's polling script needs to see a build finish."""
    recent = list(QrelsBuild.objects.filter(project=project).order_by("-version")[:WATCHED_BUILDS])
    oldest = recent[-1].version if recent else 0
    older = QrelsBuild.objects.unfinished().filter(project=project, version__lt=oldest).order_by("-version")
    return recent + list(older)


@dataclass(frozen=True)
class QrelsDiff:
    """Pairs added, removed and changed from build `old` to build `new`, each sorted by (qid, doc_id)."""

    old: QrelsBuild
    new: QrelsBuild
    added: list[tuple[str, str, int]]
    removed: list[tuple[str, str, int]]
    changed: list[tuple[str, str, int, int]]
    unchanged: int


def qrels_build_diff(*, old: QrelsBuild, new: QrelsBuild) -> QrelsDiff:
    """Compare two builds' judgments (two queries)."""

    def judgments(build: QrelsBuild) -> dict[tuple[str, str], int]:
        rows = QrelsJudgment.objects.filter(build=build).values_list("qid", "doc_id", "rel")
        return {(qid, doc_id): rel for qid, doc_id, rel in rows}

    before, after = judgments(old), judgments(new)
    common = before.keys() & after.keys()
    changed = sorted(
        (q, d, before[(q, d)], after[(q, d)]) for q, d in common if before[(q, d)] != after[(q, d)]
    )
    return QrelsDiff(
        old=old,
        new=new,
        added=sorted((q, d, after[(q, d)]) for q, d in after.keys() - before.keys()),
        removed=sorted((q, d, before[(q, d)]) for q, d in before.keys() - after.keys()),
        changed=changed,
        unchanged=len(common) - len(changed),
    )
