"""Evaluation jobs (a run against a qrels source) and comparisons of several runs, with their results.

Results are narrow, keyed rows: one `EvaluationResult` per (evaluation, measure) and one
`ComparisonPair` per (comparison, measure, run a, run b), so a re-run job updates its rows and never
adds a duplicate. Per-query values are kept as compact arrays aligned with the job's `qids`.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.db import models
from django.urls import reverse

from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.models.runs import QrelsSource, Run

#: What an evaluation computes when it is not told: trec_eval's headline measures and nDCG@10.
DEFAULT_MEASURES: tuple[str, ...] = (
    "map",
    "ndcg_cut_10",
    "P_10",
    "recall_100",
    "recip_rank",
    "Rprec",
    "bpref",
)


def options_key(*, measures: list[str], rel_level: int, complete: bool) -> str:
    """One key per distinct set of options, so the same request finds the same evaluation."""
    text = json.dumps({"m": sorted(measures), "l": rel_level, "c": complete}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class Evaluation(Job):
    """A run evaluated against a qrels source with trec_eval's semantics (`-m`, `-l`, `-c`)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="evaluations")
    measures = models.JSONField(help_text="Measure names as given (trec_eval or ir-measures names).")
    rel_level = models.SmallIntegerField(
        default=1, help_text="trec_eval -l: binary measures count rel >= this."
    )
    complete = models.BooleanField(default=False, help_text="trec_eval -c: queries the run lacks count as 0.")
    options_key = models.CharField(
        max_length=40, editable=False, help_text="`options_key(...)` of the measures, -l and -c."
    )
    confidence = models.FloatField(default=0.95)
    # What the job found.
    qids = models.JSONField(default=list, blank=True, help_text="The queries the per-query arrays follow.")
    num_queries = models.PositiveIntegerField(null=True, blank=True, help_text="Queries evaluated.")
    num_missing = models.PositiveIntegerField(null=True, blank=True, help_text="Qrels queries the run lacks.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.evaluation_run"

    class Meta:
        ordering = ["team", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "qrels", "options_key"], name="evaluation_unique_options"),
            models.CheckConstraint(
                condition=models.Q(confidence__gt=0, confidence__lt=1), name="evaluation_confidence"
            ),
        ]
        indexes = [models.Index(fields=["team", "status", "-created_at"], name="evaluation_by_team")]

    def __str__(self) -> str:
        return f"{self.run} on {self.qrels} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:run-detail", args=[self.team.slug, self.run_id]) + f"?evaluation={self.pk}"

    def on_done(self) -> None:
        """Check the alert rules on the evaluation's series (its run's name on its qrels)."""
        from monitoring.alerts import alerts_check_evaluation

        alerts_check_evaluation(evaluation_id=self.pk)


class EvaluationResult(models.Model):
    """One measure of one evaluation: the mean with its bootstrap CI, and the per-query values."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="results")
    measure = models.CharField(max_length=100, help_text="The output key, e.g. ndcg_cut_10 or P@10.")
    position = models.PositiveSmallIntegerField(default=0, help_text="Order of the measure in the request.")
    value = models.FloatField(
        null=True, help_text="The aggregate, as trec_eval prints it (None if undefined)."
    )
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    per_query = models.JSONField(default=list, help_text="One value per query of the evaluation's qids.")

    class Meta:
        ordering = ["evaluation", "position"]
        constraints = [
            models.UniqueConstraint(fields=["evaluation", "measure"], name="evaluation_result_unique_measure")
        ]

    def __str__(self) -> str:
        return f"{self.measure} = {self.value}"


class Comparison(Job):
    """Several runs compared on the same qrels: per run and measure the mean with its CI, and for every
    pair of runs a paired test, with the p-values of the whole family corrected together."""

    class Test(models.TextChoices):
        T = "t", "Paired t-test"
        RANDOMIZATION = "randomization", "Fisher randomization (permutation) test"
        WILCOXON = "wilcoxon", "Wilcoxon signed-rank test"

    class Correction(models.TextChoices):
        HOLM = "holm", "Holm"
        BONFERRONI = "bonferroni", "Bonferroni"
        BH = "bh", "Benjamini-Hochberg"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="comparisons")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="comparisons")
    runs = models.ManyToManyField(Run, related_name="comparisons")
    measures = models.JSONField()
    rel_level = models.SmallIntegerField(default=1)
    complete = models.BooleanField(default=False)
    test = models.CharField(max_length=16, choices=Test.choices, default=Test.T)
    correction = models.CharField(max_length=16, choices=Correction.choices, default=Correction.HOLM)
    alpha = models.FloatField(default=0.05)
    confidence = models.FloatField(default=0.95)
    qids = models.JSONField(default=list, blank=True, help_text="The queries every run was compared on.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.comparison_run"

    class Meta:
        ordering = ["team", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(alpha__gt=0, alpha__lt=1), name="comparison_alpha"),
        ]

    def __str__(self) -> str:
        return f"comparison {self.pk} on {self.qrels} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:comparison-detail", args=[self.team.slug, self.pk])


class ComparisonSummary(models.Model):
    """A run's mean of one measure, with its CI, and its per-query values on the compared queries.

    The mean and CI follow trec_eval's rule, as the run's evaluation: over the qrels queries the run
    answered (`num_queries` of them), or every qrels query with `complete`; `per_query` is aligned with
    the comparison's `qids`, the queries of the paired tests."""

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="summaries")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    measure = models.CharField(max_length=100)
    mean = models.FloatField()
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    num_queries = models.PositiveIntegerField(
        null=True, help_text="The queries the mean and CI average over (null: computed before it was kept)."
    )
    per_query = models.JSONField(default=list, help_text="Aligned with the comparison's qids.")

    class Meta:
        ordering = ["comparison", "measure", "-mean"]
        constraints = [
            models.UniqueConstraint(fields=["comparison", "run", "measure"], name="comparison_summary_unique")
        ]

    def __str__(self) -> str:
        return f"{self.measure} of run {self.run_id}: {self.mean:.4f}"


class ComparisonPair(models.Model):
    """The paired test of run a against run b on one measure; diff = mean(a) - mean(b)."""

    comparison = models.ForeignKey(Comparison, on_delete=models.CASCADE, related_name="pairs")
    run_a = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    measure = models.CharField(max_length=100)
    diff = models.FloatField()
    p_value = models.FloatField()
    p_adjusted = models.FloatField()
    significant = models.BooleanField()
    wins = models.PositiveIntegerField(help_text="Queries where a scored higher.")
    ties = models.PositiveIntegerField()
    losses = models.PositiveIntegerField(help_text="Queries where b scored higher.")

    class Meta:
        ordering = ["comparison", "measure", "p_adjusted"]
        constraints = [
            models.UniqueConstraint(
                fields=["comparison", "measure", "run_a", "run_b"], name="comparison_pair_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.measure}: run {self.run_a_id} vs {self.run_b_id}, p_adj {self.p_adjusted:.3g}"
