"""The YAML and JSON readers: values typed as their consumers type them, exact positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.document import Span
from advisor.sources.json_file import JsonSyntaxError, parse_json
from advisor.sources.read import read_document
from advisor.sources.yaml_file import parse_yaml


def test_yaml_values_follow_pyyaml_yaml11() -> None:
    r = parse_yaml(
        "learning_rate: 1e-5\nlr2: 1.0e-5\nbf16: yes\nmode: 'no'\ndistributed_type: NO\nsteps: 500_000\n"
    )
    assert r.data == {
        "learning_rate": "1e-5",  # a string under YAML 1.1
        "lr2": 1.0e-5,
        "bf16": True,
        "mode": "no",
        "distributed_type": False,
        "steps": 500000,
    }
    kinds = [(p.kind, p.key) for p in r.problems]
    assert ("yaml11-scalar", ("learning_rate",)) in kinds
    assert ("yaml11-scalar", ("bf16",)) in kinds
    assert ("yaml11-scalar", ("distributed_type",)) in kinds
    assert ("yaml11-scalar", ("mode",)) not in kinds  # quoted: no surprise


def test_yaml_positions_are_one_based_for_keys_and_values() -> None:
    r = parse_yaml("a: 1\nfsdp_config:\n  fsdp_offload_params: true\nlist:\n  - x\n  - y\n")
    assert r.key_spans[("fsdp_config", "fsdp_offload_params")] == Span(3, 3)
    assert r.value_spans[("fsdp_config", "fsdp_offload_params")] == Span(3, 24)
    assert r.key_spans[("list", 1)] == Span(6, 5)


def test_yaml_duplicate_key_is_reported_and_last_wins() -> None:
    r = parse_yaml("a: 1\nb: 2\na: 3\n")
    assert r.data["a"] == 3
    dup = [p for p in r.problems if "duplicate" in p.message]
    assert dup and dup[0].span == Span(3, 1)


def test_json_positions_auto_and_numbers() -> None:
    text = (
        '{\n  "train_micro_batch_size_per_gpu": "auto",\n  "zero_optimization": {"stage": 3, "x": 1e-5}\n}\n'
    )
    r = parse_json(text)
    assert r.data["train_micro_batch_size_per_gpu"] == "auto"
    assert r.data["zero_optimization"] == {"stage": 3, "x": 1e-5}
    assert r.key_spans[("zero_optimization", "stage")] == Span(3, 25)
    assert r.value_spans[("train_micro_batch_size_per_gpu",)] == Span(2, 37)


def test_json_comments_trailing_commas_duplicates_are_reported() -> None:
    r = parse_json('{\n  // hjson comment\n  "a": 1,\n  "a": 2,\n}\n')
    assert r.data == {"a": 2}
    messages = [(p.span.line, p.message.split(":")[0]) for p in r.problems]
    assert (2, "comment in JSON") in messages
    assert (4, "duplicate key 'a'") in messages
    assert any("trailing comma" in p.message for p in r.problems)


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ('{"a": 1 "b": 2}', 1, 9),
        ('{\n  "a": [1, 2\n}', 3, 1),
        ('{"a": tru}', 1, 7),
        ('{"a": "unterminated\n}', 1, 7),
    ],
)
def test_json_errors_carry_line_and_column(text: str, line: int, col: int) -> None:
    with pytest.raises(JsonSyntaxError) as exc:
        parse_json(text)
    assert (exc.value.span.line, exc.value.span.col) == (line, col)


def test_read_document_classifies_by_content_not_name(tmp_path: Path) -> None:
    (tmp_path / "whatever.yaml").write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
    )
    (tmp_path / "ds.yaml").write_text("per_device_train_batch_size: 2\nlearning_rate: 2.0e-5\n")
    (tmp_path / "config.json").write_text('{"zero_optimization": {"stage": 2}}')
    (tmp_path / "open_instruct.conf").write_text('{"train_micro_batch_size_per_gpu": "auto"}')
    kinds = {p.name: read_document(p).kind for p in tmp_path.iterdir()}
    assert kinds == {
        "whatever.yaml": "accelerate",
        "ds.yaml": "training_args",
        "config.json": "deepspeed",
        "open_instruct.conf": "deepspeed",
    }


def test_yaml11_problems_carry_their_kind() -> None:
    r = parse_yaml("lr: 1e-5\nbf16: yes\nt: 1:30\n")
    assert {p.key: p.detail for p in r.problems if p.kind == "yaml11-scalar"} == {
        ("lr",): "number-string",
        ("bf16",): "bool-word",
        ("t",): "sexagesimal",
    }


def test_alias_value_is_located_at_the_alias_not_the_anchor() -> None:
    r = parse_yaml("base: &lr 2.0e-5\nother: 1\nlearning_rate: *lr\nids: [1, *lr]\nm: &m {a: 1}\nn: *m\n")
    assert r.data["learning_rate"] == 2e-5 and r.data["n"] == {"a": 1}
    assert r.value_spans[("learning_rate",)] == Span(3, 16)
    assert r.value_spans[("base",)] == Span(1, 7)  # the anchor keeps its own place
    assert r.key_spans[("ids", 1)] == Span(4, 10) and r.value_spans[("ids", 1)] == Span(4, 10)
    assert r.value_spans[("n",)] == Span(6, 4)


def test_alias_of_a_yaml11_scalar_is_reported_once_at_the_anchor() -> None:
    r = parse_yaml("base: &lr 1e-5\nlearning_rate: *lr\n")
    assert [p.key for p in r.problems if p.kind == "yaml11-scalar"] == [("base",)]


def test_alias_keeps_merge_keys_and_without_aliases_the_c_composer_gives_the_same_values() -> None:
    text = "base: &b {lr: 1.0e-5, bf16: true}\nrun:\n  <<: *b\n  bf16: false\n"
    r = parse_yaml(text)
    assert r.data["run"] == {"lr": 1e-5, "bf16": False}
    plain = parse_yaml("run:\n  lr: 1.0e-5\n  bf16: false\n")
    assert plain.data["run"] == r.data["run"]


def test_alias_bomb_is_located_where_the_limit_is_hit(tmp_path: Path) -> None:
    rows = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(9):
        prev, cur = chr(97 + i), chr(98 + i)
        rows.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    problem = read_document(p).problems[0]
    assert problem.kind == "unreadable" and "alias bomb" in problem.message
    assert problem.message.startswith("YAML rejected:")
    assert problem.span == Span(5, 28)  # the alias (the 6th *d) where 50,000 nodes are passed
