"""Admin of the evaluation service: uploads are viewable and deletable; jobs and results are written only by
the workers, so they are read-only here. Embedding streams (their schedule included), alert rules and
notification channels are editable; snapshots, monitor runs, alert events and notifications are read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction

from evalplatform.admin import ReadOnlyAdmin
from monitoring.alerts import services as alerts
from monitoring.embeddings import services as monitors
from monitoring.models import (
    AlertEvent,
    AlertRule,
    Comparison,
    ComparisonPair,
    EmbeddingSnapshot,
    EmbeddingStream,
    Evaluation,
    FraudComparison,
    FraudScoreEvaluation,
    FraudScoreSet,
    Fusion,
    GapsRequest,
    JudgingPool,
    MachineJudgeEvaluation,
    MonitorRun,
    Notification,
    NotificationChannel,
    PoolReprioritise,
    PoolTask,
    QrelsSource,
    RecommendationComparison,
    RecommendationEvaluation,
    RecommendationSet,
    ReuseAnalysis,
    Run,
)


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


@admin.register(ReuseAnalysis)
class ReuseAnalysisAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "qrels", "kind", "status", "attempts", "created_at", "finished_at"]
    list_filter = ["kind", "status", "team"]
    list_select_related = ["team", "qrels"]


@admin.register(GapsRequest)
class GapsRequestAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "run", "qrels", "depth", "status", "attempts", "created_at", "finished_at"]
    list_filter = ["status", "team"]
    list_select_related = ["team", "run", "qrels"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "run", "qrels", "status", "attempts", "created_at", "finished_at"]
    list_filter = ["status", "team"]
    list_select_related = ["team", "run", "qrels"]
    exclude = ["per_query"]  # its values and CIs are the metric table's (series admin)


@admin.register(JudgingPool)
class JudgingPoolAdmin(ReadOnlyAdmin):
    list_display = ("pk", "project", "team", "strategy", "budget", "stage", "status", "judged", "relevant")
    list_filter = ("strategy", "stage", "status")
    exclude = ("candidates",)


@admin.register(PoolTask)
class PoolTaskAdmin(ReadOnlyAdmin):
    list_display = ("pool", "candidate", "task", "created")


@admin.register(PoolReprioritise)
class PoolReprioritiseAdmin(ReadOnlyAdmin):
    list_display = ("pool", "status", "created_at", "changed", "created_tasks", "deleted_tasks")
    list_filter = ("status",)


@admin.register(Comparison)
class ComparisonAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "qrels", "test", "correction", "status", "created_at"]
    list_filter = ["status", "team", "test"]
    list_select_related = ["team", "qrels"]
    exclude = ["per_query"]  # the runs' means and CIs are the metric table's (series admin)


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


@admin.register(FraudComparison, RecommendationComparison)
class RecsysFraudComparisonAdmin(ReadOnlyAdmin):
    list_display = ["pk", "team", "evaluation_a_id", "evaluation_b_id", "status", "attempts", "created_at"]
    list_filter = ["status", "team"]
    list_select_related = ["team"]


# --- embedding monitors and alerts --------------------------------------------------------------------


class EmbeddingStreamForm(forms.ModelForm):
    """The schedule and the parameters checked as the API checks them, each error on its field."""

    class Meta:
        model = EmbeddingStream
        fields = ["team", "slug", "name", "description", "dimension", "params", "every_minutes", "crontab"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            monitors.monitor_params(data.get("params"))
            data["every_minutes"], data["crontab"] = monitors.check_schedule(
                data.get("every_minutes"), data.get("crontab") or ""
            )
        except monitors.MonitorInputError as error:
            self.add_error(error.field if error.field in self.fields else None, str(error))
        return data


@admin.register(EmbeddingStream)
class EmbeddingStreamAdmin(admin.ModelAdmin):
    """Streams, with their schedule: saving keeps the django-celery-beat periodic task in step (pausing it
    is done on the periodic task itself)."""

    form = EmbeddingStreamForm
    list_display = [
        "name",
        "team",
        "slug",
        "dimension",
        "every_minutes",
        "crontab",
        "periodic_task",
        "reference",
    ]
    list_filter = ["team"]
    search_fields = ["name", "slug"]
    list_select_related = ["team", "periodic_task", "reference"]
    readonly_fields = ["reference", "periodic_task", "created_by", "created_at"]

    def get_readonly_fields(self, request: Any, obj: Any = None) -> list[str]:
        # The dimension and the team are fixed once snapshots exist.
        return [*self.readonly_fields, "team", "dimension"] if obj is not None else list(self.readonly_fields)

    def save_model(self, request: Any, obj: EmbeddingStream, form: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change:
                alerts.default_stream_rules(stream=obj)
            monitors.stream_schedule_sync(stream=obj)

    def delete_model(self, request: Any, obj: EmbeddingStream) -> None:
        monitors.stream_delete(stream=obj)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        for stream in queryset:
            monitors.stream_delete(stream=stream)


@admin.register(EmbeddingSnapshot)
class EmbeddingSnapshotAdmin(ReadOnlyAdmin):
    list_display = ["stream", "kind", "label", "rows", "dimension", "dtype", "observed_at", "uploaded_by"]
    list_filter = ["kind", "stream__team"]
    search_fields = ["label", "stream__name"]
    list_select_related = ["stream", "uploaded_by"]


@admin.register(MonitorRun)
class MonitorRunAdmin(ReadOnlyAdmin):
    list_display = [
        "pk",
        "stream",
        "snapshot",
        "reference",
        "status",
        "chunks",
        "device",
        "attempts",
        "observed_at",
    ]
    list_filter = ["status", "stream__team"]
    list_select_related = ["stream", "snapshot", "reference"]
    exclude = ["spectrum"]
    readonly_fields = ["metric_values"]

    @admin.display(description="Values (in the metric table, series.MetricValue)")
    def metric_values(self, run: MonitorRun) -> str:
        shown = monitors.run_values(run)
        return "; ".join(f"{metric} = {item['value']}" for metric, item in shown.items()) or "—"


@admin.register(NotificationChannel)
class NotificationChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "kind", "target", "enabled"]
    list_filter = ["team", "kind", "enabled"]


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "metric", "comparator", "threshold", "severity", "consecutive", "on_undefined",
                    "enabled"]  # fmt: skip
    list_filter = ["team", "severity", "on_undefined", "enabled"]
    search_fields = ["name", "metric"]
    list_select_related = ["team", "series"]
    raw_id_fields = ["series"]
    filter_horizontal = ["channels"]


@admin.register(AlertEvent)
class AlertEventAdmin(ReadOnlyAdmin):
    list_display = [
        "rule",
        "team",
        "status",
        "value",
        "latest_value",
        "threshold",
        "observations",
        "opened_at",
        "resolved_at",
    ]
    list_filter = ["status", "team"]
    list_select_related = ["rule", "team"]


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ["event", "channel", "kind", "status", "attempts", "response", "created_at"]
    list_filter = ["status", "kind"]
    list_select_related = ["event__rule", "channel"]


@admin.register(Fusion)
class FusionAdmin(ReadOnlyAdmin):
    list_display = ["name", "team", "method", "norm", "status", "created_at"]
    list_filter = ["team", "method", "status"]
    list_select_related = ["team"]
    search_fields = ["name"]


@admin.register(MachineJudgeEvaluation)
class MachineJudgeEvaluationAdmin(ReadOnlyAdmin):
    list_display = ["team", "qrels", "judge", "sample", "status", "created_at"]
    list_filter = ["team", "status"]
    list_select_related = ["team", "qrels", "judge"]
