"""A record field's annotation as a type, resolved without compiling it (`field_types`)."""

from __future__ import annotations

import builtins
import re
import sys
import typing
from typing import Any

from advisor.core.records.fields import fields

# A field's annotation, resolved without compiling it. typing.get_type_hints compiles every string
# annotation (typing.ForwardRef.__init__), ~20 us each; the cache decoder (advisor/core/datacodec.py) and the
# setup check (advisor/estimate/memory/setup.py) resolve ~200 of them at start-up. The annotations of the
# package are names, dotted names, `X[...]`, `|`, string and number literals and `...`: those are read
# here; anything else falls back on typing.get_type_hints.
_TOKEN = re.compile(r"\s*(?:(\.\.\.)|([A-Za-z_][\w.]*)|('[^'\\]*'|\"[^\"\\]*\")|(-?\d+)|([\[\],|]))")


class _Unreadable(Exception):
    """An annotation outside the forms _TypeReader reads."""


class _TypeReader:
    def __init__(self, text: str, scope: dict[str, Any]) -> None:
        self.tokens: list[tuple[int, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise _Unreadable(text)
            self.tokens.append((m.lastindex or 0, m.group(m.lastindex or 0)))
            pos = m.end()
        self.scope = scope
        self.at = 0
        self.literal = False

    def read(self) -> Any:
        value = self._union()
        if self.at != len(self.tokens):
            raise _Unreadable
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else None

    def _union(self) -> Any:
        value = self._atom()
        while self._peek() == "|":
            self.at += 1
            value = value | self._atom()
        return value

    def _atom(self) -> Any:
        if self.at >= len(self.tokens):
            raise _Unreadable
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == 1:
            return ...
        if kind == 3:  # a value inside Literal[...], else a forward reference in quotes
            return text[1:-1] if self.literal else _TypeReader(text[1:-1], self.scope).read()
        if kind == 4:
            return int(text)
        if text == "[":  # a list of types (Callable's parameters)
            items = self._items("]")
            return list(items)
        if kind != 2:
            raise _Unreadable
        value = self._name(text)
        if self._peek() == "[":
            self.at += 1
            outer, self.literal = self.literal, value is typing.Literal
            items = self._items("]")
            self.literal = outer
            value = value[items[0] if len(items) == 1 else items]
        return value

    def _items(self, close: str) -> tuple[Any, ...]:
        items: list[Any] = []
        while self._peek() != close:
            items.append(self._union())
            if self._peek() == ",":
                self.at += 1
            elif self._peek() != close:
                raise _Unreadable
        self.at += 1
        return tuple(items)

    def _name(self, dotted: str) -> Any:
        head, *rest = dotted.split(".")
        if head == "None":
            value: Any = None
        elif head in self.scope:
            value = self.scope[head]
        elif hasattr(builtins, head):
            value = getattr(builtins, head)
        else:
            raise _Unreadable(dotted)
        for part in rest:
            value = getattr(value, part)
        return type(None) if value is None else value


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotation of each field of a record (what typing.get_type_hints gives for them)."""
    known = _FIELD_TYPES.get(cls)
    if known is not None:
        return known
    names = {f.name for f in fields(cls)}
    out: dict[str, Any] = {}
    try:
        for klass in reversed(cls.__mro__):
            scope = vars(sys.modules[klass.__module__]) if klass.__module__ in sys.modules else {}
            own = klass.__dict__.get("__annotations__", {})  # noqa: RUF063 (inspect costs ~3 ms to import)
            for name, annotation in own.items():
                if name in names:
                    out[name] = (
                        _TypeReader(annotation, scope).read() if isinstance(annotation, str) else annotation
                    )
    except (_Unreadable, AttributeError, TypeError):
        hints = typing.get_type_hints(cls)
        out = {name: hints[name] for name in names}
    _FIELD_TYPES[cls] = out
    return out
