"""YAML/JSON keys checked against the dataclasses of the script a run hands the file to (issue 11, item 1).

`torchrun train.py cfg.yaml`: the script reads the file with HfArgumentParser.parse_yaml_file, whose
parse_dict raises on a key none of its dataclasses has (transformers 5.24 hf_argparser.py lines
374-383). `--config recipe.yaml`: TrlParser.parse_args_and_config (trl 1.16 scripts/utils.py lines
321-356) raises "Unknown arguments from config file". The TRL script follows huggingface/open-r1
src/open_r1/sft.py (commit 1fd64bce4ecc0d9ecb7fb9d11373b036dd1ae3dd, last lines:
`TrlParser((ScriptArguments, SFTConfig, ModelConfig)).parse_args_and_config()`), with TRL's own SFTConfig.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check

KEY_RULES = {"GA002", "GA005", "GA007"}

HF_SCRIPT = """\
import sys
from dataclasses import dataclass, field

from transformers import HfArgumentParser, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = "facebook/opt-125m"
    lora_r: int = 8


@dataclass
class DataArguments:
    data_path: str = field(default=None)
    lazy_preprocess: bool = False
    model_max_length: int = 512


def main():
    parser = HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".yaml"):
        model_args, data_args, training_args = parser.parse_yaml_file(sys.argv[1])
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    main()
"""

CFG = """\
output_dir: out
per_device_train_batch_size: 4
lora_r: 16
model_max_length: 2048
lazy_preprocess: true
lazy_preprocesss: true
evaluation_strategy: steps
"""

TRL_SCRIPT = """\
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser


def main(script_args, training_args, model_args):
    SFTTrainer(model=model_args.model_name_or_path, args=training_args)


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    main(script_args, training_args, model_args)
"""

RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
dataset_name: open-r1/OpenR1-Math-220k
lora_r: 16
max_length: 4096
per_device_train_batch_size: 2
output_dir: data/out
lora_alpah: 32
"""


def _project(tmp_path: Path, files: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)


def _findings(paths: list[str]) -> list[tuple[str, str, int, int, str | None]]:
    result = run_check([Path(p) for p in paths], CheckOptions())
    assert not result.errors, result.errors
    return sorted(
        (f.rule, str(f.location.file), f.location.line, f.location.col, f.severity)
        for f in result.findings
        if f.rule in KEY_RULES
    )


def _suggestion(paths: list[str], line: int) -> str | None:
    result = run_check([Path(p) for p in paths], CheckOptions())
    (finding,) = [f for f in result.findings if f.rule == "GA002" and f.location.line == line]
    return finding.message


def test_yaml_given_to_the_script_is_judged_against_its_dataclasses(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "train.py": HF_SCRIPT,
            "cfg.yaml": CFG,
            "launch.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n",
        },
        monkeypatch,
    )
    assert _findings(["."]) == [
        ("GA002", "cfg.yaml", 6, 1, "error"),  # lazy_preprocesss: no dataclass has it, parse_dict raises
        ("GA005", "cfg.yaml", 7, 1, "warning"),  # evaluation_strategy: removed from TrainingArguments
    ]
    assert "lazy_preprocess'" in _suggestion(["."], 6)  # the did-you-mean names the script's field


def test_checking_only_the_yaml_still_finds_its_run(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "train.py": HF_SCRIPT,
            "cfg.yaml": CFG,
            "launch.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n",
        },
        monkeypatch,
    )
    assert [f[:4] for f in _findings(["cfg.yaml"])] == [
        ("GA002", "cfg.yaml", 6, 1),
        ("GA005", "cfg.yaml", 7, 1),
    ]


def test_the_same_yaml_without_a_launch_script_keeps_the_file_alone_judgement(tmp_path, monkeypatch):
    _project(tmp_path, {"train.py": HF_SCRIPT, "cfg.yaml": CFG}, monkeypatch)
    # judged alone, most of its keys are another dialect's (MIN_KNOWN_SHARE): nothing is judged, as before
    assert _findings(["cfg.yaml"]) == []
    mostly_training = (
        "output_dir: out\nlearning_rate: 0.0001\nnum_train_epochs: 1\nseed: 1\nwarmup_step: 10\nlora_r: 16\n"
    )
    (tmp_path / "cfg.yaml").write_text(mostly_training, encoding="utf-8")
    # a near miss of a TrainingArguments key is still found; the unseen script's lora_r is left alone
    assert [f[:4] for f in _findings(["cfg.yaml"])] == [("GA002", "cfg.yaml", 5, 1)]


def test_a_script_that_parses_only_the_command_line_keeps_the_file_alone_judgement(tmp_path, monkeypatch):
    argv_only = HF_SCRIPT.replace(
        "parser.parse_yaml_file(sys.argv[1])", "parser.parse_args_into_dataclasses()"
    )
    files = {
        "train.py": argv_only,
        "cfg.yaml": CFG,
        "launch.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n",
    }
    _project(tmp_path, files, monkeypatch)
    assert ("GA002", "cfg.yaml", 6, 1) not in [f[:4] for f in _findings(["."])]


def test_trl_recipe_given_with_config_is_judged_against_the_trl_parser(tmp_path, monkeypatch):
    _project(
        tmp_path,
        {
            "sft.py": TRL_SCRIPT,
            "recipe.yaml": RECIPE,
            "launch.sh": "accelerate launch --num_processes 2 sft.py --config recipe.yaml\n",
        },
        monkeypatch,
    )
    # lora_r is ModelConfig's; lora_alpah is nobody's: TrlParser raises on it at start
    assert _findings(["."]) == [("GA002", "recipe.yaml", 7, 1, "error")]
    assert "lora_alpha'" in _suggestion(["."], 7)


def test_one_yaml_read_by_two_scripts_is_judged_per_run_once(tmp_path, monkeypatch):
    other = HF_SCRIPT.replace("    lora_r: int = 8\n", "")
    _project(
        tmp_path,
        {
            "train.py": HF_SCRIPT,
            "other.py": other,
            "cfg.yaml": CFG,
            "launch.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n"
            "torchrun --nproc_per_node 2 other.py cfg.yaml\n",
        },
        monkeypatch,
    )
    found = [f[:4] for f in _findings(["."])]
    # lora_r is other.py's problem only; each key is reported once for the file
    assert found == [("GA002", "cfg.yaml", 3, 1), ("GA002", "cfg.yaml", 6, 1), ("GA005", "cfg.yaml", 7, 1)]


def test_the_run_knows_its_script_parser_and_the_file_it_hands_it(tmp_path, monkeypatch):
    from advisor.facts import run_names
    from advisor.plan.discover import discover
    from advisor.plan.run_plan import build_plan

    _project(
        tmp_path,
        {
            "train.py": HF_SCRIPT,
            "cfg.yaml": CFG,
            "launch.sh": "torchrun --nproc_per_node 2 train.py cfg.yaml\n",
        },
        monkeypatch,
    )
    (run,) = discover([Path(".")])[0]
    parser = run_names(build_plan(run))["script"].read("parser")
    assert (parser["name"], parser["complete"], parser["drops_unknown"]) == ("HfArgumentParser", True, False)
    assert parser["fields"]["lora_r"] == "ModelArguments"
    assert parser["fields"]["model_max_length"] == "DataArguments"
    assert parser["library_bases"] == ["transformers.TrainingArguments"]
    assert Path(parser["config_file"]).name == "cfg.yaml"
    assert (parser["config_passed"], parser["config_judged"]) == ("positional", True)
    assert (parser["location"].line, parser["location"].col) == (21, 14)
