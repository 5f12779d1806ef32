"""Validation of rule files (rules/*.yaml) into advisor.engine.rulespec.RuleSpec
(advisor.core.datacodec.validate).

A rule file may write `severity` and `message` as mappings (SeveritySpec, MessageSpec below: input
only); they are stored flat on the RuleSpec. The `let` names are checked here, against the fact
catalogue and the helpers, which the leaf advisor.engine.rulespec may not import.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.core.datacodec import Invalid, Problem, invalid, validate
from advisor.core.findings import Severity
from advisor.core.records import record, replace, spec
from advisor.engine import rulespec

_SEVERITY_ORDER = ("error", "warning", "info")
_DERIVED = ("message_by", "message_cases", "severity_when")
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def _some_case(v: dict[str, str]) -> dict[str, str]:
    if not v:
        raise ValueError("a message mapping needs at least one case")
    return v


@record(frozen=True, slots=True, kw_only=True)
class SeveritySpec:
    """`severity: {error: "<condition>", default: warning}`: the first severity whose condition holds, in the
    order error, warning, info; `default` otherwise."""

    error: str | None = None
    warning: str | None = None
    info: str | None = None
    default: Severity

    def __validate__(self) -> None:
        conditions = {k: getattr(self, k) for k in _SEVERITY_ORDER if getattr(self, k) is not None}
        if not conditions:
            raise invalid("a severity mapping needs a condition for error, warning or info, besides default")
        if self.default in conditions:
            raise invalid(f"severity {self.default!r} is both the default and conditional")


@record(frozen=True, slots=True, kw_only=True)
class MessageSpec:
    """`message: {by: item.kind, cases: {fails: "...", missing: "..."}, default: "..."}`: the template of the
    case the `by` expression's value names; `default` when none does (no default: the rule's error)."""

    by: str
    cases: dict[str, str] = spec(after=_some_case)
    default: str | None = None


def _let_problems(let: Any) -> list[Problem]:
    from advisor.core.rule_helpers import HELPERS, RESERVED_NAMES
    from advisor.facts.catalogue import by_name

    out = []
    for name in let if isinstance(let, dict) else ():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            out.append(Problem(("let", name), f"let name {name!r} must be snake_case, like scaled_lr"))
        elif name in RESERVED_NAMES or name in HELPERS or name in by_name():
            out.append(
                Problem(("let", name), f"let name {name!r} is a namespace, a local or a helper already")
            )
    return out


def validate_rule(raw: Any) -> rulespec.RuleSpec:
    """The rule file's mapping as a RuleSpec; raises advisor.core.datacodec.Invalid.

    A severity or message mapping is stored flat: `severity` the default and `severity_when` the
    conditions; `message` the default template ("" without one), `message_by` and `message_cases`."""
    if not isinstance(raw, dict):
        return validate(rulespec.RuleSpec, raw)  # the error for a value that is no mapping
    problems: list[Problem] = []
    for key in _DERIVED:
        if key in raw:
            problems.append(
                Problem(
                    (key,), f"{key}: write `message: {{by, cases}}` or `severity: {{error: ...}}` instead"
                )
            )
    data = {k: v for k, v in raw.items() if k not in _DERIVED}
    severity: SeveritySpec | None = None
    message: MessageSpec | None = None
    failed: set[str] = set()  # a mapping that did not validate: its problems are reported, not "required"
    try:
        if isinstance(data.get("severity"), dict):
            severity = validate(SeveritySpec, data["severity"])
            data["severity"] = severity.default
    except Invalid as exc:
        problems += [replace(p, path=("severity", *p.path)) for p in exc.problems]
        data.pop("severity")
        failed.add("severity")
    try:
        if isinstance(data.get("message"), dict):
            message = validate(MessageSpec, data["message"])
            data["message"] = message.default or ""
    except Invalid as exc:
        problems += [replace(p, path=("message", *p.path)) for p in exc.problems]
        data.pop("message")
        failed.add("message")
    problems += _let_problems(data.get("let"))
    try:
        spec_ = validate(rulespec.RuleSpec, data)
    except Invalid as exc:
        problems += [p for p in exc.problems if p.path[0] not in failed]
        raise Invalid(problems) from None
    if problems:
        raise Invalid(problems)
    if severity is not None:
        when = {k: getattr(severity, k) for k in _SEVERITY_ORDER if getattr(severity, k)}
        spec_ = replace(spec_, severity_when=when)
    if message is not None:
        spec_ = replace(spec_, message_by=message.by, message_cases=dict(message.cases))
    return spec_
