"""The series concept and the one keyed table of metric values (the shape of Zulip's analytics tables:
one row per (what, metric, subgroup, time), with a unique key so that re-counting updates)."""

from __future__ import annotations

import sys

from django.db import models
from django.db.models import Q
from django.utils import timezone

from evalcore.metrics import FAMILIES
from evalplatform.models import Team

#: The largest finite float: the bound of the check that keeps infinities (and PostgreSQL's NaN, which
#: sorts above every number) out of the table. Written as a number, since SQLite reads `inf` as a name.
_MAX = sys.float_info.max


class Series(models.Model):
    """What produces observations over time, and the family of the metrics it reports.

    `key` identifies the subject within its kind (see `series.services.series_key`): a stream's id; a
    qrels source's id and a run name; a team's id and a set name; a project's id; a project's and a
    user's ids. `object_id` is the subject's primary key where it has one row (the stream, the qrels
    source, the project), so pages can link to it; `name` is the run name, the set name or the username.
    """

    class Kind(models.TextChoices):
        STREAM = "stream", "Embedding stream"
        RUN = "run", "Run name on a qrels source"
        RECSYS = "recsys", "Recommendation set name"
        FRAUD = "fraud", "Fraud score set name"
        PROJECT = "project", "Judging project"
        ANNOTATOR = "annotator", "Annotator within a project"

    #: The registry family each kind of series reports.
    FAMILY_OF_KIND = {
        Kind.STREAM: "embedding",
        Kind.RUN: "retrieval",
        Kind.RECSYS: "recsys",
        Kind.FRAUD: "fraud",
        Kind.PROJECT: "agreement",
        Kind.ANNOTATOR: "annotator",
    }

    team = models.ForeignKey(
        Team, on_delete=models.CASCADE, null=True, blank=True, related_name="series",
        help_text="Whose series it is (null: a judging project linked to no team).",
    )  # fmt: skip
    kind = models.CharField(max_length=10, choices=Kind.choices)
    family = models.CharField(max_length=12, choices=[(f, f) for f in FAMILIES], editable=False)
    key = models.CharField(max_length=300)
    object_id = models.BigIntegerField(null=True, blank=True)
    name = models.CharField(max_length=200, blank=True)
    label = models.CharField(max_length=300, help_text="How pages and alerts name it.")
    url = models.CharField(max_length=500, blank=True, help_text="Its page, when it has one.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "series"
        ordering = ["team", "kind", "label"]
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="series_unique_key")]
        indexes = [models.Index(fields=["team", "family"], name="series_by_team_family")]

    def __str__(self) -> str:
        return self.label

    def save(self, *args: object, **kwargs: object) -> None:
        self.family = self.FAMILY_OF_KIND[self.Kind(self.kind)]
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class MetricValue(models.Model):
    """One scalar of one job in one series: a metric (its registry name), for a subgroup ("" for the whole), with its
    value (null when undefined, never NaN), its confidence interval when the job computed one, when it was
    observed, the series it belongs to (null for a value of no series: a comparison's summary of a run)
    and its provenance (the job's model label and id)."""

    series = models.ForeignKey(Series, on_delete=models.CASCADE, null=True, blank=True, related_name="values")
    family = models.CharField(max_length=12, choices=[(f, f) for f in FAMILIES])
    job_type = models.CharField(
        max_length=100, help_text='The job\'s model label, e.g. "monitoring.evaluation".'
    )
    job_id = models.BigIntegerField()
    metric = models.CharField(max_length=100, help_text="The metric's name in the registry.")
    subgroup = models.CharField(
        max_length=200, blank=True, default="",
        help_text='What part it describes ("" for the whole; a grade, a run, a calibrated threshold).',
    )  # fmt: skip
    position = models.PositiveSmallIntegerField(default=0, help_text="Order of the metric in the job.")
    value = models.FloatField(null=True, blank=True, help_text="Null when undefined.")
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    observed_at = models.DateTimeField(help_text="When what was measured was observed: the x of a series.")
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["job_type", "job_id", "position", "subgroup"]
        constraints = [
            # One key, (job, series, metric, subgroup), written as two partial indexes: NULLs are distinct
            # in a unique index, and "NULLS NOT DISTINCT" is PostgreSQL's alone.
            models.UniqueConstraint(
                fields=["job_type", "job_id", "series", "metric", "subgroup"],
                condition=Q(series__isnull=False),
                name="metric_value_unique_key",
            ),
            models.UniqueConstraint(
                fields=["job_type", "job_id", "metric", "subgroup"],
                condition=Q(series__isnull=True),
                name="metric_value_unique_key_no_series",
            ),
            models.CheckConstraint(
                condition=(Q(value__isnull=True) | Q(value__lte=_MAX, value__gte=-_MAX))
                & (Q(ci_low__isnull=True) | Q(ci_low__lte=_MAX, ci_low__gte=-_MAX))
                & (Q(ci_high__isnull=True) | Q(ci_high__lte=_MAX, ci_high__gte=-_MAX)),
                name="metric_value_finite",
            ),
        ]
        indexes = [
            models.Index(fields=["series", "metric", "subgroup", "observed_at"], name="metric_value_series"),
            models.Index(fields=["job_type", "job_id"], name="metric_value_job"),
        ]

    def __str__(self) -> str:
        part = f"[{self.subgroup}]" if self.subgroup else ""
        return f"{self.metric}{part} = {self.value}"
