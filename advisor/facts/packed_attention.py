"""Whether a packed run's attention stays within each packed sample (issue 21 section 2, "Time").

A packed row that hands flash-attention the sample boundaries runs variable-length attention: each token
attends over its own sample, not the whole row, so the row's attention FLOPs are per sample
(transformers 5.24 modeling_flash_attention_utils.py:855-861, packed position_ids -> flash_varlen_fn).
Which packing does so is the consumer's rule:

- TRL: `padding_free`, and from 0.19 `packing` with a best-fit strategy, which turns padding-free on whatever
  `padding_free` says: "ffd" (0.19's default, sft_trainer.py:394), "bfd" (the default from 0.20:
  0.20 sft_trainer.py:439, 0.29 :780), "bfd" or "bfd_split" from 1.0 (1.0 sft_trainer.py:837, 1.16 :916);
  the collator then writes per-sample position_ids (0.26 sft_trainer.py:169-188). "wrapped" packing, and
  packing before 0.19 (0.18 has no strategy), concatenate samples under one causal mask over the row.
- LLaMA-Factory: `neat_packing` (it also turns `packing` on: llamafactory 0.9.3 hparams/data_args.py:179-180)
  sets block_diag_attn (hparams/parser.py:402); with flash-attention it patches transformers'
  `_get_unpad_data` so the per-sample attention-mask ids become varlen segments
  (model/model_utils/packing.py:110-116); other attention gets a 4D block mask (data/collator.py:244), whose
  masked kernel still computes the whole row. `packing` alone attends across samples.
- ms-swift: `packing` turns padding_free on and needs a flash-attention implementation (ms-swift 4.6.0
  arguments/sft_args.py:186-197); the collator joins each bin into one row with per-sample position_ids
  (template/base.py:750-768, packing_row).
- axolotl: `sample_packing` writes per-sample position_ids; in-tree models then run varlen flash-attention
  through transformers' packed-sequence path, remote-code ones through axolotl's `_get_unpad_data` patch
  (axolotl src/axolotl/monkeypatch/multipack.py@70be5461 patch_for_multipack).

The attention implementation is checked by the time model (advisor.estimate.timing), which sees it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.facts.namespace_entries import truth, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

# (since release, default strategy, strategies that imply padding-free), newest first
_TRL_PACKING = (
    ((1, 0), "bfd", frozenset({"bfd", "bfd_split"})),
    ((0, 20), "bfd", frozenset({"bfd"})),
    ((0, 19), "ffd", frozenset({"ffd"})),
)


def _trl_packing(release: tuple[int, int]) -> tuple[str, frozenset[str]] | None:
    """TRL's default packing strategy and the strategies that turn padding-free on, for a release (None:
    before 0.19, where packing never does)."""
    for since, default, padding_free in _TRL_PACKING:
        if release >= since:
            return default, padding_free
    return None


def per_document_attention(plan: RunPlan) -> str | None:
    """Why the run's packed rows attend within each sample under flash-attention (the consumer's rule,
    cited), or None when they attend over the whole row or the files do not say."""
    t = plan.training
    if t is None:
        return None
    from advisor.facts.training_loop import own_trainer

    trainer = own_trainer(plan)
    if trainer is not None and trainer.packing_attention:
        return trainer.packing_attention if truth(written(t, "packing")) else None
    dialect_v = t.known_value("dialect")
    dialect = dialect_v.value if dialect_v is not None else "hf"
    if dialect == "llamafactory":
        if truth(written(t, "neat_packing")):
            return "LLaMA-Factory neat_packing: varlen attention (model_utils/packing.py:110-116)"
        return None
    if dialect == "axolotl":
        if truth(written(t, "sample_packing")):
            return "axolotl sample_packing: per-sample position_ids (monkeypatch/multipack.py)"
        return None
    if truth(written(t, "padding_free")):
        return "TRL padding_free: per-sample position_ids (trl sft_trainer.py:169-188)"
    if not truth(written(t, "packing")):
        return None
    from advisor.facts.dtypes import trl_release, trl_trains

    if dialect != "trl" and not trl_trains(plan):
        return None
    release = trl_release(plan)
    if release is None:
        return None  # which TRL runs it is not known: the whole row is timed (an upper bound)
    rule = _trl_packing(release)
    if rule is None:
        return None
    strategy_v = written(t, "packing_strategy")
    if strategy_v is None:
        strategy: str | None = rule[0]
    else:
        strategy = str(strategy_v.value).strip().lower() if strategy_v.known else None
    if strategy is None or strategy not in rule[1]:
        return None
    rel = ".".join(str(p) for p in release)
    return f"TRL {rel}: packing with strategy '{strategy}' turns padding_free on (trl sft_trainer.py)"
