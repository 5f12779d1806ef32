"""A training loop of its own that computes the cross-entropy itself on the model's logits (issue 21
section 2, phase accounting chosen by the loop): `logits = model(input_ids).logits; loss =
F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))`. The model is called without
labels, so no loss function of transformers upcasts a copy to fp32 (loss/loss_utils.py ForCausalLMLoss
`logits.float()`): the logits stay in the dtype the forward leaves them in (fp32 up to transformers 4.44, the
compute dtype from 4.45: advisor.facts.training_loop.logits_kept_bytes), and the loss chain is that dtype's
logits, their flattened copy and log_softmax's output, then the loss backward's two gradients of the same size
(aten nll_loss_backward, _log_softmax_backward_data). Without autocast only; under autocast cross_entropy runs
in fp32 (autocast's fp32 op list), as HF's own loss does."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from advisor.core.lazy_pattern import LazyPattern

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["own_loss_bytes"]

_CE = LazyPattern(r"\b(?:cross_entropy|CrossEntropyLoss)\s*\(")
_LOGITS = re.compile(r"\.logits\b|\blogits\b")
# a model call that passes labels: transformers computes the loss (and its fp32 copy) itself
_LABELS_TO_MODEL = LazyPattern(r"\bmodel\s*\((?:[^()]|\([^()]*\))*\blabels\s*=")


def own_loss_bytes(plan: RunPlan, compute_bytes: int) -> tuple[int, str] | None:
    """(bytes per logit element, where) when the run's own loop computes the cross-entropy on the logits."""
    from advisor.facts.training_loop import logits_kept_bytes, loop_outputs

    if not loop_outputs(plan).own:
        return None
    doc = plan.spec.script
    if doc is None or not isinstance(doc.text, str):
        return None
    text = doc.text[:2_000_000]
    m = _CE.search(text)
    if m is None or _LABELS_TO_MODEL.search(text) or not _LOGITS.search(text):
        return None
    per = logits_kept_bytes(plan, compute_bytes)
    line = text.count("\n", 0, m.start()) + 1
    return per, (
        f"{doc.path.name}:{line} computes the cross-entropy itself on the model's logits (no labels passed: "
        f"{per}-byte logits, no fp32 copy by transformers' loss)"
    )
