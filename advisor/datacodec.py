"""Frozen dataclasses to JSON-ready plain data and back, checking every field's type on the way back.

The on-disk cache (advisor/cache.py) stores validated rule specs, settings, hardware descriptors and the
GPU catalog as JSON, which cannot run code when read, unlike a pickle. `decode` rebuilds the dataclass
from its field annotations and raises `DataError` on anything of the wrong shape, so a corrupt or
tampered entry is a cache miss, never an object of the wrong type.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from pathlib import Path, PurePath
from typing import Any, Literal, Union


class DataError(ValueError):
    """Plain data that does not have the shape of the type asked for."""


def encode(value: Any) -> Any:
    """A dataclass (or list, tuple, dict, path, scalar of them) as JSON-ready data."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise DataError(f"a mapping key {k!r} is not a string")
            out[k] = encode(v)
        return out
    if isinstance(value, PurePath):
        return str(value)
    raise DataError(f"{type(value).__name__} has no plain-data form")


def decode(hint: Any, data: Any) -> Any:
    """`data` as the type `hint` (a dataclass, builtin, Literal, union, list/dict/tuple of them, Path)."""
    if hint is Any:
        return _plain(data)
    if dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, data)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        if data not in args or type(data) not in {type(a) for a in args}:
            raise DataError(f"{data!r} is not one of {args}")
        return data
    if origin is Union or origin is types.UnionType:
        for arm in args:
            try:
                return decode(arm, data)
            except DataError:
                continue
        raise DataError(f"{data!r} matches no arm of {hint}")
    if origin is list:
        return [decode(args[0], v) for v in _expect(data, list)]
    if origin is tuple:
        items = _expect(data, list)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(decode(args[0], v) for v in items)
        if len(items) != len(args):
            raise DataError(f"expected {len(args)} items, got {len(items)}")
        return tuple(decode(a, v) for a, v in zip(args, items, strict=True))
    if origin is dict:
        return {decode(args[0], k): decode(args[1], v) for k, v in _expect(data, dict).items()}
    if hint is type(None):
        if data is not None:
            raise DataError(f"expected null, got {type(data).__name__}")
        return None
    if hint is float:
        if type(data) not in (int, float):
            raise DataError(f"expected a number, got {type(data).__name__}")
        return data
    if hint in (bool, int, str):
        return _expect(data, hint)
    if hint is Path:
        return Path(_expect(data, str))
    raise DataError(f"cannot decode {hint}")


def _expect(data: Any, kind: type) -> Any:
    if type(data) is not kind:
        raise DataError(f"expected {kind.__name__}, got {type(data).__name__}")
    return data


def _plain(data: Any) -> Any:
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [_plain(v) for v in data]
    if type(data) is dict:
        return {_expect(k, str): _plain(v) for k, v in data.items()}
    raise DataError(f"{type(data).__name__} is not plain data")


@cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """(name, type, required) of each init field; the annotations are resolved once per class."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            hints[f.name],
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.init
    )


def _decode_dataclass(cls: type, data: Any) -> Any:
    data = _expect(data, dict)
    spec = _fields(cls)
    unknown = set(data) - {name for name, _, _ in spec}
    if unknown:
        raise DataError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    kwargs = {}
    for name, hint, required in spec:
        if name in data:
            kwargs[name] = decode(hint, data[name])
        elif required:
            raise DataError(f"{cls.__name__}: missing field {name!r}")
    return cls(**kwargs)
