"""YAML merge keys (`<<: *base`, `<<: [*a, *b]`) resolved the way the consumer's PyYAML resolves them.

SafeConstructor.flatten_mapping puts the merged pairs before the mapping's own and construct_mapping
assigns them in order, so a key written in the mapping beats every merged one, and among merged ones
the last in that order wins. The releases differ in the order of a merged *sequence*:

- PyYAML 6.0.3 constructor.py:180-213 collects each mapping of `<<: [*a, *b]` and reverses the list
  (`submerge.reverse()`), so `a`, the first, wins, as the YAML 1.1 merge spec says;
- PyYAML 6.0.4 constructor.py:180-212 appends them in list order, skipping a pair whose key string
  object it has seen (`id(pair[0].value)`), so `b`, the last, wins. Only the same key node seen twice
  (one anchor merged twice) or a key CPython interns (one character) is skipped; that is not modelled.

Several `<<` keys in one mapping: the later one's keys win in both releases.
"""

from __future__ import annotations

from typing import Any

import yaml

from advisor.core.records import record

MERGE_TAG = "tag:yaml.org,2002:merge"
VALUE_TAG = "tag:yaml.org,2002:value"
# The newest release, whose order is used when the project pins none (pypi.org/project/PyYAML)
CURRENT = "6.0.4"


@record(frozen=True, slots=True)
class PyYamlPin:
    """The PyYAML release a project pins: the version and where (``requirements.txt:3``)."""

    version: str
    where: str


@record(frozen=True, slots=True)
class MergePair:
    key: yaml.Node
    value: yaml.Node
    parent: yaml.Node  # the mapping the pair is written in (where its alias marks are kept)
    entry: int | None = None  # which `<<` of the mapping merged it; None: the mapping's own key
    item: int | None = None  # its mapping's place in a merged sequence


def reverses_sequences(version: str) -> bool:
    """Whether ``version`` keeps the first mapping of a merged sequence (6.0.3's order)."""
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) < (6, 0, 4)


class MergeKeys:
    """A mapping's pairs in the order PyYAML constructs them, with a budget on the pairs merged."""

    def __init__(self, pin: PyYamlPin | None, value_error: Any, limit_error: Any, budget: int) -> None:
        self.pin = pin
        self.first_wins = reverses_sequences(pin.version if pin is not None else CURRENT)
        self.value_error = value_error
        self.limit_error = limit_error
        self.budget = budget
        self._flat: dict[int, list[MergePair]] = {}
        self._open: set[int] = set()

    def pairs(self, node: yaml.MappingNode, depth: int = 0) -> list[MergePair]:
        """Merged pairs first (later wins), then the mapping's own."""
        if not any(k.tag == MERGE_TAG for k, _ in node.value):
            for k, _ in node.value:
                if k.tag == VALUE_TAG:
                    k.tag = "tag:yaml.org,2002:str"  # as flatten_mapping does (a plain `=` key)
            return [MergePair(k, v, node) for k, v in node.value]
        merged: list[MergePair] = []
        own: list[MergePair] = []
        for entry, (key_node, value_node) in enumerate(node.value):
            if key_node.tag != MERGE_TAG:
                if key_node.tag == VALUE_TAG:
                    key_node.tag = "tag:yaml.org,2002:str"
                own.append(MergePair(key_node, value_node, node))
                continue
            if isinstance(value_node, yaml.MappingNode):
                sources: list[tuple[int | None, yaml.Node]] = [(None, value_node)]
            elif isinstance(value_node, yaml.SequenceNode):
                sources = list(enumerate(value_node.value))
                for _, sub in sources:
                    if not isinstance(sub, yaml.MappingNode):
                        raise self.value_error(
                            f"expected a mapping for merging, but found a {_kind(sub)}: yaml.safe_load "
                            "fails on it",
                            sub.start_mark,
                        )
                if self.first_wins:
                    sources.reverse()
            else:
                raise self.value_error(
                    f"expected a mapping or list of mappings for merging, but found a {_kind(value_node)}: "
                    "yaml.safe_load fails on it",
                    value_node.start_mark,
                )
            for item, sub in sources:
                for pair in self._resolved(sub, depth + 1):
                    merged.append(MergePair(pair.key, pair.value, pair.parent, entry, item))
            self._charge(len(merged), key_node)
        return merged + own

    def _resolved(self, node: yaml.Node, depth: int) -> list[MergePair]:
        """A merged mapping's pairs with its own precedence applied: one pair a key, the winner's."""
        known = self._flat.get(id(node))
        if known is not None:
            return known
        if id(node) in self._open or depth > 64:
            raise self.value_error(
                "a mapping that merges itself (or merges nested too deeply): yaml.safe_load fails on it",
                node.start_mark,
            )
        self._open.add(id(node))
        try:
            last: dict[tuple[str, object], MergePair] = {}
            assert isinstance(node, yaml.MappingNode)  # checked where the merge is read
            for pair in self.pairs(node, depth):
                key = (
                    pair.key.tag,
                    pair.key.value if isinstance(pair.key, yaml.ScalarNode) else id(pair.key),
                )
                last.pop(key, None)  # the later pair wins, at its own place
                last[key] = MergePair(pair.key, pair.value, pair.parent)
        finally:
            self._open.discard(id(node))
        out = self._flat[id(node)] = list(last.values())
        return out

    def _charge(self, n: int, at: yaml.Node) -> None:
        self.budget -= n
        if self.budget < 0:
            raise self.limit_error("too many keys merged by `<<` (a merge-key bomb?)", at.start_mark)

    def conflict(self, key: str, earlier: MergePair, later: MergePair) -> str | None:
        """The warning for ``key`` written by both pairs (``later`` comes later in construction order),
        or None when it is the merge spec's own precedence (a key written beside `<<` overrides it)."""
        line_a, line_b = earlier.key.start_mark.line + 1, later.key.start_mark.line + 1
        if earlier.entry is None and later.entry is None:
            return (
                f"duplicate key '{key}': PyYAML keeps only the last value (this one; line {line_a} is lost)"
            )
        if later.entry is None:
            return None
        if earlier.entry != later.entry:
            return (
                f"'{key}' is merged by two `<<` keys (lines {line_a} and {line_b}): PyYAML keeps the "
                f"later, line {line_b}"
            )
        # one `<<: [...]`: the releases disagree
        first, last = (earlier, later) if (earlier.item or 0) < (later.item or 0) else (later, earlier)
        line_first, line_last = first.key.start_mark.line + 1, last.key.start_mark.line + 1
        where = f"'{key}' is in two mappings merged by one `<<` (lines {line_first} and {line_last})"
        if self.pin is not None:
            kept = line_first if self.first_wins else line_last
            return (
                f"{where}: PyYAML {self.pin.version}, pinned in {self.pin.where}, keeps line {kept}'s value"
            )
        return (
            f"{where}: PyYAML 6.0.3 keeps line {line_first}'s value (the first mapping), 6.0.4 line "
            f"{line_last}'s (the last); pin PyYAML or write the key once"
        )


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "mapping"
    return "sequence" if isinstance(node, yaml.SequenceNode) else "scalar"
