"""The three dtype facts (storage, compute, optimizer state), each as its consumer resolves it.

Every rule below cites the upstream line it follows; the estimate is checked in the bytes a user would
see in the breakdown (weights, gradients, optimizer states), never in message wording.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.estimate import TrainingSetup, estimate_memory, lora_params, resolve_model, resolve_setup
from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings
from tests.conftest import write_files

GIB = 2**30
P8B = 8_030_261_248  # Llama-3-8B (memory-model.md section 8.2)
ONE = "#!/bin/bash\naccelerate launch --num_processes 1 train.py sft.yaml\n"
PLAIN = "print('train')\n"


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _estimates(tmp_path: Path, files: dict[str, str], hardware: str = "1xH100"):
    write_files(tmp_path, files)
    options = CheckOptions(hardware=hardware)
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    assert len(plans) == 1, [p.name for p in plans]
    return run_names(plans[0])["estimates"]


def _items(est) -> dict[str, float]:
    return {it["name"]: it["gib"] for it in est.entry("items").value}


def _recipe(**keys: object) -> str:
    base = {
        "model_name_or_path": "meta-llama/Meta-Llama-3-8B",
        "per_device_train_batch_size": 1,
        "max_length": 1024,
    }
    base.update(keys)
    return "".join(f"{k}: {v}\n" for k, v in base.items())


def _pc(name: str = "meta-llama/Meta-Llama-3-8B"):
    return resolve_model(name).count()


# ---- storage dtype -------------------------------------------------------------------------------
def test_bf16_load_without_autocast_keeps_every_state_in_bf16(tmp_path: Path) -> None:
    # the issue's example: torch_dtype bfloat16 and bf16: false. TrainingArguments' mixed_precision stays
    # "no" (transformers training_args.py:1614-1618): no autocast; weights, grads and torch AdamW states
    # (torch/optim/adam.py:178-182 zeros_like(param)) are all 2-byte
    est = _estimates(
        tmp_path,
        {"launch.sh": ONE, "train.py": PLAIN, "sft.yaml": _recipe(torch_dtype="bfloat16", bf16="false")},
    )
    items = _items(est)
    assert items["weights"] == pytest.approx(2 * P8B / GIB, abs=0.01)
    assert items["optimizer states"] == pytest.approx(4 * P8B / GIB, abs=0.01)
    assert items["gradients"] == pytest.approx(2 * P8B / GIB, abs=0.01)
    assert est.dtypes["compute"]["dtype"] == "bf16, no autocast"
    assert est.dtypes["storage"]["source"].startswith("sft.yaml:4")  # where torch_dtype is written


def test_trl_loads_in_float32_when_no_dtype_is_written(tmp_path: Path) -> None:
    # TRL's ModelConfig.dtype defaults to "float32" (trl 1.16 trainer/model_config.py:89-90): bf16: true is
    # then autocast over fp32 weights, 4-byte weights and 8-byte AdamW states per parameter
    est = _estimates(tmp_path, {"sft.yaml": _recipe(bf16="true")})
    items = _items(est)
    assert items["weights"] == pytest.approx(4 * P8B / GIB, abs=0.01)
    assert items["optimizer states"] == pytest.approx(8 * P8B / GIB, abs=0.01)
    assert est.dtypes["storage"]["dtype"] == "fp32" and "trl" in est.dtypes["storage"]["source"]


def test_the_scripts_from_pretrained_dtype_is_the_storage(tmp_path: Path) -> None:
    script = (
        "import torch\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('m', torch_dtype=torch.bfloat16)\n"
    )
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": script, "sft.yaml": _recipe(bf16="true")})
    assert _items(est)["weights"] == pytest.approx(2 * P8B / GIB, abs=0.01)
    assert est.dtypes["storage"]["source"].startswith("train.py:3")


def test_from_pretrained_without_dtype_loads_the_checkpoints_dtype(tmp_path: Path) -> None:
    # transformers 5: dtype defaults to "auto" (modeling_utils.py:4186-4187) = config.json's dtype; the
    # catalog's Llama-2-7b-hf config says float16
    script = "from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained('m')\n"
    sft = _recipe(model_name_or_path="meta-llama/Llama-2-7b-hf", fp16="true")
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": script, "sft.yaml": sft})
    assert est.dtypes["storage"]["dtype"] == "fp16"
    assert _items(est)["weights"] == pytest.approx(2 * 6_738_415_616 / GIB, abs=0.01)


def test_model_init_kwargs_dtype_wins_over_the_top_level_one(tmp_path: Path) -> None:
    # trl scripts/sft.py:76-84: model_init_kwargs updates the ModelConfig's dtype
    sft = _recipe(dtype="float32", bf16="true") + "model_init_kwargs:\n  dtype: bfloat16\n"
    est = _estimates(tmp_path, {"sft.yaml": sft})
    assert est.dtypes["storage"]["dtype"] == "bf16"


def test_llamafactory_upcasts_trainable_parameters_to_fp32(tmp_path: Path) -> None:
    # llamafactory 0.9.5 model/adapter.py:313-325: trainable params to fp32 unless pure_bf16 / ZeRO-3
    lf = "model_name_or_path: meta-llama/Meta-Llama-3-8B\nstage: sft\nfinetuning_type: full\n"
    lf += "cutoff_len: 1024\n"
    amp = _estimates(tmp_path, {"sft.yaml": lf + "bf16: true\n"})
    assert _items(amp)["weights"] == pytest.approx(4 * P8B / GIB, abs=0.01)
    pure = _estimates(tmp_path, {"sft.yaml": lf + "bf16: true\npure_bf16: true\n"})
    assert _items(pure)["weights"] == pytest.approx(2 * P8B / GIB, abs=0.01)


# ---- DeepSpeed: module cast, fp32 master, no autocast ----------------------------------------------
def test_deepspeed_casts_an_fp32_load_and_keeps_fp32_master_only_of_trainable_params(tmp_path: Path) -> None:
    # deepspeed 0.19.8 runtime/engine.py:2080-2088 casts every parameter to bf16;
    # runtime/bf16_optimizer.py:182 keeps fp32 partitions of the trainable groups; accelerate 1.15
    # accelerator.py:566-600 enables native AMP only outside DeepSpeed: no autocast weight copies
    acc = "distributed_type: DEEPSPEED\nnum_processes: 8\nmixed_precision: bf16\n"
    acc += "deepspeed_config:\n  zero_stage: 3\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = _recipe(
        model_name_or_path="meta-llama/Meta-Llama-3-70B", dtype="float32", use_peft="true", bf16="true"
    )
    est = _estimates(
        tmp_path, {"launch.sh": launch, "acc.yaml": acc, "train.py": PLAIN, "sft.yaml": sft + "lora_r: 16\n"}
    )
    items = _items(est)
    p70 = 70_553_706_496
    assert items["weights"] == pytest.approx(2 * (p70 + est.trainable_params) / 8 / GIB, rel=0.01)
    assert "autocast weight copies" not in items
    assert est.dtypes["optimizer"]["dtype"].startswith("fp32 master")
    assert items["optimizer states"] == pytest.approx(12 * est.trainable_params / 8 / GIB, abs=0.01)


def test_deepspeed_module_cast_in_the_estimator() -> None:
    pc = _pc()
    s = TrainingSetup(
        model=pc, precision="bf16", amp=True, strategy="zero2", world_size=4, metric="allocated"
    )
    d = resolve_setup(s).dtypes
    assert (d.storage, d.autocast, d.master) == ("bf16", None, True)
    items = {it.name: it.gib for it in estimate_memory(s).items}
    assert items["weights"] == pytest.approx(2 * P8B / GIB)


# ---- adapters (trainable dtype) --------------------------------------------------------------------
def test_peft_upcasts_adapters_to_fp32() -> None:
    # peft 0.21.2 tuners/tuners_utils.py:2722: fp16/bf16 adapter weights become fp32 (autocast_adapter_dtype)
    pc = _pc()
    s = TrainingSetup(
        model=pc, method="lora", lora_r=16, lora_targets=["all-linear"], precision="bf16", amp=False
    )
    r = resolve_setup(s)
    assert r.dtypes.trainable == "fp32" and r.ab == 4
    kept = resolve_setup(
        TrainingSetup(model=pc, method="lora", lora_r=16, precision="bf16", trainable_dtype="bf16")
    )
    assert kept.ab == 2


def test_autocast_adapter_dtype_false_keeps_adapters_in_the_base_dtype(tmp_path: Path) -> None:
    sft = _recipe(dtype="bfloat16", bf16="true", use_peft="true", lora_r=16, autocast_adapter_dtype="false")
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": PLAIN, "sft.yaml": sft})
    assert est.dtypes["trainable"]["dtype"] == "bf16"


def test_trl_casts_qlora_adapters_to_bf16(tmp_path: Path) -> None:
    # trl 1.16 trainer/sft_trainer.py:908-911: adapters of a quantized model are cast to bf16
    script = "from trl import SFTTrainer\nprint('train')\n"
    sft = _recipe(dtype="bfloat16", bf16="true", use_peft="true", load_in_4bit="true")
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": script, "sft.yaml": sft})
    assert est.method == "qlora" and est.dtypes["trainable"]["dtype"] == "bf16"
    # a script that does not use TRL keeps PEFT's fp32 adapters
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": PLAIN, "sft.yaml": sft})
    assert est.dtypes["trainable"]["dtype"] == "fp32"


# ---- quantized bases ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("script", "unquantized_bytes"),
    [
        (PLAIN, 2),  # as loaded (bf16)
        # peft utils/other.py prepare_model_for_kbit_training casts every non-quantized parameter to fp32
        ("from peft import prepare_model_for_kbit_training\nm = prepare_model_for_kbit_training(m)\n", 4),
    ],
)
def test_8bit_base_is_modelled_at_one_byte_per_quantized_weight(
    tmp_path: Path, script: str, unquantized_bytes: int
) -> None:
    sft = _recipe(dtype="bfloat16", bf16="true", use_peft="true", load_in_8bit="true", lora_r=8)
    sft += "lora_target_modules: q_proj\n"
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": script, "sft.yaml": sft})
    assert est.known is True and est.method == "qlora"
    pc = _pc()
    quant = pc.layer_linear_weights
    adapters = lora_params(pc, 8, ["q_proj"]) * 4  # PEFT's fp32 adapters
    expected = quant * (1 + 4 / 4096) + (pc.total - quant) * unquantized_bytes + adapters
    assert _items(est)["weights"] == pytest.approx(expected / GIB, abs=0.01)


def test_trl_sft_does_not_upcast_a_quantized_models_other_weights(tmp_path: Path) -> None:
    # trl 1.16 sft_trainer.py:870 wraps the quantized model with get_peft_model only: embeddings and lm_head
    # stay in the load dtype; adapters are cast to bf16 (sft_trainer.py:908-911)
    sft = _recipe(dtype="bfloat16", bf16="true", use_peft="true", load_in_4bit="true", lora_r=8)
    sft += "lora_target_modules: q_proj\n"
    est = _estimates(tmp_path, {"sft.yaml": sft})
    pc = _pc()
    quant = pc.layer_linear_weights
    # no double quantization: TRL's use_bnb_nested_quant defaults to False (trl trainer/model_config.py)
    nf4 = 0.5 + 4 / 64
    expected = quant * nf4 + (pc.total - quant) * 2 + lora_params(pc, 8, ["q_proj"]) * 2
    assert _items(est)["weights"] == pytest.approx(expected / GIB, abs=0.01)


def test_quantization_config_in_the_script_makes_it_qlora(tmp_path: Path) -> None:
    script = (
        "import torch\nfrom transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
        "bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_storage=torch.bfloat16)\n"
        "model = AutoModelForCausalLM.from_pretrained('m', quantization_config=bnb, dtype=torch.bfloat16)\n"
    )
    sft = _recipe(bf16="true", use_peft="true")
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": script, "sft.yaml": sft})
    assert est.method == "qlora"
    assert est.dtypes["storage"]["source"].startswith("train.py:4")


# ---- compute dtype -------------------------------------------------------------------------------
def test_accelerate_mixed_precision_is_the_autocast_when_training_arguments_say_nothing(
    tmp_path: Path,
) -> None:
    acc = "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = _recipe(torch_dtype="float32")
    est = _estimates(
        tmp_path, {"launch.sh": launch, "acc.yaml": acc, "train.py": PLAIN, "sft.yaml": sft}, "2xH100-PCIe"
    )
    assert est.dtypes["compute"]["dtype"] == "autocast bf16"
    assert est.dtypes["compute"]["source"].startswith("acc.yaml:3")


def test_fsdp_with_mixed_precision_no_trains_in_the_load_dtype(tmp_path: Path) -> None:
    acc = "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: 'no'\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = _recipe(torch_dtype="bfloat16")
    est = _estimates(
        tmp_path, {"launch.sh": launch, "acc.yaml": acc, "train.py": PLAIN, "sft.yaml": sft}, "2xH100-PCIe"
    )
    items = _items(est)
    assert items["weights"] == pytest.approx(2 * P8B / 2 / GIB, abs=0.01)
    assert items["optimizer states"] == pytest.approx(4 * P8B / 2 / GIB, abs=0.01)


def test_activations_follow_the_compute_dtype() -> None:
    pc = _pc("Qwen/Qwen2.5-0.5B")
    common = dict(
        model=pc, micro_batch=8, seq_len=2048, gradient_checkpointing=False, optimizer="adamw_torch_fused"
    )
    pure = estimate_memory(TrainingSetup(**common, storage_dtype="bf16", autocast="off"))
    fp32 = estimate_memory(TrainingSetup(**common, storage_dtype="fp32", autocast="off"))
    act = {
        e: {it.name: it.gib for it in est.items}.get("activations")
        for e, est in (("bf16", pure), ("fp32", fp32))
    }
    assert act["fp32"] == pytest.approx(2 * act["bf16"], rel=0.2)


# ---- optimizer state dtype ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("optimizer", "bytes_per_param"),
    [("adamw_torch_fused", 4), ("adamw_8bit", 2), ("paged_adamw_8bit", 0), ("sgd", 0)],
)
def test_optimizer_state_bytes_follow_the_optimizer(optimizer: str, bytes_per_param: float) -> None:
    pc = _pc()
    s = TrainingSetup(model=pc, storage_dtype="bf16", autocast="off", optimizer=optimizer, metric="allocated")
    items = {it.name: it.gib for it in estimate_memory(s).items}
    assert items.get("optimizer states", 0.0) == pytest.approx(bytes_per_param * P8B / GIB, abs=0.01)


def test_estimate_json_lists_the_dtypes_and_their_sources(tmp_path: Path) -> None:
    from advisor.pipeline.estimate_run import build_run_reports

    write_files(tmp_path, {"sft.yaml": _recipe(torch_dtype="bfloat16", bf16="true")})
    [rep] = build_run_reports([tmp_path], "1xH100", False)
    rows = {d["what"]: d for d in rep["dtypes"]}
    assert set(rows) == {"weights", "trainable", "compute", "optimizer"}
    assert rows["weights"]["dtype"] == "bf16" and rows["weights"]["source"].startswith("sft.yaml:4")


def test_fsdp_mixed_precision_keeps_fp32_trainable_shards(tmp_path: Path) -> None:
    # accelerate 1.15 utils/fsdp_utils.py:814-820 (FSDP2) and accelerator.py:1997-2038 (FSDP1) upcast the
    # trainable parameters of a 16-bit load to fp32 when mixed precision is on; MixedPrecision gathers them in
    # bf16, so autocast keeps no weight copies of its own
    acc = "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: bf16\nfsdp_config:\n  fsdp_version: 2\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    files = {
        "launch.sh": launch,
        "acc.yaml": acc,
        "train.py": PLAIN,
        "sft.yaml": _recipe(torch_dtype="bfloat16"),
    }
    est = _estimates(tmp_path, files, "2xH100-PCIe")
    items = _items(est)
    assert est.dtypes["storage"]["dtype"] == "fp32"
    assert items["weights"] == pytest.approx(4 * P8B / 2 / GIB, abs=0.01)
    assert items["optimizer states"] == pytest.approx(8 * P8B / 2 / GIB, abs=0.01)
    assert "autocast weight copies" not in items
    # LoRA: only the (already fp32) adapters are trainable; the frozen base stays as loaded
    lora = dict(files, **{"sft.yaml": _recipe(torch_dtype="bfloat16", use_peft="true", lora_r=8)})
    est = _estimates(tmp_path, lora, "2xH100-PCIe")
    assert est.dtypes["storage"]["dtype"] == "bf16"


@pytest.mark.parametrize(("dtype", "bytes_per_param"), [("float32", 4), ("bfloat16", 2)])
def test_the_dpo_reference_model_is_loaded_like_the_policy(
    tmp_path: Path, dtype: str, bytes_per_param: int
) -> None:
    # TRL builds the reference model from the same model_init_kwargs as the policy (trl 1.16
    # trainer/dpo_trainer.py:916-927)
    sft = _recipe(model_name_or_path="Qwen/Qwen2.5-0.5B", dtype=dtype, bf16="true", beta=0.1)
    est = _estimates(tmp_path, {"launch.sh": ONE, "train.py": PLAIN, "sft.yaml": sft})
    ref = _items(est)["reference model"]
    assert ref == pytest.approx(bytes_per_param * 494_032_768 / GIB, abs=0.01)


def test_a_null_dtype_is_from_pretrained_auto(tmp_path: Path) -> None:
    # alignment-handbook recipes write `torch_dtype: null`: TRL passes None on (trl trainer/utils.py:1333)
    # and transformers 5 turns it into "auto" (modeling_utils.py:4186-4187), the checkpoint's bf16
    est = _estimates(tmp_path, {"sft.yaml": _recipe(torch_dtype="null", bf16="true")})
    assert est.dtypes["storage"]["dtype"] == "bf16"
    assert _items(est)["weights"] == pytest.approx(2 * P8B / GIB, abs=0.01)


def test_a_launch_script_with_an_unknown_process_count_gets_a_reason(tmp_path: Path) -> None:
    # the accelerate config it names is missing: it may shard, so no per-process guess
    launch = "#!/bin/bash\naccelerate launch --config_file missing.yaml train.py sft.yaml\n"
    files = {"launch.sh": launch, "train.py": PLAIN, "sft.yaml": _recipe(bf16="true")}
    est = _estimates(tmp_path, files)
    assert est.known is False and "world size unknown" in est.reason


def test_deepspeeds_alternatives_are_judged_with_the_weights_as_loaded(tmp_path: Path) -> None:
    # under ZeRO the engine casts the module; plain DDP (GA402/GA403's alternative) has no engine, so the
    # frozen base of a LoRA run stays fp32 there when loaded in fp32 (a full fine-tune is judged at
    # DeepSpeed's fp32-master numerics either way: estimates.pessimistic)
    acc = "distributed_type: DEEPSPEED\nnum_processes: 4\nmixed_precision: bf16\n"
    acc += "deepspeed_config:\n  zero_stage: 3\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    peaks = {}
    for dtype in ("float32", "bfloat16"):
        sft = _recipe(model_name_or_path="Qwen/Qwen2.5-1.5B", dtype=dtype, bf16="true", use_peft="true")
        files = {"launch.sh": launch, "acc.yaml": acc, "train.py": PLAIN, "sft.yaml": sft}
        est = _estimates(tmp_path, files, "4xH100-NVL")
        assert est.dtypes["storage"]["dtype"] == "bf16"  # the engine's cast, whatever the load
        peaks[dtype] = (est.peak_vram_gib, est.ddp_peak)
    assert peaks["float32"][0] == pytest.approx(peaks["bfloat16"][0], abs=0.05)
    assert peaks["float32"][1] > peaks["bfloat16"][1] + 2 * 1.5e9 / GIB


def test_zero_stage_0_keeps_deepspeeds_fp32_master(tmp_path: Path) -> None:
    # stage 0 + bf16: DeepSpeed wraps the optimizer in FP16_Optimizer with fp32 masters (deepspeed 0.19.8
    # runtime/engine.py:2321, 2360-2362); the module is cast to bf16 and runs without autocast
    ds = '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 0}}'
    acc = (
        "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    )
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = _recipe(model_name_or_path="Qwen/Qwen2.5-0.5B", dtype="float32", bf16="true")
    est = _estimates(
        tmp_path, {"launch.sh": launch, "acc.yaml": acc, "ds.json": ds, "train.py": PLAIN, "sft.yaml": sft}
    )
    assert est.strategy == "ddp"
    items = _items(est)
    p = 494_032_768
    assert items["weights"] == pytest.approx(2 * p / GIB, abs=0.01)
    assert items["optimizer states"] == pytest.approx(12 * p / GIB, abs=0.01)
    assert est.dtypes["optimizer"]["dtype"].startswith("fp32 master")


@pytest.mark.parametrize(
    ("storage_key", "sharded"), [("", False), ("bnb_4bit_quant_storage: bfloat16\n", True)]
)
def test_fsdp2_shards_4bit_weights_only_in_a_float_quant_storage(
    tmp_path: Path, storage_key: str, sharded: bool
) -> None:
    # accelerate 1.15 utils/fsdp_utils.py:789-811: uint8 Params4bit are excluded from FSDP2's sharding
    acc = "distributed_type: FSDP\nnum_processes: 2\nmixed_precision: bf16\nfsdp_config:\n  fsdp_version: 2\n"
    launch = "#!/bin/bash\naccelerate launch --config_file acc.yaml train.py sft.yaml\n"
    sft = _recipe(dtype="bfloat16", bf16="true", use_peft="true", load_in_4bit="true") + storage_key
    est = _estimates(
        tmp_path, {"launch.sh": launch, "acc.yaml": acc, "train.py": PLAIN, "sft.yaml": sft}, "2xH100-PCIe"
    )
    pc = _pc()
    nf4 = pc.layer_linear_weights * (0.5 + 1 / 64 + 4 / (64 * 256)) / GIB
    weights = _items(est)["weights"]
    assert (weights > nf4) is not sharded
    assert weights < nf4 / 2 + 2 if sharded else weights > nf4
