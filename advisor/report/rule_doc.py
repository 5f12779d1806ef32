"""A rule's documentation page, from its rule file (the same text SARIF and docs use)."""

from __future__ import annotations

from typing import Any

import yaml

from advisor.core import records
from advisor.core.escape import escape_text
from advisor.engine.rule_engine import CompiledRule


def render_rule(rule: CompiledRule) -> str:
    s = rule.spec
    lines = [
        f"# {s.code} {s.name}",
        "",
        f"Default severity: {s.severity}. Fix: {s.fix.safety if s.fix else 'none'}.",
        "",
        s.summary,
        "",
        s.docs.strip(),
        "",
    ]
    for ex in s.examples:
        lines.append(f"## Example ({'flagged' if ex.expect == 'fail' else 'not flagged'})")
        if ex.hardware:
            lines.append(f"Hardware: {ex.hardware}")
        for name, content in ex.files.items():
            lines += [
                "",
                f"`{name}`:",
                "",
                "```"
                + (
                    "json"
                    if name.endswith(".json")
                    else "yaml"
                    if name.endswith((".yaml", ".yml"))
                    else "bash"
                ),
                content.rstrip(),
                "```",
            ]
        lines.append("")
    if s.fix:
        lines += [
            "## Fix",
            "",
            yaml.safe_dump(_non_default(s.fix), sort_keys=False).strip(),
            "",
        ]
    # a policy file (--rules, extend-rules) is user text: no terminal escapes, newlines kept
    return escape_text("\n".join(lines), keep_newlines=True) + "\n"


def _non_default(obj: Any) -> dict[str, Any]:
    """The fields of a dataclass that differ from their defaults, in field order."""
    out = {}
    for f in records.fields(obj):
        value = getattr(obj, f.name)
        default = f.default_factory() if f.default_factory is not records.MISSING else f.default
        if value != default:
            out[f.name] = value
    return out
