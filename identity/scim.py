"""SCIM 2.0 (RFC 7643 resources, RFC 7644 protocol) at /scim/v2/: Users and Groups as Entra ID and Okta send them,
each request held to the organization of its bearer token (identity.provisioning does the changes).

Written by hand rather than with django-scim2 or scim2-server: here a SCIM User is a membership of one
organization (its `active` is that membership, not the person's account, who may belong to others), the token
picks the organization, and both IdPs send shapes a strict model refuses (Entra's "Replace" and "False", path-less
replaces keyed by "name.givenName", Okta's `members[value eq "…"]` removals). The protocol surface they use is
small: this file is all of it. Errors are SCIM's error resource (§3.12), which the IdPs read — not the /api/
envelope; the filter grammar is the `attribute eq "value"` both IdPs send (others are refused as invalidFilter).
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from agenticos import ratelimit
from agenticos.models import Membership
from agenticos.strings import digits_only
from identity import provisioning
from identity.models import ScimGroup, ScimToken
from identity.provisioning import Caller, ScimProblem, UserFields

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
CONTENT_TYPE = "application/scim+json"
MAX_COUNT = 200
MAX_BODY = 1024 * 1024
_FILTER = re.compile(r'^\s*([A-Za-z][\w.]*)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)
_MEMBER_PATH = re.compile(r'^members\[\s*value\s+eq\s+"([^"]*)"\s*\]$', re.IGNORECASE)
_EMAIL_PATH = re.compile(r'^emails(\[[^\]]*\])?(\.value)?$', re.IGNORECASE)


def _json(data: Any, status: int = 200) -> JsonResponse:
    return JsonResponse(data, status=status, content_type=CONTENT_TYPE)


def _error(problem: ScimProblem) -> JsonResponse:
    body = {"schemas": [ERROR_SCHEMA], "status": str(problem.status), "detail": problem.message}
    if problem.status == 400 or problem.scim_type in ("uniqueness", "mutability"):
        body["scimType"] = problem.scim_type
    return _json(body, status=problem.status)


def _base(request: HttpRequest) -> str:
    return f"{settings.FRONTEND_URL.rstrip('/')}/scim/v2"


# ------------------------------------------------------------------ the door: token, rate, body


def _caller(request: HttpRequest) -> Caller:
    ip = request.META.get("REMOTE_ADDR")
    scheme, _, raw = (request.META.get("HTTP_AUTHORIZATION") or "").partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw.startswith(provisioning.TOKEN_PREFIX):
        _limit("scim-refused", ip or "-", settings.SCIM_RATE_LIMIT_PER_MINUTE)
        raise ScimProblem("A SCIM bearer token is required.", status=401, scim_type="")
    token = ScimToken.objects.select_related("organization").filter(
        token_hash=provisioning.hash_token(raw), revoked_at__isnull=True).first()
    if token is None:
        _limit("scim-refused", ip or "-", settings.SCIM_RATE_LIMIT_PER_MINUTE)
        raise ScimProblem("The SCIM token is unknown or revoked.", status=401, scim_type="")
    _limit("scim", str(token.pk), settings.SCIM_RATE_LIMIT_PER_MINUTE)
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return Caller(token=token, ip_address=ip)


def _limit(bucket: str, identity: str, per_minute: int) -> None:
    allowed, retry = ratelimit.hit(bucket, identity, per_minute)
    if not allowed:
        problem = ScimProblem(f"Too many requests; retry in {retry} s.", status=429, scim_type="")
        problem.retry_after = retry  # type: ignore[attr-defined]
        raise problem


def _body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY:
        raise ScimProblem("The request is too large.", status=413, scim_type="")
    try:
        data = json.loads(request.body or b"{}")
    except (ValueError, RecursionError):
        raise ScimProblem("The body is not JSON.", scim_type="invalidSyntax") from None
    if not isinstance(data, dict):
        raise ScimProblem("The body is not a JSON object.", scim_type="invalidSyntax")
    return data


def endpoint(handler: Any) -> Any:
    """Authenticate, hand over to `handler(request, caller, *args)`, answer SCIM errors as SCIM's resource."""

    @csrf_exempt
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return handler(request, _caller(request), *args, **kwargs)
        except ScimProblem as problem:
            response = _error(problem)
            if getattr(problem, "retry_after", None):
                response["Retry-After"] = str(problem.retry_after)  # type: ignore[attr-defined]
            if problem.status == 401:
                response["WWW-Authenticate"] = 'Bearer realm="scim"'
            return response

    view.__name__ = handler.__name__
    return view


def _method_not_allowed() -> ScimProblem:
    return ScimProblem("Method not allowed.", status=405, scim_type="")


# ------------------------------------------------------------------ reading SCIM values


def _text(value: Any, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ScimProblem(f"{name} must be text.")
    return str(value)


def _boolean(value: Any) -> bool:
    """Entra sends "True" / "False" as strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ScimProblem("active must be true or false.")


def _primary_email(emails: Any) -> str:
    if not isinstance(emails, list):
        return ""
    entries = [e for e in emails if isinstance(e, dict) and isinstance(e.get("value"), str)]
    primary = [e for e in entries if e.get("primary") in (True, "true", "True")]
    return (primary or entries or [{"value": ""}])[0]["value"]


def _user_fields(data: dict[str, Any]) -> UserFields:
    raw_name = data.get("name")
    name: dict[str, Any] = raw_name if isinstance(raw_name, dict) else {}
    user_name = _text(data.get("userName"), "userName") or _primary_email(data.get("emails"))
    if not user_name:
        raise ScimProblem("userName is required.")
    return UserFields(user_name=user_name, active=_boolean(data["active"]) if "active" in data else True,
                      external_id=_text(data.get("externalId"), "externalId"),
                      given_name=_text(name.get("givenName"), "name.givenName"),
                      family_name=_text(name.get("familyName"), "name.familyName"),
                      display_name=_text(data.get("displayName"), "displayName"))


def _page(request: HttpRequest) -> tuple[int, int]:
    try:
        start = max(int(request.GET.get("startIndex", "1")), 1)
        count = min(max(int(request.GET.get("count", "100")), 0), MAX_COUNT)
    except ValueError:
        raise ScimProblem("startIndex and count are integers.") from None
    return start, count


def _filter(request: HttpRequest, fields: dict[str, str]) -> Q:
    raw = request.GET.get("filter", "")
    if not raw:
        return Q()
    match = _FILTER.match(raw)
    if not match or match.group(1).lower() not in fields:
        raise ScimProblem(f"Filter by {' or '.join(sorted(fields))} with eq.", scim_type="invalidFilter")
    value = match.group(2).replace('\\"', '"').replace("\\\\", "\\")
    column = fields[match.group(1).lower()]
    if column == "pk":
        return Q(pk=int(value)) if digits_only(value) else Q(pk__in=[])
    return Q(**{f"{column}__iexact" if column.endswith("email") else column: value})


def _list(request: HttpRequest, qs: QuerySet[Any], render: Any) -> JsonResponse:
    start, count = _page(request)
    total = qs.count()
    rows = list(qs[start - 1:start - 1 + count]) if count else []
    return _json({"schemas": [LIST_SCHEMA], "totalResults": total, "startIndex": start,
                  "itemsPerPage": len(rows), "Resources": [render(request, r) for r in rows]})


# ------------------------------------------------------------------ Users


def _user_json(request: HttpRequest, membership: Membership) -> dict[str, Any]:
    scim = membership.scim if hasattr(membership, "scim") else None  # the reverse one-to-one raises when absent
    user = membership.user
    given = scim.given_name if scim else user.first_name
    family = scim.family_name if scim else user.last_name
    return {
        "schemas": [USER_SCHEMA],
        "id": str(membership.pk),
        "externalId": scim.external_id if scim and scim.external_id else None,
        "userName": user.email,
        "name": {"givenName": given, "familyName": family, "formatted": f"{given} {family}".strip()},
        "displayName": user.display_name or f"{given} {family}".strip() or user.email,
        "emails": [{"value": user.email, "type": "work", "primary": True}],
        "active": not membership.is_suspended,
        "groups": [{"value": str(g.pk), "display": g.display_name} for g in membership.scim_groups.all()],
        "meta": {"resourceType": "User", "created": membership.created_at.isoformat(),
                 "lastModified": (scim.updated_at if scim else membership.created_at).isoformat(),
                 "location": f"{_base(request)}/Users/{membership.pk}"},
    }


def _members(caller: Caller) -> QuerySet[Membership]:
    return (Membership.objects.filter(organization=caller.organization).select_related("user", "scim")
            .prefetch_related("scim_groups").order_by("pk"))


def _member(caller: Caller, pk: str) -> Membership:
    found = _members(caller).filter(pk=int(pk)).first() if digits_only(str(pk)) and len(str(pk)) < 18 else None
    if found is None:  # another organization's member is as missing as one that never was
        raise ScimProblem("User not found.", status=404, scim_type="")
    return found


USER_FILTERS = {"username": "user__email", "emails.value": "user__email", "emails": "user__email",
                "externalid": "scim__external_id", "id": "pk"}


@endpoint
def users(request: HttpRequest, caller: Caller) -> HttpResponse:
    if request.method == "GET":
        return _list(request, _members(caller).filter(_filter(request, USER_FILTERS)), _user_json)
    if request.method == "POST":
        membership = provisioning.create_user(caller, _user_fields(_body(request)))
        response = _json(_user_json(request, _member(caller, str(membership.pk))), status=201)
        response["Location"] = f"{_base(request)}/Users/{membership.pk}"
        return response
    raise _method_not_allowed()


def _user_patch(data: dict[str, Any]) -> dict[str, Any]:
    """RFC 7644 §3.5.2 as the IdPs send it, read into UserFields' names."""
    if PATCH_SCHEMA not in (data.get("schemas") or []) or not isinstance(data.get("Operations"), list):
        raise ScimProblem("A PatchOp message with Operations is expected.", scim_type="invalidSyntax")
    changes: dict[str, Any] = {}
    for op in data["Operations"]:
        if not isinstance(op, dict) or str(op.get("op", "")).lower() not in ("add", "replace", "remove"):
            raise ScimProblem("Each operation is add, replace or remove.", scim_type="invalidSyntax")
        kind, path, value = str(op["op"]).lower(), op.get("path"), op.get("value")
        if path is None:
            if not isinstance(value, dict):
                raise ScimProblem("A path-less operation's value is an object.", scim_type="invalidValue")
            items = list(value.items())
        else:
            items = [(path, None if kind == "remove" else value)]
        for key, item in items:
            changes.update(_user_change(str(key), item))
    return changes


def _user_change(path: str, value: Any) -> dict[str, Any]:
    lowered = path.lower()
    if lowered.startswith(USER_SCHEMA.lower() + ":"):
        lowered = lowered[len(USER_SCHEMA) + 1:]
    if lowered == "active":
        return {"active": _boolean(value)}
    if lowered == "username":
        return {"user_name": _text(value, "userName")}
    if _EMAIL_PATH.match(lowered):
        email = _primary_email(value) if isinstance(value, list) else _text(value, "emails")
        return {"user_name": email} if email else {}
    if lowered == "externalid":
        return {"external_id": _text(value, "externalId")}
    if lowered == "displayname":
        return {"display_name": _text(value, "displayName")}
    if lowered == "name" and isinstance(value, dict):
        return {**({"given_name": _text(value.get("givenName"), "givenName")} if "givenName" in value else {}),
                **({"family_name": _text(value.get("familyName"), "familyName")} if "familyName" in value else {})}
    if lowered == "name.givenname":
        return {"given_name": _text(value, "name.givenName")}
    if lowered == "name.familyname":
        return {"family_name": _text(value, "name.familyName")}
    return {}  # attributes this platform does not keep (title, phone numbers, the enterprise extension)


@endpoint
def user(request: HttpRequest, caller: Caller, pk: str) -> HttpResponse:
    membership = _member(caller, pk)
    if request.method == "GET":
        return _json(_user_json(request, membership))
    if request.method == "PATCH":
        provisioning.update_user(caller, membership, _user_patch(_body(request)))
    elif request.method == "PUT":  # Okta replaces the whole resource
        fields = _user_fields(_body(request))
        provisioning.update_user(caller, membership, {
            "user_name": fields.user_name, "external_id": fields.external_id, "given_name": fields.given_name,
            "family_name": fields.family_name, "display_name": fields.display_name, "active": fields.active})
    elif request.method == "DELETE":
        provisioning.delete_user(caller, membership)
        return HttpResponse(status=204)
    else:
        raise _method_not_allowed()
    return _json(_user_json(request, _member(caller, pk)))


# ------------------------------------------------------------------ Groups


def _group_json(request: HttpRequest, group: ScimGroup, *, with_members: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schemas": [GROUP_SCHEMA], "id": str(group.pk), "displayName": group.display_name,
        "externalId": group.external_id or None,
        "meta": {"resourceType": "Group", "created": group.created_at.isoformat(),
                 "lastModified": group.updated_at.isoformat(), "location": f"{_base(request)}/Groups/{group.pk}"},
    }
    if with_members:
        body["members"] = [{"value": str(m.pk), "display": m.user.email}
                           for m in group.members.select_related("user").order_by("pk")]
    return body


def _groups(caller: Caller) -> QuerySet[ScimGroup]:
    return ScimGroup.objects.filter(organization=caller.organization).order_by("pk")


def _group(caller: Caller, pk: str) -> ScimGroup:
    found = _groups(caller).filter(pk=int(pk)).first() if digits_only(str(pk)) and len(str(pk)) < 18 else None
    if found is None:
        raise ScimProblem("Group not found.", status=404, scim_type="")
    return found


def _member_ids(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) and "value" in v for v in value):
        raise ScimProblem('members is a list of {"value": id}.')
    return [_text(v["value"], "members.value") for v in value]


def _wants_members(request: HttpRequest) -> bool:
    return "members" not in request.GET.get("excludedAttributes", "").lower().split(",")


GROUP_FILTERS = {"displayname": "display_name", "externalid": "external_id", "id": "pk"}


@endpoint
def groups(request: HttpRequest, caller: Caller) -> HttpResponse:
    if request.method == "GET":
        with_members = _wants_members(request)
        return _list(request, _groups(caller).filter(_filter(request, GROUP_FILTERS)),
                     lambda req, g: _group_json(req, g, with_members=with_members))
    if request.method == "POST":
        data = _body(request)
        group = provisioning.create_group(caller, _text(data.get("displayName"), "displayName"),
                                          _text(data.get("externalId"), "externalId"), _member_ids(data.get("members")))
        response = _json(_group_json(request, group), status=201)
        response["Location"] = f"{_base(request)}/Groups/{group.pk}"
        return response
    raise _method_not_allowed()


def _group_patch(caller: Caller, group: ScimGroup, data: dict[str, Any]) -> None:
    if PATCH_SCHEMA not in (data.get("schemas") or []) or not isinstance(data.get("Operations"), list):
        raise ScimProblem("A PatchOp message with Operations is expected.", scim_type="invalidSyntax")
    add: list[str] = []
    remove: list[str] = []
    replace: list[str] | None = None
    name: str | None = None
    external: str | None = None
    for op in data["Operations"]:
        if not isinstance(op, dict) or str(op.get("op", "")).lower() not in ("add", "replace", "remove"):
            raise ScimProblem("Each operation is add, replace or remove.", scim_type="invalidSyntax")
        kind, path, value = str(op["op"]).lower(), str(op.get("path") or ""), op.get("value")
        one = _MEMBER_PATH.match(path)
        if one and kind == "remove":
            remove.append(one.group(1))
        elif path.lower() == "members":
            ids = _member_ids(value)
            if kind == "add":
                add += ids
            elif kind == "remove":
                remove += ids if value is not None else [str(m.pk) for m in group.members.all()]
            else:
                replace = ids
        elif path.lower() == "displayname":
            name = _text(value, "displayName")
        elif path.lower() == "externalid":
            external = _text(value, "externalId")
        elif not path and isinstance(value, dict):  # Okta: {"op": "replace", "value": {"id", "displayName"}}
            if "displayName" in value:
                name = _text(value["displayName"], "displayName")
            if "members" in value:
                replace = _member_ids(value["members"])
        else:
            raise ScimProblem(f"Cannot {kind} {path[:60]!r} of a group.", scim_type="invalidPath")
    provisioning.change_group(caller, group, display_name=name, external_id=external, add=add, remove=remove,
                              replace=replace)


@endpoint
def group(request: HttpRequest, caller: Caller, pk: str) -> HttpResponse:
    found = _group(caller, pk)
    if request.method == "GET":
        return _json(_group_json(request, found, with_members=_wants_members(request)))
    if request.method == "PATCH":
        _group_patch(caller, found, _body(request))
        return HttpResponse(status=204)
    if request.method == "PUT":
        data = _body(request)
        provisioning.change_group(caller, found, display_name=_text(data.get("displayName"), "displayName"),
                                  external_id=_text(data.get("externalId"), "externalId"),
                                  replace=_member_ids(data.get("members")))
        return _json(_group_json(request, _group(caller, pk)))
    if request.method == "DELETE":
        provisioning.delete_group(caller, found)
        return HttpResponse(status=204)
    raise _method_not_allowed()


# ------------------------------------------------------------------ discovery (RFC 7644 §4)


@endpoint
def service_provider_config(request: HttpRequest, caller: Caller) -> HttpResponse:
    return _json({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "patch": {"supported": True}, "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_COUNT}, "changePassword": {"supported": False},
        "sort": {"supported": False}, "etag": {"supported": False},
        "authenticationSchemes": [{"type": "oauthbearertoken", "name": "Bearer token", "primary": True,
                                   "description": "A SCIM token from Settings → Provisioning."}],
    })


@endpoint
def resource_types(request: HttpRequest, caller: Caller) -> HttpResponse:
    types = [{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"], "id": name, "name": name,
              "endpoint": f"/{name}s", "schema": schema}
             for name, schema in (("User", USER_SCHEMA), ("Group", GROUP_SCHEMA))]
    return _json({"schemas": [LIST_SCHEMA], "totalResults": 2, "startIndex": 1, "itemsPerPage": 2,
                  "Resources": types})

