"""A JSON data file the tool wrote and reads back (a baseline, recorded measurements), read strictly.

Such a file may come from a pull request, so whatever it holds is a one-line error naming the file,
line and column, never a traceback: not a regular file, over the size limit, not UTF-8, not strict
JSON, a duplicate key, NaN, or an integer longer than Python's int/str limit (json.loads raises a
bare ValueError for it; CPython Objects/longobject.c, `sys.get_int_max_str_digits`). The fast C
decoder reads it; the position-keeping reader (advisor/sources/json_file.py) runs only to place an
error, so a large baseline costs what json.loads costs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.core.document import KeyPath


class DataFileError(Exception):
    """One line: `FILE[:LINE:COL]: what is wrong`."""


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate("duplicate key")
    return out


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


class JsonData:
    """A data file's parsed value, and where its values are (found only when an error needs them)."""

    def __init__(self, path: Path, text: str, data: Any) -> None:
        self.path = path  # as errors name it
        self.text = text
        self.data = data
        self._spans: dict[KeyPath, Any] | None = None

    def at(self, *keys: str | int) -> str:
        """`FILE:LINE:COL` of the value at the key path (of the nearest enclosing one that has a position)."""
        if self._spans is None:
            from advisor.sources.json_file import JsonSyntaxError, parse_json

            try:
                self._spans = dict(parse_json(self.text).value_spans)
            except (JsonSyntaxError, RecursionError, ValueError):
                self._spans = {}
        path = tuple(keys)
        while path and path not in self._spans:
            path = path[:-1]
        span = self._spans.get(path)
        return f"{self.path}:{span.line}:{span.col}" if span is not None else f"{self.path}:1:1"

    def error(self, message: str, *keys: str | int) -> DataFileError:
        return DataFileError(f"{self.at(*keys)}: {message}")


def read_json_data(path: Path, what: str, shown: str | None = None) -> JsonData:
    """Read `path` as strict JSON; DataFileError (naming the file as `shown`, line and column) for
    anything else."""
    from advisor.sources.read import ReadRefused, read_text_file

    name = Path(shown) if shown is not None else path

    try:
        text = read_text_file(path)  # regular files only, bounded: a FIFO cannot hang the gate
    except ReadRefused as exc:
        raise DataFileError(f"{name}: cannot read {what}: {exc.reason}") from None
    except OSError as exc:
        raise DataFileError(f"{name}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        line, col, reason = _explain(text, exc)
        where = f"{name}:{line}:{col}" if line else str(name)
        raise DataFileError(f"{where}: not valid {what}: {reason}") from None
    return JsonData(name, text, data)


def _explain(text: str, exc: BaseException) -> tuple[int, int, str]:
    """(line, col, reason) of what json.loads refused; line 0 when no position is known."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno, exc.colno, exc.msg
    from advisor.sources.json_file import JsonSyntaxError, parse_json

    try:  # the position-keeping reader says where (a duplicate key, NaN, a 5,000-digit integer)
        result = parse_json(text)
    except JsonSyntaxError as err:
        return err.span.line, err.span.col, err.message
    except (RecursionError, ValueError):
        return 0, 0, "nested too deeply" if isinstance(exc, RecursionError) else "invalid JSON"
    if result.problems:
        first = result.problems[0]
        duplicate = first.kind == "duplicate-key" and first.key
        message = f"duplicate key {str(first.key[-1])!r}" if duplicate else first.message
        return first.span.line, first.span.col, message
    return 0, 0, "nested too deeply" if isinstance(exc, RecursionError) else "invalid JSON"
