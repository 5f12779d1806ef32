"""prepare_model_for_kbit_training by trainer and version (issue 21 section 2).

TRL <= 0.25's SFTTrainer prepares a non-sharded quantized model itself: its own
prepare_model_for_kbit_training casts the norms to fp32 only (trl 0.25 models/utils.py:488-497, called at
583), peft_module_casting_to_bf16 casts fp32 embeddings/lm_head to bf16 under bf16 (549-556, 606-607), and
the adapters keep PEFT's fp32. TRL 0.26 only wraps the model (sft_trainer.py:703) and casts the adapters to
bf16 (713-718). axolotl's LoRA/QLoRA path calls PEFT's prepare_model_for_kbit_training (loaders/model.py
1003-1023@067b021c), which casts every non-quantized parameter to fp32, then casts every module named *norm*
and the embeddings (embed_tokens, lm_head) back to cfg.torch_dtype (loaders/model.py:447-477, 1025-1047).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import estimate_json_run, write_files

_SFT = (
    "model_name_or_path: meta-llama/Llama-2-7b-hf\nuse_peft: true\nlora_r: 16\nload_in_4bit: true\n"
    "bf16: true\nper_device_train_batch_size: 1\nmax_length: 1024\ngradient_checkpointing: true\n"
    "attn_implementation: sdpa\noptim: adamw_torch_fused\n"
)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> dict:
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    return estimate_json_run()


def _rows(run: dict) -> dict[str, str]:
    return {d["what"]: d["dtype"] for d in run["dtypes"]}


def _weights(run: dict) -> float:
    return next(b["gib"] for b in run["breakdown"] if b["name"] == "weights")


@pytest.mark.parametrize("load", ["bfloat16", "float32"])
def test_trl_before_and_after_0_26(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load: str) -> None:
    recipe = _SFT + f"dtype: {load}\n"
    old = _run(tmp_path / "a", monkeypatch, {"sft.yaml": recipe, "requirements.txt": "trl==0.25.0\n"})
    new = _run(tmp_path / "b", monkeypatch, {"sft.yaml": recipe, "requirements.txt": "trl==0.26.0\n"})
    assert _rows(old)["trainable"] == "fp32" and _rows(new)["trainable"] == "bf16"
    if load == "float32":
        # TRL <= 0.25 casts the fp32 embeddings and lm_head to bf16; 0.26 leaves them as loaded
        assert _rows(old)["weights"].startswith("bf16") and _rows(new)["weights"].startswith("fp32")
        assert _weights(new) - _weights(old) > 0.45  # 2 x 32000 x 4096 x 2 B = 0.49 GiB
    else:
        assert _rows(old)["weights"].startswith("bf16") and _rows(new)["weights"].startswith("bf16")
    # neither upcasts every non-quantized weight (PEFT's prepare_model_for_kbit_training would)
    assert not [a for a in old["assumptions"] if "prepare_model_for_kbit_training" in a and "assumed" in a]


def test_axolotl_qlora_calls_peft_preparation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = (
        "base_model: meta-llama/Llama-2-7b-hf\nadapter: qlora\nload_in_4bit: true\nlora_r: 16\n"
        "lora_target_linear: true\nsequence_len: 1024\nmicro_batch_size: 1\ngradient_accumulation_steps: 1\n"
        "bf16: true\ngradient_checkpointing: true\nflash_attention: true\noptimizer: adamw_torch_fused\n"
        "datasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n"
    )
    run = _run(tmp_path, monkeypatch, {"qlora.yml": cfg})
    note = next(b["note"] for b in run["breakdown"] if b["name"] == "weights")
    # prepared (no assumption about it), then the norms and embeddings are back in bf16: Llama-2's
    # non-quantized parameters are exactly those
    assert "unquantized x 2 B" in note
    assert not [a for a in run["assumptions"] if a.startswith("QLoRA: assumed PEFT prepare_model")]
    assert any("casts the norms and embeddings back" in a for a in run["assumptions"])


# bitsandbytes double quantization: off in HF's BitsAndBytesConfig and TRL's use_bnb_nested_quant default
# (transformers utils/quantization_config.py:450; trl 0.26 trainer/model_config.py:175), on in axolotl
@pytest.mark.parametrize(
    ("extra", "nested"),
    [("use_bnb_nested_quant: true\n", True), ("use_bnb_nested_quant: false\n", False)],
)
def test_double_quantization_follows_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, nested: bool
) -> None:
    run = _run(tmp_path, monkeypatch, {"sft.yaml": _SFT + "dtype: bfloat16\n" + extra})
    note = next(b["note"] for b in run["breakdown"] if b["name"] == "weights")
    assert ("x 0.516 B" in note) == nested and ("x 0.562 B" in note) == (not nested)


def test_a_script_bitsandbytes_config_sets_double_quantization(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = (
        "import torch\nfrom transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
        "from trl import SFTConfig, SFTTrainer\n\n"
        "model = AutoModelForCausalLM.from_pretrained(\n    'meta-llama/Llama-2-7b-hf',\n"
        "    quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4',\n"
        "        bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16),\n"
        "    torch_dtype=torch.bfloat16,\n)\n"
    )
    files = {
        "launch.sh": "#!/bin/bash\npython train.py --config sft.yaml\n",
        "sft.yaml": _SFT.replace("load_in_4bit: true\n", ""),
        "train.py": script,
    }
    run = _run(tmp_path, monkeypatch, files)
    note = next(b["note"] for b in run["breakdown"] if b["name"] == "weights")
    assert "x 0.516 B" in note, note


def test_bitsandbytes_before_0_43_2_is_stated_not_counted() -> None:
    """MatMul4Bit kept every 4-bit Linear's input for backward before bitsandbytes PR #1270 (0.43.2);
    with no bitsandbytes pin the estimate says what an older one adds (counted when pinned:
    test_bnb_pinned_inputs.py)."""
    from advisor.estimate import TrainingSetup, estimate_memory, resolve_model

    pc = resolve_model("meta-llama/Llama-2-7b-hf").count()
    s = TrainingSetup(model=pc, method="qlora", micro_batch=1, seq_len=1024, gradient_checkpointing=False)
    (said,) = [a for a in estimate_memory(s).assumptions if "PR #1270" in a]
    # q/k/v, o_proj, gate/up and down_proj inputs: (2 x 4096 + 4096 + 11008) x 2 B x 32 layers x 1024
    assert f"+{(3 * 4096 + 11008) * 2 * 32 * 1024 / 2**30:.2f} GiB" in said
