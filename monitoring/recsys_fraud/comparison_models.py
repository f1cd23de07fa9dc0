"""Two evaluations of a kind compared: two fraud models on the same examples, two recommendation sets on
the same users.

A comparison is a job (`evalplatform.jobs`) keyed by its ordered pair of evaluations, so the same request
finds the same comparison. Its job reads the evaluated files again, pairs them (transactions by id,
users by id) and stores the statistics in `result`: for fraud, DeLong's test of the ROC areas and a
paired bootstrap interval of their difference; for recommendations, per metric averaged over users, the
paired t-test, Wilcoxon's signed-rank test, a paired bootstrap interval and the effect sizes. The
overlaid curves are drawn from the two evaluations' own stored curves. The resampling parameters are
frozen on the row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse

from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.recsys_fraud.models import FraudScoreEvaluation, RecommendationEvaluation

#: The bootstrap's draws and its interval, written on every new comparison.
COMPARISON_RESAMPLES = 2_000
COMPARISON_CONFIDENCE = 0.95
COMPARISON_SEED = 0


class _Comparison(Job):
    """What both kinds of comparison hold beside their pair of evaluations."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    n_resamples = models.PositiveIntegerField(default=COMPARISON_RESAMPLES, help_text="Bootstrap resamples.")
    confidence = models.FloatField(default=COMPARISON_CONFIDENCE, help_text="The intervals' confidence.")
    seed = models.PositiveIntegerField(default=COMPARISON_SEED, help_text="The resampling's seed.")
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        abstract = True


class FraudComparison(_Comparison):
    """Two fraud evaluations compared on the examples both score (paired by id)."""

    evaluation_a = models.ForeignKey(
        FraudScoreEvaluation, on_delete=models.CASCADE, related_name="comparisons_as_a"
    )
    evaluation_b = models.ForeignKey(
        FraudScoreEvaluation, on_delete=models.CASCADE, related_name="comparisons_as_b"
    )

    task_name = "monitoring.tasks.fraud_comparison_run"

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation_a", "evaluation_b"], name="fraud_comparison_unique_pair"
            ),
            models.CheckConstraint(condition=~Q(evaluation_a=F("evaluation_b")), name="fraud_comparison_two"),
        ]
        indexes = [models.Index(fields=["team", "-created_at"], name="fraud_comparison_by_team")]

    def __str__(self) -> str:
        return f"{self.evaluation_a.score_set} against {self.evaluation_b.score_set}"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:fraud-comparison", args=[self.team.slug, self.pk])


class RecommendationComparison(_Comparison):
    """Two recommendation evaluations compared on the users both evaluate (paired by user id)."""

    evaluation_a = models.ForeignKey(
        RecommendationEvaluation, on_delete=models.CASCADE, related_name="comparisons_as_a"
    )
    evaluation_b = models.ForeignKey(
        RecommendationEvaluation, on_delete=models.CASCADE, related_name="comparisons_as_b"
    )

    task_name = "monitoring.tasks.recommendation_comparison_run"

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation_a", "evaluation_b"], name="recommendation_comparison_unique_pair"
            ),
            models.CheckConstraint(
                condition=~Q(evaluation_a=F("evaluation_b")), name="recommendation_comparison_two"
            ),
        ]
        indexes = [models.Index(fields=["team", "-created_at"], name="recommendation_comparison_team")]

    def __str__(self) -> str:
        return f"{self.evaluation_a.recommendation_set} against {self.evaluation_b.recommendation_set}"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:recsys-comparison", args=[self.team.slug, self.pk])
