"""Online RL trainers (TRL GRPO, RLOO): the generation batch and the divisibility checks their
configs run at start, before any model is loaded.

TRL 1.16 trl/trainer/grpo_config.py:1096-1135 (`GRPOConfig.__post_init__`; RLOO's copy is
trl/trainer/rloo_config.py:659-697):

    num_processes = self.world_size
    if generation_batch_size is None and steps_per_generation is None:
        steps_per_generation = gradient_accumulation_steps
        generation_batch_size = per_device_train_batch_size * num_processes * steps_per_generation
    elif generation_batch_size is not None:   # must divide by per_device x num_processes
    ...
    if do_eval and eval_strategy != "no":
        (per_device_eval_batch_size * num_processes) % (num_generations_eval or num_generations) == 0
    generation_batch_size % num_generations == 0

each a ValueError. `num_processes` counts the training processes only: with `use_vllm` and
`vllm_mode: server` the vLLM GPUs run `trl vllm-serve`, not the trainer (open-r1's 8-GPU Slurm
recipes start accelerate with 7 processes), so the world size of the launch is the one to use.
"""

from __future__ import annotations

from typing import Any

from advisor.core.document import Location
from advisor.core.provenance import Namespace, Value
from advisor.facts.counts import count
from advisor.plan.run_plan import RunPlan
from advisor.sources import launchers

# num_generations defaults: GRPOConfig 8 (grpo_config.py:480), RLOOConfig 2 (rloo_config.py:301)
DEFAULT_GENERATIONS = {"grpo": 8, "rloo": 2}
_SCRIPT_MARKERS = {"grpo": ("GRPOTrainer", "GRPOConfig"), "rloo": ("RLOOTrainer", "RLOOConfig")}


def _value(ns: Namespace, key: str) -> Value | None:
    entry = ns.entry(key)
    return entry if isinstance(entry, Value) else None


def online_trainer(plan: RunPlan) -> str | None:
    """ "grpo" or "rloo" when the run trains with one of them: `trl grpo|rloo`, the script's trainer,
    or a config that sets num_generations (a key only these configs have)."""
    command = plan.spec.command
    if command is not None and launchers.spec_of(command.launcher).runs_trl and command.script is not None:
        sub = command.script.text
        if sub in DEFAULT_GENERATIONS:
            return str(sub)
    script = plan.spec.script
    text = getattr(script, "text", None) if script is not None else None
    if isinstance(text, str):
        for kind, markers in _SCRIPT_MARKERS.items():
            if any(m in text for m in markers):
                return kind
    if _value(plan.training, "num_generations") is not None:
        return "grpo"
    return None


COMMON_PROCESS_COUNTS = (1, 2, 4, 8, 16, 32, 64)
MAX_PROCESSES = 64


def _only_at(
    kind: str,
    ng: int,
    ng_v: Value | None,
    micro: int,
    per_device: Value,
    accum: int | None,
    spg_v: Value | None,
) -> dict[str, Any] | None:
    """A lone config (process count unknown): the process counts at which the default generation batch
    (micro x processes x steps_per_generation) divides by num_generations, when a common count fails.
    An explicit generation_batch_size is judged only at a known process count."""
    spg = count(spg_v) if spg_v is not None else accum
    if spg is None:
        return None
    valid = [n for n in range(1, MAX_PROCESSES + 1) if (micro * n * spg) % ng == 0]
    failing = [n for n in COMMON_PROCESS_COUNTS if n not in valid]
    if not failing:
        return None
    shown = ", ".join(str(n) for n in valid[:6]) + (", ..." if len(valid) > 6 else "")
    where = f"only at {shown} processes" if valid else f"at no process count up to {MAX_PROCESSES}"
    source = "steps_per_generation" if spg_v is not None else "gradient_accumulation_steps"
    return {
        "kind": "only_at",
        "trainer": kind,
        "severity": "warning",
        "location": ng_v.origin if ng_v is not None and ng_v.origin else per_device.origin,
        "related": [loc for loc in (per_device.origin,) if loc is not None],
        "value": micro * spg,
        "divisor": ng,
        "detail": f"{micro} per device x processes x {spg} ({source}) is a multiple of num_generations {ng} "
        f"{where}; on {', '.join(str(n) for n in failing[:3])} processes",
    }


def _is_true(v: Value | None) -> bool:
    return v is not None and v.known and (v.value is True or str(v.value).lower() == "true")


def generation_facts(
    plan: RunPlan, processes: int | None, per_device: Value, accumulation: Value
) -> dict[str, Any]:
    """The generation batch of an online RL run and what its config check would raise.

    {trainer, num_generations, steps_per_generation, generation_batch_size, vllm_mode, problems: [...]}
    with each problem {kind, location, related, value, divisor, detail}; None values where unknown.
    An empty dict when the run is not an online RL run."""
    kind = online_trainer(plan)
    if kind is None:
        return {}
    t = plan.training
    ng_v = _value(t, "num_generations")
    ng = count(ng_v) if ng_v is not None else DEFAULT_GENERATIONS[kind]
    ng_at: Location | None = ng_v.origin if ng_v is not None else None
    spg_v = _value(t, "steps_per_generation")
    gbs_v = _value(t, "generation_batch_size")
    micro = count(per_device) if per_device.known else None
    accum = count(accumulation) if accumulation.known else None
    use_vllm = _is_true(_value(t, "use_vllm"))
    mode_v = _value(t, "vllm_mode")
    vllm_mode = (
        (str(mode_v.value) if mode_v is not None and mode_v.known else "colocate") if use_vllm else None
    )
    out: dict[str, Any] = {
        "trainer": kind,
        "num_generations": ng,
        "vllm_mode": vllm_mode,
        "processes": processes,
        "steps_per_generation": None,
        "generation_batch_size": None,
        "problems": [],
    }
    if ng is None or micro is None:
        return out
    if processes is None:
        item = _only_at(kind, ng, ng_v, micro, per_device, accum, _value(t, "steps_per_generation"))
        if item is not None:
            out["problems"].append(item)
        return out
    global_batch = micro * processes
    spg = count(spg_v) if spg_v is not None else None
    gbs = count(gbs_v) if gbs_v is not None else None
    problems: list[dict[str, Any]] = out["problems"]
    if gbs is not None and spg is None:
        if gbs % global_batch:
            problems.append(
                {
                    "kind": "generation_batch_not_multiple",
                    "trainer": kind,
                    "location": gbs_v.origin if gbs_v is not None else None,
                    "related": [loc for loc in (per_device.origin,) if loc is not None],
                    "value": gbs,
                    "divisor": global_batch,
                    "detail": f"generation_batch_size {gbs} is not a multiple of the global batch "
                    f"{global_batch} ({micro} per device x {processes} processes)",
                }
            )
            return out
        spg = gbs // global_batch
    elif gbs is None:
        spg = spg if spg is not None else accum
        if spg is None:
            return out
        gbs = global_batch * spg
    else:
        return out  # both set: TRL raises "can not be both configured" (a config error, not a batch fact)
    out["steps_per_generation"] = spg
    out["generation_batch_size"] = gbs
    anchor = (gbs_v or spg_v or per_device).origin
    if gbs % ng:
        source = "steps_per_generation" if spg_v is not None else "gradient_accumulation_steps"
        problems.append(
            {
                "kind": "generation_batch",
                "trainer": kind,
                "location": ng_at or anchor,
                "related": [loc for loc in (anchor, per_device.origin) if loc is not None and loc != ng_at],
                "value": gbs,
                "divisor": ng,
                "detail": f"generation_batch_size {gbs} ({micro} per device x {processes} processes x {spg} "
                f"steps per generation, from {source}) is not a multiple of num_generations {ng}",
            }
        )
    do_eval = _is_true(_value(t, "do_eval"))
    strategy = _value(t, "eval_strategy") or _value(t, "evaluation_strategy")
    evaluates = do_eval and not (strategy is not None and str(strategy.value).lower() == "no")
    eval_v = _value(t, "per_device_eval_batch_size")
    ng_eval_v = _value(t, "num_generations_eval")
    ng_eval = count(ng_eval_v) if ng_eval_v is not None else ng
    eval_micro = count(eval_v) if eval_v is not None else 8  # TrainingArguments default
    if evaluates and ng_eval and eval_micro and (eval_micro * processes) % ng_eval:
        eval_ng = ng_eval_v or ng_v  # the value the eval group size comes from
        problems.append(
            {
                "kind": "eval_batch",
                "trainer": kind,
                "location": (eval_v or ng_eval_v or ng_v or per_device).origin,
                "related": [eval_ng.origin] if eval_ng and eval_ng.origin else [],
                "value": eval_micro * processes,
                "divisor": ng_eval,
                "detail": f"the global eval batch {eval_micro * processes} ({eval_micro} per device x "
                f"{processes} processes) is not a multiple of num_generations {ng_eval}",
            }
        )
    return out
