"""axolotl unfrozen_parameters (issue 21: methods the estimator refused): only the matched parameters train
(axolotl 0.19.0 utils/freeze.py freeze_layers_except), so gradients and optimizer states are the trainable
part's; with gradient checkpointing transformers makes the embedding's output require grad (transformers
5.25 modeling_utils.py:3192-3200), so every layer is checkpointed; without it the frozen layers below the
lowest trainable one record nothing. The config is written in the form of axolotl's examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.estimate import resolve_model
from tests.conftest import breakdown_item as _item
from tests.conftest import estimate_json_run, write_files

runner = CliRunner()

_CONFIG = """base_model: meta-llama/Meta-Llama-3-8B

datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
output_dir: ./outputs/out

sequence_len: 2048
sample_packing: true

unfrozen_parameters:
{patterns}
gradient_accumulation_steps: 1
micro_batch_size: 1
num_epochs: 1
optimizer: adamw_torch_fused
learning_rate: 0.0002

bf16: auto
gradient_checkpointing: {gc}
attn_implementation: flash_attention_2
"""


def _estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patterns: list[str], gc: bool) -> dict:
    body = "".join(f"  - {p}\n" for p in patterns)
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naxolotl train config.yml\n",
            "config.yml": _CONFIG.format(patterns=body, gc=str(gc).lower()),
        },
    )
    monkeypatch.chdir(tmp_path)
    return estimate_json_run("1xA100-80GB", "launch.sh")


def test_the_upper_mlps_train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    patterns = ["model.layers.2[4-9]+.mlp", "model.layers.3[0-1]+.mlp"]
    run = _estimate(tmp_path / "gc", monkeypatch, patterns, gc=True)
    trainable = 8 * pc.mlp_per_layer
    assert run["trainable_params"] == trainable
    # bf16 weights and AdamW states in the parameters' dtype (axolotl loads in bf16), the trainable part only
    assert _item(run, "optimizer states")["gib"] == pytest.approx(trainable * 4 / 2**30, abs=0.01)
    assert _item(run, "weights")["gib"] == pytest.approx(pc.total * 2 / 2**30, abs=0.01)
    assert "checkpointed: 32 layer inputs" in _item(run, "activations")["note"]
    assert any("enable_input_require_grads" in a for a in run["assumptions"])
    # without checkpointing the 24 frozen layers below layer 24 keep nothing
    plain = _estimate(tmp_path / "plain", monkeypatch, patterns, gc=False)
    assert plain["trainable_params"] == trainable
    assert _item(plain, "activations")["note"].startswith("8 layers x")


def test_a_pattern_naming_the_embedding_backpropagates_every_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    run = _estimate(tmp_path, monkeypatch, ["^model.embed_tokens.weight$", "model.layers.31."], gc=False)
    assert run["trainable_params"] == pc.embedding + pc.per_layer
    assert _item(run, "activations")["note"].startswith("1 layers x")
    assert "31 frozen layers unchecked" in _item(run, "activations")["note"]
    assert any("axolotl calls enable_input_require_grads" in a for a in run["assumptions"])


def test_an_unreadable_pattern_is_estimated_as_a_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    run = _estimate(tmp_path, monkeypatch, ["model.layers.31.my_adapter"], gc=True)
    assert run["trainable_params"] == pc.per_layer
    assert any("a bound, not matched" in a and "my_adapter" in a for a in run["assumptions"])


def test_layer_trainable_is_checked() -> None:
    from advisor.estimate.memory import TrainingSetup

    pc = resolve_model("meta-llama/Meta-Llama-3-8B").count()
    assert TrainingSetup(model=pc, layer_trainable=(0, 5)).layer_trainable == [0, 5]
    for bad in ([-1], [True], ["mlp"], [1.5]):
        with pytest.raises(ValueError, match="layer_trainable"):
            TrainingSetup(model=pc, layer_trainable=bad)
