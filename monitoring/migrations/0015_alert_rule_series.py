"""Alert rules watch a series (`series.Series`) of any family instead of a stream or a (qrels, run name):
each existing rule gets the series `series.subjects.stream_series` / `run_series` would give its subject
(created here when no value was written yet), then the old columns and their check constraint go."""

import django.db.models.deletion
from django.db import migrations, models
from django.urls import NoReverseMatch, reverse


def _stream_url(team_slug: str, stream_slug: str) -> str:
    try:
        return reverse("monitoring:stream-detail", args=[team_slug, stream_slug])
    except NoReverseMatch:  # the stream pages are not routed in this deployment
        return ""


def rules_to_series(apps, schema_editor):  # type: ignore[no-untyped-def]
    from series.services import series_key  # a pure function: the key every writer and reader uses

    AlertRule = apps.get_model("monitoring", "AlertRule")  # noqa: N806 (a model class)
    Series = apps.get_model("series", "Series")  # noqa: N806
    made: dict[tuple[str, str], int] = {}

    def series_id(kind: str, key: str, family: str, **defaults: object) -> int:
        if (kind, key) not in made:
            series, _ = Series.objects.get_or_create(
                kind=kind, key=key, defaults={"family": family, **defaults}
            )
            made[(kind, key)] = series.pk
        return made[(kind, key)]

    for rule in AlertRule.objects.select_related("stream__team", "qrels").iterator():
        if rule.stream_id is not None:
            stream = rule.stream
            rule.series_id = series_id(
                "stream", series_key(stream.pk), "embedding", team_id=stream.team_id, object_id=stream.pk,
                name=stream.slug, label=f"stream {stream.name}"[:300], url=_stream_url(stream.team.slug, stream.slug),
            )  # fmt: skip
        else:
            qrels = rule.qrels
            rule.series_id = series_id(
                "run", series_key(qrels.pk, rule.run_name), "retrieval", team_id=qrels.team_id,
                object_id=qrels.pk, name=rule.run_name, label=f"run {rule.run_name} on {qrels.name}"[:300],
            )  # fmt: skip
        rule.save(update_fields=["series"])
    if schema_editor.connection.vendor == "postgresql":
        # Check the new foreign keys now: the columns are altered next, in the same transaction.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0014_delete_evaluationresult_comparisonsummary"),
        ("series", "0001_series_and_metric_values"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertrule",
            name="series",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="alert_rules",
                to="series.series",
                help_text="What the rule watches; its metric is one of the series' family.",
            ),
        ),
        migrations.RunPython(rules_to_series, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="alertrule", name="alert_rule_one_series"),
        migrations.RemoveField(model_name="alertrule", name="stream"),
        migrations.RemoveField(model_name="alertrule", name="qrels"),
        migrations.RemoveField(model_name="alertrule", name="run_name"),
        migrations.AlterField(
            model_name="alertrule",
            name="series",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="alert_rules",
                to="series.series",
                help_text="What the rule watches; its metric is one of the series' family.",
            ),
        ),
    ]
