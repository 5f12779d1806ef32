"""How a run distributes its model: strategy, sharding, offload, and the files it names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.provenance import Value
from advisor.facts.declare import FactNamespace, fact
from advisor.sources import launchers

if TYPE_CHECKING:
    from advisor.facts.batch import BatchFacts
    from advisor.plan.context import CheckContext
    from advisor.plan.run_plan import RunPlan


class RunFacts(FactNamespace, name="run", doc="How a run distributes its model, and the files it names."):
    name_ = fact(str, "the run's name", key="name")
    launcher = fact(str, "the launcher of the run's command")
    serving = fact(bool, "the command serves a model (vllm), it does not train")
    strategy = fact(str, "none | ddp | zero1 | zero2 | zero3 | fsdp | fsdp_grad_op")
    fsdp_sharding = fact(str, "FSDP's sharding strategy as written")
    zero_stage = fact(int, "DeepSpeed ZeRO stage")
    sharded = fact(bool, "optimizer states, gradients or parameters are sharded")
    shards_params = fact(bool, "parameters are sharded (ZeRO-3, FSDP full shard)")
    offload_optimizer = fact(bool | str, "optimizer states offloaded (the device, or False)")
    offload_params = fact(bool | str, "parameters offloaded (the device, or False)")
    offload = fact(bool, "anything is offloaded")
    offloaded = fact(str, "what is offloaded, in words (optimizer states and parameters)")
    offload_device = fact(str, "where it is offloaded: cpu or nvme")
    missing_references = fact(
        list[dict], "files the run names that do not exist", items=("location", "raw", "role")
    )
    unknown_references = fact(
        list[dict],
        "files the run names that are not in the project, opened from a working folder not known to be it",
        items=("location", "raw", "reason", "role"),
    )
    outside_references = fact(
        list[dict],
        "files the run names outside the project root",
        items=("location", "raw", "reason", "role"),
    )
    sharding_beside = fact(
        str,
        "a launch config of the project that shards (accelerate ZeRO-2/3 or FSDP, a DeepSpeed stage 2/3 "
        "JSON), when no launch names the run's training file and the run has none of its own",
    )


OFFLOAD_DEVICES = {"cpu", "nvme"}

# FSDP sharding strategies (accelerate FSDP_SHARDING_STRATEGY order: 1 FULL_SHARD ... 5 HYBRID_SHARD_ZERO2)
_FSDP_STRATEGIES = ["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"]
# strategies that gather the parameters layer by layer on every micro-batch (ZeRO-3-like)
PARAM_SHARDING = {"FULL_SHARD", "HYBRID_SHARD"}


def _origin(v: Value | None) -> Location | None:
    return v.origin if v is not None else None


def _distributed_type(plan: RunPlan) -> str | None:
    """accelerate's merged distributed_type (file, then --multi_gpu / --use_deepspeed / --use_fsdp)."""
    v = plan.accelerate.known_value("distributed_type")
    return str(v.value).upper() if v is not None and v.value not in (None, "") else None


def accelerate_deepspeed(plan: RunPlan) -> bool:
    """accelerate's deepspeed_config section is in force: distributed_type DEEPSPEED, or no
    distributed_type while a DeepSpeed file is used."""
    dist = _distributed_type(plan)
    if dist is not None:
        return dist == "DEEPSPEED"
    return (
        plan.spec.deepspeed is not None
        or plan.accelerate.known_value("deepspeed_config.deepspeed_config_file") is not None
    )


def accelerate_fsdp(plan: RunPlan) -> bool:
    """accelerate's fsdp_config section is in force: distributed_type FSDP."""
    return _distributed_type(plan) == "FSDP"


def _script_zero_stage(plan: RunPlan) -> Value | None:
    """A script's own --zero_stage N (DeepSpeed-Chat, OpenRLHF) when no DeepSpeed file is read."""
    if plan.spec.deepspeed is not None:
        return None
    v = plan.training.known_value("zero_stage")
    if v is None or v.source == "default":
        return None
    raw = v.value
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= 3:
        return Value(raw, v.origin, v.source, note="ZeRO stage from the script's --zero_stage flag")
    return None


def zero_stage(plan: RunPlan) -> Value | None:
    """The ZeRO stage in force: the DeepSpeed file's, else accelerate's zero_stage (only when
    accelerate runs DeepSpeed), else a script's own --zero_stage flag."""
    places = [(plan.deepspeed, "zero_optimization.stage")]
    if accelerate_deepspeed(plan):
        places.append((plan.accelerate, "deepspeed_config.zero_stage"))
    for ns, path in places:
        v = ns.known_value(path)
        if (
            v is not None
            and isinstance(v.value, int | str)
            and not isinstance(v.value, bool)
            and str(v.value).isdigit()
        ):
            return Value(int(v.value), v.origin, v.source)
    script = _script_zero_stage(plan)
    if script is not None:
        return script
    dist = _distributed_type(plan)
    if dist == "DEEPSPEED" and not plan.deepspeed:
        return Value(
            2,
            _origin(plan.accelerate.known_value("distributed_type")),
            "default",
            note="accelerate's DeepSpeed plugin defaults to ZeRO stage 2",
        )
    return None


def _fsdp_off(value: Any) -> bool:
    if value in (None, False, "", [], "false", "False"):
        return True
    return isinstance(value, str) and value.strip().lower() in {"no_shard", "false", "none"}


def _fsdp(plan: RunPlan) -> Value | None:
    if accelerate_fsdp(plan):
        return plan.accelerate.known_value("distributed_type")
    if _distributed_type(plan) == "DEEPSPEED":
        return None
    for key in ("fsdp", "fsdp_version", "fsdp_config.fsdp_version", "fsdp_config.version"):
        v = plan.training.known_value(key)
        if v is not None and not _fsdp_off(v.value):
            return v
    dist = plan.training.known_value("dist_config.name")  # LLaMA-Factory v1: dist_config: {name: fsdp2}
    if dist is not None and str(dist.value).lower().startswith("fsdp"):
        return dist
    return None


def _deepspeed_unread(plan: RunPlan) -> str | None:
    """DeepSpeed is on but no DeepSpeed config was read: the ZeRO stage (so the strategy) is unknown."""
    if plan.spec.deepspeed is not None:
        return None
    t = plan.training
    flag = t.known_value("deepspeed") or t.known_value("deepspeed_config")
    if (
        flag is not None
        and flag.source != "default"
        and flag.value not in (False, None, "", "false", "False")
    ):
        return "DeepSpeed is on but no DeepSpeed config was read (missing file, or built by the script)"
    unresolved = t.lookup("deepspeed")
    if isinstance(unresolved, Value) and not unresolved.known and unresolved.source != "default":
        return "DeepSpeed is on but no DeepSpeed config was read (missing file, or built by the script)"
    dist = t.known_value("dist_config.name")
    if dist is not None and "deepspeed" in str(dist.value).lower():
        return "DeepSpeed is on but no DeepSpeed config was read (missing file)"
    if launchers.spec_of(plan.launch.launcher).starts_deepspeed:
        return "the deepspeed launcher runs without a DeepSpeed config file: the ZeRO stage is unknown"
    return None


def fsdp_sharding(plan: RunPlan) -> Value:
    """FULL_SHARD / SHARD_GRAD_OP / NO_SHARD / HYBRID_SHARD / HYBRID_SHARD_ZERO2 for an FSDP run.

    Read from accelerate's fsdp_sharding_strategy (name or 1-based number) or
    fsdp_reshard_after_forward (FSDP2: true = FULL_SHARD, false = SHARD_GRAD_OP; FSDP1: a strategy
    name), from TrainingArguments' `fsdp` words (`full_shard auto_wrap`, `shard_grad_op`, ...) or
    `fsdp_config.reshard_after_forward`. The default is FULL_SHARD.
    """
    places = []
    if accelerate_fsdp(plan):
        places += [
            (plan.accelerate, "fsdp_config.fsdp_sharding_strategy"),
            (plan.accelerate, "fsdp_config.fsdp_reshard_after_forward"),
        ]
    places += [
        (plan.training, "fsdp_config.fsdp_sharding_strategy"),
        (plan.training, "fsdp_config.sharding_strategy"),
        (plan.training, "fsdp_config.fsdp_reshard_after_forward"),
        (plan.training, "fsdp_config.reshard_after_forward"),
    ]
    for ns, path in places:
        v = ns.known_value(path)
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
    words = plan.training.known_value("fsdp")
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


def offload(plan: RunPlan, stage: Value | None = None) -> tuple[Value | None, Value | None]:
    """(optimizer offload, parameter offload): the Value that turns each on, if any.

    `"device": "none"` (and accelerate's `offload_*_device: none`) is no offload. DeepSpeed's parameter
    offload exists only under ZeRO-3: at a known stage 0-2 it is not a parameter offload (`stage`).
    """
    opt = param = None
    ds_places = [
        (plan.deepspeed, "zero_optimization.offload_optimizer.device", "opt"),
        (plan.deepspeed, "zero_optimization.offload_param.device", "param"),
    ]
    if accelerate_deepspeed(plan):
        ds_places += [
            (plan.accelerate, "deepspeed_config.offload_optimizer_device", "opt"),
            (plan.accelerate, "deepspeed_config.offload_param_device", "param"),
        ]
    for ns, path, which in ds_places:
        v = ns.known_value(path)
        if v is not None and str(v.value).lower() in OFFLOAD_DEVICES:
            if which == "opt":
                opt = opt or v
            elif not _below_zero3(stage):
                param = param or v
    legacy = plan.deepspeed.known_value("zero_optimization.cpu_offload")
    if legacy is not None and legacy.value is True:
        opt = opt or legacy
    fsdp_places = [(plan.accelerate, "fsdp_config.fsdp_offload_params")] if accelerate_fsdp(plan) else []
    for ns, path in (
        *fsdp_places,
        (plan.training, "fsdp_config.offload_params"),
        (plan.training, "fsdp_config.fsdp_offload_params"),
        (plan.training, "fsdp_config.cpu_offload"),
    ):
        v = ns.known_value(path)
        if v is not None and (v.value is True or str(v.value).lower() == "true"):
            param = param or v
            opt = opt or v
    fsdp = plan.training.known_value("fsdp")
    if fsdp is not None and "offload" in str(fsdp.value):
        param = param or fsdp
        opt = opt or fsdp
    return opt, param


def _below_zero3(stage: Value | None) -> bool:
    # deepspeed 0.19.8 runtime/engine.py:2670-2706: the stage 1/2 optimizer (DeepSpeedZeroOptimizer) is given
    # offload_optimizer_config only; offload_param_config goes to the stage-3 optimizers alone (:2731, :2773)
    return stage is not None and isinstance(stage.value, int) and stage.value < 3


def _device(v: Value | None) -> str:
    if v is None:
        return "none"
    text = str(v.value).lower()
    return text if text in OFFLOAD_DEVICES else "cpu"


def run_facts(plan: RunPlan, batch: BatchFacts) -> RunFacts:
    ns = RunFacts()
    stage = zero_stage(plan)
    fsdp = _fsdp(plan)
    sharding = None
    if fsdp is not None:
        strategy = Value("fsdp", fsdp.origin, fsdp.source)
        sharding = fsdp_sharding(plan)
        ns.fsdp_sharding = sharding
    elif stage is not None:
        strategy = Value(f"zero{stage.value}", stage.origin, stage.source, note=stage.note)
    elif (why := _deepspeed_unread(plan)) is not None:
        strategy = Value(None, None, "derived", unknown=why)
    else:
        world = batch.world_size
        if isinstance(world, int):
            strategy = Value("ddp" if world > 1 else "single", None, "derived")
        else:
            strategy = Value(None, None, "derived", unknown="world size unknown")
    ns.strategy = strategy
    ns.zero_stage = stage or Value(None, None, "derived")
    sharded = strategy.value == "fsdp" or (stage is not None and stage.value >= 2)
    ns.sharded = Value(sharded, strategy.origin, "derived")
    shards_params = strategy.value == "zero3" or (
        strategy.value == "fsdp" and sharding is not None and sharding.value in PARAM_SHARDING
    )
    ns.shards_params = Value(shards_params, strategy.origin, "derived")
    opt, param = offload(plan, stage)
    ns.offload_optimizer = opt or Value(False, None, "derived")
    ns.offload_params = param or Value(False, None, "derived")
    ns.offload = Value(bool(opt or param), _origin(opt or param), "derived")
    what = " and ".join(w for w, v in (("optimizer states", opt), ("parameters", param)) if v is not None)
    ns.offloaded = Value(what or None, _origin(opt or param), "derived")
    ns.offload_device = Value(
        _device(opt or param) if (opt or param) else None, _origin(opt or param), "derived"
    )
    missing = [
        {"location": r.named_at, "raw": r.raw, "role": r.role}
        for r in plan.spec.references
        if r.path is None and r.outside is None and r.written is None and r.unknown is None
    ]
    ns.missing_references = Value(missing, None, "derived")
    # not in the project where it was looked for, but opened from a folder not known to be the project
    unknown = [
        {"location": r.named_at, "raw": r.raw, "role": r.role, "reason": r.unknown}
        for r in plan.spec.references
        if r.path is None and r.outside is None and r.written is None and r.unknown is not None
    ]
    ns.unknown_references = Value(unknown, None, "derived")
    # files named by the run that lie outside the project boundary: not read (advisor/sources/boundary.py)
    outside = [
        {"location": r.named_at, "raw": r.raw, "role": r.role, "reason": r.outside}
        for r in plan.spec.references
        if r.outside is not None
    ]
    ns.outside_references = Value(outside, None, "derived")
    ns.name_ = Value(plan.name, plan.root_location, "derived")
    ns.launcher = Value(plan.launch.launcher, plan.root_location, "derived")
    # an inference server (vLLM): placement facts apply, training ones do not
    ns.serving = Value(launchers.spec_of(plan.launch.launcher).serves, plan.root_location, "derived")
    ns.sharding_beside = _sharding_beside(plan)
    return ns


# What says a file shards: accelerate's `distributed_type: FSDP`, or DEEPSPEED with `zero_stage: 2|3`
# (accelerate commands/config/config_args.py ClusterConfig), and a DeepSpeed JSON's zero_optimization stage.
_ACCELERATE_FSDP = LazyPattern(r"^distributed_type:\s*['\"]?FSDP\b", re.M)
_ACCELERATE_DEEPSPEED = LazyPattern(r"^distributed_type:\s*['\"]?DEEPSPEED\b", re.M)
_ACCELERATE_ZERO = LazyPattern(r"^\s+zero_stage:\s*[23]\b", re.M)
_DEEPSPEED_STAGE = LazyPattern(r'"stage"\s*:\s*[23]\b')
_MAX_CONFIG_BYTES = 64 * 1024


def _sharding_beside(plan: RunPlan) -> Value:
    """A lone training file (no launch command, no accelerate or DeepSpeed file of its run) in a project that
    ships a sharding launch config: SimPO's training_configs/*.yaml, launched in its README with
    accelerate_configs/deepspeed_zero3.yaml. The one-process estimate is then not known to be the run's."""
    spec = plan.spec
    doc = spec.training
    if doc is None or spec.command is not None or spec.accelerate is not None or spec.deepspeed is not None:
        return Value(None, None, "derived")
    root = plan.context.project_root_of(doc.path)
    if root is None:
        return Value(None, None, "derived")
    found = plan.context.derived("sharding-configs", root, lambda: _sharding_config_under(root, plan.context))
    if found is None:
        return Value(None, None, "derived")
    return Value(found.relative_to(root).as_posix(), Location(found, 1, 1), "derived")


def _sharding_config_under(root: Path, context: CheckContext) -> Path | None:
    for path in context.project_files(root, (".yaml", ".yml", ".json")):
        text = context.script_text(path, _MAX_CONFIG_BYTES)
        if not text:
            continue
        if _ACCELERATE_FSDP.search(text) or (
            _ACCELERATE_DEEPSPEED.search(text) and _ACCELERATE_ZERO.search(text)
        ):
            return path
        if "zero_optimization" in text and _DEEPSPEED_STAGE.search(text):
            return path
    return None
