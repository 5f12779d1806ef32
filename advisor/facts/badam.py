"""BAdam (LLaMA-Factory use_badam): one block of the model trained at a time, as TrainingSetup fields.

LLaMA-Factory 0.9.5 train/trainer_utils.py:412-470 _create_badam_optimizer wraps the Trainer's optimizer
in badam's BlockOptimizer for badam_mode "layer" (the default, hparams/finetuning_args.py:356-381:
switch mode ascending, every 50 steps, start block None). badam 1.4 block_optim.py:
- the blocks are the decoder layers ("layers.N." prefixes, :148-175); the embedding and the lm_head belong
  to none (include_embedding / include_lm_head False), so they never train;
- switch_trainable_params (:403-430, :490-525) sets requires_grad on the active block only and makes an
  fp32 copy of it (`param.clone().float()`), on which the base optimizer keeps its states; a step turns the
  16-bit gradients into fp32 ones (:275-287), steps, copies back, and empties the CUDA cache (:217-226);
- ascending starts at block 0 (:95-104), descending at the last, random anywhere; all visit every block.
The model stays in its 16-bit load dtype (LLaMA-Factory skips the fp32 upcast for BAdam: model/adapter.py
:313-325). LLaMA-Factory checkpoints only the layers with trainable parameters (model_utils/checkpointing.py
:80-103), so with block k active the frozen layers above it run unchecked and keep what their ops save for
the input's gradient: the peak is with the lowest block active. Ratio mode (BlockOptimizerRatio: sparse
gradients of every parameter) is not modelled; distributed layer-wise BAdam runs only under ZeRO-3
(hparams/parser.py:394-398), whose partition of the active block is not modelled either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import integer, truth, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["badam_setup", "uses_badam"]


def uses_badam(plan: RunPlan) -> bool:
    t = plan.training
    dialect = t.known_value("dialect") if t is not None else None
    return dialect is not None and dialect.value == "llamafactory" and bool(truth(written(t, "use_badam")))


def _text(plan: RunPlan, key: str, default: str) -> str | None:
    v = written(plan.training, key)
    if v is None:
        return default
    return str(v.value).strip().lower() if v.known and v.value is not None else None


def badam_setup(plan: RunPlan, pc: Any, strategy: str, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """(TrainingSetup fields, why it has no estimate) for a BAdam run."""
    mode = _text(plan, "badam_mode", "layer")
    if mode != "layer":
        return {}, (
            f"BAdam badam_mode {mode or 'unknown'} is not modelled: BlockOptimizerRatio keeps a sparse "
            "gradient of every parameter (badam block_optim.py BlockOptimizerRatio)"
        )
    ftype = _text(plan, "finetuning_type", "lora")
    if ftype != "full":
        return (
            {},
            f"BAdam with finetuning_type {ftype or 'unknown'} is not modelled (LLaMA-Factory's is full)",
        )
    if strategy != "none":
        return {}, (
            f"BAdam under {strategy} is not modelled: distributed layer-wise BAdam runs only under ZeRO-3 "
            "(LLaMA-Factory hparams/parser.py:394-398), which partitions the active block itself"
        )
    L = int(pc.layers)
    switch = _text(plan, "badam_switch_mode", "ascending")
    start = integer(written(plan.training, "badam_start_block"))
    if switch == "fixed" and start is not None and 0 <= start < L:
        lowest, which = start, f"block {start} only (badam_switch_mode fixed)"
    else:
        lowest = 0
        which = (
            f"the blocks in turn ({switch or 'unknown'} switch mode); the peak is with block 0 active, "
            "when backward runs through every layer above it unchecked"
        )
    per = [0] * L
    per[lowest] = int(pc.per_layer)  # the largest decoder layer: the bound for a model whose layers differ
    kw: dict[str, Any] = {
        "layer_trainable": per,
        "frozen_layers_checkpointed": False,
        "master_weights": True,  # the active block's fp32 copy, the optimizer's states on it
        "block_optimizer": True,
        "empty_cache_steps": 1,  # BlockOptimizer.step empties the CUDA cache (block_optim.py:223)
    }
    a.append(
        f"BAdam (layer mode): one decoder layer of {L} trains at a time, {which}; gradients in the 16-bit "
        f"load dtype and an fp32 copy with the optimizer states for one layer ({pc.per_layer / 1e6:.0f}M "
        "parameters, the largest layer: a bound), the embedding and lm_head frozen (badam block_optim.py "
        "BlockOptimizer, LLaMA-Factory trainer_utils.py _create_badam_optimizer)"
    )
    return kw, None
