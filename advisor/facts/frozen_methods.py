"""Which partly frozen method a run uses, told from the keys it writes, with each method's module imported
only when its key is written (a check of a plain run loads none of them: issue 18, cold start):
LLaMA-Factory's finetuning_type: freeze (advisor/facts/freeze_tuning.py), axolotl's unfrozen_parameters
(advisor/facts/unfrozen_params.py), BAdam (advisor/facts/badam.py), a LLaVA-style vision-language run
(advisor/facts/llava.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.namespace_entries import written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["freeze_setup", "is_freeze_tuning"]


def is_freeze_tuning(plan: RunPlan) -> bool:
    t = plan.training
    dialect = t.known_value("dialect") if t is not None else None
    ftype = written(t, "finetuning_type")
    return (
        dialect is not None
        and dialect.value == "llamafactory"
        and ftype is not None
        and ftype.known
        and str(ftype.value).lower() == "freeze"
    )


def freeze_setup(plan: RunPlan, pc: Any, strategy: str, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """(TrainingSetup fields, reason the run cannot be estimated) for a partly frozen run: LLaMA-Factory
    freeze-tuning, axolotl unfrozen_parameters, BAdam, a LLaVA-style vision-language run (advisor/facts/
    llava.py); ({}, None) for any other run."""
    t = plan.training  # each method's module is imported only when its key is written (cold start)
    if written(t, "vision_tower") is not None:
        from advisor.facts.llava import llava_run, llava_setup

        if llava_run(plan):  # a vision tower + projector; pretraining freezes the language model
            return llava_setup(plan, pc, strategy, a)
    if written(t, "use_badam") is not None:
        from advisor.facts.badam import badam_setup, uses_badam

        if uses_badam(plan):
            return badam_setup(plan, pc, strategy, a)
    if is_freeze_tuning(plan):
        from advisor.facts.freeze_tuning import freeze_setup_llamafactory

        return freeze_setup_llamafactory(plan, pc, strategy, a)
    if written(t, "unfrozen_parameters") is not None:
        from advisor.facts.unfrozen_params import unfrozen_patterns, unfrozen_setup

        if unfrozen_patterns(plan) is not None:
            return unfrozen_setup(plan, pc, a)
    return {}, None
