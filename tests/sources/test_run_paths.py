"""Runs and paths as the launch scripts read them (issue 20 items 1, 2, 3, 5), through the real CLI.

Each project is a hand-written copy of the upstream form: a launch script in its own folder that `cd`s
to the training code (`cd ../sft/ && deepspeed main.py ...`), a TrainingArguments YAML naming its
DeepSpeed file (`deepspeed: ds_zero_3.json`, opened by HfDeepSpeedConfig relative to the process's
working folder), an unrelated config of the same base name in another folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.sources.cli_json import TRAIN_FLAGS, TRAIN_YAML, check, project


def located(report: dict[str, Any], root: Path, cwd: Path) -> set[tuple[str, str, int]]:
    """(rule, file relative to the project root, line): comparable between checks from two folders."""
    return {
        (f["rule"], (cwd / f["file"]).resolve().relative_to(root.resolve()).as_posix(), f["line"])
        for f in report["findings"]
    }


# -- item 1: run membership by the resolved path, never by base name -----------------------------------


def test_a_config_is_not_joined_to_a_run_that_names_another_file_of_its_name(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "a/launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py configs/sft.yaml\n",
            "a/train.py": TRAIN_YAML,
            "a/configs/sft.yaml": "per_device_train_batch_size: 4\nlearning_rate: 1e-5\n",
            "b/sft.yaml": "per_device_train_batch_size: 4\nlearning_rate: 2e-5\n",
        },
    )
    report = check(root, "b/sft.yaml")
    files = {f["file"] for f in report["findings"]}
    assert files == {"b/sft.yaml"}, report["findings"]  # a/configs/sft.yaml's GA003 was reported too
    assert [r["name"] for r in report["runs"]] == ["b/sft.yaml"]
    # the file the launch does name is checked as part of that launch's run
    own = check(root, "a/configs/sft.yaml")
    assert [r["name"] for r in own["runs"]] == ["a/launch.sh"]
    assert {f["file"] for f in own["findings"]} == {"a/configs/sft.yaml"}


# -- item 2: cd, pushd/popd and subshells move where the next command's paths resolve ------------------


def test_cd_before_the_launch_moves_where_its_script_and_configs_are_found(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "cd ../sft/ && deepspeed --num_gpus 2 main.py --deepspeed ds_zero_3.json "
        "--per_device_train_batch_size 4\n"
    )
    root = project(
        tmp_path,
        {
            "scripts/run.sh": launch,
            "sft/main.py": TRAIN_FLAGS,
            "sft/ds_zero_3.json": '{"zero_optimization": {"stage": 3}}\n',
        },
    )
    report = check(root, "scripts/run.sh")
    assert [f for f in report["findings"] if f["rule"] == "GA004"] == []  # two false GA004 errors before
    (run,) = report["runs"]
    assert run["world_size"] == 2
    assert run["effective_batch"] == 8


def test_pushd_popd_and_a_subshell_cd_end_where_bash_ends_them(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "pushd ../sft\n"
        "torchrun --nproc_per_node 2 main.py --per_device_train_batch_size 4\n"
        "popd\n"
        "( cd ../other && torchrun --nproc_per_node 2 other.py )\n"
        "torchrun --nproc_per_node 2 local.py\n"
    )
    root = project(
        tmp_path,
        {
            "scripts/run.sh": launch,
            "scripts/local.py": "print('here')\n",
            "sft/main.py": TRAIN_FLAGS,
            "other/other.py": "print('other')\n",
        },
    )
    report = check(root, "scripts/run.sh")
    missing = [(f["line"], f["message"]) for f in report["findings"] if f["rule"] == "GA004"]
    assert missing == []
    # the cd inside the subshell does not outlive it: after `)` a missing file is looked for in scripts/
    (root / "scripts/local.py").unlink()
    (root / "other/local.py").write_text("print('wrong folder')\n", encoding="utf-8")
    report = check(root, "scripts/run.sh")
    assert [(f["rule"], f["line"]) for f in report["findings"] if f["rule"] == "GA004"] == [("GA004", 6)]


def test_a_cd_inside_a_function_or_a_loop_subshell_does_not_move_the_next_launch(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "setup() {\n  cd /opt/elsewhere\n}\n"
        "for seed in 1 2; do (cd ../sft && torchrun --nproc_per_node 2 main.py); done\n"
        "torchrun --nproc_per_node 2 local.py\n"
    )
    root = project(
        tmp_path,
        {"scripts/run.sh": launch, "scripts/local.py": "print(1)\n", "sft/main.py": TRAIN_FLAGS},
    )
    report = check(root, "scripts/run.sh")
    assert [(f["rule"], f["line"]) for f in report["findings"] if f["rule"] == "GA004"] == []
    assert len(report["runs"]) == 2


def test_cd_to_the_scripts_own_folder(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        'SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &> /dev/null && pwd)\n'
        'cd "$SCRIPT_DIR/.."\n'
        "torchrun --nproc_per_node 2 train.py --deepspeed configs/ds.json\n"
    )
    root = project(
        tmp_path,
        {
            "proj/scripts/run.sh": launch,
            "proj/train.py": TRAIN_FLAGS,
            "proj/configs/ds.json": '{"zero_optimization": {"stage": 2}}\n',
            "train.py": TRAIN_FLAGS,  # the repository root's: not the one the cd reaches
        },
    )
    report = check(root, "proj/scripts/run.sh")
    assert [f for f in report["findings"] if f["rule"] == "GA004"] == []
    (root / "proj/configs/ds.json").unlink()
    (root / "configs").mkdir()
    (root / "configs/ds.json").write_text('{"zero_optimization": {"stage": 2}}\n', encoding="utf-8")
    report = check(root, "proj/scripts/run.sh")
    assert [(f["rule"], f["line"]) for f in report["findings"] if f["rule"] == "GA004"] == [("GA004", 4)]


# -- item 3: a path inside a config resolves where its consumer opens it ------------------------------


def test_deepspeed_key_of_a_training_yaml_resolves_from_the_launch_folder(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py configs/sft.yaml\n",
            "train.py": TRAIN_YAML,
            "configs/sft.yaml": "per_device_train_batch_size: 4\ndeepspeed: ds_zero_3.json\n",
            # beside the YAML, but HfDeepSpeedConfig opens `ds_zero_3.json` from the working folder
            "configs/ds_zero_3.json": '{"zero_optimization": {"stage": 3}}\n',
        },
    )
    report = check(root, "launch.sh")
    got = [(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"] if f["rule"] == "GA004"]
    assert got == [("GA004", "configs/sft.yaml", 2, 12)]
    assert "ds_zero_3.json" in report["findings"][0]["message"]
    # where the launch runs, the file is found
    (root / "ds_zero_3.json").write_text('{"zero_optimization": {"stage": 3}}\n', encoding="utf-8")
    report = check(root, "launch.sh")
    assert [f for f in report["findings"] if f["rule"] == "GA004"] == []
    # a config checked alone (no launch names it) keeps resolving beside itself
    (root / "launch.sh").unlink()
    (root / "ds_zero_3.json").unlink()
    report = check(root, "configs/sft.yaml")
    assert [f for f in report["findings"] if f["rule"] == "GA004"] == []


# -- item 5: the same findings from any folder --------------------------------------------------------


def test_same_findings_from_the_root_and_from_a_sub_folder(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\n"
        "torchrun --nproc_per_node 2 src/train.py --evaluation_strategy steps "
        "--per_device_train_batch_size 4\n"
    )
    root = project(tmp_path, {"scripts/run.sh": launch, "src/train.py": TRAIN_FLAGS})
    from_root = check(root, "scripts/run.sh")
    from_sub = check(root / "scripts", "run.sh")
    from_other = check(root / "src", "../scripts/run.sh")
    want = located(from_root, root, root)
    assert ("GA005", "scripts/run.sh", 2) in want  # the removed flag is judged against the script's parser
    assert located(from_sub, root, root / "scripts") == want  # from scripts/ the flags were not judged
    assert located(from_other, root, root / "src") == want
