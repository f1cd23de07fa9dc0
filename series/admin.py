from django.contrib import admin

from series.models import MetricValue, Series


@admin.register(Series)
class SeriesAdmin(admin.ModelAdmin):
    list_display = ("label", "kind", "family", "team", "created_at")
    list_filter = ("kind", "family", "team")
    search_fields = ("label", "key", "name")
    readonly_fields = ("family", "created_at")


@admin.register(MetricValue)
class MetricValueAdmin(admin.ModelAdmin):
    list_display = ("metric", "subgroup", "value", "series", "job_type", "job_id", "observed_at")
    list_filter = ("family", "job_type")
    search_fields = ("metric", "series__label")
    raw_id_fields = ("series",)
    readonly_fields = ("recorded_at",)
