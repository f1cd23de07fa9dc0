from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0017_poolweb_judging_pool"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgingpool",
            name="simulation",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="Every strategy replayed on the pool's runs with the team's newest qrels of this "
                'project as the oracle: {"qrels", "qrels_name", "measure", "step", "budget", "strategies": '
                '[{"strategy", "steps"}]}, or {"reason"} when there was none.',
            ),
        ),
    ]
