"""Operator console for knowledge: collections and documents (ingestion status), context files, skills,
memory notes (content hidden: reading a person's notes goes through the audited endpoint)."""

from __future__ import annotations

from django.contrib import admin

from knowledge.models import Collection, ContextFile, Document, MemoryNote, Skill, SkillProposal


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "visibility", "embedding_profile", "created_at")
    list_filter = ("visibility", "organization")
    search_fields = ("name",)
    raw_id_fields = ("organization", "embedding_profile", "created_by")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("name", "collection", "kind", "status", "chunk_count", "created_at", "ingested_at")
    list_filter = ("status", "kind", "organization")
    search_fields = ("name", "error")
    readonly_fields = ("sha256", "size", "status", "error", "chunk_count", "ingested_fingerprint", "ingested_at")
    raw_id_fields = ("organization", "collection", "created_by")


@admin.register(ContextFile)
class ContextFileAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "mode", "updated_at")
    list_filter = ("mode", "organization")
    search_fields = ("name",)
    raw_id_fields = ("organization", "created_by")


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "updated_at")
    search_fields = ("name", "description")
    raw_id_fields = ("organization", "created_by")


@admin.register(SkillProposal)
class SkillProposalAdmin(admin.ModelAdmin):
    list_display = ("skill", "path", "status", "created_at", "decided_by")
    list_filter = ("status",)
    raw_id_fields = ("organization", "skill", "run", "decided_by")


@admin.register(MemoryNote)
class MemoryNoteAdmin(admin.ModelAdmin):
    list_display = ("name", "agent", "owner_user", "chat_key", "status", "updated_at")
    list_filter = ("status",)
    exclude = ("content",)  # a person's notes are read only through the audited endpoint
    raw_id_fields = ("organization", "agent", "owner_user")
