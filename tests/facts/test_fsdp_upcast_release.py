"""accelerate's fp32 upcast of FSDP's trainable parameters under mixed precision is a 0.30.0 change
(accelerate 0.30.0 accelerator.py:1486-1525 `param.data = param.data.to(torch.float32)`; 0.29.3's
prepare_model has no such step): a run pinned before it trains the bf16-loaded model in bf16, with bf16 grads
and Adam states, which halves the model states per GPU. Liger-Kernel's gemma-7b FSDP1 chart (examples/
huggingface @1129508) reads 25 GiB peak allocated at batch 32 with the fused loss, below the 31.8 GiB that
fp32 weights + grads + Adam states of 8.54B params / 4 GPUs need, so that run cannot have upcast."""

from __future__ import annotations

import pytest

from advisor.estimate import estimate_memory
from advisor.facts.estimate_inputs import plan_inputs

ACCELERATE = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_processes: 4
mixed_precision: bf16
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: GemmaDecoderLayer
  fsdp_activation_checkpointing: true
"""
TRAIN = """model_name_or_path: google/gemma-7b-it
torch_dtype: bfloat16
max_length: 512
per_device_train_batch_size: 32
gradient_checkpointing: false
use_liger_kernel: true
optim: adamw_torch
bf16: true
output_dir: out
"""
FILES = {
    "launch.sh": "#!/usr/bin/env bash\naccelerate launch --config_file accelerate.yaml train.py train.yaml\n",
    "train.py": "import trl\n",
    "accelerate.yaml": ACCELERATE,
    "train.yaml": TRAIN,
}


def _run(facts_of, pin: str):
    names = facts_of({**FILES, "requirements.txt": f"transformers==4.43.3\n{pin}\n"})
    setup = plan_inputs(names["plan"], names).setup
    return setup, estimate_memory(setup)


@pytest.mark.parametrize(("pin", "held"), [("accelerate==0.29.3", "bf16"), ("accelerate==0.30.0", "fp32")])
def test_fsdp_parameters_are_upcast_from_accelerate_0_30(facts_of, pin: str, held: str) -> None:
    setup, est = _run(facts_of, pin)
    assert setup.storage_dtype == held
    weights = next(i.gib for i in est.items if i.name == "weights")
    per_byte = 8_537_680_896 / 4 / 2**30
    assert weights == pytest.approx((2 if held == "bf16" else 4) * per_byte, rel=0.01)


def test_before_the_upcast_the_model_states_halve(facts_of) -> None:
    _, old = _run(facts_of, "accelerate==0.29.3")
    _, new = _run(facts_of, "accelerate==0.30.0")
    assert old.peak_gib < 0.65 * new.peak_gib
    assert old.peak_gib < 31.8  # fits under the fp32 floor the Liger chart's 25 GiB rules out
