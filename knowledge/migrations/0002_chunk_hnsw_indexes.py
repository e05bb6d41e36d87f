"""HNSW indexes on chunk embeddings: one partial expression index per common embedding length.

The column is an untyped `vector` (each collection's model decides the length); an HNSW index needs a
fixed length, so each index casts and is limited to rows of that length. The search uses the same
expression (`embedding::vector(N)` with `embedding_dims = N`).
"""

from django.db import migrations

SQL = """
CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_384 ON knowledge_chunk USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE embedding_dims = 384;
CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_768 ON knowledge_chunk USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE embedding_dims = 768;
CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_1024 ON knowledge_chunk USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE embedding_dims = 1024;
CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_1536 ON knowledge_chunk USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE embedding_dims = 1536;
"""

REVERSE = """
DROP INDEX IF EXISTS chunk_embedding_hnsw_384;
DROP INDEX IF EXISTS chunk_embedding_hnsw_768;
DROP INDEX IF EXISTS chunk_embedding_hnsw_1024;
DROP INDEX IF EXISTS chunk_embedding_hnsw_1536;
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [migrations.RunSQL(SQL, reverse_sql=REVERSE)]
