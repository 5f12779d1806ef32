"""Validation of rule files (rules/*.yaml): the result is an advisor.engine.RuleSpec."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from advisor import engine
from advisor.findings import Severity
from advisor.schema import to_view


class FixSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    when: str = "True"  # the fix is offered only where this holds
    set: dict[str, Any] = Field(default_factory=dict)
    delete: list[str] = Field(default_factory=list)
    safety: Literal["safe", "unsafe", "display"] = "safe"
    description: str = ""


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    expect: Literal["fail", "pass"]
    files: dict[str, str]
    hardware: str | None = None
    settings: str | None = None  # .gpu-advise.toml content
    at: str | None = None  # "file:line:col" of the expected finding
    note: str | None = None


class RuleSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    code: str
    name: str
    severity: Severity
    summary: str
    scope: Literal["run", "document"] = "run"
    requires: list[str] = Field(default_factory=list)
    when: str = "True"
    for_each: str | None = None
    at: str | None = None
    related: list[str] = Field(default_factory=list)
    message: str
    fix: FixSpec | None = None
    docs: str
    examples: list[Example] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)

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


VIEWS = {"RuleSpec": engine.RuleSpec, "FixSpec": engine.FixSpec, "Example": engine.Example}


def validate_rule(raw: Any) -> engine.RuleSpec:
    """The rule file's mapping as a RuleSpec; raises pydantic.ValidationError."""
    return to_view(RuleSpec.model_validate(raw), VIEWS)
