"""How a run distributes its model: strategy, sharding, offload, and the files it names."""

from __future__ import annotations

from typing import Any

from advisor.provenance import Namespace, Value
from advisor.sources.document import Location

OFFLOAD_DEVICES = {"cpu", "nvme"}

# FSDP sharding strategies (accelerate FSDP_SHARDING_STRATEGY order: 1 FULL_SHARD ... 5 HYBRID_SHARD_ZERO2)
_FSDP_STRATEGIES = ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"]
# strategies that gather the parameters layer by layer on every micro-batch (ZeRO-3-like)
PARAM_SHARDING = {"FULL_SHARD", "HYBRID_SHARD"}


def _entry(ns: Namespace, dotted: str) -> Value | None:
    e = ns.lookup(dotted)
    return e if isinstance(e, Value) and e.known else None


def _origin(v: Value | None) -> Location | None:
    return v.origin if v is not None else None


def zero_stage(plan: Any) -> Value | None:
    """The ZeRO stage in force: the DeepSpeed file's, else accelerate's zero_stage."""
    for ns, path in (
        (plan.deepspeed, "zero_optimization.stage"),
        (plan.accelerate, "deepspeed_config.zero_stage"),
    ):
        v = _entry(ns, path)
        if (
            v is not None
            and isinstance(v.value, int | str)
            and not isinstance(v.value, bool)
            and str(v.value).isdigit()
        ):
            return Value(int(v.value), v.origin, v.source)
    dist = str(plan.accelerate.distributed_type or "").upper()
    if dist == "DEEPSPEED" and not plan.deepspeed:
        return Value(
            2,
            _origin(_entry(plan.accelerate, "distributed_type")),
            "default",
            note="accelerate's DeepSpeed plugin defaults to ZeRO stage 2",
        )
    return None


def _fsdp_off(value: Any) -> bool:
    if value in (None, False, "", [], "false", "False"):
        return True
    return isinstance(value, str) and value.strip().lower() in {"no_shard", "false", "none"}


def _fsdp(plan: Any) -> Value | None:
    dist = _entry(plan.accelerate, "distributed_type")
    if dist is not None and str(dist.value).upper() == "FSDP":
        return dist
    for key in ("fsdp", "fsdp_version", "fsdp_config.fsdp_version", "fsdp_config.version"):
        v = _entry(plan.training, key)
        if v is not None and not _fsdp_off(v.value):
            return v
    return None


def fsdp_sharding(plan: Any) -> Value:
    """FULL_SHARD / SHARD_GRAD_OP / NO_SHARD / HYBRID_SHARD / HYBRID_SHARD_ZERO2 for an FSDP run.

    Read from accelerate's fsdp_sharding_strategy (name or 1-based number) or
    fsdp_reshard_after_forward (FSDP2: true = FULL_SHARD, false = SHARD_GRAD_OP; FSDP1: a strategy
    name), from TrainingArguments' `fsdp` words (`full_shard auto_wrap`, `shard_grad_op`, ...) or
    `fsdp_config.reshard_after_forward`. The default is FULL_SHARD.
    """
    places = [
        (plan.accelerate, "fsdp_config.fsdp_sharding_strategy"),
        (plan.accelerate, "fsdp_config.fsdp_reshard_after_forward"),
        (plan.training, "fsdp_config.fsdp_sharding_strategy"),
        (plan.training, "fsdp_config.sharding_strategy"),
        (plan.training, "fsdp_config.fsdp_reshard_after_forward"),
        (plan.training, "fsdp_config.reshard_after_forward"),
    ]
    for ns, path in places:
        v = _entry(ns, path)
        if v is None:
            continue
        raw = v.value
        if isinstance(raw, bool):
            return Value("FULL_SHARD" if raw else "SHARD_GRAD_OP", v.origin, v.source)
        if isinstance(raw, int) and 1 <= raw <= len(_FSDP_STRATEGIES):
            return Value(_FSDP_STRATEGIES[raw - 1], v.origin, v.source)
        text = str(raw).strip().upper()
        if text in {"TRUE", "FALSE"}:
            return Value("FULL_SHARD" if text == "TRUE" else "SHARD_GRAD_OP", v.origin, v.source)
        if text in _FSDP_STRATEGIES:
            return Value(text, v.origin, v.source)
    words = _entry(plan.training, "fsdp")
    if words is not None:
        raw = words.value
        text = " ".join(str(x) for x in raw) if isinstance(raw, list) else str(raw)
        low = text.lower()
        for name in ("hybrid_shard_zero2", "hybrid_shard", "shard_grad_op", "no_shard", "full_shard"):
            if name in low:
                return Value(name.upper(), words.origin, words.source)
    return Value(
        "FULL_SHARD", None, "default", note="FSDP shards parameters (FULL_SHARD) unless told otherwise"
    )


def offload(plan: Any) -> tuple[Value | None, Value | None]:
    """(optimizer offload, parameter offload): the Value that turns each on, if any.

    `"device": "none"` (and accelerate's `offload_*_device: none`) is no offload.
    """
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
        if v is not None and (v.value is True or str(v.value).lower() == "true"):
            param = param or v
            opt = opt or v
    fsdp = _entry(plan.training, "fsdp")
    if fsdp is not None and "offload" in str(fsdp.value):
        param = param or fsdp
        opt = opt or fsdp
    return opt, param


def _device(v: Value | None) -> str:
    if v is None:
        return "none"
    text = str(v.value).lower()
    return text if text in OFFLOAD_DEVICES else "cpu"


def offload_fit(
    plan: Any,
    names: dict[str, Any],
    strategy: str | None,
    sharding: str | None,
    opt: Value | None,
    param: Value | None,
) -> dict[str, Any] | None:
    """Peak GPU memory with the run's offload and without it, from the estimator (model config from
    the shipped catalog or the local HF cache; offline). None when the model or machine is unknown."""
    try:
        from advisor.estimate import TrainingSetup, estimate_memory, resolve_model
    except Exception:  # pragma: no cover - the estimator is optional for rules
        return None
    machine = plan.hardware
    name = plan.model.name
    if machine is None or not isinstance(name, str) or strategy is None:
        return None
    from advisor.facts.precision import accelerate_mode, deepspeed_mode, in_force_mode, training_mode

    batch = names.get("batch")
    try:
        info = resolve_model(name, online=False)
        if info is None:
            return None
        if strategy == "fsdp":
            strat = "fsdp_grad_op" if sharding in {"SHARD_GRAD_OP", "HYBRID_SHARD_ZERO2"} else "fsdp"
        elif strategy in {"zero1", "zero2", "zero3"}:
            strat = strategy
        elif strategy in {"ddp", "zero0"}:
            strat = "ddp"
        else:
            strat = "none"
        dp = batch.dp_size if batch is not None and isinstance(batch.dp_size, int) else 1
        mode = in_force_mode(
            {
                "training": training_mode(plan),
                "accelerate": accelerate_mode(plan),
                "deepspeed": deepspeed_mode(plan),
            }
        ).value
        method = plan.model.method if plan.model.method in {"full", "lora", "qlora"} else "full"
        micro = batch.per_device if batch is not None and isinstance(batch.per_device, int) else None
        seq = plan.model.seq_len if isinstance(plan.model.seq_len, int) else None
        ckpt = plan.training.gradient_checkpointing
        common: dict[str, Any] = {
            "model": info.count(),
            "method": method,
            "micro_batch": micro,
            "seq_len": seq,
            "gradient_checkpointing": ckpt if isinstance(ckpt, bool) else None,
            "precision": mode if mode in {"bf16", "fp16", "fp32"} else None,
            "strategy": strat,
            "world_size": max(dp, 1),
            "gpu_memory_gib": float(machine.memory_gib),
        }
        with_off = estimate_memory(
            TrainingSetup(
                **common,
                offload_optimizer=_device(opt) if opt else "none",
                offload_params=_device(param) if param else "none",
            )
        )
        without = estimate_memory(TrainingSetup(**common))
    except Exception:
        return None
    return {
        "peak_gib": round(with_off.peak_gib, 1),
        "peak_without_gib": round(without.peak_gib, 1),
        "gpu_gib": round(float(machine.memory_gib), 1),
        "fits_without": without.verdict == "fits",
        "verdict_without": without.verdict,
        "model": info.hub_id or name,
    }


def run_facts(plan: Any, names: dict[str, Any]) -> Namespace:
    ns = Namespace("run")
    stage = zero_stage(plan)
    fsdp = _fsdp(plan)
    sharding = None
    if fsdp is not None:
        strategy = Value("fsdp", fsdp.origin, fsdp.source)
        sharding = fsdp_sharding(plan)
        ns.set("fsdp_sharding", sharding)
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
    shards_params = strategy.value == "zero3" or (
        strategy.value == "fsdp" and sharding is not None and sharding.value in PARAM_SHARDING
    )
    ns.set("shards_params", Value(shards_params, strategy.origin, "derived"))
    opt, param = offload(plan)
    ns.set("offload_optimizer", opt or Value(False, None, "derived"))
    ns.set("offload_params", param or Value(False, None, "derived"))
    ns.set("offload", Value(bool(opt or param), _origin(opt or param), "derived"))
    what = " and ".join(w for w, v in (("optimizer states", opt), ("parameters", param)) if v is not None)
    ns.set("offloaded", Value(what or None, _origin(opt or param), "derived"))
    ns.set(
        "offload_device",
        Value(_device(opt or param) if (opt or param) else None, _origin(opt or param), "derived"),
    )
    if opt or param:
        fit = offload_fit(
            plan, names, strategy.value, sharding.value if sharding is not None else None, opt, param
        )
        ns.set("offload_fit", Value(fit, None, "derived"))
    missing = [
        {"location": r.named_at, "raw": r.raw, "role": r.role} for r in plan.spec.references if r.path is None
    ]
    ns.set("missing_references", Value(missing, None, "derived"))
    ns.set("name", Value(plan.name, plan.root_location, "derived"))
    ns.set("launcher", Value(plan.launch.launcher, plan.root_location, "derived"))
    return ns
