"""Issue 17, items 5, 7 (first half), 9 and 18: small inputs that hung, ran out of memory or crashed a
reader (exit 3), a model's config.json read through a link out of the project, and merge-key
precedence stated for the PyYAML release it is about. Each goes through the CLI; no timing asserts
(benchmarks/slow_inputs.py times the large versions)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import advisor.cli as cli
from advisor.cli import app
from advisor.sources import pins
from advisor.sources.python_source import MAX_SOURCE_CHARS


def _invoke(root: Path, args: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    (root / ".git").mkdir(exist_ok=True)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GPU_ADVISE_DEBUG", raising=False)
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and result.exit_code != cli.EXIT_INTERNAL, result.output
    return result


def _findings(result: Any, rule: str = "GA001") -> list[tuple[str, int, int, str]]:
    report = json.loads(result.stdout)
    return [
        (f["file"], f["line"], f["column"], f["message"]) for f in report["findings"] if f["rule"] == rule
    ]


# -- item 5: a 531-byte YAML whose key is a sequence of aliases (MemoryError before) ---------------


def test_collection_key_holding_an_alias_bomb_is_refused_at_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = ["output_dir: out", "? - &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    (tmp_path / "args.yaml").write_text("\n".join([*rows, ": 1"]) + "\n")
    assert (tmp_path / "args.yaml").stat().st_size < 600
    result = _invoke(tmp_path, ["check", "--format", "json", "args.yaml"], monkeypatch)
    assert result.exit_code == 1
    [(file, line, col, message)] = _findings(result)
    assert (file, line, col) == ("args.yaml", 2, 3) and "unhashable key" in message


# -- item 9: `!!int ''` / `!!float ''` (IndexError in PyYAML's constructor before) ----------------


@pytest.mark.parametrize("tag", ["!!int", "!!float"])
def test_empty_int_or_float_tag_is_a_finding(
    tag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "args.yaml").write_text(f"output_dir: out\nlearning_rate: {tag} ''\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "args.yaml"], monkeypatch)
    assert result.exit_code == 1
    [(file, line, col, message)] = _findings(result)
    assert (file, line, col) == ("args.yaml", 2, 16) and tag in message


def test_empty_int_tag_in_a_hardware_descriptor_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hw.yaml").write_text("name: x\ngpus: {model: H100-NVL, count: !!int ''}\n")
    (tmp_path / "args.yaml").write_text("output_dir: out\n")
    result = _invoke(tmp_path, ["check", "-H", "hw.yaml", "args.yaml"], monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.startswith("gpu-advise: hw.yaml:2:32: invalid YAML")


# -- item 5: an auto-detected hardware file with nodes: 10**12 (MemoryError after 30 s before) ------


def test_absurd_node_count_is_refused_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hardware.yaml").write_text(
        "name: big\ngpus: {model: H100-NVL, count: 8}\nnvlink: all\nnodes: 1000000000000\nnetwork: ib-400g\n"
    )
    (tmp_path / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 2 train.py\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    result = _invoke(tmp_path, ["check", "."], monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.startswith("gpu-advise: hardware.yaml:4:8: nodes:")


def test_many_nodes_within_the_limit_still_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hardware.yaml").write_text(
        "name: big\ngpus: {model: H100-NVL, count: 8}\nnvlink: all\nnodes: 4096\nnetwork: ib-400g\n"
    )
    (tmp_path / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 --nnodes 2 train.py\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "."], monkeypatch)
    assert result.exit_code in (0, 1)
    assert json.loads(result.stdout)["runs"][0]["world_size"] == 16


# -- item 9: a 300-character hardware name (OSError: File name too long before) -------------------


@pytest.mark.parametrize("command", [["check", "-H", "{}", "args.yaml"], ["hardware", "show", "{}"]])
def test_long_hardware_name_is_an_unknown_name(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "args.yaml").write_text("output_dir: out\n")
    args = [a.replace("{}", "a" * 300) for a in command]
    result = _invoke(tmp_path, args, monkeypatch)
    assert result.exit_code == 2
    assert result.stderr.startswith("gpu-advise: unknown hardware 'aaa") and "a" * 100 not in result.stderr


# -- item 5: environment.yml with aliases (1,000 took 12 s, 300,000 about an hour) -----------------


def test_environment_yml_aliases_are_read_with_the_yaml_limits(tmp_path: Path) -> None:
    big = "  - &p [" + ", ".join(f"pkg{i}==1.0" for i in range(1000)) + "]"
    rows = ["name: x", "deps:", big, "dependencies:", "  - transformers=4.57.1"] + ["  - pip: *p"] * 1000
    (tmp_path / "environment.yml").write_text("\n".join(rows) + "\n")
    assert pins.read_folder_pins(tmp_path) == {}  # over the node limit: it pins nothing
    (tmp_path / "environment.yml").write_text(
        "name: x\ndependencies:\n  - python=3.11\n  - pip:\n    - accelerate==1.2.0\n"
        "  - transformers=4.57.1\n"
    )
    found = pins.read_folder_pins(tmp_path)
    assert (found["transformers"].spec, found["transformers"].line) == ("==4.57.1", 6)
    assert (found["accelerate"].spec, found["accelerate"].line) == ("==1.2.0", 5)


def test_environment_yml_limit_does_not_stop_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = "  - &p [" + ", ".join(f"pkg{i}==1.0" for i in range(1000)) + "]"
    rows = ["name: x", "deps:", big, "dependencies:"] + ["  - pip: *p"] * 1000
    (tmp_path / "environment.yml").write_text("\n".join(rows) + "\n")
    (tmp_path / "args.yaml").write_text("output_dir: out\nper_device_train_batch_size: 2\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "."], monkeypatch)
    [(file, line, _, message)] = _findings(result)
    # 1,008 nodes up to the dependencies list, then 1,003 an item (mapping, key, the 1,001 of *p): the 49th
    # item (line 4 + 49) passes 50,000
    assert (file, line) == ("environment.yml", 4 + 49) and "alias bomb" in message


# -- item 5: a hostfile with slots=4000000000 (asked for 32 GB before) ------------------------------


def test_hostfile_with_billions_of_slots_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hostfile").write_text("# hosts\nworker-0 slots=4000000000\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\ndeepspeed --hostfile hostfile train.py\n")
    (tmp_path / "train.py").write_text("print(1)\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "run.sh"], monkeypatch)
    assert json.loads(result.stdout)["runs"][0]["world_size"] is None
    text = _invoke(tmp_path, ["check", "run.sh"], monkeypatch)
    shown = " ".join(text.stdout.split())  # notes wrap at the width
    assert "the hostfile hostfile: line 2 gives a host more than 1024 slots; not read" in shown


# -- item 5: training scripts of several MB (9-22 s and 1.9-3.8 GB before) --------------------------


def test_training_script_over_the_limit_is_a_warning_where_it_is_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = "def f{i}(x):\n    return [x, {i}, os.path.join('a', 'b')]\n"
    body = "import os\n" + "".join(line.format(i=i) for i in range(MAX_SOURCE_CHARS // 40))
    assert len(body) > MAX_SOURCE_CHARS
    (tmp_path / "train.py").write_text(body)
    (tmp_path / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "run.sh"], monkeypatch)
    assert result.exit_code == 1
    [(file, line_no, col, message)] = _findings(result)
    assert (file, line_no, col) == ("run.sh", 2, 29)
    assert message.startswith("the training script train.py is ") and "not analysed" in message
    (tmp_path / "train.py").write_text(body[: MAX_SOURCE_CHARS // 2])  # within the limit: no finding
    assert _findings(_invoke(tmp_path, ["check", "--format", "json", "run.sh"], monkeypatch)) == []


# -- item 9: a CSV field over csv's 128 KB limit in `hardware detect` (csv.Error before) ------------


def test_hardware_detect_csv_field_over_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "query.csv").write_text('name, memory.total [MiB]\n"' + "x" * 200_000 + '", 81559 MiB\n')
    result = _invoke(tmp_path, ["hardware", "detect", "--query", "query.csv"], monkeypatch)
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == "gpu-advise: query.csv:2: a field longer than 128 KB; not nvidia-smi output"
    )


# -- item 7: a model folder's config.json linked out of the project --------------------------------


def test_model_config_linked_outside_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"model_type": "SECRET_TYPE_xyz", "hidden_size": 64}))
    project = tmp_path / "project"
    (project / "model").mkdir(parents=True)
    os.symlink(outside / "config.json", project / "model" / "config.json")
    (project / "args.yaml").write_text("output_dir: out\nmodel_name_or_path: ./model\n")
    for args in (["estimate", "args.yaml"], ["check", "args.yaml"]):
        result = _invoke(project, args, monkeypatch)
        assert "secret_type_xyz" not in result.output.lower(), args
        assert "is outside the project" in " ".join(result.output.split()), args  # notes wrap


# -- item 18: merge-key precedence, by PyYAML release -------------------------------------------------

MERGED = (
    "base: &b\n  learning_rate: 1.0e-5\n  per_device_train_batch_size: 2\n"
    "other: &o\n  learning_rate: 2.0e-5\n"
    "run:\n  <<: [*b, *o]\n  per_device_train_batch_size: 4\n"
)


@pytest.mark.parametrize(
    ("pinned", "line", "says", "value"),
    [
        (None, 5, "PyYAML 6.0.3 keeps line 2's value (the first mapping), 6.0.4 line 5's", 2e-5),
        ("PyYAML==6.0.3", 2, "PyYAML 6.0.3, pinned in requirements.txt:1, keeps line 2's value", 1e-5),
        ("pyyaml==6.0.4", 5, "PyYAML 6.0.4, pinned in requirements.txt:1, keeps line 5's value", 2e-5),
    ],
)
def test_merge_key_precedence_names_the_release(
    pinned: str | None, line: int, says: str, value: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "args.yaml").write_text(MERGED)
    if pinned:
        (tmp_path / "requirements.txt").write_text(pinned + "\n")
    result = _invoke(tmp_path, ["check", "--format", "json", "args.yaml"], monkeypatch)
    # the key written beside `<<` overrides the merged one in every release: not a duplicate
    [(file, at, col, message)] = _findings(result)
    assert (file, at, col) == ("args.yaml", line, 3) and says in message
    from advisor.sources.pins import pinned_pyyaml
    from advisor.sources.read import read_document

    doc = read_document(tmp_path / "args.yaml", None, pinned_pyyaml)
    assert doc.data["run"] == {"learning_rate": value, "per_device_train_batch_size": 4}
    assert doc.value_spans[("run", "learning_rate")].line == line


def test_two_merge_keys_keep_the_later_in_both_releases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "args.yaml").write_text(
        "output_dir: out\n<<: {learning_rate: 1.0e-5}\n<<: {learning_rate: 2.0e-5}\n"
    )
    result = _invoke(tmp_path, ["check", "--format", "json", "args.yaml"], monkeypatch)
    [(_, line, col, message)] = _findings(result)
    assert (line, col) == (3, 6) and message.endswith("PyYAML keeps the later, line 3")
