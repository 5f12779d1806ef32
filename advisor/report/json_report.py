"""`--format json`: the contract in docs/design.md, version 1."""

from __future__ import annotations

from typing import Any

from advisor.core.escape import escape_result, strict_json
from advisor.core.findings import DELETE, Finding
from advisor.report import location_json, relative
from advisor.report.results import CheckResult


def finding_json(f: Finding, original: Finding | None = None) -> dict[str, Any]:
    """One finding; `f` already escaped for display, `original` (default f) gives the fingerprint
    a baseline stores."""
    fix = None
    if f.fix is not None:
        fix = {
            "description": f.fix.description,
            "safety": f.fix.safety,
            "edits": [
                {
                    "file": relative(e.file),
                    "key": e.key,
                    "line": e.line,
                    "column": e.col,
                    "delete": e.value is DELETE,
                }
                | ({} if e.value is DELETE or e.rename is not None else {"value": e.value})
                | ({"rename": e.rename} if e.rename is not None else {})
                for e in f.fix.edits
            ],
        }
    return {
        "rule": f.rule,
        "name": f.name,
        "severity": f.severity,
        "message": f.message,
        "file": relative(f.location.file),
        "line": f.location.line,
        "column": f.location.col,
        "key": f.location.key,
        "run": f.run,
        "related": [location_json(r) for r in f.related],
        "fix": fix,
        "evidence": f.evidence,
        "fingerprint": (original or f).fingerprint(relative((original or f).location.file)),
    }


def render_json(result: CheckResult) -> str:
    safe = escape_result(result)
    from advisor.engine.rule_engine import error_label

    payload = {
        "version": 1,
        "findings": [finding_json(f, raw) for f, raw in zip(safe.findings, result.findings, strict=True)],
        "runs": [r.as_json() for r in safe.runs],
        # why the check exits 2 or 3: a rule that failed to evaluate is not a finding, but it must be seen
        "errors": [
            {"kind": error_label(raw, result.rules), "message": shown}
            for shown, raw in zip(safe.errors, result.errors, strict=True)
        ],
    }
    return strict_json(payload) + "\n"
