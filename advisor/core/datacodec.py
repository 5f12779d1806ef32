"""Frozen dataclasses to JSON-ready plain data and back, checking every field's type on the way back.

The on-disk cache (advisor/core/cache.py) stores validated rule specs, settings, hardware descriptors and the
GPU catalog as JSON, which cannot run code when read, unlike a pickle. `decode` rebuilds the dataclass
from its field annotations and raises `DataError` on anything of the wrong shape, so a corrupt or
tampered entry is a cache miss, never an object of the wrong type.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePath
from typing import Any, Literal, Union

from advisor.core import records
from advisor.core.records import field_types


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


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(name for name, _ in _fields(cls))


def _decode_dataclass(cls: type, data: Any) -> Any:
    """Every field must be there (encode writes them all): data from before a field was added or
    removed is refused, not filled with defaults that the file it was read from may contradict."""
    data = _expect(data, dict)
    spec = _fields(cls)
    if data.keys() != _field_names(cls):  # one set comparison: the rule catalog decodes ~1000 records
        raise DataError(f"{cls.__name__}: fields {sorted(data)} are not {[name for name, _ in spec]}")
    return cls(**{name: decoder(data[name]) for name, decoder in spec})


# --------------------------------------------------------------------------------------------
# Validating input (a file's mapping) into records: the checks live in each field's declaration
# (advisor.core.records.spec); every problem is collected, each with its key path.

Loc = tuple[str | int, ...]


@records.record(frozen=True, slots=True)
class Problem:
    """One thing wrong with the input: where (key path from the top), what, of which kind."""

    path: Loc
    message: str
    kind: str = "value_error"
    input: Any = None


class Invalid(ValueError):
    """Input that does not validate: every problem found, each with its key path (`problems`)."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "\n".join(f"{'.'.join(map(str, p.path)) or '(top)'}: {p.message}" for p in self.problems)
        )

    def errors(self) -> list[dict[str, Any]]:
        """The problems as mappings: loc, msg, type, input (the shape the file:line mappers read)."""
        return [{"loc": p.path, "msg": p.message, "type": p.kind, "input": p.input} for p in self.problems]


def invalid(message: str, path: Loc = ()) -> Invalid:
    """An error for a record's `__validate__` or a field's `before`/`after` hook, at `path` relative to
    the record (the field, for a field hook, when empty)."""
    return Invalid([Problem(path, message, "invalid")])


_Checker = Callable[[Any, Loc, list[Problem]], Any]
_BAD = object()  # a checker's result when it recorded a problem


def validate(cls: type[_R], data: Any, *, lax: bool = False) -> _R:
    """`data` (parsed TOML/YAML) as the record `cls`: keys by their `spec(key=...)` or name, types,
    bounds, choices, unions, nested records/lists/dicts; unknown keys refused. Raises `Invalid`
    with every problem found. `cls` may define `__validate__(self)`, which raises `invalid(...)`.
    `lax`: numbers and booleans written as text, and whole floats for integers, are accepted, as
    pydantic's lax mode did for the settings (booleans are never numbers here)."""
    problems: list[Problem] = []
    out: _R = _checker(typing.cast(Any, cls), lax)(data, (), problems)
    if problems:
        raise Invalid(problems)
    return out


def input_keys(cls: type) -> list[str]:
    """The keys a record accepts, as written in a file."""
    return [key for key, _, _ in _input_fields(cls)]


_R = typing.TypeVar("_R")
_PLAIN_NAMES = {
    str: "a valid string",
    bool: "a valid boolean",
    int: "a valid integer",
    float: "a valid number",
}
_KINDS = {str: "string_type", bool: "bool_type", int: "int_type", float: "float_type"}


@cache
def _checker(hint: Any, lax: bool = False) -> _Checker:
    if hint is Any:
        return _check_any
    if records.is_record(hint):
        return lambda data, loc, problems: _check_record(hint, data, loc, problems, lax)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return _check_literal(args)
    if origin is Union or origin is types.UnionType:
        return _check_union(args, lax)
    if origin is list or origin is tuple:
        item = _checker(args[0], lax)

        def items(data: Any, loc: Loc, problems: list[Problem]) -> Any:
            if type(data) is not list:
                return _fail(problems, loc, "Input should be a valid list", "list_type", data)
            out = [item(v, (*loc, i), problems) for i, v in enumerate(data)]
            return out if origin is list else tuple(out)

        return items
    if origin is dict:
        key, value = _checker(args[0], lax), _checker(args[1], lax)

        def mapping(data: Any, loc: Loc, problems: list[Problem]) -> Any:
            if type(data) is not dict:
                return _fail(problems, loc, "Input should be a valid dictionary", "dict_type", data)
            return {key(k, (*loc, k), problems): value(v, (*loc, k), problems) for k, v in data.items()}

        return mapping
    if hint is type(None):
        return lambda data, loc, problems: (
            None if data is None else _fail(problems, loc, "Input should be None", "none_required", data)
        )
    if hint is Path:
        return lambda data, loc, problems: (
            Path(data)
            if type(data) is str
            else _fail(problems, loc, "Input should be a valid path", "path_type", data)
        )
    if lax and hint in _LAX:
        convert, message, kind = _LAX[hint], f"Input should be {_PLAIN_NAMES[hint]}", _KINDS[hint]

        def loose(data: Any, loc: Loc, problems: list[Problem]) -> Any:
            out = convert(data)
            return _fail(problems, loc, message, kind, data) if out is _BAD else out

        return loose
    if hint in _PLAIN_NAMES:
        wanted = (int, float) if hint is float else (hint,)
        message, kind = f"Input should be {_PLAIN_NAMES[hint]}", _KINDS[hint]
        return lambda data, loc, problems: (
            data if type(data) in wanted else _fail(problems, loc, message, kind, data)
        )
    raise TypeError(f"validate: no checker for {hint}")


def _lax_int(data: Any) -> Any:
    """pydantic's lax int: an int, a whole float, or the text of an int (not a bool, unlike pydantic)."""
    if type(data) is int:
        return data
    if type(data) is float and data.is_integer():
        return int(data)
    if type(data) is str and re.fullmatch(r"\s*[+-]?\d+(_\d+)*\s*", data) and len(data) < 4300:
        return int(data)
    return _BAD


def _lax_float(data: Any) -> Any:
    if type(data) in (int, float):
        return data
    if type(data) is str:
        try:
            return float(data)
        except ValueError:
            return _BAD
    return _BAD


_TRUE, _FALSE = ("1", "on", "t", "true", "y", "yes"), ("0", "off", "f", "false", "n", "no")


def _lax_bool(data: Any) -> Any:
    """pydantic's lax bool: a bool, 0 or 1, or one of its words."""
    if type(data) is bool:
        return data
    if type(data) is int and data in (0, 1):
        return bool(data)
    if type(data) is str and data.strip().lower() in _TRUE + _FALSE:
        return data.strip().lower() in _TRUE
    return _BAD


_LAX: dict[Any, Callable[[Any], Any]] = {int: _lax_int, float: _lax_float, bool: _lax_bool}


def _fail(problems: list[Problem], loc: Loc, message: str, kind: str, data: Any) -> Any:
    problems.append(Problem(loc, message, kind, data))
    return _BAD


def _check_any(data: Any, loc: Loc, problems: list[Problem]) -> Any:
    try:
        return _plain(data)
    except DataError as exc:
        return _fail(problems, loc, str(exc), "any_type", data)


def _choices(args: tuple[Any, ...]) -> str:
    shown = [repr(a) for a in args]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _check_literal(args: tuple[Any, ...]) -> _Checker:
    allowed = {(type(a), a) for a in args}
    message = f"Input should be {_choices(args)}"

    def check(data: Any, loc: Loc, problems: list[Problem]) -> Any:
        if (type(data), data) in allowed:
            return data
        return _fail(problems, loc, message, "literal_error", data)

    return check


def _shape(hint: Any, lax: bool = False) -> tuple[type, ...]:
    """The plain-data types an arm of a union takes, to pick the arm whose problems to report."""
    if records.is_record(hint):
        return (dict,)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return tuple({type(a) for a in args})
    if origin in (list, tuple):
        return (list,)
    if origin is dict:
        return (dict,)
    if lax and hint in (int, float, bool):
        return (int, float, str) if hint is not bool else (bool, int, str)
    if hint is float:
        return (int, float)
    if hint is Path:
        return (str,)
    return (hint,) if isinstance(hint, type) else ()


def _describe_hint(hint: Any) -> str:
    if records.is_record(hint) or typing.get_origin(hint) is dict:
        return "a mapping"
    if typing.get_origin(hint) is Literal:
        return _choices(typing.get_args(hint))
    if typing.get_origin(hint) in (list, tuple):
        return "a list"
    return _PLAIN_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


def _check_union(args: tuple[Any, ...], lax: bool) -> _Checker:
    optional = type(None) in args
    arms = [(a, _checker(a, lax), _shape(a, lax)) for a in args if a is not type(None)]
    wanted = [_describe_hint(a) for a, _, _ in arms] + (["None"] if optional else [])
    message = f"Input should be {' or '.join(wanted)}"

    def check(data: Any, loc: Loc, problems: list[Problem]) -> Any:
        if data is None and optional:
            return None
        fitting = [(c, s) for _, c, s in arms if type(data) in s] or [(c, s) for _, c, s in arms]
        best: list[Problem] | None = None
        for arm, _ in fitting:
            found: list[Problem] = []
            out = arm(data, loc, found)
            if not found:
                return out
            best = found if best is None else best
        if len(fitting) == 1 and len(arms) > 1 and best is not None:
            problems.extend(best)  # the one arm of this shape: its own problems say more
            return _BAD
        if len(arms) == 1 and best is not None:
            problems.extend(best)
            return _BAD
        return _fail(problems, loc, message, "union_error", data)

    return check


@cache
def _input_fields(cls: type, lax: bool = False) -> tuple[tuple[str, records.Field, _Checker], ...]:
    hints = field_types(cls)
    return tuple(
        (f.metadata.get("key", f.name), f, _checker(hints[f.name], lax))
        for f in records.fields(cls)
        if f.init and f.metadata.get("read", True)
    )


def _check_record(cls: type, data: Any, loc: Loc, problems: list[Problem], lax: bool) -> Any:
    if type(data) is not dict:
        return _fail(problems, loc, "Input should be a valid dictionary", "dict_type", data)
    spec = _input_fields(cls, lax)
    by_key = {key: (f, check) for key, f, check in spec}
    by_key.update({f.name: (f, check) for _, f, check in spec if f.name not in by_key})
    before = len(problems)
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in by_key:
            _unknown(cls, key, value, (*loc, key), problems)
            continue
        f, check = by_key[key]
        if f.name in values:
            problems.append(Problem((*loc, key), f"{key!r} is given twice (as {f.name!r} too)", "duplicate"))
            continue
        values[f.name] = _check_field(f, check, value, (*loc, key), problems)
    for key, f, _ in spec:
        if f.name not in values and not f.has_default:
            problems.append(Problem((*loc, key), "Field required", "missing", data))
    if len(problems) > before:
        return _BAD
    out = cls(**values)
    hook = getattr(cls, "__validate__", None)
    if hook is not None:
        try:
            hook(out)
        except Invalid as exc:
            problems.extend(Problem((*loc, *p.path), p.message, p.kind, p.input) for p in exc.problems)
            return _BAD
    return out


def _unknown(cls: type, key: Any, value: Any, loc: Loc, problems: list[Problem]) -> None:
    from advisor.core.suggest import close_matches

    message = f"unknown key {key!r}"
    close = close_matches(str(key), input_keys(cls), n=1)
    message += f" (did you mean {close[0]!r}?)" if close else ""
    problems.append(Problem(loc, message, "extra_forbidden", value))


def _hook(fn: Any, value: Any, loc: Loc, problems: list[Problem]) -> Any:
    try:
        return fn(value)
    except Invalid as exc:
        for p in exc.problems:
            problems.append(Problem((*loc[:-1], *p.path) if p.path else loc, p.message, p.kind, value))
    except ValueError as exc:
        problems.append(Problem(loc, str(exc), "value_error", value))
    return _BAD


def _check_field(f: records.Field, check: _Checker, value: Any, loc: Loc, problems: list[Problem]) -> Any:
    meta = f.metadata
    if "before" in meta:
        value = _hook(meta["before"], value, loc, problems)
        if value is _BAD:
            return _BAD
    before = len(problems)
    out = check(value, loc, problems)
    if len(problems) > before:
        return _BAD
    if meta and out is not None and not _within(meta, out, loc, problems):
        return _BAD
    if "after" in meta:
        out = _hook(meta["after"], out, loc, problems)
    return out


_BOUNDS = (
    ("ge", "greater than or equal to", lambda v, b: v >= b, "greater_than_equal"),
    ("gt", "greater than", lambda v, b: v > b, "greater_than"),
    ("le", "less than or equal to", lambda v, b: v <= b, "less_than_equal"),
    ("lt", "less than", lambda v, b: v < b, "less_than"),
)


def _within(meta: Any, value: Any, loc: Loc, problems: list[Problem]) -> bool:
    """The field's bounds, length and pattern (on the value, not on a union's None)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        for name, words, holds, kind in _BOUNDS:
            if name in meta and not holds(value, meta[name]):
                bound = meta[name]
                shown = (
                    int(bound) if isinstance(bound, float) and bound.is_integer() else bound
                )  # as pydantic
                _fail(problems, loc, f"Input should be {words} {shown}", kind, value)
                return False
    if "min_length" in meta and isinstance(value, str | list | dict) and len(value) < meta["min_length"]:
        n = meta["min_length"]
        what = ("String", "character") if isinstance(value, str) else ("Value", "item")
        _fail(
            problems,
            loc,
            f"{what[0]} should have at least {n} {what[1]}{'s' if n != 1 else ''}",
            "too_short",
            value,
        )
        return False
    if "pattern" in meta and isinstance(value, str) and not re.fullmatch(meta["pattern"], value):
        _fail(
            problems,
            loc,
            f"String should match pattern '{meta['pattern']}'",
            "string_pattern_mismatch",
            value,
        )
        return False
    return True
