"""Thin adapter from what the probe runs (a ProbeSpec) to the estimator's predictions.

The estimator (advisor.estimate) predicts for a TrainingSetup. Its public API has no plan ->
TrainingSetup conversion yet and its MemoryEstimate lists the terms at the peak phase only (in GiB),
so this adapter:
- builds the TrainingSetup for exactly what the probe runs (weights dtype, autocast, LoRA, strategy,
  world size), so a difference is the estimator's, not a difference in setups;
- reads the per-term bytes (weights, gradients, optimizer states) from the estimate's items. GiB are
  bytes / 2**30, so bytes come back exactly. Gradients appear among the items only at some phases;
  with gradient accumulation they are resident at every phase, so they are read from a second
  estimate with grad_accum >= 2 (the gradient term itself does not depend on accumulation).
Replace this module with the estimator's own plan adapter and per-term bytes once those exist.
"""

from __future__ import annotations

from typing import Any

from advisor.core.records import field, fields, record, replace
from advisor.pipeline.probe.spec import ProbeSpec

GIB = float(2**30)
_STRATEGY = {
    "single": "none",
    "none": "none",
    "ddp": "ddp",
    "zero1": "zero1",
    "zero2": "zero2",
    "zero3": "zero3",
}


@record(slots=True)
class Prediction:
    weights_bytes: int | None = None
    grad_bytes: int | None = None
    optimizer_bytes: int | None = None
    trainable_params: int | None = None
    total_params: int | None = None
    peak_allocated_gib: float | None = None
    peak_reserved_gib: float | None = None
    step_time_s: float | None = None  # per optimizer step
    tokens_per_s: float | None = None  # all processes
    scaling_efficiency: float | None = None
    setup: dict[str, Any] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "grad_bytes": self.grad_bytes,
            "optimizer_bytes": self.optimizer_bytes,
            "trainable_params": self.trainable_params,
            "total_params": self.total_params,
            "peak_allocated_gib": self.peak_allocated_gib,
            "peak_reserved_gib": self.peak_reserved_gib,
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "scaling_efficiency": self.scaling_efficiency,
            "setup": self.setup,
            "assumptions": self.assumptions,
            "notes": self.notes,
            "error": self.error,
        }


def _strategy(spec: ProbeSpec) -> str:
    if spec.strategy == "fsdp":
        fsdp = str(spec.training_args.get("fsdp") or "").lower()
        return "fsdp_grad_op" if "shard_grad_op" in fsdp else "fsdp"
    return _STRATEGY.get(spec.strategy, "ddp")


def precision_of(spec: ProbeSpec) -> tuple[str, bool]:
    """(estimator precision, amp): fp32 weights + autocast is amp; 16-bit weights are not."""
    if spec.weights_dtype == "fp32":
        if spec.mixed_precision:
            return spec.mixed_precision, True
        return "fp32", False
    return spec.weights_dtype, False


def training_setup(spec: ProbeSpec, world_size: int, gpu_memory_gib: float | None = None) -> Any:
    from advisor.estimate import TrainingSetup, count_params

    targs = spec.training_args
    precision, amp = precision_of(spec)
    targets = None
    lora_r = lora_dropout = None
    if spec.lora is not None:
        lora_r, lora_dropout = spec.lora.r, spec.lora.dropout
        if isinstance(spec.lora.targets, str):
            targets = [spec.lora.targets]
        elif spec.lora.targets:
            targets = list(spec.lora.targets)
    strategy = _strategy(spec) if world_size > 1 or spec.strategy.startswith(("zero", "fsdp")) else "none"
    return TrainingSetup(
        model=count_params(spec.hf_config),
        method=spec.method,
        lora_r=lora_r,
        lora_targets=targets,
        lora_dropout=lora_dropout,
        micro_batch=int(targs.get("per_device_train_batch_size", 8)),
        seq_len=spec.seq_len,
        grad_accum=int(targs.get("gradient_accumulation_steps", 1)),
        gradient_checkpointing=bool(targs.get("gradient_checkpointing", False)),
        precision=precision,  # type: ignore[arg-type]
        amp=amp,
        optimizer=targs.get("optim"),
        strategy=strategy,  # type: ignore[arg-type]
        world_size=max(1, world_size),
        attn_implementation="sdpa",
        liger_kernel=bool(targs.get("use_liger_kernel", False)),
        gpu_memory_gib=gpu_memory_gib,
        metric="allocated",
    )


def _item_bytes(estimate: Any, *names: str) -> int | None:
    for item in estimate.items:
        if item.name in names:
            return round(item.gib * GIB)
    return None


def _gpu(device: dict[str, Any], hardware: Any) -> Any:
    from advisor.sources.hardware import resolve_gpu

    devices = device.get("devices") or []
    if devices:
        return resolve_gpu(str(devices[0].get("name", "")))
    return hardware.gpu if hardware is not None else None


def _busbw(gpu: Any, hardware: Any, n: int, notes: list[str]) -> float:
    if n <= 1:
        return float(gpu.pcie.busbw_gbs)  # no collective on one GPU
    if hardware is not None and n > 1:
        try:
            from advisor.facts.topology import slowest_link_busbw_gbs

            return float(slowest_link_busbw_gbs(hardware, range(min(n, hardware.total_gpus))))
        except Exception:
            pass
    if gpu.nvlink is not None and getattr(gpu.nvlink, "busbw_gbs", None):
        notes.append("bus bandwidth: the GPU's NVLink figure (no hardware descriptor given)")
        return float(gpu.nvlink.busbw_gbs)
    return float(gpu.pcie.busbw_gbs)


def predict(spec: ProbeSpec, world_size: int, device: dict[str, Any], hardware: Any = None) -> Prediction:
    """The estimator's figures for what the probe runs, on this machine, at world_size processes."""
    from advisor.estimate import estimate_memory, estimate_time

    pred = Prediction()
    gpu_mem = None
    devices = device.get("devices") or []
    if spec.device == "cuda" and devices:
        gpu_mem = float(devices[0].get("total_memory", 0)) / GIB or None
    try:
        setup = training_setup(spec, world_size, gpu_mem)
    except Exception as exc:  # an unknown model type without transformers, a config the formulas reject
        pred.error = f"no prediction: {type(exc).__name__}: {exc}"
        return pred
    pred.setup = {f.name: getattr(setup, f.name) for f in fields(setup) if f.name != "model"} | {
        "model_type": setup.model.model_type
    }
    pred.total_params = setup.model.total
    est = estimate_memory(setup)
    pred.assumptions = list(est.assumptions)
    pred.trainable_params = est.trainable_params
    pred.weights_bytes = _item_bytes(est, "weights")
    pred.optimizer_bytes = _item_bytes(est, "optimizer states") or 0
    with_grads = est if setup.grad_accum >= 2 else estimate_memory(replace(setup, grad_accum=2))
    pred.grad_bytes = _item_bytes(with_grads, "gradients")
    pred.peak_allocated_gib = est.peak_allocated_gib
    pred.peak_reserved_gib = est.peak_reserved_gib
    if spec.device != "cuda":
        pred.notes.append("no step-time prediction for CPU: the time model is for GPUs")
        return pred
    gpu = _gpu(device, hardware)
    if gpu is None:
        pred.notes.append("this GPU is not in the catalog: no step-time prediction")
        return pred
    precision, _ = precision_of(spec)
    peak = gpu.dense_tflops("tf32" if precision == "fp32" else "bf16") or gpu.dense_tflops("bf16")
    if not peak:
        pred.notes.append(f"{gpu.display_name}: no dense peak in the catalog: no step-time prediction")
        return pred
    t = estimate_time(
        setup,
        peak_tflops=peak,
        busbw_gbs=_busbw(gpu, hardware, world_size, pred.notes),
        gpu_class=gpu.id,
        world_size=max(1, world_size),
        grad_accum=setup.grad_accum,
    )
    pred.step_time_s = t.step_time_s
    pred.tokens_per_s = t.tokens_per_s
    pred.scaling_efficiency = t.scaling_efficiency
    return pred
