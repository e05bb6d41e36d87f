"""Extended statistics on (organization_id, surface) of conversations.

Conversation search asks for an organization's channel threads (`knowledge.conversations.CHANNEL_SQL`). The two
columns are correlated — one organization's conversations are all web chats while another's are Slack
threads — and without this the planner multiplied their separate frequencies, expected hundreds of channel
threads in an organization that has none, and scanned every conversation of the table on every search
(23 ms at 59k conversations in bench/retrieval.py) instead of the partial index conv_channel_threads (0.35 ms).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("agents", "0005_message_corpus_key")]

    operations = [
        migrations.RunSQL(
            "CREATE STATISTICS IF NOT EXISTS conv_org_surface (mcv) ON organization_id, surface "
            "FROM agents_conversation; ANALYZE agents_conversation;",
            "DROP STATISTICS IF EXISTS conv_org_surface;",
        ),
    ]
