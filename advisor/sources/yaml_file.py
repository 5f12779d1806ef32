"""YAML with positions, typed the way HF and accelerate type it (PyYAML, YAML 1.1).

The composer gives every node its mark, and the YAML 1.1 resolver has already tagged each plain
scalar, so values come out exactly as `yaml.safe_load` would produce them. We build the values
ourselves (not `construct_document`) to bound alias expansion and nesting depth, and to see
duplicate keys, which PyYAML silently resolves to the last one.

An alias (`learning_rate: *lr`) is the anchored node itself once composed, so its own position is
lost; when the text has aliases we compose with PyYAML's Python composer over the same parser, which
records the mark of each alias event under its place in the parent node.
"""

from __future__ import annotations

import bisect
import re
import sys
from typing import Any

import yaml

from advisor.core.document import KeyPath, SourceProblem, Span, refused_number
from advisor.core.records import record
from advisor.sources.yaml_merge import MergeKeys, MergePair, PyYamlPin

try:  # the C composer is several times faster
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader


class _AliasLoader(yaml.composer.Composer, _Loader):
    """The Python composer (same events, same resolver) that keeps where each alias is written."""

    def __init__(self, text: str) -> None:
        # _Loader is picked at import (the C or the Python loader), so mypy sees only `type` here
        _Loader.__init__(self, text)  # type: ignore[misc]
        yaml.composer.Composer.__init__(self)
        # (id(parent node), id(key node) or item index) -> mark of the alias written there
        self.alias_marks: dict[tuple[int, int], yaml.Mark] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if parent is not None and index is not None and self.check_event(yaml.AliasEvent):
            # a sequence passes the item's position, a mapping the key node of the value
            where = index if isinstance(index, int) else id(index)
            self.alias_marks[(id(parent), where)] = self.peek_event().start_mark
        return super().compose_node(parent, index)


# Nodes once aliases are expanded. Composing and building cost ~10 us a node (PyYAML's resolver runs
# in Python for every scalar even under the C loader): 99,000 keys took 20 s. The largest corpus file
# has 419 nodes.
MAX_NODES = 50_000
# Over this size, or with more flow brackets than MAX_DEPTH, the events are counted first (the C parser
# alone, ~1 us an event), so a file that will be refused is refused before it is composed.
PRECOUNT_CHARS = 256 * 1024
# A file with a tab that libyaml refuses is read again by the pure-Python loader for its error, up to
# this size (~1 s).
PURE_RETRY_CHARS = 256 * 1024
MAX_DEPTH = 64
MAX_PROBLEMS = 100
# A 130 KB file whose aliases repeat a 100 KB string 3,000 times is 300 MB of values (`plan --format
# json` printed 500 MB): expanded text is bounded like expanded nodes, at the size limit of a config.
MAX_CHARS = 10 * 1024 * 1024

# What a YAML 1.2 reader (ruamel, most editors, most people) takes for a number or a boolean.
_YAML12_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)$")
_YAML12_BOOL = {"true", "false", "True", "False", "TRUE", "FALSE"}


class YamlTooLarge(Exception):
    """Kept for callers that catch it; the limits now raise YamlLimitError, which carries a mark."""


class YamlValueError(yaml.MarkedYAMLError):
    """A scalar that yaml.safe_load would fail to construct (`!!float abc`, `!!bool maybe`, a
    5000-digit integer): the consumer crashes on the whole file, so it is a parse error at the node."""

    def __init__(self, problem: str, mark: Any) -> None:  # a yaml.Mark, or the C parser's mark
        super().__init__(problem=problem, problem_mark=mark)

    def __str__(self) -> str:
        return str(self.problem)


class YamlLimitError(yaml.MarkedYAMLError):
    """A size or depth limit hit while building values; problem_mark is the node where it was hit."""

    def __init__(self, problem: str, mark: Any) -> None:  # a yaml.Mark, or the C parser's mark
        super().__init__(problem=problem, problem_mark=mark)

    def __str__(self) -> str:
        return str(self.problem)


@record(slots=True)
class YamlResult:
    data: Any
    key_spans: dict[KeyPath, Span]
    value_spans: dict[KeyPath, Span]
    problems: list[SourceProblem]


def _span(node: yaml.Node) -> Span:
    return _mark_span(node.start_mark)


def _mark_span(mark: yaml.Mark) -> Span:
    return Span(mark.line + 1, mark.column + 1)


def _value_span(node: yaml.Node) -> Span:
    """A value's span with its end, for --fix: scalars and flow collections end at their end mark; a
    block collection's end mark is the next token's start, so it gets none."""
    start, end = node.start_mark, node.end_mark
    if not isinstance(node, yaml.ScalarNode) and not getattr(node, "flow_style", False):
        return _mark_span(start)
    return Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1, start.index, end.index)


class _Builder:
    def __init__(self, loader: Any, pyyaml: PyYamlPin | None = None) -> None:
        self.loader = loader
        self.merge = MergeKeys(pyyaml, YamlValueError, YamlLimitError, MAX_NODES)
        self.alias_marks: dict[tuple[int, int], yaml.Mark] = getattr(loader, "alias_marks", {})
        self.key_spans: dict[KeyPath, Span] = {}
        self.value_spans: dict[KeyPath, Span] = {}
        self.problems: list[SourceProblem] = []
        self.visited = 0
        self.chars = 0  # scalar text built, aliases expanded: what every later stage copies and prints
        # An alias is built once and shared, as PyYAML does; its expanded size still counts, so a
        # billion-laughs document is refused in time linear in its text.
        self.built: dict[int, tuple[Any, int, int]] = {}  # id(node) -> (value, nodes, chars)

    def build(self, node: yaml.Node, path: KeyPath, depth: int, alias: yaml.Mark | None = None) -> Any:
        """Build ``node`` at ``path``; ``alias`` is the mark of the alias written there, if any."""
        if alias is not None:
            self.value_spans.setdefault(path, _mark_span(alias))
        if id(node) in self.built:
            value, size, chars = self.built[id(node)]
            self._count(size, alias or node.start_mark, chars)
            return value
        before, chars_before = self.visited, self.chars
        value = self._build(node, path, depth, alias)
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            self.built[id(node)] = (value, self.visited - before, self.chars - chars_before)
        return value

    def problem(self, problem: SourceProblem) -> None:
        """Keep at most MAX_PROBLEMS (rules walk them in comprehensions, which are capped), then one
        summary: 100,000 duplicate keys need one finding saying so, not 100,000."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        elif len(self.problems) == MAX_PROBLEMS:
            self.problems.append(
                SourceProblem(
                    "too-many-problems",
                    f"more than {MAX_PROBLEMS} problems in this file: the rest are not reported",
                    problem.span,
                    severity="warning",
                )
            )

    def _count(self, n: int, mark: yaml.Mark, chars: int = 0) -> None:
        self.visited += n
        self.chars += chars
        if self.visited > MAX_NODES:
            raise YamlLimitError(
                f"more than {MAX_NODES} nodes once aliases are expanded (an alias bomb?)", mark
            )
        if self.chars > MAX_CHARS:
            raise YamlLimitError(
                f"more than {MAX_CHARS // (1024 * 1024)} MB of text once aliases are expanded "
                "(an alias repeating a long string?)",
                mark,
            )

    def _build(self, node: yaml.Node, path: KeyPath, depth: int, alias: yaml.Mark | None = None) -> Any:
        scalar_chars = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
        self._count(1, alias or node.start_mark, scalar_chars)
        if depth > MAX_DEPTH:
            raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels", alias or node.start_mark)
        self.value_spans.setdefault(path, _value_span(node))
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            origins: dict[Any, MergePair] = {}
            for pair in self.merge.pairs(node, depth):
                key_node, value_node = pair.key, pair.value
                key = self.build_scalar_key(key_node)
                child = (*path, key)
                earlier = origins.get(key)
                if earlier is not None:
                    message = self.merge.conflict(str(key), earlier, pair)
                    if message is not None:
                        self.problem(
                            SourceProblem(
                                "duplicate-key", message, _span(key_node), child, severity="warning"
                            )
                        )
                    # the value that wins is this one: its position is the one reported
                    self.value_spans.pop(child, None)
                origins[key] = pair
                self.key_spans[child] = _span(key_node)
                out[key] = self.build(
                    value_node, child, depth + 1, self.alias_marks.get((id(pair.parent), id(key_node)))
                )
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                alias = self.alias_marks.get((id(node), i))
                self.key_spans[(*path, i)] = _mark_span(alias) if alias is not None else _span(item)
                items.append(self.build(item, (*path, i), depth + 1, alias))
            return items
        value = self.construct(node)
        if alias is None:  # an alias repeats a value already judged where its anchor is written
            self._check_yaml11(node, value, path)
            refusal = refused_number(value)
            if refusal is not None:
                self.problem(
                    SourceProblem("refused-number", refusal, _span(node), path, detail="refused-number")
                )
        return value

    def construct(self, node: yaml.Node, deep: bool = False) -> Any:
        """The scalar as yaml.safe_load constructs it. SafeConstructor raises plain Python errors for
        a value its tag cannot take (pyyaml 6.0.3 yaml/constructor.py: construct_yaml_bool line 235
        KeyError, construct_yaml_int line 248-263 ValueError, construct_yaml_float line 292
        ValueError, construct_yaml_timestamp line 324-330 AttributeError/ValueError; int() past
        sys.get_int_max_str_digits() ValueError): each becomes a YAML error at the node."""
        try:
            return self.loader.construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except ValueError as exc:
            digits = len(node.value) if isinstance(node.value, str) else 0
            if "integer string conversion" in str(exc) or "int_max_str_digits" in str(exc):
                raise YamlValueError(
                    f"an integer of {digits} digits is too large to read (Python refuses integers of "
                    f"more than {sys.get_int_max_str_digits()} digits)",
                    node.start_mark,
                ) from None
            raise YamlValueError(self._bad_scalar(node), node.start_mark) from None
        except (KeyError, AttributeError, TypeError, OverflowError, IndexError):
            # IndexError: `!!int ''` / `!!float ''` (construct_yaml_int/float read value[0]: line 251, 282)
            raise YamlValueError(self._bad_scalar(node), node.start_mark) from None

    @staticmethod
    def _bad_scalar(node: yaml.Node) -> str:
        text = node.value if isinstance(node.value, str) else ""
        shown = text if len(text) <= 40 else text[:37] + "..."
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        return f"{shown!r} is not a valid {tag} value: yaml.safe_load fails on it"

    def build_scalar_key(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            # yaml.safe_load refuses a collection as a key ("found unhashable key": pyyaml 6.0.3
            # constructor.py:131-135); constructing it first expanded its aliases without a bound
            kind = "mapping" if isinstance(node, yaml.MappingNode) else "sequence"
            raise YamlValueError(
                f"a {kind} used as a key: yaml.safe_load fails on it (found unhashable key)", node.start_mark
            )
        key = self.construct(node)
        return key if isinstance(key, (str, int, float, bool)) or key is None else str(key)

    def _check_yaml11(self, node: yaml.Node, value: Any, path: KeyPath) -> None:
        # quoted or block scalar: no surprise (libyaml says "" for plain, PyYAML None)
        if not isinstance(node, yaml.ScalarNode) or node.style:
            return
        text = node.value
        if isinstance(value, str) and _YAML12_FLOAT.match(text):
            self.problem(
                SourceProblem(
                    "yaml11-scalar",
                    f"'{text}' is read as the string '{text}' by PyYAML (YAML 1.1), not as a number; "
                    f"write it with a decimal point, e.g. {_with_decimal_point(text)}",
                    _span(node),
                    path,
                    detail="number-string",
                )
            )
        elif isinstance(value, bool) and text not in _YAML12_BOOL:
            self.problem(
                SourceProblem(
                    "yaml11-scalar",
                    f"'{text}' is read as the boolean {value} by PyYAML (YAML 1.1); "
                    f"write {str(value).lower()} or quote it if you meant the string",
                    _span(node),
                    path,
                    detail="bool-word",
                )
            )
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and (":" in text or re.match(r"^[-+]?0[0-7]+$", text))
        ):
            self.problem(
                SourceProblem(
                    "yaml11-scalar",
                    f"'{text}' is read as the integer {value} by PyYAML (YAML 1.1 sexagesimal or octal)",
                    _span(node),
                    path,
                    detail="sexagesimal",
                )
            )


def _with_decimal_point(text: str) -> str:
    mantissa, _, exponent = text.lower().partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    if not exponent.startswith(("+", "-")):  # PyYAML's float pattern needs the exponent's sign too
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


def parse_yaml(text: str, pyyaml: PyYamlPin | None = None) -> YamlResult:
    """Parse one YAML document. Raises yaml.YAMLError (with a mark; YamlLimitError for the limits).

    ``pyyaml`` is the PyYAML release the consumer runs (the project's pin), which decides merge-key
    precedence (advisor/sources/yaml_merge.py); None: not pinned, the current release's order, and a
    message saying what each release does."""
    if len(text) > PRECOUNT_CHARS or text.count("[") + text.count("{") > MAX_DEPTH:
        _precount(text)
    loader = _AliasLoader(text) if "*" in text else _Loader(text)
    try:
        root = loader.get_single_node()
        builder = _Builder(loader, pyyaml)
        data = None if root is None else builder.build(root, (), 0)
    except (yaml.scanner.ScannerError, yaml.parser.ParserError) as exc:
        if "\t" in text and len(text) <= PURE_RETRY_CHARS:
            _pure_compose(text)  # the consumer's error: libyaml's can come later, or name the wrong thing
        raise exc from None
    finally:
        loader.dispose()
    if "\t" in text:
        _refuse_tabs(text, root)
    return YamlResult(data, builder.key_spans, builder.value_spans, builder.problems)


def _pure_compose(text: str) -> None:
    """Raise the error yaml.safe_load's pure-Python scanner and parser give (` \tkey: 1` fails at the
    tab there, and at the colon in libyaml); composing expands no alias, so this stays bounded."""
    loader = yaml.SafeLoader(text)
    try:
        loader.get_single_node()
    finally:
        loader.dispose()


def _precount(text: str) -> None:
    """Refuse a document of more than MAX_NODES nodes as written, or nested deeper than MAX_DEPTH, after
    at most that many events of the C parser. Composing first would be slow (PyYAML's resolver runs
    per scalar) or worse: libyaml's scanner is quadratic in the flow depth (10,000 `[` take 0.5 s,
    1,000,000 take minutes) and its composer recurses in C (a segmentation fault)."""
    loader = _Loader(text)
    try:
        nodes = depth = 0
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent | yaml.AliasEvent):
                nodes += 1
                if nodes > MAX_NODES:
                    raise YamlLimitError(
                        f"more than {MAX_NODES} nodes: not read as a config", event.start_mark
                    )
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH + 1:  # the builder counts the root as depth 0
                        raise YamlLimitError(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
    finally:
        loader.dispose()


class YamlTabError(yaml.MarkedYAMLError):
    """A tab that libyaml skips as white space but PyYAML's pure-Python scanner refuses."""

    def __init__(self, mark: yaml.Mark) -> None:
        super().__init__(
            problem="found character '\\t' that cannot start any token: yaml.safe_load (the pure-Python "
            "loader transformers and accelerate use) refuses a tab here; write spaces",
            problem_mark=mark,
        )


_YAML_BREAK = "\r\n|[\r\n\x85\u2028\u2029]"  # compiled (through re's cache) only for a file with a tab


def _refuse_tabs(text: str, root: yaml.Node | None) -> None:
    """Read tabs the way the consumer's loader does. HfArgumentParser and accelerate call
    yaml.safe_load, the pure-Python scanner, which refuses a tab anywhere but inside a quoted or block
    scalar or a comment (`key:<TAB>value`, a tab before a comment, in a flow sequence, in a plain
    scalar); the C loader we parse with accepts them all. Parsing every file with the pure loader costs
    several times more, so only files with a tab are checked, against the scalars just composed."""
    # YAML's line breaks (\r\n, \r, \n, NEL, LS, PS), as both loaders count lines; marks' indexes are in
    # code points, like str indexes
    line_starts = [0] + [m.end() for m in re.finditer(_YAML_BREAK, text)]
    quoted: list[tuple[int, int]] = []  # [start, end) of quoted and block scalars: tabs allowed
    plain: list[tuple[int, int]] = []
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            (quoted if node.style else plain).append((node.start_mark.index, node.end_mark.index))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    quoted.sort()
    inside = _Intervals(quoted)
    scalars = _Intervals(sorted(quoted + plain))
    for m in re.finditer("\t", text):
        pos = m.start()
        if inside.covers(pos):
            continue
        line = bisect.bisect_right(line_starts, pos) - 1
        if _in_comment(text, line_starts[line], pos, scalars):
            continue
        raise YamlTabError(yaml.Mark("<text>", pos, line, pos - line_starts[line], None, 0))


class _Intervals:
    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.starts = [a for a, _ in spans]
        self.spans = spans

    def covers(self, pos: int) -> bool:
        i = bisect.bisect_right(self.starts, pos) - 1
        # spans may nest only by repeating (aliases share nodes), so the nearest start decides
        return i >= 0 and self.spans[i][0] <= pos < self.spans[i][1]


def _in_comment(text: str, line_start: int, pos: int, scalars: _Intervals) -> bool:
    """A `#` before ``pos`` on its line, outside every scalar, at the line start or after white space."""
    hash_at = text.find("#", line_start, pos)
    while hash_at >= 0:
        if (hash_at == line_start or text[hash_at - 1] in " \t") and not scalars.covers(hash_at):
            return True
        hash_at = text.find("#", hash_at + 1, pos)
    return False


def yaml_error_span(exc: yaml.YAMLError) -> Span:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return Span(1, 1)
    return Span(mark.line + 1, mark.column + 1)


def yaml_error_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, YamlValueError):
        return f"invalid YAML value: {exc.problem}"
    if isinstance(exc, YamlLimitError):
        return f"YAML rejected: {exc.problem}"
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    parts = [p for p in (context, problem) if p]
    return "invalid YAML: " + (", ".join(parts) if parts else str(exc).splitlines()[0])
