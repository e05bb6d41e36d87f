import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0008_obs_run_trace_id'),
        ('channelbots', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='chat_identity',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name='messages', to='channelbots.channelidentity'),
        ),
    ]
