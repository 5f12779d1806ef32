"""The JSON reader: numbers Python's json cannot or should not hand on, and the C decoder that takes
over past the position budget giving exactly the values the position-keeping parser gives."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from advisor.core.document import Span
from advisor.sources import json_file
from advisor.sources.json_file import JsonSyntaxError, parse_json


def test_integer_past_pythons_digit_limit_is_a_syntax_error_at_it() -> None:
    with pytest.raises(ValueError):
        json.loads('{"a": ' + "1" * 5000 + "}")  # what json.loads does: a plain ValueError
    with pytest.raises(JsonSyntaxError) as info:
        parse_json('{"a": 1,\n "b": ' + "1" * 5000 + "}")
    assert info.value.span == Span(2, 7)


@pytest.mark.parametrize("number", ["1e400", "-1e400", "99999999999999999999", "1.5e19"])
def test_out_of_range_numbers_are_refused_at_the_value(number: str) -> None:
    result = parse_json('{"a": 1,\n "b": ' + number + "}")
    [problem] = result.problems
    assert (problem.kind, problem.span, problem.key, problem.detail) == (
        "refused-number",
        Span(2, 7),
        ("b",),
        "refused-number",
    )


@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_non_json_constants_are_syntax_errors(word: str) -> None:
    with pytest.raises(JsonSyntaxError) as info:
        parse_json('{"a": ' + word + "}")
    assert info.value.span == Span(1, 7)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["int", "float", "str", "bool", "null"] + (["list", "dict"] if depth < 4 else []))
    if kind == "int":
        return rng.randint(-(10**12), 10**12)
    if kind == "float":
        return rng.uniform(-1e6, 1e6)
    if kind == "str":
        return "".join(rng.choice('ab é\\"\n\t/') for _ in range(rng.randint(0, 6)))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "null":
        return None
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]
    return {f"k{rng.randint(0, 20)}": _random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))}


def test_fast_path_gives_the_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    docs = [json.dumps({"root": _random_value(rng)}) for _ in range(200)]
    slow = [parse_json(d).data for d in docs]
    monkeypatch.setattr(json_file, "POSITION_BUDGET", 3)
    fast = [parse_json(d).data for d in docs]
    assert fast == slow == [json.loads(d) for d in docs]


def test_fast_path_hands_back_what_it_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_file, "POSITION_BUDGET", 2)
    text = '{"a": 1, "b": 2, "c": {"x": 1e400, "y": [1, 2,], "z": 1, "z": 2}}'
    result = parse_json(text)
    assert result.data == {"a": 1, "b": 2, "c": {"x": float("inf"), "y": [1, 2], "z": 2}}
    kinds = sorted(p.message.split(":")[0].split(" is ")[0] for p in result.problems)
    assert kinds == ["duplicate key 'z'", "inf", "trailing comma"]
