"""Evaluation jobs (a run against a qrels source) and comparisons of several runs.

Their scalars live in the one table of metric values (`series.models.MetricValue`): an evaluation's
value and CI of each measure, in its run's series (`series.subjects.run_series`); a comparison's mean and
CI of each run and measure, in no series (subgroup: the run's id). The per-query arrays stay here, on the
job row, aligned with its `qids`. `ComparisonPair` keeps one paired test per (comparison, measure, run a,
run b): a re-run job updates its rows and never adds a duplicate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse

from evalcore.comparison import CORRECTIONS, TESTS, ComparisonParams
from evalcore.overlap import OverlapParams
from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.files.models import QrelsSource, Run

#: Every default of an evaluation's and a comparison's parameters (`evalcore.comparison.ComparisonParams`).
PARAMS = ComparisonParams()
#: The defaults of a comparison's list overlap: depth k and RBO's persistence p (`evalcore.overlap`).
OVERLAP = OverlapParams()


def options_key(*, measures: list[str], rel_level: int, complete: bool) -> str:
    """One key per distinct set of options, so the same request finds the same evaluation."""
    text = json.dumps({"m": sorted(measures), "l": rel_level, "c": complete}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class Evaluation(Job):
    """A run evaluated against a qrels source with trec_eval's semantics (`-m`, `-l`, `-c`)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="evaluations")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="evaluations")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="evaluations")
    name = models.CharField(max_length=200, blank=True, help_text="Blank: named by its run and qrels.")
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    archived = models.BooleanField(default=False, help_text="Hidden from the team's lists and leaderboards.")
    measures = models.JSONField(help_text="Measure names as given (trec_eval or ir-measures names).")
    rel_level = models.SmallIntegerField(
        default=PARAMS.rel_level, help_text="trec_eval -l: binary measures count rel >= this."
    )
    complete = models.BooleanField(
        default=PARAMS.complete, help_text="trec_eval -c: queries the run lacks count as 0."
    )
    options_key = models.CharField(
        max_length=40, editable=False, help_text="`options_key(...)` of the measures, -l and -c."
    )
    confidence = models.FloatField(default=PARAMS.confidence)
    # What the job found (its scalars are in `series.MetricValue`).
    qids = models.JSONField(default=list, blank=True, help_text="The queries the per-query arrays follow.")
    per_query = models.JSONField(
        default=dict, blank=True, help_text="measure key -> one value per query of `qids` (null: undefined)."
    )
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
        named = f"{self.name}: " if self.name else ""
        return f"{named}{self.run} on {self.qrels} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:run-detail", args=[self.team.slug, self.run_id]) + f"?evaluation={self.pk}"

    @property
    def results(self) -> list[Any]:
        """Each measure's value and CI (`monitoring.evaluations.selectors.MeasureResult`), in the order asked for: read
        from the metric table once (a list of evaluations has them attached in one query by
        `monitoring.evaluations.selectors.evaluation_results_attach`)."""
        if "_results" not in self.__dict__:
            from monitoring.evaluations.selectors import evaluation_results_attach

            evaluation_results_attach([self])
        return self.__dict__["_results"]  # type: ignore[no-any-return]

    def refresh_from_db(
        self, using: str | None = None, fields: Iterable[str] | None = None, from_queryset: Any = None
    ) -> None:
        if fields is None:  # a job polled until done reads its results afresh (not on a deferred field)
            self.__dict__.pop("_results", None)
        super().refresh_from_db(using, fields, from_queryset)


class Comparison(Job):
    """Several runs compared on the same qrels: per run and measure the mean with its CI, and for every
    pair of runs a paired test with its effect sizes, the p-values of the whole family corrected together;
    per measure the statistics of many systems (`many_systems`), and per pair of runs the overlap of their
    top-`overlap_k` lists (`overlap`)."""

    class Test(models.TextChoices):
        T = "t", "Paired t-test"
        RANDOMIZATION = "randomization", "Fisher randomization (permutation) test"
        WILCOXON = "wilcoxon", "Wilcoxon signed-rank test"

    class Correction(models.TextChoices):
        HOLM = "holm", "Holm"
        BONFERRONI = "bonferroni", "Bonferroni"
        BH = "bh", "Benjamini-Hochberg"

    # The choices are evalcore's, labelled here.
    assert tuple(Test.values) == TESTS and tuple(Correction.values) == CORRECTIONS

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="comparisons")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="comparisons")
    runs = models.ManyToManyField(Run, related_name="comparisons")
    name = models.CharField(
        max_length=200, blank=True, help_text="Blank: named by its number, runs and qrels."
    )
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    measures = models.JSONField()
    rel_level = models.SmallIntegerField(default=PARAMS.rel_level)
    complete = models.BooleanField(default=PARAMS.complete)
    test = models.CharField(max_length=16, choices=Test.choices, default=PARAMS.test)
    correction = models.CharField(max_length=16, choices=Correction.choices, default=PARAMS.correction)
    alpha = models.FloatField(default=PARAMS.alpha)
    confidence = models.FloatField(default=PARAMS.confidence)
    overlap_k = models.PositiveSmallIntegerField(
        default=OVERLAP.k, help_text="Depth of the lists whose overlap is measured (Jaccard@k, RBO, tau)."
    )
    rbo_p = models.FloatField(default=OVERLAP.p, help_text="Rank-biased overlap's persistence p.")
    # What the job found (each run's mean and CI of each measure are in `series.MetricValue`).
    qids = models.JSONField(default=list, blank=True, help_text="The queries every run was compared on.")
    overlap = models.JSONField(
        default=list, blank=True,
        help_text="One `evalcore.comparison_extras.overlap_json` per pair of runs (by run id): per query and means.",
    )  # fmt: skip
    many_systems = models.JSONField(
        default=dict, blank=True,
        help_text="measure key -> `evalcore.comparison_extras.many_systems_json`: ANOVA, Tukey's HSD, "
        "discriminative power.",
    )  # fmt: skip
    per_query = models.JSONField(
        default=dict, blank=True,
        help_text="run id -> measure key -> one value per query of `qids` (those of the paired tests).",
    )  # fmt: skip
    num_queries = models.JSONField(
        default=dict, blank=True,
        help_text="run id -> measure key -> the queries its mean and CI average over (trec_eval's rule).",
    )  # fmt: skip
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.comparison_run"

    class Meta:
        ordering = ["team", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(alpha__gt=0, alpha__lt=1), name="comparison_alpha"),
            models.CheckConstraint(condition=models.Q(rbo_p__gt=0, rbo_p__lt=1), name="comparison_rbo_p"),
            models.CheckConstraint(condition=models.Q(overlap_k__gte=1), name="comparison_overlap_k"),
        ]

    def __str__(self) -> str:
        return f"comparison {self.pk} on {self.qrels} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:comparison-detail", args=[self.team.slug, self.pk])

    def params(self) -> ComparisonParams:
        """The parameters it ran with, as evalcore takes them."""
        return ComparisonParams(
            measures=tuple(self.measures), rel_level=self.rel_level, complete=self.complete,
            test=self.test, correction=self.correction, alpha=self.alpha, confidence=self.confidence,  # type: ignore[arg-type]
        )  # fmt: skip

    def overlap_params(self) -> OverlapParams:
        return OverlapParams(k=self.overlap_k, p=self.rbo_p)

    @property
    def summaries(self) -> list[Any]:
        """Each run's mean and CI of each measure (`monitoring.evaluations.selectors.RunSummaryRow`), by measure then
        best first, read from the metric table once."""
        if "_summaries" not in self.__dict__:
            from monitoring.evaluations.selectors import comparison_summaries_attach

            comparison_summaries_attach(self)
        return self.__dict__["_summaries"]  # type: ignore[no-any-return]

    def refresh_from_db(
        self, using: str | None = None, fields: Iterable[str] | None = None, from_queryset: Any = None
    ) -> None:
        if fields is None:
            self.__dict__.pop("_summaries", None)
        super().refresh_from_db(using, fields, from_queryset)


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
    cohens_dz = models.FloatField(null=True, blank=True, help_text="Cohen's d_z of a - b (null: undefined).")
    hedges_g = models.FloatField(null=True, blank=True, help_text="Hedges' g of a - b (null: undefined).")

    class Meta:
        ordering = ["comparison", "measure", "p_adjusted"]
        constraints = [
            models.UniqueConstraint(
                fields=["comparison", "measure", "run_a", "run_b"], name="comparison_pair_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.measure}: run {self.run_a_id} vs {self.run_b_id}, p_adj {self.p_adjusted:.3g}"


class GapsRequest(Job):
    """ "Judge the gaps" of one run on a built qrels source, as a job: reading the run and the qrels files
    (a run may have millions of lines) never holds a request. `result` is `loop.GapsJudged.as_dict()`."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="gaps_requests")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="gaps_requests")
    depth = models.PositiveIntegerField(help_text="The run's top k per query.")
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.gaps_request_run"
    queue_down_hint = "Try again later, or run `python manage.py judge_gaps`."

    class Meta:
        ordering = ["qrels", "-created_at"]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="gaps_request_claim")]

    def __str__(self) -> str:
        return f"gaps of {self.run} on {self.qrels} (top {self.depth}, {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:leaderboard", args=[self.team.slug, self.qrels_id])
