"""What ms-swift's own trainer holds and feeds (issue 21, "a term chosen by the loop"): its compute_loss
returns the loss only, so no logits outlive the forward (ms-swift 4.6.0.dev0
swift/trainers/seq2seq_trainer.py:125-229 @3602360a; 1.6.0.dev0 swift/trainers/trainers.py:171-195
@4312aeb, the Benchmark.md runs), and no ms-swift collation has one shape: its collator pads a batch to its
longest (swift/template/base.py:1909-1915; swift/llm/utils/utils.py:301-343 @4312aeb) and its packing
joins a best-fit bin of samples up to max_length into one unpadded row (swift/dataset/packing.py:16-48).
A TRL recipe keeps TRL's semantics: packed is one shape there."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import pytest

from advisor.facts.estimate_inputs import plan_inputs
from advisor.facts.training_loop import custom_loop_outputs, loop_outputs
from advisor.sources.launchers.swift import SPEC

SWIFT = """#!/bin/bash
swift sft \\
    --model Qwen/Qwen2.5-7B-Instruct \\
    --train_type lora \\
    --torch_dtype bfloat16 \\
    --max_length 2048 {extra}
"""

TRL = """\
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
torch_dtype: bfloat16
use_peft: true
max_length: 2048
packing: {packing}
per_device_train_batch_size: 1
bf16: true
output_dir: out
"""

# ms-swift 1.6.0.dev0's trainer (swift/trainers/trainers.py:171-195 @4312aeb), the loss path copied by hand:
# the token accuracy is taken from outputs.logits inside compute_loss, which returns the loss alone
SWIFT_1_6_TRAINER = """\
from transformers import Seq2SeqTrainer as HfSeq2SeqTrainer


class Seq2SeqTrainer(HfSeq2SeqTrainer):
    def compute_loss(self, model, inputs, return_outputs=None):
        loss, outputs = super().compute_loss(model, inputs, True)
        preds = outputs.logits.argmax(dim=2)[..., :-1]
        labels = inputs['labels'][..., 1:]
        masks = labels != -100
        acc = (preds[masks] == labels[masks]).float().mean()
        self._custom_metrics['acc'] += acc / self.args.gradient_accumulation_steps
        return (loss, outputs) if return_outputs else loss
"""

Facts = Callable[..., dict[str, Any]]


def _setup(facts_of: Facts, files: dict[str, str]) -> tuple[Any, Any]:
    names = facts_of(files, hardware="1xH100-SXM")
    out = plan_inputs(names["plan"], names)
    assert out.setup is not None, out.reason
    return out.setup, names["plan"]


@pytest.mark.parametrize("extra", ["", "\\\n    --packing true"])
def test_swift_runs_drop_the_outputs_and_feed_varying_shapes(facts_of: Facts, extra: str) -> None:
    setup, plan = _setup(facts_of, {"train.sh": SWIFT.format(extra=extra)})
    assert loop_outputs(plan).kept is False and loop_outputs(plan).source == SPEC.drops_outputs
    assert setup.kept_logits_bytes == 0
    # packed or not, each batch may be longer than any before: the allocator's growth is stated
    assert setup.fixed_length is False


def test_a_trl_recipe_keeps_trl_semantics(facts_of: Facts) -> None:
    packed, _ = _setup(facts_of, {"train.yaml": TRL.format(packing="true")})
    unpacked, _ = _setup(facts_of, {"train.yaml": TRL.format(packing="false")})
    assert packed.fixed_length is True and unpacked.fixed_length is False
    assert packed.kept_logits_bytes == 0


def test_the_upstream_trainer_form_keeps_no_outputs() -> None:
    # a Trainer subclass calls no backward itself: HF Trainer's training_step does, after compute_loss
    # has returned the loss alone
    assert custom_loop_outputs(ast.parse(SWIFT_1_6_TRAINER), "trainers.py") is None
