"""Frozen dataclasses to JSON-ready plain data and back, checking every field's type on the way back.

The on-disk cache (advisor/cache.py) stores validated rule specs, settings, hardware descriptors and the
GPU catalog as JSON, which cannot run code when read, unlike a pickle. `decode` rebuilds the dataclass
from its field annotations and raises `DataError` on anything of the wrong shape, so a corrupt or
tampered entry is a cache miss, never an object of the wrong type.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePath
from typing import Any, Literal, Union

from advisor import records
from advisor.records import field_types


class DataError(ValueError):
    """Plain data that does not have the shape of the type asked for."""


def encode(value: Any) -> Any:
    """A dataclass (or list, tuple, dict, path, scalar of them) as JSON-ready data."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if records.is_record(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in records.fields(value)}
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
    return _decoder(hint)(data)


Decoder = Callable[[Any], Any]


@cache
def _decoder(hint: Any) -> Decoder:
    """A function that checks and converts data for one type hint, built once per hint (start-up reads
    the cached catalog through these, so the hint is inspected once, not once per value)."""
    if hint is Any:
        return _plain
    if records.is_record(hint):
        return lambda data: _decode_dataclass(hint, data)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        return _literal(args)
    if origin is Union or origin is types.UnionType:
        return _union(hint, args)
    if origin is list:
        item = _decoder(args[0])
        return lambda data: [item(v) for v in _expect(data, list)]
    if origin is tuple:
        return _tuple(args)
    if origin is dict:
        key, value = _decoder(args[0]), _decoder(args[1])
        return lambda data: {key(k): value(v) for k, v in _expect(data, dict).items()}
    if hint is type(None):
        return _none
    if hint is float:
        return _number
    if hint in (bool, int, str):
        return lambda data: _expect(data, hint)
    if hint is Path:
        return lambda data: Path(_expect(data, str))
    raise DataError(f"cannot decode {hint}")


def _literal(args: tuple[Any, ...]) -> Decoder:
    allowed = {(type(a), a) for a in args}

    def check(data: Any) -> Any:
        if (type(data), data) not in allowed:
            raise DataError(f"{data!r} is not one of {args}")
        return data

    return check


def _union(hint: Any, args: tuple[Any, ...]) -> Decoder:
    arms = [_decoder(a) for a in args if a is not type(None)]
    optional = type(None) in args

    def check(data: Any) -> Any:
        if data is None and optional:
            return None
        for arm in arms:
            try:
                return arm(data)
            except DataError:
                continue
        raise DataError(f"{data!r} matches no arm of {hint}")

    return check


def _tuple(args: tuple[Any, ...]) -> Decoder:
    if len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])
        return lambda data: tuple(item(v) for v in _expect(data, list))
    parts = [_decoder(a) for a in args]

    def check(data: Any) -> Any:
        items = _expect(data, list)
        if len(items) != len(parts):
            raise DataError(f"expected {len(parts)} items, got {len(items)}")
        return tuple(p(v) for p, v in zip(parts, items, strict=True))

    return check


def _none(data: Any) -> None:
    if data is not None:
        raise DataError(f"expected null, got {type(data).__name__}")


def _number(data: Any) -> Any:
    if type(data) not in (int, float):
        raise DataError(f"expected a number, got {type(data).__name__}")
    return data


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
def _fields(cls: type) -> tuple[tuple[str, Decoder], ...]:
    """(name, decoder) of each init field; the annotations are resolved once per class."""
    hints = field_types(cls)
    return tuple((f.name, _decoder(hints[f.name])) for f in records.fields(cls) if f.init)


def _decode_dataclass(cls: type, data: Any) -> Any:
    """Every field must be there (encode writes them all): data from before a field was added or
    removed is refused, not filled with defaults that the file it was read from may contradict."""
    data = _expect(data, dict)
    spec = _fields(cls)
    if len(data) != len(spec) or any(name not in data for name, _ in spec):
        raise DataError(f"{cls.__name__}: fields {sorted(data)} are not {[name for name, _ in spec]}")
    return cls(**{name: decoder(data[name]) for name, decoder in spec})
