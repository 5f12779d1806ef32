"""The settings a change relaxes: the pull request's settings against the base revision's.

Each relaxation is one item of `policy.settings` (GA801), at the file, line and column of the
setting in the pull request's settings file (advisor/pipeline/policy/toml_lines.py), or at the top of that
file
when the change removed the setting. A relaxation is what makes the gate report less:

- `ignore`, `select`, `extend-select`: a rule the base runs that the change does not;
- `severity`: a rule whose findings come out lower (an override lowered, added below the rule's own
  severity, or a raising override removed);
- `fail-on`: a laxer threshold (error is the laxest);
- `per-file-ignores`, `key-ignores`: a code for files (keys) the base does not ignore it for;
- `allowed-roots`: a folder outside the project the base does not allow;
- `baseline`: a baseline file the base does not use;
- `extend-rules`: a rule folder of the base's that the change drops;
- `thresholds`: a threshold moved in the direction that gives fewer findings;
- `exclude`, `extend-exclude`: a pattern the base does not skip; `force-exclude` and
  `respect-gitignore` turned on where the base has them off (fewer files are read).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from advisor.core.document import Location
from advisor.engine.rule_engine import select_rules
from advisor.engine.selectors import matches, named_rules
from advisor.sources.settings import Settings

RANK = {"info": 1, "warning": 2, "error": 3}
NAME = {rank: name for name, rank in RANK.items()}
# threshold -> (its key, the rules that read it, +1 when a larger value gives fewer findings); a rule that
# reads one in its expressions is listed (tests/core/test_policy_threshold_readers.py), and so is one that
# reads it through a fact (GA402: estimates.stays_single_gpu)
THRESHOLDS: dict[str, tuple[str, str, int]] = {
    "single_gpu_hours": ("single-gpu-hours", "GA402, GA405", -1),
    "workers_per_process": ("workers-per-process", "GA201, GA202", +1),
    "near_memory_fraction": ("near-memory-fraction", "GA404", -1),
    "prediction_tolerance": ("prediction-tolerance", "GA701", +1),
}

Locate = Callable[[tuple[str, ...], str | None], Location]


def codes(rules: Iterable[Any]) -> str:
    found = sorted({r.spec.code for r in rules})
    return ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")


def _selected(settings: Settings, catalog: list[Any]) -> list[Any]:
    select = settings.select + settings.extend_select if settings.select is not None else None
    return select_rules(catalog, select, settings.ignore)


def _item(kind: str, key: str, where: Location, **values: Any) -> dict[str, Any]:
    item = {"kind": kind, "key": key, "value": None, "rules": None, "was": None, "now": None}
    item.update(values)
    return {**item, "file": where.file.name, "location": where}


def selection(base: Settings, pr: Settings, catalog: list[Any], at: Locate) -> list[dict[str, Any]]:
    """Rules the base runs and the change does not, by the `ignore` entry that drops them, else by
    `select`/`extend-select`. Policy rules are left out: the pull request's settings cannot drop them."""
    judged = [r for r in catalog if r.spec.scope != "policy"]
    kept = {r.spec.code for r in _selected(pr, judged)}
    lost = [r for r in _selected(base, judged) if r.spec.code not in kept]
    out = []
    old = {s.strip().upper() for s in base.ignore}
    for entry in pr.ignore:
        if entry.strip().upper() in old:
            continue
        off = [r for r in lost if matches(entry, r.spec.code, r.spec.name, r.spec.aliases)]
        if off:
            out.append(_item("ignore", "ignore", at(("ignore",), entry), value=entry, rules=codes(off)))
            lost = [r for r in lost if r not in off]
    if lost:
        key = "select" if pr.select != base.select else "extend-select"
        out.append(_item("select", key, at((key,), None), rules=codes(lost)))
    return out


def _own(rule: Any) -> int:
    """The highest severity a rule gives on its own (a conditional severity may reach error)."""
    return max([RANK[rule.spec.severity], *(RANK[s] for s in rule.spec.severity_when)])


def severity(base: Settings, pr: Settings, catalog: list[Any], at: Locate) -> list[dict[str, Any]]:
    out = []
    for rule in catalog:
        code = rule.spec.code
        was = base.severity.get(code)
        now = pr.severity.get(code)
        if was == now:
            continue
        before = RANK[was] if was else _own(rule)
        after = RANK[now] if now else _own(rule)
        if after < before:
            where = at(("severity", code), None)
            out.append(_item("severity", "severity", where, rules=code, was=NAME[before], now=NAME[after]))
    return out


def fail_on(base: Settings, pr: Settings, at: Locate) -> list[dict[str, Any]]:
    was, now = base.fail_on or "warning", pr.fail_on or "warning"
    if RANK[now] <= RANK[was]:
        return []
    return [_item("fail-on", "fail-on", at(("fail-on",), None), was=was, now=now)]


def _covered(code: str, by: Iterable[str], catalog: list[Any]) -> bool:
    named = {r.spec.code for r in named_rules(code, catalog)}
    return any(
        e.strip().upper() == code.strip().upper() or named <= {r.spec.code for r in named_rules(e, catalog)}
        for e in by
    )


def file_ignores(base: Settings, pr: Settings, catalog: list[Any], at: Locate) -> list[dict[str, Any]]:
    out = []
    for pattern, entries in pr.per_file_ignores.items():
        for code in entries:
            named = named_rules(code, catalog)
            if named and not _covered(code, base.per_file_ignores.get(pattern, ()), catalog):
                where = at(("per-file-ignores", pattern), code)
                out.append(
                    _item("per-file-ignores", "per-file-ignores", where, value=pattern, rules=codes(named))
                )
    for pattern, pointers in pr.key_ignores.items():
        for pointer, entries in pointers.items():
            for code in entries:
                named = named_rules(code, catalog)
                had = base.key_ignores.get(pattern, {}).get(pointer, ())
                if named and not _covered(code, had, catalog):
                    where = at(("key-ignores", pattern, pointer), code)
                    value = f"{pattern} {pointer}"
                    out.append(_item("key-ignores", "key-ignores", where, value=value, rules=codes(named)))
    return out


def folder(value: str, root: Path) -> Path:
    """A settings path as the check resolves it: relative to the settings file's folder, `~` expanded."""
    path = Path(os.path.expanduser(value))
    return Path(os.path.normpath(path if path.is_absolute() else root / path))


def roots_and_files(
    base: Settings, base_root: Path, pr: Settings, pr_root: Path, at: Locate
) -> list[dict[str, Any]]:
    """allowed-roots gained, a baseline the base does not use. `base_root` is the checkout folder that
    stands for the base settings file's folder (so both sides name the same paths)."""
    out = []
    allowed = {folder(r, base_root) for r in base.allowed_roots}
    for value in pr.allowed_roots:
        if folder(value, pr_root) not in allowed:
            out.append(_item("allowed-roots", "allowed-roots", at(("allowed-roots",), value), value=value))
    if pr.baseline is not None and (
        base.baseline is None or folder(pr.baseline, pr_root) != folder(base.baseline, base_root)
    ):
        where = at(("baseline",), None)
        out.append(_item("baseline", "baseline", where, value=pr.baseline, was=base.baseline or "none"))
    return out


def dropped_folders(
    base: Settings, base_root: Path, pr: Settings, pr_root: Path, rules_of: Callable[[str], str], at: Locate
) -> list[dict[str, Any]]:
    kept = {folder(v, pr_root) for v in pr.extend_rules}
    out = []
    for value in base.extend_rules:
        if folder(value, base_root) not in kept:
            where = at(("extend-rules",), None)
            out.append(_item("extend-rules", "extend-rules", where, value=value, rules=rules_of(value)))
    return out


def thresholds(base: Settings, pr: Settings, at: Locate) -> list[dict[str, Any]]:
    out = []
    for name, (key, rules, direction) in THRESHOLDS.items():
        was, now = getattr(base.thresholds, name), getattr(pr.thresholds, name)
        if (now - was) * direction > 0:
            where = at(("thresholds", key), None)
            setting = f"thresholds.{key}"
            out.append(_item("threshold", setting, where, rules=rules, was=str(was), now=str(now)))
    return out


def _skipped(settings: Settings) -> list[str]:
    """The patterns a folder walk skips under these settings (advisor/sources/exclude.py)."""
    from advisor.sources.exclude import DEFAULT_EXCLUDE

    listed = list(DEFAULT_EXCLUDE) if settings.exclude is None else list(settings.exclude)
    return [*listed, *settings.extend_exclude]


def excludes(base: Settings, pr: Settings, at: Locate) -> list[dict[str, Any]]:
    """Files the change stops reading: a skip pattern the base lacks, or a skip switched on."""
    out = []
    had = set(_skipped(base))
    for key, values in (("exclude", pr.exclude or []), ("extend-exclude", pr.extend_exclude)):
        for value in values:
            if value not in had:
                had.add(value)
                out.append(_item("exclude", key, at((key,), value), value=value))
    for key, name in (("force-exclude", "force_exclude"), ("respect-gitignore", "respect_gitignore")):
        if getattr(pr, name) and not getattr(base, name):
            out.append(_item("exclude-switch", key, at((key,), None), was="false", now="true"))
    return out
