"""How a run distributes its model: strategy, sharding, offload, and the files it names."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value
from advisor.sources.document import Location

OFFLOAD_DEVICES = {"cpu", "nvme"}


def _entry(ns: Namespace, dotted: str) -> Value | None:
    e = ns.lookup(dotted)
    return e if isinstance(e, Value) and e.known else None


def _origin(v: Value | None) -> Location | None:
    return v.origin if v is not None else None


def zero_stage(plan: Any) -> Value | None:
    """The ZeRO stage in force: the DeepSpeed file's, else accelerate's zero_stage."""
    for ns, path in ((plan.deepspeed, "zero_optimization.stage"), (plan.accelerate, "deepspeed_config.zero_stage")):
        v = _entry(ns, path)
        if v is not None and isinstance(v.value, int | str) and str(v.value).isdigit():
            return Value(int(v.value), v.origin, v.source)
    dist = str(plan.accelerate.distributed_type or "").upper()
    if dist == "DEEPSPEED" and not plan.deepspeed:
        return Value(2, _origin(_entry(plan.accelerate, "distributed_type")), "default",
                     note="accelerate's DeepSpeed plugin defaults to ZeRO stage 2")
    return None


def _fsdp(plan: Any) -> Value | None:
    dist = _entry(plan.accelerate, "distributed_type")
    if dist is not None and str(dist.value).upper() == "FSDP":
        return dist
    for key in ("fsdp", "fsdp_version"):
        v = _entry(plan.training, key)
        if v is not None and v.value not in (None, False, "", [], "no_shard"):
            return v
    return None


def offload(plan: Any) -> tuple[Value | None, Value | None]:
    """(optimizer offload, parameter offload): the Value that turns each on, if any."""
    opt = param = None
    for ns, path, which in (
        (plan.deepspeed, "zero_optimization.offload_optimizer.device", "opt"),
        (plan.deepspeed, "zero_optimization.offload_param.device", "param"),
        (plan.accelerate, "deepspeed_config.offload_optimizer_device", "opt"),
        (plan.accelerate, "deepspeed_config.offload_param_device", "param"),
    ):
        v = _entry(ns, path)
        if v is not None and str(v.value).lower() in OFFLOAD_DEVICES:
            if which == "opt":
                opt = opt or v
            else:
                param = param or v
    legacy = _entry(plan.deepspeed, "zero_optimization.cpu_offload")
    if legacy is not None and legacy.value is True:
        opt = opt or legacy
    for ns, path in (
        (plan.accelerate, "fsdp_config.fsdp_offload_params"),
        (plan.training, "fsdp_config.offload_params"),
        (plan.training, "fsdp_config.fsdp_offload_params"),
        (plan.training, "fsdp_config.cpu_offload"),
    ):
        v = _entry(ns, path)
        if v is not None and v.value is True:
            param = param or v
            opt = opt or v
    fsdp = _entry(plan.training, "fsdp")
    if fsdp is not None and "offload" in str(fsdp.value):
        param = param or fsdp
        opt = opt or fsdp
    return opt, param


def run_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("run")
    stage = zero_stage(plan)
    fsdp = _fsdp(plan)
    if fsdp is not None:
        strategy = Value("fsdp", fsdp.origin, fsdp.source)
    elif stage is not None:
        strategy = Value(f"zero{stage.value}", stage.origin, stage.source, note=stage.note)
    else:
        world = names["batch"].world_size
        if isinstance(world, int):
            strategy = Value("ddp" if world > 1 else "single", None, "derived")
        else:
            strategy = Value(None, None, "derived", unknown="world size unknown")
    ns.set("strategy", strategy)
    ns.set("zero_stage", stage or Value(None, None, "derived"))
    sharded = strategy.value == "fsdp" or (stage is not None and stage.value >= 2)
    ns.set("sharded", Value(sharded, strategy.origin, "derived"))
    ns.set("shards_params", Value(strategy.value in {"fsdp", "zero3"}, strategy.origin, "derived"))
    opt, param = offload(plan)
    ns.set("offload_optimizer", opt or Value(False, None, "derived"))
    ns.set("offload_params", param or Value(False, None, "derived"))
    ns.set("offload", Value(bool(opt or param), _origin(opt or param), "derived"))
    missing = [
        {"location": r.named_at, "raw": r.raw, "role": r.role}
        for r in plan.spec.references
        if r.path is None
    ]
    ns.set("missing_references", Value(missing, None, "derived"))
    ns.set("name", Value(plan.name, plan.root_location, "derived"))
    ns.set("launcher", Value(plan.launch.launcher, plan.root_location, "derived"))
    return ns
