"""The `batch` namespace: world size and effective batch of a run, and the batch problems rules judge.

It assembles facts computed by one module per job: world_size.py (the processes each launcher starts),
gpu_visibility.py (the GPUs a run can see), deepspeed_batch.py (DeepSpeed's batch triangle and who
reads the JSON), batch_conflicts.py (accumulation or micro-batch written twice), generation_batch.py
(GRPO/RLOO generations), and here: split_batches and the native DeepSpeed batch.
"""

from __future__ import annotations

from typing import Any

from advisor.core.document import Location
from advisor.core.provenance import Namespace, Value
from advisor.facts.batch_conflicts import batch_conflicts
from advisor.facts.counts import count, count_value, strict_int
from advisor.facts.declare import ANY, FactNamespace, fact
from advisor.facts.deepspeed_batch import (
    DsBatch,
    deepspeed_batch,
    deepspeed_batch_check,
    deepspeed_consumer,
    deepspeed_scalar,
    is_auto,
)
from advisor.facts.gpu_visibility import visible_gpus
from advisor.facts.namespace_entries import value_entry
from advisor.facts.world_size import (
    data_parallel_gpus,
    has_training_arguments,
    implied_launcher,
    parallel_divisor,
    processes,
)
from advisor.plan.run_plan import RunPlan


class BatchFacts(
    FactNamespace, name="batch", doc="How many processes run and how many samples one optimizer step sees."
):
    processes_per_node = fact(int, "processes the launcher starts on each node", unit="processes")
    nodes = fact(int, "nodes the launcher starts processes on", unit="nodes")
    pinned = fact(bool, "the process count is written, not taken from the visible GPUs")
    launcher = fact(str, "the launcher the process count is implied by (torchrun, accelerate, ...)")
    follows = fact(str, "what an unpinned process count follows (e.g. the GPUs of the machine)")
    visible_gpus = fact(list[int], "GPU indices CUDA_VISIBLE_DEVICES (or an equivalent) selects")
    selected_via = fact(str, "what selects the visible GPUs (CUDA_VISIBLE_DEVICES, --gpus, ...)")
    world_size = fact(int, "processes in the job: processes per node x nodes", unit="processes")
    model_parallel_size = fact(
        int, "tensor x pipeline parallel size that divides the world", unit="processes"
    )
    dp_size = fact(int, "data-parallel processes: world size / model-parallel size", unit="processes")
    per_device = fact(int, "micro batch per process (per_device_train_batch_size)", unit="samples")
    accumulation = fact(int, "gradient accumulation steps", unit="steps")
    dataparallel_gpus = fact(int, "GPUs one process drives under nn.DataParallel", unit="GPUs")
    split_batches = fact(ANY, "accelerator_config.split_batches (the written value when true)")
    split_problems = fact(
        list[dict],
        "a split batch that does not divide by the process count",
        items=("batch", "location", "processes", "related"),
    )
    generation = fact(dict, "generation batch of GRPO-style trainers (facts/generation_batch.py)")
    generation_problems = fact(
        list[dict],
        "generation or eval batches that do not divide as the trainer requires",
        items=("detail", "divisor", "kind", "location", "related", "severity", "trainer", "value"),
    )
    effective_batch = fact(
        int, "samples per optimizer step: micro x accumulation x data-parallel", unit="samples"
    )
    per_process_batch = fact(int, "samples per optimizer step of one process", unit="samples")
    deepspeed_consumer = fact(str, "who reads the DeepSpeed batch keys: hf (the Trainer) or deepspeed")
    deepspeed_problems = fact(
        list[dict],
        "DeepSpeed batch keys that fail at this world size or hold only at some",
        items=(
            "consumer",
            "derived_gas",
            "derived_micro",
            "detail",
            "expected",
            "failing",
            "gas",
            "kind",
            "location",
            "micro",
            "related",
            "severity",
            "train",
            "valid_worlds",
            "world",
        ),
    )
    conflicts = fact(
        list[dict],
        "batch settings written twice with different values (HF and DeepSpeed, flags and files)",
        items=(
            "detail",
            "ds_value",
            "hf_default",
            "hf_key",
            "hf_value",
            "key",
            "kind",
            "location",
            "related",
            "source",
            "string",
        ),
    )


def _unknown(ns: Namespace, key: str) -> str | None:
    """Why the value set under key is unknown (None when it is known or unset)."""
    entry = value_entry(ns, key)
    return entry.unknown if entry is not None else None


def batch_facts(plan: RunPlan) -> BatchFacts:
    ns = BatchFacts()
    per_node, nodes, pinned = processes(plan)
    ns.processes_per_node = per_node
    ns.nodes = nodes
    ns.pinned = Value(pinned, per_node.origin, "derived")
    ns.launcher = Value(implied_launcher(plan), per_node.origin, "derived")
    ns.follows = Value(None if pinned else per_node.note, per_node.origin, "derived")
    visible = visible_gpus(plan)
    ns.visible_gpus = Value(visible.ids, visible.origin, "derived", unknown=visible.unknown)
    ns.selected_via = Value(visible.via if visible.ids is not None else None, visible.origin, "derived")

    world = None
    per_node = count_value(per_node, "processes per node")
    nodes = count_value(nodes, "nodes")
    if per_node.known and nodes.known:
        world = int(per_node.value) * int(nodes.value)
        related = [loc for loc in (nodes.origin,) if loc is not None]
        note = (
            "; ".join(n for n in (per_node.note, nodes.note) if n and nodes.source != "default")
            or per_node.note
        )
        ns.world_size = Value(world, per_node.origin, "derived", related=related, note=note)
    else:
        reason = per_node.unknown or nodes.unknown or "unknown"
        ns.world_size = Value(None, per_node.origin, "derived", unknown=reason)

    divisor, div_where = parallel_divisor(plan)
    ns.model_parallel_size = Value(
        divisor, div_where[0] if div_where else None, "derived", related=div_where[1:]
    )
    dp = world // divisor if world is not None and divisor and world % divisor == 0 else None
    if world is not None and dp is None:
        ns.dp_size = Value(
            None,
            None,
            "derived",
            unknown=f"world size {world} is not divisible by tp x cp x sp = {divisor}",
        )
    else:
        ns.dp_size = Value(
            dp,
            per_node.origin,
            "derived",
            unknown=None if dp is not None else _unknown(ns, "world_size") or "world size unknown",
        )

    micro, accum = _micro_and_accum(plan)
    ds = native_deepspeed_batch(plan, dp)
    ds_origin = None
    if ds is not None:
        anchor = next(
            v
            for v in (
                deepspeed_scalar(plan, k)
                for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
            )
            if v is not None
        )
        ds_origin = anchor.origin
        derived = f"DeepSpeed's batch derivation at {dp} data-parallel processes"
        micro = Value(
            ds.micro, _ds_origin(plan, "train_micro_batch_size_per_gpu", anchor), "deepspeed", note=derived
        )
        accum = Value(
            ds.gas, _ds_origin(plan, "gradient_accumulation_steps", anchor), "deepspeed", note=derived
        )
    ns.per_device = micro
    ns.accumulation = accum
    n_gpu, _ = data_parallel_gpus(plan)
    ns.dataparallel_gpus = n_gpu or Value(None, None, "derived")
    split = split_batches(plan)
    ns.split_batches = split or Value(False, None, "default")
    ns.split_problems = Value(_split_problems(split, micro, dp), None, "derived")
    if split is not None and dp is not None and micro.known and accum.known:
        # accelerate splits each per_device_train_batch_size batch over the processes
        # (accelerate/data_loader.py:1284 `dataloader.batch_size // num_processes`)
        m, g = int(micro.value), int(accum.value)
        related = [loc for loc in (accum.origin, split.origin) if loc is not None]
        note = f"{m} per step split over {dp} processes x {g} accumulation (split_batches)"
        ns.effective_batch = Value(m * g, micro.origin, "derived", related=related, note=note)
        ns.per_process_batch = Value(max(m // dp, 1) * g, micro.origin, "derived")
    elif n_gpu is not None and not n_gpu.known:
        ns.effective_batch = Value(None, n_gpu.origin, "derived", unknown=n_gpu.unknown)
    elif dp is not None and micro.known and accum.known:
        m, g = int(micro.value), int(accum.value)
        gpus = int(n_gpu.value) if n_gpu is not None else 1
        eff = m * g * dp * gpus
        related = [loc for loc in (accum.origin, per_node.origin) if loc is not None]
        if n_gpu is not None:
            note = f"{m} per device x {gpus} GPUs under nn.DataParallel x {g} accumulation"
        else:
            note = f"{m} per device x {g} accumulation x {dp} data-parallel processes"
        if ds is not None:
            note += " (DeepSpeed's batch derivation)"
        ns.effective_batch = Value(eff, ds_origin or micro.origin, "derived", related=related, note=note)
        ns.per_process_batch = Value(m * g * gpus, micro.origin, "derived")
    else:
        reason = micro.unknown or accum.unknown or _unknown(ns, "dp_size") or "world size or batch unknown"
        ns.effective_batch = Value(None, micro.origin, "derived", unknown=reason)

    ns.deepspeed_consumer = Value(deepspeed_consumer(plan), None, "derived")
    ns.deepspeed_problems = Value(deepspeed_batch_check(plan, micro, accum, world, dp), None, "derived")
    ns.conflicts = Value(batch_conflicts(plan), None, "derived")
    from advisor.facts.generation_batch import generation_facts

    generation = generation_facts(plan, dp, micro, accum)
    ns.generation = Value(generation, None, "derived")
    ns.generation_problems = Value(list(generation.get("problems", [])), None, "derived")
    return ns


def split_batches(plan: RunPlan) -> Value | None:
    """TrainingArguments `accelerator_config: {split_batches: true}` (the value, when it is true)."""
    entry = plan.training.lookup("accelerator_config.split_batches")
    if (
        isinstance(entry, Value)
        and entry.known
        and (entry.value is True or str(entry.value).lower() == "true")
    ):
        return entry
    return None


def _split_problems(split: Value | None, micro: Value, dp: int | None) -> list[dict[str, Any]]:
    """accelerate refuses a split batch that does not divide by the process count
    (accelerate/data_loader.py:1183-1187: `batch_size > 1 and batch_size % num_processes != 0` raises
    ValueError in prepare_data_loader; BatchSamplerShard:160 the same)."""
    if split is None or dp is None or dp <= 1 or not micro.known:
        return []
    m = int(micro.value)
    if m <= 1 or m % dp == 0:
        return []
    return [
        {
            "location": micro.origin or split.origin,
            "related": [split.origin] if split.origin is not None and split.origin != micro.origin else [],
            "batch": m,
            "processes": dp,
        }
    ]


def _micro_and_accum(plan: RunPlan) -> tuple[Value, Value]:
    t = plan.training
    if has_training_arguments(plan):
        no_batch = "no per-device batch size is written"
    else:
        no_batch = (
            "no per-device batch size: the run reads no TrainingArguments "
            "(no training file and no TrainingArguments flags on a command)"
        )
    micro = value_entry(t, "per_device_train_batch_size") or Value(None, None, "default", unknown=no_batch)
    accum = value_entry(t, "gradient_accumulation_steps") or Value(1, None, "default")
    batch_size = value_entry(t, "batch_size")
    if t.dialect == "axolotl" and batch_size is not None and accum.source == "default":
        m, b = count(micro), count(batch_size)
        if m and b:
            accum = Value(
                b // m, batch_size.origin, "training_args", note=f"batch_size {b} // micro_batch_size {m}"
            )
    if plan.deepspeed:
        # a DeepSpeed number stands in for a TrainingArguments value that is not written
        ds_micro = value_entry(plan.deepspeed, "train_micro_batch_size_per_gpu")
        ds_accum = value_entry(plan.deepspeed, "gradient_accumulation_steps")
        if ds_micro is not None and strict_int(ds_micro.value) is not None and micro.source == "default":
            micro = ds_micro
        if ds_accum is not None and strict_int(ds_accum.value) is not None and accum.source == "default":
            accum = ds_accum
    return count_value(micro, "the per-device batch size"), count_value(accum, "gradient_accumulation_steps")


def _ds_origin(plan: RunPlan, key: str, anchor: Value) -> Location | None:
    v = deepspeed_scalar(plan, key)
    return v.origin if v is not None else anchor.origin


def native_deepspeed_batch(plan: RunPlan, dp: int | None) -> DsBatch | None:
    """DeepSpeed alone (no TrainingArguments): the batch values as DeepSpeed derives them at this
    data-parallel size (§3.1), when they resolve without an error."""
    if dp is None or deepspeed_consumer(plan) != "native":
        return None
    values = [
        deepspeed_scalar(plan, k)
        for k in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
    ]
    if any(is_auto(v) for v in values):
        return None
    ints = [strict_int(v.value) if v is not None else None for v in values]
    if any(v is not None and n is None for v, n in zip(values, ints, strict=True)):
        return None
    result = deepspeed_batch(ints[0], ints[1], ints[2], dp)
    return result if result.error is None else None
