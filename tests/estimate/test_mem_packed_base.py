"""LoRA on a pre-quantized GPTQ / AWQ checkpoint (issue 21 section 2: GPTQ/AWQ bases): the estimate counts
the packed Linear codes, not the 16-bit weights the recipe's torch_dtype names, and says so.

The packing is checked against the buffers of auto-gptq's QuantLinear and AutoAWQ's WQLinear_GEMM as their
__init__ registers them (auto-gptq 0.7.1 nn_modules/qlinear/qlinear_cuda_old.py:50-74, autoawq 0.2.9
awq/modules/linear/gemm.py:135-158), written out here by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
from advisor.estimate.memory.packed import packed_bytes
from tests.conftest import breakdown_item as _item
from tests.conftest import estimate_json_run, write_files

runner = CliRunner()


def _gptq_buffers(d_in: int, d_out: int, bits: int, group: int) -> int:
    """Bytes of one auto-gptq QuantLinear: qweight, qzeros, scales, g_idx (qlinear_cuda_old.py:50-74)."""
    qweight = (d_in // 32 * bits) * d_out * 4  # int32
    qzeros = math.ceil(d_in / group) * (d_out // 32 * bits) * 4  # int32
    scales = math.ceil(d_in / group) * d_out * 2  # fp16
    g_idx = d_in * 4  # int32
    return qweight + qzeros + scales + g_idx


def _awq_buffers(d_in: int, d_out: int, bits: int, group: int) -> int:
    """Bytes of one AutoAWQ WQLinear_GEMM: qweight, qzeros, scales (gemm.py:135-158)."""
    qweight = d_in * (d_out // (32 // bits)) * 4
    qzeros = (d_in // group) * (d_out // (32 // bits)) * 4
    scales = (d_in // group) * d_out * 2
    return qweight + qzeros + scales


@pytest.mark.parametrize(("kind", "bits"), [("gptq4", 4), ("gptq8", 8)])
def test_gptq_packing_is_the_quantlinear_buffers(kind: str, bits: int) -> None:
    d_in, d_out = 4096, 11008
    per = packed_bytes(kind, 128, d_out)  # g_idx is one int32 per input row: 4 / d_out per weight
    assert per * d_in * d_out == pytest.approx(_gptq_buffers(d_in, d_out, bits, 128), rel=1e-6)


def test_awq_packing_is_the_wqlinear_buffers() -> None:
    d_in, d_out = 4096, 11008
    assert packed_bytes("awq4", 128) * d_in * d_out == pytest.approx(
        _awq_buffers(d_in, d_out, 4, 128), rel=1e-6
    )


# a GPTQ checkpoint's config.json as transformers/optimum write it (quantization_config of GPTQConfig)
_GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
_RECIPE = (
    "model_name_or_path: ./model\ntorch_dtype: float16\nfp16: true\nuse_peft: true\nlora_r: 8\n"
    "lora_target_modules: [q_proj, v_proj]\nper_device_train_batch_size: 1\nmax_length: 2048\n"
    "gradient_checkpointing: true\noptim: adamw_torch\n"
)


def _estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quantization: dict | None) -> dict:
    config = dict(resolve_model("meta-llama/Llama-2-7b-hf").config)
    if quantization is not None:
        config["quantization_config"] = quantization
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\npython train.py sft.yaml\n",
            "sft.yaml": _RECIPE,
            "model/config.json": json.dumps(config),
        },
    )
    monkeypatch.chdir(tmp_path)
    return estimate_json_run("1xA100-80GB", "launch.sh")


def test_lora_on_a_gptq_checkpoint_counts_its_packed_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _estimate(tmp_path / "fp16", monkeypatch, None)
    gptq = _estimate(tmp_path / "gptq", monkeypatch, _GPTQ)
    pc = resolve_model("meta-llama/Llama-2-7b-hf").count()
    linear = pc.layer_linear_weights
    expect = (linear * packed_bytes("gptq4", 128, pc.hidden) + (pc.total - linear) * 2) / 2**30
    assert _item(gptq, "weights")["gib"] == pytest.approx(expect, abs=0.05)
    assert _item(plain, "weights")["gib"] > 2.5 * _item(gptq, "weights")["gib"]  # 16-bit vs ~4.2-bit codes
    assert "GPTQ 4-bit" in _item(gptq, "weights")["note"]
    assert any("GPTQ 4-bit checkpoint (config.json quantization_config" in a for a in gptq["assumptions"])
    # the layer being backpropagated holds its Linears' weights in fp16 (auto-gptq's torch.matmul)
    layer = sum(lin.weight_params for lin in pc.linears) * 2 / 2**30
    assert gptq["memory"]["allocated"]["gib"] > _item(gptq, "weights")["gib"] + layer * 0.9


def test_a_quantized_name_is_read_as_its_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\npython train.py sft.yaml\n",
            "sft.yaml": _RECIPE.replace("./model", "TheBloke/Llama-2-7B-GPTQ"),
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    assert "GPTQ 4-bit" in _item(run, "weights")["note"]
    assert any("tag 'gptq'" in a and "4-bit assumed" in a for a in run["assumptions"])


def test_awq_keeps_inputs_and_gptq_keeps_weights_without_checkpointing() -> None:
    pc = resolve_model("meta-llama/Llama-2-7b-hf").count()
    s = TrainingSetup(
        model=pc,
        method="qlora",
        quantization="gptq4",
        lora_r=8,
        micro_batch=1,
        seq_len=1024,
        gradient_checkpointing=False,
        storage_dtype="fp16",
        autocast="fp16",
        prepare_kbit_training=False,
        optimizer="adamw_torch",
        attn_implementation="sdpa",
        metric="allocated",
    )

    def saved(setup: TrainingSetup) -> float:
        return sum(
            it.gib for it in estimate_memory(setup).items if it.name == "quantized Linears' saved tensors"
        )

    layer_weights = sum(lin.weight_params for lin in pc.linears) * 2 / 2**30
    assert saved(s) == pytest.approx(layer_weights * (pc.layers - 1), rel=1e-6)
    awq = saved(replace(s, quantization="awq4"))
    # AWQ: each distinct Linear input (attention and MLP norms' outputs, attention output, the gated
    # product) once per layer in fp16: 3 x 4096 + 11008 wide for Llama-2-7B
    inputs = (3 * 4096 + 11008) * 2 * 1024 / 2**30
    assert awq == pytest.approx(inputs * (pc.layers - 1), rel=1e-6)
    assert saved(replace(s, gradient_checkpointing=True)) == 0.0


def test_a_copy_saved_by_bitsandbytes_loads_in_4bit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """unsloth/...-bnb-4bit holds the checkpoint's bitsandbytes quantization_config: transformers loads it in
    NF4 though the recipe writes no load_in_4bit; the estimate had counted 16-bit weights."""
    recipe = _RECIPE.replace("./model", "unsloth/llama-3-8b-bnb-4bit")
    write_files(tmp_path, {"launch.sh": "#!/bin/bash\npython train.py sft.yaml\n", "sft.yaml": recipe})
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert _item(run, "weights")["note"].startswith("NF4")
    assert _item(run, "weights")["gib"] < pc.total * 2 / 2**30 / 2.5
    assert any("saved in bitsandbytes 4-bit NF4" in a for a in run["assumptions"])
