"""PEFT methods other than LoRA (issue 21 section 2): a script that wraps its model with get_peft_model and
an IA3Config / AdaLoraConfig / PromptTuningConfig / LoHaConfig, or LoRA with use_dora, was estimated as
plain LoRA with guessed targets, silently. Each is now mapped onto the LoRA inputs its layer's shapes give
(peft 0.21.2 tuners/<method>/layer.py), with the part that is a bound said, or refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.facts.estimates import plan_inputs
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# A plain HF Trainer script in the style of the PEFT docs' examples, hand-written: {config} is the PEFT config
SCRIPT = """\
from dataclasses import dataclass, field
import transformers
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer
from peft import AdaLoraConfig, IA3Config, LoHaConfig, LoraConfig, PromptTuningConfig, get_peft_model


FF = ["down_proj"]


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="Qwen/Qwen2.5-1.5B")
    method: str = field(default="lora")


def main():
    parser = HfArgumentParser((ModelArguments, transformers.TrainingArguments))
    model_args, args = parser.parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, torch_dtype="bfloat16")
{config}
    model = get_peft_model(model, config)
    Trainer(model=model, args=args).train()
"""
LAUNCH = """\
python train.py \\
    --model_name_or_path Qwen/Qwen2.5-1.5B \\
    --output_dir out \\
    --bf16 \\
    --per_device_train_batch_size 2 \\
    --gradient_checkpointing{extra}
"""


def _inputs(tmp_path: Path, config: str, extra: str = ""):
    write_files(tmp_path, {"launch.sh": LAUNCH.format(extra=extra), "train.py": SCRIPT.format(config=config)})
    options = CheckOptions(hardware="1xH100-SXM")
    assert not run_check([Path(".")], options).errors
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    return plan_inputs(plan, run_names(plan))


def test_ia3_is_a_rank_one_bound_on_its_targets(tmp_path: Path) -> None:
    config = (
        '    config = IA3Config(target_modules=["k_proj", "v_proj", "down_proj"], feedforward_modules=FF)'
    )
    inputs = _inputs(tmp_path, config)
    assert inputs.reason is None
    assert inputs.setup.lora_r == 1
    assert inputs.setup.lora_targets == ["k_proj", "v_proj", "down_proj"]
    assert any(x.startswith("IA3 (IA3Config at train.py:") and "upper bound" in x for x in inputs.assumptions)


def test_ia3_without_targets_takes_peft_defaults_for_the_family(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, "    config = IA3Config(task_type='CAUSAL_LM')")
    assert inputs.setup.lora_targets == ["q_proj", "v_proj", "down_proj"]  # peft utils/constants.py, qwen2


def test_adalora_counts_init_r(tmp_path: Path) -> None:
    config = (
        '    config = AdaLoraConfig(init_r=12, target_r=4, target_modules=["q_proj", "v_proj"], total_step=9)'
    )
    inputs = _inputs(tmp_path, config)
    assert inputs.setup.lora_r == 12 and inputs.setup.lora_targets == ["q_proj", "v_proj"]
    assert any("RankAllocator" in x for x in inputs.assumptions)


def test_prompt_tuning_trains_no_adapter(tmp_path: Path) -> None:
    inputs = _inputs(
        tmp_path, "    config = PromptTuningConfig(task_type='CAUSAL_LM', num_virtual_tokens=20)"
    )
    assert inputs.setup.lora_targets == []
    assert any("20 virtual tokens" in x for x in inputs.assumptions)
    assert not any("LoRA adapters unknown" in x for x in inputs.assumptions)


def test_loha_is_refused_with_the_reason(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, '    config = LoHaConfig(r=8, target_modules=["q_proj", "v_proj"])')
    assert inputs.setup is None
    assert "PEFT LoHa" in inputs.reason and "delta weight" in inputs.reason


def test_dora_is_lora_with_the_bound_said(tmp_path: Path) -> None:
    config = '    config = LoraConfig(r=16, target_modules=["q_proj", "v_proj"], use_dora=True)'
    inputs = _inputs(tmp_path, config)
    assert inputs.setup.lora_r == 16
    assert any(x.startswith("DoRA (") and "lower bound" in x for x in inputs.assumptions)


BRANCHES = """\
    if model_args.method == "ia3":
        config = IA3Config(target_modules=["k_proj", "v_proj", "down_proj"], feedforward_modules=FF)
    else:
        config = LoraConfig(r=16, target_modules=["q_proj", "v_proj"])"""


def test_the_runs_flag_picks_the_config_branch(tmp_path: Path) -> None:
    assert _inputs(tmp_path, BRANCHES).setup.lora_r == 16  # the dataclass default "lora"
    assert _inputs(tmp_path, BRANCHES, extra=" \\\n    --method ia3").setup.lora_r == 1
