"""Conversation search: every searchable message carries one lexeme naming whose corpus it is in.

`agents_message.search_vector` (maintained by the database since 0002) gets one extra lexeme,
`' p<organization id>/<owner id>'`, on user and assistant messages of a conversation that has an owner and
is not a trigger run log (surface "schedule"). The text-search parser never emits a space, so no query
can produce or match that lexeme by itself; conversation search ANDs it into the person's query, so the
GIN index returns only the person's own matching messages instead of every match in every organization
(which the join to the conversation then had to throw away: the cost grew with the whole table).

The lexeme follows the conversation: changing its owner, organization or surface rewrites its messages'
vectors. A partial index lists an organization's channel threads (the other part of the corpus) without
reading all its conversations. Ranking is unchanged: `ts_rank_cd` and `ts_headline` only look at the query's own lexemes.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION agents_message_vector(body text, conversation uuid, message_role text)
RETURNS tsvector AS $$
DECLARE
    words tsvector := to_tsvector('simple', coalesce(body, ''));
    org text;
    owner text;
BEGIN
    IF message_role NOT IN ('user', 'assistant') THEN
        RETURN words;
    END IF;
    SELECT c.organization_id::text, c.owner_id::text INTO org, owner FROM agents_conversation c
    WHERE c.id = conversation AND c.owner_id IS NOT NULL AND c.surface <> 'schedule';
    IF owner IS NULL THEN
        RETURN words;
    END IF;
    RETURN words || array_to_tsvector(ARRAY[' p' || org || '/' || owner])
        || array_to_tsvector(ARRAY(SELECT lexeme || ' ' || owner FROM unnest(tsvector_to_array(words)) AS lexeme));
EXCEPTION WHEN program_limit_exceeded THEN
    -- a text so large its doubled vector passes tsvector's 1 MB: the corpus lexeme alone
    RETURN words || array_to_tsvector(ARRAY[' p' || org || '/' || owner]);
END;
$$ LANGUAGE plpgsql STABLE;

CREATE OR REPLACE FUNCTION agents_message_search_vector() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := agents_message_vector(NEW.content, NEW.conversation_id, NEW.role);
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agents_message_search_vector_trg ON agents_message;
CREATE TRIGGER agents_message_search_vector_trg BEFORE INSERT OR UPDATE OF content, conversation_id, role
    ON agents_message FOR EACH ROW EXECUTE FUNCTION agents_message_search_vector();

CREATE OR REPLACE FUNCTION agents_conversation_corpus_key() RETURNS trigger AS $$
BEGIN
    UPDATE agents_message SET search_vector = agents_message_vector(content, conversation_id, role)
    WHERE conversation_id = NEW.id;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agents_conversation_corpus_key_trg ON agents_conversation;
CREATE TRIGGER agents_conversation_corpus_key_trg AFTER UPDATE OF owner_id, organization_id, surface
    ON agents_conversation FOR EACH ROW
    WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.organization_id IS DISTINCT FROM NEW.organization_id
          OR OLD.surface IS DISTINCT FROM NEW.surface)
    EXECUTE FUNCTION agents_conversation_corpus_key();

UPDATE agents_message SET search_vector = agents_message_vector(content, conversation_id, role)
WHERE role IN ('user', 'assistant');

CREATE INDEX IF NOT EXISTS conv_channel_threads ON agents_conversation (organization_id)
    WHERE surface IN ('slack', 'telegram', 'mattermost');
"""

BACKWARD = """
DROP INDEX IF EXISTS conv_channel_threads;
DROP TRIGGER IF EXISTS agents_conversation_corpus_key_trg ON agents_conversation;
DROP FUNCTION IF EXISTS agents_conversation_corpus_key();
CREATE OR REPLACE FUNCTION agents_message_search_vector() RETURNS trigger AS $$
BEGIN
    NEW.search_vector := to_tsvector('simple', coalesce(NEW.content, ''));
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS agents_message_search_vector_trg ON agents_message;
CREATE TRIGGER agents_message_search_vector_trg BEFORE INSERT OR UPDATE OF content ON agents_message
    FOR EACH ROW EXECUTE FUNCTION agents_message_search_vector();
DROP FUNCTION IF EXISTS agents_message_vector(text, uuid, text);
UPDATE agents_message SET search_vector = to_tsvector('simple', coalesce(content, ''))
WHERE role IN ('user', 'assistant');
"""


class Migration(migrations.Migration):
    dependencies = [("agents", "0004_avatar_and_logo")]

    operations = [migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)]
