from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0025_webgaps_set_evaluation_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgingpool",
            name="simulation_measure",
            field=models.CharField(
                default="map",
                help_text="The measure (a registry name, one numeric measure) that ranks the runs in the "
                "simulation.",
                max_length=64,
            ),
        ),
    ]
