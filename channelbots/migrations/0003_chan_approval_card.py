import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agenticos', '0002_vector_extension'),
        ('channelbots', '0002_binding_channel_tools_limit'),
        ('governance', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='ApprovalCard',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('chat_id', models.CharField(max_length=120)),
                ('thread', models.CharField(blank=True, max_length=120)),
                ('message_ref', models.CharField(max_length=120)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('approval', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='channel_card', to='governance.approval')),
                ('bot', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approval_cards', to='channelbots.channelbot')),
                ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agenticos.organization')),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
    ]
