"""Allocator growth on variable-length batches (issue 21 section 2): TRL's collator pads each batch to its
longest (trl 0.26 sft_trainer.py:195), so every new longest batch asks for larger logits/loss blocks than
the caching allocator holds and it keeps the old segments (pytorch#96995). The live set is unchanged; the
reserved and device bands grow by the largest transient working set, and the estimate says how to avoid
it (expandable_segments)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.records import replace
from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
from advisor.facts.memory_kinds import memory_figures
from tests.conftest import estimate_json_run, write_files

_SFT = (
    "model_name_or_path: Qwen/Qwen2.5-1.5B\ndtype: bfloat16\nbf16: true\nuse_peft: true\n"
    "per_device_train_batch_size: 1\nmax_length: 4096\ngradient_checkpointing: true\n"
    "attn_implementation: sdpa\noptim: adamw_torch_fused\n"
)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recipe: str) -> dict:
    write_files(tmp_path, {"sft.yaml": recipe})
    monkeypatch.chdir(tmp_path)
    return estimate_json_run()


def test_a_trl_recipe_without_packing_is_told_about_expandable_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(tmp_path, monkeypatch, _SFT)
    advice = [a for a in run["assumptions"] if "expandable_segments:True" in a]
    assert len(advice) == 1 and "pytorch#96995" in advice[0]
    packed = _run(tmp_path / "packed", monkeypatch, _SFT + "packing: true\n")
    assert not [a for a in packed["assumptions"] if "expandable_segments" in a]
    # the live set is the same: the growth is not part of the point estimate
    assert packed["memory"]["reserved"]["gib"] == pytest.approx(run["memory"]["reserved"]["gib"])


def test_the_growth_is_the_largest_transient_and_widens_only_the_reserved_and_device_bands() -> None:
    s = TrainingSetup(
        model=resolve_model("Qwen/Qwen2.5-1.5B").count(),
        method="lora",
        micro_batch=1,
        seq_len=4096,
        precision="bf16",
        amp=False,
        gradient_checkpointing=True,
        attn_implementation="sdpa",
        optimizer="adamw_torch_fused",
        fixed_length=False,
    )
    m = estimate_memory(s)
    logits = next(it.gib for it in m.items if it.name == "logits + loss")
    assert m.growth_gib >= logits > 0
    assert estimate_memory(replace(s, fixed_length=True)).growth_gib == 0.0
    assert estimate_memory(replace(s, fixed_length=None)).growth_gib == 0.0
    figs = memory_figures(10.0, 11.0, 12.0, 0.1, 2, growth=m.growth_gib)
    assert figs["allocated"]["high_gib"] == 11.0
    assert figs["reserved"]["high_gib"] == pytest.approx(12.1 + m.growth_gib, abs=0.01)
    assert figs["device"]["high_gib"] == pytest.approx(13.2 + m.growth_gib, abs=0.01)
