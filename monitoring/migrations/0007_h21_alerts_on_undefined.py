"""Rules say what an undefined value means (`on_undefined`), and an event's values may be undefined (NULL).

Existing streams' default collapse rules get "fire", as new ones do (`evalcore.alerts.DEFAULT_EMBEDDING_RULES`),
and the NaN an undefined value used to leave in an event (which made the alert APIs answer 500) becomes NULL.
"""

import math

from django.db import migrations, models

#: The default rules that fire on an undefined value, as (name, metric) on 2026-11-26.
COLLAPSE_RULES = [
    ("high_avg_cosine", "avg_cosine_similarity"),
    ("low_effective_dim", "effective_dim_ratio"),
    ("top10_variance_dominates", "top10_variance_ratio"),
    ("dead_dimensions", "dead_dim_ratio"),
    ("low_effective_rank", "effective_rank_ratio"),
]
NON_FINITE = [math.nan, math.inf, -math.inf]


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    AlertRule = apps.get_model("monitoring", "AlertRule")  # noqa: N806 (a model class)
    AlertEvent = apps.get_model("monitoring", "AlertEvent")  # noqa: N806
    for name, metric in COLLAPSE_RULES:
        AlertRule.objects.filter(stream__isnull=False, name=name, metric=metric).update(on_undefined="fire")
    for field in ("value", "latest_value", "effect_value", "effect_threshold"):
        AlertEvent.objects.filter(**{f"{field}__in": NON_FINITE}).update(**{field: None})


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0006_snapshot_summary"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertrule",
            name="on_undefined",
            field=models.CharField(
                choices=[
                    ("keep", "Keep the alert as it is"),
                    ("fire", "Fire (count it as breaking the threshold)"),
                    ("resolve", "Resolve (count it as not breaking the threshold)"),
                ],
                default="keep",
                help_text="What an undefined value of the metric (a degenerate snapshot's effective rank) means.",
                max_length=8,
            ),
        ),
        migrations.AlterField(
            model_name="alertevent",
            name="latest_value",
            field=models.FloatField(help_text="Null when undefined.", null=True),
        ),
        migrations.AlterField(
            model_name="alertevent",
            name="value",
            field=models.FloatField(help_text="The value that opened it; null when undefined.", null=True),
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
    ]
