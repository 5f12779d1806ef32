"""The rule engine: loads rule files, evaluates them against facts, yields Findings.

A rule is a declarative judgement over facts (see rules/*.yaml). Conditions, messages and fix
values are Python-syntax expressions run by simpleeval: no imports, no attribute writes, no calls
but the helpers below. Positions come from the provenance of the value a rule points `at`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from advisor.findings import DELETE, SEVERITY_RANK, Edit, Finding, Fix, Severity
from advisor.provenance import Namespace, Value
from advisor.sources.document import Location


class RuleError(Exception):
    """A rule file that cannot be used, with the file and what is wrong."""


# What a rule file holds, as validated by advisor.schema.rules (which builds these): frozen dataclasses, so
# that the compiled catalog comes out of the on-disk cache without importing pydantic.
@dataclass(frozen=True, slots=True, kw_only=True)
class FixSpec:
    when: str = "True"  # the fix is offered only where this holds
    set: dict[str, Any] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    safety: Literal["safe", "unsafe", "display"] = "safe"
    description: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    expect: Literal["fail", "pass"]
    files: dict[str, str]
    hardware: str | None = None
    settings: str | None = None  # .gpu-advise.toml content
    at: str | None = None  # "file:line:col" of the expected finding
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSpec:
    code: str
    name: str
    severity: Severity
    summary: str
    scope: Literal["run", "document"] = "run"
    requires: list[str] = field(default_factory=list)
    when: str = "True"
    for_each: str | None = None
    at: str | None = None
    related: list[str] = field(default_factory=list)
    message: str
    fix: FixSpec | None = None
    docs: str
    examples: list[Example] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)


def _fmt_gib(x: Any) -> str:
    return "?" if x is None else f"{float(x):.1f} GiB"


def _join(items: Iterable[Any], sep: str = ", ") -> str:
    return sep.join(str(i) for i in items)


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


HELPERS: dict[str, Any] = {
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "sorted": sorted,
    "sum": sum,
    "any": any,
    "all": all,
    "list": list,
    "set": set,
    "isinstance_str": lambda x: isinstance(x, str),
    "is_number": lambda x: isinstance(x, int | float) and not isinstance(x, bool),
    "gib": _fmt_gib,
    "show": lambda x: _show(x),
    "join": _join,
    "plural": _plural,
    "lower": lambda x: str(x).lower(),
    "upper": lambda x: str(x).upper(),
}

_TEMPLATE = re.compile(r"\{([^{}]+)\}")


@dataclass(slots=True)
class CompiledRule:
    spec: RuleSpec
    path: Path
    when: Any
    for_each: Any
    message: list[tuple[str, Any]]  # literal text, parsed expression (or None)
    fix_values: dict[str, Any]
    fix_when: Any = None

    @property
    def code(self) -> str:
        return self.spec.code


def _evaluator(names: dict[str, Any]) -> Any:
    from simpleeval import EvalWithCompoundTypes

    return EvalWithCompoundTypes(functions=HELPERS, names=names)


def _parse(expr: str, where: str) -> Any:
    try:
        return _evaluator({}).parse(expr)
    except SyntaxError as exc:
        raise RuleError(f"{where}: expression does not parse: {expr!r} ({exc.msg})") from None


def _compile_template(text: str, where: str) -> list[tuple[str, Any]]:
    parts: list[tuple[str, Any]] = []
    pos = 0
    for m in _TEMPLATE.finditer(text):
        parts.append((text[pos : m.start()], None))
        parts.append(("", _parse(m.group(1), where)))
        pos = m.end()
    parts.append((text[pos:], None))
    return parts


def compile_rule(spec: RuleSpec, path: Path) -> CompiledRule:
    where = f"{path} ({spec.code})"
    fix_values: dict[str, Any] = {}
    if spec.fix:
        for target, raw in spec.fix.set.items():
            if isinstance(raw, str) and _TEMPLATE.fullmatch(raw):
                fix_values[target] = ("expr", _parse(raw[1:-1], where))
            elif isinstance(raw, str) and "{" in raw:
                fix_values[target] = ("template", _compile_template(raw, where))
            else:
                fix_values[target] = ("literal", raw)
    return CompiledRule(
        spec=spec,
        path=path,
        when=_parse(spec.when, where),
        for_each=_parse(spec.for_each, where) if spec.for_each else None,
        message=_compile_template(spec.message.strip(), where),
        fix_values=fix_values,
        fix_when=_parse(spec.fix.when, where) if spec.fix else None,
    )


def builtin_rules_dir() -> Path:
    """rules/ in a source checkout, or the copy packaged inside the wheel."""
    checkout = Path(__file__).resolve().parent.parent / "rules"
    if checkout.is_dir():
        return checkout
    return Path(__file__).resolve().parent / "_rules"


def load_rule_file(path: Path) -> CompiledRule:
    import yaml

    try:
        raw = yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise RuleError(
            f"{path}{line}: rule file is not valid YAML: {getattr(exc, 'problem', exc)}"
        ) from None
    if not isinstance(raw, dict):
        raise RuleError(f"{path}:1: a rule file is a mapping with code, name, severity, when, message, docs")
    from advisor.schema.rules import validate_rule

    try:
        spec = validate_rule(raw)
    except Exception as exc:  # pydantic.ValidationError: name the fields
        errors = getattr(exc, "errors", lambda: [])()
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors) or str(exc)
        raise RuleError(f"{path}: invalid rule file: {detail}") from None
    return compile_rule(spec, path)


@cache
def _load_dir(directory: Path) -> tuple[CompiledRule, ...]:
    """Compile a folder of rule files (through the on-disk cache: a pre-commit hook pays this on
    every commit, and validating the catalog costs more than checking a typical project)."""
    from advisor.cache import cached, file_stamps

    files = sorted(directory.glob("*.yaml"))
    return cached(
        "rules", str(directory), file_stamps(files), lambda: tuple(load_rule_file(p) for p in files)
    )


def load_catalog(extra_dirs: Iterable[Path] = ()) -> list[CompiledRule]:
    rules = list(_load_dir(builtin_rules_dir()))
    for d in extra_dirs:
        if not d.is_dir():
            raise RuleError(f"{d}: rules directory does not exist")
        rules.extend(_load_dir(d.resolve()))
    seen: dict[str, Path] = {}
    for r in rules:
        for key in (r.spec.code, r.spec.name):
            if key in seen:
                raise RuleError(f"{r.path}: rule {key} is already defined in {seen[key]}")
            seen[key] = r.path
    return rules


def matches(rule: CompiledRule, selectors: Iterable[str]) -> bool:
    """Selectors are codes (GA203), prefixes (GA2, GA), names (prefetch-without-workers) or ALL."""
    code, name = rule.spec.code, rule.spec.name
    for s in selectors:
        s = s.strip()
        if not s:
            continue
        if s.upper() == "ALL" or code.startswith(s.upper()) or s == name or s in rule.spec.aliases:
            return True
    return False


def select_rules(
    rules: list[CompiledRule], select: list[str] | None, ignore: list[str] | None
) -> list[CompiledRule]:
    chosen = [r for r in rules if matches(r, select)] if select else list(rules)
    if ignore:
        chosen = [r for r in chosen if not matches(r, ignore)]
    return chosen


@dataclass(slots=True)
class Context:
    """What one rule evaluation sees: fact namespaces by name, the run, and a fallback location."""

    names: dict[str, Any]
    fallback: Location
    run: str | None = None
    documents: dict[str, Any] = field(default_factory=dict)  # namespace -> Document for fixes


class Engine:
    def __init__(self, rules: list[CompiledRule], severity_overrides: dict[str, str] | None = None) -> None:
        self.rules = rules
        self.severity_overrides = severity_overrides or {}
        self.errors: list[str] = []

    def evaluate(self, scope: str, contexts: Iterable[Context]) -> Iterator[Finding]:
        rules = [r for r in self.rules if r.spec.scope == scope]
        for ctx in contexts:
            for rule in rules:
                try:
                    yield from self._evaluate(rule, ctx)
                except Exception as exc:  # a broken rule must not take the others down
                    self.errors.append(
                        f"rule {rule.code} ({rule.path.name}) failed on {ctx.run or ctx.fallback.file}: "
                        f"{type(exc).__name__}: {exc}"
                    )

    def _evaluate(self, rule: CompiledRule, ctx: Context) -> Iterator[Finding]:
        for req in rule.spec.requires:
            if not _truthy_path(ctx.names, req):
                return
        ev = _evaluator(dict(ctx.names))
        items: list[Any] = [None]
        if rule.for_each is not None:
            items = list(ev.eval("", previously_parsed=rule.for_each) or [])
        for item in items:
            if rule.for_each is not None:
                ev.names["item"] = item
            if not ev.eval("", previously_parsed=rule.when):
                continue
            message = _render(ev, rule.message)
            location, related = self._locate(rule, ev, ctx)
            own = item.get("severity") if isinstance(item, dict) else None  # an item may carry its own
            severity = self.severity_overrides.get(rule.code, own or rule.spec.severity)
            yield Finding(
                rule=rule.code,
                name=rule.spec.name,
                severity=severity,  # type: ignore[arg-type]
                message=message,
                location=location,
                run=ctx.run,
                related=related,
                fix=self._fix(rule, ev, ctx),
            )

    def _locate(self, rule: CompiledRule, ev: Any, ctx: Context) -> tuple[Location, list[Location]]:
        related: list[Location] = []
        location = ctx.fallback
        for path in (rule.spec.at or "").split(" or "):  # `a or b`: the first that has a position
            if not path.strip():
                continue
            target = _resolve(ev, ctx.names, path.strip())
            loc = _location_of(target)
            if loc is None:
                continue
            location = loc
            if isinstance(target, Value):
                related.extend(target.related)
            break
        for path in rule.spec.related:
            target = _resolve(ev, ctx.names, path)
            if isinstance(target, list):
                for t in target:
                    loc = _location_of(t)
                    if loc is not None:
                        related.append(loc)
                continue
            loc = _location_of(target)
            if loc is not None:
                related.append(loc)
        unique = []
        for loc in related:
            if loc != location and loc not in unique:
                unique.append(loc)
        return location, unique

    def _fix(self, rule: CompiledRule, ev: Any, ctx: Context) -> Fix | None:
        spec = rule.spec.fix
        if spec is None or not ev.eval("", previously_parsed=rule.fix_when):
            return None
        edits: list[Edit] = []
        for target, (kind, payload) in rule.fix_values.items():
            if kind == "expr":
                value = ev.eval("", previously_parsed=payload)
            elif kind == "template":
                value = _render(ev, payload)
            else:
                value = payload
            edit = _edit_for(ctx, target, value)
            if edit is None:
                return None
            edits.append(edit)
        for target in spec.delete:
            edit = _edit_for(ctx, target, DELETE)
            if edit is None:
                return None
            edits.append(edit)
        description = _render(ev, _compile_template(spec.description, rule.code)) if spec.description else ""
        return Fix(description=description, safety=spec.safety, edits=tuple(edits))


def _truthy_path(names: dict[str, Any], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    node = names.get(head)
    for part in rest.split(".") if rest else []:
        node = getattr(node, part, None) if node is not None else None
    return bool(node)


def _resolve(ev: Any, names: dict[str, Any], dotted: str) -> Any:
    """A dotted path gives the Value (with provenance), not only the plain value."""
    head, _, rest = dotted.partition(".")
    node = ev.names.get(head, names.get(head))
    if not rest:
        return node
    if isinstance(node, Namespace):
        return node.lookup(rest)
    for part in rest.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node


def _location_of(target: Any) -> Location | None:
    if isinstance(target, Location):
        return target
    if isinstance(target, Value):
        return target.origin
    if isinstance(target, dict):
        return _location_of(target.get("location"))
    loc = getattr(target, "location", None)
    return loc if isinstance(loc, Location) else None


def _edit_for(ctx: Context, target: str, value: Any) -> Edit | None:
    head, _, rest = target.partition(".")
    ns = ctx.names.get(head)
    entry = ns.lookup(rest) if isinstance(ns, Namespace) else None
    if isinstance(entry, Value) and entry.origin is not None:
        if entry.origin.key:
            return Edit(entry.origin.file, entry.origin.key, value)
        if entry.source == "launch" and value is not DELETE:  # a flag in a launch script: edit the word
            return Edit(entry.origin.file, None, value, entry.origin.line, entry.origin.col)
        return None
    doc = ctx.documents.get(head)
    if doc is not None and value is not DELETE:
        key = rest.split(".")[-1] if "." not in rest else rest.replace(".", "/")
        return Edit(doc.path, "/" + key, value)
    return None


def _render(ev: Any, parts: list[tuple[str, Any]]) -> str:
    out = []
    for text, parsed in parts:
        if parsed is None:
            out.append(text)
        else:
            value = ev.eval("", previously_parsed=parsed)
            out.append(_show(value))
    return "".join(out)


def _show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(_show(v) for v in value)
    return str(value)


def at_or_above(severity: str, threshold: str) -> bool:
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]
