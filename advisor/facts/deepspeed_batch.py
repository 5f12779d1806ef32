"""DeepSpeed's own batch arithmetic (config-formats.md §3.1): the missing batch values are derived with
integer floor division at the data-parallel world size, then train_batch_size == micro x accumulation x
world is asserted; which consumer (HF's integration, accelerate, DeepSpeed itself) reads the JSON."""

from __future__ import annotations

from typing import Any

from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.facts.counts import strict_int
from advisor.facts.world_size import has_training_arguments
from advisor.plan.run_plan import RunPlan

# ------------------------------------------------------------------------------------------------
# DeepSpeed batch arithmetic (DeepSpeed runtime/config.py _set_batch_related_parameters and
# _batch_assertion)
# ------------------------------------------------------------------------------------------------


@record(frozen=True, slots=True)
class DsBatch:
    train: int | None
    micro: int | None
    gas: int | None
    error: str | None  # DeepSpeed's assertion text when the values do not hold at this world size


def deepspeed_batch(train: int | None, micro: int | None, gas: int | None, world: int) -> DsBatch:
    """Derive the missing batch values the way DeepSpeed does (integer floor division at the
    data-parallel world size), then apply DeepSpeed's assertions.

    >>> deepspeed_batch(24, 3, None, 16)
    DsBatch(train=24, micro=3, gas=0, error='Gradient accumulation steps: 0 has to be greater than 0')
    """
    if world < 1:
        raise ValueError(f"world size must be at least 1, got {world}")
    # A written value of 0 or below fails _batch_assertion (deepspeed 0.19.8 runtime/config.py lines
    # 596-600: each "has to be greater than 0"), or earlier with ZeroDivisionError in
    # _set_batch_related_parameters (line 621, train_batch // micro_batch); it is never divided here.
    for name, written in (
        ("Train batch size", train),
        ("Micro batch size per gpu", micro),
        ("Gradient accumulation steps", gas),
    ):
        if written is not None and written <= 0:
            return DsBatch(train, micro, gas, f"{name}: {written} has to be greater than 0")
    if train is not None and micro is not None and gas is not None:
        pass
    elif train is not None and micro is not None:
        gas = train // micro // world
    elif train is not None and gas is not None:
        micro = (train // world // gas) if gas else 0
    elif micro is not None and gas is not None:
        train = micro * gas * world
    elif train is not None:
        gas, micro = 1, train // world
    elif micro is not None:
        gas, train = 1, micro * world
    else:
        return DsBatch(
            train,
            micro,
            gas,
            "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
        )
    assert train is not None and micro is not None and gas is not None
    if train <= 0:
        return DsBatch(train, micro, gas, f"Train batch size: {train} has to be greater than 0")
    if micro <= 0:
        return DsBatch(train, micro, gas, f"Micro batch size per gpu: {micro} has to be greater than 0")
    if gas <= 0:
        return DsBatch(train, micro, gas, f"Gradient accumulation steps: {gas} has to be greater than 0")
    if train != micro * gas * world:
        return DsBatch(
            train,
            micro,
            gas,
            "Check batch related parameters. train_batch_size is not equal to "
            f"micro_batch_per_gpu * gradient_acc_step * world_size {train} != {micro} * {gas} * {world}",
        )
    return DsBatch(train, micro, gas, None)


def deepspeed_valid_world_sizes(
    train: int | None, micro: int | None, gas: int | None, upto: int = 1024
) -> list[int]:
    """The data-parallel world sizes (1..upto) at which DeepSpeed accepts these batch values."""
    return [w for w in range(1, upto + 1) if deepspeed_batch(train, micro, gas, w).error is None]


COMMON_WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64)


def deepspeed_consumer(plan: RunPlan) -> str | None:
    """Who reads the DeepSpeed JSON: "hf" (the HF Trainer's integration fills "auto" from
    TrainingArguments and raises on mismatches) or "native" (DeepSpeed alone: `--deepspeed_config`,
    or a DeepSpeed file with no TrainingArguments in the run). None when the run has no DeepSpeed file."""
    if plan.spec.deepspeed is None:
        return None
    command = plan.spec.command
    if (
        command is not None
        and "deepspeed_config" in command.script_args
        and "deepspeed" not in command.script_args
    ):
        return "native"
    return "hf" if has_training_arguments(plan) else "native"


def deepspeed_scalar(plan: RunPlan, key: str) -> Value | None:
    v = plan.deepspeed.entry(key)
    return v if isinstance(v, Value) and v.known else None


def is_auto(v: Value | None) -> bool:
    return v is not None and isinstance(v.value, str) and v.value.strip().lower() == "auto"


def deepspeed_batch_check(
    plan: RunPlan, per_device: Value, accumulation: Value, world: int | None, dp: int | None
) -> list[dict[str, Any]]:
    """GA102's evidence: the DeepSpeed batch values that fail (or only hold at some world sizes)."""
    consumer = deepspeed_consumer(plan)
    if consumer is None:
        return []
    tv, mv, gv = (
        deepspeed_scalar(plan, k)
        for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    )
    present = [v for v in (tv, mv, gv) if v is not None]
    if not present:
        return []
    anchor = tv or mv or gv
    assert anchor is not None
    item: dict[str, Any] = {"location": anchor.origin, "consumer": consumer, "world": dp}

    if consumer == "hf":
        # HF fills "auto" from TrainingArguments; a written train_batch_size must equal
        # world_size x per_device_train_batch_size x gradient_accumulation_steps.
        train = strict_int(tv.value) if tv is not None else None
        if train is None or plan.training.auto_find_batch_size is True:
            return []
        pd, acc = per_device.value, accumulation.value
        if not (isinstance(pd, int) and isinstance(acc, int)) or pd <= 0 or acc <= 0:
            return []
        item.update(
            train=train,
            micro=pd,
            gas=acc,
            world=world,
            related=[loc for loc in (per_device.origin, accumulation.origin) if loc is not None],
        )
        if world is not None:
            expected = world * pd * acc
            if train == expected:
                return []
            item.update(
                kind="hf_mismatch",
                expected=expected,
                severity="error",
                detail=f"ds train_batch_size={train} vs hf train_batch_size (calculated)={expected}"
                f" ({world} processes x {pd} per device x {acc} accumulation)",
            )
            return [item]
        per_process = pd * acc
        worlds = [train // per_process] if train % per_process == 0 else []
        item.update(
            kind="hf_only_at",
            valid_worlds=worlds,
            severity="warning",
            detail=f"train_batch_size {train} = processes x {pd} per device x {acc} accumulation"
            + (f" holds only at {worlds[0]} processes" if worlds else " holds at no process count"),
        )
        return [item]

    # native DeepSpeed: every value must be a number; "auto" means an HF/accelerate template
    if any(is_auto(v) for v in present):
        return []
    values = [strict_int(v.value) if v is not None else None for v in (tv, mv, gv)]
    if any(v is not None and (n is None or n <= 0) for v, n in zip((tv, mv, gv), values, strict=True)):
        return []  # a string, a float or a value <= 0 where DeepSpeed expects a count: GA001's business
    train, micro, gas = values
    if train is None and micro is None:
        item.update(
            kind="missing",
            severity="error",
            detail="neither train_batch_size nor train_micro_batch_size_per_gpu is given",
        )
        return [item]
    item.update(train=train, micro=micro, gas=gas)
    if dp is not None:
        result = deepspeed_batch(train, micro, gas, dp)
        if result.error is None:
            return []
        item.update(
            kind="fails",
            severity="error",
            derived_micro=result.micro,
            derived_gas=result.gas,
            valid_worlds=_shown(deepspeed_valid_world_sizes(train, micro, gas)),
            detail=f"{_derivation(train, micro, gas, dp, result)} ('{result.error}')",
        )
        return [item]
    worlds = deepspeed_valid_world_sizes(train, micro, gas)
    failing_common = [w for w in COMMON_WORLD_SIZES if w not in worlds]
    if len(worlds) >= 1024:
        return []  # holds at every world size (only micro, or micro + gas)
    item.update(
        kind="only_at",
        valid_worlds=_shown(worlds),
        failing=failing_common,
        severity="warning" if failing_common else "info",
        detail=_written(train, micro, gas),
    )
    return [item]


def _derivation(train: int | None, micro: int | None, gas: int | None, world: int, result: DsBatch) -> str:
    if train is not None and micro is not None and gas is None:
        return f"gradient_accumulation_steps = {train} // {micro} // {world} = {result.gas}"
    if train is not None and gas is not None and micro is None:
        return f"train_micro_batch_size_per_gpu = {train} // {world} // {gas} = {result.micro}"
    if train is not None and micro is None and gas is None:
        return f"train_micro_batch_size_per_gpu = {train} // {world} = {result.micro}"
    return f"{result.train} != {result.micro} x {result.gas} x {world}"


def _shown(worlds: list[int], limit: int = 12) -> list[int | str]:
    return [*worlds[:limit], "..."] if len(worlds) > limit else list(worlds)


def _written(train: int | None, micro: int | None, gas: int | None) -> str:
    parts = [
        f"{k} {v}"
        for k, v in (
            ("train_batch_size", train),
            ("train_micro_batch_size_per_gpu", micro),
            ("gradient_accumulation_steps", gas),
        )
        if v is not None
    ]
    return ", ".join(parts)
