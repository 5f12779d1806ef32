"""Defect 10 of issue 9: inputs that were slow are bounded, and each bound is a finding where it is hit.

The sizes here are small versions of benchmarks/slow_inputs.py's cases (which time them); these tests
check that the limit is reported, at its file, line and column, and that nothing past it is lost
silently. No timing asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.facts import keys as key_facts
from advisor.plan.context import CheckContext
from advisor.sources import json_file, launch, yaml_file
from advisor.sources.json_file import parse_json
from advisor.sources.read import read_document
from advisor.sources.shell import lexer as shell_lexer

ACCELERATE_HEAD = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"


def _check(root: Path, name: str, monkeypatch: pytest.MonkeyPatch, *extra: str) -> Any:
    (root / ".git").mkdir(exist_ok=True)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = CliRunner().invoke(app, ["check", "--format", "json", *extra, name])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def _rows(report: dict[str, Any], rule: str) -> list[tuple[str, int, int]]:
    return sorted((f["file"], f["line"], f["column"]) for f in report["findings"] if f["rule"] == rule)


# -- JSON: positions for the first values, the C decoder for the rest ---------------------------------


def test_large_json_array_keeps_every_value_but_bounded_positions() -> None:
    n = json_file.POSITION_BUDGET * 3
    text = '{"train_batch_size": 8, "data": [' + ",".join(str(i) for i in range(n)) + "]}"
    result = parse_json(text)
    assert result.data["data"] == list(range(n))
    assert len(result.value_spans) <= json_file.POSITION_BUDGET + 1
    assert result.problems == []


def test_problems_past_the_position_budget_are_still_found() -> None:
    """What the C decoder refuses (a duplicate key or a trailing comma past the budget) is read again
    here, so the finding is not lost."""
    n = json_file.POSITION_BUDGET + 10
    items = ",".join(str(i) for i in range(n))
    result = parse_json('{"a": [' + items + '], "b": {"x": 1, "x": 2}, "c": [1, 2,]}')
    assert [p.message.split(":")[0] for p in result.problems] == ["duplicate key 'x'", "trailing comma"]


def test_huge_json_that_strict_json_refuses_is_a_limit_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json_file, "MAX_VALUES", 3_000)
    monkeypatch.setattr(json_file, "POSITION_BUDGET", 1_000)
    text = '{"train_batch_size": 8,\n"data": [' + ",".join("1" for _ in range(5_000)) + ",]}\n"
    (tmp_path / "ds_config.json").write_text(text)
    report = _check(tmp_path, "ds_config.json", monkeypatch)
    [(file, line, _)] = _rows(report, "GA001")
    assert (file, line) == ("ds_config.json", 2)


# -- launch scripts ------------------------------------------------------------------------------


def test_launch_commands_past_the_limit_are_one_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = launch._MAX_COMMANDS + 8
    lines = ["#!/bin/bash"] + ["torchrun --nproc_per_node 2 train.py --output_dir out"] * n
    (tmp_path / "run.sh").write_text("\n".join(lines) + "\n")
    (tmp_path / "train.py").write_text("print('hi')\n")
    report = _check(tmp_path, "run.sh", monkeypatch)
    assert len(report["runs"]) == launch._MAX_COMMANDS
    # the first command not read is on line 2 + _MAX_COMMANDS
    assert _rows(report, "GA001") == [("run.sh", 2 + launch._MAX_COMMANDS, 1)]


def test_token_limit_is_a_finding_where_reading_stopped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shell_lexer, "MAX_TOKENS", 200)  # the lexer moved to advisor/sources/shell
    lines = ["#!/bin/bash"] + ["echo a b c d"] * 100  # 6 tokens a line with the newline
    path = tmp_path / "run.sh"
    path.write_text("\n".join(lines) + "\n")
    doc = read_document(path)
    [problem] = [p for p in doc.problems if p.kind != "yaml11-scalar"]
    assert problem.span.line == 2 + 200 // 6 and problem.severity == "warning"


def test_deeply_nested_parameter_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    depth = 5_000
    word = "${A:-" * depth + "2" + "}" * depth
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\nN={word}\ntorchrun --nproc_per_node $N train.py\n")
    (tmp_path / "train.py").write_text("print('hi')\n")
    report = _check(tmp_path, "run.sh", monkeypatch)
    assert _rows(report, "GA001") == [("run.sh", 2, 3)]


def test_nesting_within_the_limit_is_still_followed(tmp_path: Path) -> None:
    word = "${A:-" * 5 + "2" + "}" * 5
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/bash\nN={word}\ntorchrun --nproc_per_node $N train.py\n")
    doc = read_document(path)
    assert doc.data.commands[0].launcher_args["nproc_per_node"].text == "2"


# -- keys -----------------------------------------------------------------------------------------


def test_unknown_keys_are_capped_with_a_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = key_facts.MAX_ITEMS_PER_KIND
    keys = "".join(f"unknown_setting_{i}: {i}\n" for i in range(cap + 30))
    (tmp_path / "accelerate_config.yaml").write_text(ACCELERATE_HEAD + keys)
    report = _check(tmp_path, "accelerate_config.yaml", monkeypatch)
    rows = _rows(report, "GA002")
    # one finding per key up to the cap, then one at the first key left out
    assert rows == [("accelerate_config.yaml", 4 + i, 1) for i in range(cap + 1)]


def test_did_you_mean_stops_after_its_budget(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[str] = []
    real = key_facts.kk.suggest

    def counting(*args: Any, **kwargs: Any) -> str | None:
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(key_facts.kk, "suggest", counting)
    keys = "".join(f"unknown_setting_{i}: {i}\n" for i in range(key_facts.MAX_SUGGESTIONS + 50))
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(ACCELERATE_HEAD + keys)
    key_facts.key_items(read_document(path), CheckContext.standalone(path))
    assert len(calls) == key_facts.MAX_SUGGESTIONS


# -- YAML -----------------------------------------------------------------------------------------


def test_yaml_over_the_node_limit_is_refused_at_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yaml_file, "MAX_NODES", 500)
    monkeypatch.setattr(yaml_file, "PRECOUNT_CHARS", 100)
    items = "".join(f"  - item{i}\n" for i in range(1_000))
    (tmp_path / "args.yaml").write_text(f"output_dir: out\nlabels:\n{items}")
    report = _check(tmp_path, "args.yaml", monkeypatch)
    # the root mapping, output_dir, out, labels and the list are 5 nodes: item k (line 3 + k) is node
    # 6 + k, so node 501 is item 495
    assert _rows(report, "GA001") == [("args.yaml", 3 + 495, 5)]


def test_alias_repeating_a_long_string_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_file, "MAX_CHARS", 100_000)
    long = "x" * 10_000
    text = f"output_dir: out\nrun_name: &s {long}\nreport_to: [{', '.join(['*s'] * 30)}]\n"
    (tmp_path / "args.yaml").write_text(text)
    report = _check(tmp_path, "args.yaml", monkeypatch)
    # the keys, `out` and the string are 10,030 characters; the 9th alias (column 13 + 4 x 8) passes 100,000
    assert _rows(report, "GA001") == [("args.yaml", 3, 13 + 4 * 8)]
    monkeypatch.chdir(tmp_path)
    plan = CliRunner().invoke(app, ["plan", "--format", "json", "args.yaml"])
    assert plan.exit_code == 0 and len(plan.stdout) < 200_000


def test_yaml_problems_are_capped(tmp_path: Path) -> None:
    path = tmp_path / "args.yaml"
    path.write_text("".join(f"output_dir: out{i}\n" for i in range(yaml_file.MAX_PROBLEMS + 50)))
    problems = read_document(path).problems
    assert len(problems) == yaml_file.MAX_PROBLEMS + 1
    assert problems[-1].span.line == yaml_file.MAX_PROBLEMS + 2  # the first duplicate not reported
