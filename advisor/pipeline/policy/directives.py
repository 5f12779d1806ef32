"""Inline suppressions the change adds: `# gpu-advise: ignore[...]` directives the base revision lacks.

A directive is the same as one at the base when the same file at the base has a directive of the same
kind with the same code over the same text (the line it covers, without the comment), so directives
that only moved with their line are not new. Items of `policy.suppressions` (GA803); under
`--policy-from-base` a finding that only new directives suppress is reported again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from advisor.core.findings import Finding
from advisor.engine.suppress import (
    SHELL_SUFFIXES,
    Directive,
    Suppressed,
    collect_directives,
    parse_directives,
)

Key = tuple[str, str, str]  # kind, code, the text it covers


def _key(directive: Directive, code: str, lines: list[str]) -> Key:
    if directive.kind == "ignore-file":
        return directive.kind, code.strip().upper(), ""
    covered = []
    for number in sorted(directive.lines):
        if 0 < number <= len(lines):
            text = lines[number - 1]
            if number == directive.line:
                text = text[: directive.col - 1]
            covered.append(text.strip())
    return directive.kind, code.strip().upper(), "\n".join(covered)


def _keys(directives: Iterable[Directive], text: str) -> list[tuple[Directive, str, Key]]:
    lines = text.splitlines()
    return [(d, code, _key(d, code, lines)) for d in directives for code in d.codes]


class DirectiveDiff:
    """The directives of the pull request's files, each code marked new or as at the base."""

    def __init__(
        self, documents: list[Any], findings: Iterable[Finding], base_file: Callable[[Path], Path | None]
    ) -> None:
        from advisor.sources.read import read_text

        self.new: list[tuple[Directive, str]] = []
        self._old: set[tuple[Path, int, str]] = set()
        kinds = {d.path.resolve(): d.kind for d in documents}
        texts = {d.path.resolve(): d.text for d in documents}
        for_file: dict[Path, list[Directive]] = {}
        for d in collect_directives(documents, findings):
            for_file.setdefault(d.file.resolve(), []).append(d)
        for path, directives in for_file.items():
            text = texts.get(path)
            if text is None:
                text, _ = read_text(path)
            base_path = base_file(path)
            base_text = read_text(base_path)[0] if base_path is not None and base_path.is_file() else None
            shell = path.suffix.lower() in SHELL_SUFFIXES or kinds.get(path) == "launch"
            had: Counter[Key] = Counter()
            if base_text is not None:
                had.update(k for _, _, k in _keys(parse_directives(path, base_text, shell=shell), base_text))
            for d, code, key in _keys(directives, text or ""):
                if had[key] > 0:
                    had[key] -= 1
                    self._old.add((path, d.line, code))
                else:
                    self.new.append((d, code))
        self._directives = [d for ds in for_file.values() for d in ds]

    def items(self) -> list[dict[str, Any]]:
        from advisor.core.document import Location

        out = []
        for d, code in self.new:
            if d.kind == "ignore-file":
                where = "in this file"
            else:
                where = f"on line {min(d.lines)}" if d.lines else "after it"
            out.append(
                {
                    "code": code,
                    "directive": d.kind,
                    "file": d.file.name,
                    "where": where,
                    "location": Location(d.file, d.line, d.col, None),
                }
            )
        return out

    def restore(
        self, findings: list[Finding], suppressed: list[Suppressed], aliases: dict[str, tuple[str, ...]]
    ) -> tuple[list[Finding], list[Suppressed]]:
        """--policy-from-base: findings suppressed inline only by directives the base lacks come back."""
        kept = list(findings)
        still: list[Suppressed] = []
        for s in suppressed:
            if s.by != "inline" or self._by_base(s.finding, aliases.get(s.finding.rule, ())):
                still.append(s)
            else:
                kept.append(s.finding)
        kept.sort(key=lambda f: f.sort_key)
        return kept, still

    def _by_base(self, finding: Finding, aliases: tuple[str, ...]) -> bool:
        path = finding.location.file.resolve()
        for d in self._directives:
            if d.file.resolve() != path or (d.kind == "ignore" and finding.location.line not in d.lines):
                continue
            if any((path, d.line, code) in self._old and _names(code, finding, aliases) for code in d.codes):
                return True
        return False


def _names(code: str, finding: Finding, aliases: tuple[str, ...]) -> bool:
    from advisor.engine.selectors import matches

    return matches(code, finding.rule, finding.name, aliases)
