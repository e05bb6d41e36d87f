"""Every state change of custom tools, kits and drafts: in a transaction, with an audit row.

Lifecycle of a draft (spec "Ciclo de vida del borrador"):
    draft → configured (method, URL, parameters set; warnings attachable from here on)
          → tested (a real call ran; its compact preview sits beside the draft, the full response apart)
          → validated (the test passed; sample outputs attachable from here on)
          → created (finalize: an independent CustomTool in the account)
A failed test returns the draft to configured. Re-configuring any later state returns it to configured.
"""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError

from agenticos import audit, vault
from agenticos.errors import Conflict, Invalid, NotFound
from agenticos.models import Secret
from agenticos.tenancy import Actor
from capabilities.custom_tools import runtime
from capabilities.custom_tools.capability import definition_of
from capabilities.custom_tools.schema import Definition, ToolWarning
from capabilities.models import CustomTool, ToolBuilderSession, ToolDraft, ToolKit

DEFINITION_FIELDS = ("name", "alias", "description", "usage_notes", "method", "url", "parameters", "auth", "tags",
                     "timeout_secs")


def _problems(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    out = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"])
        out.append({"field": f"{prefix}{path}" if path else prefix.rstrip(".") or "definition",
                    "message": err["msg"].removeprefix("Value error, ")})
    return out


def parse_definition(data: dict[str, Any], prefix: str = "") -> Definition:
    try:
        return Definition.model_validate(data)
    except ValidationError as exc:
        raise Invalid("The tool definition is invalid.", details={"problems": _problems(exc, prefix)}) from None


def _field_problem(field: str, message: str) -> Invalid:
    return Invalid(message, details={"problems": [{"field": field, "message": message}]})


def parse_warnings(items: Any) -> list[dict[str, Any]]:
    if items is not None and not isinstance(items, list):  # a number or an object is not iterated into a 500
        raise _field_problem("warnings", "A list of warnings ({level, text}).")
    try:
        return [ToolWarning.model_validate(i).model_dump() for i in (items or [])]
    except ValidationError as exc:
        raise Invalid("A warning is invalid.", details={"problems": _problems(exc, "warnings.")}) from None


def credential_for(actor: Actor, credential_id: Any) -> Secret | None:
    """A secret of the actor's organization the actor may use, or None. Missing and foreign read the same."""
    if not credential_id:
        return None
    actor.require("secrets:view")
    secret = Secret.objects.filter(organization=actor.organization, pk=_uuid_or_none(credential_id)).first()
    if secret is None:
        raise Invalid("No such secret in this organization.",
                      details={"problems": [{"field": "credential_id", "message": "No such secret in this organization."}]})
    return secret


def _uuid_or_none(value: Any):
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _apply(tool: CustomTool, definition: Definition) -> None:
    data = definition.model_dump(mode="json")
    for key in DEFINITION_FIELDS:
        setattr(tool, key, data[key])


def _save_unique(tool: CustomTool) -> None:
    try:
        with transaction.atomic():
            tool.save()
    except IntegrityError:
        raise Conflict(f"A tool with the alias {tool.alias!r} already exists in this organization.",
                       details={"field": "alias"}) from None


# ------------------------------------------------------------------ tools


def create_tool(*, actor: Actor, definition: dict[str, Any], credential_id: Any = None,
                warnings: Any = None, sample_outputs: Any = None, kit_name: str = "",
                template_key: str = "") -> CustomTool:
    parsed = parse_definition(definition)
    credential = credential_for(actor, credential_id)
    with transaction.atomic():
        tool = CustomTool(organization=actor.organization, credential=credential, created_by=actor.user,
                          warnings=parse_warnings(warnings), sample_outputs=list(sample_outputs or []),
                          kit_name=kit_name, template_key=template_key)
        _apply(tool, parsed)
        _save_unique(tool)
        audit.record(actor=actor.user, organization=actor.organization, action="custom_tool.created", target=tool,
                     details={"alias": tool.alias, "kit": kit_name, "template": template_key},
                     ip_address=actor.extra.get("ip"))
    return tool


def update_tool(*, actor: Actor, tool: CustomTool, changes: dict[str, Any]) -> CustomTool:
    current = definition_of(tool).model_dump(mode="json")
    current.update({k: v for k, v in changes.items() if k in DEFINITION_FIELDS})
    parsed = parse_definition(current)
    with transaction.atomic():
        tool = CustomTool.objects.select_for_update().get(pk=tool.pk)
        _apply(tool, parsed)
        if "credential_id" in changes:
            tool.credential = credential_for(actor, changes["credential_id"])
        if "warnings" in changes:
            tool.warnings = parse_warnings(changes["warnings"])
        tool.updated_at = timezone.now()
        _save_unique(tool)
        audit.record(actor=actor.user, organization=actor.organization, action="custom_tool.updated", target=tool,
                     details={"fields": sorted(changes)}, ip_address=actor.extra.get("ip"))
    return tool


def delete_tool(*, actor: Actor, tool: CustomTool) -> None:
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="custom_tool.deleted", target=tool,
                     ip_address=actor.extra.get("ip"))
        tool.delete()


def _secret_value(secret: Secret | None) -> str | None:
    return vault.reveal(secret) if secret is not None else None


def run_test_call(definition: Definition, secret: Secret | None, args: dict[str, Any]) -> runtime.Outcome:
    """One real call to the configured URL (never faked: the point is to see what the provider says)."""
    return async_to_sync(runtime.invoke)(definition, args or {}, _secret_value(secret))


def _summary(outcome: runtime.Outcome) -> dict[str, Any]:
    ok = outcome.kind == "ok"
    shown = outcome.body if ok else outcome.message
    return {"ok": ok, "kind": outcome.kind, "status": outcome.status, "preview": runtime.preview(shown),
            "full": shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False, default=str)}


def _test_args(args: Any) -> dict[str, Any]:
    """A test call's arguments: an object by name (none: no arguments); anything else is the caller's 422."""
    args = args or {}
    if not isinstance(args, dict):
        raise _field_problem("args", "An object: the arguments by name.")
    return args


def test_tool(*, actor: Actor, tool: CustomTool, args: Any) -> dict[str, Any]:
    outcome = run_test_call(definition_of(tool), tool.credential, _test_args(args))
    result = _summary(outcome)
    with transaction.atomic():
        audit.record(actor=actor.user, organization=actor.organization, action="custom_tool.tested", target=tool,
                     details={"ok": result["ok"], "status": result["status"]}, ip_address=actor.extra.get("ip"))
    return {k: v for k, v in result.items() if k != "full"}


# ------------------------------------------------------------------ builder sessions, kits, drafts


def create_session(*, actor: Actor, title: str = "") -> ToolBuilderSession:
    with transaction.atomic():
        session = ToolBuilderSession.objects.create(organization=actor.organization, title=title[:200],
                                                    created_by=actor.user)
        audit.record(actor=actor.user, organization=actor.organization, action="tool_session.created",
                     target=session, target_name=session.title or "tool builder")
    return session


def restart_session(*, actor: Actor, session: ToolBuilderSession) -> None:
    """Start over: drop every kit not yet finalized (created tools stay: they are independent)."""
    with transaction.atomic():
        dropped = session.kits.filter(status=ToolKit.Status.OPEN)
        count = dropped.count()
        dropped.delete()
        audit.record(actor=actor.user, organization=actor.organization, action="tool_session.restarted",
                     target=session, target_name=session.title or "tool builder", details={"kits_dropped": count})


def create_kit(*, actor: Actor, session: ToolBuilderSession, name: str, provider: str = "",
               credential_id: Any = None, warnings: Any = None) -> ToolKit:
    if not name.strip():
        raise Invalid("A kit needs a name.", details={"problems": [{"field": "name", "message": "Required."}]})
    credential = credential_for(actor, credential_id)
    with transaction.atomic():
        kit = ToolKit.objects.create(organization=actor.organization, session=session, name=name.strip()[:200],
                                     provider=provider[:120], credential=credential,
                                     warnings=parse_warnings(warnings))
        audit.record(actor=actor.user, organization=actor.organization, action="tool_kit.created", target=kit)
    return kit


def _open_kit(kit: ToolKit) -> None:
    if kit.status != ToolKit.Status.OPEN:
        raise Conflict("This kit is finalized; start a new kit to add tools.")


def add_draft(*, actor: Actor, kit: ToolKit, name: str) -> ToolDraft:
    _open_kit(kit)
    if not name.strip():
        raise Invalid("A draft needs a name.", details={"problems": [{"field": "name", "message": "Required."}]})
    with transaction.atomic():
        draft = ToolDraft.objects.create(organization=actor.organization, kit=kit, name=name.strip()[:120])
        audit.record(actor=actor.user, organization=actor.organization, action="tool_draft.created", target=draft)
    return draft


def _locked(draft: ToolDraft) -> ToolDraft:
    return ToolDraft.objects.select_for_update().select_related("kit").get(pk=draft.pk)


def configure_draft(*, actor: Actor, draft: ToolDraft, definition: dict[str, Any]) -> ToolDraft:
    parsed = parse_definition(definition, "definition.")
    with transaction.atomic():
        draft = _locked(draft)
        _open_kit(draft.kit)
        if draft.state == ToolDraft.State.CREATED:
            raise Conflict("This tool was already created; edit it in the manual builder.")
        draft.definition = parsed.model_dump(mode="json")
        draft.state = ToolDraft.State.CONFIGURED
        draft.test_ok = None
        draft.save()
        audit.record(actor=actor.user, organization=actor.organization, action="tool_draft.configured", target=draft,
                     details={"alias": parsed.alias})
    return draft


def test_draft(*, actor: Actor, draft: ToolDraft, args: Any = None) -> ToolDraft:
    """A real call; passed → validated (preview beside the draft, full response apart); failed → configured."""
    args = _test_args(args)
    if draft.state in (ToolDraft.State.DRAFT, ToolDraft.State.CREATED):
        raise Conflict(f"A {draft.state} draft cannot be tested: configure it first." if draft.state == "draft"
                       else "This tool was already created.")
    _open_kit(draft.kit)
    definition = Definition.model_validate(draft.definition)
    outcome = run_test_call(definition, draft.kit.credential, args)
    result = _summary(outcome)
    with transaction.atomic():
        draft = _locked(draft)
        draft.state = ToolDraft.State.TESTED
        draft.test_args = args or {}
        draft.test_status = outcome.status
        draft.test_ok = result["ok"]
        draft.test_preview = result["preview"]
        draft.test_full = result["full"]
        draft.test_error = "" if result["ok"] else outcome.message
        draft.tested_at = timezone.now()
        draft.save()
        audit.record(actor=actor.user, organization=actor.organization, action="tool_draft.tested", target=draft,
                     details={"ok": result["ok"], "status": outcome.status})
        # The tested state is where the preview is recorded; the outcome decides the next state.
        draft.state = ToolDraft.State.VALIDATED if result["ok"] else ToolDraft.State.CONFIGURED
        draft.save(update_fields=["state"])
    return draft


def attach_warning(*, actor: Actor, draft: ToolDraft, level: str, text: str) -> ToolDraft:
    warning = parse_warnings([{"level": level, "text": text}])[0]
    with transaction.atomic():
        draft = _locked(draft)
        _open_kit(draft.kit)
        if draft.state in (ToolDraft.State.DRAFT, ToolDraft.State.CREATED):
            raise Conflict("Warnings can be attached from configured on, before the tool is created.")
        draft.warnings = [*draft.warnings, warning]
        draft.save(update_fields=["warnings"])
        audit.record(actor=actor.user, organization=actor.organization, action="tool_draft.warning_added",
                     target=draft, details=warning)
    return draft


def attach_sample(*, actor: Actor, draft: ToolDraft, label: str = "", content: Any = None) -> ToolDraft:
    with transaction.atomic():
        draft = _locked(draft)
        _open_kit(draft.kit)
        if draft.state != ToolDraft.State.VALIDATED:
            raise Conflict("Sample outputs can be attached once the draft is validated.")
        sample = {"label": label[:120] or "sample",
                  "content": runtime.preview(content if content is not None else draft.test_full, 4000)}
        draft.sample_outputs = [*draft.sample_outputs, sample]
        draft.save(update_fields=["sample_outputs"])
        audit.record(actor=actor.user, organization=actor.organization, action="tool_draft.sample_added",
                     target=draft, details={"label": sample["label"]})
    return draft


ASYNC_HINTS = ("job", "queue", "async", "poll", "submit")


def _async_without_warning(draft: ToolDraft) -> bool:
    """A tool whose last test answered 202 Accepted is async; it is never published without a warning."""
    return draft.test_status == 202 and not draft.warnings and not draft.kit.warnings


def finalize_kit(*, actor: Actor, kit: ToolKit) -> list[CustomTool]:
    """Create each validated draft as an independent tool; kit warnings travel with each tool."""
    with transaction.atomic():
        kit = ToolKit.objects.select_for_update().get(pk=kit.pk)
        _open_kit(kit)
        drafts = list(kit.drafts.select_for_update().order_by("created_at"))
        not_ready = [d.name for d in drafts if d.state != ToolDraft.State.VALIDATED]
        if not drafts or not_ready:
            raise Conflict("Every tool of a kit must pass a real test before the kit is finalized.",
                           details={"not_validated": not_ready})
        unwarned = [d.name for d in drafts if _async_without_warning(d)]
        if unwarned:
            raise Conflict("These tools answered asynchronously (202) and need a warning before they are created.",
                           details={"needs_warning": unwarned})
        created = []
        for draft in drafts:
            definition = Definition.model_validate(draft.definition)
            tool = CustomTool(organization=actor.organization, credential=kit.credential, created_by=actor.user,
                              warnings=[*kit.warnings, *draft.warnings], sample_outputs=draft.sample_outputs,
                              kit_name=kit.name)
            _apply(tool, definition)
            _save_unique(tool)
            draft.state = ToolDraft.State.CREATED
            draft.created_tool = tool
            draft.save(update_fields=["state", "created_tool"])
            created.append(tool)
        kit.status = ToolKit.Status.FINALIZED
        kit.finalized_at = timezone.now()
        kit.save(update_fields=["status", "finalized_at"])
        audit.record(actor=actor.user, organization=actor.organization, action="tool_kit.finalized", target=kit,
                     details={"tools": [t.alias for t in created]})
    return created


def get_draft(actor: Actor, pk: Any) -> ToolDraft:
    draft = ToolDraft.objects.select_related("kit", "kit__credential").filter(
        organization=actor.organization, pk=_uuid_or_none(pk)).first()
    if draft is None:
        raise NotFound("Tool draft not found.")
    return draft
