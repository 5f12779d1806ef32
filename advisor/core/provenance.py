"""Values that remember where they came from, and the namespaces rules read them through."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from advisor.core.document import Location
from advisor.core.records import field, record


@record(slots=True)
class Value:
    """One setting of a run: its value, where it was written, and what it overrode."""

    value: Any
    origin: Location | None = None  # None: a default or a derived value with no single home
    source: str = "default"  # "launch", "training_args", "accelerate", "deepspeed", "default", "derived", ...
    related: list[Location] = field(default_factory=list)  # losing values of a conflict, other inputs
    unknown: str | None = None  # why the value cannot be known statically
    note: str | None = None  # how a default or derived value was reached

    @property
    def known(self) -> bool:
        return self.unknown is None

    def describe(self) -> str:
        where = str(self.origin) if self.origin else self.source
        if self.unknown:
            return f"unknown ({self.unknown}) at {where}"
        return f"{self.value!r} from {where}" + (f" ({self.note})" if self.note else "")


class UndeclaredFact(BaseException):
    """A builder set a fact its namespace class does not declare, or a value of another type
    (advisor/facts/declare.py checks every set).

    A BaseException, so that no builder's `except Exception` turns it into an unknown value: a builder's
    bug fails the test (or the check) that built the fact."""


class Namespace:
    """Attribute access over Values: `training.bf16` gives the plain value, None when unset or unknown."""

    __slots__ = ("_name", "_values")

    def __init__(self, name: str, values: dict[str, Value | Namespace] | None = None) -> None:
        self._name = name
        self._values: dict[str, Value | Namespace] = values if values is not None else {}

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        return self.read(key)

    def read(self, key: str) -> Any:
        """What a rule sees for `key`: the plain value, a child namespace, or None when unset or unknown.

        Reads the namespace's own entries only, never a Python attribute: the rule evaluator
        (advisor/engine/evaluator.py) resolves `ns.key` through this."""
        item = self._values.get(key)
        if item is None:
            return None
        if isinstance(item, Namespace):
            return item
        return item.value if item.unknown is None else None

    def __getitem__(self, key: str) -> Any:
        return self.__getattr__(key)

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        return f"<{self._name}: {', '.join(self._values)}>"

    def set(self, key: str, value: Value | Namespace) -> None:
        self._values[key] = value

    def entry(self, key: str) -> Value | Namespace | None:
        return self._values.get(key)

    def child(self, key: str) -> Namespace:
        item = self._values.get(key)
        if not isinstance(item, Namespace):
            item = Namespace(f"{self._name}.{key}")
            self._values[key] = item
        return item

    def items(self) -> Iterator[tuple[str, Value | Namespace]]:
        return iter(self._values.items())

    def lookup(self, dotted: str) -> Value | Namespace | None:
        node: Value | Namespace | None = self
        for part in dotted.split("."):
            if not isinstance(node, Namespace):
                return None
            node = node._values.get(part)
        return node

    def value(self, dotted: str) -> Value | None:
        """The Value at a dotted path, known or not; None when the path holds none."""
        e = self.lookup(dotted)
        return e if isinstance(e, Value) else None

    def known_value(self, dotted: str) -> Value | None:
        """The Value at a dotted path when it is written and known; else None."""
        e = self.value(dotted)
        return e if e is not None and e.known else None

    def flat(self, prefix: str = "") -> Iterator[tuple[str, Value]]:
        for key, item in self._values.items():
            name = f"{prefix}{key}"
            if isinstance(item, Namespace):
                yield from item.flat(name + ".")
            else:
                yield name, item

    def plain(self) -> dict[str, Any]:
        return {
            k: v.plain() if isinstance(v, Namespace) else (v.value if v.unknown is None else None)
            for k, v in self._values.items()
        }
