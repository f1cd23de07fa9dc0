"""The old retrieval result tables go: their rows are in the metric table since the previous migration."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0013_retrieval_results_to_metric_table"),
    ]

    operations = [
        migrations.DeleteModel(name="ComparisonSummary"),
        migrations.DeleteModel(name="EvaluationResult"),
    ]
