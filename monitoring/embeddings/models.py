"""Embedding monitors: a team's stream of embedding snapshots, and one monitor run per snapshot.

A stream has a reference snapshot (what good looks like) and periodic snapshots uploaded by the API or
the command line, kept as `.npy` files under MEDIA_ROOT. A `MonitorRun` (a job) computes the quality and
collapse metrics of a snapshot and its drift against the reference; its values are rows of the one metric
table (`series.MetricValue`, in the stream's series), so a stream's time series, its dashboard and the alert
rules read the same table. Whether a metric describes the snapshot or its drift is a property of the
metric (`evalcore.embeddings.DRIFT_METRICS`), not of a stored row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from evalplatform.jobs import Job
from evalplatform.models import Team


def snapshot_upload_to(instance: models.Model, filename: str) -> str:
    stream = getattr(instance, "stream", None)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S-%f")
    team = getattr(getattr(stream, "team", None), "slug", "none")
    return f"embeddings/{team}/{getattr(stream, 'pk', 'none')}/{stamp}-{Path(filename).name}"


def summary_upload_to(instance: models.Model, filename: str) -> str:
    stream = getattr(instance, "stream", None)
    team = getattr(getattr(stream, "team", None), "slug", "none")
    return f"embeddings/{team}/{getattr(stream, 'pk', 'none')}/summaries/{Path(filename).name}"


class EmbeddingStream(models.Model):
    """A model's embeddings watched over time: a reference snapshot, then periodic ones.

    `every_minutes` or `crontab` schedules the monitor (a django-celery-beat periodic task, kept in
    step by the service that saves the schedule); `params` overrides `evalcore.embeddings.MonitorParams`.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="embedding_streams")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    dimension = models.PositiveIntegerField(help_text="Every snapshot must have this many columns.")
    reference = models.ForeignKey(
        "EmbeddingSnapshot", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    params = models.JSONField(default=dict, blank=True, help_text="Overrides of the monitor's parameters.")
    every_minutes = models.PositiveIntegerField(null=True, blank=True, help_text="Monitor every N minutes.")
    crontab = models.CharField(
        max_length=100, blank=True, help_text='Or a cron schedule, "minute hour day month weekday".'
    )
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team", "name"]
        constraints = [models.UniqueConstraint(fields=["team", "slug"], name="stream_unique_slug")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("monitoring:stream-detail", args=[self.team.slug, self.slug])


class EmbeddingSnapshot(models.Model):
    """One `.npy` file of embeddings (rows x dimension) of a stream, at a moment."""

    class Kind(models.TextChoices):
        REFERENCE = "reference", "Reference"
        CURRENT = "current", "Periodic snapshot"

    stream = models.ForeignKey(EmbeddingStream, on_delete=models.CASCADE, related_name="snapshots")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.CURRENT)
    file = models.FileField(upload_to=snapshot_upload_to, max_length=255)
    label = models.CharField(max_length=200, blank=True)
    rows = models.PositiveBigIntegerField()
    dimension = models.PositiveIntegerField()
    dtype = models.CharField(max_length=16, blank=True)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    observed_at = models.DateTimeField(default=timezone.now, help_text="When the embeddings were taken.")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Caches written by the monitor runs (`monitoring.embeddings`): a reference is read by every run of its
    # stream, so its statistics and its calibration are computed once.
    summary = models.FileField(
        upload_to=summary_upload_to, max_length=255, blank=True,
        help_text="Its statistics (an EmbeddingSummary, .npz), kept once a monitor run computed them.",
    )  # fmt: skip
    summary_key = models.CharField(
        max_length=64, blank=True, help_text="The sample size and seed the summary was computed with."
    )
    calibration = models.JSONField(
        default=dict, blank=True,
        help_text="A reference's effect thresholds from its own splits, the kernel bandwidth, and the key of "
        "the parameters they were calibrated with.",
    )  # fmt: skip

    class Meta:
        ordering = ["stream", "observed_at", "pk"]
        indexes = [models.Index(fields=["stream", "observed_at"], name="snapshot_by_time")]

    def __str__(self) -> str:
        return f"{self.stream} @ {self.observed_at:%Y-%m-%d %H:%M}"


class MonitorRun(Job):
    """The monitors of one snapshot: its quality, and its drift against the stream's reference."""

    stream = models.ForeignKey(EmbeddingStream, on_delete=models.CASCADE, related_name="monitor_runs")
    snapshot = models.ForeignKey(EmbeddingSnapshot, on_delete=models.CASCADE, related_name="monitor_runs")
    reference = models.ForeignKey(
        EmbeddingSnapshot, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    observed_at = models.DateTimeField(help_text="The snapshot's time: the x axis of the time series.")
    device = models.CharField(max_length=16, blank=True, help_text="Where it ran: cpu or cuda.")
    spectrum = models.JSONField(
        default=dict, blank=True, help_text="Covariance eigenvalues of the snapshot and of the reference."
    )
    effect_thresholds = models.JSONField(
        default=dict, blank=True,
        help_text="Calibrated on the reference's own splits; also stored as values of the stream's series "
        "(subgroup series.selectors.THRESHOLD_SUBGROUP), which the alert rules read.",
    )  # fmt: skip
    params = models.JSONField(
        default=dict, blank=True,
        help_text="The monitor's parameters it runs with (every field of MonitorParams), frozen from the "
        "stream's when the run is made or queued again, so editing the stream later changes no finished run.",
    )  # fmt: skip
    chunks = models.PositiveIntegerField(default=1, help_text="How many workers computed its statistics.")

    task_name = "monitoring.tasks.monitor_run"

    class Meta:
        ordering = ["stream", "-observed_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "reference"], name="monitor_run_one_per_snapshot"),
            models.UniqueConstraint(
                fields=["snapshot"],
                condition=models.Q(reference__isnull=True),
                name="monitor_run_one_unreferenced",
            ),
        ]
        indexes = [models.Index(fields=["stream", "status", "observed_at"], name="monitor_run_series")]

    def __str__(self) -> str:
        return f"monitor of {self.snapshot} ({self.status})"

    @property
    def params_changed(self) -> dict[str, Any]:
        """The run's parameters that differ from `MonitorParams`' defaults (what the dashboard lists)."""
        from evalcore.embeddings import MonitorParams

        defaults = MonitorParams().to_dict()
        return {name: value for name, value in self.params.items() if defaults.get(name, ...) != value}
