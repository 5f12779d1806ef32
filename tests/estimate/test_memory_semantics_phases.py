"""Phase accounting under gradient checkpointing (issue 21 section 2): the loop decides whether the logits
outlive the loss backward.

HF Trainer's compute_loss binds `outputs = model(**inputs)` and returns the loss only (transformers 5.24
trainer.py:2172/2217; 4.44 trainer.py:3363/3388), torchtune's recipes `del logits` before backward: the loss
backward frees the logits/loss buffers before the last checkpointed layer is recomputed, so the
backward-start peak holds the larger of the two. A loop of its own that keeps `output` alive (Answer.AI
fsdp_qlora train.py: `output = model(...)`, `loss = output.loss`, `loss.backward()`, `optimizer.step()`,
`output = None`) holds `output.logits` beside the layer's working set and through the optimizer step.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
from advisor.estimate.memory import terms
from advisor.estimate.memory.peak import phase_terms
from tests.conftest import estimate_json_run, write_files
from tests.estimate.setups import checkpointed_full_ft

GIB = 2**30


def _setup(**kw: object) -> TrainingSetup:
    fields: dict[str, object] = {"micro_batch": 1, "seq_len": 2048, **kw}
    return checkpointed_full_ft("mistralai/Mistral-7B-v0.1", **fields)  # type: ignore[arg-type]


def _bytes(ts: list, name: str) -> float:
    return sum(t.bytes for t in ts if t.name == name)


def _layer(s: TrainingSetup) -> float:
    """The recomputed layer's saved tensors + its backward temporaries (no quantized Linears here)."""
    act = terms.activations(phase_terms(s).resolved)
    return act.last_layer + act.work.bytes


def test_dropped_outputs_give_the_larger_of_logits_and_the_recomputed_layer() -> None:
    s = _setup()
    pt = phase_terms(s)
    bwd = pt.phases["backward start"]
    saved, logits = _bytes(bwd, "activations"), _bytes(bwd, "logits + loss")
    layer = _layer(s)
    assert layer > 0 and logits > 0
    est = estimate_memory(s)
    backward = est.phases_gib["backward start (activations + logits)"]
    assert backward * GIB == pytest.approx(saved + max(logits, layer))  # not saved + logits + layer


def test_a_loop_that_keeps_outputs_holds_the_logits_through_backward_and_the_step() -> None:
    drop = estimate_memory(_setup())
    keep = estimate_memory(_setup(kept_logits_bytes=4))
    kept = 4 * 2048 * 32000 / GIB
    for phase in ("end of backward (all gradients)", "optimizer step"):
        assert keep.phases_gib[phase] - drop.phases_gib[phase] == pytest.approx(kept)
    pt = phase_terms(_setup(kept_logits_bytes=4))
    bwd = pt.phases["backward start"]
    saved, logits = _bytes(bwd, "activations"), _bytes(bwd, "logits + loss")
    layer = _layer(_setup(kept_logits_bytes=4))
    assert keep.phases_gib["backward start (activations + logits)"] * GIB == pytest.approx(
        saved + max(logits, layer + kept * GIB)
    )
    # a fused linear + cross-entropy returns no tokens x vocab logits to keep
    fused = estimate_memory(_setup(kept_logits_bytes=4, liger_kernel=True))
    assert fused.phases_gib == estimate_memory(_setup(liger_kernel=True)).phases_gib


# Answer.AI fsdp_qlora's loop, in its form (train.py@05ed9f2a, the loop over the dataloader)
_KEEPS = """import torch
from transformers import AutoModelForCausalLM


def fsdp_main(args):
    model = AutoModelForCausalLM.from_pretrained(args["model_name"], torch_dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for batch_idx, batch in enumerate(dataloader):
        with autocast:
            output = model(batch["input_ids"], labels=batch["labels"], attention_mask=None)
            loss = output.loss
        loss = loss / gradient_accumulation_steps
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        output = None
        loss = None
"""
_DROPS = _KEEPS.replace("loss = output.loss\n", "loss = output.loss\n            del output\n")
_TRAINER = """from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-7B-v0.1", torch_dtype="bfloat16")
Trainer(model=model, args=TrainingArguments(output_dir="out")).train()
"""
_RECIPE = (
    "model_name_or_path: mistralai/Mistral-7B-v0.1\ntorch_dtype: bfloat16\nbf16: true\n"
    "per_device_train_batch_size: 1\nmax_length: 2048\ngradient_checkpointing: true\n"
    "attn_implementation: sdpa\noptim: adamw_torch_fused\n"
)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, extra: dict[str, str]) -> dict:
    write_files(
        tmp_path,
        {"launch.sh": "#!/bin/bash\npython train.py sft.yaml\n", "sft.yaml": _RECIPE, "train.py": script}
        | extra,
    )
    monkeypatch.chdir(tmp_path)
    return estimate_json_run()


@pytest.mark.parametrize(
    ("script", "pins", "kept"),
    [
        (_KEEPS, {}, 2),  # transformers 5: outputs.logits in bf16
        (_KEEPS, {"requirements.txt": "transformers==4.38.2\n"}, 4),  # <= 4.44: fp32 in forward
        (_DROPS, {}, 0),
        (_TRAINER, {}, 0),
    ],
    ids=["keeps-output", "keeps-output-transformers-4.38", "del-output", "trainer"],
)
def test_the_loop_in_the_script_sets_the_kept_logits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, pins: dict[str, str], kept: int
) -> None:
    run = _run(tmp_path, monkeypatch, script, pins)
    said = [a for a in run["assumptions"] if "train.py:" in a and "still bound" in a]
    assert bool(said) == bool(kept)
    if kept == 4:
        assert "transformers <= 4.44" in said[0]
    base = _setup(model=resolve_model("mistralai/Mistral-7B-v0.1").count())
    expect = estimate_memory(replace(base, kept_logits_bytes=kept))
    drop = estimate_memory(replace(base, kept_logits_bytes=0))
    assert (expect.peak_allocated_gib > drop.peak_allocated_gib) == bool(kept)
    got = run["memory"]["allocated"]["gib"]
    assert got - estimate_memory(base).peak_allocated_gib == pytest.approx(
        expect.peak_allocated_gib - drop.peak_allocated_gib, abs=0.02
    )


def test_a_trainer_subclass_calling_backward_is_the_trainers_loop() -> None:
    """A training_step override inside a Trainer subclass is HF Trainer's loop, not a loop of its own."""
    import ast

    from advisor.facts.training_loop import custom_loop_outputs

    text = (
        "from transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n"
        "    def training_step(self, model, inputs, num_items_in_batch=None):\n"
        "        outputs = model(**inputs)\n        loss = outputs.loss\n"
        "        self.accelerator.backward(loss)\n        return loss.detach()\n"
    )
    assert custom_loop_outputs(ast.parse(text), "train.py") is None
    own = custom_loop_outputs(ast.parse(text.replace("(Trainer)", "")), "train.py")
    assert own is not None and own.kept and own.own
