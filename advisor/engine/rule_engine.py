"""The rule engine: loads rule files, evaluates them against facts, yields Findings.

A rule is a declarative judgement over facts (see rules/*.yaml). Conditions, messages and fix
values are Python-syntax expressions run by advisor.core.expr, a whitelist evaluator: they read fact
values and call the helpers below, nothing else, with bounded work. An expression outside that
language is refused when the rule file loads, with the file and line; one that fails or runs out of
its budget while evaluating is that rule's error. Positions come from the provenance of the value a
rule points `at`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from advisor import PACKAGE_DIR
from advisor.core.document import Location
from advisor.core.expr import LIMITS, BudgetError, EvalError, ExprError, Expression, deferred, parse
from advisor.core.findings import DELETE, SEVERITY_RANK, Edit, Finding, Fix
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record
from advisor.core.rule_helpers import HELPERS as HELPERS  # re-exported: engine.HELPERS is what tests name
from advisor.core.rule_helpers import RESERVED_NAMES as RESERVED_NAMES
from advisor.core.rule_helpers import show_text, text_of
from advisor.engine.evaluator import Evaluator
from advisor.engine.rulespec import Example as Example  # re-exported: the types a rule file holds
from advisor.engine.rulespec import FixSpec as FixSpec
from advisor.engine.rulespec import RuleSpec


class RuleError(Exception):
    """A rule file that cannot be used, with the file and what is wrong."""


_TEMPLATE = re.compile(r"\{([^{}]+)\}")
# `at`, `related`, `requires` and fix targets: dotted names, read by the engine, never evaluated
_DOTTED = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*")
_KEY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,199}")  # what fix.rename writes
MAX_RULE_FILE_BYTES = 1024 * 1024

Template = tuple[tuple[str, Expression | None], ...]  # literal text, or an expression to show


@record(slots=True)
class CompiledRule:
    spec: RuleSpec
    path: Path
    when: Expression
    for_each: Expression | None
    message: Template
    # fix target -> ("expr", Expression) | ("template", Template) | ("literal", value)
    fix_values: dict[str, tuple[str, Any]]
    fix_when: Expression | None = None
    fix_description: Template = ()
    fix_renames: dict[str, tuple[str, Any]] = field(default_factory=dict)  # ("expr", E) | ("literal", name)
    lines: dict[str, int] = field(default_factory=dict)  # field of the rule file -> its 1-based line
    let: dict[str, Expression] = field(default_factory=dict)
    message_by: Expression | None = None
    message_cases: dict[str, Template] = field(default_factory=dict)
    severity_when: dict[str, Expression] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.spec.code

    def templates(self) -> Iterator[tuple[str, Template]]:
        """Every message template with its field (`message`, `message.cases.KEY`)."""
        if self.message:
            yield "message", self.message
        yield from ((f"message.cases.{k}", t) for k, t in self.message_cases.items())

    def expressions(self) -> Iterator[tuple[str, Expression]]:
        """Every expression of the rule with the field it is written in, for a static check of the names
        it reads (advisor.core.expr.references) against a fact catalogue; `where(field)` gives its line."""
        yield from ((f"let.{name}", e) for name, e in self.let.items())
        singles = (
            ("for_each", self.for_each),
            ("when", self.when),
            ("message.by", self.message_by),
            ("fix.when", self.fix_when),
        )
        yield from ((part, e) for part, e in singles if e is not None)
        yield from ((f"severity.{sev}", e) for sev, e in self.severity_when.items())
        for part, template in (*self.templates(), ("fix.description", self.fix_description)):
            yield from ((part, e) for _, e in template if e is not None)
        for kind, payload in (*self.fix_values.values(), *self.fix_renames.values()):
            if kind == "expr":
                yield "fix", payload
            elif kind == "template":
                yield from (("fix", e) for _, e in payload if e is not None)

    def where(self, part: str) -> str:
        """`FILE:LINE` of a field of the rule file (the file alone when its line is not known)."""
        line = _field_line(self.lines, part)
        return f"{self.path}:{line}" if line else str(self.path)


class _Compiler:
    """Parses one rule's expressions; a refusal names the rule file, the line and the field."""

    def __init__(
        self, spec: RuleSpec, path: Path, lines: dict[str, int], text: str | None, eager: bool
    ) -> None:
        self.eager = eager
        self.checked = False  # a deferred expression's whitelist ran already (the prebuilt catalog)
        self.spec = spec
        self.path = path
        self.lines = lines
        self.text_lines = text.splitlines() if text is not None else None

    def fail(self, part: str, problem: str, source: str | None = None) -> RuleError:
        line = self._line_of(part, source)
        where = f"{self.path}:{line}" if line else str(self.path)
        return RuleError(f"{where}: rule {self.spec.code}, {part}: {problem}")

    def _line_of(self, part: str, source: str | None) -> int | None:
        line = _field_line(self.lines, part)
        if line and source and self.text_lines is not None:
            # a template spread over several lines of a block scalar: find the line the expression starts on
            needle = source.strip().splitlines()[0][:40] if source.strip() else ""
            for i in range(line - 1, min(len(self.text_lines), line + 200)):
                if needle and needle in self.text_lines[i]:
                    return i + 1
        return line

    def expression(self, source: Any, part: str) -> Expression:
        try:
            return parse(source, HELPERS) if self.eager else deferred(source, HELPERS, checked=self.checked)
        except ExprError as exc:
            raise self.fail(part, str(exc), source if isinstance(source, str) else None) from None

    def template(self, text: Any, part: str) -> Template:
        if not isinstance(text, str):
            raise self.fail(part, "must be text")
        parts: list[tuple[str, Expression | None]] = []
        pos = 0
        for m in _TEMPLATE.finditer(text):
            parts.append((text[pos : m.start()], None))
            parts.append(("", self.expression(m.group(1), part)))
            pos = m.end()
        parts.append((text[pos:], None))
        # `{a{b}c}` would show b and print the rest as text: refuse it rather than guess
        if any(expr is None and ("{" in literal or "}" in literal) for literal, expr in parts):
            raise self.fail(
                part, "a brace outside a {expression}: expressions in a template cannot nest braces"
            )
        return tuple(parts)

    def dotted(self, path: Any, part: str) -> None:
        if not isinstance(path, str) or not _DOTTED.fullmatch(path.strip()):
            raise self.fail(part, f"{path!r} is not a dotted name such as batch.world_size")


def _field_line(lines: dict[str, int], part: str) -> int | None:
    """The line of `a.b.c`, else of `a.b`, else of `a`."""
    pieces = part.split(".")
    for n in range(len(pieces), 0, -1):
        line = lines.get(".".join(pieces[:n]))
        if line:
            return line
    return None


def compile_rule(
    spec: RuleSpec,
    path: Path,
    lines: dict[str, int] | None = None,
    text: str | None = None,
    *,
    eager: bool = True,
    checked: bool = False,
) -> CompiledRule:
    """Parse and check every expression of a validated rule; raises RuleError with the file and line.

    eager=False (a rule from the cache) parses each expression on first use; checked=True (the package's
    prebuilt catalog) skips the expression whitelist, which ran at build time."""
    lines = dict(lines or {})
    c = _Compiler(spec, path, lines, text, eager)
    c.checked = checked and not eager
    for req in spec.requires:
        c.dotted(req, "requires")
    for alt in (spec.at or "").split(" or "):
        if alt.strip():
            c.dotted(alt, "at")
    for rel in spec.related:
        c.dotted(rel, "related")
    fix_values: dict[str, tuple[str, Any]] = {}
    fix_renames: dict[str, tuple[str, Any]] = {}
    fix_when = None
    description: Template = ()
    if spec.fix:
        for target, raw in spec.fix.set.items():
            c.dotted(target, "fix")
            if isinstance(raw, str) and _TEMPLATE.fullmatch(raw):
                fix_values[target] = ("expr", c.expression(raw[1:-1], "fix"))
            elif isinstance(raw, str) and "{" in raw:
                fix_values[target] = ("template", c.template(raw, "fix"))
            elif (odd := _unwritable(raw)) is None:
                fix_values[target] = ("literal", raw)
            else:
                raise c.fail(f"fix.set.{target}", f"{odd} is not a value a fix can write (quote it as text)")
        for target in spec.fix.delete:
            c.dotted(target, "fix")
        for target, raw in spec.fix.rename.items():
            c.dotted(target, "fix")
            if _TEMPLATE.fullmatch(raw):
                fix_renames[target] = ("expr", c.expression(raw[1:-1], "fix"))
            elif _KEY_NAME.fullmatch(raw):
                fix_renames[target] = ("literal", raw)
            else:
                raise c.fail(f"fix.rename.{target}", f"{raw!r} is neither a key name nor one {{expression}}")
        fix_when = c.expression(spec.fix.when, "fix.when")
        description = c.template(spec.fix.description, "fix.description") if spec.fix.description else ()
    rule = CompiledRule(
        spec=spec,
        path=path,
        when=c.expression(spec.when, "when"),
        for_each=c.expression(spec.for_each, "for_each") if spec.for_each else None,
        message=c.template(spec.message.strip(), "message") if spec.message.strip() else (),
        fix_values=fix_values,
        fix_when=fix_when,
        fix_description=description,
        fix_renames=fix_renames,
        lines=lines,
        let={name: c.expression(src, f"let.{name}") for name, src in spec.let.items()},
        message_by=c.expression(spec.message_by, "message.by") if spec.message_by else None,
        message_cases={
            str(k): c.template(t.strip(), f"message.cases.{k}") for k, t in spec.message_cases.items()
        },
        severity_when={sev: c.expression(src, f"severity.{sev}") for sev, src in spec.severity_when.items()},
    )
    if not rule.message and not rule.message_cases:
        raise c.fail("message", "a rule needs a message")
    if eager:  # a cached rule was checked when it was stored
        from advisor.facts.references import check_rule

        for part, source, problem in check_rule(rule, HELPERS):
            raise c.fail(part, problem, source)
    return rule


def builtin_rules_dir() -> Path:
    """rules/ in a source checkout, or the copy packaged inside the wheel."""
    checkout = PACKAGE_DIR.parent / "rules"
    if checkout.is_dir():
        return checkout
    return PACKAGE_DIR / "_rules"


def is_builtin(rule: Any) -> bool:
    """Whether a rule comes from the shipped catalog (ours) rather than a user's rule folder."""
    try:
        return Path(rule.path).resolve().parent == builtin_rules_dir().resolve()
    except OSError:
        return False


def is_internal_error(error: str, rules: Iterable[Any]) -> bool:
    """An evaluation error is ours (an internal error, exit 3) when the failing rule is built in or
    unknown; a user's own rule file that fails is theirs to fix (exit 2). The text is the one
    Engine.evaluate writes: "rule CODE (FILE) failed on ..."."""
    m = re.match(r"rule (\S+) \(", str(error))
    by_code = {r.code: r for r in rules}
    rule = by_code.get(m.group(1)) if m else None
    return rule is None or is_builtin(rule)


def error_label(error: str, rules: Iterable[Any]) -> str:
    """How reporters title an evaluation error."""
    return "internal error" if is_internal_error(error, rules) else "rule error"


def _read_rule_text(path: Path) -> str:
    """A rule file's text through the one safe reader: a FIFO, a device or an oversized file is refused."""
    from advisor.sources.read import ReadRefused, read_text_file

    try:
        return read_text_file(path, MAX_RULE_FILE_BYTES)
    except ReadRefused as exc:
        raise RuleError(f"cannot read rule file {exc}") from None


def _field_lines(node: Any) -> dict[str, int]:
    """The line each field of a rule file starts on (its value's; a block scalar's first text line)."""
    import yaml

    def line(value: Any) -> int:
        style = getattr(value, "style", None)
        return value.start_mark.line + 1 + (1 if style in ("|", ">") else 0)

    lines: dict[str, int] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            continue
        _record(lines, k.value, v, line, depth=2)
    return lines


def _record(lines: dict[str, int], name: str, node: Any, line: Callable[[Any], int], depth: int) -> None:
    """The line of a field and of the fields of a mapping under it (`fix.when`, `message.cases.fails`)."""
    import yaml

    lines[name] = line(node)
    if depth and isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                _record(lines, f"{name}.{k.value}", v, line, depth - 1)


MAX_RULE_NODES = 50_000  # YAML nodes of one rule file, aliases counted each time they are used


def _too_many_nodes(node: Any) -> bool:
    """Whether the document expands to more than MAX_RULE_NODES nodes: aliases share nodes, so a small
    file can stand for billions of values (`&a [*b, *b, ...]`), which validating or caching would walk."""
    import yaml

    stack, seen = [node], 0
    while stack:
        n = stack.pop()
        seen += 1
        if seen > MAX_RULE_NODES:
            return True
        if isinstance(n, yaml.MappingNode):
            stack.extend(part for pair in n.value for part in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return False


_CONSTRUCTOR_ERRORS = (ValueError, TypeError, LookupError, AttributeError, ArithmeticError)


@cache
def _rule_loader() -> Any:
    """PyYAML's safe loader, whose constructors raise what they meet on a bad tagged value (`!!bool maybe`
    a KeyError, `!!int ''` an IndexError, `!!timestamp x` an AttributeError: yaml/constructor.py
    construct_yaml_bool, construct_yaml_int, construct_yaml_timestamp), each turned into a ConstructorError
    at the value's position, as the loader's own errors are."""
    import yaml

    class RuleLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except _CONSTRUCTOR_ERRORS as exc:
                kind = str(node.tag).rpartition(":")[2] or "value"
                shown = repr(node.value[:40]) if isinstance(node.value, str) else ""
                detail = f" ({str(exc)[:120]})" if type(exc) is ValueError else ""
                raise yaml.constructor.ConstructorError(
                    None, None, f"{shown} is not a valid {kind}{detail}".lstrip(), node.start_mark
                ) from None

    return RuleLoader


def _unwritable(value: Any, depth: int = 0) -> str | None:
    """What in a fix value read from the rule file a fix cannot write (a date, bytes, a set), or None."""
    if value is None or type(value) in (bool, int, float, str):
        return None
    if depth > 50:
        return "a value nested over 50 levels"
    if type(value) is list:
        return next((w for w in (_unwritable(v, depth + 1) for v in value) if w), None)
    if type(value) is dict:
        keys = (f"a {type(k).__name__} key" for k in value if type(k) is not str)
        return next(keys, None) or next(
            (w for w in (_unwritable(v, depth + 1) for v in value.values()) if w), None
        )
    return f"a {type(value).__name__}"


def load_rule_file(path: Path) -> CompiledRule:
    import yaml

    text = _read_rule_text(path)
    try:
        loader = _rule_loader()(text)
        try:
            node = loader.get_single_node()
            if node is not None and _too_many_nodes(node):
                raise RuleError(f"{path}: rule file expands to over {MAX_RULE_NODES:,} values (YAML aliases)")
            raw = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise RuleError(
            f"{path}{line}: rule file is not valid YAML: {getattr(exc, 'problem', exc)}"
        ) from None
    except RecursionError:
        raise RuleError(f"{path}: rule file is nested too deeply") from None
    except _CONSTRUCTOR_ERRORS as exc:  # raised outside a value's constructor: no position to give
        raise RuleError(f"{path}: rule file cannot be read: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(raw, dict):
        raise RuleError(f"{path}:1: a rule file is a mapping with code, name, severity, when, message, docs")
    from advisor.core.datacodec import Invalid
    from advisor.engine.rule_schema import validate_rule

    lines = _field_lines(node)
    try:
        spec = validate_rule(raw)
    except Invalid as exc:  # name the fields
        errors: list[dict[str, Any]] = exc.errors()
        loc = [str(p) for p in errors[0]["loc"]] if errors else []
        # the deepest entry of the key path whose line is known (`fix.set.<key>`, else `fix`)
        found = [lines[k] for k in (".".join(loc[:n]) for n in range(len(loc), 0, -1)) if k in lines]
        at = f":{found[0]}" if found else ""
        detail = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in errors) or str(exc)
        raise RuleError(f"{path}{at}: invalid rule file: {detail}") from None
    return compile_rule(spec, path, lines, text)


def _rules_to_data(rules: tuple[CompiledRule, ...], base: Path | None = None) -> list[dict[str, Any]]:
    """The compiled rules as plain data; with `base`, each path as its name in that folder (the
    prebuilt catalog: built from rules/, read from the wheel's advisor/_rules)."""
    from advisor.core.datacodec import encode

    return [
        {"path": r.path.name if base else str(r.path), "lines": r.lines, "spec": encode(r.spec)}
        for r in rules
    ]


def _rules_from_data(data: Any, base: Path | None = None) -> tuple[CompiledRule, ...]:
    """The cached catalog: validated specs as data; their expressions are parsed and checked again, each on
    first use (a check evaluates every `when` but renders few messages); with `base` (the package's prebuilt
    catalog, checked when the package was built) parsed only: the runtime cache, which another process could
    have written, is checked again."""
    from advisor.core.datacodec import DataError, decode

    if not isinstance(data, list):
        raise DataError("the cached rule catalog is not a list")
    out = []
    for d in data:
        path = Path(decode(str, d["path"]))
        if base is not None:
            if path.name != str(path):
                raise DataError("a prebuilt rule's path is not a file name")
            path = base / path
        spec, lines = decode(RuleSpec, d["spec"]), decode(dict[str, int], d["lines"])
        out.append(compile_rule(spec, path, lines, eager=False, checked=base is not None))
    return tuple(out)


def _builtin_key(files: list[Path]) -> object:
    """The prebuilt catalog's key: the rule files' names, sizes and contents. The fact catalogue is the same
    package's code, built with them (the runtime cache, which any version may share, keys by its digest)."""
    from advisor.core.cache import content_stamps

    return content_stamps(files)


def prebuilt_rules(directory: Path) -> tuple[object, list[dict[str, Any]]]:
    """(key, data) of the built-in catalog compiled from `directory`, for the build to store in the
    package (setup.py); _load_dir reads it back for the same files."""
    files = sorted(directory.glob("*.yaml"))
    rules = tuple(load_rule_file(p) for p in files)
    return _builtin_key(files), _rules_to_data(rules, base=directory)


def _from_prebuilt(directory: Path, files: list[Path]) -> tuple[CompiledRule, ...] | None:
    from advisor.core.cache import has_prebuilt, prebuilt

    if not has_prebuilt("rules"):  # a source checkout: the runtime cache
        return None
    try:
        data = prebuilt("rules", _builtin_key(files))
        return None if data is None else _rules_from_data(data, base=directory)
    except Exception:  # an entry of the wrong shape: compile from the files
        return None


@cache
def _builtin_rules() -> tuple[CompiledRule, ...]:
    """The shipped catalog, once per process; a user's rule folder is read again by each check."""
    return _load_dir(builtin_rules_dir())


def _load_dir(directory: Path) -> tuple[CompiledRule, ...]:
    """Compile a folder of rule files (through the on-disk cache: a pre-commit hook pays this on
    every commit, and validating the catalog costs more than checking a typical project)."""
    files = sorted(directory.glob("*.yaml"))
    if directory == builtin_rules_dir():  # an installed wheel: decoded at build time
        built = _from_prebuilt(directory, files)
        if built is not None:
            return built
    from advisor.core.cache import cached, file_stamps
    from advisor.facts import catalogue

    try:
        # the rules were checked against the catalogue when they were stored: a new one checks them again
        stamps = [*file_stamps(files), ("fact catalogue", catalogue.digest())]
    except OSError as exc:
        raise RuleError(f"{directory}: cannot read rule files: {exc.strerror or exc}") from None
    return cached(
        "rules",
        str(directory),
        stamps,
        lambda: tuple(load_rule_file(p) for p in files),
        to_data=_rules_to_data,
        from_data=_rules_from_data,
    )


def load_catalog(extra_dirs: Iterable[Path] = ()) -> list[CompiledRule]:
    rules = list(_builtin_rules())
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
    """Whether any selector names the rule (advisor/engine/selectors.py: codes, prefixes, names, aliases,
    ALL)."""
    from advisor.engine.selectors import matches_any

    return matches_any(selectors, rule.spec.code, rule.spec.name, rule.spec.aliases)


def select_rules(
    rules: list[CompiledRule], select: list[str] | None, ignore: list[str] | None
) -> list[CompiledRule]:
    chosen = [r for r in rules if matches(r, select)] if select else list(rules)
    if ignore:
        chosen = [r for r in chosen if not matches(r, ignore)]
    return chosen


@record(slots=True)
class Context:
    """What one rule evaluation sees: fact namespaces by name, the run, and a fallback location."""

    names: dict[str, Any]
    fallback: Location
    run: str | None = None
    documents: dict[str, Any] = field(default_factory=dict)  # namespace -> Document for fixes


class Engine:
    def __init__(
        self, rules: list[CompiledRule], severity_overrides: Mapping[str, str] | None = None
    ) -> None:
        self.rules = rules
        self.severity_overrides = severity_overrides or {}
        self.errors: list[str] = []
        self._exhausted: set[str] = set()  # rules stopped by their budget: not evaluated again

    def evaluate(self, scope: str, contexts: Iterable[Context]) -> Iterator[Finding]:
        rules = [r for r in self.rules if r.spec.scope == scope]
        for ctx in contexts:
            ev = Evaluator(ctx.names, HELPERS)
            for rule in rules:
                if rule.code in self._exhausted:
                    continue
                ev.reset()  # each rule has its own budget
                try:
                    found = list(self._evaluate(rule, ctx, ev))
                except Exception as exc:  # a broken rule must not take the others down
                    # commands/check.errors_exit_code reads the code from "rule CODE (FILE) failed on ..."
                    self.errors.append(
                        f"rule {rule.code} ({rule.path.name}) failed on {ctx.run or ctx.fallback.file}: "
                        f"{_describe(exc)}"
                    )
                    if isinstance(exc, BudgetError):  # it would spend its budget again on every file
                        self._exhausted.add(rule.code)
                    continue
                finally:
                    for name in ("item", *rule.let):
                        ev.unbind(name)
                yield from found

    def _evaluate(self, rule: CompiledRule, ctx: Context, ev: Evaluator) -> Iterator[Finding]:
        for req in rule.spec.requires:
            if not _truthy_path(ctx.names, req):
                return
        items: list[Any] = [None]
        if rule.for_each is not None:
            listed = ev.evaluate(rule.for_each)
            if listed is None:
                listed = []
            if type(listed) not in (list, tuple):
                raise EvalError(f"for_each gives {type(listed).__name__}, not a list")
            items = list(listed)
        for item in items:
            raw_item = None
            if rule.for_each is not None:
                ev.bind("item", item)
                raw_item = ev.raw_of(item)
            for name, expr in rule.let.items():  # each item reads its own
                ev.bind_lazy(name, expr)
            if not ev.evaluate(rule.when):
                continue
            message = _render(ev, _message_of(rule, ev))
            location, related = self._locate(rule, ctx, item, raw_item)
            own = item.get("severity") if type(item) is dict else None  # an item may carry its own
            if own is not None and own not in SEVERITY_RANK:
                raise EvalError(f"item severity {own!r} is not one of {', '.join(SEVERITY_RANK)}")
            conditional = next((sev for sev, cond in rule.severity_when.items() if ev.evaluate(cond)), None)
            severity = self.severity_overrides.get(rule.code, own or conditional or rule.spec.severity)
            yield Finding(
                rule=rule.code,
                name=rule.spec.name,
                severity=severity,  # type: ignore[arg-type]
                message=message,
                location=location,
                run=ctx.run,
                related=related,
                fix=self._fix(rule, ev, ctx, item, raw_item),
            )

    def _locate(
        self, rule: CompiledRule, ctx: Context, item: Any, raw_item: Any
    ) -> tuple[Location, list[Location]]:
        related: list[Location] = []
        location = ctx.fallback
        for path in (rule.spec.at or "").split(" or "):  # `a or b`: the first that has a position
            if not path.strip():
                continue
            target = _resolve(ctx.names, path.strip(), item, raw_item)
            loc = _location_of(target)
            if loc is None:
                continue
            location = loc
            if isinstance(target, Value):
                related.extend(target.related)
            break
        for path in rule.spec.related:
            target = _resolve(ctx.names, path, item, raw_item)
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

    def _fix(self, rule: CompiledRule, ev: Evaluator, ctx: Context, item: Any, raw_item: Any) -> Fix | None:
        spec = rule.spec.fix
        if spec is None or rule.fix_when is None or not ev.evaluate(rule.fix_when):
            return None
        edits: list[Edit] = []
        for target, (kind, payload) in rule.fix_values.items():
            if kind == "expr":
                value = ev.evaluate(payload)
                if ev.weight(value) > LIMITS.string_chars:  # it is written into the file and the report
                    raise BudgetError(
                        f"a fix value of more than {LIMITS.string_chars:,} elements and characters"
                    )
            elif kind == "template":
                value = _render(ev, payload)
            else:
                value = payload
            if value is None and _resolve(ctx.names, target, None, None) is None:
                continue  # null for a setting the run does not have: nothing to edit in that place
            edit = _edit_for(ctx, target, value)
            if edit is None:
                return None
            edits.append(edit)
        for target in spec.delete:
            edit = _edit_for(ctx, target, DELETE)
            if edit is None:
                return None
            edits.append(edit)
        for target, (kind, payload) in rule.fix_renames.items():
            new = ev.evaluate(payload) if kind == "expr" else payload
            if new is None:
                return None  # the item has no rename: no fix
            if type(new) is not str or not _KEY_NAME.fullmatch(new):
                raise EvalError(f"fix.rename.{target} gives a {type(new).__name__} that is not a key name")
            loc = _location_of(_resolve(ctx.names, target, item, raw_item))
            if loc is None or not loc.key:
                return None  # no key in a file (a launch flag): nothing to rename by position
            edits.append(Edit(loc.file, loc.key, None, rename=new))
        description = _render(ev, rule.fix_description) if rule.fix_description else ""
        return Fix(description=description, safety=spec.safety, edits=tuple(edits))


def _message_of(rule: CompiledRule, ev: Evaluator) -> Template:
    """The rule's template, or the case of its message mapping that `by` names."""
    if rule.message_by is None:
        return rule.message
    key = ev.evaluate(rule.message_by)
    template = rule.message_cases.get(text_of(key)) if type(key) in (str, int, bool) else None
    if template is not None:
        return template
    if rule.message:
        return rule.message
    raise EvalError(f"message: no case for {rule.spec.message_by} = {key!r} and no default")


def _describe(exc: Exception) -> str:
    if isinstance(exc, BudgetError):
        return f"stopped: {exc} (rule expressions have bounded work)"
    if isinstance(exc, EvalError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _step(node: Any, part: str) -> Any:
    """One step down a dotted path the engine follows: namespace entries and mapping keys only."""
    if isinstance(node, Namespace):
        return node.read(part)
    if isinstance(node, dict):
        return node.get(part)
    return None


def _truthy_path(names: dict[str, Any], dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    node = names.get(head)
    for part in rest.split(".") if rest else []:
        node = _step(node, part)
    return bool(node)


def _resolve(names: dict[str, Any], dotted: str, item: Any, raw_item: Any) -> Any:
    """A dotted path gives the Value (with provenance), not only the plain value. `item` is the fact
    the current for_each item was converted from, when it came from one."""
    head, _, rest = dotted.partition(".")
    node = (raw_item if raw_item is not None else item) if head == "item" else names.get(head)
    if not rest:
        return node
    if isinstance(node, Namespace):
        return node.lookup(rest)
    for part in rest.split("."):
        node = _step(node, part)
    return node


def _location_of(target: Any) -> Location | None:
    if isinstance(target, Location):
        return target
    if isinstance(target, Value):
        return target.origin
    if isinstance(target, dict):
        loc = target.get("location")
        return loc if isinstance(loc, Location) else None
    return None


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


def _render(ev: Evaluator, parts: Template) -> str:
    out = []
    total = 0
    too_long = f"a message of more than {LIMITS.string_chars:,} characters"
    for text, expr in parts:
        piece = text
        if expr is not None:
            value = ev.evaluate(expr)
            try:  # shown within what the message has left: refused before it is built
                piece = show_text(value, max(LIMITS.string_chars - total, 0))
            except BudgetError:
                raise BudgetError(too_long) from None
        total += len(piece)
        if total > LIMITS.string_chars:
            raise BudgetError(too_long)
        out.append(piece)
    return "".join(out)


def at_or_above(severity: str, threshold: str) -> bool:
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]
