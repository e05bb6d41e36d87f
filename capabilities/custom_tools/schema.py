"""The shape of a custom tool definition, shared by the manual builder, drafts, templates and the runtime."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ALIAS_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PARAM_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*$")
PATH_PARAM_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

Location = Literal["path", "query", "header", "body"]
ParamType = Literal["string", "integer", "number", "boolean", "array"]
WarningLevel = Literal["info", "warning", "critical"]
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Param(_Strict):
    """One named field. Body fields are named one by one (dotted names nest: `customer.email`), never a blob."""

    name: str = Field(min_length=1, max_length=100)
    location: Location
    type: ParamType = "string"
    required: bool = False
    mode: Literal["ai", "fixed"] = "ai"
    value: Any = None
    description: str = Field(default="", max_length=1000)
    enum: list[Any] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not PARAM_NAME_RE.match(value):
            raise ValueError(f"{value!r} is not a parameter name: use letters, digits, '_', '-' and dots for nesting")
        return value

    @model_validator(mode="after")
    def _fixed_has_value(self) -> Param:
        if self.mode == "fixed" and self.value is None:
            raise ValueError(f"fixed parameter {self.name!r} needs a value")
        if self.mode == "fixed" and not isinstance(self.value, _JSON_TYPES[self.type]):
            raise ValueError(f"fixed parameter {self.name!r} has a value that is not of type {self.type}")
        if self.location == "path" and "." in self.name:
            raise ValueError(f"path parameter {self.name!r} cannot be nested")
        return self


class Auth(_Strict):
    """How the credential is injected. The secret itself is the tool's `credential_id`, never here."""

    family: Literal["none", "header", "query", "hmac", "jwt"] = "none"
    header_name: str = Field(default="Authorization", max_length=100)
    prefix: str = Field(default="Bearer ", max_length=40)  # header and jwt families
    query_name: str = Field(default="api_key", max_length=100)
    signature_header: str = Field(default="X-Signature", max_length=100)
    timestamp_header: str = Field(default="X-Timestamp", max_length=100)
    jwt_algorithm: Literal["HS256", "HS384", "HS512"] = "HS256"
    jwt_claims: dict[str, Any] = Field(default_factory=dict)
    jwt_ttl_secs: int = Field(default=300, ge=10, le=3600)


class ToolWarning(_Strict):
    level: WarningLevel = "warning"
    text: str = Field(min_length=1, max_length=1000)


class Definition(_Strict):
    """Everything needed to make the call and for the agent to decide when to make it."""

    name: str = Field(min_length=1, max_length=120)
    alias: str
    description: str = Field(default="", max_length=2000)
    usage_notes: str = Field(default="", max_length=8000)
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    url: str = Field(min_length=8, max_length=2000)
    parameters: list[Param] = Field(default_factory=list)
    auth: Auth = Field(default_factory=Auth)
    tags: list[str] = Field(default_factory=list)
    timeout_secs: float = Field(default=30, gt=0, le=120)

    @field_validator("alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        if not ALIAS_RE.match(value):
            raise ValueError("the alias is what the agent calls: lowercase letters, digits and '_', starting with a letter")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.lower().startswith(("http://", "https://")):
            raise ValueError("the URL must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Definition:
        seen: set[tuple[str, str]] = set()
        for param in self.parameters:
            key = (param.location, param.name.lower() if param.location == "header" else param.name)
            if key in seen:
                raise ValueError(f"{param.location} parameter {param.name!r} is declared twice")
            seen.add(key)
        in_url = set(PATH_PARAM_RE.findall(self.url))
        declared = {p.name for p in self.parameters if p.location == "path"}
        if in_url - declared:
            raise ValueError(f"the URL uses {{{', '.join(sorted(in_url - declared))}}} but no path parameter declares it")
        if declared - in_url:
            raise ValueError(f"path parameter(s) {', '.join(sorted(declared - in_url))} do not appear in the URL")
        if self.method == "GET" and any(p.location == "body" for p in self.parameters):
            raise ValueError("a GET request has no body: make those fields query parameters")
        ai_names = [p.name for p in self.parameters if p.mode == "ai"]
        flat = [n.replace(".", "__").replace("-", "_") for n in ai_names]
        if len(set(flat)) != len(flat):
            raise ValueError("two AI-visible parameters map to the same argument name")
        return self

    def ai_params(self) -> list[Param]:
        return [p for p in self.parameters if p.mode == "ai"]


def arg_name(param: Param) -> str:
    """The argument name the model fills: dots and dashes become what a JSON Schema property can be."""
    return param.name.replace(".", "__").replace("-", "_")


def json_schema(definition: Definition) -> dict[str, Any]:
    """The model-facing JSON Schema: AI-visible parameters only (fixed ones never reach the model)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in definition.ai_params():
        prop: dict[str, Any] = {"type": param.type}
        if param.type == "array":
            prop["items"] = {}
        text = param.description or f"{param.location} parameter {param.name}"
        prop["description"] = text
        if param.enum:
            prop["enum"] = param.enum
        properties[arg_name(param)] = prop
        if param.required:
            required.append(arg_name(param))
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def warnings_text(warnings: list[dict[str, Any]]) -> str:
    if not warnings:
        return ""
    lines = ["Warnings:"]
    for item in warnings:
        lines.append(f"- [{item.get('level', 'warning')}] {item.get('text', '')}")
    return "\n".join(lines)
