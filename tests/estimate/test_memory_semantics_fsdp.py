"""FSDP mixed precision computes in the param dtype (issue 21 section 2): accelerate keeps a full fine-tune's
FSDP shards in fp32 under bf16 mixed precision and gathers them in MixedPrecision.param_dtype (accelerate
1.16 utils/dataclasses.py:1981-2011), so the embedding output, the residual stream, the norms' outputs and
the lm_head input are bf16 - the activations of a bf16-stored run, not of an fp32 load under autocast."""

from __future__ import annotations

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
from advisor.estimate.memory import terms
from advisor.estimate.memory.peak import phase_terms


def _activations(s: TrainingSetup) -> float:
    """Saved activations at backward start plus the recomputed layer (its saved tensors)."""
    pt = phase_terms(s)
    saved = sum(t.bytes for t in pt.phases["backward start"] if t.name == "activations")
    act = terms.activations(pt.resolved)
    return saved + act.last_layer + act.work.bytes


@pytest.mark.parametrize("checkpointing", [False, True])
def test_fsdp_fp32_shards_save_bf16_activations(checkpointing: bool) -> None:
    s = TrainingSetup(
        model=resolve_model("meta-llama/Meta-Llama-3-8B").count(),
        micro_batch=1,
        seq_len=2048,
        storage_dtype="fp32",
        autocast="bf16",
        optimizer="adamw_torch_fused",
        gradient_checkpointing=checkpointing,
        attn_implementation="sdpa",
        strategy="fsdp",
        world_size=8,
        metric="allocated",
    )
    bf16_store = replace(s, storage_dtype="bf16")
    assert _activations(s) == pytest.approx(_activations(bf16_store))
    # on one GPU the fp32 weights are the compute weights: an fp32 residual stream under autocast
    single = replace(s, strategy="none", world_size=1)
    assert _activations(single) > _activations(replace(single, storage_dtype="bf16")) * 1.05


# ---- FSDP1 units mixing frozen and LoRA weights ---------------------------------------------------------
from pathlib import Path  # noqa: E402

from tests.conftest import estimate_json_run, write_files  # noqa: E402

# `accelerate config`'s FSDP answers, in its form
_ACCELERATE = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_cpu_ram_efficient_loading: true
  fsdp_offload_params: false
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_sync_module_states: true
  fsdp_use_orig_params: true
  fsdp_version: 1
machine_rank: 0
mixed_precision: bf16
num_machines: 1
num_processes: 4
"""
_RECIPE = (
    "model_name_or_path: meta-llama/Llama-2-7b-hf\ntorch_dtype: bfloat16\nbf16: true\nuse_peft: true\n"
    "lora_r: 16\nper_device_train_batch_size: 1\nmax_length: 1024\ngradient_checkpointing: true\n"
    "attn_implementation: sdpa\noptim: adamw_torch_fused\ngradient_accumulation_steps: {ga}\n"
)
# a plain accelerate loop (accelerate's nlp_example form)
_OWN_LOOP = """import torch
from accelerate import Accelerator
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def training_function(config):
    accelerator = Accelerator(gradient_accumulation_steps=config["ga"])
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for step, batch in enumerate(train_dataloader):
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
"""
_TRAINER = """from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", torch_dtype="bfloat16")
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, recipe: str) -> dict:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --config_file fsdp.yaml train.py sft.yaml\n",
            "fsdp.yaml": _ACCELERATE,
            "sft.yaml": recipe,
            "train.py": script,
        },
    )
    monkeypatch.chdir(tmp_path)
    return estimate_json_run("4xH100-NVL")


def _grads(run: dict) -> float:
    """The gradients row of the peak phase (none when the peak is backward start without accumulation)."""
    return sum(b["gib"] for b in run["breakdown"] if b["name"] == "gradients")


def test_a_plain_accelerate_loop_pays_full_size_flat_gradients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = _run(tmp_path / "own", monkeypatch, _OWN_LOOP, _RECIPE.format(ga=1))
    trainer = _run(tmp_path / "trainer", monkeypatch, _TRAINER, _RECIPE.format(ga=1))
    assert own["setup"]["strategy"] == trainer["setup"]["strategy"] == "fsdp"
    pc = resolve_model("meta-llama/Llama-2-7b-hf").count()
    flat = pc.per_layer * pc.layers * 2 / 4 / 2**30  # the decoder layers' bf16 flat gradients, sharded /4
    assert _grads(own) == pytest.approx(flat, abs=0.01)
    assert _grads(trainer) < 0.05  # the adapters' gradients only
    assert own["memory"]["allocated"]["gib"] > trainer["memory"]["allocated"]["gib"] + flat / 2
    assert any("FlatParameter" in a for a in own["assumptions"])
    # under no_sync accumulation each process holds them unsharded between micro-batches
    own_ga = _run(tmp_path / "own_ga", monkeypatch, _OWN_LOOP, _RECIPE.format(ga=4))
    live = next(b["gib"] for b in own_ga["breakdown"] if b["name"] == "distributed buffers")
    base = next(b["gib"] for b in own["breakdown"] if b["name"] == "distributed buffers")
    assert live - base == pytest.approx(pc.per_layer * pc.layers * 2 * 0.75 / 2**30, abs=0.02)


def test_sync_each_batch_turns_no_sync_off() -> None:
    s = TrainingSetup(
        model=resolve_model("meta-llama/Llama-2-7b-hf").count(),
        micro_batch=1,
        seq_len=1024,
        precision="bf16",
        amp=False,
        optimizer="adamw_torch_fused",
        gradient_checkpointing=True,
        attn_implementation="sdpa",
        strategy="fsdp",
        world_size=4,
        grad_accum=4,
        metric="allocated",
    )
    no_sync = estimate_memory(s).peak_allocated_gib
    synced = estimate_memory(replace(s, sync_each_batch=True)).peak_allocated_gib
    assert no_sync - synced == pytest.approx(s.model.total * 2 * 0.75 / 2**30, rel=0.01)


def test_the_trainers_sync_each_batch_is_read_from_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TrainingArguments(accelerator_config={"gradient_accumulation_kwargs": {"sync_each_batch": True}})
    reaches accelerate's GradientAccumulationPlugin (accelerate 1.16 accelerator.py:1245-1257)."""
    recipe = _RECIPE.format(ga=4).replace("use_peft: true\nlora_r: 16\n", "")
    synced = recipe + "accelerator_config:\n  gradient_accumulation_kwargs:\n    sync_each_batch: true\n"
    a = _run(tmp_path / "a", monkeypatch, _TRAINER, recipe)
    b = _run(tmp_path / "b", monkeypatch, _TRAINER, synced)
    pc = resolve_model("meta-llama/Llama-2-7b-hf").count()
    gap = a["memory"]["allocated"]["gib"] - b["memory"]["allocated"]["gib"]
    assert gap == pytest.approx(pc.total * 2 * 0.75 / 2**30, abs=0.05)
