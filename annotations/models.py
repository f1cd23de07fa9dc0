"""Judging projects, tasks and annotations (docs/judging.md).

A project holds topics (queries) and documents; a task is one (topic, document) pair to judge. Each task
goes to `overlap` annotators through an `Assignment`, a reservation that expires; an answered assignment
has exactly one `Annotation`. Gold tasks are ordinary tasks whose pair also has a `GoldLabel`.

Quality (docs/quality.md): a `QualitySnapshot` per project holds the figures the
quality dashboard reads, written by a `QualityRecompute` job; a `QrelsBuild` is one immutable, versioned
qrels snapshot whose judgments are `QrelsJudgment` rows. Both jobs follow `evalplatform.jobs.Job`.

Write paths live in `annotations/services.py` (judging), `annotations/quality/services.py` and
`annotations/qrels.py`; read queries in `annotations/selectors.py`.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import salted_hmac

from evalcore.judging import AGGREGATIONS, DEFAULT_QRELS_PARAMS, OVERRIDES, QrelsParams
from evalplatform.jobs import Job

# The largest grade a scale may use: rating keys are single digits.
MAX_GRADE = 9
# The longest comment an annotator may leave on an answer.
COMMENT_MAX_LENGTH = 2000


def default_scale() -> list[dict[str, Any]]:
    """TREC-style 0-4 graded relevance, the scale of seed 004 §21.3."""
    return [
        {"grade": 0, "label": "Not relevant", "definition": "The document has no useful information for the query."},
        {"grade": 1, "label": "Marginally relevant", "definition": "The document is tangentially related but does not answer the query."},
        {"grade": 2, "label": "Fairly relevant", "definition": "The document partially answers the query or gives related information."},
        {"grade": 3, "label": "Highly relevant", "definition": "The document substantially answers the query."},
        {"grade": 4, "label": "Perfectly relevant", "definition": "The document is an ideal answer to the query."},
    ]  # fmt: skip


DEFAULT_GUIDELINES = """Rate how well each document answers the query.
Consider: does it answer the question? Is the information accurate? Would a user be satisfied with this result?

- If the document is relevant but outdated, rate it marginally relevant (1).
- If it answers a related but different question, rate it fairly relevant (2).
- If you are unsure between two grades, choose the lower one.
- If you cannot judge the pair at all (broken text, unintelligible query), mark it unclear."""


def default_guideline_examples() -> list[dict[str, Any]]:
    return [
        {
            "query": "How to make sourdough bread",
            "document": "Sourdough bread recipe: mix flour, water and starter, let it rise overnight...",
            "grade": 4,
            "reason": "A direct recipe for the query.",
        },
        {
            "query": "How to make sourdough bread",
            "document": "The history of bread dates back 10,000 years...",
            "grade": 0,
            "reason": "About the history of bread, not how to make sourdough.",
        },
    ]


def new_shuffle_seed() -> int:
    """A random 62-bit seed; it orders one annotator's queue (see `selectors.candidate_tasks`)."""
    return secrets.randbits(62)


#: Fixed words under /projects/ (`annotations.urls`): a project with one of these slugs would be hidden
#: behind that page (`/projects/new/` is the creation form).
RESERVED_PROJECT_SLUGS = frozenset({"new"})


class Project(models.Model):
    class TooFastPolicy(models.TextChoices):
        REFUSE = "refuse", "Refuse the answer"
        FLAG = "flag", "Store it, flag it as too fast and exclude it"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    scale = models.JSONField(default=default_scale, help_text="Grades with labels and definitions.")
    guidelines = models.TextField(default=DEFAULT_GUIDELINES, blank=True)
    guideline_examples = models.JSONField(
        default=default_guideline_examples,
        blank=True,
        help_text="Worked examples: query, document, grade, reason.",
    )
    overlap = models.PositiveSmallIntegerField(default=3, help_text="Distinct annotators per ordinary task.")
    gold_overlap = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Annotators per gold task. Empty: every annotator may see every gold task, "
        "so that each annotator's accuracy can be measured.",
    )
    gold_share_min = models.FloatField(default=0.10, help_text="Lowest share of gold tasks in a queue.")
    gold_share_max = models.FloatField(default=0.15, help_text="Highest share of gold tasks in a queue.")
    min_seconds_per_task = models.PositiveIntegerField(default=10)
    too_fast_policy = models.CharField(
        max_length=8, choices=TooFastPolicy.choices, default=TooFastPolicy.REFUSE
    )
    session_cap_minutes = models.PositiveIntegerField(
        default=60, help_text="Prompt for a break after this many minutes of continuous work (0: never)."
    )
    session_break_minutes = models.PositiveIntegerField(
        default=10, help_text="A pause at least this long starts a new session."
    )
    reservation_minutes = models.PositiveIntegerField(
        default=30, help_text="An unanswered task returns to the pool after this long."
    )
    min_gold_accuracy = models.FloatField(
        default=0.7, help_text="Reliable annotators answer at least this share of gold items exactly right."
    )
    min_gold_items = models.PositiveIntegerField(
        default=10, help_text="An annotator is judged reliable only after this many gold items."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    team = models.ForeignKey(
        "evalplatform.Team",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="judging_projects",
        help_text="The team whose members may read this project's quality figures and qrels builds.",
    )
    has_extra_places = models.BooleanField(
        default=False,
        editable=False,
        help_text="Some of its tasks have places beyond the overlap (a machine judge's routing asked one more "
        "judgment of a pair): claims read them first. Read with the project row, as `has_priorities`.",
    )
    has_priorities = models.BooleanField(
        default=False,
        editable=False,
        help_text="Some of its tasks have a priority (a pool built from runs): claims serve those first. "
        "Read with the project row, so that a claim in a project without priorities reads nothing more.",
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        through="ProjectMembership",
        through_fields=("project", "user"),
        related_name="judging_projects",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="project_overlap_positive"),
            models.CheckConstraint(
                condition=Q(gold_overlap__isnull=True) | Q(gold_overlap__gte=1),
                name="project_gold_overlap_positive",
            ),
            models.CheckConstraint(
                condition=Q(gold_share_min__gte=0)
                & Q(gold_share_min__lte=F("gold_share_max"))
                & Q(gold_share_max__lt=1),
                name="project_gold_share_range",
            ),
            models.CheckConstraint(
                condition=Q(reservation_minutes__gte=1), name="project_reservation_positive"
            ),
            models.CheckConstraint(
                condition=Q(min_gold_accuracy__gte=0, min_gold_accuracy__lte=1),
                name="project_min_gold_accuracy_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("annotations:project-detail", args=[self.slug])

    def clean(self) -> None:
        super().clean()
        if self.slug.lower() in RESERVED_PROJECT_SLUGS:
            message = (
                f"{self.slug!r} is reserved: /projects/{self.slug}/ is another page. Choose another slug."
            )
            raise ValidationError({"slug": message})

    @property
    def gold_share_target(self) -> float:
        return (self.gold_share_min + self.gold_share_max) / 2

    @property
    def grades(self) -> list[int]:
        return [int(level["grade"]) for level in self.scale]

    @property
    def reservation_timeout(self) -> timedelta:
        return timedelta(minutes=self.reservation_minutes)

    def cap_for(self, *, is_gold: bool) -> int | None:
        """How many annotators one task may occupy; None means no limit."""
        return self.gold_overlap if is_gold else self.overlap

    def grade_label(self, grade: int | None) -> str:
        for level in self.scale:
            if level["grade"] == grade:
                return str(level["label"])
        return "" if grade is None else str(grade)


class ProjectMembership(models.Model):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "Annotator"
        LEAD = "lead", "Lead"

    QualityOverride = models.TextChoices(  # type: ignore[call-overload]
        "QualityOverride", [(name.upper(), (name, label)) for name, label in OVERRIDES.items()]
    )

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    shuffle_seed = models.BigIntegerField(default=new_shuffle_seed, editable=False)
    break_dismissed_at = models.DateTimeField(null=True, blank=True)
    quality_override = models.CharField(
        max_length=8,
        choices=QualityOverride.choices,
        default=QualityOverride.AUTO,
        help_text="Whether the annotator's labels go into qrels builds: by their accuracy on gold, or a "
        "lead's decision either way.",
    )
    quality_override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    quality_override_at = models.DateTimeField(null=True, blank=True)
    can_adjudicate = models.BooleanField(
        default=False,
        help_text="A senior annotator the lead chose to set final grades in the adjudication queue "
        "(leads always may).",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "role", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_per_project"),
            models.CheckConstraint(condition=Q(role__in=["annotator", "lead"]), name="membership_role_valid"),
            models.CheckConstraint(
                condition=Q(quality_override__in=["auto", "include", "exclude"]),
                name="membership_quality_override_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.get_role_display()} · {self.project}"

    @property
    def is_lead(self) -> bool:
        return self.role == self.Role.LEAD


class Topic(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="topics")
    qid = models.CharField(max_length=128)
    title = models.TextField(help_text="The query as the user typed it.")
    description = models.TextField(blank=True, help_text="What the user wants, when the topic says.")

    class Meta:
        ordering = ["project", "qid"]
        constraints = [models.UniqueConstraint(fields=["project", "qid"], name="topic_unique_qid")]

    def __str__(self) -> str:
        return f"{self.qid}: {self.title}"


class Document(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    doc_id = models.CharField(max_length=256)
    title = models.TextField(blank=True)
    text = models.TextField()

    class Meta:
        ordering = ["project", "doc_id"]
        constraints = [models.UniqueConstraint(fields=["project", "doc_id"], name="document_unique_doc_id")]

    def __str__(self) -> str:
        return self.doc_id


TASK_RANK_MULTIPLIER = 2_654_435_761  # Knuth's multiplicative-hash constant (2**32 / the golden ratio)
TASK_RANK_MODULUS = 2_147_483_647  # the Mersenne prime 2**31 - 1: ids below it map to distinct ranks


class Task(models.Model):
    """One (topic, document) pair to judge.

    `assigned_count` and `label_count` are counters kept by `annotations.services` under the task's row
    lock: the first is how many annotators occupy the task now (live reservations plus answers that
    count), the second how many answers count towards qrels. Claims still re-count under the lock.
    """

    # No index of its own: `task_unique_pair`, `task_rank` and `task_claimable_rank` lead with it, and every
    # claim's counter update (a new row version, the counter being a key of `task_claimable_rank`) wrote
    # one more index entry for it.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tasks", db_index=False)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="tasks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="tasks")
    is_gold = models.BooleanField(default=False, help_text="The pair has a gold label. Leads only.")
    assigned_count = models.PositiveIntegerField(default=0)
    label_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    #: A fixed scramble of the id (a multiplicative hash modulo the prime 2**31 - 1), written by the database.
    #: Fresh tasks are served in this order, each annotator from their own starting point, so that a claim
    #: reads a few entries of an index instead of sorting every open task (`selectors.fresh_candidates`).
    rank = models.GeneratedField(
        expression=(F("id") * TASK_RANK_MULTIPLIER) % TASK_RANK_MODULUS,
        output_field=models.BigIntegerField(),
        db_persist=True,
    )
    #: Where a pool built from runs wants the task judged: lower is sooner; None, no priority. Fresh tasks
    #: with a priority are served before the others, in this order (`hotpath.prioritised_candidates_sql`).
    priority = models.BigIntegerField(null=True, blank=True, editable=False)
    #: Places beyond the project's overlap: one more judgment a machine judge's routing asked of a pair that
    #: was a task already (`machine_judges.routing`). Claims serve such tasks first while they have a place
    #: (`hotpath.extra_candidates_sql`), when the project's `has_extra_places` says some may.
    extra_places = models.PositiveSmallIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["project", "topic", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "topic", "document"], name="task_unique_pair"),
            models.CheckConstraint(
                condition=Q(label_count__lte=F("assigned_count")), name="task_labels_within_assigned"
            ),
        ]
        indexes = [
            # Claims: started tasks by count, fresh ones (assigned_count 0) in rank order, both a range read.
            models.Index(fields=["project", "is_gold", "assigned_count", "rank"], name="task_claimable_rank"),
            # Gold claims, where gold has no overlap cap: all gold tasks in rank order.
            models.Index(fields=["project", "is_gold", "rank"], name="task_rank"),
            # Claims in a project with priorities: fresh ordinary tasks in priority order, a range read.
            models.Index(
                fields=["project", "assigned_count", "priority", "id"],
                condition=Q(priority__isnull=False, is_gold=False),
                name="task_claimable_priority",
            ),
            # Tasks with places beyond the overlap, a handful: read by claims and open totals alone.
            models.Index(fields=["project", "id"], condition=Q(extra_places__gt=0), name="task_extra_places"),
        ]

    def __str__(self) -> str:
        return f"{self.topic.qid} / {self.document.doc_id}"

    def cap(self, project: Project) -> int | None:
        """How many annotators may occupy the task: the project's overlap of its kind (None: no limit)
        and its extra places."""
        cap = project.cap_for(is_gold=self.is_gold)
        return None if cap is None else cap + self.extra_places

    @property
    def reference(self) -> str:
        """The pair's id as annotators see it: a keyed hash of the project and the task id, stable and opaque.

        Document ids can give gold away (an attention check imported as `attention-check-1`), and so can
        task ids (gold added after the pool has the highest); this says neither."""
        return salted_hmac("annotations.Task.reference", f"{self.project_id}:{self.pk}").hexdigest()[:10]


class GoldLabel(models.Model):
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="gold_label")
    grade = models.PositiveSmallIntegerField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task"]
        constraints = [models.CheckConstraint(condition=Q(grade__lte=MAX_GRADE), name="gold_grade_range")]

    def __str__(self) -> str:
        return f"{self.task}: {self.grade}"


class AttentionCheck(models.Model):
    """A gold task built to be obvious (a document that states the grade to give, or an off-topic one).

    Its expected grade is the task's gold label; this row says why it is obvious, so that quality reports
    can tell attention checks from expert gold.
    """

    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="attention_check")
    reason = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["task"]

    def __str__(self) -> str:
        return f"attention check {self.task}"


class AssignmentQuerySet(models.QuerySet["Assignment"]):
    def live(self, now: Any = None) -> AssignmentQuerySet:
        """Reservations not yet answered and not expired."""
        return self.filter(state=Assignment.State.RESERVED, expires_at__gt=now or timezone.now())

    def expired(self, now: Any = None) -> AssignmentQuerySet:
        return self.filter(state=Assignment.State.RESERVED, expires_at__lte=now or timezone.now())

    def occupying(self, now: Any = None) -> AssignmentQuerySet:
        """The assignments that hold one of a task's `overlap` places."""
        return self.filter(
            Q(state=Assignment.State.LABELLED)
            | Q(state=Assignment.State.RESERVED, expires_at__gt=now or timezone.now())
        )


class Assignment(models.Model):
    """A task served to one annotator: a reservation until answered.

    `reserved_at` is when the task was first served; the seconds an annotation took are measured from it
    on the server clock. An expired reservation is deleted, so the task returns to the pool.
    """

    class State(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        LABELLED = "labelled", "Answered with a grade that counts"
        RELEASED = "released", "Answered without a grade that counts (skipped, unclear or too fast)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="assignments")
    # Neither has an index of its own: `assignment_unique_task_annotator` and `assignment_by_annotator`
    # lead with them, and each was one more index written by every claim's insert.
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.RESERVED)
    reserved_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["project", "annotator", "reserved_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="assignment_unique_task_annotator"),
            models.UniqueConstraint(
                fields=["project", "annotator"],
                condition=Q(state="reserved"),
                name="assignment_one_reservation_per_annotator",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("reserved_at")), name="assignment_expires_after_reserved"
            ),
            models.CheckConstraint(
                condition=Q(state="reserved", answered_at__isnull=True)
                | Q(state__in=["labelled", "released"], answered_at__isnull=False),
                name="assignment_answered_at_matches_state",
            ),
        ]
        indexes = [
            models.Index(
                fields=["project", "expires_at"], condition=Q(state="reserved"), name="assignment_reserved"
            ),
            models.Index(fields=["annotator", "project", "state"], name="assignment_by_annotator"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} · {self.task} · {self.state}"

    @property
    def occupies_place(self) -> bool:
        return self.state == self.State.LABELLED or (
            self.state == self.State.RESERVED and self.expires_at > timezone.now()
        )

    def seconds_since_served(self, now: Any = None) -> float:
        return ((now or timezone.now()) - self.reserved_at).total_seconds()


class AnnotatorCounts(models.Model):
    """How many of the project's tasks the annotator has answered (their assignments no longer reserved:
    labelled or released), by kind: what a claim would otherwise count over all their assignments, a pass
    that grows with every answer they give (`annotations.hotpath.own_counts_with_candidates`).

    Kept by PostgreSQL triggers on the assignment and task tables (migration 0016_annotator_counts), so
    that every writer keeps it: the hot path's statements, the ORM, the admin, deletions. SQLite (the
    embedded demo) has no such triggers and counts the assignments instead; nothing reads these rows
    there."""

    # No index of its own: `annotator_counts_unique` leads with it.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    done_ordinary = models.IntegerField(default=0)
    done_gold = models.IntegerField(default=0)

    class Meta:
        verbose_name_plural = "annotator counts"
        constraints = [
            models.UniqueConstraint(fields=["project", "annotator"], name="annotator_counts_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator_id} in {self.project_id}: {self.done_ordinary} + {self.done_gold} gold"


class Annotation(models.Model):
    """An annotator's answer to one assignment. Skipped and unclear answers carry no grade."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    # None of the three has an index of its own: `annotation_by_task`, `annotation_unique_task_annotator`
    # and `annotation_by_annotator` lead with them, and each was one more index written by every answer.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="annotations", db_index=False)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations", db_index=False
    )
    grade = models.PositiveSmallIntegerField(null=True, blank=True)
    seconds_spent = models.FloatField(
        help_text="Submit time minus the time the task was served, server clock."
    )
    skipped = models.BooleanField(default=False)
    unclear = models.BooleanField(default=False)
    too_fast = models.BooleanField(default=False, help_text="Answered under the minimum time; excluded.")
    comment = models.TextField(
        blank=True, max_length=COMMENT_MAX_LENGTH, help_text="The annotator's optional note, for the lead."
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="annotation_unique_task_annotator"),
            models.CheckConstraint(condition=Q(grade__lte=MAX_GRADE), name="annotation_grade_range"),
            models.CheckConstraint(condition=Q(seconds_spent__gte=0), name="annotation_seconds_non_negative"),
            models.CheckConstraint(
                condition=Q(grade__isnull=False, skipped=False, unclear=False)
                | Q(grade__isnull=True, skipped=True, unclear=False)
                | Q(grade__isnull=True, skipped=False, unclear=True),
                name="annotation_grade_xor_skip_or_unclear",
            ),
        ]
        indexes = [
            models.Index(fields=["annotator", "project", "created_at"], name="annotation_by_annotator"),
            models.Index(fields=["project", "task"], name="annotation_by_task"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} · {self.task} · {self.outcome}"

    @property
    def counts(self) -> bool:
        """Whether the answer counts towards qrels: a grade given in time."""
        return self.grade is not None and not self.too_fast

    @property
    def outcome(self) -> str:
        if self.skipped:
            return "skipped"
        if self.unclear:
            return "unclear"
        return f"{self.grade}{' (too fast)' if self.too_fast else ''}"


class Adjudication(models.Model):
    """The final grade of a pair that a qrels build dropped for disagreement, set by a lead or by a member
    the lead allowed (`ProjectMembership.can_adjudicate`).

    Adjudicated grades enter later qrels builds as their own source (see `annotations.qrels`). Setting the
    grade again overwrites it; the row keeps who set it last and when.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="adjudications")
    task = models.OneToOneField(Task, on_delete=models.CASCADE, related_name="adjudication")
    grade = models.PositiveSmallIntegerField()
    note = models.TextField(blank=True, max_length=COMMENT_MAX_LENGTH)
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "task"]
        constraints = [
            models.CheckConstraint(condition=Q(grade__lte=MAX_GRADE), name="adjudication_grade_range")
        ]

    def __str__(self) -> str:
        return f"{self.task}: adjudicated {self.grade}"


# --- quality and qrels builds -------------------------------------------------------------------------


class QualitySnapshot(models.Model):
    """The latest quality figures of a project, precomputed by `annotations.tasks.quality_recompute`.

    The dashboard and the API only read this row (see `annotations/quality/services.py` for the figures and
    their JSON shapes). `statistics` keeps the sufficient statistics (coincidence and pair-count matrices, one
    confusion matrix per annotator pair) the agreement figures were reduced from.
    """

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="quality_snapshot")
    computed_at = models.DateTimeField()
    answers = models.PositiveIntegerField(help_text="Answers read, skipped and unclear ones included.")
    latest_answer_at = models.DateTimeField(null=True, blank=True)
    requested_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the recompute that wrote it was asked for; older ones never overwrite it.",
    )
    min_gold_accuracy = models.FloatField()
    min_gold_items = models.PositiveIntegerField()
    annotators = models.JSONField(default=list, help_text="One object per annotator.")
    agreement = models.JSONField(default=dict, help_text="Project agreement with bootstrap CIs, by scope.")
    kappa = models.JSONField(
        default=dict, help_text="Cohen's kappa matrices (unweighted, linear, quadratic)."
    )
    label_distribution = models.JSONField(default=dict)
    statistics = models.JSONField(default=dict, help_text="The sufficient statistics.")

    class Meta:
        ordering = ["project"]

    def __str__(self) -> str:
        return f"quality of {self.project} at {self.computed_at:%Y-%m-%d %H:%M:%S}"


class QualityRecompute(Job):
    """One recompute of a project's quality figures (`annotations.quality`), a job on the heavy queue.

    At most one is pending per project: answers arriving while one waits join it (the debounce), and
    answers arriving while one runs queue the next. The rows are the history of recomputes.
    """

    class Reason(models.TextChoices):
        ANSWERS = "answers", "New answers"
        LEAD = "lead", "A lead asked"
        THRESHOLDS = "thresholds", "The thresholds changed"
        OVERRIDE = "override", "A lead overrode an annotator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="quality_recomputes")
    reason = models.CharField(max_length=16, choices=Reason.choices, default=Reason.ANSWERS)

    task_name = "annotations.tasks.quality_recompute"

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project"], condition=Q(status="pending"), name="quality_recompute_one_pending"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="quality_recompute_claim")]

    def __str__(self) -> str:
        return f"quality recompute of {self.project} ({self.status})"


#: How a qrels build with each `sources` value judges a pair.
SOURCE_RULES = {
    "human": "people only: the reliable annotators' aggregate, or the adjudicated grade",
    "machine": "the machine judge only: its grade, for every pair of the project it graded",
    "both": "people where the human build judges the pair, else the machine judge's grade",
}


class QrelsBuild(Job):
    """One version of a project's qrels: its parameters, counts, agreement figures and export hash.

    Built by the job `annotations.tasks.qrels_build` (see `annotations/qrels.py`). Once `done` (or
    `failed`) a build never changes: the services only write builds that are `unfinished()`, and the admin
    is read-only. The same annotations and parameters give a byte-identical export, whose sha256 is
    `content_hash`.
    """

    Aggregation = models.TextChoices(  # type: ignore[call-overload]
        "Aggregation", [(name.upper(), (name, label)) for name, label in AGGREGATIONS.items()]
    )

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="qrels_builds")
    version = models.PositiveIntegerField()
    # Parameters (`evalcore.judging.QrelsParams`).
    tolerance = models.FloatField(
        default=DEFAULT_QRELS_PARAMS.tolerance,
        help_text="Keep a pair if max - min of its labels is at most this.",
    )
    aggregation = models.CharField(
        max_length=16, choices=Aggregation.choices, default=DEFAULT_QRELS_PARAMS.aggregation
    )
    min_accuracy = models.FloatField(default=DEFAULT_QRELS_PARAMS.min_accuracy)
    min_gold = models.PositiveIntegerField(default=DEFAULT_QRELS_PARAMS.min_gold)
    min_labels = models.PositiveSmallIntegerField(default=DEFAULT_QRELS_PARAMS.min_labels)
    use_adjudications = models.BooleanField(
        default=DEFAULT_QRELS_PARAMS.use_adjudications,
        help_text="Adjudicated grades set their pairs' rel (builds from before adjudication used none).",
    )
    # Which labels the build reads (annotations.machine_judges): people's (the default, and every build
    # made before machine judges), one machine judge's, or both by the rule `SOURCE_RULES` states.
    sources = models.CharField(
        max_length=8, choices=[("human", "human"), ("machine", "machine"), ("both", "both")], default="human"
    )
    machine_judge = models.ForeignKey(
        "MachineJudge", on_delete=models.PROTECT, null=True, blank=True, related_name="qrels_builds"
    )
    # Results.
    pairs_kept = models.PositiveIntegerField(default=0)
    counts = models.JSONField(
        default=dict, blank=True, help_text="Pairs and labels kept and dropped, by reason."
    )
    agreement = models.JSONField(default=dict, blank=True)
    annotators = models.JSONField(default=dict, blank=True, help_text="Included and excluded annotators.")
    content_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the TREC qrels export.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "annotations.tasks.qrels_build"
    queue_down_hint = "Build again later, or run `python manage.py build_qrels PROJECT --sync`."

    class Meta:
        ordering = ["project", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "version"], name="qrels_build_unique_version"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "running", "done", "failed"]),
                name="qrels_build_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(aggregation__in=list(AGGREGATIONS)),
                name="qrels_build_aggregation_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status="done") | ~Q(content_hash=""), name="qrels_build_done_has_hash"
            ),
            models.CheckConstraint(
                condition=Q(tolerance__gte=0, min_accuracy__gte=0, min_accuracy__lte=1, min_labels__gte=1),
                name="qrels_build_params_valid",
            ),
            models.CheckConstraint(
                condition=Q(sources="human", machine_judge__isnull=True)
                | Q(sources__in=["machine", "both"], machine_judge__isnull=False),
                name="qrels_build_sources_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project.slug} qrels v{self.version} ({self.status})"

    def on_done(self) -> None:
        """Announce the new version (`annotations.signals.qrels_build_done`): a team linked to the project
        re-scores its runs on it."""
        from annotations.signals import qrels_build_done

        qrels_build_done.send(sender=QrelsBuild, build_id=self.pk)

    @property
    def params(self) -> QrelsParams:
        """The parameters the build was made with: one column each."""
        return QrelsParams(**{name: getattr(self, name) for name in QrelsParams.names()})

    @property
    def source_rule(self) -> str:
        """The rule that chose each pair's rel, in words (shown with the build and in its summary)."""
        return SOURCE_RULES[self.sources]

    @property
    def adjudicated(self) -> int:
        """How many of the build's pairs took their rel from an adjudication."""
        return int(self.counts.get("adjudicated", 0))


class QrelsJudgment(models.Model):
    """One (topic, document) pair of a qrels build: its relevance, and the labels it came from.

    `score` is the aggregate before rounding to `rel` (the mean, say); `labels` is the provenance, one
    object per label used: annotator username, grade, seconds and time of the answer.
    """

    build = models.ForeignKey(QrelsBuild, on_delete=models.CASCADE, related_name="judgments")
    qid = models.CharField(max_length=128)
    doc_id = models.CharField(max_length=256)
    rel = models.SmallIntegerField()
    score = models.FloatField()
    n_labels = models.PositiveSmallIntegerField()
    labels = models.JSONField(default=list)

    class Meta:
        ordering = ["build", "qid", "doc_id"]
        constraints = [
            models.UniqueConstraint(fields=["build", "qid", "doc_id"], name="qrels_judgment_unique_pair")
        ]

    def __str__(self) -> str:
        return f"{self.qid} 0 {self.doc_id} {self.rel}"


def import_upload_to(instance: models.Model, filename: str) -> str:
    project = getattr(instance, "project", None)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"imports/{getattr(project, 'slug', 'none')}/{stamp}-{Path(filename).name}"


class ImportJob(Job):
    """An import too large to run inside a web request (`annotations.imports.import_request`): the upload is
    kept under MEDIA_ROOT and the job imports it on the heavy queue, atomically (a bad line imports nothing
    and fails the job naming the file, line and reason) and idempotently (a redo after a lost worker finds
    what a finished run wrote and changes nothing). The file is deleted once the import is done, or refused."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    kind = models.CharField(max_length=16, help_text="topics, documents, pool or gold.")
    format = models.CharField(max_length=8, blank=True, help_text="Empty: detected from the file.")
    depth = models.PositiveIntegerField(null=True, blank=True, help_text="A pool's depth per topic.")
    file = models.FileField(upload_to=import_upload_to, max_length=255, blank=True)
    original_name = models.CharField(max_length=255, help_text="The file's name on upload.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes, as uploaded.")
    result = models.JSONField(default=dict, blank=True, help_text="What the import did, once done.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "annotations.tasks.import_run"
    #: The first run, and one redo after a worker lost in the middle (the import is one transaction).
    max_attempts = 2
    queue_down_hint = "Import again later, or with the import command (`python manage.py import_documents`)."

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["topics", "documents", "pool", "gold"]), name="import_job_kind_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="import_job_claim")]

    def __str__(self) -> str:
        return f"{self.kind} import {self.original_name} into {self.project} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("annotations:import-job", args=[self.project.slug, self.pk])


class MachineJudge(models.Model):
    """A named machine source of relevance labels (an LLM grader, a click model) and its provenance.

    Its labels (`MachineLabel`) never count as an annotator's answers: quality figures, queues and human
    builds never read them. A (name, version) pair is one judge: a new version of a prompt or model is
    a new judge, so calibrations and builds of the old one stay as they were (see docs/machine-judges.md).
    """

    class Kind(models.TextChoices):
        LLM = "llm", "LLM"
        CLICK_MODEL = "click_model", "click model"
        OTHER = "other", "other"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="machine_judges")
    name = models.CharField(max_length=100)
    version = models.CharField(max_length=64, default="1")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.OTHER)
    model = models.CharField(max_length=200, blank=True, help_text="The model or click model, e.g. gpt-4o.")
    configuration = models.TextField(blank=True, help_text="The prompt or the configuration, verbatim.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"], name="machine_judge_unique_version"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["llm", "click_model", "other"]), name="machine_judge_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def get_absolute_url(self) -> str:
        return reverse("annotations:machine-judge", args=[self.project.slug, self.pk])


class MachineLabel(models.Model):
    """One machine judge's grade of one (topic, document) pair of its project, with its confidence (0-1,
    null when the judge gave none) and rationale. The pair need not be a task."""

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="labels")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    grade = models.SmallIntegerField()
    confidence = models.FloatField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    raw_text = models.TextField(
        blank=True, help_text="The judge's whole answer, verbatim, where it answered in words (an LLM)."
    )

    class Meta:
        ordering = ["judge", "topic", "document"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "topic", "document"], name="machine_label_unique_pair"),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=0, confidence__lte=1),
                name="machine_label_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.topic_id}/{self.document_id} = {self.grade}"


class MachineRouting(models.Model):
    """A pair of a machine judge's that was sent to people, and why (`machine_judges.routing`): one row
    per (judge, pair), so routing again never sends a pair twice."""

    class Reason(models.TextChoices):
        HUMANS_DISAGREE = "humans_disagree", "people disagree: adjudication"
        DISAGREES = "disagrees", "disagrees with people"
        LOW_CONFIDENCE = "low_confidence", "low confidence"
        WEAK_TOPIC = "weak_topic", "topic with low agreement"
        SAMPLE = "sample", "random sample"

    class Queue(models.TextChoices):
        JUDGING = "judging", "judging queue"
        ADJUDICATION = "adjudication", "adjudication queue"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="routings")
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=16, choices=Reason.choices)
    queue = models.CharField(max_length=16, choices=Queue.choices)
    detail = models.JSONField(default=dict, blank=True, help_text="The figures that decided it.")
    routed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    routed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "routed_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "topic", "document"], name="machine_routing_unique_pair"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.topic_id}/{self.document_id} ({self.reason})"


class LLMJudgeJob(Job):
    """A job that asks the LLM judge (`annotations.machine_judges.llm`, off unless LLM_JUDGE_ENABLED) to grade
    a project's pairs: all tasks, or those of `topics`, up to `limit` pairs not yet answered by the same
    judge (model and prompt version). Answers are written as they come, so a redo after a lost worker, or
    another job, asks only for the pairs still unanswered. `result` holds the counts, the tokens and cost,
    and why the job stopped early (a cap), once done."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="llm_judge_jobs")
    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="llm_jobs")
    topics = models.JSONField(default=list, blank=True, help_text="The topics' qids; empty: every topic.")
    limit = models.PositiveIntegerField(help_text="Most pairs asked for in this job.")
    result = models.JSONField(default=dict, blank=True, help_text="What the job did, once done.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "annotations.tasks.llm_judge_run"
    #: The first run, and one redo after a worker lost in the middle (it asks only for unanswered pairs).
    max_attempts = 2
    queue_down_hint = "Try again later, or run `python manage.py llm_judge --project SLUG` on the server."

    class Meta:
        ordering = ["project", "-created_at"]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="llm_judge_job_claim")]

    def __str__(self) -> str:
        return f"LLM grading of {self.project} by {self.judge} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("annotations:llm-judge-job", args=[self.project.slug, self.pk])


class LLMJudgeAnswer(models.Model):
    """The LLM judge's answer for one pair, whatever it was: `graded` (its grade is also the judge's
    `MachineLabel`), `unparsable` or `refused` (recorded, never guessed: the pair is not asked again by this
    judge), or `failed` (no answer after every attempt: asked again by the next job). The raw text is kept
    verbatim; tokens are the endpoint's count, or an estimate where it gave none."""

    class Status(models.TextChoices):
        GRADED = "graded", "graded"
        UNPARSABLE = "unparsable", "unparsable"
        REFUSED = "refused", "refused"
        FAILED = "failed", "failed"

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="llm_answers")
    job = models.ForeignKey(
        LLMJudgeJob, on_delete=models.SET_NULL, null=True, blank=True, related_name="answers"
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices)
    grade = models.SmallIntegerField(null=True, blank=True)
    raw_text = models.TextField(blank=True, help_text="The model's answer, verbatim.")
    reason = models.TextField(blank=True, help_text="Why no grade was read, or why the request failed.")
    attempts = models.PositiveSmallIntegerField(default=1)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    tokens_estimated = models.BooleanField(default=False)
    cost = models.FloatField(default=0.0)
    answered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "topic", "document"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "topic", "document"], name="llm_answer_unique_pair"),
            models.CheckConstraint(
                condition=Q(status__in=["graded", "unparsable", "refused", "failed"]),
                name="llm_answer_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(status="graded", grade__isnull=False)
                | (~Q(status="graded") & Q(grade__isnull=True)),
                name="llm_answer_grade_iff_graded",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge}: {self.topic_id}/{self.document_id} {self.status}"


class MachineJudgeRanking(models.Model):
    """How a machine judge ranks a team's runs beside people: each run's mean measure on the judge's labels
    and on a human qrels build, with Kendall's tau-b and tau_AP per measure (`evalcore.machine_judges.
    ranking_agreement`). Written by the monitoring job that scores the team's leaderboard on the judge's
    labels (`monitoring.machine_judges`; this app never imports it), read by the judge's calibration page:
    stored, never computed in a request. One row per (judge, build, team), replaced by each computation."""

    judge = models.ForeignKey(MachineJudge, on_delete=models.CASCADE, related_name="rankings")
    build = models.ForeignKey(QrelsBuild, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey("evalplatform.Team", on_delete=models.CASCADE, related_name="+")
    data = models.JSONField(
        default=dict,
        help_text="{measures: [...], by_measure: {measure: {kendall_tau, tau_ap, topics, runs: [...]}}, ...}",
    )
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["judge", "-computed_at"]
        constraints = [
            models.UniqueConstraint(fields=["judge", "build", "team"], name="machine_judge_ranking_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.judge} ranking on build {self.build_id}"


class MachineJudgeImport(Job):
    """A machine judge's import off the web request (`annotations.machine_judges.imports`): a search log
    to derive click-model judgments from (`click_log`), or a file of labels too large to import inside
    the request (`labels`). The upload is kept under MEDIA_ROOT until the job has read it; the job writes
    the judge and its labels in the transaction that marks it done (all or nothing), and a redo finds the
    same rows and changes nothing. `parameters` holds the judge's name and version and what the source
    needs (the click model and its grade mapping, or the labels' kind, model and configuration)."""

    class Source(models.TextChoices):
        CLICK_LOG = "click_log", "search log"
        LABELS = "labels", "labels"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="machine_judge_imports")
    source = models.CharField(max_length=16, choices=Source.choices)
    parameters = models.JSONField(default=dict, blank=True)
    file = models.FileField(upload_to=import_upload_to, max_length=255, blank=True)
    original_name = models.CharField(max_length=255, help_text="The file's name on upload.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes, as uploaded.")
    judge = models.ForeignKey(
        MachineJudge, on_delete=models.SET_NULL, null=True, blank=True, related_name="imports"
    )
    result = models.JSONField(default=dict, blank=True, help_text="What the import did, once done.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "annotations.tasks.machine_judge_import"
    #: The first run, and one redo after a worker lost in the middle (the import is one transaction).
    max_attempts = 2
    queue_down_hint = "Import again later, or with the command (`python manage.py import_click_log` or `import_machine_labels`)."

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(source__in=["click_log", "labels"]), name="machine_judge_import_source_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="machine_judge_import_claim")]

    def __str__(self) -> str:
        return f"{self.get_source_display()} {self.original_name} into {self.project} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("annotations:machine-judge-import", args=[self.project.slug, self.pk])
