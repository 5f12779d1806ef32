"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=F,line=L,col=C,title=T::message`. Escaping follows @actions/core
(https://github.com/actions/toolkit, packages/core/src/command.ts: escapeData and escapeProperty;
packages/core/src/utils.ts: toCommandValue, which passes strings through): in the message `%`,
`\\r`, `\\n` become `%25`, `%0D`, `%0A`; in property values `:` and `,` also become `%3A` and `%2C`.
Before that, every user string is made single-line by advisor.core.escape, so a config key holding
`\\n::error file=README.md,line=1::x` cannot start a workflow command of its own; the only lines
that start with `::` are our annotations. Annotations do not fail a job; the exit code does. Chosen
automatically when GITHUB_ACTIONS=true and no --format is given.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from advisor.core.escape import escape_result, escape_text
from advisor.core.paths import relative
from advisor.engine.rule_engine import error_label

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """toCommandValue's string case then escapeData: `%` first, so the escapes are not escaped again."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(command: str, message: str, **properties: Any) -> str:
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


def _message(f: Any) -> str:
    lines = [f.message]
    for r in f.related:
        where = f"{escape_text(relative(r.file))}:{r.line}:{r.col}"
        lines.append(f"related: {where}" + (f" ({r.key})" if r.key else ""))
    if f.fix is not None and f.fix.description:
        lines.append(f"fix ({f.fix.safety}): {f.fix.description}")
    return "\n".join(lines)


def render_github(result: Any) -> str:
    result = escape_result(result)
    out = []
    for f in result.findings:
        out.append(
            annotation(
                COMMANDS[f.severity],
                _message(f),
                file=escape_text(relative(f.location.file)),
                line=f.location.line,
                col=f.location.col,
                title=f"gpu-advise {f.rule} ({f.name})",
            )
        )
    for err in result.errors:
        out.append(annotation("error", err, title=f"gpu-advise {error_label(err, result.rules)}"))
    baseline = getattr(result, "baseline", None)
    if baseline is not None:
        from advisor.engine.baseline import describe

        out.append(annotation("notice", describe(baseline), title="gpu-advise baseline"))
    counts = Counter(f.severity for f in result.findings)
    n = len(result.findings)
    runs = len(result.runs)
    if n:
        detail = ", ".join(
            f"{counts[s]} {s}{'s' if counts[s] != 1 else ''}"
            for s in ("error", "warning", "info")
            if counts[s]
        )
        found = f"{n} finding{'s' if n != 1 else ''}"
        out.append(f"gpu-advise: {found} ({detail}) in {runs} run{'s' if runs != 1 else ''}")
    else:
        out.append(f"gpu-advise: no findings in {runs} run{'s' if runs != 1 else ''}")
    return "\n".join(out) + "\n"
