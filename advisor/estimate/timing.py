"""Step-time and run-time model (hardware.md sections 2.3, 3 and 6).

flops/token = k*N + c*4*L*q*s      N = parameters touched per token (all params; MoE: active),
                                  k = 6 full FT, 8 with checkpointing, 4 LoRA/QLoRA (6 with checkpointing),
                                  c = 3 / 4 / 2 / 3 (attention matmuls), + 6 per adapter param
achieved    = peak_tflops * MFU(gpu class) (* 0.8 LoRA, * 0.78 more for QLoRA dequantisation)
t_compute   = tokens per GPU per optimizer step * flops/token / achieved
comm        DDP/ZeRO-1: 2(n-1)/n * P_trainable * b once per optimizer step, hidden behind the last
            micro-batch's backward; ZeRO-2: reduce-scatter every micro-batch; ZeRO-3/FSDP: 3(n-1)/n * P * b
            every micro-batch (base weights even for LoRA), hidden behind forward+backward
exposed     = max(0, t_comm - COMM_OVERLAP * t_overlappable)
step time   = t_compute + exposed + offload transfers / CPU-Adam
efficiency  = t_compute / step time  (= tokens/s on n GPUs / (n * tokens/s on one))
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.estimate import constants as K
from advisor.estimate.memory import TrainingSetup, _resolve, lora_params

__all__ = ["TimeEstimate", "default_mfu", "estimate_time", "flops_per_token"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeEstimate:
    flops_per_token: float
    mfu: float
    achieved_tflops: float  # per GPU
    world_size: int
    grad_accum: int
    tokens_per_step: int  # global, per optimizer step
    compute_s: float  # per optimizer step, per GPU
    comm_s: float  # communication time per optimizer step (before overlap)
    exposed_comm_s: float  # what overlap does not hide
    offload_s: float
    step_time_s: float
    tokens_per_s: float  # all GPUs
    tokens_per_s_per_gpu: float
    tokens_per_s_single_gpu: float
    scaling_efficiency: float  # tokens/s at n GPUs / (n * tokens/s on one)
    comm_bound: bool
    total_tokens: float | None = None
    steps: float | None = None
    hours_single_gpu: float | None = None
    hours_n_gpus: float | None = None
    assumptions: list[str] = field(default_factory=list)


def default_mfu(gpu_class: str) -> float | None:
    """MFU default for a GPU class/name (substring match, longest key first); None if unknown."""
    key = gpu_class.lower().replace(" ", "").replace("-", "").replace("_", "")
    for k in sorted(K.MFU_DEFAULTS, key=len, reverse=True):
        if k in key:
            return K.MFU_DEFAULTS[k]
    return None


def flops_per_token(setup: TrainingSetup) -> float:
    r = _resolve(setup)
    pc = setup.model
    lora = setup.method != "full"
    if lora:
        k, c = (6.0, 3.0) if r.gc else (4.0, 2.0)
    else:
        k, c = (8.0, 4.0) if r.gc else (6.0, 3.0)
    attn = c * 4.0 * pc.layers * pc.q_dim * r.seq
    f = k * pc.active_params + attn
    if lora:
        f += 6.0 * lora_params(pc, r.lora_r, sorted(r.targets))
    return f


def estimate_time(
    setup: TrainingSetup,
    peak_tflops: float,
    busbw_gbs: float,
    gpu_class: str,
    world_size: int,
    total_tokens: float | None = None,
    max_steps: int | None = None,
    grad_accum: int = 1,
    mfu: float | None = None,
) -> TimeEstimate:
    """Step time, throughput, scaling efficiency and run hours for `setup` on `world_size` GPUs.

    peak_tflops: dense BF16/FP16 peak per GPU (FP32-accumulate rate on GeForce). busbw_gbs: NCCL bus bandwidth
    of the fabric the job spans (GB/s). grad_accum: if left at 1, the setup's grad_accum is used. mfu
    overrides the per-class default.
    """
    r = _resolve(setup)
    A = list(r.assumptions)
    s, pc = setup, setup.model
    n = max(1, int(world_size))
    gas = grad_accum if grad_accum != 1 else max(1, s.grad_accum)
    if s.world_size not in (1, n) and s.strategy != "none":
        A.append(f"setup.world_size={s.world_size} differs from world_size={n}: timed at {n}")
    fpt = flops_per_token(setup)
    if mfu is None:
        found = default_mfu(gpu_class)
        if found is None:
            found = K.MFU_FALLBACK
            A.append(f"no MFU default for GPU class '{gpu_class}': assumed {K.MFU_FALLBACK}")
        mfu_v = found
    else:
        mfu_v = mfu
    if s.method == "lora":
        mfu_v *= K.MFU_LORA_FACTOR
    elif s.method == "qlora":
        mfu_v *= K.MFU_LORA_FACTOR * K.MFU_QLORA_FACTOR
    achieved = peak_tflops * 1e12 * mfu_v
    if achieved <= 0:
        raise ValueError("peak_tflops must be positive")

    tok_mb = r.tokens  # per GPU per micro-batch
    tok_gpu_step = tok_mb * gas
    t_compute = tok_gpu_step * fpt / achieved
    t_mb = t_compute / gas
    bwd_share = 0.5 if s.method != "full" else 2.0 / 3.0

    full = s.method == "full"
    p_t = pc.total if full else lora_params(pc, r.lora_r, sorted(r.targets))
    b_grad = 4 if (r.amp or r.precision == "fp32") and not r.deepspeed else 2
    if full and r.fsdp and not r.amp:
        b_grad = 2
    b_param = 4 if (r.precision == "fp32" and not r.amp) else 2
    if s.method == "qlora":
        b_param = K.NF4_DQ_BYTES if s.qlora_double_quant else K.NF4_BYTES
    strategy = s.strategy if n > 1 else "none"
    if n > 1 and strategy == "none":
        strategy = "ddp"
        A.append(f"{n} GPUs with strategy 'none': timed as DDP")
    f = (n - 1) / n
    bw = busbw_gbs * 1e9
    comm = overlappable = 0.0
    if strategy in ("ddp", "zero1"):
        eff_bw = bw * (K.DDP_SMALL_MESSAGE_DERATE if busbw_gbs > K.DDP_DERATE_ABOVE_GBS else 1.0)
        comm = 2 * f * p_t * b_grad / eff_bw
        overlappable = t_mb * bwd_share
    elif strategy in ("zero2", "fsdp_grad_op"):
        gather = (
            (gas if strategy == "fsdp_grad_op" else 1)
            * f
            * (pc.total if strategy == "fsdp_grad_op" else p_t)
            * b_param
        )
        comm = (gas * f * p_t * b_grad + gather) / bw
        overlappable = t_compute * bwd_share
    elif strategy in ("zero3", "fsdp"):
        comm = gas * (2 * f * pc.total * b_param + f * p_t * b_grad) / bw
        overlappable = t_compute
    exposed = max(0.0, comm - K.COMM_OVERLAP * overlappable)

    offload = 0.0
    if s.offload_optimizer != "none" and strategy in ("zero1", "zero2", "zero3", "fsdp"):
        local = p_t / n
        offload += local * 4 / (K.PCIE_HOST_GBS * 1e9) + local / K.CPU_ADAM_PARAMS_PER_S
        A.append(
            f"optimizer offload: CPU Adam at {K.CPU_ADAM_PARAMS_PER_S / 1e9:.2f}B params/s per rank, "
            f"host link {K.PCIE_HOST_GBS:.0f} GB/s (strongly CPU dependent)"
        )
    if s.offload_params != "none" and strategy in ("zero3", "fsdp"):
        offload += gas * 2 * (pc.total * b_param / n) / (K.PCIE_HOST_GBS * 1e9)

    step = t_compute + exposed + offload
    t1 = t_compute  # one GPU, same per-GPU batch, no communication
    tps_n = n * tok_gpu_step / step
    tps_1 = tok_gpu_step / t1
    eff = tps_n / (n * tps_1)
    steps = None
    total = total_tokens
    if total is None and max_steps is not None:
        total = float(max_steps) * n * tok_gpu_step
    if total is not None:
        steps = total / (n * tok_gpu_step)
    hours_1 = total / tps_1 / 3600 if total is not None else None
    hours_n = total / tps_n / 3600 if total is not None else None
    A.append(
        f"MFU {mfu_v:.2f} of {peak_tflops:g} TFLOPS ({'given' if mfu is not None else 'class default'}"
        f"{', LoRA/QLoRA factor applied' if s.method != 'full' else ''})"
    )
    return TimeEstimate(
        flops_per_token=fpt,
        mfu=float(mfu_v),
        achieved_tflops=achieved / 1e12,
        world_size=n,
        grad_accum=gas,
        tokens_per_step=n * tok_gpu_step,
        compute_s=t_compute,
        comm_s=comm,
        exposed_comm_s=exposed,
        offload_s=offload,
        step_time_s=step,
        tokens_per_s=tps_n,
        tokens_per_s_per_gpu=tps_n / n,
        tokens_per_s_single_gpu=tps_1,
        scaling_efficiency=eff,
        comm_bound=comm > overlappable and comm > 0,
        total_tokens=float(total) if total is not None else None,
        steps=steps,
        hours_single_gpu=hours_1,
        hours_n_gpus=hours_n,
        assumptions=A,
    )
