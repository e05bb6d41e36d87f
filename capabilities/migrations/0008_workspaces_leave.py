# The workspace and sandbox-connection models moved to the workspaces app (workspaces/migrations/0001): state
# only — their tables keep their names, no row moves.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("capabilities", "0007_jail_identity"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="WorkspaceUse"),
                migrations.DeleteModel(name="WorkspaceFile"),
                migrations.DeleteModel(name="Workspace"),
                migrations.DeleteModel(name="SandboxConnection"),
            ],
            database_operations=[],
        ),
    ]
