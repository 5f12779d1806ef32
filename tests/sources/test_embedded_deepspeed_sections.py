"""A config of another tool that holds DeepSpeed's sections among its own keys is not a DeepSpeed config:
gpt-neox's configs (read by its NeoXArgs, which hands DeepSpeed only the keys of NeoXArgsDeepspeedConfig,
megatron/neox_arguments/deepspeed_args.py) were judged key by key as DeepSpeed JSON, 38 errors and 2065
warnings over gpt-neox's configs/ folder. The config below is a hand-written cut of the form of
EleutherAI/gpt-neox configs/125M.yml (its bf16 block with loss-scale keys, which DeepSpeed's own
DeepSpeedBF16Config refuses, is DeeperSpeed's to read)."""

from __future__ import annotations

from pathlib import Path

from advisor.pipeline.check import CheckOptions, run_check
from advisor.sources.classify import classify_mapping
from tests.conftest import git_project

NEOX = """\
# GPT-2 pretraining setup
{
   "pipe_parallel_size": 1,
   "model_parallel_size": 1,
   "num_layers": 12,
   "hidden_size": 768,
   "num_attention_heads": 12,
   "seq_length": 2048,
   "max_position_embeddings": 2048,
   "norm": "layernorm",
   "pos_emb": "rotary",
   "no_weight_tying": true,
   "optimizer": {"type": "Adam", "params": {"lr": 0.0006, "betas": [0.9, 0.95], "eps": 1.0e-8}},
   "zero_optimization": {"stage": 1, "allgather_partitions": true, "overlap_comm": true},
   "train_micro_batch_size_per_gpu": 4,
   "data_impl": "mmap",
   "checkpoint_activations": true,
   "checkpoint_num_layers": 1,
   "gradient_clipping": 1.0,
   "weight_decay": 0.1,
   "bf16": {"bf16": true, "loss_scale": 0, "loss_scale_window": 1000, "hysteresis": 2},
   "train_iters": 320000,
   "lr_decay_iters": 320000,
   "warmup": 0.01,
}
"""

DEEPSPEED = {
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": 3, "overlap_comm": True},
    "steps_per_print": 10,
    "wall_clock_breakdown": False,
    "zero_allow_untested_optimizer": True,
    "typo_key": 1,
}


def test_a_gpt_neox_config_is_not_a_deepspeed_config():
    import yaml

    assert classify_mapping(yaml.safe_load(NEOX), "yaml") == "unknown"


def test_a_deepspeed_config_with_an_unknown_key_stays_one():
    assert classify_mapping(DEEPSPEED, "json") == "deepspeed"


def test_a_gpt_neox_config_gets_no_deepspeed_findings(tmp_path, monkeypatch):
    git_project(tmp_path, {"configs/125M.yml": NEOX}, monkeypatch)
    result = run_check([Path(".")], CheckOptions(hardware="8xA100-SXM-80GB"))
    assert not result.errors, result.errors
    assert result.findings == []  # before: GA002 errors on the bf16 block, a warning per NeoX key
