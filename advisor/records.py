"""`record`: the project's dataclass decorator, with the methods a dataclass gets but none compiled at import.

Why: CPython 3.11's `dataclasses.dataclass` writes each generated method as source and compiles it
(`dataclasses._create_fn`, one `exec` per method: `__init__`, `__repr__`, `__eq__`, `__hash__`, and
`__setattr__`/`__delattr__` when frozen). That is ~0.5 ms a frozen class on the 2-core machine this is
measured on, and `gpu-advise check` defines ~90 of them before it reads a file: about a third of the
pre-commit hook's start-up (benchmarks/check_speed.py). Here:

- the fields, slots, `__match_args__`, `__dataclass_fields__` and the field checks (mutable defaults,
  ClassVar, KW_ONLY) still come from `dataclasses.dataclass` itself, called with `init=False,
  repr=False, eq=False, frozen=False`, which compiles nothing;
- `__eq__`, `__hash__`, `__repr__` and the frozen `__setattr__`/`__delattr__` are closures over the
  field names (no source, nothing compiled), with the stdlib's semantics: equality on the `compare`
  fields' tuple for objects of the same class, the hash of that tuple for frozen classes, no hash for
  mutable ones, `FrozenInstanceError` on assignment;
- `__init__` binds its arguments in Python for a class's first few instances (`COMPILE_AFTER`) and
  then compiles the class's own, from `dataclasses.fields()`, with the stdlib's signature (positional
  fields, then keyword-only ones; defaults; `default_factory`; `__post_init__`): a class built a few
  times in a run costs no compile, one built thousands of times is built as fast as a stdlib
  dataclass's.

`dataclasses.fields`, `replace`, `asdict`, `is_dataclass` work as on any dataclass. One difference:
`__dataclass_params__` reports the flags of the inner call (`frozen=False`, ...), so a stdlib dataclass
must not inherit from a record or the other way round (every dataclass of the package is a record:
tests/core/test_records.py checks it). Supported options: `frozen`, `slots`, `kw_only`, `eq`, `repr`;
anything else is a TypeError at decoration, not a silent difference.
"""

from __future__ import annotations

import builtins
import dataclasses
import re
import sys
import typing
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["field_types", "record"]

_T = TypeVar("_T")
_MISSING = dataclasses.MISSING


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(
    *, frozen: bool = False, slots: bool = False, kw_only: bool = False, eq: bool = True, repr: bool = True
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(
    cls: type[_T] | None = None,
    /,
    *,
    frozen: bool = False,
    slots: bool = False,
    kw_only: bool = False,
    eq: bool = True,
    repr: bool = True,
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """A dataclass with the same fields and behaviour as `dataclasses.dataclass(...)` with these
    options, built without compiling source at import (see the module's docstring)."""

    def wrap(target: type[_T]) -> type[_T]:
        return _build(target, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq, want_repr=repr)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[_T], *, frozen: bool, slots: bool, kw_only: bool, eq: bool, want_repr: bool) -> type[_T]:
    own = dict(cls.__dict__)
    if not cls.__doc__:
        # the stdlib writes the signature here with inspect.signature (~0.1 ms); the field names say as much
        cls.__doc__ = f"{cls.__name__}({', '.join(own.get('__annotations__', {}))})"
    for name in ("__setattr__", "__delattr__"):
        if frozen and name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    out: Any = dataclasses.dataclass(
        cls, init=False, repr=False, eq=False, frozen=False, slots=slots, kw_only=kw_only
    )
    fields = dataclasses.fields(out)
    if len(fields) != len(out.__dataclass_fields__) and any(
        repr(getattr(f, "_field_type", None)) == "_FIELD_INITVAR" for f in out.__dataclass_fields__.values()
    ):
        raise TypeError(f"{cls.__name__}: InitVar fields are not supported by record")
    _check_order(out, fields)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    if "__init__" not in own:
        out.__init__ = _lazy_init(out, frozen)
    if want_repr and "__repr__" not in own:
        out.__repr__ = _repr_fn(tuple(f.name for f in fields if f.repr))
    if eq and "__eq__" not in own:
        out.__eq__ = _eq_fn(_getter(compared))
    # dataclasses._hash_action for unsafe_hash=False: a class's own __hash__ is kept; eq and frozen
    # get the fields' hash; eq alone makes the class unhashable; no eq keeps object's hash
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        out.__hash__ = _hash_fn(_getter(hashed)) if frozen else None
    if frozen:
        names = frozenset(f.name for f in fields)
        out.__setattr__, out.__delattr__ = _frozen_fns(out, names)
        if slots:
            # copy/deepcopy restore slots with setattr, which a frozen class refuses (as _add_slots does)
            out.__getstate__, out.__setstate__ = _state_fns(tuple(f.name for f in fields))
    return out


def _check_order(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """The stdlib's check in _init_fn, made here because the inner call does not write an __init__."""
    seen_default = False
    for f in fields:
        if not f.init or f.kw_only:
            continue
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument ({cls.__name__})")


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as a tuple (attrgetter returns a bare value for one name: wrap it)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq_fn(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_fn(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _repr_fn(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        body = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({body})"

    return __repr__


def _frozen_fns(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]  # mypy narrows cls by the `is`

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __setattr__, __delattr__


def _state_fns(names: tuple[str, ...]) -> tuple[Callable[[Any], list[Any]], Callable[[Any, list[Any]], None]]:
    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    return __getstate__, __setstate__


# A class's first calls bind their arguments in Python; the next one compiles the class's own __init__.
# In one `check` of the bundled example 80 classes build 1,301 instances, 10 of them more than 30: binding
# costs a few microseconds a call, compiling ~0.1 ms a class.
COMPILE_AFTER = 16


def _lazy_init(cls: type, frozen: bool) -> Callable[..., None]:
    """An __init__ that binds the arguments itself for the class's first COMPILE_AFTER instances, then
    compiles the real one, puts it on the class and uses it from then on."""
    calls = 0
    binder: _Binder | None = None

    def __init__(instance: Any, /, *args: Any, **kwargs: Any) -> None:  # a field may be named `self`
        nonlocal calls, binder
        calls += 1
        if calls > COMPILE_AFTER:
            real = _compile_init(cls, frozen)
            type.__setattr__(cls, "__init__", real)
            real(instance, *args, **kwargs)
            return
        if binder is None:
            binder = _Binder(cls, frozen)
        binder(instance, args, kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class _Binder:
    """What the compiled __init__ does, in Python: positional fields, keyword-only fields, defaults,
    default factories, the TypeErrors of a wrong call, then __post_init__."""

    __slots__ = ("fields", "frozen", "name", "positional", "post_init", "takes")

    def __init__(self, cls: type, frozen: bool) -> None:
        self.name = f"{cls.__qualname__}.__init__()"
        self.frozen = frozen
        self.fields = dataclasses.fields(cls)
        self.positional = tuple(f.name for f in self.fields if f.init and not f.kw_only)
        self.takes = frozenset(f.name for f in self.fields if f.init)
        self.post_init = hasattr(cls, "__post_init__")

    def __call__(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(args) > len(self.positional):
            given, takes = len(args) + 1, len(self.positional) + 1
            raise TypeError(f"{self.name} takes {takes} positional arguments but {given} were given")
        for name, value in zip(self.positional, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{self.name} got multiple values for argument {name!r}")
            kwargs[name] = value
        unexpected = [k for k in kwargs if k not in self.takes]
        if unexpected:
            raise TypeError(f"{self.name} got an unexpected keyword argument {unexpected[0]!r}")
        setter = object.__setattr__ if self.frozen else setattr
        for f in self.fields:
            if f.init and f.name in kwargs:
                value = kwargs[f.name]
            elif f.default_factory is not _MISSING:
                value = f.default_factory()
            elif f.default is not _MISSING:
                value = f.default
            elif f.init:
                raise TypeError(f"{self.name} missing 1 required argument: {f.name!r}")
            else:
                continue  # init=False without a default: left unset, as the stdlib does
            setter(instance, f.name, value)
        if self.post_init:
            instance.__post_init__()


_HAS_FACTORY = object()  # the default of a parameter whose field has a default_factory, as in the stdlib


def _compile_init(cls: type, frozen: bool) -> Callable[..., None]:
    """The __init__ dataclasses._init_fn would write for these fields: positional fields in order,
    then `*` and the keyword-only ones; a default_factory runs when its parameter is left out."""
    namespace: dict[str, Any] = {"__object_setattr": object.__setattr__, "__has_factory": _HAS_FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    fields = dataclasses.fields(cls)
    self_name = "__record_self__" if any(f.name == "self" for f in fields) else "self"
    for i, f in enumerate(fields):
        if f.default_factory is not _MISSING:
            namespace[f"__factory_{i}"] = f.default_factory
            value = (
                f"__factory_{i}() if {f.name} is __has_factory else {f.name}"
                if f.init
                else f"__factory_{i}()"
            )
            default = "=__has_factory"
        elif f.default is not _MISSING:
            namespace[f"__default_{i}"] = f.default
            value = f.name if f.init else f"__default_{i}"
            default = f"=__default_{i}"
        else:
            value, default = f.name, ""
        if f.init:
            (keyword if f.kw_only else positional).append(f"{f.name}{default}")
        elif f.default is _MISSING and f.default_factory is _MISSING:
            continue  # init=False without a default: left unset, as the stdlib does
        if frozen:
            body.append(f"  __object_setattr({self_name}, {f.name!r}, {value})")
        else:
            body.append(f"  {self_name}.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"  {self_name}.__post_init__()")
    params = [self_name, *positional, *(["*", *keyword] if keyword else [])]
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


# A field's annotation, resolved without compiling it. typing.get_type_hints compiles every string
# annotation (typing.ForwardRef.__init__), ~20 us each; the cache decoder (advisor/datacodec.py) and the
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
    names = {f.name for f in dataclasses.fields(cls)}
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
