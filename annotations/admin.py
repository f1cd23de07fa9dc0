"""Admin registrations for the annotation models."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from annotations import services
from annotations.models import (
    Adjudication,
    Annotation,
    AnnotatorCounts,
    Assignment,
    AttentionCheck,
    Document,
    GoldLabel,
    ImportJob,
    LLMJudgeAnswer,
    LLMJudgeJob,
    MachineJudge,
    MachineJudgeImport,
    MachineJudgeRanking,
    MachineLabel,
    MachineRouting,
    Project,
    ProjectMembership,
    QrelsBuild,
    QrelsJudgment,
    QualityRecompute,
    QualitySnapshot,
    Task,
    Topic,
)
from evalplatform.admin import KeptRowsAdmin, ReadOnlyAdmin


class MembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 1
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "overlap",
        "gold_share_min",
        "gold_share_max",
        "min_seconds_per_task",
        "created_at",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]
    fieldsets = [
        (None, {"fields": ["name", "slug", "description", "created_by"]}),
        ("Guidelines", {"fields": ["scale", "guidelines", "guideline_examples"]}),
        (
            "Assignment",
            {
                "fields": [
                    "overlap",
                    "gold_overlap",
                    "gold_share_min",
                    "gold_share_max",
                    "reservation_minutes",
                ]
            },
        ),
        (
            "Pace",
            {
                "fields": [
                    "min_seconds_per_task",
                    "too_fast_policy",
                    "session_cap_minutes",
                    "session_break_minutes",
                ]
            },
        ),
        ("Quality", {"fields": ["min_gold_accuracy", "min_gold_items"]}),
    ]
    raw_id_fields = ["created_by"]

    def save_model(self, request: Any, obj: Project, form: Any, change: bool) -> None:
        # The same rule as the lead's form: new quality thresholds recompute the verdicts.
        services.project_update(project=obj, changed=form.changed_data if change else [])


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "quality_override", "created_at"]
    list_filter = ["role", "quality_override", "project"]
    # Overrides go through the quality dashboard, which records who and when.
    readonly_fields = ["quality_override", "quality_override_by", "quality_override_at"]
    search_fields = ["user__username", "project__slug"]
    list_select_related = ["user", "project"]
    raw_id_fields = ["user", "project"]

    # Through the services, so that a member removed or no longer an annotator hands back the tasks they
    # hold at once instead of keeping those places until the reservations expire.
    def save_model(self, request: HttpRequest, obj: ProjectMembership, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)  # the admin's view runs in a transaction
        if obj.role != ProjectMembership.Role.ANNOTATOR:
            services.reservations_release_held(project=obj.project, annotator=obj.user)

    def delete_model(self, request: HttpRequest, obj: ProjectMembership) -> None:
        services.membership_remove(project=obj.project, user=obj.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ProjectMembership]) -> None:
        for membership in queryset.select_related("project", "user"):
            services.membership_remove(project=membership.project, user=membership.user)


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ["qid", "title", "project"]
    list_filter = ["project"]
    search_fields = ["qid", "title"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["doc_id", "title", "project"]
    list_filter = ["project"]
    search_fields = ["doc_id", "title"]
    list_select_related = ["project"]
    raw_id_fields = ["project"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["id", "topic", "document", "project", "is_gold", "assigned_count", "label_count"]
    list_filter = ["project", "is_gold"]
    search_fields = ["topic__qid", "document__doc_id"]
    list_select_related = ["topic", "document", "project"]
    raw_id_fields = ["project", "topic", "document"]
    readonly_fields = ["assigned_count", "label_count"]


@admin.register(AnnotatorCounts)
class AnnotatorCountsAdmin(KeptRowsAdmin):
    """Read only: PostgreSQL's triggers keep these rows (see the model)."""

    list_display = ["annotator", "project", "done_ordinary", "done_gold"]
    list_filter = ["project"]
    list_select_related = ["annotator", "project"]


@admin.register(GoldLabel)
class GoldLabelAdmin(admin.ModelAdmin):
    list_display = ["task", "grade", "created_at"]
    list_filter = ["task__project", "grade"]
    search_fields = ["task__topic__qid", "task__document__doc_id"]
    list_select_related = ["task__topic", "task__document"]
    raw_id_fields = ["task"]


@admin.register(AttentionCheck)
class AttentionCheckAdmin(admin.ModelAdmin):
    list_display = ["task", "reason", "created_at"]
    list_filter = ["task__project"]
    list_select_related = ["task__topic", "task__document"]
    raw_id_fields = ["task"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "annotator", "task", "state", "reserved_at", "expires_at", "answered_at"]
    list_filter = ["state", "project"]
    search_fields = ["annotator__username", "task__topic__qid", "task__document__doc_id"]
    list_select_related = ["annotator", "task__topic", "task__document"]
    raw_id_fields = ["project", "task", "annotator"]
    date_hierarchy = "reserved_at"


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "annotator",
        "task",
        "grade",
        "skipped",
        "unclear",
        "too_fast",
        "seconds_spent",
        "created_at",
    ]
    list_filter = ["project", "skipped", "unclear", "too_fast", "grade"]
    search_fields = ["annotator__username", "task__topic__qid", "task__document__doc_id"]
    list_select_related = ["annotator", "task__topic", "task__document"]
    raw_id_fields = ["assignment", "project", "task", "annotator"]
    date_hierarchy = "created_at"


@admin.register(Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    """Final grades set on the adjudication pages; editable here too, as a lead would there."""

    list_display = ["task", "grade", "adjudicator", "updated_at"]
    list_filter = ["project", "grade"]
    search_fields = ["task__topic__qid", "task__document__doc_id", "adjudicator__username"]
    list_select_related = ["task__topic", "task__document", "adjudicator"]
    raw_id_fields = ["project", "task", "adjudicator"]


@admin.register(QualitySnapshot)
class QualitySnapshotAdmin(ReadOnlyAdmin):
    list_display = ["project", "computed_at", "answers", "latest_answer_at"]
    list_select_related = ["project"]


@admin.register(QualityRecompute)
class QualityRecomputeAdmin(ReadOnlyAdmin):
    list_display = ["project", "status", "reason", "attempts", "created_at", "started_at", "finished_at"]
    list_filter = ["status", "reason", "project"]
    list_select_related = ["project"]


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = [
        "project",
        "kind",
        "original_name",
        "size",
        "status",
        "attempts",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "kind", "project"]
    list_select_related = ["project"]
    raw_id_fields = ["project", "created_by"]


@admin.register(MachineJudgeImport)
class MachineJudgeImportAdmin(ReadOnlyAdmin):
    list_display = ["project", "source", "original_name", "size", "judge", "status", "attempts", "created_at"]
    list_filter = ["status", "source", "project"]
    list_select_related = ["project", "judge"]
    raw_id_fields = ["project", "judge", "created_by"]


@admin.register(QrelsJudgment)
class QrelsJudgmentAdmin(ReadOnlyAdmin):
    list_display = ["build", "qid", "doc_id", "rel", "score", "n_labels"]
    search_fields = ["qid", "doc_id"]
    list_select_related = ["build__project"]
    raw_id_fields = ["build"]

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(QrelsBuild)
class QrelsBuildAdmin(ReadOnlyAdmin):
    """Builds are immutable: read-only here; only failed builds may be deleted."""

    list_display = [
        "project",
        "version",
        "status",
        "aggregation",
        "tolerance",
        "pairs_kept",
        "created_by",
        "created_at",
    ]
    list_filter = ["status", "aggregation", "project"]
    list_select_related = ["project", "created_by"]

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return obj is not None and obj.status == QrelsBuild.Status.FAILED


@admin.register(MachineJudge)
class MachineJudgeAdmin(ReadOnlyAdmin):
    """Judges come from an upload of their labels; their metadata is the provenance, so it is not edited."""

    list_display = ["project", "name", "version", "kind", "model", "created_at"]
    list_filter = ["kind", "project"]
    list_select_related = ["project"]
    search_fields = ["name", "model"]


@admin.register(MachineLabel)
class MachineLabelAdmin(ReadOnlyAdmin):
    list_display = ["judge", "topic", "document", "grade", "confidence"]
    list_select_related = ["judge__project", "topic", "document"]
    raw_id_fields = ["judge", "topic", "document"]


@admin.register(MachineRouting)
class MachineRoutingAdmin(ReadOnlyAdmin):
    list_display = ["judge", "topic", "document", "reason", "queue", "routed_at"]
    list_filter = ["reason", "queue"]
    list_select_related = ["judge__project", "topic", "document"]
    raw_id_fields = ["judge", "topic", "document", "routed_by"]


@admin.register(LLMJudgeJob)
class LLMJudgeJobAdmin(ReadOnlyAdmin):
    list_display = ["project", "judge", "limit", "status", "attempts", "created_at", "finished_at"]
    list_filter = ["status", "project"]
    list_select_related = ["project", "judge"]


@admin.register(LLMJudgeAnswer)
class LLMJudgeAnswerAdmin(ReadOnlyAdmin):
    """Every answer of the LLM judge, its raw text verbatim: the record of what the model said."""

    list_display = ["judge", "topic", "document", "status", "grade", "attempts", "answered_at"]
    list_filter = ["status"]
    list_select_related = ["judge__project", "topic", "document"]
    raw_id_fields = ["judge", "job", "topic", "document"]


@admin.register(MachineJudgeRanking)
class MachineJudgeRankingAdmin(ReadOnlyAdmin):
    list_display = ["judge", "build", "team", "computed_at"]
    list_select_related = ["judge__project", "build", "team"]
    raw_id_fields = ["judge", "build", "team"]
