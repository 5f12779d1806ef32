"""Cases from a field trial on repositories in no corpus (Firefly, SimPO): each config below is a
hand-written copy of the upstream form, not the upstream file."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import git_project


def _findings(codes: set[str]) -> list[tuple[str, str, int]]:
    result = run_check([Path(".")], CheckOptions())
    assert not result.errors, result.errors
    return sorted((f.rule, str(f.location.file), f.location.line) for f in result.findings if f.rule in codes)


# Firefly's train_args/*.json set `"optim": "adamw_hf"` and pin transformers==4.34: OptimizerNames has
# ADAMW_HF through 4.49.0 (training_args.py:148) and not in 4.50.0, so it is a removed value, judged
# by the pinned release, never a type error.
ADAMW_HF = '{\n  "output_dir": "out",\n  "optim": "adamw_hf",\n  "learning_rate": 1e-5\n}\n'


@pytest.mark.parametrize("pin", ["transformers==4.34\n", "transformers==4.49.0\n"])
def test_adamw_hf_accepted_by_a_release_before_4_50(tmp_path, monkeypatch, pin):
    git_project(tmp_path, {"requirements.txt": pin, "args.json": ADAMW_HF}, monkeypatch)
    assert _findings({"GA001", "GA005"}) == []


@pytest.mark.parametrize("pin", ["transformers==4.50.0\n", "transformers==4.57.1\n", None])
def test_adamw_hf_removed_from_4_50_is_a_warning(tmp_path, monkeypatch, pin):
    files = {"args.json": ADAMW_HF} | ({"requirements.txt": pin} if pin else {})
    git_project(tmp_path, files, monkeypatch)
    assert _findings({"GA001", "GA005"}) == [("GA005", "args.json", 3)]


# Firefly's form: train.py reads `--train_args_file x.json` through its own dataclass and TrainingArguments;
# the only launches are README lines, so no run hands the JSON to the script. `max_prompt_length` and
# `beta` make it read as a TRL config; its own fields are still the script's, a misspelt key is not.
FIREFLY_TRAIN = """\
from dataclasses import dataclass, field
from transformers import HfArgumentParser, TrainingArguments


@dataclass
class CustomizedArguments:
    max_seq_length: int = field(metadata={"help": "max length"})
    train_file: str = field(metadata={"help": "data"})
    template_name: str = field(default="")
    max_prompt_length: int = field(default=512)
    beta: float = field(default=0.1)
    lora_rank: int = field(default=64)


def main():
    parser = HfArgumentParser((CustomizedArguments, TrainingArguments))
    args, training_args = parser.parse_json_file(json_file="train_args/dpo.json")
"""
FIREFLY_ARGS = """\
{
    "output_dir": "out",
    "train_file": "./data/dummy.jsonl",
    "template_name": "qwen",
    "beta": 0.1,
    "max_seq_length": 1024,
    "max_prompt_length": 300,
    "lora_rank": 64,
    "learnig_rate": 5e-7,
    "num_train_epochs": 1,
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 16,
    "logging_steps": 100,
    "save_steps": 100,
    "lr_scheduler_type": "constant_with_warmup",
    "warmup_steps": 100,
    "gradient_checkpointing": true,
    "fp16": true
}
"""


def test_a_config_no_launch_names_takes_the_project_parsers_fields(tmp_path, monkeypatch):
    git_project(
        tmp_path,
        {
            "requirements.txt": "transformers==4.44.2\ntrl==0.9.6\n",
            "train.py": FIREFLY_TRAIN,
            "train_args/dpo.json": FIREFLY_ARGS,
        },
        monkeypatch,
    )
    assert _findings({"GA002"}) == [("GA002", "train_args/dpo.json", 9)]


def test_without_a_file_parser_in_the_project_the_trl_table_judges(tmp_path, monkeypatch):
    # the same JSON beside a script that parses the command line only: nothing reads the file through
    # the script's dataclasses, so its keys are judged as a TRL config's
    cmdline = FIREFLY_TRAIN.replace(
        'parse_json_file(json_file="train_args/dpo.json")', "parse_args_into_dataclasses()"
    )
    git_project(
        tmp_path,
        {
            "requirements.txt": "transformers==4.44.2\ntrl==0.9.6\n",
            "train.py": cmdline,
            "train_args/dpo.json": FIREFLY_ARGS,
        },
        monkeypatch,
    )
    assert ("GA002", "train_args/dpo.json", 3) in _findings({"GA002"})


# Firefly's train_args/sft/qlora/*.json: the script's own `train_mode` / `lora_rank` say LoRA, and only
# train.py's code (get_peft_model under `if args.train_mode in ['lora', 'qlora']`) turns that into adapters;
# with no launch naming train.py, a full fine-tune is no more known than LoRA, so no GA401 error.
LONE_QLORA = """\
{{
    "output_dir": "out",
    "model_name_or_path": "meta-llama/Llama-2-13b-hf",
    {own}
    "num_train_epochs": 1,
    "per_device_train_batch_size": 1,
    "gradient_accumulation_steps": 16,
    "learning_rate": 2e-4,
    "logging_steps": 100,
    "gradient_checkpointing": true,
    "fp16": true
}}
"""


def _fit_findings(tmp_path, monkeypatch, own: str) -> list[tuple[str, str, int]]:
    git_project(tmp_path, {"args.json": LONE_QLORA.format(own=own)}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="1xA100-80GB"))
    assert not result.errors, result.errors
    return [(f.rule, str(f.location.file), f.location.line) for f in result.findings if f.rule == "GA401"]


@pytest.mark.parametrize("own", ['"train_mode": "qlora",', '"lora_rank": 64,'])
def test_a_lone_file_with_the_scripts_own_lora_keys_is_not_estimated_as_full(tmp_path, monkeypatch, own):
    assert _fit_findings(tmp_path, monkeypatch, own) == []


def test_a_lone_file_without_them_is_still_a_full_fine_tune(tmp_path, monkeypatch):
    # 13B full fine-tune on one 80 GB card: GA401 as before
    assert _fit_findings(tmp_path, monkeypatch, '"train_mode": "full",') == [("GA401", "args.json", 3)]


# SimPO's form: training_configs/*.yaml are lone files (the launches are README lines) and
# accelerate_configs/deepspeed_zero3.yaml shards; a 70B full fine-tune on one GPU is the tool's assumption,
# not the project's run, so GA401 is a warning that names the sharding config.
LONE_70B = (
    "model_name_or_path: meta-llama/Meta-Llama-3-70B\nbf16: true\nper_device_train_batch_size: 1\n"
    "max_length: 2048\n"
)
ZERO3 = (
    "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  zero_stage: 3\ndistributed_type: DEEPSPEED\n"
    "num_processes: 4\n"
)


def _fit(tmp_path, monkeypatch, files: dict[str, str]) -> list[tuple[str, str, int, str]]:
    git_project(tmp_path, {"training_configs/sft.yaml": LONE_70B, **files}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="1xH100"))
    assert not result.errors, result.errors
    return [
        (f.rule, str(f.location.file), f.location.line, str(getattr(f.severity, "value", f.severity)))
        for f in result.findings
        if f.rule == "GA401"
    ]


@pytest.mark.parametrize(
    "name, text",
    [
        ("accelerate_configs/deepspeed_zero3.yaml", ZERO3),
        (
            "accelerate_configs/fsdp.yaml",
            "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n",
        ),
        ("ds/zero3.json", '{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}\n'),
    ],
)
def test_a_lone_file_beside_a_sharding_config_is_a_warning(tmp_path, monkeypatch, name, text):
    (finding,) = _fit(tmp_path, monkeypatch, {name: text})
    assert finding == ("GA401", "training_configs/sft.yaml", 1, "warning")


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"accelerate_configs/multi_gpu.yaml": "distributed_type: MULTI_GPU\nnum_processes: 8\n"},
        {"ds/zero1.json": '{"zero_optimization": {"stage": 1}}\n'},
    ],
)
def test_a_lone_file_without_one_stays_an_error(tmp_path, monkeypatch, files):
    assert _fit(tmp_path, monkeypatch, files) == [("GA401", "training_configs/sft.yaml", 1, "error")]


def test_a_launched_run_is_judged_as_launched(tmp_path, monkeypatch):
    # the launch names the file and no sharding: the sharding config beside it is not the run's
    files = {
        "accelerate_configs/deepspeed_zero3.yaml": ZERO3,
        "run.sh": "accelerate launch --num_processes 1 train.py training_configs/sft.yaml\n",
        "train.py": "print('train')\n",
    }
    assert _fit(tmp_path, monkeypatch, files) == [("GA401", "training_configs/sft.yaml", 1, "error")]


@pytest.mark.parametrize(
    "ignore",
    [
        {".gitignore": "outputs/\n"},  # a training output git ignores
        {"pyproject.toml": '[tool.gpu-advise]\nextend-exclude = ["outputs"]\n'},
    ],
)
def test_a_sharding_config_the_check_skips_decides_nothing(tmp_path, monkeypatch, ignore):
    # the project walk for lone files skips what the check's folder walk skips (issue 18 item 4)
    files = {"outputs/run1/deepspeed_zero3.yaml": ZERO3, **ignore}
    assert _fit(tmp_path, monkeypatch, files) == [("GA401", "training_configs/sft.yaml", 1, "error")]


@pytest.mark.parametrize(
    "files, beside",
    [
        ({"accelerate_configs/deepspeed_zero3.yaml": ZERO3}, "accelerate_configs/deepspeed_zero3.yaml"),
        ({"accelerate_configs/multi_gpu.yaml": "distributed_type: MULTI_GPU\nnum_processes: 8\n"}, None),
    ],
)
def test_sharding_beside_is_decided_from_the_contexts_listing(run_facts_of, files, beside):
    # in memory: the fact asks the check's context for the project's files and texts, it walks nothing
    names = run_facts_of({"training_configs/sft.yaml": LONE_70B, **files}, run="training_configs/sft.yaml")
    assert names["run"].sharding_beside == beside
