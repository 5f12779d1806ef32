"""Estimates: a run's RunPlan mapped onto the estimator (advisor.estimate), peak memory and run time.

The `estimates` namespace (what GA401-GA405, the run summary and `gpu-advise estimate PATHS` read):

    known              True when a memory estimate was made; False with `reason` when it was not
    reason             why there is no estimate (model not found offline, world size unknown, ...)
    model, params      the model as resolved (hub id or path) and its exact parameter count
    shapes_from        config | name | size: whose shapes those are (a size-only stand-in softens GA401)
    method, strategy   full | lora | qlora; none | ddp | zero1-3 | fsdp | fsdp_grad_op (as estimated)
    peak_vram_gib      predicted peak per GPU on the device, nvidia-smi metric (at the model name's location):
                       reserved + CUDA context + NCCL; the figure the fit verdict compares with the card
    peak_allocated_gib the live tensors at the peak (torch.cuda.max_memory_allocated)
    peak_reserved_gib  allocated + the caching allocator's overhead (torch.cuda.max_memory_reserved)
    memory_figures     the three with their bands and which one the verdict uses (advisor.facts.memory_kinds)
    low_gib, high_gib  the uncertainty band around it
    gpu_memory_gib     usable memory of one GPU of the machine
    fraction           peak / usable
    verdict            fits | tight | does not fit (tight: within thresholds.near_memory_fraction)
    items              the breakdown at the peak: [{name, gib, note}]
    dtypes             {storage, trainable, compute, optimizer}: {dtype, source} as the estimate assumed them
                       (advisor.facts.dtypes: each from where its consumer takes it)
    contributors       the three largest items, "optimizer states 29.9 GiB"
    savings            what each knob would save at the peak, "enable gradient checkpointing saves 12.3 GiB"
    single_gpu_peak    the same per-device batch on one GPU of the machine, no sharding, no offload
    fits_single_gpu    single_gpu_peak fits (below the near-limit margin)
    ddp_peak, ddp_fits plain DDP at the run's data-parallel size (no sharding, no offload)
    hours_single_gpu   the run on one GPU (same per-device batch), when its length is known
    smoke_test         max_steps makes it a run of minutes (a test of the setup, not a training run)
    stays_single_gpu   the run should stay on one GPU (GA402); GA403 does not also advise DDP then
    strategy_named_at  where the run's own file names the shared DeepSpeed config its strategy comes from
    hours              the run on its data-parallel GPUs
    scaling_efficiency tokens/s on n GPUs / (n x tokens/s on one)
    assumptions        every input that was not written and what was assumed instead

Nothing here imports torch or transformers; the estimator is imported when the first run is built.
Unknown inputs never become silent defaults: either the estimator states the assumption or the whole
estimate is unknown with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record, replace
from advisor.core.settings_types import Thresholds
from advisor.facts.declare import FactNamespace, fact
from advisor.facts.estimate_inputs import (
    NEAR_FRACTION_DEFAULT,
    RUN_LENGTH_UNKNOWN,
    SMOKE_TEST_HOURS,
    STRATEGY_LABEL,
    PlanInputs,
    plan_inputs,
)
from advisor.facts.memory_kinds import memory_figures
from advisor.facts.peak_memory import peak_of, reference_gib

if TYPE_CHECKING:
    from advisor.facts.batch import BatchFacts
    from advisor.facts.hardware import HardwareFacts
    from advisor.facts.placement import PlacementFacts
    from advisor.facts.precision import PrecisionFacts
    from advisor.facts.run import RunFacts
    from advisor.facts.training_script import TrainingScriptFacts
    from advisor.plan.run_plan import RunPlan


class EstimatesFacts(
    FactNamespace, name="estimates", doc="Peak memory and run time from the estimator (advisor.estimate)."
):
    known = fact(bool, "a memory estimate was made")
    reason = fact(str, "why there is no estimate")
    quiet = fact(bool, "no estimate, and nothing to say about it (no model named)")
    model = fact(str, "the model as resolved (hub id or path)")
    model_source = fact(str, "where its config was found")
    shapes_from = fact(
        str,
        "config | name | size: the model's own config, a listed model its name is built on (family and"
        " size, a base model its card names), or a stand-in of the size its name writes"
        " (advisor.estimate.size_match)",
    )
    params = fact(int, "parameter count", unit="parameters")
    trainable_params = fact(int, "trainable parameters", unit="parameters")
    method = fact(str, "full | lora | qlora")
    strategy = fact(str, "none | ddp | zero1-3 | fsdp | fsdp_grad_op, as estimated")
    strategy_label = fact(str, "the strategy in words")
    world_size = fact(int, "processes estimated", unit="processes")
    dp_size = fact(int, "data-parallel processes estimated", unit="processes")
    micro_batch = fact(int, "micro batch estimated", unit="samples")
    seq_len = fact(int, "sequence length estimated", unit="tokens")
    peak_vram_gib = fact(
        float,
        "peak per GPU on the device (nvidia-smi): reserved + CUDA context + NCCL; what the verdict compares",
        unit="GiB",
    )
    peak_allocated_gib = fact(
        float, "predicted peak of the live tensors per GPU (torch.cuda.max_memory_allocated)", unit="GiB"
    )
    peak_reserved_gib = fact(
        float, "peak_allocated_gib + the caching allocator's overhead (max_memory_reserved)", unit="GiB"
    )
    memory_figures = fact(
        dict,
        "{allocated, reserved, device}: {gib, low_gib, high_gib, reads}; fit_uses: the one the verdict uses",
    )
    hard_peak_gib = fact(float, "the peak without paged optimizer state", unit="GiB")
    paged_gib = fact(float, "optimizer state a paged optimizer can spill", unit="GiB")
    low_gib = fact(float, "low end of the uncertainty band", unit="GiB")
    high_gib = fact(float, "high end of the uncertainty band", unit="GiB")
    phase = fact(str, "the training phase the peak is reached in")
    dtypes = fact(dict, "{storage, trainable, compute, optimizer}: {dtype, source}")
    host_gib = fact(float, "host memory offload needs", unit="GiB")
    items_ = fact(list[dict], "the breakdown at the peak", items=("gib", "name", "note"), key="items")
    contributors = fact(list[str], "the three largest items, in words")
    savings = fact(list[str], "what each knob would save at the peak, in words")
    fitting_options = fact(
        list[str],
        ("changes that fit on the given machine, tried with the estimator (advisor.facts.fit_options)"),
    )
    fit_advice = fact(str, "GA401's advice: the fitting options, or that none of them fits")
    setup_label = fact(str, "the run in words: model, method, micro-batch x tokens, strategy")
    oom_certain = fact(bool, "the whole uncertainty band is above the usable memory")
    band = fact(str, "the uncertainty band, 'low-high GiB'")
    near_fraction = fact(float, "the near-limit margin (thresholds.near_memory_fraction)")
    gpu_memory_gib = fact(float, "usable memory of one GPU", unit="GiB")
    fraction = fact(float, "peak / usable memory")
    verdict = fact(str, "fits | tight | does not fit")
    gpu = fact(str, "GPU catalog key estimated on")
    single_gpu_peak = fact(float, "peak of the same per-device batch on one GPU, no sharding", unit="GiB")
    fits_single_gpu = fact(bool, "single_gpu_peak fits")
    fit_notes = fact(list[str], "how the single-GPU run would be made to fit")
    peak_without_offload_gib = fact(float, "peak with offload turned off", unit="GiB")
    fits_below_tokens = fact(
        int,
        "over at max_length with batches padded to their longest sample: the longest sample length at which"
        " it fits (the peak at max_length needs a batch holding a sample that long; the config does not say)",
        unit="tokens",
    )
    verdict_without_offload = fact(str, "fits | tight | does not fit, without offload")
    fits_without_offload = fact(bool, "the run fits without offload")
    ddp_peak = fact(float, "peak under plain DDP at the run's data-parallel size", unit="GiB")
    ddp_fits = fact(bool, "ddp_peak fits")
    step_time_s = fact(float, "predicted time of one optimizer step", unit="s")
    tokens_per_s = fact(int, "predicted throughput", unit="tokens/s")
    scaling_efficiency = fact(float, "tokens/s on n GPUs / (n x tokens/s on one)")
    comm_bound = fact(bool, "the step waits on communication more than on compute")
    hours_single_gpu = fact(float, "the run on one GPU (same per-device batch)", unit="h")
    hours = fact(float, "the run on its data-parallel GPUs", unit="h")
    single_gpu_time = fact(str, "hours_single_gpu in words")
    smoke_test = fact(bool, "max_steps makes it a run of minutes")
    stays_single_gpu = fact(
        bool,
        (
            "a multi-process run that fits on one GPU unsharded and is shorter there than "
            "thresholds.single_gpu_hours, no smoke test (GA402; GA403 does not also advise DDP)"
        ),
    )
    strategy_named_at = fact(
        str,
        (
            "where the run's own file names the DeepSpeed config its ZeRO stage comes from (its "
            "location; the stage's line related), None when the strategy is set elsewhere"
        ),
    )
    run_time = fact(str, "hours in words")
    time_saved = fact(str, "what the GPUs save over one, in words")
    faster_on_n = fact(bool, "the run is faster on its GPUs than on one")
    total_tokens = fact(float, "tokens the run trains on", unit="tokens")
    time_reason = fact(str, "why there is no time estimate")
    assumptions = fact(list[str], "every input that was not written and what was assumed")
    input_assumptions = fact(list[str], "the assumptions about the run's inputs")


__all__ = ["Analysis", "PlanInputs", "analyse", "estimates_facts", "peak_of", "plan_inputs", "summary_notes"]


# ---- the analysis (shared by the facts and `gpu-advise estimate`) ---------------------------------
@record
class Analysis:
    memory: Any  # MemoryEstimate (with the reference model added for preference training)
    peak: float
    low: float
    high: float
    usable: float | None
    verdict: str | None
    items: list[dict[str, Any]]
    hard_peak: float = 0.0  # without paged optimizer state (CUDA unified memory spills to the host)
    allocated: float = 0.0  # the live tensors at the peak; peak is the device figure (facts.memory_kinds)
    reserved: float = 0.0  # allocated + the caching allocator's overhead
    band: float = 0.0  # the relative uncertainty of each figure
    single_peak: float | None = None
    ddp_peak: float | None = None
    no_offload_peak: float | None = None  # the same run with offload turned off (when it offloads)
    fits_below: int | None = None  # over at max_length, padded to the longest: the longest length that fits
    fit_notes: list[str] = field(default_factory=list)  # the pessimistic readings behind the fit claims
    time: Any = None  # TimeEstimate
    time_reason: str | None = None
    savings: list[tuple[str, float]] = field(default_factory=list)
    fitting_options: list[str] = field(default_factory=list)  # changes that fit on the given machine
    assumptions: list[str] = field(default_factory=list)


def verdict_for(
    peak: float, usable: float | None, near_fraction: float = NEAR_FRACTION_DEFAULT
) -> str | None:
    if usable is None:
        return None
    if peak > usable:
        return "does not fit"
    if peak > usable * (1 - near_fraction):
        return "tight"
    return "fits"


def pessimistic(setup: Any) -> tuple[Any, list[str]]:
    """The setup under the reading of unwritten inputs that needs the most memory.

    A claim that a run *fits* on one GPU or under plain DDP (GA402, GA403) must hold whatever the files
    left open, and must keep the run's numerics: without a precision setting HF trains in fp32; without
    a weight dtype the model may be loaded in fp32 under autocast; and a full fine-tune under DeepSpeed
    keeps fp32 master weights and optimizer states, which under DDP means an fp32 model with autocast.
    """
    update: dict[str, Any] = {}
    notes = []
    autocast = setup.autocast if setup.autocast not in (None, "off") else None
    compute = autocast or setup.precision
    if compute is None and setup.storage_dtype is None:
        update.update(precision="fp32", storage_dtype="fp32", autocast="off")
        notes.append("no precision setting: judged in fp32 (the HF default)")
    elif setup.storage_dtype is None and setup.amp is None and compute in {"bf16", "fp16"}:
        update.update(storage_dtype="fp32", autocast=compute)
        notes.append("weight dtype not written: judged with an fp32 model load under autocast")
    elif (
        setup.method == "full"
        and setup.strategy in {"zero1", "zero2", "zero3"}
        and compute in {"bf16", "fp16"}
    ):
        update.update(storage_dtype="fp32", autocast=compute, master_weights=False, trainable_dtype=None)
        notes.append(
            "judged at DeepSpeed's precision: fp32 master weights and optimizer states (autocast under DDP)"
        )
    return (replace(setup, **update) if update else setup), notes


def single_gpu_setup(setup: Any, dp: int) -> Any:
    """The same per-device batch on one GPU: no sharding, no offload, accumulation x dp keeps the batch."""
    return replace(
        setup,
        strategy="none",
        world_size=1,
        offload_optimizer="none",
        offload_params="none",
        grad_accum=setup.grad_accum * max(dp, 1),
    )


def ddp_setup(setup: Any, dp: int) -> Any:
    return replace(
        setup,
        strategy="ddp" if dp > 1 else "none",
        world_size=max(dp, 1),
        offload_optimizer="none",
        offload_params="none",
    )


def fp8_training(plan: RunPlan) -> str | None:
    """Where the run trains its Linears in fp8 (advisor.facts.unmodelled.fp8_training), or None."""
    from advisor.facts.unmodelled import fp8_training as where

    return where(plan)


def matmul_tf32(plan: RunPlan) -> bool | None:
    """Whether HF TrainingArguments turns cuBLAS TF32 on for the run (None: it leaves torch's default).

    transformers 5.24 training_args.py:1664-1686: with torch_compile, `tf32 is None and not fp16 or bf16`
    enables TF32; then a written `tf32` sets it either way. torch's own default is off since 1.12
    (torch.backends.cuda.matmul.allow_tf32 is False on a fresh torch 2.13 process).
    """
    from advisor.facts.precision import _truth

    def flag(key: str) -> bool | None:
        v = plan.training.known_value(key)
        t = _truth(v) if v is not None else None
        return t if isinstance(t, bool) else None

    tf32 = flag("tf32")
    if tf32 is not None:
        return tf32
    if flag("torch_compile") and (not flag("fp16") or flag("bf16")):
        return True
    return None


def resolved_precision(setup: Any) -> str:
    """The dtype the setup's matmuls run in, as the estimator resolves it (autocast, else the storage)."""
    from advisor.estimate.memory import resolve_setup

    return str(resolve_setup(setup).precision)


def fp32_matmul_rate(gpu: Any, tf32: bool | None) -> tuple[float | None, bool]:
    """(TFLOPS fp32 matmuls run at, whether it is the CUDA-core rate): TF32 tensor cores only with tf32 on."""
    tc = gpu.dense_tflops("tf32")
    if tf32 and tc:
        return float(tc), False
    fp32 = getattr(gpu, "fp32_tflops", None)
    return (float(fp32), True) if fp32 else ((float(tc), False) if tc else (None, False))


def peak_tflops(gpu: Any, precision: str | None, tf32: bool | None = None) -> tuple[float | None, str | None]:
    """Matmul peak for the run's compute dtype, and an assumption to state when substituted.

    16-bit: the dense tensor-core rate. fp32: the TF32 tensor-core rate only when TF32 is enabled
    (`tf32: true`); otherwise fp32 matmuls run on the CUDA cores at the catalog's non-tensor FP32 peak
    (PyTorch's default since 1.12, which HF's `tf32: None` keeps).
    """
    p = precision or "bf16"
    if p == "fp32":
        tc = gpu.dense_tflops("tf32")
        if tf32 and tc:
            return (
                tc,
                "fp32 matmuls at the TF32 tensor-core rate (tf32: true, or torch_compile with tf32 unset)",
            )
        fp32 = getattr(gpu, "fp32_tflops", None)
        if fp32:
            why = (
                f"{gpu.display_name} has no TF32 tensor cores"
                if not tc
                else "TF32 is off (PyTorch's default since 1.12; tf32 unset leaves it off: set tf32: true)"
            )
            return fp32, f"fp32 matmuls at the FP32 non-tensor rate, {fp32:g} TFLOPS: {why}"
        return (
            (tc, "fp32 training timed at the TF32 tensor-core rate (no FP32 peak in the catalog)")
            if tc
            else (
                None,
                None,
            )
        )
    v = gpu.dense_tflops(p)
    if v:
        return v, None
    other = gpu.dense_tflops("fp16" if p == "bf16" else "bf16")
    if other:
        return (
            other,
            f"{gpu.display_name} has no {p} tensor rate: timed at its "
            f"{'fp16' if p == 'bf16' else 'bf16'} rate",
        )
    return None, None


def analyse(
    setup: Any,
    *,
    machine: Any = None,
    dp: int = 1,
    near_fraction: float = NEAR_FRACTION_DEFAULT,
    reference_copy: bool = False,
    total_tokens: float | None = None,
    max_steps: int | None = None,
    busbw_gbs: float | None = None,
    compare: bool = True,
    savings: bool | None = None,
    data: Any = None,
    reserved_fraction: float = 0.0,
    tf32: bool | None = None,
    fp8: str | None = None,
) -> Analysis:
    """Memory at the peak, the fit verdict, single-GPU and DDP peaks, time, and knob savings."""
    from advisor.estimate import MemoryItem, estimate_memory, estimate_time, what_if

    m = estimate_memory(replace(setup, metric="nvidia-smi"))
    items = [{"name": it.name, "gib": round(it.gib, 2), "note": it.note} for it in m.items]
    peak, low, high = m.peak_smi_gib, m.low_gib, m.high_gib
    allocated, reserved = m.peak_allocated_gib, m.peak_reserved_gib
    band = m.high_gib / peak - 1.0 if peak else 0.0
    if reference_copy:
        ref = reference_gib(setup)
        items.insert(
            1,
            {
                "name": "reference model",
                "gib": round(ref, 2),
                "note": "frozen copy in the load dtype (preference training)",
            },
        )
        m.items.insert(1, MemoryItem(name="reference model", gib=ref, note="frozen copy in the load dtype"))
        scale = (peak + ref) / peak if peak else 1.0
        peak, low, high = peak + ref, low * scale, high * scale
        allocated, reserved = allocated + ref, reserved + ref  # a static tensor: no allocator overhead
    usable = float(machine.memory_gib) if machine is not None else setup.gpu_memory_gib
    if usable is not None and reserved_fraction > 0:
        usable *= 1.0 - reserved_fraction
    hard = peak - m.soft_gib
    verdict = verdict_for(peak, usable, near_fraction)
    if verdict == "does not fit" and usable is not None and hard <= usable:
        verdict = "tight"  # only paged optimizer state is over: it spills to host memory, slowly
    an = Analysis(
        memory=m,
        peak=peak,
        low=low,
        high=high,
        usable=usable,
        verdict=verdict,
        items=items,
        assumptions=list(m.assumptions),
        hard_peak=hard,
        allocated=allocated,
        reserved=reserved,
        band=band,
    )
    if setup.offload_optimizer != "none" or setup.offload_params != "none":
        an.no_offload_peak = peak_of(
            replace(setup, offload_optimizer="none", offload_params="none", metric="nvidia-smi"),
            reference_copy,
        )
    if verdict == "does not fit" and usable is not None:
        from advisor.facts.peak_memory import longest_fitting_length

        an.fits_below = longest_fitting_length(setup, usable, reference_copy)
    if compare:
        judged, an.fit_notes = pessimistic(setup)
        an.single_peak = peak_of(single_gpu_setup(judged, dp), reference_copy)
        an.ddp_peak = peak_of(ddp_setup(judged, dp), reference_copy) if dp > 1 else an.single_peak
    want_savings = savings if savings is not None else verdict in {"tight", "does not fit"}
    if want_savings:
        an.savings = what_if(setup)
        if machine is not None and verdict == "does not fit":
            from advisor.facts.fit_options import fitting_options

            an.fitting_options = fitting_options(setup, machine, usable, reference_copy)
    if machine is not None:
        gpu = machine.gpu
        tflops, note = peak_tflops(gpu, resolved_precision(setup), tf32)
        if tflops is None:
            an.time_reason = f"{gpu.display_name} has no matmul peak for this precision in the catalog"
        else:
            if note:
                an.assumptions.append(note)
            bw = busbw_gbs if busbw_gbs else 1.0
            n = max(dp, 1)
            fp32_rate, simt = fp32_matmul_rate(gpu, tf32)
            fp8_rate = bool(fp8) and bool(gpu.dense_tflops("fp8"))
            if fp8 and not fp8_rate:
                an.assumptions.append(
                    f"fp8 training ({fp8}): {gpu.display_name} has no fp8 rate: timed at bf16"
                )
            an.time = estimate_time(
                setup,
                float(tflops),
                float(bw),
                gpu.id,
                n,
                total_tokens=total_tokens,
                max_steps=max_steps,
                data=data,
                fp32_tflops=fp32_rate,
                fp32_simt=simt,
                fp8=fp8_rate,
            )
            for s in an.time.assumptions:
                if s not in an.assumptions:
                    an.assumptions.append(s)
            if total_tokens is None and max_steps is None:
                an.time_reason = RUN_LENGTH_UNKNOWN
    else:
        an.time_reason = "no hardware given"
    return an


def duration(hours: float) -> str:
    """'1.6 h', '25 min', 'under a minute'."""
    if hours >= 1:
        return f"{hours:.1f} h"
    minutes = hours * 60
    return f"{minutes:.0f} min" if minutes >= 1 else "under a minute"


def _contributors(items: list[dict[str, Any]], k: int = 3) -> list[str]:
    top = sorted((it for it in items if it["gib"] > 0.05), key=lambda it: -it["gib"])[:k]
    return [f"{it['name']} {it['gib']:.1f} GiB" for it in top]


def _input_assumptions(assumptions: list[str]) -> list[str]:
    """The assumptions about inputs the files did not give (for the run summary)."""
    skip = ("CUDA context", "MFU ", "DeepSpeed bucket sizes", "ZeRO-3 bucket sizes")
    return [s for s in assumptions if not s.startswith(skip)]


# ---- the fact builder -----------------------------------------------------------------------------
def estimates_facts(
    plan: RunPlan,
    batch: BatchFacts,
    hardware: HardwareFacts,
    run: RunFacts,
    placement: PlacementFacts,
    precision: PrecisionFacts,
    script: TrainingScriptFacts,
) -> EstimatesFacts:
    # what the estimate inputs read by name (advisor/facts/estimate_inputs.py)
    names: dict[str, Any] = {
        "batch": batch,
        "hardware": hardware,
        "run": run,
        "placement": placement,
        "precision": precision,
        "script": script,
    }
    ns = EstimatesFacts()
    share = vllm_colocate_share(plan)
    try:
        inputs = plan_inputs(plan, names)
        if inputs.setup is None:
            _unknown(ns, inputs, inputs.reason or "unknown", share)
            return ns
        an = analyse(
            inputs.setup,
            machine=inputs.machine,
            dp=inputs.dp,
            near_fraction=inputs.near_fraction,
            reference_copy=inputs.reference_copy,
            total_tokens=inputs.total_tokens,
            max_steps=inputs.max_steps,
            busbw_gbs=inputs.busbw_gbs,
            data=inputs.data_length,
            reserved_fraction=share,
            tf32=matmul_tf32(plan),
            fp8=fp8_training(plan),
        )
        if share:
            an.assumptions.append(_share_note(share))
    except Exception as exc:  # an estimator bug must cost the estimate, never the check
        _unknown(ns, None, f"the estimator failed: {type(exc).__name__}: {exc}")
        return ns
    _fill(ns, inputs, an)
    _decide(ns, plan, names)
    return ns


def vllm_colocate_share(plan: RunPlan) -> float:
    """The fraction of every GPU's memory a colocated vLLM engine takes (TRL `use_vllm` with
    `vllm_mode: colocate`, the default; `vllm_gpu_memory_utilization` defaults to 0.3: trl 1.16
    trl/trainer/grpo_config.py:122 and :158). vLLM preallocates that share of the card for its weights
    and KV cache before training starts; in server mode it runs on other GPUs (0.0)."""
    t = plan.training

    def known(key: str) -> Any:
        entry = t.entry(key)
        return entry.value if isinstance(entry, Value) and entry.known else None

    if str(known("use_vllm")).lower() != "true":
        return 0.0
    if str(known("vllm_mode") or "colocate").lower() != "colocate":
        return 0.0
    share = known("vllm_gpu_memory_utilization")
    share = 0.3 if share is None else share
    if isinstance(share, str):
        try:
            share = float(share)
        except ValueError:
            return 0.0
    return float(share) if isinstance(share, int | float) and 0.0 < float(share) < 1.0 else 0.0


def _share_note(share: float) -> str:
    return f"a colocated vLLM engine takes {share:.0%} of each GPU's memory (vllm_gpu_memory_utilization)"


def _unknown(ns: EstimatesFacts, inputs: PlanInputs | None, reason: str, share: float = 0.0) -> None:
    origin = inputs.model_value.origin if inputs is not None and inputs.model_value is not None else None
    ns.known = Value(False, origin, "derived")
    ns.reason = Value(reason, origin, "derived")
    ns.quiet = Value(bool(inputs is not None and inputs.quiet), None, "derived")
    for key in ("peak_vram_gib", "hours_single_gpu", "hours"):
        ns.set(key, Value(None, origin, "derived", unknown=reason))
    if inputs is not None and inputs.machine is not None:
        usable = float(inputs.machine.memory_gib) * (1.0 - share)
        ns.gpu_memory_gib = Value(
            round(usable, 1), None, "hardware", note=_share_note(share) if share else None
        )


def _fill(ns: EstimatesFacts, inputs: PlanInputs, an: Analysis) -> None:
    s = inputs.setup
    info = inputs.info
    mv = inputs.model_value
    at = mv.origin if mv is not None else None
    related = inputs.related

    def put(key: str, value: Any, origin: Location | None = None, note: str | None = None) -> None:
        ns.set(key, Value(value, origin, "derived", related=list(related) if origin is at else [], note=note))

    assumptions = list(dict.fromkeys([*inputs.assumptions, *an.assumptions]))
    put("known", True, at)
    put("reason", None)
    put("model", info.hub_id or info.name, at)
    put("model_source", info.source)
    put("shapes_from", info.shapes_from)
    put("params", s.model.total)
    put("trainable_params", an.memory.trainable_params)
    put("method", s.method)
    put("strategy", s.strategy, inputs.strategy_origin)
    put("strategy_label", STRATEGY_LABEL.get(s.strategy, s.strategy))
    put("world_size", inputs.world)
    put("dp_size", inputs.dp)
    put("micro_batch", s.micro_batch)
    put("seq_len", s.seq_len)
    put("peak_vram_gib", round(an.peak, 1), at, note="nvidia-smi peak per GPU")
    put("hard_peak_gib", round(an.hard_peak, 1), at, note="without paged optimizer state")
    put("peak_allocated_gib", round(an.allocated, 1), note="torch.cuda.max_memory_allocated")
    put("peak_reserved_gib", round(an.reserved, 1), note="torch.cuda.max_memory_reserved")
    put("memory_figures", memory_figures(an.allocated, an.reserved, an.peak, an.band, 1))
    put("paged_gib", round(an.memory.soft_gib, 1))
    put("low_gib", round(an.low, 1))
    put("high_gib", round(an.high, 1))
    put("phase", an.memory.phase)
    sources = inputs.dtypes.sources() if inputs.dtypes is not None else {}
    put(
        "dtypes",
        {
            key: {"dtype": dtype, "source": sources.get(key, "assumed (no file sets it)")}
            for key, dtype in an.memory.dtypes.items()
        },
    )
    put("host_gib", round(an.memory.host_gib, 1))
    put("items", an.items)
    put("contributors", _contributors(an.items))
    savings = _on_this_machine(an.savings, inputs.machine)
    put("savings", [f"{label} saves {gib:.1f} GiB" for label, gib in savings])
    put("fitting_options", an.fitting_options)
    put("fit_advice", _fit_advice(an.fitting_options, savings, inputs.machine))
    put("setup_label", _setup_label(s, inputs.dp, info.hub_id or info.name))
    put("oom_certain", an.usable is not None and an.low > an.usable and an.fits_below is None)
    put("band", f"{an.low:.1f}-{an.high:.1f} GiB")
    put("near_fraction", inputs.near_fraction)
    if an.usable is not None:
        put("gpu_memory_gib", round(an.usable, 1))
        put("fraction", round(an.peak / an.usable, 3))
        put("verdict", an.verdict, at)
        put("gpu", inputs.machine.gpu.id if inputs.machine is not None else None)
        if an.single_peak is not None:
            put("single_gpu_peak", round(an.single_peak, 1))
            put("fits_single_gpu", verdict_for(an.single_peak, an.usable, inputs.near_fraction) == "fits")
            put("fit_notes", an.fit_notes)
        if an.fits_below is not None:
            put("fits_below_tokens", an.fits_below, at)
        if an.no_offload_peak is not None:
            without = verdict_for(an.no_offload_peak, an.usable, inputs.near_fraction)
            put("peak_without_offload_gib", round(an.no_offload_peak, 1), at)
            put("verdict_without_offload", without)
            put("fits_without_offload", without == "fits")
        if an.ddp_peak is not None:
            put("ddp_peak", round(an.ddp_peak, 1))
            put("ddp_fits", verdict_for(an.ddp_peak, an.usable, inputs.near_fraction) == "fits")
    else:
        put("gpu_memory_gib", None)
        put("verdict", None)
    te = an.time
    if te is not None:
        put("step_time_s", round(te.step_time_s, 3))
        if te.real_tokens_known:
            put("tokens_per_s", round(te.tokens_per_s))
        else:  # max_length is a cap: the tokens counted at it are not the data's (issue 21, data lengths)
            ns.set("tokens_per_s", Value(None, None, "derived", unknown="the data's length is not given"))
        put("scaling_efficiency", round(te.scaling_efficiency, 3))
        put("comm_bound", te.comm_bound)
    if te is not None and te.hours_single_gpu is not None:
        put("hours_single_gpu", round(te.hours_single_gpu, 3), at)
        put("hours", round(te.hours_n_gpus, 3) if te.hours_n_gpus is not None else None)
        put("single_gpu_time", duration(te.hours_single_gpu))
        put("smoke_test", inputs.max_steps is not None and te.hours_single_gpu < SMOKE_TEST_HOURS)
        if te.hours_n_gpus is not None:
            put("run_time", duration(te.hours_n_gpus))
            put("time_saved", duration(max(te.hours_single_gpu - te.hours_n_gpus, 0.0)))
            put("faster_on_n", te.hours_n_gpus < te.hours_single_gpu * 0.99)
        put("total_tokens", te.total_tokens)
    else:
        reason = an.time_reason or "the run's length is unknown"
        ns.hours_single_gpu = Value(None, at, "derived", unknown=reason)
        ns.hours = Value(None, at, "derived", unknown=reason)
        put("time_reason", reason)
    put("assumptions", assumptions)
    put("input_assumptions", _input_assumptions(assumptions))


def _decide(ns: EstimatesFacts, plan: RunPlan, names: dict[str, Any]) -> None:
    """The facts that keep GA402 and GA403 from giving contradicting advice for one run.

    `stays_single_gpu`: a multi-process run whose per-device batch fits on one GPU unsharded and that
    takes less than thresholds.single_gpu_hours there, and is no smoke test. GA402 says "run it on one
    GPU" exactly when it holds; GA403 ("use DDP on N GPUs") stays silent then (field trial C10:
    LLaMA-Factory qwen3_lora_sft_ds3.yaml got both).

    `strategy_named_at`: a ZeRO stage read from a DeepSpeed config is reported where the run names that
    config in its own file (LLaMA-Factory `deepspeed: examples/deepspeed/ds_z3_config.json`, an HF
    `--deepspeed ds.json` flag), with the config's line as related: the config is usually shared by
    several runs, and the fix (dropping `deepspeed:`) is made in the run's file.
    """
    world = names["batch"].world_size if names.get("batch") is not None else None
    thresholds = getattr(plan.project, "thresholds", None) or Thresholds()  # as advisor.facts.run_names
    limit = float(thresholds.single_gpu_hours)
    hours = ns.hours_single_gpu
    stays = bool(
        ns.known is True
        and ns.fits_single_gpu is True
        and isinstance(world, int)
        and world > 1
        and isinstance(hours, int | float)
        and hours < limit
        and ns.smoke_test is not True
    )
    ns.stays_single_gpu = Value(stays, None, "derived")
    strategy = ns.entry("strategy")
    origin = strategy.origin if isinstance(strategy, Value) else None
    named = _deepspeed_named_at(plan, origin)
    ns.strategy_named_at = Value(
        str(named) if named else None, named, "derived", related=[origin] if named and origin else []
    )


def _deepspeed_named_at(plan: RunPlan, origin: Location | None) -> Location | None:
    """Where the run's own file (its root or training file) names the DeepSpeed config `origin` lies in."""
    spec = plan.spec
    ds = spec.deepspeed
    if origin is None or ds is None or Path(origin.file) != Path(ds.path):
        return None
    own = {Path(d.path) for d in (spec.root, spec.training) if d is not None}
    for ref in spec.references:
        if ref.role != "deepspeed" or ref.path is None or Path(ref.named_at.file) not in own:
            continue
        if plan.context.real_path(Path(ref.path)) == plan.context.real_path(Path(ds.path)):
            return ref.named_at
    return None


_ACROSS = LazyPattern(r"across (\d+) GPUs")


def _on_this_machine(savings: list[tuple[str, float]], machine: Any) -> list[tuple[str, float]]:
    """The knob savings without a sharding degree the machine does not have (the estimator's what-if
    tries ZeRO-3 across 8 GPUs for a one-process run)."""
    if machine is None:
        return savings
    gpus = int(machine.gpus.count or 1) * int(getattr(machine, "nodes", 1) or 1)
    out = []
    for label, gib in savings:
        m = _ACROSS.search(label)
        if m is None or int(m.group(1)) <= gpus:
            out.append((label, gib))
    return out


def _fit_advice(options: list[str], savings: list[tuple[str, float]], machine: Any) -> str:
    """GA401's advice: what fits on this machine; else the largest savings and that nothing tried fits."""
    name = getattr(machine, "name", None) or "this machine"
    if options:
        return f"Fits on {name}: " + "; ".join(options) + "."
    knobs = "; ".join(f"{label} saves {gib:.1f} GiB" for label, gib in savings[:3])
    return (
        f"Knobs: {knobs}. " if knobs else ""
    ) + f"Nothing tried fits on {name}: use larger cards or more GPUs."


def _setup_label(setup: Any, dp: int, model: str | None) -> str:
    """ "meta-llama/Meta-Llama-3-70B full fine-tune, 1 x 2048 tokens, DDP on 4 GPUs"."""
    method = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA"}.get(setup.method, str(setup.method))
    if setup.method == "full" and (setup.trainable_layers is not None or setup.layer_trainable is not None):
        method = "partly frozen fine-tune"  # freeze-tuning, unfrozen_parameters, BAdam, LLaVA's projector
    label = STRATEGY_LABEL.get(setup.strategy, setup.strategy)
    where = f"{label} on {dp} GPUs" if dp > 1 else f"{label}"
    return f"{model} {method}, {setup.micro_batch} x {setup.seq_len} tokens per micro-batch, {where}"


def summary_notes(estimates: Namespace | None) -> list[str]:
    """Notes for the run summary: why there is no estimate, or the inputs it assumed."""
    if not estimates:
        return []
    if estimates.known is False:
        return [] if estimates.quiet else [f"memory estimate unknown: {estimates.reason}"]
    notes = []
    assumed = [re.sub(r" \([^()]*\)", "", a) for a in estimates.input_assumptions or []]
    assumed = [a for a in assumed if not a.startswith("optimizer offload:")]
    if assumed:
        notes.append("estimate assumes: " + "; ".join(assumed))
    return notes
