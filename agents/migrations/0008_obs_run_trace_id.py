from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0007_surface_event"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="trace_id",
            field=models.CharField(blank=True, db_default="", default="", max_length=32),
        ),
    ]
