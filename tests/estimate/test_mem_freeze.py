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

from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.estimate import resolve_model
from tests.conftest import breakdown_item as _item
from tests.conftest import estimate_json_run, write_files

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
    return estimate_json_run("1xA100-80GB", "launch.sh")


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
    assert any(
        "freeze-tuning: every parameter of the last 2 of 32 decoder layers" in a for a in run["assumptions"]
    )
    # the same recipe as a full fine-tune holds fp32 weights, gradients and states for every parameter
    full = _estimate(tmp_path / "full", monkeypatch, method="full")
    assert full["trainable_params"] == pc.total
    assert run["memory"]["device"]["gib"] < full["memory"]["device"]["gib"] / 3


def test_freeze_layers_and_extra_modules_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _estimate(tmp_path, monkeypatch, "freeze_trainable_layers: 4\nfreeze_extra_modules: embed_tokens\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert run["trainable_params"] == 4 * pc.per_layer + pc.embedding
    # a trained embedding's output requires grad: backward runs through the 28 frozen layers, which
    # LLaMA-Factory does not checkpoint
    assert "checkpointed: 4 layer inputs; 28 frozen layers unchecked" in _item(run, "activations")["note"]


# What a frozen Llama-3-8B layer keeps for its input's gradient per token (bf16 autocast, SDPA): the two
# RMSNorms' fp32 inputs (2 x 4h), q, k, v and the attention output in bf16 (2 x (q + 2 kv) + 2 q), the
# attention's fp32 log-sum-exp (4 x heads), and the MLP's gate, SiLU and up outputs in bf16 (3 x 2 x i);
# frozen Linears keep their weights, not their inputs.
_H, _Q, _KV, _HEADS, _I = 4096, 4096, 1024, 32, 14336
FROZEN_LAYER = 2 * 4 * _H + 2 * (_Q + 2 * _KV) + 2 * _Q + 4 * _HEADS + 3 * 2 * _I


def test_the_first_layers_form_keeps_the_frozen_layers_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # freeze_trainable_layers < 0 trains the first -N layers (adapter.py:91-92); the 30 frozen layers above
    # run unchecked with their input requiring grad
    first = _estimate(tmp_path / "first", monkeypatch, "freeze_trainable_layers: -2\n")
    last = _estimate(tmp_path / "last", monkeypatch, "freeze_trainable_layers: 2\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert first["trainable_params"] == last["trainable_params"] == 2 * pc.per_layer
    note = _item(first, "activations")["note"]
    assert "checkpointed: 2 layer inputs; 30 frozen layers unchecked" in note
    extra = _item(first, "activations")["gib"] - _item(last, "activations")["gib"]
    assert extra == pytest.approx(30 * FROZEN_LAYER * 2048 / 2**30, abs=0.01)


def test_module_lists_train_their_share_of_a_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    run = _estimate(tmp_path / "mlp", monkeypatch, "freeze_trainable_modules: mlp,self_attn\n")
    assert run["trainable_params"] == 2 * (pc.mlp_per_layer + pc.attn_per_layer)
    # a name the catalog cannot size counts the whole layer, and says it is a bound
    odd = _estimate(tmp_path / "odd", monkeypatch, "freeze_trainable_modules: mlp,my_adapter\n")
    assert odd["trainable_params"] == 2 * pc.per_layer
    assert any(
        "my_adapter not sized here: the whole layer counted (a bound)" in a for a in odd["assumptions"]
    )


def test_extra_norm_is_a_substring_of_every_layer_norm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # freeze_extra_modules is matched as a substring (adapter.py:129-131): "norm" also names every
    # input_layernorm / post_attention_layernorm, so every layer trains a little and is checkpointed
    run = _estimate(tmp_path, monkeypatch, "freeze_extra_modules: norm\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert run["trainable_params"] == 2 * pc.per_layer + 30 * pc.norm_per_layer + pc.final_norm
    assert "checkpointed: 32 layer inputs" in _item(run, "activations")["note"]


def test_llama_pro_trains_every_stride_th_layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # use_llama_pro with freeze_trainable_layers 8 on 32 layers: layers 3, 7, ..., 31 (adapter.py:80-88)
    run = _estimate(tmp_path, monkeypatch, "use_llama_pro: true\nfreeze_trainable_layers: 8\n")
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert run["trainable_params"] == 8 * pc.per_layer
    assert "checkpointed: 8 layer inputs; 21 frozen layers unchecked" in _item(run, "activations")["note"]


def test_llama_pro_needs_a_divisor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\nllamafactory-cli train llama3_freeze_sft.yaml\n",
            "llama3_freeze_sft.yaml": _RECIPE.format(
                extra="use_llama_pro: true\nfreeze_trainable_layers: 5\n"
            ),
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", "launch.sh", "-H", "1xA100-80GB"])
    assert "LLaMA-Pro needs 32 layers divisible by freeze_trainable_layers 5" in result.output


def test_a_full_fine_tune_row_trains_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the comparison's "full fine-tune" rows are full fine-tunes, not the freeze run under another name
    run = _estimate(tmp_path / "freeze", monkeypatch)
    full = _estimate(tmp_path / "full", monkeypatch, method="full")
    row = next(r for r in run["comparison"] if r["method"] == "full" and r["strategy"] == "none")
    own = next(r for r in full["comparison"] if r["method"] == "full" and r["strategy"] == "none")
    assert row["peak_gib"] == own["peak_gib"] > run["memory"]["device"]["gib"]
