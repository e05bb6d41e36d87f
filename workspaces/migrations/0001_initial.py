# The workspace and sandbox-connection models, which were the capabilities app's (capabilities 0003, 0004, 0006),
# taken over by this app: state only — the tables keep their names (db_table) and their rows. Their content
# types follow them, so the operators' admin permissions on them stay.

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.conf import settings
from django.db import migrations, models


MODELS = ("workspace", "workspacefile", "workspaceuse", "sandboxconnection")


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MODELS:
        if not content_type.objects.filter(app_label=new, model=model).exists():  # (app_label, model) is unique
            content_type.objects.filter(app_label=old, model=model).update(app_label=new)


def _content_types_follow(apps, schema_editor):
    _relabel(apps, "capabilities", "workspaces")


def _content_types_return(apps, schema_editor):
    _relabel(apps, "workspaces", "capabilities")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('capabilities', '0008_workspaces_leave'),
        ('agenticos', '0004_api_key_scope_and_expiry'),
        ('agents', '0012_compacted_history'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Workspace',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('backend', models.CharField(default='state', max_length=16)),
                        ('scope', models.CharField(choices=[('run', 'Run'), ('conversation', 'Conversation'), ('channel', 'Channel'), ('user', 'User'), ('agent', 'Agent')], max_length=16)),
                        ('key', models.CharField(max_length=300)),
                        ('label', models.CharField(blank=True, max_length=300)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('last_used_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('agent', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='workspaces', to='agents.agent')),
                        ('conversation', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.conversation')),
                        ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agenticos.organization')),
                    ],
                    options={
                        'db_table': 'capabilities_workspace',
                    },
                ),
                migrations.CreateModel(
                    name='WorkspaceFile',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('path', models.CharField(max_length=1000)),
                        ('is_dir', models.BooleanField(default=False)),
                        ('data', models.BinaryField(default=b'')),
                        ('size', models.PositiveBigIntegerField(default=0)),
                        ('created_by_run', models.UUIDField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='files', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'capabilities_workspacefile',
                        'ordering': ['path'],
                    },
                ),
                migrations.CreateModel(
                    name='WorkspaceUse',
                    fields=[
                        ('id', models.BigAutoField(primary_key=True, serialize=False)),
                        ('last_used_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('conversation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.conversation')),
                        ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='uses', to='workspaces.workspace')),
                    ],
                    options={
                        'db_table': 'capabilities_workspaceuse',
                    },
                ),
                migrations.CreateModel(
                    name='SandboxConnection',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('name', models.CharField(max_length=80)),
                        ('kind', models.CharField(choices=[('sandboxd', 'sandboxd'), ('daytona', 'Daytona')], default='sandboxd', max_length=16)),
                        ('url', models.CharField(blank=True, max_length=2000)),
                        ('is_deployment', models.BooleanField(default=False)),
                        ('is_default', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('organization', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sandbox_connections', to='agenticos.organization')),
                        ('secret', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='agenticos.secret')),
                    ],
                    options={
                        'db_table': 'capabilities_sandboxconnection',
                        'ordering': ['name'],
                        'constraints': [models.UniqueConstraint(fields=('organization', 'name'), name='sandbox_connection_name_unique'), models.UniqueConstraint(condition=models.Q(('is_default', True)), fields=('organization',), name='sandbox_connection_one_default'), models.UniqueConstraint(condition=models.Q(('is_deployment', True)), fields=('organization',), name='sandbox_connection_one_deployment')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='workspace',
                    constraint=models.UniqueConstraint(fields=('organization', 'agent', 'backend', 'scope', 'key'), name='workspace_unique_per_scope_key'),
                ),
                migrations.AddIndex(
                    model_name='workspacefile',
                    index=models.Index(fields=['workspace', 'created_by_run'], name='wsfile_run'),
                ),
                migrations.AddConstraint(
                    model_name='workspacefile',
                    constraint=models.UniqueConstraint(fields=('workspace', 'path'), name='workspace_file_path_unique'),
                ),
                migrations.AddIndex(
                    model_name='workspaceuse',
                    index=models.Index(fields=['conversation', '-last_used_at'], name='wsuse_conv_recent'),
                ),
                migrations.AddConstraint(
                    model_name='workspaceuse',
                    constraint=models.UniqueConstraint(fields=('workspace', 'conversation'), name='workspace_use_unique'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_content_types_follow, _content_types_return),
    ]
