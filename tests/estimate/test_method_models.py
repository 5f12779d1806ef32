"""Training methods the estimator refused though common, now modelled from their source: GaLore through the
HF Trainer (`optim: galore_adamw`, transformers 5.24 trainer_optimizer.py:351-378, galore_torch's
GaLoreProjector): states from the model's shapes, the layer-wise variant freeing each gradient in its
hook; without optim_target_modules the Trainer raises, so there is no estimate, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.estimate import resolve_model
from advisor.facts import run_names
from advisor.facts.estimates import plan_inputs
from advisor.pipeline.check import CheckOptions, build_plans, resolve_settings, run_check
from tests.conftest import write_files

LAUNCH = "#!/bin/bash\npython train.py sft.yaml\n"
# a TRL SFT recipe with GaLore, in the form of the HF docs' GaLore example (optim, optim_target_modules,
# optim_args), hand-written
SFT = """\
model_name_or_path: Qwen/Qwen2.5-1.5B
dtype: bfloat16
bf16: true
max_length: 1024
per_device_train_batch_size: 1
gradient_accumulation_steps: {accum}
gradient_checkpointing: true
optim: {optim}
{extra}"""


@pytest.fixture(autouse=True)
def _cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _run(tmp_path: Path, optim: str, extra: str, accum: int = 4):
    sft = SFT.format(optim=optim, extra=extra, accum=accum)
    write_files(tmp_path, {"launch.sh": LAUNCH, "sft.yaml": sft, "train.py": "print('train')\n"})
    options = CheckOptions(hardware="1xH100-SXM")
    assert not run_check([Path(".")], options).errors
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    names = run_names(plan)
    return plan_inputs(plan, names), names["estimates"]


def _item(est, name: str) -> dict:
    return next(i for i in est.entry("items").value if i["name"] == name)


TARGETS = (
    'optim_target_modules: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]\n'
)


def test_galore_states_follow_the_projected_shapes(tmp_path: Path) -> None:
    inputs, est = _run(tmp_path, "galore_adamw", TARGETS + 'optim_args: "rank=64, update_proj_gap=200"\n')
    assert inputs.reason is None and est.known is True
    pc = resolve_model("Qwen/Qwen2.5-1.5B").count()
    # rank x (2 x the larger + the smaller dimension) per projected weight, AdamW's 2 states elsewhere
    low = sum(64 * (2 * max(x.d_in, x.d_out) + min(x.d_in, x.d_out)) for x in pc.linears) * pc.layers
    weights = sum(x.d_in * x.d_out for x in pc.linears) * pc.layers
    want = 2 * (low + 2 * (pc.total - weights))  # bf16 states, like the parameters
    got = _item(est, "optimizer states")["gib"] * 2**30
    assert got == pytest.approx(want, rel=0.01)
    assert "GaLore AdamW rank 64" in _item(est, "optimizer states")["note"]


def test_galore_default_rank_is_the_trainers_128(tmp_path: Path) -> None:
    _, est = _run(tmp_path, "galore_adamw", TARGETS)
    assert est.known is True
    assert any("default 128" in x for x in est.assumptions)


def test_layerwise_galore_frees_each_gradient_in_backward(tmp_path: Path) -> None:
    inputs, est = _run(tmp_path, "galore_adamw_layerwise", TARGETS, accum=1)
    assert est.known is True
    assert inputs.setup.optimizer_in_backward is True


def test_galore_8bit_keeps_one_byte_moments_and_a_bf16_projector(tmp_path: Path) -> None:
    inputs, est = _run(tmp_path, "galore_adamw_8bit_layerwise", TARGETS + 'optim_args: "rank=64"\n', accum=1)
    assert inputs.reason is None and est.known is True
    assert inputs.setup.optimizer_in_backward is True
    pc = resolve_model("Qwen/Qwen2.5-1.5B").count()
    moments = sum(2 * 64 * max(x.d_in, x.d_out) for x in pc.linears) * pc.layers
    projector = sum(64 * min(x.d_in, x.d_out) for x in pc.linears) * pc.layers
    weights = sum(x.d_in * x.d_out for x in pc.linears) * pc.layers
    vectors = pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head  # hidden 1536 < 4096: fp32
    want = moments + 2 * projector + 2 * (pc.total - weights - vectors) + 8 * vectors
    got = _item(est, "optimizer states")["gib"] * 2**30
    assert got == pytest.approx(want, rel=0.01)
    assert "8-bit" in _item(est, "optimizer states")["note"]


def test_galore_adafactor_factors_the_projected_moment(tmp_path: Path) -> None:
    _, est = _run(tmp_path, "galore_adafactor", TARGETS + 'optim_args: "rank=64"\n')
    assert est.known is True
    pc = resolve_model("Qwen/Qwen2.5-1.5B").count()
    projected = sum(64 * min(x.d_in, x.d_out) + max(x.d_in, x.d_out) + 64 for x in pc.linears) * pc.layers
    matrices = (pc.vocab + pc.hidden) * (1 if pc.tied else 2)
    vectors = pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head
    got = _item(est, "optimizer states")["gib"] * 2**30
    # the report rounds to 0.01 GiB
    assert got == pytest.approx(2 * (projected + matrices + vectors), abs=0.005 * 2**30)


def test_layerwise_galore_adafactor_is_refused_with_the_trainers_error(tmp_path: Path) -> None:
    _, est = _run(tmp_path, "galore_adafactor_layerwise", TARGETS, accum=1)
    assert est.known is False
    assert "relative_step" in est.reason and "ValueError" in est.reason


def test_galore_without_target_modules_has_no_estimate(tmp_path: Path) -> None:
    _, est = _run(tmp_path, "galore_adamw", "")
    assert est.known is False
    assert "optim_target_modules" in est.reason and "ValueError" in est.reason


# LLaMA-Factory's GaLore example (examples/extras/galore/llama3_full_sft.yaml), hand-written and cut down
LF_GALORE = """\
model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct
stage: sft
do_train: true
finetuning_type: full
use_galore: true
galore_layerwise: {layerwise}
galore_target: all
galore_rank: 128
dataset: alpaca_en_demo
template: llama3
cutoff_len: 2048
per_device_train_batch_size: 1
gradient_accumulation_steps: 1
bf16: true
output_dir: saves/llama3-8b/full/sft
"""


@pytest.mark.parametrize("layerwise", [True, False])
def test_llamafactory_use_galore_is_galore_on_every_decoder_linear(tmp_path: Path, layerwise: bool) -> None:
    write_files(tmp_path, {"galore.yaml": LF_GALORE.format(layerwise=str(layerwise).lower())})
    options = CheckOptions(hardware="1xH100-SXM")
    assert not run_check([Path(".")], options).errors
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    names = run_names(plan)
    inputs, est = plan_inputs(plan, names), names["estimates"]
    assert est.known is True
    assert inputs.setup.optimizer == ("galore_adamw_layerwise" if layerwise else "galore_adamw")
    assert inputs.setup.optim_rank == 128
    assert inputs.setup.optimizer_in_backward is layerwise
    note = _item(est, "optimizer states")["note"]
    assert "rank 128" in note and "lm_head" not in note  # "all" is every Linear but lm_head


def test_fp8_training_is_estimated_as_bf16_with_the_note(tmp_path: Path) -> None:
    # LLaMA-Factory's examples/extras/fp8 recipe form (fp8: true), hand-written and cut down
    yaml = LF_GALORE.format(layerwise="false").replace("use_galore: true\n", "fp8: true\n")
    write_files(tmp_path, {"fp8.yaml": yaml})
    options = CheckOptions(hardware="1xH100-SXM")
    plans, _ = build_plans([tmp_path], options, resolve_settings([tmp_path], options))
    (plan,) = plans
    inputs = plan_inputs(plan, run_names(plan))
    assert inputs.setup is not None
    assert any(x.startswith("fp8 training (fp8 at fp8.yaml:") for x in inputs.assumptions)
