"""The YAML reader agrees with yaml.safe_load, the pure-Python loader HF and accelerate call, on what
it refuses: tabs (libyaml accepts tabs that the pure scanner rejects) and scalars its constructor
cannot build. Compared case by case against PyYAML's own SafeLoader, position included."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from advisor.core.document import Span
from advisor.sources.yaml_file import YamlTabError, YamlValueError, parse_yaml, yaml_error_span
from tests.conftest import CORPUS

TAB_CASES = [
    "a:\t2\n",
    "a: \t2\n",
    "a:\t 2\n",
    "a:\t\n  b: 1\n",
    "- a:\t1\n",
    "{a:\t1}\n",
    "a: [1,\t2]\n",
    "a: 1\t# c\n",
    "a:\t'x'\n",
    "a: b\tc\n",
    "a: 1\n \t \nb: 2\n",
    "a: b\n  \tc\n",
    "# x\ty\na: 1\n",
    "a: 1 # x\ty\n",
    "a: 1\n  \t# c\n",
    'a: "x\ty"\n',
    "a: 'x\n\ty'\n",
    "a: >\n  x\n  \ty\n",
    "a: |\n  x\ty\n",
    "a: b #\tc\n",
    "a: b#\tc\n",
    "a: 'b'\t#c\n",
    "--- \t\na: 1\n",
    "a: 1\n...\t\n",
    "a:\t&x 1\nb: *x\n",
    "a:\t!!int 1\n",
    '"k\tey": 1\n',
    "a:\n  - 1\n  -\t2\n",
    "a: 1\r\nb:\t2\r\n",  # YAML's other line breaks: \r\n, \r, NEL
    "a: 1\rb: 2 #\tx\rc:\t3",
    " :-11*e}nA'\ro [\t",  # found by benchmarks/fuzz_cli.py: a scalar ending on a \r-separated line
    "a: 1\x85b:\t2\n",
]


def _pure(text: str) -> Span | None:
    """Where yaml.safe_load's pure-Python loader fails, or None when it reads the text."""
    try:
        yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        return yaml_error_span(exc)
    return None


def _ours(text: str) -> Span | None:
    try:
        parse_yaml(text)
    except yaml.YAMLError as exc:
        return yaml_error_span(exc)
    return None


@pytest.mark.parametrize("text", TAB_CASES)
def test_tabs_are_refused_exactly_where_the_pure_loader_refuses_them(text: str) -> None:
    assert _ours(text) == _pure(text)


def test_key_tab_value_is_a_tab_error_at_the_tab() -> None:
    with pytest.raises(YamlTabError) as info:
        parse_yaml("output_dir: out\nper_device_train_batch_size:\t2\n")
    assert yaml_error_span(info.value) == Span(2, 29)


def test_random_tabs_in_real_files_agree_with_the_pure_loader() -> None:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent")
    files = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yaml", ".yml"))[::4]
    rng = random.Random(9)
    for i in range(150):
        text = files[i % len(files)].read_text(encoding="utf-8")
        pos = rng.randrange(len(text) + 1)
        text = text[:pos] + rng.choice(["\t", " \t", "\t "]) + text[pos:]
        assert _ours(text) == _pure(text), (files[i % len(files)].name, pos)


@pytest.mark.parametrize(
    "value", ["!!float abc", "!!int 0b2", "!!timestamp 2001-99-99", "!!timestamp 2001-12-14x", "!!bool maybe"]
)
def test_scalars_safe_load_cannot_construct(value: str) -> None:
    text = f"a: 1\nb: {value}\n"
    with pytest.raises((ValueError, KeyError, AttributeError)):  # what yaml.safe_load raises: no YAMLError
        yaml.safe_load(text)
    with pytest.raises(YamlValueError) as info:
        parse_yaml(text)
    assert yaml_error_span(info.value) == Span(2, 4)


def test_integer_past_pythons_digit_limit() -> None:
    with pytest.raises(YamlValueError) as info:
        parse_yaml("a: 1\nb: " + "7" * 5000 + "\n")
    assert yaml_error_span(info.value) == Span(2, 4)


def test_key_that_cannot_be_constructed() -> None:
    with pytest.raises(YamlValueError) as info:
        parse_yaml("a: 1\n!!float x: 2\n")
    assert yaml_error_span(info.value) == Span(2, 1)


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        (".inf", True),
        ("-.inf", True),
        (".nan", True),
        ("9223372036854775807", False),
        ("9223372036854775808", True),
        ("1.0e+300", True),
        ("1.0e+18", False),
        ("1e400", False),
    ],  # 1e400 is a string in YAML 1.1
)
def test_numbers_beyond_any_setting_are_refused_at_the_value(value: str, refused: bool) -> None:
    result = parse_yaml(f"a: 1\nb: {value}\n")
    found = [p for p in result.problems if p.detail == "refused-number"]
    assert [(p.kind, p.span, p.key) for p in found] == (
        [("refused-number", Span(2, 4), ("b",))] if refused else []
    )


def test_refused_number_reaches_the_plan_as_unknown(tmp_path: Path) -> None:
    from advisor.plan.discover import DocumentCache, discover
    from advisor.plan.run_plan import build_plan

    path = tmp_path / "accelerate.yaml"
    path.write_text("distributed_type: MULTI_GPU\nnum_processes: .inf\n")
    specs, _ = discover([path], DocumentCache())
    plan = build_plan(specs[0])
    entry = plan.accelerate.entry("num_processes")
    assert not entry.known and entry.origin.line == 2


@pytest.mark.parametrize(
    "text",
    ["a: " + "[" * 1_000_000 + "]" * 1_000_000, "a: " + "{b: " * 200_000 + "1" + "}" * 200_000],
    ids=["1M-deep sequences", "200k-deep mappings"],
)
def test_deep_flow_nesting_is_refused_before_libyaml_scans_it(text: str) -> None:
    """libyaml's scanner is quadratic in the flow depth and its composer recurses in C (this used to
    take minutes, or crash the interpreter): the event count stops at the 65th level."""
    with pytest.raises(yaml.YAMLError) as info:
        parse_yaml(text)
    span = yaml_error_span(info.value)
    # our event count stops at the 65th level (col < 280 here); the libyaml that PyYAML >= 6.0.4 bundles
    # has a nesting limit of its own (1000 levels) and may refuse first: either way within the first
    # thousand brackets, never after scanning the million
    assert span.line == 1 and span.col <= len("a: ") + 1001
