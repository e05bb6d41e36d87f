"""What an agent knows: knowledge collections (documents → chunks with pgvector + tsvector), context
files, skills, and memory notes.

Embeddings have the dimension of whichever model made them, so `Chunk.embedding` is an untyped `vector`
with its length in `embedding_dims`; HNSW indexes are partial expression indexes, one per common length
(migration 0002), and the search casts to the same expression so the planner uses them.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from agenticos.models import Organization

# Lengths that get an HNSW index (pgvector indexes `vector` up to 2,000 dimensions).
INDEXED_DIMENSIONS = (384, 768, 1024, 1536)


class Collection(models.Model):
    class Visibility(models.TextChoices):
        ORGANIZATION = "organization", "Everyone in the organization"
        PRIVATE = "private", "Its creator and the people it is shared with"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="collections")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # None = lexical search only (said plainly in the tool's result).
    embedding_profile = models.ForeignKey(
        "agents.ModelProfile", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Who sees it without a grant (knowledge/grants.py decides access; grants are guardian rows).
    visibility = models.CharField(max_length=12, choices=Visibility.choices, default=Visibility.ORGANIZATION)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="collection_unique_name"),
            models.CheckConstraint(condition=Q(visibility__in=["organization", "private"]),
                                   name="collection_visibility_valid"),
        ]
        # Grant levels (knowledge/grants.py): view (the default permission) < use < edit.
        permissions = [
            ("use_collection", "Bind the collection to agents"),
            ("edit_collection", "Change the collection and its documents, and share it"),
        ]

    def __str__(self) -> str:
        return self.name


class DocumentKind(models.TextChoices):
    PDF = "pdf", "PDF"
    PRESENTATION = "pptx", "Presentation"
    DOCX = "docx", "Word document"
    DOC = "doc", "Word 97-2003 document"
    ODT = "odt", "OpenDocument text"
    RTF = "rtf", "Rich Text Format"
    MARKDOWN = "md", "Markdown"
    HTML = "html", "Web page"
    CSV = "csv", "CSV"
    XLSX = "xlsx", "Spreadsheet"
    TEXT = "txt", "Plain text"
    IMAGE = "image", "Image"


# Kinds whose citations name a page a reader can open (spec: PDF, presentations, .doc/.odt/.rtf). For the
# word-processor formats the page is the one the file itself records (see knowledge/parsers.py); a file
# that records no page boundary gives no page, rather than calling a long document "page 1".
PAGED_KINDS = frozenset({DocumentKind.PDF, DocumentKind.PRESENTATION, DocumentKind.DOC, DocumentKind.ODT,
                         DocumentKind.RTF})


class Document(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be ingested"
        PROCESSING = "processing", "Being ingested"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="documents")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=300)
    kind = models.CharField(max_length=8, choices=DocumentKind.choices)
    file = models.FileField(upload_to="knowledge/%Y/%m/", max_length=500)
    size = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # Business filters (self-query can infer them; the model can pass them).
    source = models.CharField(max_length=200, blank=True)
    doc_type = models.CharField(max_length=100, blank=True)
    org_unit = models.CharField(max_length=200, blank=True)
    document_date = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    # sha256 + embedding profile of the last successful ingestion: re-ingesting the same pair is a no-op.
    ingested_fingerprint = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    ingested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["collection", "name"]
        indexes = [models.Index(fields=["organization", "collection", "status"], name="document_org_coll_status")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "processing", "ready", "failed"]),
                                   name="document_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_pages(self) -> bool:
        return self.kind in PAGED_KINDS


class Chunk(models.Model):
    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="chunks")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    # Order within the document; neighbours (position ± 1) are contiguous text (no overlap).
    position = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    embedding = VectorField(null=True, blank=True)
    embedding_dims = models.PositiveSmallIntegerField(null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document", "position"]
        constraints = [models.UniqueConstraint(fields=["document", "position"], name="chunk_unique_position")]
        indexes = [
            GinIndex(fields=["search_vector"], name="chunk_search_gin"),
            models.Index(fields=["organization", "collection"], name="chunk_org_collection"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


# ------------------------------------------------------------------ context files


class ContextFile(models.Model):
    class Mode(models.TextChoices):
        INJECT = "inject", "Inserted in the instructions"
        LINK = "link", "Read on demand with read_context"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="context_files")
    name = models.CharField(max_length=200)
    description = models.CharField(max_length=500, blank=True)
    format = models.CharField(max_length=20, default="markdown")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.INJECT)
    body = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="contextfile_unique_name"),
            models.CheckConstraint(condition=Q(mode__in=["inject", "link"]), name="contextfile_mode_valid"),
        ]

    def __str__(self) -> str:
        return self.name


# ------------------------------------------------------------------ skills


class Skill(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="skills")
    # From the SKILL.md front matter: a slug-like name and a one-paragraph description.
    name = models.CharField(max_length=64)
    description = models.CharField(max_length=1024)
    body = models.TextField(blank=True)  # SKILL.md without its front matter
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="skill_unique_name")]

    def __str__(self) -> str:
        return self.name


class SkillFile(models.Model):
    """A resource file shipped next to SKILL.md (text)."""

    id = models.BigAutoField(primary_key=True)
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=300)
    content = models.TextField(blank=True)

    class Meta:
        ordering = ["skill", "path"]
        constraints = [models.UniqueConstraint(fields=["skill", "path"], name="skillfile_unique_path")]

    def __str__(self) -> str:
        return self.path


class SkillProposal(models.Model):
    """An agent's edit of a materialized skill file, waiting for someone with skills:edit."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DISCARDED = "discarded", "Discarded"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="proposals")
    path = models.CharField(max_length=300)
    content = models.TextField(blank=True)
    run = models.ForeignKey("agents.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.skill} {self.path} ({self.status})"


# ------------------------------------------------------------------ memory notes


class MemoryNote(models.Model):
    """One note in exactly one store: a person's (owner_user) or a group chat's (chat_key), per agent."""

    class Status(models.TextChoices):
        ACTIVE = "active", "In use"
        SUSPENDED = "suspended", "Suspended by the person"

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="memory_notes")
    owner_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="memory_notes"
    )
    chat_key = models.CharField(max_length=300, blank=True)
    name = models.CharField(max_length=200)
    content = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "owner_user", "chat_key", "name"],
                name="memorynote_unique_name_per_store",
                nulls_distinct=False,
            ),
            # Exactly one owner: a person or a group chat.
            models.CheckConstraint(
                condition=(Q(owner_user__isnull=False) & Q(chat_key="")) | (Q(owner_user__isnull=True) & ~Q(chat_key="")),
                name="memorynote_exactly_one_owner",
            ),
        ]
        indexes = [models.Index(fields=["organization", "owner_user"], name="memorynote_org_owner")]

    def __str__(self) -> str:
        return self.name
