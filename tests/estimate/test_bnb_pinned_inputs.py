"""bitsandbytes before 0.43.2 keeps every 4-bit Linear's input for backward (issue 21 section 2).

Upstream form, bitsandbytes/autograd/_functions.py MatMul4Bit.forward (0.42.0 line 522-523):

    if any(ctx.needs_input_grad[:2]):
        ctx.tensors = (A, B)

and from 0.43.2 (line 515-516, PR #1270) ``ctx.tensors = (None, B)``. The release is read from the pin
nearest the recipe: counted when the pin installs a release before 0.43.2, stated when nothing pins it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import estimate_json_run, write_files

_SFT = (
    "model_name_or_path: meta-llama/Llama-2-7b-hf\ndtype: bfloat16\nuse_peft: true\nlora_r: 16\n"
    "load_in_4bit: true\nbf16: true\nper_device_train_batch_size: 1\nmax_length: 1024\npacking: true\n"
    "attn_implementation: sdpa\noptim: adamw_torch_fused\n"
)
# Llama-2-7B: 32 layers, the distinct Linear inputs of a layer are the attention norm's output (q, k, v),
# the attention output (o), the MLP norm's output (gate, up) and the gated product (down): 3 x 4096 + 11008
_PER_LAYER = (3 * 4096 + 11008) * 2 * 1024  # bf16 x 1024 tokens


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]) -> dict:
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    return estimate_json_run()


def _pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recipe: str, pin: str) -> dict:
    return _run(tmp_path, monkeypatch, {"sft.yaml": recipe, "requirements.txt": f"bitsandbytes{pin}\n"})


def _allocated(run: dict) -> float:
    return float(run["memory"]["allocated"]["gib"])


# reentrant checkpointing runs the forward without grad: only the recomputed layer keeps the inputs; the
# non-reentrant one (transformers' default from 5.0, and what gradient_checkpointing_kwargs can ask for)
# drops only saved_for_backward tensors, not MatMul4Bit's ctx.tensors: every layer keeps them
@pytest.mark.parametrize(
    ("gc", "kwargs", "layers"),
    [
        (False, "", 32),
        (True, "", 32),
        (True, "gradient_checkpointing_kwargs: {use_reentrant: false}\n", 32),
        (True, "gradient_checkpointing_kwargs: {use_reentrant: true}\n", 1),
        (True, "gradient_checkpointing_kwargs: '{\"use_reentrant\": true}'\n", 1),
    ],
)
def test_old_pin_counts_the_kept_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gc: bool, kwargs: str, layers: int
) -> None:
    recipe = _SFT + f"gradient_checkpointing: {str(gc).lower()}\n" + kwargs
    old = _pinned(tmp_path / "old", monkeypatch, recipe, "==0.42.0")
    new = _pinned(tmp_path / "new", monkeypatch, recipe, ">=0.43.2")
    none = _run(tmp_path / "none", monkeypatch, {"sft.yaml": recipe})
    extra = layers * _PER_LAYER / 2**30
    if layers == 1:
        # in the recomputed layer: it adds to one layer's working set, which peaks against the logits/loss
        # buffers (the larger of the two), so the peak grows by at most that much
        assert -0.005 <= _allocated(old) - _allocated(new) <= extra + 0.01
        assert any("in the recomputed layer" in a for a in old["assumptions"])
    else:
        assert _allocated(old) - _allocated(new) == pytest.approx(extra, abs=0.02)
    assert _allocated(none) == pytest.approx(_allocated(new), abs=0.01)
    assert any("pinned below 0.43.2" in a and "counted" in a for a in old["assumptions"])
    assert not any("0.43.2" in a for a in new["assumptions"])
    assert any("0.43.2 assumed (not pinned)" in a for a in none["assumptions"])


def test_a_range_below_the_fix_counts_and_int8_never(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recipe = _SFT + "gradient_checkpointing: false\n"
    ranged = _pinned(tmp_path / "r", monkeypatch, recipe, "<0.43")
    names = {b["name"] for b in ranged["breakdown"]}
    assert "4-bit Linear inputs" in names
    int8 = recipe.replace("load_in_4bit: true", "load_in_8bit: true")
    eight = _pinned(tmp_path / "i", monkeypatch, int8, "==0.42.0")
    assert "4-bit Linear inputs" not in {b["name"] for b in eight["breakdown"]}


def test_a_transformers_pin_before_5_checkpoints_reentrant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers up to 4.57 passes {"use_reentrant": True} when nothing is given (4.57.0
    modeling_utils.py:3696), 5.0.0 {"use_reentrant": False} (modeling_utils.py:3099)."""
    recipe = _SFT + "gradient_checkpointing: true\n"
    runs = {
        pin: _run(
            tmp_path / pin.strip("=<>"),
            monkeypatch,
            {"sft.yaml": recipe, "requirements.txt": f"bitsandbytes==0.42.0\ntransformers{pin}\n"},
        )
        for pin in ("==4.46.0", "==5.0.0")
    }
    assert any("in the recomputed layer (reentrant" in a for a in runs["==4.46.0"]["assumptions"])
    assert any("in every layer" in a for a in runs["==5.0.0"]["assumptions"])
    gap = _allocated(runs["==5.0.0"]) - _allocated(runs["==4.46.0"])
    assert gap >= 31 * _PER_LAYER / 2**30 - 0.01  # the other 31 layers' inputs
