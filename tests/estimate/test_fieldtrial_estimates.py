"""Field-trial regressions (2026-12-01) of the estimate: runs the estimator does not model say so instead of
crying "out of memory", preference trainers count their sequences, conditional quantization is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from tests.conftest import write_files


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _estimates(tmp_path: Path, files: dict[str, str], hardware: str = "8xA100-SXM-80GB"):
    write_files(tmp_path, files)
    options = CheckOptions(hardware=hardware)
    settings = resolve_settings([tmp_path], options)
    plans, _ = build_plans([tmp_path], options, settings)
    return {p.name: run_names(p)["estimates"] for p in plans}


def _findings(tmp_path: Path, hardware: str = "8xA100-SXM-80GB") -> list:
    result = run_check([Path(".")], CheckOptions(hardware=hardware))
    assert not result.errors
    return result.findings


# axolotl examples/expert_parallel/qwen3_30ba3b_ep_fft_4gpu.yaml (axolotl-ai-cloud/axolotl @067b021c),
# cut down
AXOLOTL_EP = (
    "base_model: Qwen/Qwen3-30B-A3B-Instruct-2507\n"
    "plugins:\n  - axolotl.integrations.expert_parallel.ExpertParallelPlugin\n"
    "expert_parallel_size: 4\n"
    "datasets:\n  - path: mhenrichsen/alpaca_2k_test\n    type: alpaca\n"
    "sequence_len: 2048\nmicro_batch_size: 1\ngradient_accumulation_steps: 1\nmax_steps: 50\n"
    "bf16: true\ngradient_checkpointing: true\n"
)


def test_axolotl_expert_parallelism_is_not_modelled_and_gets_no_oom_error(tmp_path: Path) -> None:
    est = _estimates(tmp_path, {"ep.yaml": AXOLOTL_EP})["ep.yaml"]
    assert est.known is False
    assert est.reason == "expert parallelism (expert_parallel_size x4) is not modelled"
    assert not [f for f in _findings(tmp_path) if f.rule == "GA401"]


def test_axolotl_expert_parallel_size_1_is_estimated(tmp_path: Path) -> None:
    est = _estimates(
        tmp_path, {"ep.yaml": AXOLOTL_EP.replace("expert_parallel_size: 4", "expert_parallel_size: 1")}
    )
    assert est["ep.yaml"].known is True


# axolotl examples/llama-3/instruct-dpo-lora-8b.yml (axolotl-ai-cloud/axolotl @067b021c), cut down
AXOLOTL_DPO = (
    "base_model: meta-llama/Meta-Llama-3-8B-Instruct\n"
    "rl: {rl}\n"
    "datasets:\n  - path: fozziethebeat/alpaca_messages_2k_dpo_test\n    type: chat_template.default\n"
    "sequence_len: 4096\nadapter: {adapter}\nlora_r: 32\nlora_target_linear: true\n"
    "gradient_accumulation_steps: 4\nmicro_batch_size: 2\nbf16: true\ngradient_checkpointing: true\n"
)


@pytest.mark.parametrize(
    ("rl", "adapter", "micro", "reference"),
    [
        ("dpo", "lora", 4, False),  # chosen + rejected in one forward; the reference is the adapter-free base
        ("ipo", "lora", 4, False),
        ("dpo", "''", 4, True),  # full fine-tune: a frozen reference copy
        ("simpo", "''", 4, False),  # reference-free (CPOTrainer)
        ("orpo", "''", 4, False),
        ("kto", "''", 2, True),  # unpaired: one completion with gradients, a reference model
    ],
)
def test_axolotl_rl_is_preference_training(
    tmp_path: Path, rl: str, adapter: str, micro: int, reference: bool
) -> None:
    est = _estimates(tmp_path, {"dpo.yaml": AXOLOTL_DPO.format(rl=rl, adapter=adapter)})["dpo.yaml"]
    assert est.known is True
    assert est.micro_batch == micro
    assert any("preference training" in a for a in est.assumptions)
    assert any("frozen reference model" in a for a in est.assumptions) is reference


def test_axolotl_dpo_needs_more_memory_than_the_same_sft(tmp_path: Path) -> None:
    dpo = _estimates(tmp_path, {"dpo.yaml": AXOLOTL_DPO.format(rl="dpo", adapter="lora")})["dpo.yaml"]
    sft = AXOLOTL_DPO.format(rl="dpo", adapter="lora").replace("rl: dpo\n", "")
    (tmp_path / "dpo.yaml").write_text(sft)
    plain = _estimates(tmp_path, {})["dpo.yaml"]
    assert dpo.peak_vram_gib > plain.peak_vram_gib


@pytest.mark.parametrize(
    ("rl", "reason"),
    [
        ("grpo", "online RL training (rl: grpo)"),
        ("ebft", "EBFT (rl: ebft): its frozen feature network"),
    ],
)
def test_axolotl_online_rl_and_ebft_are_not_modelled(tmp_path: Path, rl: str, reason: str) -> None:
    est = _estimates(tmp_path, {"rl.yaml": AXOLOTL_DPO.format(rl=rl, adapter="''")})["rl.yaml"]
    assert est.known is False and est.reason.startswith(reason)


# FastChat fastchat/train/train_lora.py:134-146 and scripts/train_lora.sh (lm-sys/FastChat @0e6d3e4b),
# cut down
FASTCHAT_TRAIN = (
    "import transformers\nfrom peft import LoraConfig, get_peft_model\n"
    "from transformers import BitsAndBytesConfig\n"
    "from dataclasses import dataclass, field\n\n"
    "@dataclass\nclass LoraArguments:\n    lora_r: int = 8\n    q_lora: bool = False\n\n"
    "def train():\n"
    "    parser = transformers.HfArgumentParser((transformers.TrainingArguments, LoraArguments))\n"
    "    training_args, lora_args = parser.parse_args_into_dataclasses()\n"
    "    model = transformers.AutoModelForCausalLM.from_pretrained(\n"
    "        'lmsys/vicuna-7b-v1.5',\n"
    "        torch_dtype='float16',\n"
    "        quantization_config=BitsAndBytesConfig(\n"
    "            load_in_4bit=True,\n"
    "            bnb_4bit_quant_type='nf4',\n"
    "        )\n"
    "        if lora_args.q_lora\n"
    "        else None,\n"
    "    )\n"
    "    model = get_peft_model(model, LoraConfig(r=lora_args.lora_r))\n"
)
FASTCHAT_LAUNCH = (
    "#!/bin/bash\ntorchrun --nproc_per_node 1 train_lora.py --model_name_or_path lmsys/vicuna-7b-v1.5 "
    "--lora_r 8 --fp16 True --per_device_train_batch_size 2 --model_max_length 2048 "
    "{q_lora}--output_dir out\n"
)


@pytest.mark.parametrize(
    ("q_lora", "known", "method"),
    [("--q_lora False ", True, "lora"), ("--q_lora True ", True, "qlora"), ("", False, None)],
)
def test_a_conditional_quantization_config_follows_its_condition(
    tmp_path: Path, q_lora: str, known: bool, method: str | None
) -> None:
    files = {"train_lora.py": FASTCHAT_TRAIN, "train_lora.sh": FASTCHAT_LAUNCH.format(q_lora=q_lora)}
    est = _estimates(tmp_path, files, "1xA100-80GB")["train_lora.sh"]
    assert est.known is known, est.reason
    if known:
        assert est.method == method
    else:
        assert "depends on lora_args.q_lora" in est.reason


# Qwen finetune/finetune_qlora_single_gpu.sh and finetune.py:307-318 (QwenLM/Qwen @2df8e8a), cut down: Q-LoRA
# on a GPTQ Int4 checkpoint asks for --fp16 True, which the GPTQ kernels need
QWEN_LAUNCH = (
    '#!/bin/bash\nMODEL="{model}"\nexport CUDA_VISIBLE_DEVICES=0\n'
    "python finetune.py --model_name_or_path $MODEL --fp16 True --output_dir output_qwen "
    "--per_device_train_batch_size 2 --model_max_length 512 --use_lora --q_lora\n"
)
QWEN_SCRIPT = (
    "import transformers\nfrom transformers import GPTQConfig\n\n"
    "def train():\n"
    "    parser = transformers.HfArgumentParser((transformers.TrainingArguments,))\n"
    "    (training_args,) = parser.parse_args_into_dataclasses()\n"
    "    model = transformers.AutoModelForCausalLM.from_pretrained(\n"
    "        'm',\n"
    "        quantization_config={config},\n"
    "    )\n"
)


@pytest.mark.parametrize(
    ("model", "config", "fires"),
    [
        ("Qwen/Qwen-7B-Chat-Int4", "None", False),
        ("TheBloke/Llama-2-7B-AWQ", "None", False),
        ("Qwen/Qwen-7B-Chat", "GPTQConfig(bits=4, disable_exllama=True)", False),
        ("Qwen/Qwen-7B-Chat", "GPTQConfig(bits=4) if lora_args.q_lora else None", False),  # --q_lora written
        ("Qwen/Qwen-7B-Chat", "GPTQConfig(bits=4) if lora_args.other else None", True),  # condition unknown
        ("Qwen/Qwen-7B-Chat", "None", True),
    ],
)
def test_ga502_is_silent_for_a_gptq_or_awq_base(tmp_path: Path, model: str, config: str, fires: bool) -> None:
    files = {"finetune.sh": QWEN_LAUNCH.format(model=model), "finetune.py": QWEN_SCRIPT.format(config=config)}
    write_files(tmp_path, files)
    ga502 = [f for f in _findings(tmp_path, "1xA100-80GB") if f.rule == "GA502"]
    assert bool(ga502) is fires


def _run_report(tmp_path: Path, files: dict[str, str], hardware: str = "1xA100-80GB") -> dict:
    from advisor.pipeline.estimate_run import build_run_reports

    write_files(tmp_path, files)
    [report] = build_run_reports([Path(".")], hardware, online=False)
    return report


def _row(report: dict, method: str, strategy: str = "none") -> float:
    [row] = [r for r in report["comparison"] if r["method"] == method and r["strategy"] == strategy]
    return row["peak_gib"]


# DeepSpeed-Chat step1_supervised_finetuning training_scripts/opt/single_gpu/run_1.3b.sh
# (deepspeedai/DeepSpeedExamples @83757d9c): ZeRO stage 0, the DeepSpeed config built by main.py
# (fp16 by default)
DSCHAT_LAUNCH = (
    "#!/bin/bash\nZERO_STAGE=0\n"
    "deepspeed --num_gpus 1 main.py --model_name_or_path facebook/opt-1.3b --per_device_train_batch_size 8 "
    "--max_seq_len 512 --gradient_accumulation_steps 8 --zero_stage $ZERO_STAGE --deepspeed "
    "--output_dir out\n"
)
DSCHAT_MAIN = (
    "import argparse\nimport deepspeed\n\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--model_name_or_path', type=str)\n"
    "parser.add_argument('--per_device_train_batch_size', type=int, default=16)\n"
    "parser.add_argument('--max_seq_len', type=int, default=512)\n"
    "parser.add_argument('--gradient_accumulation_steps', type=int, default=1)\n"
    "parser.add_argument('--zero_stage', type=int, default=0)\n"
    "parser.add_argument('--output_dir', type=str)\n"
    "parser = deepspeed.add_config_arguments(parser)\n"
    "args = parser.parse_args()\n"
)


def test_zero0_dtype_table_and_note_agree_and_lora_is_not_above_full(tmp_path: Path) -> None:
    report = _run_report(tmp_path, {"run_1.3b.sh": DSCHAT_LAUNCH, "main.py": DSCHAT_MAIN})
    assert "unknown" not in report, report.get("unknown")
    dtypes = {d["what"]: d["dtype"] for d in report["dtypes"]}
    notes = report["assumptions"]
    assert any("ZeRO stage 0 estimated as DDP" in a for a in notes)
    # no config was read: DeepSpeed's 16-bit engine is assumed, with its fp32 master (table and note agree)
    assert "ZeRO stage 0 estimated as DDP with DeepSpeed's fp32 master weights" in notes
    assert dtypes["optimizer"] == "fp32 master copy + fp32 states"
    # DeepSpeed's 16-bit engine casts the adapters too: no fp32-adapter LoRA row above the full fine-tune
    assert _row(report, "lora") <= _row(report, "full")


# the same run with a DeepSpeed JSON that enables fp16 at ZeRO stage 0 (the HF Trainer's --deepspeed)
def test_zero0_fp16_json_keeps_an_fp32_master_and_says_so(tmp_path: Path) -> None:
    files = {
        "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 1 train.py "
        "--model_name_or_path facebook/opt-1.3b "
        "--deepspeed ds.json --fp16 True --per_device_train_batch_size 8 --max_length 512 --output_dir out\n",
        "train.py": "from transformers import Trainer\nprint('train')\n",
        "ds.json": '{"fp16": {"enabled": "auto"}, "zero_optimization": {"stage": 0}, '
        '"train_micro_batch_size_per_gpu": "auto"}\n',
    }
    report = _run_report(tmp_path, files)
    assert "unknown" not in report, report.get("unknown")
    dtypes = {d["what"]: d["dtype"] for d in report["dtypes"]}
    assert dtypes["optimizer"] == "fp32 master copy + fp32 states"
    assert "ZeRO stage 0 estimated as DDP with DeepSpeed's fp32 master weights" in report["assumptions"]
    assert _row(report, "lora") <= _row(report, "full")


# GA402 on a run that leaves the weight dtype open (LLaMA-Factory/axolotl-like recipes, field trial C11): the
# single-GPU figure is judged with an fp32 load and the message says so
GA402_SFT = (
    "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nbf16: true\nper_device_train_batch_size: 4\n"
    "gradient_accumulation_steps: 4\nmax_length: 1024\nnum_train_epochs: 1\n"
)


@pytest.mark.parametrize(("dtype", "note"), [("", True), ("dtype: bfloat16\n", False)])
def test_ga402_names_the_setup_its_single_gpu_number_is_judged_with(tmp_path: Path, dtype: str, note: bool):
    files = {
        "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 2 train.py sft.yaml\n",
        "sft.yaml": GA402_SFT + dtype,
        "train.py": "print('train')\n",
        "pyproject.toml": '[[tool.gpu-advise.runs]]\npath = "launch.sh"\ndataset-samples = 20000\n',
    }
    write_files(tmp_path, files)
    [f] = [f for f in _findings(tmp_path, "2xH100-PCIe") if f.rule == "GA402"]
    est = _estimates(tmp_path, {}, "2xH100-PCIe")["launch.sh"]
    assert f"({est.single_gpu_peak:.1f} GiB of {est.gpu_memory_gib:.1f} GiB unsharded" in f.message
    assert ("judged with an fp32 model load under autocast" in f.message) is note
