"""The rule catalog against the real corpus (../shared/corpus): files where a rule clearly applies
(rule code and line asserted) and files where a careless rule would fire but must not.

Corpus files are read in place, never copied. Multi-file runs are rebuilt in a temporary folder
with symbolic links to the corpus files under the paths their launch scripts name, so a finding
in a linked file is reported under the repository path it has upstream.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check

MINE = [
    "GA101",
    "GA102",
    "GA103",
    "GA104",
    "GA201",
    "GA202",
    "GA203",
    "GA204",
    "GA301",
    "GA302",
    "GA303",
    "GA304",
    "GA305",
    "GA306",
    "GA501",
    "GA502",
    "GA503",
    "GA504",
    "GA601",
    "GA602",
]


def findings(path: Path, hardware: str | None, monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.chdir(path.parent)
    result = run_check([Path(path.name)], CheckOptions(hardware=hardware, select=MINE))
    assert not result.errors, result.errors
    return result.findings


# --- a rule clearly applies ---------------------------------------------------------------------

TRUE_POSITIVES = [
    # (corpus file, hardware, [(rule, line)], why)
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__BingBertSquad__deepspeed_bsz24_config.json",
        None,
        [("GA102", 2)],
        "train 24 / micro 3 gives accumulation 0 at 16 GPUs",
    ),
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__data_efficiency__vit_finetuning__config__"
        "ds_config_cifar_random_ltd.json",
        None,
        [("GA102", 2)],
        "train 32 = micro 32 holds only at world size 1",
    ),
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__pipeline_parallelism__ds_config.json",
        None,
        [("GA102", 2)],
        "train 256 / micro 8 fails at 64 GPUs",
    ),
    (
        "deepspeed/axolotl-ai-cloud__axolotl__deepspeed_configs__zero2.json",
        None,
        [("GA303", 5)],
        "axolotl's zero2.json offloads the optimizer despite its name",
    ),
    (
        "deepspeed/hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_offload_config.json",
        None,
        [("GA303", 21)],
        "ZeRO-3 with optimizer and parameter offload",
    ),
    (
        "deepspeed/lm-sys__FastChat__playground__deepspeed_config_s2.json",
        None,
        [("GA303", 5)],
        "ZeRO-2 with CPU optimizer offload",
    ),
    (
        "deepspeed/tatsu-lab__stanford_alpaca__configs__default_offload_opt_param.json",
        None,
        [("GA303", 26)],
        "alpaca's DeepSpeed alternative offloads everything",
    ),
    (
        "deepspeed/huggingface__accelerate__examples__deepspeed_config_templates__zero_stage2_offload_config.json",
        None,
        [("GA303", 31)],
        "accelerate's offload template",
    ),
    (
        "launch/lm-sys__FastChat__scripts__train_vicuna_13b.sh",
        "8xH100-SXM",
        [("GA303", 20)],
        '--fsdp "full_shard auto_wrap offload" on 8 GPUs',
    ),
    (
        "axolotl/axolotl-ai-cloud__axolotl__examples__phi__phi3-ft-fsdp.yml",
        "8xH100-SXM",
        [("GA303", 64)],
        "FSDP + CPU offload for Phi-3-mini (3.8B), which fits an H100 without it",
    ),
    (
        "launch/lm-sys__FastChat__scripts__train_lora.sh",
        "8xH100-SXM",
        [("GA502", 9)],
        "--fp16 True on an H100",
    ),
    (
        "axolotl/axolotl-ai-cloud__axolotl__examples__archived__openllama-3b__lora.yml",
        "8xH100-SXM",
        [("GA502", 45)],
        "fp16: true on an H100",
    ),
    (
        "deepspeed/huggingface__accelerate__examples__deepspeed_config_templates__zero_stage2_config.json",
        "8xA100-SXM-80GB",
        [("GA502", 3)],
        "the accelerate template hard-codes fp16",
    ),
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__imagenet__config__ds_config.json",
        "8xH100-SXM",
        [("GA503", 24), ("GA102", 2)],
        "fp16 disabled and no bf16: fp32 on an H100; train 256 with accumulation 1",
    ),
    (
        "launch/QwenLM__Qwen__finetune__finetune_ds.sh",
        "8xH100-SXM",
        [("GA104", 60)],
        "nproc_per_node from torch.cuda.device_count()",
    ),
    (
        "launch/haotian-liu__LLaVA__scripts__v1_5__finetune.sh",
        "8xH100-SXM",
        [("GA104", 3)],
        "bare deepspeed takes every GPU",
    ),
    (
        "launch/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft.sh",
        "8xH100-SXM",
        [("GA104", 7), ("GA202", 20)],
        "llamafactory-cli on every GPU, 4 workers x 8 ranks",
    ),
    (
        "launch/lm-sys__FastChat__scripts__test_readme_train.sh",
        "2xH100-PCIe",
        [("GA304", 1)],
        "--nproc_per_node=4 on a two-GPU machine",
    ),
    (
        "launch/allenai__open-instruct__scripts__dpo_train_with_accelerate.sh",
        "4xH100-NVL",
        [("GA304", 3)],
        "CUDA_VISIBLE_DEVICES=0..7 on a four-GPU machine",
    ),
    (
        "launch/haotian-liu__LLaVA__scripts__v1_5__finetune.sh",
        "8xV100-32GB",
        [("GA501", 17), ("GA501", 32)],
        "--bf16 True and --tf32 True on V100",
    ),
    (
        "accelerate/huggingface__trl__examples__accelerate_configs__alst_ulysses_4gpu.yaml",
        "4xH100-NVL",
        [("GA302", 19)],
        "ZeRO-3 over four GPUs that are NVLink-paired, not NVLink-joined",
    ),
    (
        "accelerate/hiyouga__LLaMA-Factory__examples__accelerate__fsdp_config.yaml",
        "2xH100-PCIe",
        [("GA302", 3)],
        "FSDP full shard on two PCIe cards",
    ),
    (
        "axolotl/axolotl-ai-cloud__axolotl__examples__distributed-parallel__llama-3_1-8b-hsdp-tp.yaml",
        "4xL40S",
        [("GA306", 8)],
        "tensor_parallel_size 2 on PCIe-only L40S",
    ),
]


@pytest.mark.parametrize(
    ("rel", "hardware", "expected", "why"),
    TRUE_POSITIVES,
    ids=[f"{r.split('/')[-1][:60]}-{h}" for r, h, _, _ in TRUE_POSITIVES],
)
def test_rule_applies(
    corpus: Path, rel: str, hardware: str | None, expected: list, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = {
        (f.rule, f.location.line)
        for f in findings(corpus / rel, hardware, monkeypatch)
        if f.location.file.name == Path(rel).name
    }
    for item in expected:
        assert item in got, f"{why}: expected {item}, got {sorted(got)}"


def test_offload_message_says_it_fits_without(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus / "axolotl/axolotl-ai-cloud__axolotl__examples__phi__phi3-ft-fsdp.yml"
    [f] = [f for f in findings(path, "8xH100-SXM", monkeypatch) if f.rule == "GA303"]
    assert "microsoft/Phi-3-mini-4k-instruct" in f.message and "fits without it" in f.message


# --- a careless rule would fire, and must not -----------------------------------------------------

TRUE_NEGATIVES = [
    # (corpus file, hardware, rules that must stay quiet, why)
    (
        "accelerate/huggingface__alignment-handbook__recipes__accelerate_configs__ddp.yaml",
        "8xH100-SXM",
        ["GA301", "GA302", "GA304", "GA305", "GA104"],
        "DDP on 8 GPUs of an NVSwitch machine",
    ),
    (
        "accelerate/huggingface__open-r1__recipes__accelerate_configs__zero3.yaml",
        "8xH100-SXM",
        ["GA302", "GA303", "GA304"],
        "ZeRO-3 over NVSwitch, offload devices none",
    ),
    (
        "deepspeed/QwenLM__Qwen__finetune__ds_config_zero2.json",
        "8xH100-SXM",
        ["GA102", "GA103", "GA303", "GA502", "GA503", "GA504"],
        '"auto" values and "device": "none"',
    ),
    (
        "deepspeed/QwenLM__Qwen__finetune__ds_config_zero3.json",
        "8xH100-SXM",
        ["GA303", "GA102"],
        '"device": "none" for both offloads',
    ),
    (
        "accelerate/huggingface__peft__examples__causal_language_modeling__accelerate_ds_zero3_cpu_offload_config.yaml",
        "8xH100-SXM",
        ["GA303", "GA503", "GA104"],
        "named cpu_offload, offloads nothing; a standalone 'no'",
    ),
    (
        "accelerate/huggingface__trl__examples__accelerate_configs__single_gpu.yaml",
        "8xH100-SXM",
        ["GA104", "GA301", "GA304", "GA305"],
        'distributed_type: "NO" (quoted) is one process',
    ),
    (
        "accelerate/huggingface__accelerate__examples__config_yaml_templates__fp8.yaml",
        "8xH100-SXM",
        ["GA104", "GA503", "GA502"],
        '"NO" and mixed_precision fp8',
    ),
    (
        "deepspeed/haotian-liu__LLaVA__scripts__zero3.json",
        "8xH100-SXM",
        ["GA102", "GA502", "GA503", "GA303"],
        "fp16 and bf16 auto, batch auto",
    ),
    (
        "deepspeed/hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_fp8_config.json",
        "8xH100-SXM",
        ["GA503", "GA502", "GA102"],
        "fp16 false with bf16 auto is not fp32",
    ),
    (
        "deepspeed/axolotl-ai-cloud__axolotl__deepspeed_configs__zero1.json",
        "8xH100-SXM",
        ["GA502", "GA503", "GA303"],
        "axolotl's auto precision",
    ),
    (
        "launch/QwenLM__Qwen__finetune__finetune_lora_single_gpu.sh",
        "4xH100-NVL",
        ["GA104", "GA304", "GA305", "GA301"],
        "CUDA_VISIBLE_DEVICES=0 python: one process, one GPU",
    ),
    (
        "launch/microsoft__DeepSpeedExamples__applications__DeepSpeed-Chat__training__step1_supervised_finetuning__"
        "training_scripts__opt__single_gpu__run_1.3b.sh",
        "8xH100-SXM",
        ["GA104", "GA304"],
        "--num_gpus 1",
    ),
    (
        "launch/lm-sys__FastChat__scripts__train_vicuna_7b.sh",
        "8xH100-SXM",
        ["GA302", "GA304", "GA303"],
        "FSDP over NVSwitch; four ranks on an unmasked eight-GPU machine",
    ),
    (
        "launch/haotian-liu__LLaVA__scripts__v1_5__finetune.sh",
        "8xH100-SXM",
        ["GA202", "GA201"],
        "4 workers per rank for an image pipeline",
    ),
    (
        "launch/allenai__open-instruct__scripts__finetune_with_accelerate.sh",
        "8xH100-SXM",
        ["GA304", "GA305", "GA301", "GA104"],
        "CUDA_VISIBLE_DEVICES=0,1,2,3 with 4 processes on NVSwitch",
    ),
    (
        "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__sft__config_full.yaml",
        "8xH100-SXM",
        ["GA503", "GA104", "GA501"],
        "a TRL recipe with bf16, no launcher in sight",
    ),
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__imagenet__config__ds_config.json",
        "8xH100-SXM",
        ["GA304", "GA305", "GA301"],
        '"cuda_visible_devices": 0 is not a DeepSpeed key and selects nothing',
    ),
    (
        "accelerate/hiyouga__LLaMA-Factory__examples__ktransformers__accelerate__fsdp2_kt_int8_1gpu.yaml",
        "2xH100-PCIe",
        ["GA302", "GA304"],
        "FSDP on one process has no link to cross",
    ),
    (
        "accelerate/huggingface__accelerate__examples__torch_native_parallelism__configs__tp_hsdp.yaml",
        "8xH100-SXM",
        ["GA306", "GA302"],
        "tensor parallelism inside NVSwitch",
    ),
    (
        "accelerate/huggingface__accelerate__examples__config_yaml_templates__multi_node.yaml",
        "8xH100-SXM",
        ["GA304"],
        "num_processes 8 over 2 machines is 4 per node",
    ),
    (
        "deepspeed/microsoft__DeepSpeedExamples__training__autotuning__hf__dsconfigs__ds_config_tune.json",
        "8xH100-SXM",
        ["GA102", "GA103"],
        'a trailing-space key "gradient_accumulation_steps " and an auto micro-batch',
    ),
]


@pytest.mark.parametrize(
    ("rel", "hardware", "absent", "why"),
    TRUE_NEGATIVES,
    ids=[f"{r.split('/')[-1][:60]}-{h}" for r, h, _, _ in TRUE_NEGATIVES],
)
def test_rule_stays_quiet(
    corpus: Path, rel: str, hardware: str | None, absent: list, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = [
        f"{f.rule} {f.location}: {f.message}"
        for f in findings(corpus / rel, hardware, monkeypatch)
        if f.rule in absent
    ]
    assert not bad, f"{why}: {bad}"


# --- multi-file runs, rebuilt with copies of the corpus files -------------------------------------


def C(kind: str, repo: str, path: str) -> str:
    """The corpus file of `path` in `repo` (SOURCES.md: owner__repo__path with / as __)."""
    return f"{kind}/{repo.replace('/', '__')}__{path.replace('/', '__')}"


def project(root: Path, corpus: Path, links: dict[str, str], files: dict[str, str] | None = None) -> Path:
    for dest, rel in links.items():
        p = root / dest
        p.parent.mkdir(parents=True, exist_ok=True)
        # copied, not linked: a link that leaves the project is not read (advisor/sources/boundary.py)
        p.write_bytes((corpus / rel).read_bytes())
    for dest, text in (files or {}).items():
        p = root / dest
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def check_project(
    root: Path, hardware: str | None, monkeypatch: pytest.MonkeyPatch
) -> set[tuple[str, str, int]]:
    monkeypatch.chdir(root)
    result = run_check([Path(".")], CheckOptions(hardware=hardware, select=MINE))
    assert not result.errors, result.errors
    return {(f.rule, f.location.file.as_posix(), f.location.line) for f in result.findings}


def test_peft_qlora_fsdp_precision_split(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PEFT's fsdp_config_qlora.yaml says mixed_precision 'no', its launch script passes --bf16 True."""
    project(
        tmp_path,
        corpus,
        {
            "run_peft_qlora_fsdp.sh": C("launch", "huggingface/peft", "examples/sft/run_peft_qlora_fsdp.sh"),
            "configs/fsdp_config_qlora.yaml": C(
                "accelerate", "huggingface/peft", "examples/sft/configs/fsdp_config_qlora.yaml"
            ),
        },
    )
    got = check_project(tmp_path, "8xH100-SXM", monkeypatch)
    assert ("GA504", "configs/fsdp_config_qlora.yaml", 17) in got
    assert ("GA303", "configs/fsdp_config_qlora.yaml", 10) in got
    assert not any(r == "GA503" for r, _, _ in got)  # TrainingArguments' bf16 is in force


def test_trl_zero1_accumulation_against_a_recipe(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRL's deepspeed_zero1.yaml pins accumulation 1; smollm2's SFT recipe uses 4: 'ds 1 vs hf 4'."""
    project(
        tmp_path,
        corpus,
        {
            "recipes/accelerate_configs/deepspeed_zero1.yaml": C(
                "accelerate", "huggingface/trl", "examples/accelerate_configs/deepspeed_zero1.yaml"
            ),
            "recipes/smollm2/sft/config.yaml": C(
                "training_args", "huggingface/alignment-handbook", "recipes/smollm2/sft/config_smol.yaml"
            ),
        },
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --config_file "
            "recipes/accelerate_configs/deepspeed_zero1.yaml scripts/sft.py --config "
            "recipes/smollm2/sft/config.yaml\n",
            "scripts/sft.py": "print('sft')\n",
        },
    )
    got = check_project(tmp_path, "8xH100-SXM", monkeypatch)
    assert ("GA103", "recipes/accelerate_configs/deepspeed_zero1.yaml", 5) in got


def test_accelerate_template_fp16_with_bf16(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """accelerate's deepspeed.yaml template names zero_stage1_config.json, which hard-codes fp16."""
    project(
        tmp_path,
        corpus,
        {
            "examples/config_yaml_templates/deepspeed.yaml": C(
                "accelerate", "huggingface/accelerate", "examples/config_yaml_templates/deepspeed.yaml"
            ),
            "examples/deepspeed_config_templates/zero_stage1_config.json": C(
                "deepspeed",
                "huggingface/accelerate",
                "examples/deepspeed_config_templates/zero_stage1_config.json",
            ),
        },
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --config_file "
            "examples/config_yaml_templates/deepspeed.yaml train.py --output_dir out --bf16 True\n",
            "train.py": "print('train')\n",
        },
    )
    got = check_project(tmp_path, "8xH100-SXM", monkeypatch)
    assert ("GA504", "examples/deepspeed_config_templates/zero_stage1_config.json", 3) in got
    assert not any(r == "GA502" for r, _, _ in got)  # bf16 is in force; the conflict is GA504's


LLAMAFACTORY_FSDP_QLORA = {
    "train.sh": C("launch", "hiyouga/LLaMA-Factory", "examples/extras/fsdp_qlora/train.sh"),
    "examples/accelerate/fsdp_config.yaml": C(
        "accelerate", "hiyouga/LLaMA-Factory", "examples/accelerate/fsdp_config.yaml"
    ),
    "examples/extras/fsdp_qlora/llama3_lora_sft.yaml": C(
        "training_args", "hiyouga/LLaMA-Factory", "examples/extras/fsdp_qlora/llama3_lora_sft.yaml"
    ),
}


def test_llamafactory_fsdp_qlora_on_nvlink_pairs(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUDA_VISIBLE_DEVICES=0,1 is a pair on 4xH100-NVL: no PCIe sharding, but the order is unpinned."""
    project(tmp_path, corpus, LLAMAFACTORY_FSDP_QLORA, {"src/train.py": "print('train')\n"})
    got = check_project(tmp_path, "4xH100-NVL", monkeypatch)
    assert ("GA305", "train.sh", 4) in got
    assert not any(r in {"GA301", "GA302", "GA304", "GA104"} for r, _, _ in got), got


def test_llamafactory_fsdp_qlora_on_pcie(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(tmp_path, corpus, LLAMAFACTORY_FSDP_QLORA, {"src/train.py": "print('train')\n"})
    got = check_project(tmp_path, "2xH100-PCIe", monkeypatch)
    assert ("GA302", "examples/accelerate/fsdp_config.yaml", 3) in got
    assert not any(r in {"GA305", "GA304"} for r, _, _ in got), got


def test_handbook_qlora_overrides_the_process_count(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README launches ddp.yaml (num_processes 8) with --num_processes=1 for the QLoRA recipe."""
    project(
        tmp_path,
        corpus,
        {
            "recipes/accelerate_configs/ddp.yaml": C(
                "accelerate", "huggingface/alignment-handbook", "recipes/accelerate_configs/ddp.yaml"
            ),
            "recipes/zephyr-7b-beta/sft/config_qlora.yaml": C(
                "training_args",
                "huggingface/alignment-handbook",
                "recipes/zephyr-7b-beta/sft/config_qlora.yaml",
            ),
        },
        {
            "launch.sh": "#!/bin/bash\nACCELERATE_LOG_LEVEL=info accelerate launch --config_file "
            "recipes/accelerate_configs/ddp.yaml --num_processes=1 scripts/run_sft.py "
            "recipes/zephyr-7b-beta/sft/config_qlora.yaml --load_in_4bit=true\n",
            "scripts/run_sft.py": "print('sft')\n",
        },
    )
    got = check_project(tmp_path, "1xH100", monkeypatch)
    assert not any(r in {"GA304", "GA104", "GA503"} for r, _, _ in got), got


def test_corpus_counts() -> None:
    assert len(TRUE_POSITIVES) + 3 >= 15  # plus the linked PEFT, TRL and accelerate-template runs
    assert len(TRUE_NEGATIVES) >= 15
