"""LoRA attached on a flag's branch (issue 20 item 11): `if not args.full_finetune: model =
get_peft_model(model, LoraConfig(r=args.lora_r, ...))` inside a function is LoRA when the run's flags take
that branch (the launch's value, else the script's own dataclass/argparse default); a branch the flags do
not decide makes the method unknown, with the reason; the rank comes from the call's flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.facts.estimates import plan_inputs
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# The form of artidoro/qlora qlora.py (get_accelerate_model: `if not args.full_finetune:` around
# get_peft_model; full_finetune, bits and lora_r fields of its own TrainingArguments), hand-written and cut
# down; {test} is the condition around the adapters
SCRIPT = """\
import argparse
from dataclasses import dataclass, field
import transformers
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
from peft import LoraConfig, get_peft_model


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="huggyllama/llama-7b")


@dataclass
class TrainingArguments(transformers.Seq2SeqTrainingArguments):
    full_finetune: bool = field(default=False, metadata={{"help": "Finetune the entire model."}})
    bits: int = field(default=4)
    lora_r: int = field(default=64)
    lora_dropout: float = field(default=0.0)


def get_accelerate_model(args):
    model = AutoModelForCausalLM.from_pretrained(
        args.model_name_or_path,
        quantization_config=BitsAndBytesConfig(load_in_4bit=args.bits == 4, load_in_8bit=args.bits == 8),
    )
    if {test}:
        config = LoraConfig(r=args.lora_r, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                            lora_dropout=args.lora_dropout, task_type="CAUSAL_LM")
        model = get_peft_model(model, config)
    return model


def train():
    parser = transformers.HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    args = argparse.Namespace(**vars(model_args), **vars(training_args))
    model = get_accelerate_model(args)
"""

LAUNCH = """\
python qlora.py \\
    --model_name_or_path huggyllama/llama-7b \\
    --output_dir ./output \\
    --bits 4 \\
    --bf16 \\
    --per_device_train_batch_size 1 \\
    --gradient_checkpointing{extra}
"""


def _estimate_inputs(run_facts_of: Any, files: dict[str, str]) -> Any:
    names = run_facts_of(files, hardware="1xH100-SXM")
    return plan_inputs(names["plan"], names)


def _files(test: str = "not args.full_finetune", extra: str = "", script: bool = True) -> dict[str, str]:
    files = {"launch.sh": LAUNCH.format(extra=extra)}
    if script:
        files["qlora.py"] = SCRIPT.format(test=test)
    return files


def test_the_check_of_the_project_has_no_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the whole pipeline on disk, once: the tests below build the run in memory (tests/facts/conftest.py)
    write_files(tmp_path, _files())
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(hardware="1xH100-SXM"))
    assert not result.errors and len(result.runs) == 1


def test_branch_taken_by_the_dataclass_default_is_qlora(run_facts_of) -> None:
    inputs = _estimate_inputs(run_facts_of, _files())
    assert inputs.reason is None
    assert inputs.setup.method == "qlora"
    assert inputs.setup.lora_r == 64  # LoraConfig(r=args.lora_r): the field's default
    assert inputs.setup.lora_targets == ["q_proj", "v_proj"]


def test_branch_not_taken_by_the_launch_flag(run_facts_of) -> None:
    inputs = _estimate_inputs(run_facts_of, _files(extra=" \\\n    --full_finetune True"))
    assert inputs.setup is None
    assert "without LoRA adapters" in str(inputs.reason)


def test_comparison_against_a_flag_decides(run_facts_of) -> None:
    inputs = _estimate_inputs(run_facts_of, _files(test="args.bits == 4"))
    assert inputs.setup is not None and inputs.setup.method == "qlora"


def test_undecided_branch_is_unknown_with_the_reason(run_facts_of) -> None:
    inputs = _estimate_inputs(run_facts_of, _files(test="is_chat_model"))
    assert inputs.setup is None
    reason = str(inputs.reason)
    assert "whether the run trains LoRA adapters is unknown" in reason
    assert "qlora.py:" in reason and "`is_chat_model`" in reason


def test_script_not_read_is_unknown_not_a_base_without_adapters(run_facts_of) -> None:
    inputs = _estimate_inputs(run_facts_of, _files(script=False))
    assert inputs.setup is None
    reason = str(inputs.reason)
    assert "unknown" in reason and "qlora.py" in reason and "without LoRA adapters" not in reason


def test_rank_from_a_flag_the_estimator_does_not_list(run_facts_of) -> None:
    script = SCRIPT.format(test="not args.full_finetune").replace("lora_r: int", "adapter_rank: int")
    script = script.replace("r=args.lora_r", "r=args.adapter_rank").replace("default=64", "default=32")
    files = {"qlora.py": script, "launch.sh": LAUNCH.format(extra="")}
    assert (
        _estimate_inputs(run_facts_of, files).setup.lora_r == 32
    )  # the field's default, read from the script
    files["launch.sh"] = LAUNCH.format(extra=" \\\n    --adapter_rank 8")
    assert _estimate_inputs(run_facts_of, files).setup.lora_r == 8  # the launch's value


def test_main_guard_is_taken(run_facts_of) -> None:
    script = SCRIPT.format(test="not args.full_finetune") + (
        '\n\nif __name__ == "__main__":\n    model = get_peft_model(None, LoraConfig(r=16))\n'
    )
    script = script.replace("        model = get_peft_model(model, config)\n", "")
    inputs = _estimate_inputs(run_facts_of, {"qlora.py": script, "launch.sh": LAUNCH.format(extra="")})
    assert inputs.setup is not None and inputs.setup.method == "qlora"
