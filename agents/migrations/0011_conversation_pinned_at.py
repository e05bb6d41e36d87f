from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("agents", "0010_evals_surface_and_draft_snapshots")]

    operations = [
        migrations.AddField(model_name="conversation", name="pinned_at",
                            field=models.DateTimeField(blank=True, null=True)),
    ]
