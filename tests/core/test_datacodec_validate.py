"""advisor.core.datacodec.validate: every kind of problem comes back with its key path and a message, all
problems of one input at once, in one error type; and the JSON-schema writer."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from advisor.core.datacodec import Invalid, invalid, validate
from advisor.core.records import field, record, spec
from advisor.sources.schema.jsonschema import json_schema


def _upper(v: str) -> str:
    if not v.isupper():
        raise ValueError(f"tag {v!r} must be upper case")
    return v


@record(frozen=True, slots=True, kw_only=True)
class Inner:
    """An inner record."""

    size: int = spec(ge=1, le=8, description="how big")
    tag: str = spec(default="A", after=_upper)


@record(frozen=True, slots=True, kw_only=True)
class Outer:
    name: str = spec(min_length=1)
    batch_size: int | None = spec(default=None, key="batch-size", gt=0)
    level: Literal["low", "high"] = "low"
    ratio: float = spec(default=0.5, ge=0.0, le=1.0)
    inner: Inner
    many: list[Inner] = field(default_factory=list)
    table: dict[str, list[int]] = field(default_factory=dict)
    either: int | Inner | None = None
    code: str = spec(default="GA100", pattern=r"[A-Z]{2}\d{3}")

    def __validate__(self) -> None:
        if self.level == "high" and self.batch_size is None:
            raise invalid("a high level needs batch-size", ("batch-size",))


GOOD: dict[str, Any] = {"name": "x", "inner": {"size": 2}}


def _problems(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(Invalid) as info:
        validate(Outer, data)
    return [(p.path, p.message) for p in info.value.problems]


def test_valid_input_becomes_the_record_with_its_defaults() -> None:
    out = validate(Outer, {**GOOD, "batch-size": 4, "many": [{"size": 1, "tag": "B"}], "either": 3})
    assert out == Outer(name="x", batch_size=4, inner=Inner(size=2), many=[Inner(size=1, tag="B")], either=3)
    assert validate(Outer, {**GOOD, "batch_size": 4}).batch_size == 4  # the field name is accepted too


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"inner": {"size": 0}}, ("inner", "size"), "Input should be greater than or equal to 1"),
        ({"inner": {"size": 9}}, ("inner", "size"), "Input should be less than or equal to 8"),
        ({"inner": {"size": "2"}}, ("inner", "size"), "Input should be a valid integer"),
        ({"inner": {"size": True}}, ("inner", "size"), "Input should be a valid integer"),
        ({"inner": {}}, ("inner", "size"), "Field required"),
        ({"inner": {"size": 1, "tag": "b"}}, ("inner", "tag"), "tag 'b' must be upper case"),
        ({"batch-size": 0}, ("batch-size",), "Input should be greater than 0"),
        ({"level": "mid"}, ("level",), "Input should be 'low' or 'high'"),
        ({"ratio": 2}, ("ratio",), "Input should be less than or equal to 1"),
        ({"ratio": "a"}, ("ratio",), "Input should be a valid number"),
        ({"name": ""}, ("name",), "String should have at least 1 character"),
        ({"name": 3}, ("name",), "Input should be a valid string"),
        ({"many": [{"size": 1}, {"size": 1, "colour": 2}]}, ("many", 1, "colour"), "unknown key 'colour'"),
        ({"many": {"size": 1}}, ("many",), "Input should be a valid list"),
        ({"table": {"a": [1, "b"]}}, ("table", "a", 1), "Input should be a valid integer"),
        ({"table": []}, ("table",), "Input should be a valid dictionary"),
        ({"either": {"size": 0}}, ("either", "size"), "Input should be greater than or equal to 1"),
        ({"either": "x"}, ("either",), "Input should be a valid integer or a mapping or None"),
        ({"code": "ga100"}, ("code",), "String should match pattern '[A-Z]{2}\\d{3}'"),
        ({"level": "high"}, ("batch-size",), "a high level needs batch-size"),
        ({"batch-sise": 3}, ("batch-sise",), "unknown key 'batch-sise' (did you mean 'batch-size'?)"),
    ],
)
def test_each_problem_names_its_key_path(change: dict[str, Any], path: tuple, message: str) -> None:
    assert _problems({**GOOD, **change}) == [(path, message)]


def test_every_problem_is_reported_at_once_and_a_missing_top_key_too() -> None:
    found = _problems({"inner": {"size": 0, "tag": 1}, "level": 3})
    assert [p for p, _ in found] == [("inner", "size"), ("inner", "tag"), ("level",), ("name",)]
    with pytest.raises(Invalid) as info:
        validate(Outer, {"inner": {"size": 0}})
    err = info.value.errors()[0]
    assert err["loc"] == ("inner", "size") and err["type"] == "greater_than_equal" and err["input"] == 0
    assert "inner.size: Input should be greater than or equal to 1" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_top_level_value_that_is_no_mapping_is_refused() -> None:
    with pytest.raises(Invalid, match="Input should be a valid dictionary"):
        validate(Outer, ["name"])


def test_the_schema_writer_names_keys_types_bounds_and_descriptions() -> None:
    schema = json_schema(Outer)
    props = schema["properties"]
    assert schema["required"] == ["name", "inner"] and schema["additionalProperties"] is False
    assert props["batch-size"] == {
        "anyOf": [{"exclusiveMinimum": 0, "type": "integer"}, {"type": "null"}],
        "default": None,
        "title": "Batch-Size",
    }
    assert props["level"] == {"default": "low", "enum": ["low", "high"], "title": "Level", "type": "string"}
    assert props["inner"] == {"$ref": "#/$defs/Inner"}
    assert props["table"]["additionalProperties"] == {"items": {"type": "integer"}, "type": "array"}
    inner = schema["$defs"]["Inner"]
    assert inner["description"] == "An inner record." and inner["required"] == ["size"]
    assert inner["properties"]["size"] == {
        "description": "how big",
        "maximum": 8,
        "minimum": 1,
        "title": "Size",
        "type": "integer",
    }
    assert props["code"]["pattern"] == r"[A-Z]{2}\d{3}"
