"""The job that scores a leaderboard's runs on a machine judge's labels: PPI intervals and ranking agreement."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.files.models import QrelsSource


class MachineJudgeEvaluation(Job):
    """A leaderboard (`qrels`, a human build of a judging project) scored on `judge`'s labels.

    Parameters are frozen on the row: which queries form the human sample (`sample`: every human-judged
    query the machine judged, or `sample_size` of them drawn at random with `seed`), `alpha` and the
    `estimand`. `fingerprint` is the state it was asked for (the judge's labels and the leaderboard's
    evaluations, `services.state_fingerprint`): the same request on the same state finds the same job,
    and a page compares it with the state now to say whether the results are stale.
    """

    class Sample(models.TextChoices):
        ALL = "all", "every human-judged query (not a random sample)"
        RANDOM = "random", "a random sample of the human-judged queries"

    class Estimand(models.TextChoices):
        POPULATION = "population", "the population of queries"
        QUERIES = "queries", "the machine-judged queries themselves"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="machine_judge_evaluations")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="machine_judge_evaluations")
    judge = models.ForeignKey(
        "annotations.MachineJudge", on_delete=models.CASCADE, related_name="leaderboard_evaluations"
    )
    sample = models.CharField(max_length=8, choices=Sample.choices, default=Sample.ALL)
    sample_size = models.PositiveIntegerField(
        default=0, help_text="With sample=random: how many human-judged queries are drawn (0 with all)."
    )
    seed = models.PositiveIntegerField(default=0, help_text="With sample=random: numpy's generator seed.")
    alpha = models.FloatField(default=0.05)
    estimand = models.CharField(max_length=12, choices=Estimand.choices, default=Estimand.POPULATION)
    fingerprint = models.CharField(max_length=64, help_text="The labels' and evaluations' state asked for.")
    # What the job found.
    human_sample = models.JSONField(
        default=dict, blank=True,
        help_text="{queries: [qid...], random, machine_queries, human_judged, outside_machine, rule}",
    )  # fmt: skip
    measures = models.JSONField(default=list, blank=True, help_text="The measures estimated, in order.")
    results = models.JSONField(
        default=list, blank=True,
        help_text="One entry per run: {run, evaluation, name, estimates: {measure: {ppi, ppi_plus_plus, "
        "human_only, machine_only, lambda}}}; undefined numbers null.",
    )  # fmt: skip
    ranking = models.JSONField(
        default=dict, blank=True,
        help_text="{measure: {kendall_tau, tau_ap, topics, runs: [{run, name, human, machine}]}}.",
    )  # fmt: skip
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.machine_judge_evaluation_run"

    class Meta:
        ordering = ["qrels", "judge", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "qrels",
                    "judge",
                    "sample",
                    "sample_size",
                    "seed",
                    "alpha",
                    "estimand",
                    "fingerprint",
                ],
                name="machine_judge_evaluation_unique_state",
            ),
            models.CheckConstraint(
                condition=Q(alpha__gt=0, alpha__lt=1), name="machine_judge_evaluation_alpha"
            ),
            models.CheckConstraint(
                condition=Q(sample="all", sample_size=0) | Q(sample="random", sample_size__gte=2),
                name="machine_judge_evaluation_sample_size",
            ),
        ]
        indexes = [models.Index(fields=["qrels", "judge", "-created_at"], name="mje_by_board")]

    def __str__(self) -> str:
        return f"{self.qrels} on machine judge {self.judge_id} ({self.status})"

    @property
    def confidence_percent(self) -> str:
        """The intervals' level as a page says it: 95 for alpha 0.05."""
        return f"{100 * (1 - self.alpha):g}"

    @property
    def judge_ref(self) -> dict[str, Any]:
        return {"id": self.judge_id, "name": str(self.judge)}

    @property
    def human_sample_or_none(self) -> dict[str, Any] | None:
        return self.human_sample or None

    def estimates_of(self, run_id: int) -> dict[str, Any]:
        """`{measure: {ppi, ppi_plus_plus, human_only, machine_only, lambda}}` of one run ({} if none)."""
        if "_by_run" not in self.__dict__:
            self.__dict__["_by_run"] = {entry["run"]: entry["estimates"] for entry in self.results}
        return self.__dict__["_by_run"].get(run_id, {})  # type: ignore[no-any-return]
