"""A record's fields: `field()`, `Field`, and `fields`/`replace`/`asdict`/`is_record`, as in `dataclasses`.

The semantics are the stdlib's (CPython 3.11 Lib/dataclasses.py): fields are the class's annotations
in order after those of its record bases, `ClassVar` annotations are not fields, everything after a
`_: KW_ONLY` annotation is keyword-only, an unhashable default (a list, dict or set) is refused in
favour of `default_factory`.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

_T = TypeVar("_T")

FIELDS = "__record_fields__"  # the class attribute: {name: Field} in order, the bases' first


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})


class KW_ONLY:
    """`_: KW_ONLY` in a record's body makes the fields after it keyword-only."""


class FrozenInstanceError(AttributeError):
    """Assigning to or deleting a field of a frozen record."""


class Field:
    """One field: its name, annotation (as written), default or default factory, and flags."""

    __slots__ = (
        "compare",
        "default",
        "default_factory",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "type",
    )

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        compare: bool,
        hash: bool | None,
        kw_only: Any,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.compare = compare
        self.hash = hash
        self.kw_only = kw_only
        self.metadata: Mapping[str, Any] = MappingProxyType(dict(metadata)) if metadata else _NO_METADATA

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r})"

    @property
    def has_default(self) -> bool:
        return self.default is not MISSING or self.default_factory is not MISSING


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
    kw_only: Any = MISSING,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A field with options, as `dataclasses.field` (`metadata`: read-only, for the validator)."""
    return Field(default, default_factory, init, repr, compare, hash, kw_only, metadata)


def spec(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    key: str | None = None,
    description: str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    pattern: str | None = None,
    before: Callable[[Any], Any] | None = None,
    after: Callable[[Any], Any] | None = None,
    read: bool = True,
) -> Any:
    """A field with what validating input needs (advisor.core.datacodec.validate): `key`, the key written in
    the file (e.g. kebab-case; the field name is accepted too); bounds; `min_length`; `pattern` (full
    match); `before` (raw value -> value, before the type check) and `after` (checked value -> value),
    which raise ValueError with the message; `read=False`: not read from input. `description`, the bounds
    and the pattern go into the JSON schema (advisor/sources/schema/jsonschema.py)."""
    given = {
        "key": key,
        "description": description,
        "ge": ge,
        "gt": gt,
        "le": le,
        "lt": lt,
        "min_length": min_length,
        "pattern": pattern,
        "before": before,
        "after": after,
    }
    meta = {k: v for k, v in given.items() if v is not None}
    if not read:
        meta["read"] = False
    return Field(default, default_factory, True, True, True, None, MISSING, meta)


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):  # `ClassVar[int]`, `typing.ClassVar`, as the stdlib's _is_type reads it
        return annotation.split("[")[0].strip() in ("ClassVar", "typing.ClassVar")
    return annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar


def _is_kw_only_marker(annotation: Any) -> bool:
    return annotation is KW_ONLY or (isinstance(annotation, str) and annotation.strip() in ("KW_ONLY",))


def collect(cls: type, kw_only: bool) -> dict[str, Field]:
    """The fields of `cls`, its record bases' first; sets each field's class attribute as the stdlib
    does (the default, or nothing when there is none)."""
    out: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        inherited = base.__dict__.get(FIELDS)
        if inherited:
            out.update(inherited)
    own = cls.__dict__
    annotations: Mapping[str, Any] = own.get("__annotations__", {})
    after_marker = False
    for name, annotation in annotations.items():
        if _is_classvar(annotation):
            continue
        if _is_kw_only_marker(annotation):
            if after_marker:
                raise TypeError(f"'KW_ONLY' appears more than once in {cls.__name__}")
            after_marker = True
            continue
        if isinstance(annotation, str) and annotation.strip().startswith(("InitVar", "dataclasses.InitVar")):
            raise TypeError(f"{cls.__name__}.{name}: InitVar fields are not supported by record")
        value = own.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(value, MISSING, True, True, True, None, MISSING)
        f.name, f.type = name, annotation
        if f.kw_only is MISSING:
            f.kw_only = kw_only or after_marker
        if f.default is not MISSING and type(f.default).__hash__ is None:
            raise ValueError(
                f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory"
            )
        if isinstance(value, Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out[name] = f
    for name, value in own.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return out


def is_record(obj: Any) -> bool:
    """Whether `obj` is a record class or an instance of one."""
    cls = obj if isinstance(obj, type) else type(obj)
    return hasattr(cls, FIELDS)


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The record's fields, in order (as `dataclasses.fields`)."""
    try:
        found: dict[str, Field] = getattr(class_or_instance, FIELDS)
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None
    return tuple(found.values())


def replace(obj: _T, /, **changes: Any) -> _T:
    """A new record like `obj` with `changes` (as `dataclasses.replace`)."""
    for f in fields(obj):
        if not f.init:
            if f.name in changes:
                raise ValueError(
                    f"field {f.name} is declared with init=False, it cannot be specified with replace()"
                )
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)


def asdict(obj: Any) -> dict[str, Any]:
    """The record as a dict, nested records, lists, tuples and dicts converted in turn (as
    `dataclasses.asdict`; other values are copied with copy.deepcopy, as there)."""
    if not is_record(obj) or isinstance(obj, type):
        raise TypeError("asdict() should be called on record instances")
    return _plain(obj)


_ATOMS = (type(None), bool, int, float, complex, str, bytes, type)


def _plain(value: Any) -> Any:
    if type(value) in _ATOMS:
        return value
    if is_record(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*[_plain(v) for v in value])
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)
