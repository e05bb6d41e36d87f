from django.db import migrations

IMMUTABLE_VERSIONS = """
CREATE OR REPLACE FUNCTION agents_agentversion_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'agent versions are immutable (version %)', OLD.id USING ERRCODE = 'check_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER agents_agentversion_no_update BEFORE UPDATE ON agents_agentversion
    FOR EACH ROW EXECUTE FUNCTION agents_agentversion_immutable();
"""

# The database keeps the search vector true on every write (simple config: no stemming).
MESSAGE_SEARCH = """
CREATE OR REPLACE FUNCTION agents_message_search_vector() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := to_tsvector('simple', coalesce(NEW.content, ''));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER agents_message_search_vector_trg BEFORE INSERT OR UPDATE OF content ON agents_message
    FOR EACH ROW EXECUTE FUNCTION agents_message_search_vector();
"""


class Migration(migrations.Migration):
    dependencies = [("agents", "0001_initial")]

    operations = [
        migrations.RunSQL(
            IMMUTABLE_VERSIONS,
            reverse_sql="DROP TRIGGER IF EXISTS agents_agentversion_no_update ON agents_agentversion;"
            "DROP FUNCTION IF EXISTS agents_agentversion_immutable();",
        ),
        migrations.RunSQL(
            MESSAGE_SEARCH,
            reverse_sql="DROP TRIGGER IF EXISTS agents_message_search_vector_trg ON agents_message;"
            "DROP FUNCTION IF EXISTS agents_message_search_vector();",
        ),
    ]
