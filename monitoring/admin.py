"""Admin of the evaluation service: uploads are viewable and deletable; jobs and results are written only by
the workers, so they are read-only here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from monitoring.models import (
    Comparison,
    ComparisonPair,
    ComparisonSummary,
    Evaluation,
    EvaluationResult,
    FraudScoreEvaluation,
    FraudScoreResult,
    FraudScoreSet,
    QrelsSource,
    RecommendationEvaluation,
    RecommendationResult,
    RecommendationSet,
    Run,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "run_tag", "num_queries", "num_rows", "uploaded_by", "created_at"]
    list_filter = ["team"]
    search_fields = ["name", "run_tag", "original_name"]
    list_select_related = ["team", "uploaded_by"]


@admin.register(QrelsSource)
class QrelsSourceAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "kind", "build", "num_queries", "num_rows", "created_at"]
    list_filter = ["team", "kind"]
    search_fields = ["name", "original_name"]
    list_select_related = ["team", "build__project"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "run", "qrels", "status", "attempts", "created_at", "finished_at"]
    list_filter = ["status", "team"]
    list_select_related = ["team", "run", "qrels"]


@admin.register(EvaluationResult)
class EvaluationResultAdmin(ReadOnlyAdmin):
    list_display = ["evaluation", "measure", "value", "ci_low", "ci_high"]
    search_fields = ["measure"]
    raw_id_fields = ["evaluation"]
    exclude = ["per_query"]


@admin.register(Comparison)
class ComparisonAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "qrels", "test", "correction", "status", "created_at"]
    list_filter = ["status", "team", "test"]
    list_select_related = ["team", "qrels"]


@admin.register(ComparisonSummary)
class ComparisonSummaryAdmin(ReadOnlyAdmin):
    list_display = ["comparison", "run", "measure", "mean", "ci_low", "ci_high"]
    raw_id_fields = ["comparison", "run"]
    exclude = ["per_query"]


@admin.register(ComparisonPair)
class ComparisonPairAdmin(ReadOnlyAdmin):
    list_display = ["comparison", "measure", "run_a", "run_b", "diff", "p_adjusted", "significant"]
    raw_id_fields = ["comparison", "run_a", "run_b"]


# --- recommendation sets and fraud score sets ---------------------------------------------------------


@admin.register(RecommendationSet)
class RecommendationSetAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "num_users", "num_items", "depth", "uploaded_by", "created_at"]
    list_filter = ["team"]
    search_fields = ["name"]
    list_select_related = ["team", "uploaded_by"]


@admin.register(FraudScoreSet)
class FraudScoreSetAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "original_name", "num_rows", "num_frauds", "uploaded_by", "created_at"]
    list_filter = ["team"]
    search_fields = ["name", "original_name"]
    list_select_related = ["team", "uploaded_by"]


@admin.register(RecommendationEvaluation)
class RecommendationEvaluationAdmin(ReadOnlyAdmin):
    list_display = [
        "pk",
        "team",
        "recommendation_set",
        "k",
        "status",
        "attempts",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "team"]
    list_select_related = ["team", "recommendation_set"]
    exclude = ["curves"]


@admin.register(FraudScoreEvaluation)
class FraudScoreEvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "score_set", "target_fpr", "threshold", "status", "attempts", "created_at"]
    list_filter = ["status", "team"]
    list_select_related = ["team", "score_set"]
    exclude = ["curves"]


@admin.register(RecommendationResult)
class RecommendationResultAdmin(ReadOnlyAdmin):
    list_display = ["evaluation", "metric", "value"]
    search_fields = ["metric"]
    raw_id_fields = ["evaluation"]


@admin.register(FraudScoreResult)
class FraudScoreResultAdmin(ReadOnlyAdmin):
    list_display = ["evaluation", "metric", "value"]
    search_fields = ["metric"]
    raw_id_fields = ["evaluation"]
