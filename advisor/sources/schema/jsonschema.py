"""The JSON schema of a record that advisor.core.datacodec.validate reads (`gpu-advise schema`): the shape
pydantic's `model_json_schema` wrote before the records took over its job (properties by their file
key, `title` per property, `required`, bounds, descriptions, `$defs` for nested records, closed
objects), so that editors configured with the old schema see the same one."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from advisor.core import records
from advisor.core.records import field_types

_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}
_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON schema of record `cls`, nested records under `$defs`."""
    defs: dict[str, Any] = {}
    top = _object(cls, defs)
    return {"$defs": dict(sorted(defs.items())), **top} if defs else top


def _doc(cls: type) -> str | None:
    doc = cls.__doc__
    if not doc or doc.startswith(f"{cls.__name__}("):  # the record decorator's signature, not a doc
        return None
    return " ".join(doc.strip().split("\n\n")[0].split())


def _title(key: str) -> str:
    return key.replace("_", " ").title() if "-" not in key else key.title()


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = field_types(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in records.fields(cls):
        meta = f.metadata
        if not f.init or not meta.get("read", True):
            continue
        key = meta.get("key", f.name)
        prop = _with_constraints(_type(hints[f.name], defs), meta)
        if "$ref" not in prop:
            prop["title"] = _title(key)
        if "description" in meta:
            prop["description"] = meta["description"]
        if f.default is not records.MISSING:
            prop["default"] = _plain(f.default)
        elif f.default_factory is records.MISSING:
            required.append(key)
        properties[key] = dict(sorted(prop.items()))
    out: dict[str, Any] = {"additionalProperties": False}
    doc = _doc(cls)
    if doc:
        out["description"] = doc
    out["properties"] = properties
    if required:
        out["required"] = required
    out["title"] = cls.__name__
    out["type"] = "object"
    return out


def _with_constraints(schema: dict[str, Any], meta: Any) -> dict[str, Any]:
    """Bounds, length and pattern on the schema, or on the non-null arm of an optional."""
    extra = {_BOUNDS[k]: meta[k] for k in _BOUNDS if k in meta}
    if "min_length" in meta:
        extra["minLength"] = meta["min_length"]
    if "pattern" in meta:
        extra["pattern"] = meta["pattern"]
    if not extra:
        return schema
    if "anyOf" in schema:
        arms = [
            arm if arm == {"type": "null"} else dict(sorted({**arm, **extra}.items()))
            for arm in schema["anyOf"]
        ]
        return {**schema, "anyOf": arms}
    return {**schema, **extra}


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if hint is Any:
        return {}
    if records.is_record(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # a placeholder: a record that names itself ends here
            defs[hint.__name__] = _object(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        kinds = {_TYPES[type(a)] for a in args}
        out: dict[str, Any] = {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if len(kinds) == 1:
            out["type"] = kinds.pop()
        return out
    if origin is Union or origin is types.UnionType:
        return {"anyOf": [_type(a, defs) for a in args]}
    if origin in (list, tuple):
        return {"items": _type(args[0], defs), "type": "array"}
    if origin is dict:
        out = {"additionalProperties": _type(args[1], defs), "type": "object"}
        if typing.get_origin(args[0]) is Literal:
            out["propertyNames"] = _type(args[0], defs)
            out["propertyNames"].pop("type", None)
        return out
    if hint is type(None):
        return {"type": "null"}
    if hint is Path:
        return {"format": "path", "type": "string"}
    return {"type": _TYPES[hint]}


def _plain(value: Any) -> Any:
    if records.is_record(value):
        return records.asdict(value)
    return str(value) if isinstance(value, Path) else value
