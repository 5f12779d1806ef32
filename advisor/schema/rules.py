"""Validation of rule files (rules/*.yaml): the result is an advisor.rulespec.RuleSpec."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from advisor import records, rulespec
from advisor.findings import Severity
from advisor.schema import to_view


class FixSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    when: str = "True"  # the fix is offered only where this holds
    set: dict[str, Any] = Field(default_factory=dict)
    delete: list[str] = Field(default_factory=list)
    rename: dict[str, str] = Field(default_factory=dict)  # key path -> its new name ("{expr}" or text)
    safety: Literal["safe", "unsafe", "display"] = "safe"
    description: str = ""


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    expect: Literal["fail", "pass"]
    files: dict[str, str]
    hardware: str | None = None
    settings: str | None = None  # .gpu-advise.toml content
    base: dict[str, str] | None = None  # files at the base revision: the example is a commit on it
    at: str | None = None  # "file:line:col" of the expected finding
    note: str | None = None


_SEVERITY_ORDER = ("error", "warning", "info")
_DERIVED = ("message_by", "message_cases", "severity_when")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class SeveritySpec(BaseModel):
    """`severity: {error: "<condition>", default: warning}`: the first severity whose condition holds, in the
    order error, warning, info; `default` otherwise."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    error: str | None = None
    warning: str | None = None
    info: str | None = None
    default: Severity

    @model_validator(mode="after")
    def _some_condition(self) -> SeveritySpec:
        conditions = {k: getattr(self, k) for k in _SEVERITY_ORDER if getattr(self, k) is not None}
        if not conditions:
            raise ValueError(
                "a severity mapping needs a condition for error, warning or info, besides default"
            )
        if self.default in conditions:
            raise ValueError(f"severity {self.default!r} is both the default and conditional")
        return self


class MessageSpec(BaseModel):
    """`message: {by: item.kind, cases: {fails: "...", missing: "..."}, default: "..."}`: the template of the
    case the `by` expression's value names; `default` when none does (no default: the rule's error)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    by: str
    cases: dict[str, str]
    default: str | None = None

    @field_validator("cases")
    @classmethod
    def _cases(cls, v: dict[str, str]) -> dict[str, str]:
        if not v:
            raise ValueError("a message mapping needs at least one case")
        return v


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    code: str
    name: str
    severity: Severity | SeveritySpec
    summary: str
    scope: Literal["run", "document", "suppression", "policy"] = "run"
    requires: list[str] = Field(default_factory=list)
    let: dict[str, str] = Field(default_factory=dict)
    when: str = "True"
    for_each: str | None = None
    at: str | None = None
    related: list[str] = Field(default_factory=list)
    message: str | MessageSpec
    # filled from a `message` or `severity` mapping by validate_rule (the dataclass stores them flat);
    # a rule file cannot write them
    message_by: str | None = None
    message_cases: dict[str, str] = Field(default_factory=dict)
    severity_when: dict[str, str] = Field(default_factory=dict)
    fix: FixSpec | None = None
    docs: str
    examples: list[Example] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _not_written(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in _DERIVED:
                if key in data:
                    raise ValueError(
                        f"{key}: write `message: {{by, cases}}` or `severity: {{error: ...}}` instead"
                    )
        return data

    @field_validator("code")
    @classmethod
    def _code(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Z]{2,5}\d{3}", v):
            raise ValueError(f"rule code '{v}' must be letters then three digits, like GA203")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9-]+", v):
            raise ValueError(f"rule name '{v}' must be kebab-case")
        return v

    @field_validator("let")
    @classmethod
    def _let(cls, v: dict[str, str]) -> dict[str, str]:
        from advisor.facts.catalogue import by_name
        from advisor.rule_helpers import HELPERS, RESERVED_NAMES

        for name in v:
            if not _NAME.fullmatch(name):
                raise ValueError(f"let name {name!r} must be snake_case, like scaled_lr")
            if name in RESERVED_NAMES or name in HELPERS or name in by_name():
                raise ValueError(f"let name {name!r} is a namespace, a local or a helper already")
        return v


VIEWS = {"RuleSpec": rulespec.RuleSpec, "FixSpec": rulespec.FixSpec, "Example": rulespec.Example}


def validate_rule(raw: Any) -> rulespec.RuleSpec:
    """The rule file's mapping as a RuleSpec; raises pydantic.ValidationError.

    A severity or message mapping is stored flat: `severity` the default and `severity_when` the
    conditions; `message` the default template ("" without one), `message_by` and `message_cases`."""
    model = RuleSpec.model_validate(raw)
    severity, message = model.severity, model.message
    fields = {
        f.name: to_view(getattr(model, f.name), VIEWS)
        for f in records.fields(rulespec.RuleSpec)
        if f.name not in ("severity", "message", *_DERIVED)
    }
    fields["severity"], fields["message"] = severity, message
    if isinstance(severity, SeveritySpec):
        fields["severity"] = severity.default
        fields["severity_when"] = {k: getattr(severity, k) for k in _SEVERITY_ORDER if getattr(severity, k)}
    if isinstance(message, MessageSpec):
        fields["message"] = message.default or ""
        fields["message_by"] = message.by
        fields["message_cases"] = dict(message.cases)
    return rulespec.RuleSpec(**fields)
