"""Suppressions: a stage after the engine, before the baseline and the reporter.

Three sources, in this order:

- settings `per-file-ignores` ({glob: [codes]}) and `key-ignores` ({glob: {json-pointer: [codes]}}),
  the only way for JSON files (DeepSpeed and accelerate read them with parsers that reject
  comments);
- inline directives in YAML and shell files, unless `--no-inline-ignores`:
  `# gpu-advise: ignore[GA201] optional reason` on the line of the finding or on the line above
  it (stacked directive lines are fine), and `# gpu-advise: ignore-file[GA3]` anywhere in the file.
  In a shell file a directive covers the whole command it is written on or above, since a
  command continued with `\\` cannot hold a comment on its inner lines;
- GA900 unused-suppression: each code of a directive that suppressed nothing.

Codes in brackets are rule codes, prefixes (GA3) or rule names, separated by commas.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from advisor.findings import Finding
from advisor.sources.document import Document, Location

YAML_SUFFIXES = {".yaml", ".yml"}
SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}
UNUSED_CODE = "GA900"

_DIRECTIVE = re.compile(
    r"(?:^|(?<=\s))#\s*gpu-advise\s*:\s*(?P<kind>ignore-file|ignore)\b"
    r"(?:\s*\[(?P<codes>[^\]]*)\])?(?P<reason>.*)$"
)


@dataclass(slots=True)
class Directive:
    """One `# gpu-advise: ignore[...]` comment."""

    file: Path
    line: int
    col: int
    kind: Literal["ignore", "ignore-file"]
    codes: list[str]
    reason: str
    lines: frozenset[int] = frozenset()  # the lines an `ignore` covers; empty for ignore-file
    used: set[str] = field(default_factory=set)  # the codes that suppressed something

    def covers(self, finding: Finding) -> str | None:
        """The code of this directive that suppresses the finding, if any."""
        if self.kind == "ignore" and finding.location.line not in self.lines:
            return None
        for code in self.codes:
            if code_matches(code, finding.rule, finding.name):
                return code
        return None


@dataclass(slots=True)
class Suppressed:
    finding: Finding
    by: str  # "inline", "per-file-ignores", "key-ignores"
    reason: str = ""


def code_matches(code: str, rule: str, name: str) -> bool:
    """GA203 matches GA203; GA2 and GA match every GA2xx; a rule name matches that rule; ALL matches all."""
    c = code.strip()
    if not c:
        return False
    if c.upper() == "ALL" or c == name:
        return True
    return rule.startswith(c.upper()) and bool(re.fullmatch(r"[A-Za-z]+\d*", c))


def _logical_lines(lines: list[str]) -> dict[int, tuple[int, int]]:
    """For a shell file: physical line -> (first, last) line of the command it belongs to."""
    groups: dict[int, tuple[int, int]] = {}
    i = 0
    n = len(lines)
    while i < n:
        start = i
        while i < n - 1 and lines[i].rstrip("\r").endswith("\\") and not lines[i].lstrip().startswith("#"):
            i += 1
        for k in range(start, i + 1):
            groups[k + 1] = (start + 1, i + 1)
        i += 1
    return groups


def _is_comment_only(line: str) -> bool:
    return line.lstrip().startswith("#")


def parse_directives(path: Path, text: str, *, shell: bool) -> list[Directive]:
    if "gpu-advise" not in text:
        return []
    lines = text.splitlines()
    groups = _logical_lines(lines) if shell else {}
    out: list[Directive] = []
    for idx, line in enumerate(lines):
        if "gpu-advise" not in line:
            continue
        m = _DIRECTIVE.search(line)
        if m is None:
            continue
        raw_codes = m.group("codes")
        codes = [c.strip() for c in (raw_codes or "").split(",") if c.strip()]
        reason = m.group("reason").strip()
        number = idx + 1
        covered: set[int] = set()
        if m.group("kind") == "ignore":
            if _is_comment_only(line):
                target = idx + 1  # 0-based index of the next line that is not itself a comment
                while target < len(lines) and _is_comment_only(lines[target]):
                    target += 1
                if target < len(lines):
                    covered.add(target + 1)
            else:
                covered.add(number)
            if shell:
                for t in list(covered):
                    first, last = groups.get(t, (t, t))
                    covered.update(range(first, last + 1))
        out.append(
            Directive(
                file=path,
                line=number,
                col=m.start() + 1,
                kind=m.group("kind"),  # type: ignore[arg-type]
                codes=codes if raw_codes is not None else [],
                reason=reason,
                lines=frozenset(covered),
            )
        )
    return out


@cache
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A gitignore-like glob: `*` and `?` stay inside one folder, `**` crosses folders."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(pattern[i]))
                i += 1
            else:
                out.append(fnmatch.translate(pattern[i : end + 1])[4:-3])
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(pattern: str, file: Path, root: Path) -> bool:
    """Match a settings glob against a file: relative to the settings folder; a pattern without a
    slash also matches the file name alone (as in ruff's per-file-ignores)."""
    pattern = pattern.strip().removeprefix("./")
    resolved = file.resolve()
    try:
        rel = resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = resolved.as_posix()
    regex = _glob_regex(pattern)
    if regex.match(rel) or regex.match(resolved.as_posix()):
        return True
    return "/" not in pattern and bool(regex.match(resolved.name))


def _key_matches(pointer: str, key: str | None) -> bool:
    if key is None:
        return False
    pointer = "/" + pointer.strip().strip("/") if pointer.strip("/") else ""
    return key == pointer or key.startswith(pointer + "/") or pointer == ""


def _settings_ignore(finding: Finding, settings: Any) -> Suppressed | None:
    root = settings.root
    for pattern, codes in settings.per_file_ignores.items():
        if any(code_matches(c, finding.rule, finding.name) for c in codes) and path_matches(
            pattern, finding.location.file, root
        ):
            return Suppressed(finding, "per-file-ignores", pattern)
    for pattern, keys in settings.key_ignores.items():
        if not path_matches(pattern, finding.location.file, root):
            continue
        for pointer, codes in keys.items():
            if _key_matches(pointer, finding.location.key) and any(
                code_matches(c, finding.rule, finding.name) for c in codes
            ):
                return Suppressed(finding, "key-ignores", f"{pattern} {pointer}")
    return None


def _directive_files(documents: Iterable[Document], findings: Iterable[Finding]) -> dict[Path, str | None]:
    """Files that may hold inline directives: YAML and shell files of the check."""
    files: dict[Path, str | None] = {}
    for doc in documents:
        suffix = doc.path.suffix.lower()
        if suffix in YAML_SUFFIXES or suffix in SHELL_SUFFIXES or doc.kind == "launch":
            files.setdefault(doc.path.resolve(), doc.text)
    for f in findings:
        suffix = f.location.file.suffix.lower()
        if suffix in YAML_SUFFIXES or suffix in SHELL_SUFFIXES:
            files.setdefault(f.location.file.resolve(), None)
    return files


def _read(path: Path) -> str | None:
    from advisor.sources.read import read_text

    text, _ = read_text(path)
    return text


def collect_directives(documents: Iterable[Document], findings: Iterable[Finding]) -> list[Directive]:
    directives: list[Directive] = []
    shown: dict[Path, Path] = {}
    for doc in documents:
        shown.setdefault(doc.path.resolve(), doc.path)
    for f in findings:
        shown.setdefault(f.location.file.resolve(), f.location.file)
    kinds = {d.path.resolve(): d.kind for d in documents}
    for path, text in _directive_files(documents, findings).items():
        if text is None:
            text = _read(path)
        if text is None:
            continue
        shell = path.suffix.lower() in SHELL_SUFFIXES or kinds.get(path) == "launch"
        directives.extend(parse_directives(shown.get(path, path), text, shell=shell))
    return directives


def apply_suppressions(
    findings: list[Finding],
    documents: Iterable[Document],
    settings: Any,
    *,
    inline: bool = True,
    selected: Iterable[Any] = (),
    catalog: Iterable[Any] = (),
) -> tuple[list[Finding], list[Suppressed]]:
    """Drop suppressed findings; add GA900 for directive codes that suppressed nothing.

    `selected` are the rules that ran (a directive for a rule that did not run is not unused);
    `catalog` is every known rule (a code that names no rule at all is reported).
    """
    documents = list(documents)
    selected = list(selected)
    catalog = list(catalog)
    kept: list[Finding] = []
    suppressed: list[Suppressed] = []
    directives = collect_directives(documents, findings) if inline else []
    by_file: dict[Path, list[Directive]] = {}
    for d in directives:
        by_file.setdefault(d.file.resolve(), []).append(d)

    for f in findings:
        hit = _settings_ignore(f, settings)
        if hit is not None:
            suppressed.append(hit)
            continue
        for d in by_file.get(f.location.file.resolve(), []):
            code = d.covers(f)
            if code is not None:
                d.used.add(code)
                suppressed.append(Suppressed(f, "inline", d.reason))
                break
        else:
            kept.append(f)

    unused_rule = next((r for r in selected if r.code == UNUSED_CODE), None)
    if unused_rule is not None:
        severity = settings.severity.get(UNUSED_CODE, unused_rule.spec.severity)
        for d in directives:
            for message in _unused_messages(d, selected, catalog):
                finding = Finding(
                    rule=UNUSED_CODE,
                    name=unused_rule.spec.name,
                    severity=severity,
                    message=message,
                    location=Location(d.file, d.line, d.col, None),
                )
                if _settings_ignore(finding, settings) is None:
                    kept.append(finding)
        kept.sort(key=lambda f: f.sort_key)
    return kept, suppressed


def _unused_messages(d: Directive, selected: list[Any], catalog: list[Any]) -> list[str]:
    if d.kind == "ignore-file":
        where = "in this file"
    elif d.line in d.lines:
        where = "on this line"
    elif d.lines:
        where = f"on line {min(d.lines)}"
    else:
        where = "after it (no line follows the directive)"
    if not d.codes:
        return [
            f"`gpu-advise: {d.kind}` needs rule codes in brackets, e.g. `{d.kind}[GA203]`; "
            "it suppresses nothing"
        ]
    out = []
    for code in d.codes:
        if code in d.used:
            continue
        known = [r for r in catalog if code_matches(code, r.code, r.spec.name)]
        if not known:
            out.append(f"unused suppression: '{code}' names no rule (see `gpu-advise rules`)")
            continue
        ran = [r for r in selected if code_matches(code, r.code, r.spec.name)]
        if not ran:
            continue  # the rule was not selected in this check: nothing to say about it
        out.append(f"unused suppression: no {code} finding {where}; remove '{code}' from the directive")
    return out
