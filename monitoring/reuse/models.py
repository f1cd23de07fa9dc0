"""A reuse analysis of a team's qrels source: the leave-one-out test or the annotator sensitivity.

One job row (`evalplatform.jobs`) per request; the page and the API show the newest done row of each kind.
`result` is the JSON of `evalcore.reuse.ReuseReport.as_dict()` (plus the per-topic score matrix the
planner reads) or of `SensitivityReport.as_dict()`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.files.models import QrelsSource


class ReuseAnalysis(Job):
    class Kind(models.TextChoices):
        REUSABILITY = "reusability", "Leave-one-run-out reusability"
        SENSITIVITY = "sensitivity", "Annotator sensitivity"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    qrels = models.ForeignKey(QrelsSource, on_delete=models.CASCADE, related_name="reuse_analyses")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    params = models.JSONField(default=dict, help_text="The evalcore.reuse parameters it ran with.")
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.reuse_analysis_run"
    queue_down_hint = (
        "Try again later, or run `python manage.py qrels_reusability` / `annotator_sensitivity`."
    )

    class Meta:
        ordering = ["qrels", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["reusability", "sensitivity"]), name="reuse_analysis_kind_valid"
            ),
        ]
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="reuse_analysis_claim")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.qrels} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:qrels-reuse", args=[self.team.slug, self.qrels_id])
