"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Rule metadata comes from the rule files (summary, docs, default severity). Results carry the
finding's location, its related locations, its fix as artifact changes, and a partial fingerprint
that does not depend on line numbers (rule, file and key path; the same value a baseline stores),
so code scanning keeps an alert open across unrelated edits. URIs are relative to %SRCROOT%, the
folder the check ran in; columns count Unicode code points.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from advisor.core.escape import escape_result, escape_text, strict_json
from advisor.core.paths import relative

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
# The one place the project's address is written: SARIF's informationUri and every rule's helpUri
# (docs/rules/CODE.md, generated from the rule files by tools/gen_rule_docs.py) derive from it.
REPOSITORY_URL = "https://github.com/gpu-advise/gpu-advise"
INFORMATION_URI = REPOSITORY_URL
DOCS_URL = REPOSITORY_URL + "/blob/main/docs/rules/{code}.md"
FINGERPRINT_KEY = "gpuAdvise/v1"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def is_builtin(rule: Any) -> bool:
    from advisor.engine.rule_engine import is_builtin as builtin

    return builtin(rule)


def help_uri(rule: Any) -> str | None:
    """The documentation page of a built-in rule (the text `gpu-advise rule CODE` prints)."""
    return DOCS_URL.format(code=rule.code) if is_builtin(rule) else None


def tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gpu-advise")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled checkout
        return "0.0.0"


def _artifact(path: Path) -> dict[str, Any]:
    rel = relative(path)
    if rel.startswith("../") or Path(rel).is_absolute():
        return {"uri": path.resolve().as_uri()}
    return {"uri": quote(rel), "uriBaseId": "%SRCROOT%"}


def _physical(loc: Any) -> dict[str, Any]:
    return {
        "artifactLocation": _artifact(loc.file),
        "region": {"startLine": max(1, loc.line), "startColumn": max(1, loc.col)},
    }


def _section(docs: str, title: str) -> str | None:
    """The body of one `## Title` section of a rule's docs."""
    m = re.search(rf"^##\s*{re.escape(title)}\s*\n(.*?)(?=^##\s|\Z)", docs, re.MULTILINE | re.DOTALL)
    return " ".join(m.group(1).split()) if m else None


def rule_descriptor(rule: Any) -> dict[str, Any]:
    s = rule.spec
    docs = escape_text(s.docs.strip(), keep_newlines=True)  # a policy file's text is user text too
    summary = escape_text(s.summary)
    what = _section(docs, "What it does") or summary
    descriptor: dict[str, Any] = {
        "id": s.code,
        "name": escape_text(s.name),
        "shortDescription": {"text": summary},
        "fullDescription": {"text": what},
        "help": {"text": docs, "markdown": docs},
        "defaultConfiguration": {"level": LEVELS[s.severity], "enabled": True},
        "properties": {
            "tags": ["gpu-advise", s.code[:3] + "xx"],
            "fix": s.fix.safety if s.fix else None,
        },
    }
    uri = help_uri(rule)
    if uri:
        descriptor["helpUri"] = uri
    return descriptor


def _result(f: Any, raw: Any, index: int, fixes_cache: dict[Path, Any]) -> dict[str, Any]:
    """`f` is the finding escaped for display; `raw` the original (fingerprint and fix edits)."""
    from advisor.engine.fix import sarif_replacements

    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index,
        "level": LEVELS[f.severity],
        "message": {"text": f.message},
        # URIs name the real file: percent-encoding already keeps control characters out of them
        "locations": [{"physicalLocation": _physical(raw.location)}],
        "partialFingerprints": {FINGERPRINT_KEY: raw.fingerprint(relative(raw.location.file))},
    }
    if f.related:
        result["relatedLocations"] = [
            {
                "id": i,
                "physicalLocation": _physical(real),
                "message": {"text": r.key or f"{escape_text(relative(r.file))}:{r.line}:{r.col}"},
            }
            for i, (r, real) in enumerate(zip(f.related, raw.related, strict=True), 1)
        ]
    if f.fix is not None:
        changes = sarif_replacements(raw, fixes_cache)
        if changes:
            result["fixes"] = [
                {
                    "description": {"text": f"{f.fix.description or 'apply the fix'} ({f.fix.safety})"},
                    "artifactChanges": [
                        {"artifactLocation": _artifact(c["file"]), "replacements": c["replacements"]}
                        for c in changes
                    ],
                }
            ]
    properties: dict[str, Any] = {"severity": f.severity}
    if f.location.key:
        properties["key"] = f.location.key
    if f.run:
        properties["run"] = f.run
    if f.evidence:
        properties["evidence"] = f.evidence
    result["properties"] = properties
    return result


def build_sarif(result: Any, exit_code: int) -> dict[str, Any]:
    raw_findings = result.findings
    result = escape_result(result)
    catalog = {r.code: r for r in getattr(result, "rules", [])}
    fired = sorted({f.rule for f in result.findings})
    descriptors: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    for code in fired:
        rule = catalog.get(code)
        if rule is None:
            continue
        index[code] = len(descriptors)
        descriptors.append(rule_descriptor(rule))
    fixes_cache: dict[Path, Any] = {}
    results = []
    for f, raw in zip(result.findings, raw_findings, strict=True):
        if f.rule not in index:  # a finding from a rule we have no file for: describe it minimally
            index[f.rule] = len(descriptors)
            descriptors.append({"id": f.rule, "name": f.name})
        results.append(_result(f, raw, index[f.rule], fixes_cache))

    notifications = [
        {"level": "error", "message": {"text": err}, "descriptor": {"id": "internal-error"}}
        for err in result.errors
    ]
    baseline = getattr(result, "baseline", None)
    if baseline is not None:
        from advisor.engine.baseline import describe

        notifications.append(
            {"level": "note", "message": {"text": describe(baseline)}, "descriptor": {"id": "baseline"}}
        )
    invocation: dict[str, Any] = {"executionSuccessful": exit_code in (0, 1), "exitCode": exit_code}
    if notifications:
        invocation["toolExecutionNotifications"] = notifications

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "gpu-advise",
                "version": tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }
        },
        "invocations": [invocation],
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"runs": [r.as_json() for r in result.runs]},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_sarif(result: Any, exit_code: int) -> str:
    return strict_json(build_sarif(result, exit_code)) + "\n"
