"""The methods a record gets: closures over its field names, and an `__init__` compiled only for the
classes built often in a run (see advisor/core/records/__init__.py for why)."""

from __future__ import annotations

from _thread import get_ident  # as reprlib does: threading costs an import
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from advisor.core.records.fields import MISSING, Field, FrozenInstanceError, fields


def getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as a tuple (attrgetter returns a bare value for one name: wrap it)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def eq_fn(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def hash_fn(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def repr_fn(names: tuple[str, ...]) -> Callable[[Any], str]:
    # records that refer to each other in a cycle print `...` for the repeat, as the stdlib's
    # reprlib.recursive_repr wrapper does (keyed by object and thread)
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        key = (id(self), get_ident())
        if key in running:
            return "..."
        running.add(key)
        try:
            body = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({body})"

    return __repr__


def frozen_fns(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]  # mypy narrows cls by the `is`

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __setattr__, __delattr__


def state_fns(names: tuple[str, ...]) -> tuple[Callable[[Any], list[Any]], Callable[[Any, list[Any]], None]]:
    """copy/deepcopy restore slots with setattr, which a frozen record refuses (as in _add_slots)."""

    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: list[Any]) -> None:
        for name, value in zip(names, state, strict=False):
            object.__setattr__(self, name, value)

    return __getstate__, __setstate__


# A class's first calls bind their arguments in Python; the next one compiles the class's own __init__.
# Binding costs ~1.5 us a call more than the compiled __init__, compiling one ~0.1-0.2 ms (RuleSpec: 3.6 vs
# 2.1 us a call, 212 us to compile): compiling pays from ~140 calls on. In one `check` of the bundled
# example 17 classes build more than 16 instances, 3 of them more than 128: at 16, 14 compiles (~2 ms of
# a ~130 ms start-up) that never paid for themselves.
COMPILE_AFTER = 128


def lazy_init(cls: type, frozen: bool) -> Callable[..., None]:
    """An __init__ that binds the arguments itself for the class's first COMPILE_AFTER instances, then
    compiles the real one, puts it on the class and uses it from then on."""
    calls = 0
    binder: _Binder | None = None

    def __init__(instance: Any, /, *args: Any, **kwargs: Any) -> None:  # a field may be named `self`
        nonlocal calls, binder
        calls += 1
        if calls > COMPILE_AFTER:
            real = compile_init(cls, frozen)
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
        self.fields: tuple[Field, ...] = fields(cls)
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
            elif f.default_factory is not MISSING:
                value = f.default_factory()
            elif f.default is not MISSING:
                value = f.default
            elif f.init:
                raise TypeError(f"{self.name} missing 1 required argument: {f.name!r}")
            else:
                continue  # init=False without a default: left unset, as the stdlib does
            setter(instance, f.name, value)
        if self.post_init:
            instance.__post_init__()


_HAS_FACTORY = object()  # the default of a parameter whose field has a default_factory, as in the stdlib


def compile_init(cls: type, frozen: bool) -> Callable[..., None]:
    """The __init__ dataclasses._init_fn would write for these fields: positional fields in order,
    then `*` and the keyword-only ones; a default_factory runs when its parameter is left out. The
    source is made of the class's own field names (identifiers) only: defaults are passed by reference."""
    namespace: dict[str, Any] = {"__object_setattr": object.__setattr__, "__has_factory": _HAS_FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    all_fields = fields(cls)
    self_name = "__record_self__" if any(f.name == "self" for f in all_fields) else "self"
    for i, f in enumerate(all_fields):
        if not f.name.isidentifier():
            raise TypeError(f"{cls.__qualname__}: field name {f.name!r} is not an identifier")
        if f.default_factory is not MISSING:
            namespace[f"__factory_{i}"] = f.default_factory
            value = (
                f"__factory_{i}() if {f.name} is __has_factory else {f.name}"
                if f.init
                else f"__factory_{i}()"
            )
            default = "=__has_factory"
        elif f.default is not MISSING:
            namespace[f"__default_{i}"] = f.default
            value = f.name if f.init else f"__default_{i}"
            default = f"=__default_{i}"
        else:
            value, default = f.name, ""
        if f.init:
            (keyword if f.kw_only else positional).append(f"{f.name}{default}")
        elif not f.has_default:
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
