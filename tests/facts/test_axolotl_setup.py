"""What axolotl's own patches change in a run's memory (advisor/facts/axolotl_setup.py).

Hand-written copies of the upstream forms:
- axolotl integrations/cut_cross_entropy/args.py:32@ca796fb5 `cut_cross_entropy: Optional[bool] = True`
  (None before v0.9.0: args.py:31@682a9cf7), and cut-cross-entropy's LinearCrossEntropyFunction, which saves
  e, c, lse and the targets and allocates de like e in backward (ml-cross-entropy@48b5169 cce.py:130,
  cce_backward.py:354-355): no tokens x vocab tensor;
- axolotl integrations/liger/args.py:30-36@682a9cf7: every Liger switch defaults to None, so the LigerPlugin
  fuses the loss only with `liger_fused_linear_cross_entropy: true`;
- axolotl monkeypatch/accelerate/fsdp2.py:186-351@ca796fb5 (from v0.12.0): its fsdp2_prepare_model has no
  `model.to(torch.float32)`, where accelerate's does (9359a019 utils/fsdp_utils.py:700-704);
- accelerate accelerator.py no_sync: `getattr(model, "no_sync", ...)` up to 1.10 (1167-1170), which an FSDP2
  module lacks; `model.set_requires_gradient_sync(False)` from 1.11.0 (1164-1169).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import estimate_json_run, write_files

_QLORA = (
    "base_model: meta-llama/Llama-2-7b-hf\nadapter: qlora\nload_in_4bit: true\nlora_r: 16\n"
    "lora_target_linear: true\nsequence_len: 2048\nmicro_batch_size: 2\ngradient_accumulation_steps: 1\n"
    "bf16: true\ngradient_checkpointing: true\nflash_attention: true\noptimizer: adamw_torch_fused\n"
    "datasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n"
)
_CCE = "plugins:\n  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin\n"
_LIGER = (
    "plugins:\n  - axolotl.integrations.liger.LigerPlugin\nliger_rms_norm: true\nliger_glu_activation: true\n"
)
_FFT = (
    "base_model: Qwen/Qwen2.5-7B\nsequence_len: 2048\nmicro_batch_size: 1\ngradient_accumulation_steps: 2\n"
    "bf16: true\ngradient_checkpointing: true\nflash_attention: true\noptimizer: adamw_torch_fused\n"
    "datasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\nfsdp_config:\n"
    "  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  transformer_layer_cls_to_wrap: Qwen2DecoderLayer\n"
)
_LAUNCH = "#!/usr/bin/env bash\naxolotl train train.yaml\n"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], hw: str = "1xH100") -> dict:
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    return estimate_json_run(hw)


def _gib(run: dict, name: str) -> float:
    return next((b["gib"] for b in run["breakdown"] if b["name"] == name), 0.0)


def _logits_note(run: dict) -> str:
    return next(b["note"] for b in run["breakdown"] if b["name"] == "logits + loss")


def test_the_cut_cross_entropy_plugin_never_materialises_the_logits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _run(tmp_path / "a", monkeypatch, {"train.yaml": _QLORA})
    cce = _run(tmp_path / "b", monkeypatch, {"train.yaml": _QLORA + _CCE})
    # 2 x 2048 tokens x 32000 vocab: the standard loss holds ~1.5 GiB of fp32 logits, CCE ~ tokens x hidden
    assert _gib(plain, "logits + loss") > 1.0
    assert _gib(cce, "logits + loss") < 0.1 and "cut-cross-entropy" in _logits_note(cce)
    assert cce["memory"]["peak_gib"] < plain["memory"]["peak_gib"] - 1.0


@pytest.mark.parametrize(
    ("extra", "files"),
    [
        ("cut_cross_entropy: false\n", {}),  # the plugin listed, switched off
        ("", {"requirements.txt": "axolotl==0.8.1\n"}),  # before 0.9.0 the switch defaulted to off
    ],
)
def test_the_plugin_without_its_switch_keeps_the_standard_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, files: dict[str, str]
) -> None:
    run = _run(tmp_path, monkeypatch, {"train.yaml": _QLORA + _CCE + extra, **files})
    assert "cut-cross-entropy" not in _logits_note(run) and _gib(run, "logits + loss") > 1.0


def test_the_liger_plugin_fuses_the_loss_only_when_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    norms_only = _run(tmp_path / "a", monkeypatch, {"train.yaml": _QLORA + _LIGER})
    flce = _LIGER + "liger_fused_linear_cross_entropy: true\n"
    fused = _run(tmp_path / "b", monkeypatch, {"train.yaml": _QLORA + flce})
    assert _gib(norms_only, "logits + loss") > 1.0
    assert _gib(fused, "logits + loss") < 0.5


def _dtype(run: dict, what: str) -> str:
    return next(d["dtype"] for d in run["dtypes"] if d["what"] == what)


@pytest.mark.parametrize(
    ("version", "pin", "dtype"),
    [
        ("fsdp_version: 2\n", "", "bf16"),  # axolotl's own fsdp2_prepare_model: no upcast
        ("fsdp_version: 2\n", "axolotl==0.11.0\n", "fp32"),  # before 0.12.0: accelerate's, which upcasts
        ("fsdp_version: 1\n", "", "fp32"),  # FSDP1: accelerate's prepare_model upcasts
    ],
)
def test_axolotl_fsdp2_keeps_the_load_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, pin: str, dtype: str
) -> None:
    files = {"train.yaml": _FFT + version, "launch.sh": _LAUNCH}
    if pin:
        files["requirements.txt"] = pin
    run = _run(tmp_path, monkeypatch, files, "2xH100-PCIe")
    assert _dtype(run, "weights").startswith(dtype)
    # Qwen2.5-7B, 7.62B parameters, sharded over 2 GPUs
    assert _gib(run, "weights") == pytest.approx(7.62e9 * (2 if dtype == "bf16" else 4) / 2 / 2**30, rel=0.02)


@pytest.mark.parametrize(("accelerate", "kept"), [("1.10.0", False), ("1.11.0", True)])
def test_fsdp2_no_sync_keeps_unsharded_gradients_from_accelerate_1_11(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accelerate: str, kept: bool
) -> None:
    files = {
        "train.yaml": _FFT + "fsdp_version: 2\n",
        "launch.sh": _LAUNCH,
        "requirements.txt": f"accelerate=={accelerate}\n",
    }
    run = _run(tmp_path, monkeypatch, files, "2xH100-PCIe")
    buffers = _gib(run, "distributed buffers")
    # no_sync keeps every unsharded bf16 gradient between micro-batches: 7.62B x 2 B x (1 - 1/2) = 7.1 GiB
    assert (buffers > 7.0) is kept
    said = any("reduce-scattered every micro-batch" in a for a in run["assumptions"])
    assert said is not kept


@pytest.mark.parametrize(("pin", "bytes_per_weight"), [("", 2), ("axolotl==0.2.1\n", 4)])
def test_axolotl_before_0_3_kept_the_kbit_upcast_without_flash_attention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pin: str, bytes_per_weight: int
) -> None:
    cfg = _QLORA.replace("flash_attention: true\n", "")
    files = {"train.yaml": cfg, **({"requirements.txt": pin} if pin else {})}
    run = _run(tmp_path, monkeypatch, files)
    note = next(b["note"] for b in run["breakdown"] if b["name"] == "weights")
    assert f"unquantized x {bytes_per_weight} B" in note


@pytest.mark.parametrize(
    ("extra", "sharded"), [("", True), ("bnb_config_kwargs:\n  bnb_4bit_quant_storage: uint8\n", False)]
)
def test_axolotl_qlora_stores_4bit_weights_in_bf16_so_fsdp2_shards_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, sharded: bool
) -> None:
    # axolotl loaders/model.py:712-739@067b021c: BitsAndBytesConfig(..., bnb_4bit_quant_storage=
    # torch.bfloat16), updated by bnb_config_kwargs; accelerate's FSDP2 leaves uint8 Params4bit unsharded
    fsdp = "fsdp_version: 2\nfsdp_config:\n  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
    files = {"train.yaml": _QLORA + fsdp + extra, "launch.sh": _LAUNCH}
    run = _run(tmp_path, monkeypatch, files, "2xH100-PCIe")
    note = next(b["note"] for b in run["breakdown"] if b["name"] == "weights")
    assert ("not sharded" not in note) is sharded
