"""Recommendation and fraud results move to the one metric table (issue 22): each evaluation's
`RecommendationResult` / `FraudScoreResult` rows become `series.MetricValue` rows in the series of its
set's name (created here as `series.subjects` would: kind recsys / fraud, key "<team id>:<set name>"),
observed at the evaluation's finish (its creation when it never finished); then the two tables go.

Backwards, the tables come back and the values of these evaluations are copied back into them (and out of
the metric table), so the migration can be undone and done again without losing a value. Bulk reads and
writes: a few queries whatever the number of rows.
"""

from __future__ import annotations

import math
from typing import Any

from django.db import migrations

from evalcore.metrics import metric_registry

#: (old result model, evaluation model, the evaluation's set field, series kind, family, label prefix)
FAMILIES = (
    (
        "recommendationresult",
        "recommendationevaluation",
        "recommendation_set",
        "recsys",
        "recsys",
        "recommendations",
    ),
    ("fraudscoreresult", "fraudscoreevaluation", "score_set", "fraud", "fraud", "fraud scores"),
)
BATCH = 2000


def _set_url(kind: str, team_slug: str, set_id: int) -> str:
    from django.urls import NoReverseMatch, reverse

    name = "monitoring:recsys-set" if kind == "recsys" else "monitoring:fraud-set"
    try:
        return reverse(name, args=[team_slug, set_id])
    except NoReverseMatch:
        return ""


def forwards(apps: Any, schema_editor: Any) -> None:
    Series = apps.get_model("series", "Series")
    MetricValue = apps.get_model("series", "MetricValue")
    registry = metric_registry()
    for result_name, evaluation_name, set_field, kind, family, prefix in FAMILIES:
        Result = apps.get_model("monitoring", result_name)
        rows = list(
            Result.objects.order_by("evaluation_id", "position").values_list(
                "evaluation_id",
                "metric",
                "position",
                "value",
                "evaluation__finished_at",
                "evaluation__created_at",
                "evaluation__team_id",
                "evaluation__team__slug",
                f"evaluation__{set_field}_id",
                f"evaluation__{set_field}__name",
            )  # fmt: skip
        )
        if not rows:
            continue
        # One series per (team, set name); its link goes to the latest set of the name evaluated.
        wanted: dict[str, dict[str, Any]] = {}
        for row in rows:
            team_id, slug, set_id, set_name = row[6], row[7], row[8], row[9]
            key = f"{team_id}:{set_name}"[:300]
            latest = wanted.get(key)
            if latest is None or set_id > latest["set_id"]:
                wanted[key] = {"team_id": team_id, "name": set_name, "set_id": set_id, "slug": slug}
        Series.objects.bulk_create(
            [
                Series(kind=kind, family=family, key=key, team_id=item["team_id"], name=item["name"][:200],
                       label=f"{prefix} {item['name']}"[:300], url=_set_url(kind, item["slug"], item["set_id"]))
                for key, item in wanted.items()
            ],
            ignore_conflicts=True,
        )  # fmt: skip
        series_ids = dict(Series.objects.filter(kind=kind, key__in=list(wanted)).values_list("key", "pk"))
        job_type = f"monitoring.{evaluation_name}"
        values = []
        for evaluation_id, metric, position, value, finished_at, created_at, team_id, _, _, set_name in rows:
            known = registry.find(metric)
            values.append(
                MetricValue(
                    series_id=series_ids[f"{team_id}:{set_name}"[:300]],
                    family=known.family if known is not None else family,
                    job_type=job_type,
                    job_id=evaluation_id,
                    metric=metric,
                    subgroup="",
                    position=position,
                    value=value if value is not None and math.isfinite(value) else None,
                    observed_at=finished_at or created_at,
                )  # fmt: skip
            )
        # Values already in the table for these jobs (none, unless the migration runs again) are kept.
        MetricValue.objects.bulk_create(values, batch_size=BATCH, ignore_conflicts=True)


def backwards(apps: Any, schema_editor: Any) -> None:
    MetricValue = apps.get_model("series", "MetricValue")
    for result_name, evaluation_name, _, _, _, _ in FAMILIES:
        Result = apps.get_model("monitoring", result_name)
        Evaluation = apps.get_model("monitoring", evaluation_name)
        job_type = f"monitoring.{evaluation_name}"
        stored = MetricValue.objects.filter(job_type=job_type, subgroup="")
        existing = set(Evaluation.objects.values_list("pk", flat=True))
        Result.objects.bulk_create(
            [
                Result(evaluation_id=job_id, metric=metric, position=position, value=value)
                for job_id, metric, position, value in stored.values_list(
                    "job_id", "metric", "position", "value"
                )
                if job_id in existing
            ],
            batch_size=BATCH,
            ignore_conflicts=True,
        )
        MetricValue.objects.filter(job_type=job_type).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0010_monitor_values_into_series"),
        ("series", "0001_series_and_metric_values"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.DeleteModel(name="FraudScoreResult"),
        migrations.DeleteModel(name="RecommendationResult"),
    ]
