"""From a RunPlan to a ProbeSpec: what the probe runs, decided in the parent (no torch here).

The spec is plain JSON handed to every rank. It says what the run asks for (launcher, process
count, precision, batch, method, ...) and what the probe does instead where this machine cannot do
it (a CPU-only machine runs fp32 or CPU bf16 with gloo; DeepSpeed without deepspeed installed runs
as DDP), each substitution with a note. The prediction is made for what really runs (predict.py).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from advisor.core import datacodec
from advisor.core.provenance import Namespace
from advisor.core.records import field, record
from advisor.plan.run_plan import coerce_text
from advisor.sources import launchers

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

# the launchers the probe can start its worker under (a spec's local_start): a recorded spec naming
# another does not validate
Launcher = str
if not TYPE_CHECKING:
    Launcher = Literal[tuple(s.name for s in launchers.LAUNCHERS.values() if s.local_start is not None)]
DEFAULT_STEPS = 20
DEFAULT_WARMUP = 2
DEFAULT_TIMEOUT = 600.0


@record(slots=True)
class ProbeOptions:
    steps: int = DEFAULT_STEPS  # measured optimizer steps after warm-up
    warmup: int = DEFAULT_WARMUP  # optimizer steps before timing starts
    timeout: float = DEFAULT_TIMEOUT  # wall-time limit per probe launch, seconds
    scaling: bool = False  # also run on one process and report scaling efficiency
    report: Path | None = None  # write the JSON report here
    real_weights: bool = False  # load local weights when the model is a local checkpoint
    online: bool = False  # let the children reach the Hub
    progress: bool = True  # a progress bar on stderr when it is a terminal
    work_dir: Path | None = None  # where specs, logs and rank files go (a temp dir when None)
    python: str | None = None  # interpreter for the children (default: this one)
    # cuda: refuse without a GPU (the CLI's default); cpu: a CPU probe (gloo), also on a GPU machine;
    # auto: the GPU when there is one, else the CPU (the API's default)
    device: Literal["cuda", "cpu", "auto"] = "auto"
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the children


@record(slots=True)
class LoraSpec:
    r: int = 16
    alpha: float | None = None
    dropout: float = 0.05
    targets: list[str] | str | None = None  # None: PEFT's default for the model type


@record(slots=True, kw_only=True)
class ProbeSpec:
    """Everything one probe launch needs; written as spec.json, read by every rank (advisor.core.datacodec
    encodes it and validates a recorded one)."""

    run: str
    launcher: Launcher
    nproc: int | None  # None: the launcher decides on this machine (e.g. torchrun --nproc_per_node gpu)
    nproc_arg: str | None = None  # the value given to the launcher when it differs from nproc (gpu, auto)
    faithful: bool = True  # the process count is the one the run gets on its own machine
    cuda_visible_devices: str | None = None
    accelerate_config: str | None = None  # file passed to accelerate launch (the run's, or a derived copy)
    accelerate_flags: dict[str, str] = field(default_factory=dict)
    device: Literal["cuda", "cpu"]
    model_name: str
    model_source: str
    hf_config: dict[str, Any]  # the model's config.json
    model_path: str | None = None  # local checkpoint folder, used only with real_weights
    real_weights: bool = False
    weights_dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    mixed_precision: Literal["bf16", "fp16"] | None = None  # autocast on top of the weights' dtype
    method: Literal["full", "lora", "qlora"] = "full"
    lora: LoraSpec | None = None
    seq_len: int
    strategy: str = "single"  # single, ddp, zero1..3, fsdp: what runs
    training_args: dict[str, Any] = field(default_factory=dict)
    warmup_steps: int = DEFAULT_WARMUP
    steps: int = DEFAULT_STEPS
    deadline_s: float = DEFAULT_TIMEOUT  # the worker stops training this long after it starts
    seed: int = 0
    out_dir: str = ""
    digest: str = ""
    notes: list[str] = field(default_factory=list)


class Skip(Exception):
    """This run cannot be probed here: status ('skipped' or 'unsupported') and why."""

    def __init__(self, status: str, reason: str, notes: list[str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.notes = notes or []


# TrainingArguments the probe takes from the run: what changes memory, speed or the batch.
PASSTHROUGH = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "lr_scheduler_type",
    "warmup_ratio",
    "bf16",
    "fp16",
    "tf32",
    "gradient_checkpointing",
    "gradient_checkpointing_kwargs",
    "optim",
    "optim_args",
    "dataloader_num_workers",
    "dataloader_pin_memory",
    "dataloader_prefetch_factor",
    "dataloader_persistent_workers",
    "ddp_find_unused_parameters",
    "ddp_bucket_cap_mb",
    "ddp_broadcast_buffers",
    "ddp_backend",
    "ddp_timeout",
    "fsdp",
    "fsdp_config",
    "deepspeed",
    "torch_compile",
    "use_liger_kernel",
    "seed",
)
_INT_ARGS = {
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "dataloader_num_workers",
    "dataloader_prefetch_factor",
    "ddp_bucket_cap_mb",
    "ddp_timeout",
    "seed",
}
_FLOAT_ARGS = {
    "learning_rate",
    "weight_decay",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "warmup_ratio",
}
_BNB_OPTIMIZERS = ("8bit", "bnb", "paged", "lion", "ademamix", "rmsprop_bnb")
_DTYPES = {
    "float32": "fp32",
    "fp32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "fp16": "fp16",
    "half": "fp16",
}


def _plain(ns: Namespace, dotted: str) -> Any:
    v = ns.known_value(dotted)
    return None if v is None else v.value


def _truth(x: Any) -> bool | None:
    if isinstance(x, bool):
        return x
    if isinstance(x, str):
        c = coerce_text(x)
        return c if isinstance(c, bool) else None
    if isinstance(x, int):
        return bool(x)
    return None


def _explicit(ns: Namespace, key: str) -> Any:
    """A value the run wrote (not a plan default)."""
    v = ns.known_value(key)
    if v is None or v.source == "default":
        return None
    return v.value


def run_digest(plan: RunPlan) -> str:
    """sha256 over the run's files (path and bytes): a saved measurement applies while this holds."""
    from advisor.sources.read import ReadRefused, read_bytes

    h = hashlib.sha256()
    for doc in plan.spec.documents:
        try:
            data = read_bytes(Path(doc.path))  # the one safe reader: regular files, bounded
        except (OSError, ReadRefused):
            data = b""
        h.update(Path(doc.path).name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


def _training_args(plan: RunPlan, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in PASSTHROUGH:
        v = plan.training.known_value(key)
        if v is None:
            sub = plan.training.entry(key)
            if isinstance(sub, Namespace) and key in {
                "fsdp_config",
                "gradient_checkpointing_kwargs",
                "optim_args",
            }:
                out[key] = sub.plain()
            continue
        if v.source == "default" and key not in {
            "per_device_train_batch_size",
            "gradient_accumulation_steps",
        }:
            continue
        value = v.value
        if isinstance(value, str) and key in _INT_ARGS | _FLOAT_ARGS:
            value = coerce_text(value)
        if key in _INT_ARGS and isinstance(value, float) and value.is_integer():
            value = int(value)
        if (key in _INT_ARGS and not isinstance(value, int)) or (
            key in _FLOAT_ARGS and not isinstance(value, int | float)
        ):
            notes.append(f"{key}={v.value!r} is not a number: left at the TrainingArguments default")
            continue
        out[key] = value
    return out


def _model_path(plan: RunPlan, name: str) -> Path | None:
    """A relative model path as the user's script would see it: from the launch folder or the config's."""
    p = Path(name).expanduser()
    if p.is_absolute():
        return p if p.exists() else None
    bases = [plan.spec.root.path.parent]
    if plan.spec.training is not None:
        bases.append(Path(plan.spec.training.path).parent)
    bases.append(Path.cwd())
    for base in bases:
        candidate = (base / p).resolve()
        if candidate.exists():
            return candidate
    return None


def _resolve_model(plan: RunPlan, online: bool) -> tuple[str, Any, Path | None]:
    from advisor.estimate import resolve_model

    name = (
        plan.model.name or _plain(plan.training, "model_name_or_path") or _plain(plan.training, "base_model")
    )
    if not name:
        raise Skip("skipped", "the run names no model (model_name_or_path): nothing to build")
    name = str(name)
    local = _model_path(plan, name)
    from advisor.sources.boundary import local_path_outside

    # a model folder named by a config is bounded like any other named file (advisor/sources/boundary.py)
    boundary = plan.boundary()
    outside = boundary.outside_reason(local) if local is not None else local_path_outside(name, boundary)
    if outside is not None:
        raise Skip("skipped", f"model {outside}")
    info = resolve_model(str(local) if local is not None else name, online=online)
    if info is None:
        raise Skip(
            "skipped",
            f"model '{name}' is not a local path, not in the local Hugging Face cache and not in the "
            "built-in catalog" + ("" if online else " (run with --online to fetch its config.json)"),
        )
    path = Path(info.config_path).parent if info.config_path else None
    return name, info, path


def _lora(plan: RunPlan) -> LoraSpec:
    t = plan.training
    spec = LoraSpec()
    for key in ("lora_r", "lora_rank", "r"):
        v = _explicit(t, key)
        if v is not None and isinstance(coerce_text(str(v)), int):
            spec.r = int(coerce_text(str(v)))
            break
    alpha = _explicit(t, "lora_alpha")
    if alpha is not None and isinstance(coerce_text(str(alpha)), int | float):
        spec.alpha = float(coerce_text(str(alpha)))
    dropout = _explicit(t, "lora_dropout")
    if dropout is not None and isinstance(coerce_text(str(dropout)), int | float):
        spec.dropout = float(coerce_text(str(dropout)))
    targets: Any = None
    for key in ("lora_target_modules", "lora_target", "target_modules"):
        v = _explicit(t, key)
        if v is not None:
            targets = v
            break
    if targets is None and _truth(_explicit(t, "lora_target_linear")):
        targets = "all-linear"
    if isinstance(targets, str):
        if targets.strip().lower() in {"all", "all-linear", "all_linear"}:
            targets = "all-linear"
        else:
            targets = [s.strip() for s in targets.split(",") if s.strip()]
    spec.targets = targets
    return spec


def _weights_dtype(plan: RunPlan, config: dict[str, Any], transformers_major: int) -> tuple[str, str]:
    """(dtype the model is loaded in, why): explicit torch_dtype/dtype, else what from_pretrained does."""
    t = plan.training
    for key in ("torch_dtype", "dtype", "model_init_kwargs.torch_dtype", "model_init_kwargs.dtype"):
        v = _plain(t, key)
        if isinstance(v, str) and v.lower() in _DTYPES:
            return _DTYPES[v.lower()], f"{key}: {v}"
        if isinstance(v, str) and v.lower() == "auto":
            cfg = str(config.get("torch_dtype") or config.get("dtype") or "float32").lower()
            return _DTYPES.get(cfg, "fp32"), f"{key}: auto (the config's {cfg})"
    if plan.training.dialect == "llamafactory":
        if _truth(_plain(t, "bf16")):
            return "bf16", "LLaMA-Factory loads the model in the compute dtype (bf16)"
        if _truth(_plain(t, "fp16")):
            return "fp16", "LLaMA-Factory loads the model in the compute dtype (fp16)"
    if transformers_major >= 5:
        cfg = str(config.get("torch_dtype") or config.get("dtype") or "float32").lower()
        return _DTYPES.get(cfg, "fp32"), f"transformers >= 5 loads checkpoints in their own dtype ({cfg})"
    return "fp32", "transformers < 5 loads checkpoints in fp32 unless torch_dtype is given"


def _precision(names: dict[str, Any]) -> str | None:
    mode = getattr(names.get("precision"), "mode", None)
    return mode if mode in {"bf16", "fp16", "fp32"} else None


def transformers_major() -> int:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("transformers").split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 5


def build_spec(
    plan: RunPlan, names: dict[str, Any], device: dict[str, Any], options: ProbeOptions
) -> ProbeSpec:
    """The probe for one run on this machine; raises Skip when it cannot run here."""
    notes: list[str] = []
    batch = names["batch"]
    run = names["run"]
    on_gpu = bool(device.get("cuda_available")) and int(device.get("device_count") or 0) > 0
    dev: Literal["cuda", "cpu"] = "cuda" if on_gpu else "cpu"

    # ---- launcher and process count ----------------------------------------------------------
    from advisor.facts.world_size import configured_launcher

    # a config file implies the launcher here, a dialect does not (implied_launcher): the probe of a
    # LLaMA-Factory or axolotl config with no launch is started as it was
    launcher_name = configured_launcher(plan)
    launcher = launchers.probe_launcher(launcher_name, batch.world_size)
    if launchers.spec_of(launcher_name).probe_as and launcher_name != launcher.name:
        notes.append(
            f"{launcher_name} starts torch.distributed workers: "
            f"probed under {launcher.name} with the same count"
        )
    nodes = batch.nodes
    if isinstance(nodes, int) and nodes > 1:
        raise Skip(
            "skipped", f"a {nodes}-node run: --verify probes one machine (run it on one node of the job)"
        )

    nproc: int | None = batch.processes_per_node if isinstance(batch.processes_per_node, int) else None
    nproc_arg = None
    faithful = True
    pinned = bool(batch.pinned)
    if not pinned and on_gpu:
        # the count follows the machine: let the launcher decide here, as it would for the run
        # a launcher that takes the count as a flag gets the run's own word for it (torchrun's gpu, auto)
        count_flag = launcher.local_start.count_flag if launcher.local_start is not None else ""
        raw = _plain(plan.launch, count_flag) if count_flag else None
        if raw is not None:
            nproc_arg = str(raw)
        nproc = None if nproc_arg else int(device.get("device_count") or 1)
        if nproc is not None:
            notes.append(f"process count follows the machine: {nproc} visible GPUs here")
    elif not pinned or nproc is None:
        if nproc is None:
            why = getattr(batch.entry("world_size"), "unknown", None) or "unknown"
            nproc, faithful = 1, False
            notes.append(f"process count unknown statically ({why}): probed with 1 process on CPU")
        else:
            faithful = False
            notes.append(
                f"the run's process count follows its machine's GPUs ({nproc} with the given hardware); "
                f"this machine has none: probed with {nproc} CPU processes"
            )
    if launcher.probe_many_as and nproc not in (None, 1):
        launcher = launchers.spec_of(launcher.probe_many_as)
    if dev == "cpu" and nproc is not None and nproc > int(device.get("cpu_count") or 1) * 4:
        raise Skip("skipped", f"{nproc} processes on a CPU-only machine with {device.get('cpu_count')} cores")

    cvd = _plain(plan.env, "CUDA_VISIBLE_DEVICES")

    # ---- model ------------------------------------------------------------------------------------
    model_name, info, model_path = _resolve_model(plan, options.online)
    config = dict(info.config)
    if not config.get("model_type"):
        raise Skip("skipped", f"model '{model_name}': config.json has no model_type")
    tmajor = transformers_major()
    wdtype, why_dtype = _weights_dtype(plan, config, tmajor)
    mode = _precision(names)
    mixed: str | None = mode if mode in {"bf16", "fp16"} else None
    method: Literal["full", "lora", "qlora"] = plan.model.method or "full"
    if method == "qlora":
        if not on_gpu:
            raise Skip(
                "unsupported", "QLoRA needs a CUDA GPU (bitsandbytes 4-bit): not available on this machine"
            )
        if not device.get("libraries", {}).get("bitsandbytes"):
            raise Skip("unsupported", "QLoRA needs bitsandbytes: pip install bitsandbytes")
    if not on_gpu:
        cpu_bf16 = bool(device.get("cpu_bf16"))
        if "fp16" in (wdtype, mixed):
            notes.append("fp16 needs a GPU: the CPU probe runs fp32 instead")
            wdtype = "fp32" if wdtype == "fp16" else wdtype
            mixed = None if mixed == "fp16" else mixed
        if "bf16" in (wdtype, mixed) and not cpu_bf16:
            notes.append("this CPU has no bf16 support: the CPU probe runs fp32 instead")
            wdtype = "fp32" if wdtype == "bf16" else wdtype
            mixed = None
    if wdtype != "fp32" and mixed is None:
        mixed = None  # pure 16-bit weights, no autocast
    notes.append(f"weights loaded in {wdtype} ({why_dtype})")
    real = bool(options.real_weights and model_path is not None and info.weights_params)
    if options.real_weights and not real:
        notes.append("real weights asked for but none are local: random weights")

    seq = plan.model.seq_len
    seq = coerce_text(str(seq)) if seq is not None else None
    if not isinstance(seq, int) or seq <= 0:
        seq = 2048
        notes.append("sequence length unknown: probed with 2048 tokens per sequence")
    max_pos = config.get("max_position_embeddings") or config.get("n_positions")
    if isinstance(max_pos, int) and 0 < max_pos < seq:
        notes.append(
            f"sequence length {seq} exceeds the model's max_position_embeddings {max_pos}: "
            f"probed with {max_pos}"
        )
        seq = max_pos

    # ---- training arguments, strategy -----------------------------------------------------------
    targs = _training_args(plan, notes)
    strategy = run.strategy or "single"
    ds_installed = bool(device.get("libraries", {}).get("deepspeed"))
    if strategy.startswith("zero") and (not on_gpu or not ds_installed):
        why = "DeepSpeed needs a GPU" if not on_gpu else "deepspeed is not installed"
        notes.append(f"{why}: the {strategy} run is probed as DDP (memory figures are unsharded)")
        strategy = "ddp" if (nproc or 2) > 1 else "single"
        targs.pop("deepspeed", None)
    elif strategy == "fsdp" and not on_gpu:
        notes.append("FSDP is probed on GPUs only: the CPU probe runs DDP (memory figures are unsharded)")
        strategy = "ddp" if (nproc or 2) > 1 else "single"
        targs.pop("fsdp", None)
        targs.pop("fsdp_config", None)
    if isinstance(targs.get("deepspeed"), str) and plan.spec.deepspeed is not None:
        targs["deepspeed"] = str(Path(plan.spec.deepspeed.path).resolve())
    optim = targs.get("optim")
    bnb_optim = (
        isinstance(optim, str)
        and "torch" not in optim.lower()
        and any(k in optim.lower() for k in _BNB_OPTIMIZERS)
    )
    if bnb_optim and (not on_gpu or not device.get("libraries", {}).get("bitsandbytes")):
        notes.append(f"optim {optim} needs bitsandbytes on a GPU: probed with adamw_torch")
        targs["optim"] = "adamw_torch"
    if targs.get("use_liger_kernel") and not device.get("libraries", {}).get("liger_kernel"):
        notes.append("use_liger_kernel needs liger-kernel: probed without it")
        targs.pop("use_liger_kernel")
    if not on_gpu:
        targs.pop("tf32", None)
        targs["bf16"] = mixed == "bf16"
        targs["fp16"] = False
        if targs.get("torch_compile"):
            notes.append("torch_compile is not probed on CPU")
            targs.pop("torch_compile")
    else:
        targs["bf16"] = mixed == "bf16"
        targs["fp16"] = mixed == "fp16"

    # ---- accelerate config ---------------------------------------------------------------------
    acc_cfg = None
    acc_flags: dict[str, str] = {}
    if launcher.reads_accelerate_config:
        if plan.spec.accelerate is not None:
            acc_cfg = str(Path(plan.spec.accelerate.path).resolve())
        command = plan.spec.command
        if command is not None:
            for flag in (
                "num_processes",
                "mixed_precision",
                "gpu_ids",
                "multi_gpu",
                "use_deepspeed",
                "use_fsdp",
                "zero_stage",
                "num_cpu_threads_per_process",
            ):
                word = command.launcher_args.get(flag)
                if word is not None and word.text is not None:
                    acc_flags[flag] = word.text
        if nproc is not None and "num_processes" not in acc_flags:
            acc_flags["num_processes"] = str(nproc)
        if not on_gpu:
            for flag in ("use_deepspeed", "use_fsdp", "zero_stage", "mixed_precision"):
                acc_flags.pop(flag, None)
            if nproc and nproc > 1:
                acc_flags["multi_gpu"] = "true"

    lora = _lora(plan) if method in {"lora", "qlora"} else None
    return ProbeSpec(
        run=plan.name,
        launcher=launcher.name,
        nproc=nproc,
        nproc_arg=nproc_arg,
        faithful=faithful,
        cuda_visible_devices=str(cvd) if cvd is not None else None,
        accelerate_config=acc_cfg,
        accelerate_flags=acc_flags,
        device=dev,
        model_name=model_name,
        model_source=info.source,
        hf_config=config,
        model_path=str(model_path) if model_path is not None else None,
        real_weights=real,
        weights_dtype=wdtype,  # type: ignore[arg-type]
        mixed_precision=mixed,  # type: ignore[arg-type]
        method=method,
        lora=lora,
        seq_len=int(seq),
        strategy=strategy,
        training_args=targs,
        warmup_steps=max(1, options.warmup),
        steps=max(1, options.steps),
        deadline_s=max(5.0, options.timeout * 0.85 - 5.0),
        digest=run_digest(plan),
        notes=notes,
    )


def derived_accelerate_config(spec: ProbeSpec, out_dir: Path) -> None:
    """On a CPU-only machine, run an accelerate config's processes as plain multi-process DDP (gloo)."""
    if spec.accelerate_config is None or spec.device != "cpu":
        return
    import yaml

    try:
        data = yaml.safe_load(Path(spec.accelerate_config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return
    if not isinstance(data, dict):
        return
    dist = str(data.get("distributed_type", "")).upper()
    changed = False
    if dist in {"DEEPSPEED", "FSDP", "MEGATRON_LM", "XLA", "TPU"}:
        data["distributed_type"] = "MULTI_GPU" if (spec.nproc or 1) > 1 else "NO"
        for key in ("deepspeed_config", "fsdp_config", "megatron_lm_config"):
            data.pop(key, None)
        spec.notes.append(
            f"accelerate config distributed_type {dist} runs as {data['distributed_type']} on CPU"
        )
        changed = True
    if str(data.get("mixed_precision", "no")).lower() != ("bf16" if spec.mixed_precision == "bf16" else "no"):
        data["mixed_precision"] = "bf16" if spec.mixed_precision == "bf16" else "no"
        changed = True
    if changed:
        path = out_dir / "accelerate_config.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        spec.accelerate_config = str(path)


def write_spec(spec: ProbeSpec, path: Path) -> None:
    path.write_text(json.dumps(datacodec.encode(spec), indent=2, default=str), encoding="utf-8")
