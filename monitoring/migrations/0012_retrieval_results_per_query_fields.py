"""Room on the job rows for the per-query arrays of retrieval results (issue 22): `Evaluation.per_query`,
`Comparison.per_query` and `Comparison.num_queries`, filled by the next migration from the old result
tables, which the one after removes. (Three migrations: PostgreSQL refuses to alter a table with pending
trigger events, so the data copy runs in a transaction of its own.)"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0011_recsys_fraud_results_to_metric_table"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluation",
            name="per_query",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="measure key -> one value per query of `qids` (null: undefined).",
            ),
        ),
        migrations.AddField(
            model_name="comparison",
            name="per_query",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="run id -> measure key -> one value per query of `qids` (those of the paired tests).",
            ),
        ),
        migrations.AddField(
            model_name="comparison",
            name="num_queries",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="run id -> measure key -> the queries its mean and CI average over (trec_eval's rule).",
            ),
        ),
    ]
