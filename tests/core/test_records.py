"""`advisor.core.records.record` behaves as `dataclasses.dataclass` with the same options, and is the only
dataclass decorator of the package (a stdlib dataclass may not inherit from a record: see records.py)."""

from __future__ import annotations

import ast
import copy
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import pytest

from advisor.core import records
from advisor.core.records import KW_ONLY, annotations, field, methods, record

ADVISOR = Path(__file__).resolve().parents[2] / "advisor"

OPTIONS = [
    {},
    {"slots": True},
    {"frozen": True},
    {"frozen": True, "slots": True},
    {"frozen": True, "slots": True, "kw_only": True},
    {"slots": True, "eq": False},
    {"frozen": True, "repr": False},
]


def _point(decorate: Any, make_field: Any = field) -> Any:
    @decorate
    class Point:
        x: int
        y: int = 2
        tags: list[str] = make_field(default_factory=list)
        note: str = make_field(default="n", compare=False, repr=False)
        LIMIT: ClassVar[int] = 9

    return Point


@pytest.fixture(autouse=True, params=["bound", "compiled"])
def init_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with __init__ binding its arguments in Python, and compiled from the start."""
    monkeypatch.setattr(methods, "COMPILE_AFTER", 10_000 if request.param == "bound" else 0)
    return str(request.param)


def test_a_class_switches_to_the_compiled_init(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(methods, "COMPILE_AFTER", 2)
    cls = _point(record(frozen=True, slots=True))
    first = cls.__init__
    built = [cls(i) for i in range(4)]
    assert cls.__init__ is not first and [p.x for p in built] == [0, 1, 2, 3]
    assert cls(5, 6, ["a"]) == cls(x=5, y=6, tags=["a"])


def _pair(options: dict[str, bool]) -> tuple[Any, Any]:
    return _point(dataclasses.dataclass(**options), dataclasses.field), _point(record(**options))


def _build(cls: Any, kw_only: bool, **values: Any) -> Any:
    return cls(**values) if kw_only or "x" not in values else cls(values.pop("x"), **values)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "plain")
def test_same_behaviour_as_the_stdlib(options: dict[str, bool]) -> None:
    std, rec = _pair(options)
    kw = options.get("kw_only", False)
    a_std, a_rec = _build(std, kw, x=1, tags=["t"]), _build(rec, kw, x=1, tags=["t"])
    if options.get("repr", True):
        assert repr(a_std) == repr(a_rec)
    else:
        assert repr(a_rec).startswith("<")
    assert std.__match_args__ == rec.__match_args__
    assert [f.name for f in dataclasses.fields(std)] == [f.name for f in records.fields(rec)]
    assert dataclasses.asdict(a_std) == records.asdict(a_rec)
    # the default factory gives each instance its own list
    assert _build(rec, kw, x=1).tags is not _build(rec, kw, x=1).tags
    # equality on the compared fields only, and never with another class
    same = _build(rec, kw, x=1, tags=["t"], note="other")
    assert (a_rec == same) == (a_std == _build(std, kw, x=1, tags=["t"], note="other"))
    assert (a_rec == _build(rec, kw, x=5)) is False
    assert a_rec.__eq__(a_std) is NotImplemented
    # hashability as the stdlib decides it
    assert (std.__hash__ is None) == (rec.__hash__ is None)
    if rec.__hash__ is not None and options.get("frozen"):
        b_rec = _build(rec, kw, x=1, tags=(), note="other")
        assert hash(b_rec) == hash(_build(rec, kw, x=1, tags=(), note="zzz"))
    assert hasattr(a_std, "__dict__") == hasattr(a_rec, "__dict__")
    if options.get("frozen"):
        with pytest.raises(records.FrozenInstanceError):
            a_rec.x = 3
        with pytest.raises(records.FrozenInstanceError):
            del a_rec.x
    else:
        a_rec.x = 3
        assert a_rec.x == 3
    changed = records.replace(a_rec, y=7)
    assert (changed.x, changed.y, type(changed)) == (a_rec.x, 7, rec)
    assert copy.copy(a_rec) == a_rec or not options.get("eq", True)
    clone = copy.deepcopy(a_rec)
    assert clone.tags == a_rec.tags and clone.tags is not a_rec.tags


def test_keyword_only_and_missing_arguments_raise_as_the_stdlib() -> None:
    rec = _point(record(frozen=True, slots=True, kw_only=True))
    with pytest.raises(TypeError):
        rec(1)
    with pytest.raises(TypeError):
        rec()
    positional = _point(record(frozen=True))
    with pytest.raises(TypeError):
        positional(1, 2, [], "n", "extra")
    with pytest.raises(TypeError):
        positional(1, x=1)
    with pytest.raises(TypeError):
        positional(1, colour="red")


def test_kw_only_marker_post_init_and_init_false_fields() -> None:
    @record(frozen=True, slots=True)
    class Setup:
        a: int
        _: KW_ONLY
        b: int = 1
        total: int = field(init=False, default=0)

        def __post_init__(self) -> None:
            object.__setattr__(self, "total", self.a + self.b)

    s = Setup(2, b=3)
    assert (s.a, s.b, s.total) == (2, 3, 5)
    with pytest.raises(TypeError):
        Setup(2, 3)


def test_a_field_named_self() -> None:
    @record
    class Odd:
        self: int

    assert Odd(self=4).self == 4


def test_inheritance_between_records() -> None:
    @record(frozen=True, slots=True)
    class Base:
        a: int

    @record(frozen=True, slots=True)
    class Child(Base):
        b: int = 0

    c = Child(1, 2)
    assert (c.a, c.b) == (1, 2) and c != Base(1)
    assert repr(c) == "test_inheritance_between_records.<locals>.Child(a=1, b=2)"
    assert Base(1) == Base(1) and hash(Base(1)) == hash(Base(1))


def test_class_written_methods_are_kept() -> None:
    @record(frozen=True)
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

    assert repr(Own(1)) == "own" and Own(1) == Own(2) and hash(Own(1)) == 7


def test_mistakes_fail_at_decoration() -> None:
    with pytest.raises(TypeError, match="non-default argument"):

        @record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Mutable:
            a: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="__setattr__"):

        @record(frozen=True)
        class Writes:
            a: int

            def __setattr__(self, name: str, value: object) -> None: ...


def test_every_dataclass_of_the_package_is_a_record() -> None:
    offenders = []
    for path in sorted(ADVISOR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                    if name == "dataclass":
                        offenders.append(f"{path.relative_to(ADVISOR.parent)}:{node.lineno} {node.name}")
    assert not offenders, "use advisor.core.records.record, not dataclasses.dataclass:\n" + "\n".join(
        offenders
    )


def _package_records() -> list[type]:
    import importlib
    import pkgutil

    import advisor

    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(advisor.__path__, "advisor."):
        if info.name.startswith(("advisor.pipeline.probe.worker", "advisor.pipeline.probe.train")):
            continue  # the probe's worker modules import torch
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for value in vars(module).values():
            if isinstance(value, type) and records.is_record(value) and value.__module__ == info.name:
                found[f"{info.name}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


def test_field_types_read_every_annotation_of_the_package_as_typing_does() -> None:
    import sys
    import typing

    classes = _package_records()
    assert len(classes) > 90
    for cls in classes:
        try:
            expected = typing.get_type_hints(cls)
        except NameError:  # a name imported for type checking only: neither can resolve it
            with pytest.raises(NameError):
                records.field_types(cls)
            continue
        names = [f.name for f in records.fields(cls)]
        assert records.field_types(cls) == {n: expected[n] for n in names}, cls
        scope = vars(sys.modules[cls.__module__])
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
            if name in names and isinstance(annotation, str):
                # read by the reader itself, not by its fallback on typing
                assert annotations._TypeReader(annotation, scope).read() == expected[name], (cls, name)


@pytest.mark.parametrize(
    "text",
    ["int | None", "dict[str, tuple[int, ...]]", "Literal['a', 'b'] | None", "list[list[str]]"],
)
def test_field_types_forms(text: str) -> None:
    import typing

    scope = {"Literal": typing.Literal}
    assert annotations._TypeReader(text, scope).read() == eval(text, scope)


def test_field_types_fall_back_on_typing_for_other_forms() -> None:
    @record
    class Odd:
        a: "int if True else str"  # noqa: UP037

    assert records.field_types(Odd) == {"a": int}


def test_a_cycle_of_records_prints_and_own_state_methods_are_kept() -> None:
    @record
    class Node:
        name: str
        other: object = None

    a = Node("a")
    a.other = Node("b", a)
    shown = repr(a).replace("test_a_cycle_of_records_prints_and_own_state_methods_are_kept.<locals>.", "")
    assert shown == "Node(name='a', other=Node(name='b', other=...))"

    @record(frozen=True, slots=True)
    class Own:
        a: int
        __match_args__ = ("a",)

        def __getstate__(self) -> object:
            return {"a": self.a}

        def __setstate__(self, state: dict[str, int]) -> None:
            object.__setattr__(self, "a", state["a"])

    assert Own.__getstate__(Own(3)) == {"a": 3} and copy.deepcopy(Own(3)) == Own(3)
