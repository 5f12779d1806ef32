"""Freeze-tuning (issue 21 section 2: methods the estimator refused): LLaMA-Factory's finetuning_type: freeze
trains the last freeze_trainable_layers decoder layers (default 2), upcast to fp32, the rest frozen in the
compute dtype (llamafactory model/adapter.py _setup_freeze_tuning, cast_trainable_params_to_fp32). The recipe
below is written in the form of LLaMA-Factory's examples/train_full/*.yaml with finetuning_type: freeze.

Referee (benchmarks/simulate.py's step, every parameter but the last 2 layers frozen; Llama-3.2-1B, bf16,
1 x 1024, checkpointed): weights 2.302 / 2.302 GiB, optimizer states 0.453 / 0.453, backward-start phase
1.491 / 1.538 (-3 %), end of backward 0.385 / 0.405 (-5 %), analytic / simulated. The simulation checkpoints
every layer as HF does; LLaMA-Factory checkpoints only the layers with trainable parameters
(model_utils/checkpointing.py get_custom_gradient_checkpointing_func), so its frozen layers keep no inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import resolve_model
from tests.conftest import write_files

runner = CliRunner()

_RECIPE = """### model
model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct

### method
stage: sft
do_train: true
finetuning_type: freeze
{extra}
### dataset
dataset: identity,alpaca_en_demo
template: llama3
cutoff_len: 2048

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 1.0e-5
num_train_epochs: 3.0
bf16: true
output_dir: saves/llama3-8b/freeze/sft
"""


def _estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str = "", method: str = "freeze"
) -> dict:
    recipe = _RECIPE.format(extra=extra).replace("finetuning_type: freeze", f"finetuning_type: {method}")
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nllamafactory-cli train llama3_freeze_sft.yaml\n",
            "llama3_freeze_sft.yaml": recipe,
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB", "--format", "json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)["runs"]
    return run


def _item(run: dict, name: str) -> dict:
    return next(b for b in run["breakdown"] if b["name"] == name)


def test_freeze_tuning_trains_the_last_layers_in_fp32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _estimate(tmp_path, monkeypatch)
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    trainable = 2 * pc.per_layer  # freeze_trainable_layers' default, freeze_trainable_modules 'all'
    assert run["trainable_params"] == trainable
    frozen_bf16, trainable_fp32 = (pc.total - trainable) * 2, trainable * 4
    assert _item(run, "weights")["gib"] == pytest.approx((frozen_bf16 + trainable_fp32) / 2**30, abs=0.01)
    assert _item(run, "optimizer states")["gib"] == pytest.approx(trainable * 8 / 2**30, abs=0.01)
    assert "2 layer inputs" in _item(run, "activations")["note"]  # the frozen layers keep none
    assert any("freeze-tuning: the last 2 of 32 decoder layers train" in a for a in run["assumptions"])
    # the same recipe as a full fine-tune holds fp32 weights, gradients and states for every parameter
    full = _estimate(tmp_path / "full", monkeypatch, method="full")
    assert full["trainable_params"] == pc.total
    assert run["memory"]["device"]["gib"] < full["memory"]["device"]["gib"] / 3


def test_freeze_layers_and_extra_modules_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _estimate(tmp_path, monkeypatch, "freeze_trainable_layers: 4\nfreeze_extra_modules: embed_tokens\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert run["trainable_params"] == 4 * pc.per_layer + pc.embedding


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("freeze_trainable_layers: -2\n", "first 2 layers"),
        ("freeze_trainable_modules: mlp\n", "unknown, because freeze_trainable_modules names modules (mlp)"),
        ("use_llama_pro: true\nfreeze_trainable_layers: 8\n", "LLaMA-Pro"),
    ],
)
def test_what_is_not_modelled_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, reason: str
) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nllamafactory-cli train llama3_freeze_sft.yaml\n",
            "llama3_freeze_sft.yaml": _RECIPE.format(extra=extra),
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB"])
    assert reason in result.output
