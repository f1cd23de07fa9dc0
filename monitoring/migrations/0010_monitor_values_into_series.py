"""Monitor runs' values move into the one metric table (`series.MetricValue`), and `MonitorValue` goes.

Forward: each stream with runs gets its series (kind "stream", the key and label
`series.subjects.stream_series` gives it); every `MonitorValue` row becomes a value of its run
(job_type "monitoring.monitorrun", subgroup "", observed at the run's `observed_at`; a NaN or an
infinity stored before NULLs were enforced becomes NULL), and each calibrated effect threshold kept in
`MonitorRun.effect_thresholds` becomes a value with subgroup "calibrated_threshold" (the JSON field
stays: the API shows it). `section` is not carried: it is a property of the metric (the drift metrics
of the embedding family). Bulk, a few queries per stream.

Backward: the runs' values (subgroup "") become `MonitorValue` rows again, their section derived from
the metric, and the runs' values are removed from the table (the series are left; they are harmless).
"""

from __future__ import annotations

import math
from typing import Any

from django.db import migrations, models

JOB_TYPE = "monitoring.monitorrun"
THRESHOLD_SUBGROUP = "calibrated_threshold"
# The embedding family as it stands at this migration: the order a run writes its values in.
QUALITY = (
    "partition_isotropy", "effective_dim", "effective_dim_ratio", "top10_variance_ratio",
    "top50_variance_ratio", "avg_cosine_similarity", "uniformity", "alignment", "dead_dims",
    "dead_dim_ratio", "effective_rank", "effective_rank_ratio", "stable_rank",
)  # fmt: skip
DRIFT = ("mmd2", "mmd_p_value", "mean_cosine_distance", "drifted_dim_share", "classifier_auc")
ORDER = {name: position for position, name in enumerate(QUALITY + DRIFT)}


def finite(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def stream_url(team_slug: str, slug: str) -> str:
    try:
        from django.urls import reverse

        return reverse("monitoring:stream-detail", args=[team_slug, slug])
    except Exception:  # the stream pages are not routed here
        return ""


def forward(apps: Any, schema_editor: Any) -> None:
    EmbeddingStream = apps.get_model("monitoring", "EmbeddingStream")
    MonitorRun = apps.get_model("monitoring", "MonitorRun")
    MonitorValue = apps.get_model("monitoring", "MonitorValue")
    Series = apps.get_model("series", "Series")
    MetricValue = apps.get_model("series", "MetricValue")
    streams = EmbeddingStream.objects.filter(pk__in=MonitorRun.objects.values("stream_id")).values_list(
        "pk", "team_id", "team__slug", "slug", "name"
    )
    for stream_id, team_id, team_slug, slug, name in streams:
        series, _ = Series.objects.get_or_create(
            kind="stream", key=str(stream_id),
            defaults={"team_id": team_id, "family": "embedding", "object_id": stream_id, "name": slug[:200],
                      "label": f"stream {name}"[:300], "url": stream_url(team_slug, slug)[:500]},
        )  # fmt: skip
        runs = dict(MonitorRun.objects.filter(stream_id=stream_id).values_list("pk", "observed_at"))
        rows = [
            MetricValue(
                series_id=series.pk,
                family="embedding",
                job_type=JOB_TYPE,
                job_id=run_id,
                metric=metric,
                subgroup="",
                position=ORDER.get(metric, len(ORDER)),
                value=finite(value),
                observed_at=runs[run_id],
            )  # fmt: skip
            for run_id, metric, value in MonitorValue.objects.filter(run_id__in=list(runs)).values_list(
                "run_id", "metric", "value"
            )
        ]
        for run_id, thresholds in (
            MonitorRun.objects.filter(stream_id=stream_id)
            .exclude(effect_thresholds={})
            .values_list("pk", "effect_thresholds")
        ):
            rows += [
                MetricValue(
                    series_id=series.pk,
                    family="embedding",
                    job_type=JOB_TYPE,
                    job_id=run_id,
                    metric=metric,
                    subgroup=THRESHOLD_SUBGROUP,
                    position=len(ORDER) + ORDER.get(metric, len(ORDER)),
                    value=finite(value),
                    observed_at=runs[run_id],
                )  # fmt: skip
                for metric, value in sorted((thresholds or {}).items())
                if finite(value) is not None
            ]
        MetricValue.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)


def backward(apps: Any, schema_editor: Any) -> None:
    MonitorRun = apps.get_model("monitoring", "MonitorRun")
    MonitorValue = apps.get_model("monitoring", "MonitorValue")
    MetricValue = apps.get_model("series", "MetricValue")
    stored = MetricValue.objects.filter(job_type=JOB_TYPE)
    runs = set(MonitorRun.objects.values_list("pk", flat=True))
    MonitorValue.objects.bulk_create(
        [
            MonitorValue(
                run_id=run_id, metric=metric, value=value, section="drift" if metric in DRIFT else "current"
            )  # fmt: skip
            for run_id, metric, value in stored.filter(subgroup="").values_list("job_id", "metric", "value")
            if run_id in runs
        ],
        batch_size=2000,
        ignore_conflicts=True,
    )
    stored.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0009_monitorrun_params_frozen"),
        ("series", "0001_series_and_metric_values"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
        migrations.AlterField(
            model_name="monitorrun",
            name="effect_thresholds",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Calibrated on the reference's own splits; also stored as values of the stream's "
                "series (subgroup series.selectors.THRESHOLD_SUBGROUP), which the alert rules read.",
            ),
        ),
        migrations.DeleteModel(
            name="MonitorValue",
        ),
    ]
