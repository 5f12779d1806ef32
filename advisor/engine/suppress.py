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
- GA900 unused-suppression: a rule of scope `suppression` (rules/GA900-unused-suppression.yaml). After
  the findings are matched with the directives, this stage lists each directive code that suppressed
  nothing as the `suppressions.unused` fact and the engine evaluates the suppression-scoped rules over it;
  what to report and how to word it is the rule file's.

Codes in brackets are selectors (advisor/engine/selectors.py): rule codes, prefixes (GA3), rule names or
aliases, separated by commas.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from advisor.core import records
from advisor.core.document import Document, Location
from advisor.core.findings import Finding
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record
from advisor.engine.selectors import matches as selector_matches
from advisor.engine.selectors import named_rules
from advisor.sources.comments import comment_columns
from advisor.sources.globs import compile_glob
from advisor.sources.markdown_files import is_markdown

YAML_SUFFIXES = {".yaml", ".yml"}
SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}

# compiled on first use (through re's own cache): most checked files hold no `# gpu-advise:` comment
_YAML_BREAK = "\r\n|[\r\n\x85\u2028\u2029]"
_DIRECTIVE = (
    r"(?:^|(?<=\s)|(?<=[;&|()<>]))#\s*gpu-advise\s*:\s*(?P<kind>ignore-file|ignore)\b"
    r"(?:\s*\[(?P<codes>[^\]]*)\])?(?P<reason>.*)$"
)


@record(slots=True)
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

    def covers(self, finding: Finding, aliases: tuple[str, ...] = ()) -> str | None:
        """The code of this directive that suppresses the finding, if any (`aliases`: the rule's)."""
        if self.kind == "ignore" and finding.location.line not in self.lines:
            return None
        for code in self.codes:
            if selector_matches(code, finding.rule, finding.name, aliases):
                return code
        return None


@record(slots=True)
class Suppressed:
    finding: Finding
    by: str  # "inline", "per-file-ignores", "key-ignores"
    reason: str = ""


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


def _lines(text: str, *, shell: bool) -> list[str]:
    """The file's lines as its reader numbers them: bash counts LF only, YAML its six line breaks."""
    if shell:
        return text.split("\n")
    return re.split(_YAML_BREAK, text)


def parse_directives(path: Path, text: str, *, shell: bool) -> list[Directive]:
    """The directives written in comments (a `#` in a quoted value, a block scalar, a shell string or a
    here-document is data, not a comment: advisor/sources/comments.py)."""
    if "gpu-advise" not in text:
        return []
    lines = _lines(text, shell=shell)
    comments = comment_columns(text, shell=shell)

    def comment_only(index: int) -> bool:  # 0-based line index
        col = comments.get(index + 1)
        return col is not None and not lines[index][:col].strip()

    groups = _logical_lines(lines) if shell else {}
    out: list[Directive] = []
    for idx, line in enumerate(lines):
        col = comments.get(idx + 1)
        if col is None or "gpu-advise" not in line[col:]:
            continue
        m = re.compile(_DIRECTIVE).search(line, col)
        if m is None:
            continue
        raw_codes = m.group("codes")
        codes = [c.strip() for c in (raw_codes or "").split(",") if c.strip()]
        reason = m.group("reason").strip()
        number = idx + 1
        covered: set[int] = set()
        if m.group("kind") == "ignore":
            if comment_only(idx):
                target = idx + 1  # 0-based index of the next line that is not itself a comment
                while target < len(lines) and comment_only(target):
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


def path_matches(pattern: str, file: Path, root: Path) -> bool:
    """Match a settings glob against a file: relative to the settings folder; a pattern without a
    slash also matches the file name alone (as in ruff's per-file-ignores)."""
    pattern = pattern.strip().removeprefix("./")
    resolved = file.resolve()
    try:
        rel = resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = resolved.as_posix()
    glob = compile_glob(pattern)
    if glob.match(rel) or glob.match(resolved.as_posix()):
        return True
    return "/" not in pattern and glob.match(resolved.name)


def _key_matches(pointer: str, key: str | None) -> bool:
    if key is None:
        return False
    pointer = "/" + pointer.strip().strip("/") if pointer.strip("/") else ""
    return key == pointer or key.startswith(pointer + "/") or pointer == ""


def _settings_ignore(finding: Finding, settings: Any, aliases: tuple[str, ...] = ()) -> Suppressed | None:
    root = settings.root
    for pattern, codes in settings.per_file_ignores.items():
        if any(selector_matches(c, finding.rule, finding.name, aliases) for c in codes) and path_matches(
            pattern, finding.location.file, root
        ):
            return Suppressed(finding, "per-file-ignores", pattern)
    for pattern, keys in settings.key_ignores.items():
        if not path_matches(pattern, finding.location.file, root):
            continue
        for pointer, codes in keys.items():
            if _key_matches(pointer, finding.location.key) and any(
                selector_matches(c, finding.rule, finding.name, aliases) for c in codes
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
        if is_markdown(path):  # a README's `# gpu-advise: ignore` is an example in documentation
            continue
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
    selected_for: Callable[[Any], list[Any]] | None = None,
) -> tuple[list[Finding], list[Suppressed]]:
    """Each finding judged by the settings of its own file, then suppressed or kept; then the
    `suppression`-scoped rules (GA900) over the directive codes that suppressed nothing.

    `settings`: a Settings (it governs every file) or an advisor.sources.settings.SettingsScope (each file is
    governed by the closest settings file above it: its rule selection, `severity`, `per-file-ignores`
    and `key-ignores`). `selected_for(settings)`: the rules those settings select; a finding whose
    rule its file's settings do not select is dropped (None: every finding's rule counts as selected).
    `selected` are the rules that ran (a directive for a rule that did not run is not unused);
    `catalog` is every known rule (a code that names no rule at all is reported).
    """
    from advisor.sources.settings import SettingsScope

    scope = settings if isinstance(settings, SettingsScope) else SettingsScope.single(settings)
    documents = list(documents)
    selected = list(selected)
    catalog = list(catalog)
    aliases = {r.code: tuple(r.spec.aliases) for r in catalog}
    chosen: dict[str, tuple[list[Any], set[str]]] = {}

    def rules_for(file: Path) -> tuple[Any, list[Any], set[str] | None]:
        governing = scope.governing(file)
        if selected_for is None:
            return governing, selected, None
        key = str(governing.source)
        if key not in chosen:
            rules = selected_for(governing)
            chosen[key] = (rules, {r.code for r in rules})
        return governing, *chosen[key]

    def judged(f: Finding) -> tuple[Finding | None, Any]:
        """The finding as its file's settings see it (None: they do not select its rule)."""
        governing, _, codes = rules_for(f.location.file)
        if codes is not None and f.rule not in codes:
            return None, governing
        severity = governing.severity.get(f.rule)
        if severity is not None and severity != f.severity:
            f = records.replace(f, severity=severity)
        return f, governing

    kept: list[Finding] = []
    suppressed: list[Suppressed] = []
    directives = collect_directives(documents, findings) if inline else []
    by_file: dict[Path, list[Directive]] = {}
    for d in directives:
        by_file.setdefault(d.file.resolve(), []).append(d)

    for raw in findings:
        f, governing = judged(raw)
        if f is None:
            continue
        own = aliases.get(f.rule, ())
        hit = _settings_ignore(f, governing, own)
        if hit is not None:
            suppressed.append(hit)
            continue
        for d in by_file.get(f.location.file.resolve(), []):
            code = d.covers(f, own)
            if code is not None:
                d.used.add(code)
                suppressed.append(Suppressed(f, "inline", d.reason))
                break
        else:
            kept.append(f)

    checks = [r for r in selected if r.spec.scope == "suppression"]
    if checks and directives:
        from advisor.engine.rule_engine import Context, Engine

        ran = (lambda d: rules_for(d.file)[1]) if selected_for is not None else None
        names = {"suppressions": suppression_facts(directives, selected, catalog, ran)}
        context = Context(names, Location(directives[0].file, directives[0].line, directives[0].col))
        engine = Engine(checks)
        for raw in engine.evaluate("suppression", [context]):
            finding, governing = judged(raw)
            if (
                finding is not None
                and _settings_ignore(finding, governing, aliases.get(finding.rule, ())) is None
            ):
                kept.append(finding)
        if engine.errors:  # a broken suppression check: one line, exit 2, as for a broken rule file
            from advisor.core.errors import CheckError

            raise CheckError("; ".join(engine.errors))
        kept.sort(key=lambda f: f.sort_key)
    return kept, suppressed


def suppression_facts(
    directives: list[Directive],
    selected: list[Any],
    catalog: list[Any],
    selected_in: Callable[[Directive], list[Any]] | None = None,
) -> Namespace:
    """The `suppressions` namespace: each directive code that suppressed nothing, by kind.
    `selected_in(directive)`: the rules that ran for the directive's file (default: `selected`)."""
    from advisor.facts.stage_namespaces import SuppressionFacts

    ns = SuppressionFacts()  # its sets are checked against the declared facts
    unused = [
        item
        for d in directives
        for item in _unused(d, selected_in(d) if selected_in is not None else selected, catalog)
    ]
    ns.set("unused", Value(unused, None, "derived"))
    return ns


def _unused(d: Directive, selected: list[Any], catalog: list[Any]) -> list[dict[str, Any]]:
    """no-codes (a directive without codes in brackets), unknown-code (names no rule) or unused (its
    rule ran and found nothing there); a code for a rule that did not run in this check is neither."""
    if d.kind == "ignore-file":
        where = "in this file"
    elif d.line in d.lines:
        where = "on this line"
    elif d.lines:
        where = f"on line {min(d.lines)}"
    else:
        where = "after it (no line follows the directive)"
    location = Location(d.file, d.line, d.col, None)
    base = {"directive": d.kind, "where": where, "location": location}
    if not d.codes:
        return [{**base, "kind": "no-codes", "code": None}]
    out = []
    for code in d.codes:
        if code in d.used:
            continue
        if not named_rules(code, catalog):
            out.append({**base, "kind": "unknown-code", "code": code})
        elif named_rules(code, selected):
            out.append({**base, "kind": "unused", "code": code})
    return out
