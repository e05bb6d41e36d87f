from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("agenticos", "0001_initial")]

    operations = [
        migrations.RunSQL("CREATE EXTENSION IF NOT EXISTS vector;", reverse_sql=migrations.RunSQL.noop),
    ]
