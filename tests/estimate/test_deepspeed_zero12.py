"""DeepSpeed ZeRO-1/2 through the HF Trainer: the gradient buffers (advisor/estimate/memory/zero12.py: the
second contiguous partition under gradient accumulation, the reduction bucket on one GPU, the step's
flattened copy) and the optimizer its config's block builds (advisor/facts/deepspeed_optimizer.py), read
from a hand-written copy of the form Qwen's finetune scripts use (HF Trainer + `--deepspeed`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
from advisor.estimate.memory.peak import phase_terms
from tests.conftest import write_files

GIB = 2**30
MODEL = "Qwen/Qwen2.5-1.5B"


def _ds(optimizer: dict[str, object] | None = None, **zero: object) -> str:
    return json.dumps(
        {
            "bf16": {"enabled": "auto"},
            "optimizer": optimizer or {"type": "AdamW", "params": {"lr": "auto"}},
            "zero_optimization": {"stage": 2, **zero},
            "gradient_accumulation_steps": "auto",
            "train_micro_batch_size_per_gpu": "auto",
        }
    )


def _estimate_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ds: str, accumulation: int, optim: str = "adamw_torch"
) -> str:
    launch = (
        "#!/usr/bin/env bash\ntorchrun --nproc_per_node 1 finetune.py \\\n"
        f"    --model_name_or_path {MODEL} --bf16 True --per_device_train_batch_size 1 \\\n"
        f"    --gradient_accumulation_steps {accumulation} --model_max_length 4096 \\\n"
        f"    --gradient_checkpointing True --output_dir out --optim {optim} --deepspeed ds.json\n"
    )
    hw = "name: 1xA100\ngpus: {model: A100-SXM-80GB, count: 1}\n"
    write_files(tmp_path, {"launch.sh": launch, "ds.json": ds, "hw.yaml": hw, "finetune.py": "x = 1\n"})
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["estimate", "."])
    assert "Traceback" not in result.output
    return result.output


def _row(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line[len(name) :].split()[0])
    return None


def test_accumulation_holds_a_second_partition_and_one_gpu_maps_the_buckets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _estimate_text(tmp_path, monkeypatch, _ds(overlap_comm=True, reduce_bucket_size=2e8), 8)
    n = resolve_model(MODEL).count().total
    assert "ZeRO-2" in text
    # bf16 model, bf16 gradient accumulation (DeepSpeed's default with ZeRO): 2 bytes per parameter
    assert _row(text, "second gradient partition") == pytest.approx(2 * n / GIB, abs=0.01)
    # overlap_comm: two buffers of reduce_bucket_size bf16 elements
    assert _row(text, "ZeRO reduction bucket") == pytest.approx(2 * 2e8 * 2 / GIB, abs=0.01)


def _backward_terms(**kw: object) -> dict[str, float]:
    pt = phase_terms(_setup(strategy="zero2", world_size=1, **kw))
    return {tm.name: tm.bytes for tm in pt.phases["backward start"]}


def test_without_accumulation_or_contiguous_gradients_there_is_no_second_partition() -> None:
    one = _backward_terms(grad_accum=1)
    assert one["second gradient partition"] == 0
    # overlap_comm unset at stage 2: DeepSpeed's validator leaves it off, one bucket of the 5e8 default
    assert one["ZeRO reduction bucket"] == pytest.approx(5e8 * 2)
    off = _backward_terms(grad_accum=8, ds_contiguous_gradients=False)
    assert "second gradient partition" not in off and "ZeRO reduction bucket" not in off
    offload = _backward_terms(grad_accum=8, offload_optimizer="cpu")
    assert "second gradient partition" not in offload


def _setup(**kw: object) -> TrainingSetup:
    fields: dict[str, object] = dict(
        micro_batch=1,
        seq_len=512,
        precision="bf16",
        amp=False,
        optimizer="adamw_torch",
        gradient_checkpointing=True,
        attn_implementation="sdpa",
        metric="allocated",
    )
    fields.update(kw)
    return TrainingSetup(model=resolve_model(MODEL).count(), **fields)


def test_the_step_converts_a_flattened_copy_beside_the_fp32_partition() -> None:
    n = resolve_model(MODEL).count().total
    z2 = estimate_memory(_setup(strategy="zero2", world_size=1))
    items = {it.name: it.gib for it in z2.items}
    assert z2.phase == "optimizer step"
    # the fp32 gradient partition (4 B) and the 16-bit flat copy it is converted from (2 B)
    assert items["optimizer-step temporaries"] == pytest.approx(6 * n / GIB, rel=0.01)
    # ZeRO-3 is a different optimizer: no flat copy of this kind
    z3 = estimate_memory(_setup(strategy="zero3", world_size=1))
    assert "second gradient partition" not in {it.name for it in z3.items}
    # partitioned across 4 processes, the copy is a quarter
    z2x4 = {it.name: it.gib for it in estimate_memory(_setup(strategy="zero2", world_size=4)).items}
    assert z2x4["optimizer-step temporaries"] == pytest.approx(6 * n / 4 / GIB, rel=0.01)


def test_the_config_optimizer_block_replaces_the_trainer_optim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = resolve_model(MODEL).count().total
    # the Trainer hands DeepSpeed a DummyOptim: FusedAdam's fp32 states on the fp32 master, not 8-bit ones
    text = _estimate_text(tmp_path / "block", monkeypatch, _ds(), 8, optim="adamw_bnb_8bit")
    assert "DeepSpeed FusedAdam" in text
    assert "8-bit AdamW (optim=adamw_bnb_8bit and no optimizer block in the DeepSpeed config)" in text
    assert _row(text, "optimizer states") == pytest.approx(12 * n / GIB, rel=0.01)
    torch_adam = {"type": "AdamW", "params": {"lr": "auto", "torch_adam": True}}
    text = _estimate_text(tmp_path / "torch", monkeypatch, _ds(torch_adam), 8)
    assert "torch AdamW (foreach)" in text
    no_block = json.loads(_ds())
    del no_block["optimizer"]
    text = _estimate_text(tmp_path / "none", monkeypatch, json.dumps(no_block), 8, optim="adamw_bnb_8bit")
    assert "bitsandbytes AdamW 8-bit" in text


def test_lion_and_lamb_blocks_keep_their_own_states(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = resolve_model(MODEL).count().total
    lion = _estimate_text(tmp_path / "lion", monkeypatch, _ds({"type": "Lion"}), 8)
    # fp32 master (4 B) + exp_avg on it (4 B)
    assert "DeepSpeed FusedLion" in lion and _row(lion, "optimizer states") == pytest.approx(
        8 * n / GIB, rel=0.01
    )
    lamb = _estimate_text(tmp_path / "lamb", monkeypatch, _ds({"type": "LAMB"}), 8)
    assert "DeepSpeed FusedLamb" in lamb and _row(lamb, "optimizer states") == pytest.approx(
        12 * n / GIB, rel=0.01
    )
