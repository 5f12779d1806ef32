"""What the torch release a run pins, and the head its script loads, change in the estimator's inputs.

- Gradients between optimizer steps: transformers' Trainer calls ``model.zero_grad()`` after each step with
  no argument (transformers 4.15.0 trainer.py:1394, 4.29.0 :2014, 5.25 :1991), so the torch default decides.
  Before torch 2.0 it was ``set_to_none=False``: the gradients stay allocated, zeroed, through the next
  forward; torch 2.0 made ``True`` the default (pytorch PR #92731, its BC-breaking note shows 1.13 keeping
  zero tensors). A Trainer-family run pinned below 2.0 therefore holds its gradients at the next step's
  backward start, even without accumulation.
- The CUDA context: torch 1.13 sets ``CUDA_MODULE_LOADING=LAZY`` when the user has not (pytorch PR #86509);
  before it every kernel of the library is loaded into the context at start-up, "which took >1000MB"
  (pytorch issue #107667, ptrblck; issue #54564 shows 1001 MiB for one small tensor on an RTX 3090, CUDA
  11.1). A run pinned below 1.13 is given a 1 GiB context, a lower bound, instead of the lazy 0.5 GiB.
- The head: a script that loads ``AutoModelForSequenceClassification`` (or any ``*ForSequenceClassification``
  / ``*ForTokenClassification``) trains a classification head, whose logits are batch x labels (or tokens x
  labels), not tokens x vocabulary.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["apply_torch_release", "classification_head"]

EAGER_CONTEXT_GIB = 1.0
_CLASSIFIER = re.compile(r"\w*For(?:Sequence|Token)Classification")


def classification_head(names: dict[str, Any]) -> str | None:
    """Where the training script loads a classification model (``train.py:12 AutoModelForSequence...``)."""
    from advisor.facts.load_calls import load_calls

    for call in load_calls(names):
        callee = str(call.get("callee", ""))
        if _CLASSIFIER.fullmatch(callee.split(".")[0]):
            loc = call.get("location")
            where = f"{loc.file.name}:{loc.line} " if loc is not None else ""
            return f"{where}{callee}()"
    return None


def apply_torch_release(
    setup_kw: dict[str, Any], plan: RunPlan, names: dict[str, Any], strategy: str, a: list[str]
) -> None:
    """Set ``task``, ``zero_grad_set_to_none`` and ``cuda_context_gib`` in ``setup_kw`` where the script and
    the pins decide them, each with its reason in the assumptions ``a``."""
    from advisor.facts import versions
    from advisor.facts.training_loop import loop_outputs

    head = classification_head(names)
    if head is not None:
        setup_kw["task"] = "sequence_classification"
        a.append(f"a classification head ({head}): its logits are labels wide, not the vocabulary")
    unsharded = strategy in {"none", "ddp"} and not setup_kw.get("optimizer_in_backward")
    if unsharded and versions.run_installs_below(plan, "torch", "2.0.0") and not loop_outputs(plan).own:
        setup_kw["zero_grad_set_to_none"] = False
        a.append(
            "torch pinned below 2.0: the Trainer's model.zero_grad() keeps the gradients allocated (zeroed) "
            "between steps (set_to_none=False before pytorch PR #92731): live at the next backward"
        )
    if versions.run_installs_below(plan, "torch", "1.13.0"):
        setup_kw["cuda_context_gib"] = EAGER_CONTEXT_GIB
        a.append(
            f"torch pinned below 1.13: CUDA modules load eagerly (lazy loading from pytorch PR #86509), a "
            f"CUDA context of over 1 GiB: {EAGER_CONTEXT_GIB} GiB assumed"
        )
