"""Every reader's value spans end where the written value ends (what --fix replaces)."""

from __future__ import annotations

from pathlib import Path

from advisor.core.findings import Edit
from advisor.engine.fix import load_source, plan_edit
from advisor.sources.json_file import parse_json
from advisor.sources.yaml_file import parse_yaml


def _written(text: str, spans: dict) -> dict:
    return {k: text[s.offset : s.end_offset] for k, s in spans.items() if s.has_end}


def test_json_value_spans_end_after_the_value() -> None:
    text = '{\r\n  "a": {"b": [1, 2.5e3], "c": "x\\"y"}, // note\r\n  "d": true\r\n}\r\n'
    written = _written(text, parse_json(text).value_spans)
    assert written[("a", "b")] == "[1, 2.5e3]" and written[("a", "b", 1)] == "2.5e3"
    assert written[("a", "c")] == '"x\\"y"' and written[("d",)] == "true"
    span = parse_json(text).value_spans[("d",)]
    assert (span.line, span.col, span.end_line, span.end_col) == (3, 8, 3, 12)


def test_yaml_scalars_and_flow_collections_end_block_collections_do_not() -> None:
    text = 'a: 1\nb: "quoted str"  # c\nc: [1, 2]\nd:\n  e: no\nf: é x\n'
    spans = parse_yaml(text).value_spans
    written = _written(text, spans)
    assert written[("b",)] == '"quoted str"' and written[("c",)] == "[1, 2]" and written[("f",)] == "é x"
    assert written[("d", "e")] == "no"
    assert not spans[("d",)].has_end  # a block mapping ends at the next token: no end is claimed


def test_json_fix_replaces_the_value_span(tmp_path: Path) -> None:
    path = tmp_path / "ds.json"
    path.write_text(
        '{\n  "zero_optimization": {"stage": 3, "offload": {"device": "cpu"}},\n  "s": "a\\"b"\n}\n'
    )
    src = load_source(path)
    edit = plan_edit(Edit(path, "/s", "q"), src)
    assert src.text[edit.start : edit.end] == '"a\\"b"' and edit.text == '"q"'
    edit = plan_edit(Edit(path, "/zero_optimization/stage", 2), src)
    assert src.text[edit.start : edit.end] == "3"
