"""How a fact namespace is declared: a class whose fields are its facts, in the module that builds it.

    class BatchFacts(FactNamespace, name="batch", doc="How many processes run ..."):
        world_size = fact(int, "processes in the job", unit="processes")
        split_problems = fact(list[dict], "...", items=("batch", "location"))

An instance is the `Namespace` the rule evaluator reads (`entry`, `value(dotted)`, a Value with its
provenance per fact). Assigning `ns.world_size = Value(...)` always checks the name and the declared type
of the value (an isinstance per set: no mode, no environment variable). An undeclared name or list item
key is a builder's bug: it raises UndeclaredFact, a BaseException, so that no builder's `except
Exception` hides it. A value of another type is stored as unknown with the reason (`mistyped`): a
builder may pass a user's written value through, and a user's file must not crash the check.
Reading `ns.world_size` gives the plain value, as the evaluator's `read` does (None when unset/unknown).

The fact catalogue (advisor/facts/catalogue.py), `gpu-advise facts`, docs/facts.md and the rule-load
check are generated from these classes. Dynamic namespaces (the keys of a file) say `keys_from=` or
`open=True` instead of listing facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Generic, Literal, TypeVar, overload

from advisor.core.provenance import Namespace, UndeclaredFact, Value
from advisor.core.records import record

Scope = Literal["run", "document", "suppression", "policy"]
T = TypeVar("T")


@record(slots=True, eq=False)
class Kind:
    """A declared fact type that is not one Python class: `number` (int or float), `any`."""

    name: str
    types: tuple[type, ...]


NUMBER: Any = Kind("number", (int, float))
ANY: Any = Kind("any", (object,))

_NAMES: dict[object, str] = {int: "int", float: "float", bool: "bool", str: "str", dict: "dict", list: "list"}


def type_name(kind: object) -> str:
    """The catalogue's spelling of a declared type: int, list[dict], bool|str, number, any."""
    if isinstance(kind, Kind):
        return kind.name
    if kind in _NAMES:
        return _NAMES[kind]
    args: tuple[Any, ...] = getattr(kind, "__args__", ())
    origin = getattr(kind, "__origin__", None)
    if origin is list and len(args) == 1:
        return f"list[{type_name(args[0])}]"
    if args and origin is None:  # a union: int | str
        return "|".join(type_name(a) for a in args)
    raise TypeError(
        f"{kind!r} is not a fact type (int, float, bool, str, dict, list[...], a union, NUMBER, ANY)"
    )


def _alternatives(kind: object) -> tuple[object, ...]:
    if getattr(kind, "__origin__", None) is None and getattr(kind, "__args__", None):
        return tuple(kind.__args__)  # type: ignore[attr-defined]
    return (kind,)


def _is(value: object, kind: object) -> bool:
    """One element's check: bool is not a number here (True is no world size)."""
    if isinstance(kind, Kind):
        return kind.name == "any" or (isinstance(value, kind.types) and not isinstance(value, bool))
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)  # type: ignore[arg-type]


def type_problem(kind: object, value: object) -> str | None:
    """Why `value` is not of the declared type (None when it is)."""
    for alternative in _alternatives(kind):
        origin = getattr(alternative, "__origin__", None)
        if origin is list:
            (element,) = alternative.__args__  # type: ignore[attr-defined]
            if isinstance(value, list | tuple) and all(_is(e, element) for e in value):
                return None
            continue
        if alternative is list and isinstance(value, list | tuple):
            return None
        if _is(value, alternative):
            return None
    found = type(value).__name__
    return f"{'an' if found[0] in 'aeiou' else 'a'} {found} is not {type_name(kind)}"


def undeclared_item_keys(items: tuple[str, ...], value: object) -> list[str]:
    """The keys of a list of mappings' elements that its declaration does not list."""
    if not items or not isinstance(value, list | tuple):
        return []
    return sorted({k for e in value if isinstance(e, dict) for k in e if isinstance(k, str)} - set(items))


def mistyped(namespace: str, declared: FactField[Any], value: Value, problem: str) -> Value:
    """What a value of another type than its fact's is stored as: unknown, with the reason.

    A builder passes a written value through (tf32: 0 in a user's file reaches precision.tf32 as an
    int): the rules then read None, as for any unknown, and the reason says what was written.
    tests/core/test_fact_catalogue.py records these for every fixture and corpus run, where there are
    none: there a type mismatch is a builder's bug."""
    reason = f"{problem} ({namespace}.{declared.name} is declared {declared.type})"
    return Value(None, value.origin, value.source, list(value.related), unknown=reason, note=value.note)


class FactField(Generic[T]):
    """One fact of a namespace class: its type, doc, unit and (for a list of mappings) item keys."""

    __slots__ = ("doc", "items", "kind", "name", "type", "unit")

    def __init__(
        self, kind: object, doc: str, unit: str = "", items: tuple[str, ...] = (), key: str = ""
    ) -> None:
        self.kind = kind
        self.type = type_name(kind)  # checked here: a class with a bad type fails at import
        self.doc = doc
        self.unit = unit
        self.items = items
        self.name = key  # the entry rules read; the attribute's name unless it would shadow a method

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name

    @overload
    def __get__(self, obj: None, owner: type) -> FactField[T]: ...
    @overload
    def __get__(self, obj: Namespace, owner: type) -> T | None: ...
    def __get__(self, obj: Namespace | None, owner: type) -> FactField[T] | T | None:
        if obj is None:
            return self
        value: T | None = obj.read(self.name)
        return value

    def __set__(self, obj: FactNamespace, value: Value | Namespace) -> None:
        obj.set(self.name, value)


@overload
def fact(
    kind: type[T], doc: str, unit: str = "", items: tuple[str, ...] = (), key: str = ""
) -> FactField[T]: ...
@overload
def fact(
    kind: object, doc: str, unit: str = "", items: tuple[str, ...] = (), key: str = ""
) -> FactField[Any]: ...
def fact(
    kind: object, doc: str, unit: str = "", items: tuple[str, ...] = (), key: str = ""
) -> FactField[Any]:
    """Declare a fact: `world_size = fact(int, "processes in the job", unit="processes")`.

    `key` names the entry when it differs from the attribute: a fact called `name` or `items` is declared
    as `name_ = fact(str, "...", key="name")` (the attribute would shadow the Namespace's own)."""
    return FactField(kind, doc, unit, items, key)


class FactNamespace(Namespace):
    """A namespace whose entries are declared as class fields (see the module's docstring)."""

    __slots__ = ()
    namespace: ClassVar[str]
    doc: ClassVar[str]
    scope: ClassVar[Scope]
    keys_from: ClassVar[tuple[str, ...]]
    open: ClassVar[bool]
    extra_keys: ClassVar[tuple[str, ...]]
    builder: ClassVar[str]  # only for a namespace built outside the registry: "module:function"
    requires: ClassVar[tuple[str, ...]]  # likewise: the namespaces that builder reads
    facts: ClassVar[dict[str, FactField[Any]]]

    def __init_subclass__(
        cls,
        *,
        name: str,
        doc: str,
        scope: Scope = "run",
        keys_from: Iterable[str] = (),
        open: bool = False,
        extra_keys: Iterable[str] = (),
        builder: str = "",
        requires: Iterable[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.namespace, cls.doc, cls.scope = name, doc, scope
        cls.keys_from, cls.open, cls.extra_keys = tuple(keys_from), open, tuple(extra_keys)
        cls.builder, cls.requires = builder, tuple(requires)
        fields = {attr: v for attr, v in vars(cls).items() if isinstance(v, FactField)}
        for attr in fields:
            if hasattr(FactNamespace, attr) or attr in FactNamespace.__annotations__:
                raise TypeError(f"{cls.__name__}.{attr} shadows a Namespace attribute: declare it with key=")
        cls.facts = {v.name: v for v in fields.values()}
        if cls.facts and cls.dynamic():
            raise TypeError(f"{cls.__name__}: a dynamic namespace declares no facts")

    @classmethod
    def dynamic(cls) -> bool:
        return bool(cls.keys_from) or cls.open

    def __init__(self, values: dict[str, Value | Namespace] | None = None) -> None:
        super().__init__(self.namespace, values)

    def set(self, key: str, value: Value | Namespace) -> None:
        """Store a fact. An undeclared name, a namespace for a declared fact or a list item with an
        undeclared key is a builder's bug and raises UndeclaredFact; a value of another type is stored
        as unknown (`mistyped`)."""
        if not self.dynamic():
            value = self._checked(key, value)
        super().set(key, value)

    def _checked(self, key: str, value: Value | Namespace) -> Value | Namespace:
        where = f"(declared in {type(self).__module__}.{type(self).__name__})"
        declared = self.facts.get(key)
        if declared is None:
            raise UndeclaredFact(f"{self.namespace}.{key}: not a declared fact {where}")
        if isinstance(value, Namespace):
            raise UndeclaredFact(f"{self.namespace}.{key}: declared {declared.type}, not a namespace {where}")
        if not value.known or value.value is None:
            return value
        extra = undeclared_item_keys(declared.items, value.value)
        if extra:
            raise UndeclaredFact(
                f"{self.namespace}.{key}: its items have undeclared keys {', '.join(extra)} {where}"
            )
        problem = type_problem(declared.kind, value.value)
        return value if problem is None else mistyped(self.namespace, declared, value, problem)
