"""Judging pools built from a team's runs (`evalcore.pooling`), and the jobs that build and re-order them.

A `JudgingPool` pools the top `depth` documents of some of its team's runs over the topics of a judging
project linked to that team, orders them by a named strategy, and adds the first `budget` of them to the
project as tasks whose `priority` is their place in that order (claims serve prioritised tasks first).
The pool row is itself the build job: it reads the runs, keeps the candidates (`PoolCandidates.to_bytes`)
and creates the tasks. `PoolTask` links the pool to each task it wants judged, and says whether the pool
created it (only those may be deleted when an adaptive order drops them).

A `PoolReprioritise` job, one pending per pool at a time (the debounce), replays the answers so far and
re-orders the pending tasks; it also refreshes the pool's counters and its yield (relevant found per
judgment), which the pages and the API read.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from evalcore.pooling import ADAPTIVE_STRATEGIES, STRATEGIES, PoolParams
from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.files.models import Run

#: The defaults of a pool's parameters (`evalcore.pooling.PoolParams`).
DEFAULTS = PoolParams(STRATEGIES[0])


class JudgingPool(Job):
    """A pool of a project's (topic, document) pairs built from runs, judged in a strategy's order."""

    class Stage(models.TextChoices):
        BUILDING = "building", "Building"
        JUDGING = "judging", "Judging"
        DONE = "done", "Done: budget spent"
        FAILED = "failed", "Failed"

    Strategy = models.TextChoices(  # type: ignore[call-overload]
        "Strategy", [(name.upper().replace("-", "_"), (name, name)) for name in STRATEGIES]
    )

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="judging_pools")
    project = models.ForeignKey("annotations.Project", on_delete=models.CASCADE, related_name="judging_pools")
    runs = models.ManyToManyField(Run, related_name="judging_pools")
    # Parameters (`evalcore.pooling.PoolParams`), frozen on the row.
    strategy = models.CharField(max_length=32, choices=Strategy.choices)
    budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Judgments over all topics (empty: every candidate)."
    )
    depth = models.PositiveIntegerField(default=DEFAULTS.depth, help_text="How deep each run is read.")
    seed = models.BigIntegerField(default=DEFAULTS.seed)
    rrf_k = models.PositiveIntegerField(default=DEFAULTS.rrf_k)
    rbp_p = models.FloatField(default=DEFAULTS.rbp_p)
    rel_level = models.PositiveSmallIntegerField(
        default=1, help_text="A judged pair is relevant when its mean counted grade is at least this."
    )
    # What the build found.
    candidates = models.BinaryField(blank=True, default=b"", help_text="`PoolCandidates.to_bytes()`.")
    stage = models.CharField(max_length=8, choices=Stage.choices, default=Stage.BUILDING)
    candidates_count = models.PositiveIntegerField(default=0, help_text="Pairs the runs pooled.")
    skipped_missing = models.PositiveIntegerField(
        default=0, help_text="Pooled pairs left out: the project lacks their document."
    )
    tasks_created = models.PositiveIntegerField(default=0)
    tasks_reused = models.PositiveIntegerField(default=0, help_text="Tasks the project had already.")
    # What the answers say, refreshed by each `PoolReprioritise`.
    judged = models.PositiveIntegerField(default=0, help_text="Pool pairs with a counted answer.")
    relevant = models.PositiveIntegerField(default=0, help_text="Judged pairs found relevant.")
    pending = models.PositiveIntegerField(default=0, help_text="Pool tasks still waiting for an answer.")
    yield_curve = models.JSONField(
        default=list, blank=True, help_text="Relevant found after each judgment, in the order judged."
    )
    refreshed_at = models.DateTimeField(null=True, blank=True)
    # The planner's simulation, computed by the build job (`planner.simulation_compute`), ranking the runs
    # by `simulation_measure` (chosen on the pool's page or by the API; each new qrels version keeps it).
    simulation_measure = models.CharField(
        max_length=64,
        default="map",
        help_text="The measure (a registry name, one numeric measure) that ranks the runs in the simulation.",
    )
    simulation = models.JSONField(
        default=dict,
        blank=True,
        help_text="Every strategy replayed on the pool's runs with the team's newest qrels of this project "
        'as the oracle: {"qrels", "qrels_name", "measure", "step", "budget", "strategies": [{"strategy", "steps"}]}, '
        'or {"reason"} when there was none.',
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.pool_build"
    queue_down_hint = "Create the pool again later, or with `python manage.py pool_runs`."

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(strategy__in=list(STRATEGIES)), name="pool_strategy_valid"),
            models.CheckConstraint(
                condition=Q(stage__in=["building", "judging", "done", "failed"]), name="pool_stage_valid"
            ),
            models.CheckConstraint(
                condition=Q(depth__gte=1, rbp_p__gt=0, rbp_p__lt=1), name="pool_params_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="pool_build_claim")]

    def __str__(self) -> str:
        return f"{self.strategy} pool #{self.pk} of {self.project}"

    def on_done(self) -> None:
        """A build whose budget was already spent leaves no priority: the claim's plain path again."""
        from monitoring.pooling.services import project_priorities_settle

        project_priorities_settle(project_id=self.project_id)

    def get_absolute_url(self) -> str:
        return reverse("monitoring:pool-detail", args=[self.project.slug, self.pk])

    @property
    def params(self) -> PoolParams:
        return PoolParams(
            self.strategy, budget=self.budget, depth=self.depth, seed=self.seed, rrf_k=self.rrf_k,
            rbp_p=self.rbp_p,
        )  # fmt: skip

    @property
    def phase(self) -> str:
        """The stage, or failed when the build failed."""
        return self.Stage.FAILED.value if self.status == "failed" else str(self.stage)

    @property
    def phase_label(self) -> str:
        return str(self.Stage(self.phase).label)

    @property
    def is_adaptive(self) -> bool:
        return self.strategy in ADAPTIVE_STRATEGIES

    @property
    def judged_percent(self) -> int | None:
        """Judged over the budget (over the pool's tasks without one), as a whole percentage."""
        target = self.budget if self.budget is not None else self.judged + self.pending
        return None if not target else min(100, int(round(100 * self.judged / target)))

    def summary(self) -> dict[str, Any]:
        """The pool's figures as JSON-ready data (the API's and the page's)."""
        return {
            "stage": self.phase,
            "candidates": self.candidates_count,
            "skipped_missing": self.skipped_missing,
            "tasks_created": self.tasks_created,
            "tasks_reused": self.tasks_reused,
            "judged": self.judged,
            "relevant": self.relevant,
            "pending": self.pending,
            "budget": self.budget,
            "judged_percent": self.judged_percent,
        }


class PoolTask(models.Model):
    """A task a pool wants judged, with the candidate it stands for."""

    pool = models.ForeignKey(JudgingPool, on_delete=models.CASCADE, related_name="pool_tasks")
    task = models.ForeignKey("annotations.Task", on_delete=models.CASCADE, related_name="pool_links")
    candidate = models.PositiveIntegerField(help_text="Index into the pool's candidates.")
    created = models.BooleanField(
        default=False,
        help_text="The pool created the task (else the project had it): only such may be deleted.",
    )

    class Meta:
        ordering = ["pool", "candidate"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "task"], name="pool_task_unique_task"),
            models.UniqueConstraint(fields=["pool", "candidate"], name="pool_task_unique_candidate"),
        ]

    def __str__(self) -> str:
        return f"pool {self.pool_id} candidate {self.candidate}: task {self.task_id}"


class PoolReprioritise(Job):
    """One replay of a pool's answers: its counters and yield refreshed, an adaptive order re-computed and
    the pending tasks re-prioritised. At most one is pending per pool: answers arriving while one waits
    join it (the debounce); answers arriving while one runs queue the next."""

    pool = models.ForeignKey(JudgingPool, on_delete=models.CASCADE, related_name="reprioritisations")
    answers_seen = models.BigIntegerField(default=0, help_text="The newest answer id the replay read.")
    changed = models.PositiveIntegerField(default=0, help_text="Tasks whose priority changed.")
    created_tasks = models.PositiveIntegerField(default=0)
    deleted_tasks = models.PositiveIntegerField(default=0)

    task_name = "monitoring.tasks.pool_reprioritise"

    class Meta:
        ordering = ["pool", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool"], condition=Q(status="pending"), name="pool_reprioritise_one_pending"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="pool_reprioritise_claim")]

    def __str__(self) -> str:
        return f"re-prioritise pool {self.pool_id} ({self.status})"

    def on_done(self) -> None:
        """A pool whose budget is spent (and whose last pairs were answered) leaves no priority: the
        project's claims take their plain path again."""
        from monitoring.pooling.services import project_priorities_settle

        pool = JudgingPool.objects.filter(pk=self.pool_id).values_list("project_id", flat=True).first()
        if pool is not None:
            project_priorities_settle(project_id=pool)
