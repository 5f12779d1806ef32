"""BAdam (issue 21: methods the estimator refused): LLaMA-Factory's use_badam trains one decoder layer at a
time with badam's BlockOptimizer (LLaMA-Factory 0.9.5 train/trainer_utils.py _create_badam_optimizer;
badam 1.4 block_optim.py): the weights stay in their 16-bit load dtype, the active layer has 16-bit
gradients and an fp32 copy carrying the AdamW states, the embedding and lm_head never train. The recipe is
written in the form of LLaMA-Factory's examples/extras/badam/llama3_full_sft.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import resolve_model
from tests.conftest import breakdown_item as _item
from tests.conftest import write_files
from tests.estimate.test_mem_freeze import FROZEN_LAYER

runner = CliRunner()

_RECIPE = """### model
model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct
trust_remote_code: true

### method
stage: sft
do_train: true
finetuning_type: full
use_badam: true
{extra}
### dataset
dataset: identity,alpaca_en_demo
template: llama3
cutoff_len: 2048
max_samples: 1000

### output
output_dir: saves/llama3-8b/full/sft

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 1.0e-5
num_train_epochs: 3.0
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> tuple[int, str]:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nllamafactory-cli train llama3_full_sft.yaml\n",
            "llama3_full_sft.yaml": _RECIPE.format(extra=extra),
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB", "--format", "json"])
    return result.exit_code, result.stdout


def _estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> dict:
    code, out = _run(tmp_path, monkeypatch, extra)
    assert code == 0, out
    (run,) = json.loads(out)["runs"]
    return run


def test_one_layer_trains_with_an_fp32_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _estimate(tmp_path, monkeypatch, "badam_mode: layer\nbadam_switch_mode: ascending\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    block = pc.per_layer  # one decoder layer: the embedding and lm_head are in no block
    assert run["trainable_params"] == block
    assert _item(run, "weights")["gib"] == pytest.approx(pc.total * 2 / 2**30, abs=0.01)  # all bf16
    # fp32 copy (4 B) + AdamW's two fp32 states on it (8 B), for the active layer only
    assert _item(run, "optimizer states")["gib"] == pytest.approx(block * 12 / 2**30, abs=0.01)
    assert _item(run, "gradients")["gib"] == pytest.approx(
        block * 2 / 2**30, abs=0.01
    )  # kept over accumulation
    # block 0 active: the 31 frozen layers above it run unchecked (LLaMA-Factory checkpoints only layers with
    # trainable parameters); no autocast here (neither bf16 nor fp16 set), bf16 weights: the same tensors
    note = _item(run, "activations")["note"]
    assert "checkpointed: 1 layer inputs; 31 frozen layers unchecked" in note
    assert any(
        "BAdam (layer mode): one decoder layer of 32 trains at a time" in a for a in run["assumptions"]
    )


def test_a_fixed_top_block_keeps_no_frozen_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    moving = _estimate(tmp_path / "moving", monkeypatch)
    fixed = _estimate(tmp_path / "fixed", monkeypatch, "badam_switch_mode: fixed\nbadam_start_block: 31\n")
    assert fixed["trainable_params"] == moving["trainable_params"]
    assert "frozen layers unchecked" not in _item(fixed, "activations")["note"]
    extra = _item(moving, "activations")["gib"] - _item(fixed, "activations")["gib"]
    assert extra == pytest.approx(31 * FROZEN_LAYER * 2048 / 2**30, abs=0.01)


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("badam_mode: ratio\n", "BAdam badam_mode ratio is not modelled"),
        ("deepspeed: ds_z3_config.json\n", "BAdam under zero3 is not modelled"),
    ],
)
def test_what_is_not_modelled_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, reason: str
) -> None:
    (tmp_path / "ds_z3_config.json").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ds_z3_config.json").write_text(
        '{"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}'
    )
    code, out = _run(tmp_path, monkeypatch, extra)
    assert code == 0, out
    (run,) = json.loads(out)["runs"]
    assert reason in json.dumps(run)
