"""A monitor run stores the parameters it runs with (`MonitorRun.params`: every field of
`evalcore.embeddings.MonitorParams`), so an edit of its stream's parameters no longer mixes settings in
the stream's time series.

Existing runs get the parameters resolved from their stream's overrides *at migration time*: the
stream's current overrides applied to the defaults of `MonitorParams` as this code declares them. A
run computed before an earlier edit of its stream, or before a default changed, really ran with other
settings, which nothing recorded; this is the best record there is. Overrides that do not resolve
(refused since they were saved) are copied as they are, as a run made now would store them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def resolved(overrides: Any) -> dict[str, Any]:
    from evalcore.embeddings import MonitorParams

    overrides = dict(overrides or {})
    if set(overrides) - set(MonitorParams.__dataclass_fields__):
        return overrides
    try:
        return MonitorParams(**overrides).to_dict()
    except Exception:  # refused (a TypeError, an EvalCoreError): copied as it is
        return overrides


def freeze(apps: Any, schema_editor: Any) -> None:
    EmbeddingStream = apps.get_model("monitoring", "EmbeddingStream")
    MonitorRun = apps.get_model("monitoring", "MonitorRun")
    with_runs = MonitorRun.objects.values_list("stream_id", flat=True).distinct()
    for stream_id, overrides in EmbeddingStream.objects.filter(pk__in=with_runs).values_list("pk", "params"):
        MonitorRun.objects.filter(stream_id=stream_id).update(params=resolved(overrides))


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0008_h21_numbers_summary_queries"),
    ]

    operations = [
        migrations.AddField(
            model_name="monitorrun",
            name="params",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The monitor's parameters it runs with (every field of MonitorParams), frozen from "
                "the stream's when the run is made or queued again, so editing the stream later changes no "
                "finished run.",
            ),
        ),
        migrations.RunPython(freeze, migrations.RunPython.noop),
    ]
