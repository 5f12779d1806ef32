"""The scale rules (GA401-GA406) against the real public configs in ../shared/corpus.

Runs are put together the way their READMEs launch them (corpus/SOURCES.md, config-formats.md 6.4):
a launch script written in tmp_path names the corpus files by absolute path, or corpus files are
copied into tmp_path under the relative paths their configs use. Nothing is copied into the repo.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import CORPUS

SCALE = ["GA401", "GA402", "GA403", "GA404", "GA405", "GA406"]


def _check(root: Path, hardware: str, monkeypatch: pytest.MonkeyPatch) -> tuple[set[str], list]:
    monkeypatch.chdir(root)
    result = run_check([Path(".")], CheckOptions(hardware=hardware, select=SCALE))
    assert not result.errors, result.errors
    return {f.rule for f in result.findings}, result.findings


def _launch(tmp_path: Path, command: str) -> Path:
    (tmp_path / "launch.sh").write_text(f"#!/bin/bash\n{command}\n", encoding="utf-8")
    # the corpus lies outside this project: name it as an allowed root, as a cluster would its configs
    (tmp_path / ".gpu-advise.toml").write_text(f"allowed-roots = [{json.dumps(str(CORPUS))}]\n")
    return tmp_path


def _copy(corpus: Path, tmp_path: Path, pairs: dict[str, str]) -> Path:
    for corpus_name, rel in pairs.items():
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / corpus_name, dest)
    return tmp_path


HANDBOOK_ZERO3 = "accelerate/huggingface__alignment-handbook__recipes__accelerate_configs__zero3.yaml"
SMOL_SFT = "training_args/huggingface__alignment-handbook__recipes__smollm2__sft__config_smol.yaml"
TULU_70B = "training_args/allenai__open-instruct__configs__train_configs__sft__tulu2_70b.yaml"


# ---- true positives ---------------------------------------------------------------------------
@pytest.mark.parametrize("model", [None, "HuggingFaceTB/SmolLM2-135M"])
def test_zero3_for_smollm2_is_sharding_unneeded(corpus: Path, tmp_path: Path, monkeypatch, model) -> None:
    # README: accelerate launch --config_file recipes/accelerate_configs/zero3.yaml scripts/sft.py --config
    # recipes/smollm2/sft/config_smol.yaml ("we use this script for the 135M model too")
    extra = f" --model_name_or_path {model}" if model else ""
    root = _launch(
        tmp_path,
        f"accelerate launch --config_file {corpus / HANDBOOK_ZERO3} scripts/sft.py "
        f"--config {corpus / SMOL_SFT}{extra}",
    )
    codes, findings = _check(root, "8xH100-SXM", monkeypatch)
    assert "GA403" in codes
    hit = next(f for f in findings if f.rule == "GA403")
    assert hit.location.file.name == Path(HANDBOOK_ZERO3).name and hit.location.line == 9  # zero_stage: 3
    assert "GA401" not in codes


def test_lora_1b_with_zero3_is_sharding_unneeded(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    root = _copy(
        corpus,
        tmp_path,
        {
            "axolotl/axolotl-ai-cloud__axolotl__examples__llama-3__lora-1b-ray.yml": (
                "examples/llama-3/lora-1b-ray.yml"
            ),
            "deepspeed/axolotl-ai-cloud__axolotl__deepspeed_configs__zero3.json": (
                "deepspeed_configs/zero3.json"
            ),
        },
    )
    codes, findings = _check(root, "8xH100-SXM", monkeypatch)
    assert "GA403" in codes
    # at the recipe's `deepspeed: deepspeed_configs/zero3.json` (line 60), the shared config's stage related
    hit = next(f for f in findings if f.rule == "GA403")
    assert (hit.location.file.name, hit.location.line) == ("lora-1b-ray.yml", 60)
    assert [r.file.name for r in hit.related] == ["zero3.json"]


def test_qwen3_4b_lora_with_zero3_llamafactory(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    # run from the LLaMA-Factory root: deepspeed: examples/deepspeed/ds_z3_config.json
    root = _copy(
        corpus,
        tmp_path,
        {
            "training_args/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft_ds3.yaml": (
                "examples/train_lora/qwen3_lora_sft_ds3.yaml"
            ),
            "deepspeed/hiyouga__LLaMA-Factory__examples__deepspeed__ds_z3_config.json": (
                "examples/deepspeed/ds_z3_config.json"
            ),
        },
    )
    codes, _ = _check(root, "8xH100-SXM", monkeypatch)
    # max_samples: 1000 per dataset x 2 datasets x 3 epochs of LoRA on a 4B model: minutes on one GPU,
    # so one GPU is the advice (GA402), not DDP on eight (GA403 stays silent: field trial C10)
    assert "GA402" in codes and "GA403" not in codes
    assert "GA405" not in codes  # eight GPUs, not two
    codes, _ = _check(root, "2xRTX3090", monkeypatch)
    assert {"GA402", "GA405"} <= codes and "GA403" not in codes


def test_qlora_7b_with_fsdp_axolotl(corpus: Path, monkeypatch) -> None:
    monkeypatch.chdir(corpus)
    result = run_check(
        [Path("axolotl/axolotl-ai-cloud__axolotl__examples__llama-2__qlora-fsdp.yml")],
        CheckOptions(hardware="8xH100-SXM", select=SCALE),
    )
    assert [f.rule for f in result.findings] == ["GA403"]


@pytest.mark.parametrize(
    ("name", "line", "col"),
    [
        (
            "accelerate/hiyouga__LLaMA-Factory__examples__ktransformers__accelerate__fsdp2_kt_int8_1gpu.yaml",
            2,
            19,
        ),
        (
            "accelerate/huggingface__peft__examples__causal_language_modeling__accelerate_ds_zero3_cpu_offload_config.yaml",
            9,
            15,
        ),
    ],
)
def test_sharding_on_one_process(corpus: Path, monkeypatch, name: str, line: int, col: int) -> None:
    # FSDP on 1 process (LLaMA-Factory kt 1gpu); ZeRO-3 on 1 process with offload devices 'none' (PEFT)
    monkeypatch.chdir(corpus)
    result = run_check([Path(name)], CheckOptions(select=SCALE))
    assert [(f.rule, f.location.line, f.location.col) for f in result.findings] == [("GA406", line, col)]


def test_70b_full_fine_tune_zero3_without_offload_does_not_fit(
    corpus: Path, tmp_path: Path, monkeypatch
) -> None:
    root = _launch(
        tmp_path,
        "accelerate launch --config_file "
        f"{corpus / 'accelerate/allenai__open-instruct__configs__ds_configs__deepspeed_zero3.yaml'} "
        f"open_instruct/finetune.py {corpus / TULU_70B}",
    )
    codes, findings = _check(root, "8xH100-SXM", monkeypatch)
    # 70B x 16 bytes / 8 GPUs = 140 GB of model states per GPU
    assert "GA401" in codes
    assert not codes & {"GA402", "GA403", "GA405"}
    msg = next(f for f in findings if f.rule == "GA401").message
    assert "optimizer states" in msg and "GiB" in msg and ("saves" in msg or "Fits on" in msg)


# ---- true negatives ---------------------------------------------------------------------------
def test_70b_full_fine_tune_zero3_with_offload_on_8xh100(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    # scripts/finetune_with_accelerate_config.sh with stage3_offloading_accelerate.conf
    conf = corpus / "deepspeed/allenai__open-instruct__configs__ds_configs__stage3_offloading_accelerate.conf"
    root = _launch(
        tmp_path,
        "accelerate launch --mixed_precision bf16 --num_machines 1 --num_processes 8 --use_deepspeed "
        f"--deepspeed_config_file {conf} open_instruct/finetune.py {corpus / TULU_70B}",
    )
    codes, _ = _check(root, "8xH100-SXM", monkeypatch)
    assert not codes & {"GA401", "GA402", "GA403", "GA404", "GA406"}


def test_70b_lora_zero3_peft(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    root = _copy(
        corpus,
        tmp_path,
        {
            "launch/huggingface__peft__examples__sft__run_peft_deepspeed.sh": "run_peft_deepspeed.sh",
            "accelerate/huggingface__peft__examples__sft__configs__deepspeed_config.yaml": (
                "configs/deepspeed_config.yaml"
            ),
        },
    )
    codes, _ = _check(root, "8xH100-SXM", monkeypatch)
    assert not codes  # a 16-bit 70B replica (140 GB) needs the sharding


@pytest.mark.parametrize(
    "recipe",
    [
        "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__sft__config_full.yaml",
        "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__dpo__config_full.yaml",
    ],
)
def test_7b_full_fine_tune_zero3_is_not_flagged(
    corpus: Path, tmp_path: Path, monkeypatch, recipe: str
) -> None:
    # DDP would keep DeepSpeed's fp32 master weights and Adam states: 7B x 16 bytes does not fit 80 GB
    root = _launch(
        tmp_path,
        f"accelerate launch --config_file {corpus / HANDBOOK_ZERO3} scripts/run.py {corpus / recipe}",
    )
    codes, _ = _check(root, "8xH100-SXM", monkeypatch)
    assert not codes


def test_fastchat_7b_fsdp_is_not_flagged(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    # no torch_dtype: FastChat loads Llama-2-7B in fp32 under --bf16 autocast, 16 bytes per parameter
    root = _copy(corpus, tmp_path, {"launch/lm-sys__FastChat__scripts__test_readme_train.sh": "train.sh"})
    codes, _ = _check(root, "4xH100-NVL", monkeypatch)
    assert not codes


def test_qlora_single_gpu_recipe_is_not_flagged(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    # zephyr-7b-beta QLoRA: accelerate launch --config_file ddp.yaml --num_processes=1
    ddp = corpus / "accelerate/huggingface__alignment-handbook__recipes__accelerate_configs__ddp.yaml"
    recipe = (
        corpus
        / "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__sft__config_qlora.yaml"
    )
    root = _launch(
        tmp_path, f"accelerate launch --config_file {ddp} --num_processes=1 scripts/run_sft.py {recipe}"
    )
    codes, _ = _check(root, "1xRTX4090", monkeypatch)
    assert not codes


# ---- the whole corpus, file by file -------------------------------------------------------------
EXPECTED_8XH100 = {
    (
        "GA406",
        "accelerate/hiyouga__LLaMA-Factory__examples__ktransformers__accelerate__fsdp2_kt_int8_1gpu.yaml",
    ),
    (
        "GA406",
        "accelerate/huggingface__peft__examples__causal_language_modeling__accelerate_ds_zero3_cpu_offload_config.yaml",
    ),
    ("GA403", "axolotl/axolotl-ai-cloud__axolotl__examples__llama-2__qlora-fsdp.yml"),
    ("GA403", "training_args/hiyouga__LLaMA-Factory__examples__v1__train_full__train_full_fsdp2.yaml"),
    # only the paged 8-bit optimizer state is over the card: it spills to host memory
    ("GA404", "axolotl/axolotl-ai-cloud__axolotl__examples__llama-3__fft-8b.yaml"),
    # LLaMA-Factory demos capped at max_samples 1000 on all eight GPUs (llamafactory-cli takes them all)
    ("GA402", "launch/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft.sh"),
    # (llama3_fp8_fsdp_sft.yaml is no GA402: LLaMA-Factory upcasts trainable parameters to fp32 outside
    # ZeRO-3, so the 8B full fine-tune needs ~16 B/param on one GPU; issue 10, H3a)
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__extras__fsdp_qlora__llama3_lora_sft.yaml"),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__extras__mod__llama3_full_sft.yaml"),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_dpo.yaml"),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft.yaml"),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft_ray.yaml"),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__train_qlora__qwen3_lora_sft_otfq.yaml"),
    # issue 10 (H3a): a lone recipe with no launch script is estimated per GPU for one process (the same per
    # GPU under DDP): full fine-tunes of 7B-70B models do not fit one 80 GB card unsharded, 7B ones are close
    ("GA401", "training_args/allenai__open-instruct__configs__train_configs__olmo2__olmo2_1124_7b_sft.yaml"),
    ("GA401", "training_args/allenai__open-instruct__configs__train_configs__sft__tulu2_70b.yaml"),
    ("GA401", "training_args/allenai__open-instruct__configs__train_configs__sft__tulu2_7b.yaml"),
    (
        "GA401",
        "training_args/huggingface__alignment-handbook__recipes__pref_align_scan__dpo__config_zephyr.yaml",
    ),
    (
        "GA401",
        "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__dpo__config_full.yaml",
    ),
    (
        "GA401",
        "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-gemma__sft__config_full.yaml",
    ),
    ("GA401", "training_args/huggingface__open-r1__recipes__OlympicCoder-32B__sft__config_v00.00.yaml"),
    ("GA401", "training_args/huggingface__open-r1__recipes__OlympicCoder-7B__sft__config_v00.00.yaml"),
    (
        "GA404",
        "training_args/huggingface__alignment-handbook__recipes__constitutional-ai__sft__config_anthropic.yaml",
    ),
    # Models resolved by what the name says (advisor/estimate/model_names.py: Qwen2.5-Math-7B-Instruct has
    # Qwen2.5-7B's shapes) and GaLore modelled (LLaMA-Factory use_galore) get estimates they lacked: a 7B full
    # fine-tune at 2 x 32768 tokens and Mixtral-8x22B full on one process do not fit; GaLore 8B fits on one.
    # The issue-21 memory changes of this stop (phase accounting by loop, kbit preparation by trainer, the
    # freed logits in reserved memory) put the 70B QLoRA FSDP example at 42.3 GiB per H100 under DDP (GA403)
    # and take the zephyr-7b-beta SFT out of GA404's band.
    ("GA401", "training_args/huggingface__open-r1__recipes__OpenR1-Distill-7B__sft__config_distill.yaml"),
    (
        "GA401",
        "training_args/huggingface__alignment-handbook__recipes__zephyr-141b-A35b__orpo__config_full.yaml",
    ),
    ("GA402", "training_args/hiyouga__LLaMA-Factory__examples__extras__galore__llama3_full_sft.yaml"),
    ("GA403", "axolotl/axolotl-ai-cloud__axolotl__examples__llama-3__qlora-fsdp-70b.yaml"),
    # facebook/opt-66b and opt-1.3b are in the model catalog now: ZeRO-3 66B full on the 8 GPUs of the machine
    # (the script is written for several nodes) does not fit; ZeRO-2 1.3B fits under plain DDP
    (
        "GA401",
        "launch/microsoft__DeepSpeedExamples__applications__DeepSpeed-Chat__training__step1_supervised_finetuning"
        "__training_scripts__opt__multi_node__run_66b.sh",
    ),
    (
        "GA403",
        "launch/microsoft__DeepSpeedExamples__applications__DeepSpeed-Chat__training__step1_supervised_finetuning"
        "__training_scripts__opt__single_node__run_1.3b.sh",
    ),
    # bigcode/starcoder2-15b is in the model catalog now (issue 21): the starchat2 SFT recipe, a 15B full
    # fine-tune read without its launch, needs about 148 GiB on one process (as the 7B distill above, no fit)
    ("GA401", "training_args/huggingface__alignment-handbook__recipes__starchat2-15b__sft__config_v0.1.yaml"),
}


def test_corpus_scale_findings_are_exactly_the_known_ones(corpus: Path, monkeypatch) -> None:
    """Every other corpus run is a true negative on 8xH100-SXM: a new finding here is a regression
    (or a deliberate change: then update the list with the reason)."""
    monkeypatch.chdir(corpus)
    result = run_check([Path(".")], CheckOptions(hardware="8xH100-SXM", select=SCALE))
    assert not result.errors, result.errors[:3]
    got = {(f.rule, f.location.file.as_posix()) for f in result.findings}
    assert got == EXPECTED_8XH100, (sorted(got - EXPECTED_8XH100), sorted(EXPECTED_8XH100 - got))


def test_no_estimator_failure_anywhere_in_the_corpus(corpus: Path, monkeypatch) -> None:
    monkeypatch.chdir(corpus)
    for hw in ("8xH100-SXM", "2xRTX3090"):
        result = run_check([Path(".")], CheckOptions(hardware=hw, select=SCALE))
        notes = [n for r in result.runs for n in r.notes]
        assert not [n for n in notes if "estimator failed" in n], notes
        known = [r for r in result.runs if r.peak_vram_gib is not None]
        assert len(known) >= 15
        for r in known:
            assert r.gpu_memory_gib is not None and 0 < r.peak_vram_gib < 5000
