"""Rule files the change relaxes: each rule of a base rule folder against the same file in the pull request.

A rule folder is one the base's settings name in `extend-rules`, or a `--rules` folder inside the
repository. A rule relaxes when its file is gone (or no longer defines the code), when its severity is
lower, or when what decides that it fires (`when`, `for_each`, `let`, `requires`, `scope` or a
conditional severity) is written differently: a rewritten condition cannot be judged weaker or
stronger without running it, so every rewrite is reported for review. Items of `policy.rules` (GA802).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.document import Location
from advisor.engine.rule_engine import RuleError, load_rule_file

from .settings_diff import RANK

_CONDITION = ("when", "for_each", "let", "requires", "scope", "severity_when")
_KEYS = {"for_each": "for_each", "severity_when": "severity", "requires": "requires", "let": "let"}


def _load(path: Path) -> Any | None:
    try:
        return load_rule_file(path)
    except RuleError:
        return None
    except OSError:
        return None


def _line_of(path: Path, key: str) -> tuple[int, int]:
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        lines = read_text_file(path).splitlines()
    except (ReadRefused, OSError):
        return 1, 1
    for number, line in enumerate(lines, 1):
        if line.startswith(f"{key}:"):
            return number, 1
    return 1, 1


def _item(kind: str, code: str, at: Location, shown: str, **values: Any) -> dict[str, Any]:
    return {"kind": kind, "code": code, "file": shown, "part": None, "was": None, "now": None, **values} | {
        "location": at
    }


def compare_folder(base_dir: Path, pr_dir: Path, shown: str) -> list[dict[str, Any]]:
    """Every relaxation of the rules in `base_dir` (the base tree) by `pr_dir` (the checkout). `shown` is
    the folder as the settings or the command line name it, for the messages."""
    out: list[dict[str, Any]] = []
    if not base_dir.is_dir():
        return out
    for base_file in sorted(base_dir.glob("*.yaml")):
        old = _load(base_file)
        if old is None:
            continue
        code = old.spec.code
        target = pr_dir / base_file.name
        new = _load(target) if target.is_file() else None
        name = f"{shown.rstrip('/')}/{base_file.name}"
        if new is None or new.spec.code != code:
            reason = "removes" if not target.is_file() else "replaces"
            out.append(_item("removed", code, Location(target, 1, 1), name, part=reason))
            continue
        if RANK[new.spec.severity] < RANK[old.spec.severity]:
            line, col = _line_of(target, "severity")
            out.append(
                _item(
                    "severity",
                    code,
                    Location(target, line, col),
                    name,
                    was=old.spec.severity,
                    now=new.spec.severity,
                )
            )
        for part in _CONDITION:
            if getattr(old.spec, part) != getattr(new.spec, part):
                key = _KEYS.get(part, part)
                line, col = _line_of(target, key)
                out.append(_item("condition", code, Location(target, line, col), name, part=key))
                break
    return out


def folder_codes(folder: Path) -> str:
    """The codes of the rule files in a folder, for a message."""
    found = []
    if folder.is_dir():
        for path in sorted(folder.glob("*.yaml")):
            rule = _load(path)
            if rule is not None:
                found.append(rule.spec.code)
    return ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "") or "none"
