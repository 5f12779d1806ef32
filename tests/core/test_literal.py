"""advisor/core/literal.py: JSON data as Python literal source, for the modules the build generates."""

from __future__ import annotations

import ast
import json
import math

import pytest

from advisor.core.cache import PREBUILT_HEADER, prebuilt_document, prebuilt_module_source
from advisor.core.literal import NotPlainData, literal_source


def test_what_json_loads_returns_comes_back_equal_and_of_the_same_types() -> None:
    text = json.dumps(
        {
            "s": "a'b\"c\\\n\u2028\U0001f600",
            "n": [0, -1, 2**70, 1.5, 1e-300, -0.0, 1e300],
            "b": [True, False, None],
            "nested": {"": [], "x": {"y": [{}]}},
        }
    )
    value = json.loads(text)
    back = ast.literal_eval(literal_source(value))
    assert back == value and json.dumps(back) == text
    assert math.copysign(1, back["n"][5]) == -1  # -0.0 stays negative


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, float("nan")]}, "a.1"),
        ({"a": float("inf")}, "a"),
        ({"a": (1, 2)}, "a"),  # a tuple is not what json.loads returns
        ({1: "x"}, "(top)"),
        ({"a": {"b": b"x"}}, "a.b"),
    ],
)
def test_anything_else_is_refused_with_its_place(value: object, where: str) -> None:
    with pytest.raises(NotPlainData, match=f"^{where.replace('(', '[(]').replace(')', '[)]')}: "):
        literal_source(value)


def test_the_prebuilt_module_holds_the_document_it_was_made_from() -> None:
    text = prebuilt_document({"rules": (("GA101.yaml", 3, "d"), [{"path": "GA101.yaml", "x": 0.25}])})
    namespace: dict[str, object] = {}
    exec(compile(prebuilt_module_source(text), "<prebuilt>", "exec"), namespace)  # our own generated code
    assert namespace["DOCUMENT"] == json.loads(text)
    assert {k: json.loads(text)[k] for k in PREBUILT_HEADER} == PREBUILT_HEADER
