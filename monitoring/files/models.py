"""What a team uploads to evaluate: qrels sources (a judging project's build, or a file) and runs."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from evalplatform.models import Team


def _team_folder(kind: str, instance: models.Model, filename: str) -> str:
    team = getattr(instance, "team", None)
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    return f"{kind}/{getattr(team, 'slug', 'none')}/{stamp}-{Path(filename).name}"


def run_upload_to(instance: models.Model, filename: str) -> str:
    return _team_folder("runs", instance, filename)


def qrels_upload_to(instance: models.Model, filename: str) -> str:
    return _team_folder("qrels", instance, filename)


class UploadedFile(models.Model):
    """A file a team uploaded, kept as a file under MEDIA_ROOT, with what a first read found in it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    original_name = models.CharField(max_length=255, blank=True, help_text="The file's name on upload.")
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes.")
    sha256 = models.CharField(max_length=64, blank=True)
    format = models.CharField(max_length=8, blank=True, help_text="trec, tsv or jsonl, as detected.")
    num_queries = models.PositiveIntegerField(null=True, blank=True)
    num_rows = models.PositiveBigIntegerField(null=True, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived = models.BooleanField(
        default=False,
        help_text="Hidden from the team's lists and leaderboards unless asked for; nothing is deleted.",
    )

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.name


class QrelsSource(UploadedFile):
    """Relevance judgments to evaluate against: a judging project's qrels build, or an uploaded file.

    A build's source is created the first time a team member picks the build; builds are immutable, so
    the source reads the build's export whenever it evaluates.
    """

    class Kind(models.TextChoices):
        BUILD = "build", "Qrels build of a judging project"
        UPLOAD = "upload", "Uploaded qrels file"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="qrels_sources")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    build = models.ForeignKey(
        "annotations.QrelsBuild",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="qrels_sources",
    )
    file = models.FileField(upload_to=qrels_upload_to, max_length=255, blank=True)
    tags = models.JSONField(default=list, blank=True, help_text="Free labels: collection, year...")

    class Meta:
        ordering = ["team", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["team", "build"], name="qrels_source_one_per_build"),
            models.CheckConstraint(
                condition=Q(kind="build", build__isnull=False) | Q(kind="upload", build__isnull=True),
                name="qrels_source_kind_matches",
            ),
        ]

    def get_absolute_url(self) -> str:
        return reverse("monitoring:leaderboard", args=[self.team.slug, self.pk])


class Run(UploadedFile):
    """A system's ranked results for a set of queries (a TREC run file), uploaded by a team member."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="runs")
    file = models.FileField(upload_to=run_upload_to, max_length=255)
    tags = models.JSONField(default=list, blank=True, help_text="Free labels: model, index, date...")
    run_tag = models.CharField(max_length=200, blank=True, help_text="The file's own tag (6th column).")

    class Meta:
        ordering = ["team", "-created_at"]
        indexes = [models.Index(fields=["team", "-created_at"], name="run_by_team")]

    def get_absolute_url(self) -> str:
        return reverse("monitoring:run-detail", args=[self.team.slug, self.pk])

    @property
    def label(self) -> str:
        """The run as a chart or a table names it beside other runs: `monitoring.evaluations.selectors.label_runs` sets
        it, telling runs of one name apart (nightly runs are uploaded under one name); the name until then."""
        return str(self.__dict__.get("_label") or self.name)

    @label.setter
    def label(self, value: str) -> None:
        self.__dict__["_label"] = value
