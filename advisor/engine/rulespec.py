"""What a rule file holds: records declared once, with the checks advisor.core.datacodec.validate applies
(advisor.engine.rule_schema validates a rule file into them, advisor.engine.rule_engine compiles them; the
compiled
catalog comes out of the on-disk cache through advisor.core.datacodec.decode). A leaf module, shared by the
engine and the schema so that neither imports the other.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from advisor.core.findings import Severity
from advisor.core.records import field, record, spec


def _code(v: str) -> str:
    if not re.fullmatch(r"[A-Z]{2,5}\d{3}", v):
        raise ValueError(f"rule code '{v}' must be letters then three digits, like GA203")
    return v


def _name(v: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9-]+", v):
        raise ValueError(f"rule name '{v}' must be kebab-case")
    return v


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
    code: str = spec(after=_code)
    name: str = spec(after=_name)
    # a `severity: {error: ..., default: ...}` mapping is stored flat (advisor.engine.rule_schema)
    severity: Severity
    summary: str
    # suppression: evaluated by advisor/engine/suppress.py; policy: by advisor/pipeline/policy (check --base)
    scope: Literal["run", "document", "suppression", "policy"] = "run"
    requires: list[str] = field(default_factory=list)
    let: dict[str, str] = field(default_factory=dict)  # name -> sub-expression, read as a local
    when: str = "True"
    for_each: str | None = None
    at: str | None = None
    related: list[str] = field(default_factory=list)
    message: str  # the template; with message_by, the template of no listed case ("" for none)
    # filled from a `message` or `severity` mapping by advisor.engine.rule_schema; a rule file cannot write
    # them
    message_by: str | None = spec(default=None, read=False)  # `message: {by, cases, default}`: the case
    message_cases: dict[str, str] = spec(default_factory=dict, read=False)
    severity_when: dict[str, str] = spec(default_factory=dict, read=False)  # severity -> condition
    fix: FixSpec | None = None
    docs: str
    examples: list[Example] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
