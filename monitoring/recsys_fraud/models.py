"""Recommendation sets and fraud score sets a team uploads, their evaluation jobs, and the results.

- `RecommendationSet`: a recommender's top-k lists (`user,item,rank`) with the held-out interactions
  they are judged against (`user,item`), and optionally the catalog with categories (`item,category`)
  and the users' earlier history (`user,item`); `RecommendationEvaluation` evaluates one set with
  `evalcore.recsys.RecsysOptions` (cutoff k, `complete`, the short head's share).
- `FraudScoreSet`: a model's scores, `id,score,label[,amount][,entity,timestamp]`;
  `FraudScoreEvaluation` evaluates one set with `evalcore.fraud.FraudOptions` (target FPR, operating
  threshold, FP and FN costs, alert budget).

Their scalars are rows of the one metric table (`series.models.MetricValue`), in the series of the set's
name (`series.subjects.recsys_series`, `fraud_series`), keyed by (evaluation, metric) so that a re-run
updates them and never adds a duplicate; `metric_results()` reads them. The curves the dashboards draw (Lorenz curve, popularity histograms, coverage by category;
ROC, PR, cost against threshold, time to detection) are stored with the evaluation as JSON, thinned by
the job to a bounded number of points.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evalcore.fraud import FraudOptions
from evalcore.recsys import DEFAULT_HEAD_SHARE, RecsysOptions
from evalplatform.jobs import Job
from evalplatform.models import Team
from series.models import MetricValue
from series.selectors import job_values

#: The files of a recommendation set, in the order the pages list them; the first two are required.
RECSYS_FILE_ROLES: tuple[str, ...] = ("recs", "interactions", "items", "history")


def options_key_of(options: RecsysOptions | FraudOptions) -> str:
    """One key per distinct set of options, so the same request finds the same evaluation."""
    text = json.dumps({type(options).__name__: asdict(options)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _upload_to(kind: str, instance: models.Model, filename: str) -> str:
    team = getattr(instance, "team", None)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{kind}/{getattr(team, 'slug', 'none')}/{stamp}-{Path(filename).name}"


def recsys_upload_to(instance: models.Model, filename: str) -> str:
    return _upload_to("recsys", instance, filename)


def fraud_upload_to(instance: models.Model, filename: str) -> str:
    return _upload_to("fraud", instance, filename)


# --- what teams upload --------------------------------------------------------------------------------


class RecommendationSet(models.Model):
    """A recommender's lists with the interactions they are judged against, kept as files under
    MEDIA_ROOT. `files` holds, per role, the name on upload, the size and the sha256; the counts are
    known when the files were read whole on upload (else the first evaluation fills them in)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="recommendation_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    archived = models.BooleanField(default=False, help_text="Hidden from the team's lists unless asked for.")
    recs = models.FileField(upload_to=recsys_upload_to, max_length=255, help_text="CSV user,item,rank.")
    interactions = models.FileField(
        upload_to=recsys_upload_to, max_length=255, help_text="CSV user,item: the held-out relevant items."
    )
    items = models.FileField(
        upload_to=recsys_upload_to, max_length=255, blank=True, help_text="CSV item[,category]: the catalog."
    )
    history = models.FileField(
        upload_to=recsys_upload_to,
        max_length=255,
        blank=True,
        help_text="CSV user,item: earlier interactions.",
    )
    files = models.JSONField(default=dict, help_text="Per role: {name, size, sha256} of the uploaded file.")
    num_users = models.PositiveIntegerField(null=True, blank=True, help_text="Users with a list.")
    num_items = models.PositiveIntegerField(null=True, blank=True, help_text="Catalog items.")
    depth = models.PositiveIntegerField(null=True, blank=True, help_text="The longest list.")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["team", "-created_at"], name="recommendation_set_by_team")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("monitoring:recsys-set", args=[self.team.slug, self.pk])

    def stored(self) -> dict[str, models.fields.files.FieldFile]:
        """The set's files by role, those it has only."""
        return {role: getattr(self, role) for role in RECSYS_FILE_ROLES if getattr(self, role)}

    def file_list(self) -> list[tuple[str, dict[str, Any]]]:
        """(role, {name, size, sha256}) of each file, in the roles' order (a template cannot say
        `files.items`: the dictionary has a key "items")."""
        return [(role, self.files[role]) for role in RECSYS_FILE_ROLES if role in self.files]

    def display_name(self, role: str) -> str:
        """The file's name as its uploader knows it."""
        return str(self.files.get(role, {}).get("name") or Path(getattr(self, role).name).name)


class FraudScoreSet(models.Model):
    """A fraud or anomaly model's scores with the true labels, kept as a file under MEDIA_ROOT.

    `time_unit` is "seconds" when the timestamps are ISO 8601 dates, else blank (numbers in the file's
    own unit)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="fraud_score_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    archived = models.BooleanField(default=False, help_text="Hidden from the team's lists unless asked for.")
    file = models.FileField(upload_to=fraud_upload_to, max_length=255)
    original_name = models.CharField(max_length=255, blank=True, help_text="The file's name on upload.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes.")
    sha256 = models.CharField(max_length=64, blank=True)
    columns = models.JSONField(default=list, help_text="The header's columns.")
    time_unit = models.CharField(max_length=16, blank=True)
    num_rows = models.PositiveBigIntegerField(null=True, blank=True, help_text="Scored examples.")
    num_frauds = models.PositiveBigIntegerField(null=True, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["team", "-created_at"], name="fraud_score_set_by_team")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("monitoring:fraud-set", args=[self.team.slug, self.pk])

    @property
    def has_amounts(self) -> bool:
        return "amount" in self.columns

    @property
    def has_entities(self) -> bool:
        return "entity" in self.columns


# --- evaluation jobs ----------------------------------------------------------------------------------


class MetricResults:
    """An evaluation's metrics, read from the metric table: `metric_results()` is the rows in the order
    the job wrote them (the registry's), read once per instance; a list page attaches every row's in one
    query first (`monitoring.recsys_fraud.selectors.with_results`)."""

    _metric_results: list[MetricValue] | None = None

    def metric_results(self) -> list[MetricValue]:
        if self._metric_results is None:
            self._metric_results = job_values(self)  # type: ignore[arg-type]
        return self._metric_results

    def metric_values(self) -> dict[str, float | None]:
        """{metric: value} (None where undefined)."""
        return {row.metric: row.value for row in self.metric_results()}


class RecommendationEvaluation(MetricResults, Job):
    """A recommendation set evaluated with one `RecsysOptions`: every metric of `evalcore.recsys`.

    `summary` says what the job found (users, items, where popularity came from); `curves` holds the
    Lorenz curve of exposure, the popularity histograms and the coverage by category."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="recommendation_evaluations")
    recommendation_set = models.ForeignKey(
        RecommendationSet, on_delete=models.CASCADE, related_name="evaluations"
    )
    name = models.CharField(max_length=200, blank=True, help_text="Blank: named by its number.")
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    k = models.PositiveIntegerField(null=True, blank=True, help_text="Cutoff; blank: the lists' depth.")
    complete = models.BooleanField(default=False, help_text="Users without a list count as 0.")
    head_share = models.FloatField(default=DEFAULT_HEAD_SHARE, help_text="The short head's share.")
    options_key = models.CharField(max_length=40, editable=False)
    summary = models.JSONField(default=dict, blank=True)
    curves = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.recommendation_evaluation_run"

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["recommendation_set", "options_key"], name="recommendation_evaluation_unique_options"
            ),
            models.CheckConstraint(
                condition=Q(k__isnull=True) | Q(k__gte=1), name="recommendation_evaluation_k"
            ),
            models.CheckConstraint(
                condition=Q(head_share__gt=0, head_share__lte=1), name="recommendation_evaluation_head_share"
            ),
        ]
        indexes = [models.Index(fields=["team", "status", "-created_at"], name="recommendation_eval_by_team")]

    def __str__(self) -> str:
        return f"{self.recommendation_set} at k={self.k or 'all'} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:recsys-evaluation", args=[self.team.slug, self.pk])

    def options(self) -> RecsysOptions:
        return RecsysOptions(k=self.k, complete=self.complete, head_share=self.head_share)


class FraudScoreEvaluation(MetricResults, Job):
    """A fraud score set evaluated with one `FraudOptions`: every metric of `evalcore.fraud`.

    `summary` holds the counts, the operating point and its confusion matrix; `curves` the ROC and PR
    curves, the cost against the threshold and the histogram of the times to detection."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="fraud_evaluations")
    score_set = models.ForeignKey(FraudScoreSet, on_delete=models.CASCADE, related_name="evaluations")
    name = models.CharField(max_length=200, blank=True, help_text="Blank: named by its number.")
    description = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True)
    target_fpr = models.FloatField(default=FraudOptions.target_fpr)
    threshold = models.FloatField(
        null=True,
        blank=True,
        help_text="Operating threshold (flag score >= it); blank: the one at the target FPR.",
    )
    fp_cost = models.FloatField(default=FraudOptions.fp_cost, help_text="Cost of a false positive.")
    fn_cost = models.FloatField(
        default=FraudOptions.fn_cost, help_text="Cost of a missed fraud, times its amount when given."
    )
    budget = models.PositiveIntegerField(null=True, blank=True, help_text="Alert budget: the top K scores.")
    options_key = models.CharField(max_length=40, editable=False)
    summary = models.JSONField(default=dict, blank=True)
    curves = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.fraud_evaluation_run"

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["score_set", "options_key"], name="fraud_evaluation_unique_options"
            ),
            models.CheckConstraint(
                condition=Q(target_fpr__gte=0, target_fpr__lte=1), name="fraud_evaluation_target_fpr"
            ),
            models.CheckConstraint(
                condition=Q(fp_cost__gte=0, fn_cost__gte=0), name="fraud_evaluation_costs"
            ),
        ]
        indexes = [models.Index(fields=["team", "status", "-created_at"], name="fraud_eval_by_team")]

    def __str__(self) -> str:
        return f"{self.score_set} at FPR {self.target_fpr:g} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:fraud-evaluation", args=[self.team.slug, self.pk])

    def options(self) -> FraudOptions:
        return FraudOptions(
            target_fpr=self.target_fpr,
            budget=self.budget,
            threshold=self.threshold,
            fp_cost=self.fp_cost,
            fn_cost=self.fn_cost,
        )
