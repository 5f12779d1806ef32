"""`--statistics`: how many findings each rule gave (for planning a rollout), instead of the list."""

from __future__ import annotations

from collections import Counter
from typing import Any

from advisor.core.escape import escape_result, strict_json


def statistics(result: Any) -> list[dict[str, Any]]:
    counts = Counter(f.rule for f in result.findings)
    first: dict[str, Any] = {}
    for f in result.findings:
        first.setdefault(f.rule, f)
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        f = first[code]
        fixes = [g.fix.safety for g in result.findings if g.rule == code and g.fix is not None]
        safe, unsafe = fixes.count("safe"), fixes.count("unsafe")  # "display" fixes are never applied
        rows.append(
            {
                "code": code,
                "name": f.name,
                "count": n,
                "fixable": safe + unsafe,
                "safe_fixes": safe,  # what --fix applies
                "unsafe_fixes": unsafe,  # what only --unsafe-fixes applies
            }
        )
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
        # ruff's marks: [*] some fixed by --fix, [-] fixable only with --unsafe-fixes
        mark = "[*]" if r["safe_fixes"] else "[-]" if r["unsafe_fixes"] else "   "
        lines.append(f"{r['count']:>{width}}  {r['code']:<6} {mark} {r['name']}")
    total = sum(r["count"] for r in rows)
    safe = sum(r["safe_fixes"] for r in rows)
    unsafe = sum(r["unsafe_fixes"] for r in rows)
    notes = []
    if safe:
        notes.append(f"[*] {safe} fixable with --fix")
    if unsafe:
        notes.append(f"[-] {unsafe} more with --unsafe-fixes")
    lines.append(
        f"Found {total} finding{'s' if total != 1 else ''}" + (f"; {'; '.join(notes)}." if notes else ".")
    )
    return "\n".join(lines) + "\n"
