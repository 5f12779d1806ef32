"""`--statistics`: how many findings each rule gave (for planning a rollout), instead of the list."""

from __future__ import annotations

from collections import Counter
from typing import Any

from advisor.report.escape import escape_result, strict_json


def statistics(result: Any) -> list[dict[str, Any]]:
    counts = Counter(f.rule for f in result.findings)
    first = {}
    for f in result.findings:
        first.setdefault(f.rule, f)
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        f = first[code]
        fixable = sum(
            1 for g in result.findings if g.rule == code and g.fix is not None and g.fix.safety != "display"
        )
        rows.append({"code": code, "name": f.name, "count": n, "fixable": fixable})
    return rows


def render_statistics(result: Any, *, as_json: bool = False) -> str:
    rows = statistics(escape_result(result))
    if as_json:
        return strict_json(rows) + "\n"
    if not rows:
        return "No findings.\n"
    width = max(len(str(r["count"])) for r in rows)
    lines = []
    for r in rows:
        mark = "[*]" if r["fixable"] else "   "
        lines.append(f"{r['count']:>{width}}  {r['code']:<6} {mark} {r['name']}")
    total = sum(r["count"] for r in rows)
    fixable = sum(r["fixable"] for r in rows)
    lines.append(
        f"Found {total} finding{'s' if total != 1 else ''}"
        + (f"; [*] {fixable} fixable with --fix or --unsafe-fixes." if fixable else ".")
    )
    return "\n".join(lines) + "\n"
