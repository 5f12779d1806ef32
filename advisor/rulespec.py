"""What a rule file holds: the types advisor.schema.rules validates and builds, advisor.engine compiles.

Frozen dataclasses, so that the compiled catalog comes out of the on-disk cache without importing
pydantic. A leaf module, shared by the engine and the schema so that neither imports the other.
"""

from __future__ import annotations

from typing import Any, Literal

from advisor.findings import Severity
from advisor.records import field, record


@record(frozen=True, slots=True, kw_only=True)
class FixSpec:
    when: str = "True"  # the fix is offered only where this holds
    set: dict[str, Any] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    rename: dict[str, str] = field(default_factory=dict)  # key path -> its new name ("{expr}" or text)
    safety: Literal["safe", "unsafe", "display"] = "safe"
    description: str = ""


@record(frozen=True, slots=True, kw_only=True)
class Example:
    expect: Literal["fail", "pass"]
    files: dict[str, str]
    hardware: str | None = None
    settings: str | None = None  # .gpu-advise.toml content
    base: dict[str, str] | None = None  # files at the base revision: the example is a commit on it
    at: str | None = None  # "file:line:col" of the expected finding
    note: str | None = None


@record(frozen=True, slots=True, kw_only=True)
class RuleSpec:
    code: str
    name: str
    severity: Severity
    summary: str
    # suppression: evaluated by advisor/suppress.py; policy: by advisor/policy (check --base)
    scope: Literal["run", "document", "suppression", "policy"] = "run"
    requires: list[str] = field(default_factory=list)
    let: dict[str, str] = field(default_factory=dict)  # name -> sub-expression, read as a local
    when: str = "True"
    for_each: str | None = None
    at: str | None = None
    related: list[str] = field(default_factory=list)
    message: str  # the template; with message_by, the template of no listed case ("" for none)
    message_by: str | None = None  # `message: {by, cases, default}`: the case this expression names
    message_cases: dict[str, str] = field(default_factory=dict)
    severity_when: dict[str, str] = field(default_factory=dict)  # severity -> condition, error first
    fix: FixSpec | None = None
    docs: str
    examples: list[Example] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
