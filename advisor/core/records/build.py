"""The `record` decorator: fields collected, slots made, methods attached."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

from advisor.core.records import methods
from advisor.core.records.fields import FIELDS, Field, collect, field, spec

_T = TypeVar("_T")


@overload
def record(cls: type[_T], /) -> type[_T]: ...


@overload
def record(
    *, frozen: bool = False, slots: bool = False, kw_only: bool = False, eq: bool = True, repr: bool = True
) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(field, spec, Field))
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
    """A class with the fields, methods and behaviour `dataclasses.dataclass(...)` gives it with these
    options, built without compiling source at import (see advisor/core/records/__init__.py)."""

    def wrap(target: type[_T]) -> type[_T]:
        return _build(target, frozen=frozen, slots=slots, kw_only=kw_only, eq=eq, want_repr=repr)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[_T], *, frozen: bool, slots: bool, kw_only: bool, eq: bool, want_repr: bool) -> type[_T]:
    own = dict(cls.__dict__)
    for name in ("__setattr__", "__delattr__"):
        if frozen and name in own:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    found = collect(cls, kw_only)
    all_fields = tuple(found.values())
    _check_order(cls, all_fields)
    _check_frozen_bases(cls, frozen)
    if not cls.__doc__:
        cls.__doc__ = f"{cls.__name__}({', '.join(found)})"  # the stdlib writes the signature here
    out: Any = _with_slots(cls, found) if slots else cls
    type.__setattr__(out, FIELDS, found)
    out.__record_frozen__ = frozen
    if "__match_args__" not in own:
        type.__setattr__(out, "__match_args__", tuple(f.name for f in all_fields if f.init and not f.kw_only))
    if "__init__" not in own:
        out.__init__ = methods.lazy_init(out, frozen)
    if want_repr and "__repr__" not in own:
        out.__repr__ = methods.repr_fn(tuple(f.name for f in all_fields if f.repr))
    if eq and "__eq__" not in own:
        out.__eq__ = methods.eq_fn(methods.getter(tuple(f.name for f in all_fields if f.compare)))
    # dataclasses._hash_action for unsafe_hash=False: a class's own __hash__ is kept; eq and frozen
    # get the fields' hash; eq alone makes the class unhashable; no eq keeps object's hash
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        hashed = tuple(f.name for f in all_fields if (f.compare if f.hash is None else f.hash))
        out.__hash__ = methods.hash_fn(methods.getter(hashed)) if frozen else None
    if frozen:
        out.__setattr__, out.__delattr__ = methods.frozen_fns(out, frozenset(found))
        if slots and "__getstate__" not in own and "__setstate__" not in own:
            out.__getstate__, out.__setstate__ = methods.state_fns(tuple(found))
    return out


def _check_order(cls: type, all_fields: tuple[Field, ...]) -> None:
    """The stdlib's check in _init_fn: a positional parameter without a default after one with."""
    seen_default = False
    for f in all_fields:
        if not f.init or f.kw_only:
            continue
        if f.has_default:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument ({cls.__name__})")


def _check_frozen_bases(cls: type, frozen: bool) -> None:
    """As the stdlib: a frozen record may not inherit from a mutable one, nor the other way round."""
    for base in cls.__mro__[1:]:
        if FIELDS in base.__dict__ and base.__dict__.get("__record_frozen__") != frozen:
            kind = "frozen" if frozen else "non-frozen"
            other = "non-frozen" if frozen else "frozen"
            raise TypeError(f"cannot inherit {kind} record {cls.__name__} from a {other} one")


def _slots_of(cls: type) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _with_slots(cls: type, found: dict[str, Field]) -> type:
    """The class made again with `__slots__` for its fields (the stdlib's _add_slots, CPython 3.11)."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    namespace = dict(cls.__dict__)
    inherited = {name for base in cls.__mro__[1:-1] for name in _slots_of(base)}
    namespace["__slots__"] = tuple(name for name in found if name not in inherited)
    for name in found:
        namespace.pop(name, None)  # a default as a class attribute would shadow the slot
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made
