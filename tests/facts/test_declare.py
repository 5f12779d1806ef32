"""A fact namespace class: its fields are its facts, and every set is checked against their types."""

from __future__ import annotations

import pytest

from advisor.core.provenance import Namespace, UndeclaredFact, Value
from advisor.facts.declare import ANY, NUMBER, FactNamespace, fact


class Demo(FactNamespace, name="demo", doc="a namespace of every kind of fact"):
    count = fact(int, "a count", unit="things")
    share = fact(float, "a share")
    size = fact(NUMBER, "a size")
    label = fact(str | bool, "a label or a switch")
    ids = fact(list[int], "indices")
    problems = fact(list[dict], "problems", items=("kind", "location"))
    anything = fact(ANY, "whatever the file says")
    name_ = fact(str, "a name", key="name")


def test_fields_are_the_namespace_the_evaluator_reads() -> None:
    ns = Demo()
    ns.count = Value(3, None, "derived")
    ns.name_ = Value("x")
    assert isinstance(ns, Namespace) and ns.count == 3 and ns.read("count") == 3 and ns.name == "x"
    assert ns.value("count") == Value(3, None, "derived") and ns.entry("name") == Value("x")
    assert ns.share is None and "share" not in ns  # unset reads as None
    ns.share = Value(None, unknown="not written")
    assert ns.share is None and ns.value("share").unknown == "not written"  # type: ignore[union-attr]
    assert [f.type for f in Demo.facts.values()] == [
        "int", "float", "number", "str|bool", "list[int]", "list[dict]", "any", "str"
    ]  # fmt: skip
    assert list(Demo.facts) == ["count", "share", "size", "label", "ids", "problems", "anything", "name"]


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("count", "3", "a str is not int"),
        ("count", True, "a bool is not int"),
        ("count", 2.5, "a float is not int"),
        ("share", "0.5", "a str is not float"),
        ("size", False, "a bool is not number"),
        ("label", 3, "an int is not str|bool"),
        ("ids", [1, "2"], "a list is not list[int]"),
        ("ids", 1, "an int is not list[int]"),
    ],
)
def test_a_value_of_another_type_is_stored_as_unknown_with_the_reason(
    key: str, value: object, problem: str
) -> None:
    """A builder may pass a user's written value through: the rules read None, not a crash."""
    ns = Demo()
    ns.set(key, Value(value, None, "training_args", note="as written"))
    stored = ns.value(key)
    assert stored is not None and ns.read(key) is None and stored.value is None
    assert stored.unknown == f"{problem} (demo.{key} is declared {Demo.facts[key].type})"
    assert (stored.source, stored.note) == ("training_args", "as written")


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("problems", [{"kind": "x", "extra": 1}], "its items have undeclared keys extra"),
        ("cuont", 3, "not a declared fact"),
    ],
)
def test_a_builders_bug_is_refused(key: str, value: object, problem: str) -> None:
    with pytest.raises(UndeclaredFact, match=rf"demo\.{key}: {problem}"):
        Demo().set(key, Value(value))


@pytest.mark.parametrize(
    ("key", "value"),
    [("share", 2), ("size", 2.5), ("label", False), ("ids", (1, 2)), ("problems", [{"kind": "x"}])],
)
def test_values_of_the_declared_type_pass(key: str, value: object) -> None:
    Demo().set(key, Value(value))
    Demo().set("anything", Value(object()))


def test_a_namespace_value_is_refused_for_a_declared_fact() -> None:
    with pytest.raises(UndeclaredFact, match="declared int, not a namespace"):
        Demo().set("count", Namespace("x"))


def test_a_dynamic_namespace_declares_no_facts_and_takes_any_key() -> None:
    class Keys(FactNamespace, name="keys", doc="a file's keys", keys_from=("accelerate",)):
        pass

    Keys().set("whatever", Value(1))
    with pytest.raises(TypeError, match="declares no facts"):
        type("Bad", (FactNamespace,), {"x": fact(int, "x")}, name="bad", doc="d", open=True)
