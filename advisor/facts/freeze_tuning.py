"""LLaMA-Factory's finetuning_type: freeze as TrainingSetup fields (issue 21: methods the estimator refused).
Which partly frozen method a run uses (this one, axolotl's unfrozen_parameters, BAdam, LLaVA) is told in
advisor/facts/frozen_methods.py.

LLaMA-Factory 0.9.5 model/adapter.py _setup_freeze_tuning: freeze_trainable_layers N > 0 trains the last N
decoder layers, N < 0 the first -N (:89-92), use_llama_pro every (L / N)-th layer of the expanded model
(:80-88); freeze_trainable_modules (default "all", hparams/finetuning_args.py:33-35) names modules of a
layer (".{idx}.{module}" matched as a substring of each parameter name, :105-113; "all" is ".{idx}.");
freeze_extra_modules names non-layer modules by the part before weight/bias (:94-103), also matched as a
substring (:129-131), so "norm" matches every layer's input_layernorm / post_attention_layernorm too. The
trainable parameters are upcast to fp32 unless pure_bf16, BAdam or ZeRO-3 (adapter.py:313-325). Gradient
checkpointing wraps only the layers with trainable parameters and makes their input require grad
(model_utils/checkpointing.py:80-103 get_custom_gradient_checkpointing_func): the frozen layers below the
lowest trainable one record nothing, the frozen layers above it run unchecked and keep what their ops save.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.facts.layer_parts import layer_part
from advisor.facts.namespace_entries import integer, truth, written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["freeze_setup_llamafactory", "storage_kw"]

DEFAULT_TRAINABLE_LAYERS = 2  # llamafactory hparams/finetuning_args.py:23-24
# freeze_extra_modules names a non-layer module by the last part of its parameter name (adapter.py:102-103)
_EMBEDDING = {"embed_tokens", "wte", "embed_in", "word_embeddings"}
_LM_HEAD = {"lm_head", "embed_out"}
_FINAL_NORM = {"norm", "ln_f", "final_layernorm", "final_layer_norm"}


def _names(v: Any) -> list[str]:
    if v is None or not v.known or v.value in (None, ""):
        return []
    items = v.value if isinstance(v.value, list) else str(v.value).split(",")
    return [str(x).strip() for x in items if str(x).strip()]


def storage_kw(plan: RunPlan, strategy: str, upcast: bool) -> dict[str, Any]:
    """The frozen weights in the compute dtype LLaMA-Factory loads in (model/loader.py
    torch_dtype=model_args.compute_dtype), the trainable ones upcast to fp32 when `upcast` and not ZeRO-3."""
    t = plan.training
    kw: dict[str, Any] = {}
    for flag, dtype in (("bf16", "bf16"), ("pure_bf16", "bf16"), ("fp16", "fp16")):
        if truth(written(t, flag)):
            kw["storage_dtype"] = dtype
            break
    if upcast and strategy != "zero3":
        kw["trainable_dtype"] = "fp32"  # adapter.py:313-325 cast_trainable_params_to_fp32
    return kw


def _layer_ids(plan: RunPlan, L: int) -> tuple[list[int], str] | str:
    """(trainable layer indices, how they were chosen), or why they are unknown."""
    t = plan.training
    n_v = written(t, "freeze_trainable_layers")
    n = DEFAULT_TRAINABLE_LAYERS if n_v is None else integer(n_v)
    if n is None:
        return "freeze_trainable_layers is unknown" + (f" ({n_v.unknown})" if n_v is not None else "")
    if truth(written(t, "use_llama_pro")):
        if n <= 0 or L % n:
            return f"unknown, because LLaMA-Pro needs {L} layers divisible by freeze_trainable_layers {n}"
        stride = L // n
        return list(range(stride - 1, L + stride - 1, stride)), f"every {stride}th layer (LLaMA-Pro)"
    if n > 0:
        return list(range(max(0, L - n), L)), f"the last {min(n, L)}"
    if n == 0:
        return [], "no"
    return list(range(min(-n, L))), f"the first {min(-n, L)}"


def freeze_setup_llamafactory(
    plan: RunPlan, pc: Any, strategy: str, a: list[str]
) -> tuple[dict[str, Any], str | None]:
    t = plan.training
    L = int(pc.layers)
    picked = _layer_ids(plan, L)
    if isinstance(picked, str):
        return {}, picked
    ids, how = picked
    modules = _names(written(t, "freeze_trainable_modules")) or ["all"]
    share, bound = 0, []
    if "all" in modules:
        share = int(pc.per_layer)
    else:
        for name in dict.fromkeys(modules):
            part = layer_part(pc, name)
            if part is None:
                bound.append(name)
                part = int(pc.per_layer)
            share = min(int(pc.per_layer), share + part)
    per = [share if i in set(ids) else 0 for i in range(L)]
    extra, input_grad, notes = 0, False, []
    for name in _names(written(t, "freeze_extra_modules")):
        if name in _EMBEDDING:
            extra += int(pc.embedding + pc.position_embedding)
            input_grad = True  # a trained embedding's output requires grad: backward reaches layer 0
        elif name in _LM_HEAD:
            extra += int(pc.lm_head)
        elif name in _FINAL_NORM:
            extra += int(pc.final_norm)
            if name == "norm":
                # a substring of every layer's *_layernorm (adapter.py:129-131): those train too, so
                # every layer has trainable parameters and is checkpointed
                norm = int(pc.norm_per_layer)
                per = [x if x >= pc.per_layer else min(int(pc.per_layer), x + norm) for x in per]
                notes.append("'norm' also matches every layer's norms (a substring match): they train")
        else:
            # its size is not in the catalog: every non-layer parameter counted (the upper bound)
            extra += int(pc.total - L * pc.per_layer)
            input_grad = True
            notes.append(
                f"freeze_extra_modules '{name}' is not sized here: every non-layer parameter counted"
            )
    if bound:
        notes.append(
            f"freeze_trainable_modules {', '.join(bound)} not sized here: the whole layer counted (a bound)"
        )
    kw: dict[str, Any] = {
        "layer_trainable": per,
        "trainable_extra_params": extra,
        "input_requires_grad": input_grad,
        "frozen_layers_checkpointed": False,
    }
    pure = truth(written(t, "pure_bf16")) or truth(written(t, "use_badam"))
    kw.update(storage_kw(plan, strategy, upcast=not pure))
    what = "every parameter of" if "all" in modules else ", ".join(modules) + " of"
    a.append(
        f"freeze-tuning: {what} {how} of {L} decoder layers train"
        + (f", with {extra / 1e6:.1f}M parameters of extra modules" if extra else "")
        + (", upcast to fp32" if "trainable_dtype" in kw else "")
        + " (LLaMA-Factory adapter.py _setup_freeze_tuning); only layers with trainable parameters are "
        "checkpointed (model_utils/checkpointing.py), the frozen layers below the lowest save nothing"
        + ("; " + "; ".join(notes) if notes else "")
    )
    return kw, None
