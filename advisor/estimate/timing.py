"""Step-time and run-time model (hardware.md sections 2.3, 3 and 6), calibrated on benchmarks/data.

tokens      real tokens per sample: the data's average (dataset-tokens / dataset-samples) when known, else
            every sample counted at the max_length cap (real_tokens_known False: an upper bound, not the
            data's tokens); packed runs fill every row to max_length. Unpacked batches are padded to their
            longest sample: computed tokens = b x E[max of b lengths] (group_by_length, padding-free: none)
flops/tok   k * N_mm + a * 4 * L * q * span / 2 (causal) (+ 6 per adapter parameter)
            (+ a vision tower's forward and projector per sample / the sample's tokens: LLaVA-style runs)
            N_mm = parameters in matmuls per token (all but the input-embedding lookup; MoE: active experts)
            k = 6 full FT (fwd 2 + dgrad 2 + wgrad 2), 4 LoRA/QLoRA (frozen base: no weight-gradient matmuls),
            +2 with gradient checkpointing (the forward again); attention has no weights, so its backward
            is always whole: a = 3 (4 with checkpointing)
achieved    matmul peak * MFU(GPU class x achievable-matmul factor, method) * torch.compile / fp8 factors;
            a card of its class reference's architecture takes its own compute/HBM balance (class_mfu);
            the peak is the 16-bit tensor rate, for fp32 compute the FP32 CUDA-core rate unless TF32 is on
            (then the TF32 tensor rate), at its own MFU
t_compute   computed tokens per GPU per optimizer step * flops/token / achieved (the fp32 parts of a 16-bit
            run, prepare_model_for_kbit_training's lm_head and SDPA attention, at the fp32 rate)
            + micro-batches * layers * passes * a fixed per-layer overhead (eager kernel launches)
            + the weights streamed from HBM per pass (dequantised per pass for a 4-bit base)
t_optimizer the optimizer step, memory-bound: bytes it reads and writes per trainable parameter / HBM
comm        DDP/ZeRO-1: 2(n-1)/n * P_trainable * b once per optimizer step, hidden behind the last
            micro-batch's backward; ZeRO-2: reduce-scatter every micro-batch; ZeRO-3/FSDP: all-gather of P
            twice (forward, backward) + reduce-scatter of the trainable gradients every micro-batch
            (base weights even for LoRA), hidden behind forward+backward
exposed     = max(0, t_comm - COMM_OVERLAP * t_overlappable)
step time   = t_compute + t_optimizer + exposed + offload transfers / CPU-Adam
efficiency  = tokens/s on n GPUs / (n * tokens/s on one)
not timed   what the run does that the step leaves out, each with why and its direction (not_timed)
"""

from __future__ import annotations

from typing import Any

from advisor.core.records import field, record
from advisor.estimate import constants as K
from advisor.estimate.gpu_mfu import catalog_gpu, class_mfu, default_mfu, gpu_class_of, mamf_factor
from advisor.estimate.memory import TrainingSetup, lora_params, resolve_setup

__all__ = [
    "DataLength",
    "TimeEstimate",
    "adapter_cast_bytes_per_token",
    "class_mfu",
    "default_mfu",
    "estimate_time",
    "flops_per_token",
    "fp32_flops_per_token",
    "gpu_class_of",
    "mamf_factor",
    "not_timed",
    "tokens_per_micro_batch",
]

# ---- calibration ------------------------------------------------------------------------------------
# LoRA runs its (fewer) FLOPs at a lower utilisation than full FT: the adapters' thin matmuls, dropout and
# casts. Implied LoRA / full-FT MFU on the same GPU: torchtune 3B on 1x A100 (README.md@1814feb1, GT26 vs
# GT22) 0.90, Qwen README 7B LoRA on 1x A100 (Q01-Q04) 0.90-0.93, torchtune 7B on 1x 4090 (README.md
# @34d70b41, GT29) 0.99: 0.9.
MFU_LORA_FACTOR = 0.9
# QLoRA on top of LoRA: the implied ratio is ~1.0 on every QLoRA row (torchtune GT14, GT17, GT27, GT28:
# 0.99-1.1); the dequantisation is timed instead with the weight streaming below (a memory-bound pass over
# the 4-bit weights per forward and backward), which matters when micro-batches are short.
MFU_QLORA_FACTOR = 1.0
# fp32 matmuls on the CUDA cores (TF32 off: torch.backends.cuda.matmul.allow_tf32 is False by default since
# PyTorch 1.12; TrainingArguments(tf32=None) keeps it) run at the catalog's non-tensor FP32 peak. SGEMM is
# compute-bound and the memory-bound kernels around it shrink beside an 8x slower matmul, so the achieved
# fraction is well above the tensor-core one: the median implied MFU of the fp32 rows of benchmarks/data
# (HF docs BERT-large, 1x V100, no fp16: transformers perf_train_gpu_one.mdx@0016acf7 GT01-GT03, GT06, GT08;
# batch 1-4, GA 1-4, checkpointing on and off, AdamW, Adafactor, 8-bit Adam): 0.62-0.89 of 15.7 TFLOPS,
# median 0.75. Replaces the GPU class value; the method and compile factors still apply.
MFU_FP32_SIMT = 0.75
# Dequantising a 4-bit weight reads its codes and scales and writes the 16-bit tile the matmul reads again.
DEQUANT_BYTES_PER_PARAM = 0.5 + 2.0 + 2.0
# torch.compile (Inductor) fuses the pointwise and normalisation kernels around the matmuls: torchtune 3B on
# 1x A100 7075 -> 8998 tok/s (+27 %, README.md@1814feb1), torchtitan 8B FSDP2 on 8x H100 5762 -> 6667 tok/s
# per GPU (+16 %, benchmarks/llama3_h100_202412_torchtitan.md@b5bcd76c): x1.2 on the achieved rate.
COMPILE_SPEEDUP = 1.2
# fp8 training (torchao Float8Linear on the decoder Linears: accelerate `mixed_precision: fp8`, LLaMA-Factory
# / axolotl `fp8: true`) runs those matmuls on the fp8 tensor cores at twice the bf16 rate, but the casts and
# scaling around each matmul and the bf16 attention, norms and lm_head keep the gain well below 2x: torchtitan
# Llama 3.1 8B FSDP2 + compile on 8x H100 6667 -> 8532 tok/s per GPU (x1.28) and on 128x H100 6514 -> 8380
# (x1.29) (benchmarks/llama3_h100_202412_torchtitan.md@b5bcd76c, Tables 1 and 3): x1.28 on the achieved rate,
# only on a GPU with an fp8 rate (Ada, Hopper, Blackwell; elsewhere the run is timed at its bf16 rate).
FP8_SPEEDUP = 1.28
# Eager PyTorch pays a fixed cost per decoder layer and pass (forward, backward as two, recompute) that
# does not shrink with the tokens: kernel launches, Python module and hook overhead. Fitted per source as
# the intercept of step time against tokens: Qwen README 7B LoRA (256 vs 1024 tokens, 1x A100) ~0.65 ms,
# Qwen 1.8B LoRA ~1.2 ms, PEFT MetaMathQA 3B LoRA on an L40S ~0.7 ms, HF docs BERT-large on a V100 ~0.3 ms
# per layer and pass: 0.65 ms (the median).
LAYER_PASS_OVERHEAD_S = 0.65e-3
# Sharded runs (FSDP/ZeRO-3) get no utilisation factor of their own: beside the communication modelled below,
# the 8x A100 FSDP rows (torchtune GT16, GT17, GT33, GT34) imply 0.55-0.88 against the single-GPU 0.58 and
# the 8x H100 FSDP2 rows sit at the hopper value; over PCIe the exposed communication is what slows them.
# Fraction of overlappable compute that hides communication (hardware.md 6: overlap ~0.8).
COMM_OVERLAP = 0.80
# DDP's 25 MB buckets run far below the large-message busbw on fast fabrics (hardware.md 2.2: A100 16 MiB
# 106 vs 235 GB/s, H200 220 vs 482): derate busbw by this factor for DDP when busbw > DDP_DERATE_ABOVE_GBS.
DDP_SMALL_MESSAGE_DERATE = 0.5
DDP_DERATE_ABOVE_GBS = 100.0
# GeForce cards have no PCIe peer-to-peer on the stock driver: NCCL stages every transfer through host memory
# (hardware.md 2.2; NVIDIA/nccl-tests#117), which halves the PCIe ring's useful bandwidth.
NO_P2P_BUSBW_FACTOR = 0.5
# Host link for CPU offload (PCIe Gen4/5 x16 achieved) and CPU-Adam rate (hardware.md 3.3: 0.06-0.25 B/s).
PCIE_HOST_GBS = 25.0
CPU_ADAM_PARAMS_PER_S = 0.15e9
# Tensor accesses per parameter of torch's foreach/for-loop AdamW over those of a fused kernel (20 / 7).
FOREACH_ADAM_PASSES = 20 / 7
# Elementwise kernels (the optimizer step, 4-bit dequantisation) reach about this fraction of HBM bandwidth
# (a STREAM-like triad).
ELEMENTWISE_HBM_EFFICIENCY = 0.7


UNKNOWN_LENGTH = "data length unknown"


@record(frozen=True, slots=True, kw_only=True)
class DataLength:
    """What the data says about tokens per sample (from the run's settings and its recipe)."""

    tokens_per_sample: float | None = None  # the data's mean real tokens per sample, before the cap
    packed: bool | None = None  # samples packed into rows of max_length (TRL packing, torchtune packed)
    padding_free: bool | None = None  # micro-batches concatenated without padding (TRL padding_free)
    # HF group_by_length: LengthGroupedSampler sorts each mega-batch of up to 50 x batch samples by length
    # (transformers 5.24 trainer_pt_utils.py:484-498, get_length_grouped_indices), so a micro-batch's samples
    # are of nearly one length and padding to the longest adds little
    length_grouped: bool | None = None
    # why packed rows attend within each packed sample under flash-attention (the consumer's rule, cited:
    # advisor.facts.packed_attention), None when they attend over the whole row or it is not known
    per_document: str | None = None
    source: str = ""  # where tokens_per_sample came from, for the assumption line


@record(frozen=True, slots=True, kw_only=True)
class TimeEstimate:
    flops_per_token: float
    mfu: float
    achieved_tflops: float  # per GPU
    world_size: int
    grad_accum: int
    tokens_per_step: int  # global real tokens per optimizer step
    compute_s: float  # per optimizer step, per GPU
    comm_s: float  # communication time per optimizer step (before overlap)
    exposed_comm_s: float  # what overlap does not hide
    offload_s: float
    step_time_s: float
    tokens_per_s: float  # all GPUs, real tokens
    tokens_per_s_per_gpu: float
    tokens_per_s_single_gpu: float
    scaling_efficiency: float  # tokens/s at n GPUs / (n * tokens/s on one)
    comm_bound: bool
    optimizer_s: float = 0.0
    computed_tokens_per_step: int = 0  # global, padding included
    tokens_basis: str = ""  # how tokens per sample were chosen
    # False when the data's length is unknown and samples are not packed: every sample was counted at the
    # max_length cap, so tokens_per_s counts capped tokens (an upper bound on the step time, not real tokens)
    real_tokens_known: bool = True
    gpu_class: str = ""
    # what this run does that the step time leaves out, each with why (shown on the Time line): the
    # estimate is then a bound in the direction each one says
    not_timed: list[str] = field(default_factory=list)
    total_tokens: float | None = None
    steps: float | None = None
    hours_single_gpu: float | None = None
    hours_n_gpus: float | None = None
    assumptions: list[str] = field(default_factory=list)


def tokens_per_micro_batch(
    micro_batch: int, max_length: int, data: DataLength | None
) -> tuple[float, float, str]:
    """(real tokens, computed tokens incl. padding, basis) per micro-batch on one GPU."""
    b, cap = max(1, micro_batch), max(1, max_length)
    if data is not None and data.packed:
        return float(b * cap), float(b * cap), f"packed: every row filled to {cap} tokens"
    mean = data.tokens_per_sample if data is not None else None
    if mean is None or mean <= 0:
        return (
            float(b * cap),
            float(b * cap),
            f"{UNKNOWN_LENGTH}: every sample counted at max_length {cap}, a cap and not the data's length, "
            "so the step time is an upper bound and the real tokens per second are unknown (set "
            "dataset-tokens and dataset-samples to time the data's real length)",
        )
    real = min(float(mean), float(cap))
    # padded to the longest sample of the micro-batch; lengths taken as uniform on [0, 2 * mean]:
    # E[max of b] = 2 * mean * b / (b + 1) (= mean for b = 1); padding-free and length-grouped batches compute
    # (about) what they hold
    padded = b > 1 and not (data is not None and (data.padding_free or data.length_grouped))
    longest = min(float(cap), 2.0 * float(mean) * b / (b + 1)) if padded else real
    source = data.source if data is not None else None  # data is set here: mean came from it
    basis = f"{real:.0f} tokens per sample on average ({source or 'from the data'})" + (
        f", padded to ~{longest:.0f} per micro-batch" if longest > real + 0.5 else ""
    )
    return b * real, b * max(longest, real), basis


def flops_per_token(setup: TrainingSetup, attention_span: float | None = None) -> float:
    """Training FLOPs per computed token (forward + backward, + recompute with checkpointing)."""
    r = resolve_setup(setup)
    pc = setup.model
    lora = setup.method != "full"
    k = 4.0 if lora else 6.0
    a = 3.0
    if r.gc:
        k += 2.0
        a += 1.0
    span = float(attention_span if attention_span is not None else r.seq)
    causal = pc.block != "bert"  # encoders attend both ways, a decoder's classification head does not
    attn = a * 4.0 * pc.attention_layers * pc.q_dim * span * (0.5 if causal else 1.0)
    mm = getattr(pc, "matmul_params", None) or pc.active_params
    f = k * mm + attn
    if lora:
        f += 6.0 * lora_params(pc, r.lora_r, sorted(r.targets))
        # a trainable lm_head copy (modules_to_save) adds its weight-gradient matmul, 2 FLOPs per weight
        f += 2.0 * r.saved_matmul
    if setup.vision is not None:
        f += vision_flops_per_sample(setup) / max(r.seq, 1)
    return f


def vision_flops_per_sample(setup: TrainingSetup) -> float:
    """A LLaVA-style run's image FLOPs per sample (TrainingSetup.vision): the frozen tower's forward only (no
    grad: LLaVA clip_encoder.py:45), 2 per parameter per token (the patch Conv2d as a matmul over each patch;
    the position lookup counted too, a bound) + its bidirectional attention, 4 x layers x h x T^2; the
    projector's forward, and its backward when it trains (weight and input gradients: its input needs none,
    so 2 more, not 4). Spread over the sample's sequence in flops_per_token."""
    v = setup.vision
    if v is None:
        return 0.0
    T = v.tower_tokens
    tower = 2.0 * v.tower_params * T + 4.0 * v.tower_layers * v.tower_hidden * T * T
    proj = (4.0 if v.projector_trained else 2.0) * v.projector_params * v.image_tokens
    return v.images_per_sample * (tower + proj)


def fp32_flops_per_token(
    setup: TrainingSetup, attention_span: float | None = None
) -> tuple[float, list[str]]:
    """Of flops_per_token, the FLOPs that run in fp32 while the rest of the run computes in 16 bits.

    PEFT's prepare_model_for_kbit_training casts every non-quantized fp16/bf16 parameter to fp32 (peft 0.21.2
    utils/other.py:205-209, every parameter not of class Params4bit), the lm_head included, and the embedding
    output makes the residual stream fp32. A 4-bit Linear casts its input to the compute dtype and its output
    back to the input's (bitsandbytes 0.45.0 nn/modules.py:478-484, Linear4bit.forward), so q, k and v come
    out fp32: SDPA and eager attention then run in fp32, while flash-attention casts them back to 16 bits
    (transformers 5.24 modeling_flash_attention_utils.py:595-597, fa_peft_integration_check). The lm_head
    matmul runs on the fp32 stream and weight. Under autocast none of this holds: linear and SDPA are on
    autocast's lower-precision list and run in its dtype.
    """
    r = resolve_setup(setup)
    if not r.qlora_fp32_stream or r.precision == "fp32" or r.autocast:
        return 0.0, []
    pc = setup.model
    k = 4.0 + (2.0 if r.gc else 0.0)
    lm = float(pc.hidden * pc.vocab)
    out = k * lm
    parts = ["the lm_head"]
    impl = setup.attn_implementation or "sdpa"  # transformers' default when torch has SDPA
    if impl in ("sdpa", "eager"):
        a = 3.0 + (1.0 if r.gc else 0.0)
        span = float(attention_span if attention_span is not None else r.seq)
        out += a * 4.0 * pc.attention_layers * pc.q_dim * span * 0.5
        parts.append(f"{impl} attention")
    return out, parts


# PEFT keeps LoRA adapters in fp32 on a 16-bit base (peft 0.21.2 tuners/tuners_utils.py:2705-2722,
# cast_adapter_dtype with autocast_adapter_dtype=True) and casts each targeted Linear's input to the adapter
# dtype (tuners/lora/layer.py:1100, `x = self._cast_input_dtype(x, lora_A.weight.dtype)`); without autocast
# lora_A/lora_B, `* scaling` and the sum then run in fp32 and `result.to(torch_result_dtype)` casts back
# (layer.py:1101-1114). Bytes this adds per token and per element of a targeted Linear's input (d_in) and
# output (d_out) over adapters in the stream's dtype, read + written, per pass (forward in, forward out,
# backward in, backward out): the cast r2 w4 and lora_A reading 4 bytes for 2 (+2); lora_B's fp32 output (+2),
# `* scaling` in fp32 (+4), the 16-bit result + fp32 sum promoted to fp32 (+4), the cast back r4 w2; backward
# the cast gradients (r2 w4, r4 w2 twice), scaling's in fp32 (+4), lora_B's dgrad and wgrad reading an fp32
# gradient (+2 each), lora_A's fp32 input gradient (+2) and its wgrad reading the fp32 input (+2).
# bitsandbytes 4/8-bit (lora/bnb.py:543-551) and AWQ (lora/awq.py:70-78) cast lora_B's output back before
# the sum (bnb after `* scaling`, AWQ before it). tests/estimate/test_timing_adapter_cast.py counts the bytes
# the installed PEFT layer moves against this (from helper h8's 12633cf).
ADAPTER_CAST_BYTES_NO_AUTOCAST: dict[str, tuple[float, float, float, float]] = {
    "linear": (8.0, 16.0, 10.0, 20.0),
    "bnb": (8.0, 12.0, 10.0, 14.0),
    "awq": (8.0, 8.0, 10.0, 10.0),
}
# lora_dropout > 0 (nn.Dropout, lora/layer.py:256; p = 0 is nn.Identity) runs on the fp32 copy: 4 + 4 bytes
# read and written per input element where the 16-bit one moves 2 + 2, in each forward and in the backward.
ADAPTER_DROPOUT_FP32_BYTES = 4.0


def _fp32_adapter_kind(setup: TrainingSetup) -> str | None:
    """The PEFT layer kind running fp32 adapters on a 16-bit stream without autocast; None when not."""
    r = resolve_setup(setup)
    if (
        setup.method == "full"
        or not r.targets
        or r.dtypes.trainable != "fp32"
        or r.br != 2  # the residual stream (fp32 after prepare_model_for_kbit_training: nothing to cast)
        or r.autocast
        or r.fsdp  # FSDP gathers the adapters in its param_dtype with the rest of the unit
        or setup.torch_compile  # Inductor fuses the casts into the pointwise kernels beside them
        or setup.framework != "hf"
    ):
        return None
    quant = r.dtypes.quant if setup.method == "qlora" else None
    if quant in ("nf4", "int8"):
        return "bnb"
    if quant == "awq4":
        return "awq"
    return "linear"  # LoRA Linear, GPTQ


def adapter_cast_bytes_per_token(setup: TrainingSetup) -> float:
    """HBM bytes per computed token that PEFT's fp32 adapters without autocast add (0 when they do not
    apply): ADAPTER_CAST_BYTES_NO_AUTOCAST over the targeted Linears, the recomputed forward, dropout."""
    kind = _fp32_adapter_kind(setup)
    if kind is None:
        return 0.0
    r = resolve_setup(setup)
    f_in, f_out, b_in, b_out = ADAPTER_CAST_BYTES_NO_AUTOCAST[kind]
    fwd = 2.0 if r.gc else 1.0
    drop = ADAPTER_DROPOUT_FP32_BYTES if (setup.lora_dropout or 0.0) > 0 else 0.0
    per_in = f_in * fwd + b_in + drop * (fwd + 1.0)
    per_out = f_out * fwd + b_out
    pc = setup.model
    active = float(getattr(pc, "moe_active", 0) or 0)
    per_layer = 0.0
    for lin in pc.linears:
        if lin.name not in r.targets:
            continue
        passes = min(float(lin.count), active) if lin.count > 1 and active else float(lin.count)
        per_layer += passes * (per_in * lin.d_in + per_out * lin.d_out)
    return per_layer * pc.layers


def not_timed(setup: TrainingSetup, adapter_s: float = 0.0, step_s: float = 0.0) -> list[str]:
    """What the run does that the step time leaves out, each with why (TimeEstimate.not_timed).

    adapter_s: what PEFT's own layer would add to the step for fp32 adapters without autocast.
    """
    out: list[str] = []
    if _fp32_adapter_kind(setup) is not None:
        cost = (
            f"; PEFT's own layer adds about {adapter_s:.2f} s per optimizer step "
            f"(+{adapter_s / step_s:.0%}: the casts' HBM traffic and the adapter matmuls on the fp32 CUDA "
            "cores)"
            if adapter_s > 0 and step_s > 0
            else "; with PEFT's own layer the step is slower than estimated"
        )
        out.append(
            f"PEFT's fp32 adapters on a {resolve_setup(setup).dtypes.storage} base without autocast (each "
            "targeted Linear's input copied to fp32, the adapter matmuls and the sum in fp32: peft "
            "tuners/lora/layer.py): left out, because their cost depends on the LoRA kernels the stack runs "
            "(fused or 16-bit adapters pay none)" + cost
        )
    if setup.liger_kernel:
        out.append(
            "Liger's fused RMSNorm/SwiGLU/RoPE/linear-cross-entropy kernels: left out, because the class "
            "MFUs were measured on runs without them (Liger-Kernel's README reports ~20% more throughput for "
            "LLaMA 3-8B, batch 8, FSDP1 on 8x A100); the step may be faster than estimated"
        )
    return out


def _optimizer_bytes_per_param(r: Any) -> float:
    """Bytes the optimizer step reads and writes per trainable parameter."""
    from advisor.estimate.memory.resolve import dtype_bytes  # the memory model's dtype sizes

    pb = 4 if r.dtypes.master else dtype_bytes(r.dtypes.trainable)
    states = r.opt.states if r.opt.states is not None else r.opt.mult * pb
    grad = 4 if r.dtypes.master else dtype_bytes(r.dtypes.trainable)
    master_extra = 2 * dtype_bytes(r.dtypes.storage) if r.dtypes.master else 0  # the 16-bit copy refreshed
    minimal = 2 * pb + grad + 2 * states + master_extra  # one fused kernel: read p, g, m, v; write p, m, v
    if r.opt.temp in ("foreach", "per_param"):
        # torch's unfused AdamW walks the tensors once per elementwise op (torch 2.13 optim/adam.py:691-794,
        # _multi_tensor_adam: weight-decay mul_, lerp_, mul_, addcmul_, sqrt, div_, add_, addcdiv_): 20 tensor
        # accesses per parameter where the fused kernel makes 7
        return minimal * FOREACH_ADAM_PASSES
    return minimal


def _weight_bytes_per_micro_batch(r: Any, pc: Any) -> float:
    """HBM bytes the matmuls stream for the weights in one micro-batch (every rank reads whole layers).

    Each pass over a layer reads its weights once: forward, input-gradient backward, and the recomputed
    forward with checkpointing; a full fine-tune also writes (and with accumulation reads back) the weight
    gradients.
    A 4-bit base is dequantised on every pass instead: codes and scales read, a 16-bit tile written and read.
    """
    from advisor.estimate.memory.resolve import dtype_bytes

    reads = 2 + (1 if r.gc else 0)
    mm = getattr(pc, "matmul_params", None) or pc.active_params
    if r.s.method == "qlora":
        quantized = pc.total - pc.embedding - pc.lm_head  # bitsandbytes/torchao quantize the decoder Linears
        return reads * quantized * DEQUANT_BYTES_PER_PARAM + reads * (mm - quantized) * 2
    wb = dtype_bytes(r.dtypes.storage)
    out = reads * mm * wb
    if r.s.method == "full":
        gb = 4 if r.dtypes.master else dtype_bytes(r.dtypes.trainable)
        out += mm * gb * (2 if r.s.grad_accum > 1 else 1)
    return float(out)


def _default_mfu_for(
    s: TrainingSetup, cls: str | None, gpu: str, assumptions: list[str], simt: bool = False
) -> float:
    """The class MFU (the fp32 CUDA-core one for SIMT matmuls) with the method and compile factors applied."""
    if simt:
        value = MFU_FP32_SIMT
    elif cls is None:
        value = K.MFU_FALLBACK
        assumptions.append(f"no MFU default for GPU class '{gpu}': assumed {K.MFU_FALLBACK}")
    else:
        value, note = class_mfu(gpu, cls)
        if note:
            assumptions.append(note)
    if s.method == "lora":
        value *= MFU_LORA_FACTOR
    elif s.method == "qlora":
        value *= MFU_LORA_FACTOR * MFU_QLORA_FACTOR
    if s.torch_compile:
        value = min(1.0, value * COMPILE_SPEEDUP)
    return value


def _communication(
    strategy: str,
    n: int,
    gas: int,
    total: int,
    trainable: int,
    b_param: float,
    b_grad: float,
    bw_gbs: float,
    t_compute: float,
    frozen_base: bool,
) -> tuple[float, float]:
    """(seconds of collectives per optimizer step, seconds of compute they can hide behind)."""
    f = (n - 1) / n
    bw = bw_gbs * 1e9
    bwd_share = 0.5 if frozen_base else 2.0 / 3.0  # the backward's share of the compute
    if strategy in ("ddp", "zero1"):
        # one all-reduce per optimizer step, behind the last micro-batch's backward
        eff_bw = bw * (DDP_SMALL_MESSAGE_DERATE if bw_gbs > DDP_DERATE_ABOVE_GBS else 1.0)
        return 2 * f * trainable * b_grad / eff_bw, t_compute / gas * bwd_share
    if strategy in ("zero2", "fsdp_grad_op"):
        # gradients reduce-scattered every micro-batch; parameters gathered once (ZeRO-2) or per micro-batch
        per_mb = strategy == "fsdp_grad_op"
        gather = (gas if per_mb else 1) * f * (total if per_mb else trainable) * b_param
        return (gas * f * trainable * b_grad + gather) / bw, t_compute * bwd_share
    if strategy in ("zero3", "fsdp"):
        # all-gather of every weight in forward and in backward, reduce-scatter of the trainable gradients.
        # Checkpointing adds no third gather in DeepSpeed: a submodule's weights are kept after its recomputed
        # forward when they are used again within stage3_max_reuse_distance (1e9 elements by default), which
        # its own backward right after is (deepspeed 0.14.0 runtime/zero/partitioned_param_coordinator.py
        # :506-515, zero/config.py:223); gradients are reduced in the 16-bit dtype under bf16/fp16
        # (runtime/engine.py:826-837 communication_data_type, zero/stage3.py:1330-1332)
        return gas * (2 * f * total * b_param + f * trainable * b_grad) / bw, t_compute
    return 0.0, 0.0


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
    data: DataLength | None = None,
    hbm_gbs: float | None = None,
    fp32_tflops: float | None = None,
    fp32_simt: bool = True,
    fp8: bool = False,
) -> TimeEstimate:
    """Step time, throughput, scaling efficiency and run hours for `setup` on `world_size` GPUs.

    peak_tflops: dense BF16/FP16 peak per GPU (FP32-accumulate rate on GeForce). busbw_gbs: NCCL bus bandwidth
    of the fabric the job spans (GB/s). gpu_class: the GPU's catalog id or name (its class picks the MFU).
    grad_accum: if left at 1, the setup's grad_accum is used. mfu overrides the class default. data: what the
    data says about tokens per sample. hbm_gbs: memory bandwidth (default: the catalog's). fp32_tflops: the
    rate fp32 matmuls run at on this GPU (for a run computing in fp32 it is peak_tflops itself; given, the
    fp32 parts of a 16-bit run are timed at it); fp32_simt: that rate is the CUDA-core one (TF32 off).
    fp8: the run trains its decoder Linears in fp8 (the caller checked that the GPU has an fp8 rate).
    """
    r = resolve_setup(setup)
    A = list(r.assumptions)
    s, pc = setup, setup.model
    n = max(1, int(world_size))
    gas = grad_accum if grad_accum != 1 else max(1, s.grad_accum)
    if s.world_size not in (1, n) and s.strategy != "none":
        A.append(f"setup.world_size={s.world_size} differs from world_size={n}: timed at {n}")
    strategy = s.strategy if n > 1 else "none"
    if n > 1 and strategy == "none":
        strategy = "ddp"
        A.append(f"{n} GPUs with strategy 'none': timed as DDP")

    real_mb, computed_mb, basis = tokens_per_micro_batch(r.b, r.seq, data)
    span = computed_mb / max(1, r.b)
    varlen = bool(
        data is not None
        and data.packed
        and (data.padding_free or data.per_document)
        and str(s.attn_implementation or "").startswith("flash")
    )
    why = (data.per_document or "TRL padding_free") if data is not None else ""
    if varlen and not (data is not None and data.tokens_per_sample):
        whole, none = flops_per_token(setup, attention_span=span), flops_per_token(setup, attention_span=0.0)
        A.append(
            f"packed rows attend within each sample ({why}), whose length is unknown: attention timed over "
            f"the whole {r.seq}-token row, an upper bound on the step time; that attention is "
            f"{(whole - none) / whole:.0%} of the FLOPs timed, which samples far shorter than the row would "
            "mostly save (set dataset-tokens and dataset-samples for the data's length)"
        )
    elif varlen and data is not None and data.tokens_per_sample:
        # padding-free packing hands flash-attention one flattened row with per-sample position_ids, which it
        # runs as variable-length attention within each sample (transformers 5.24
        # modeling_flash_attention_utils.py:855-861, _is_packed_sequence -> flash_varlen_fn): each token
        # attends over its own sample, not the packed row
        span = min(float(data.tokens_per_sample), float(r.seq))
        A.append(
            f"packed rows attend within each sample ({why}): attention within each ~{span:.0f}-token sample, "
            "the mean length: a lower bound on the attention FLOPs, which grow with each sample's length "
            "squared (only the mean is known)"
        )
    fpt = flops_per_token(setup, attention_span=span)
    cls = gpu_class_of(gpu_class)
    all_fp32 = r.precision == "fp32"
    simt = all_fp32 and fp32_simt
    mfu_v = mfu if mfu is not None else _default_mfu_for(s, cls, gpu_class, A, simt=simt)
    if fp8 and not all_fp32 and mfu is None:
        mfu_v = min(1.0, mfu_v * FP8_SPEEDUP)
        A.append(f"fp8 Linears: x{FP8_SPEEDUP} on the achieved rate (torchtitan Float8 vs bf16, same run)")
    achieved = peak_tflops * 1e12 * mfu_v
    if achieved <= 0:
        raise ValueError("peak_tflops must be positive")
    fp32_fpt, fp32_parts = fp32_flops_per_token(setup, attention_span=span) if fp32_tflops else (0.0, [])
    achieved_fp32 = 0.0
    if fp32_fpt > 0 and fp32_tflops:
        mfu_32 = mfu if mfu is not None else _default_mfu_for(s, cls, gpu_class, [], simt=fp32_simt)
        achieved_fp32 = fp32_tflops * 1e12 * mfu_32
        A.append(
            f"{' and '.join(fp32_parts)} in fp32 (prepare_model_for_kbit_training's fp32 stream): timed at "
            f"{fp32_tflops:g} TFLOPS x MFU {mfu_32:.2f}"
        )

    tok_gpu_step = computed_mb * gas
    real_gpu_step = real_mb * gas
    passes = 3 + (1 if r.gc else 0)  # forward, backward (two), the recomputed forward
    t_overhead = gas * pc.layers * passes * LAYER_PASS_OVERHEAD_S
    spec = catalog_gpu(gpu_class)
    hbm = hbm_gbs or (float(getattr(spec, "memory_bandwidth_gbs", 0) or 0) if spec is not None else 0.0)
    t_weights = (
        gas * _weight_bytes_per_micro_batch(r, pc) / (hbm * 1e9 * ELEMENTWISE_HBM_EFFICIENCY) if hbm else 0.0
    )
    t_matmul = tok_gpu_step * (fpt - fp32_fpt) / achieved
    if achieved_fp32 > 0:
        t_matmul += tok_gpu_step * fp32_fpt / achieved_fp32
    t_compute = t_matmul + t_overhead + t_weights

    full = s.method == "full"
    p_t = pc.total if full else lora_params(pc, r.lora_r, sorted(r.targets)) + r.saved
    b_grad = 4 if (r.amp or r.precision == "fp32") and not r.deepspeed else 2
    if full and r.fsdp and not r.amp:
        b_grad = 2
    b_param: float = 4 if (r.precision == "fp32" and not r.amp) else 2
    if s.method == "qlora":
        b_param = K.NF4_DQ_BYTES if s.qlora_double_quant else K.NF4_BYTES

    bw_gbs = busbw_gbs
    if n > 1 and spec is not None and not getattr(spec, "p2p_supported", True):
        bw_gbs = busbw_gbs * NO_P2P_BUSBW_FACTOR
        A.append(
            f"{getattr(spec, 'display_name', gpu_class)}: no PCIe peer-to-peer, NCCL through host memory "
            f"(bus bandwidth x{NO_P2P_BUSBW_FACTOR})"
        )
    comm, overlappable = _communication(
        strategy, n, gas, pc.total, p_t, b_param, b_grad, bw_gbs, t_compute, s.method != "full"
    )
    exposed = max(0.0, comm - COMM_OVERLAP * overlappable)
    sharded = strategy in ("zero2", "fsdp_grad_op", "zero3", "fsdp")  # comm ~ 1 / bus bandwidth (no derate)
    if sharded and comm > 0.01 * t_compute and overlappable > 0 and bw_gbs > 0:
        # the step's sensitivity to the fabric the descriptor claims: the bus bandwidth below which the
        # collectives stop hiding behind compute (a network the source did not state is an assumption)
        edge = comm * bw_gbs / (COMM_OVERLAP * overlappable)
        A.append(
            f"{strategy} collectives {comm:.2f} s per step at {bw_gbs:.0f} GB/s bus bandwidth: "
            + (f"{exposed:.2f} s not hidden" if exposed > 0 else "hidden")
            + f" behind compute (overlap {COMM_OVERLAP:.0%}); they are exposed below ~{edge:.0f} GB/s"
        )

    t_opt = 0.0
    if hbm > 0 and s.offload_optimizer == "none":
        local = p_t / n if strategy in ("zero1", "zero2", "zero3", "fsdp", "fsdp_grad_op") else p_t
        t_opt = local * _optimizer_bytes_per_param(r) / (hbm * 1e9 * ELEMENTWISE_HBM_EFFICIENCY)

    offload = 0.0
    if s.offload_optimizer != "none" and strategy in ("zero1", "zero2", "zero3", "fsdp", "none"):
        local = p_t / n
        offload += local * 4 / (PCIE_HOST_GBS * 1e9) + local / CPU_ADAM_PARAMS_PER_S
        A.append(
            f"optimizer offload: CPU Adam at {CPU_ADAM_PARAMS_PER_S / 1e9:.2f}B params/s per rank, "
            f"host link {PCIE_HOST_GBS:.0f} GB/s (strongly CPU dependent)"
        )
    if s.offload_params != "none" and strategy in ("zero3", "fsdp"):
        offload += gas * 2 * (pc.total * b_param / n) / (PCIE_HOST_GBS * 1e9)

    step = t_compute + t_opt + exposed + offload
    adapter_s = 0.0  # what PEFT's fp32 adapters without autocast would add (not_timed)
    cast_bytes = adapter_cast_bytes_per_token(setup) if hbm else 0.0
    if cast_bytes:
        adapter_s = tok_gpu_step * cast_bytes / (hbm * 1e9 * ELEMENTWISE_HBM_EFFICIENCY)
        if fp32_tflops:  # the adapters' matmuls on the CUDA cores instead of the 16-bit rate
            ad = 6.0 * lora_params(pc, r.lora_r, sorted(r.targets))
            adapter_s += tok_gpu_step * ad * (1.0 / (fp32_tflops * 1e12 * MFU_FP32_SIMT) - 1.0 / achieved)
    # one GPU doing this rank's work (same per-GPU batch and optimizer shard) without communication, so that
    # the efficiency is communication and offload alone
    t1 = t_compute + t_opt
    tps_n = n * real_gpu_step / step
    tps_1 = real_gpu_step / t1
    eff = tps_n / (n * tps_1)
    steps = None
    total = total_tokens
    if total is None and max_steps is not None:
        total = float(max_steps) * n * real_gpu_step
    if total is not None:
        steps = total / (n * real_gpu_step)
    hours_1 = total / tps_1 / 3600 if total is not None else None
    hours_n = total / tps_n / 3600 if total is not None else None
    A.append(f"tokens per sample: {basis}")
    if basis.startswith(UNKNOWN_LENGTH) and total_tokens is not None and r.b > 1:
        A.append(
            "run hours from the data's token count at a step of capped samples: a lower bound, since "
            "micro-batches of shorter samples are padded to their longest (unknown here)"
        )
    A.append(
        f"MFU {mfu_v:.2f} of {peak_tflops:g} TFLOPS ("
        + ("given" if mfu is not None else "fp32 CUDA cores" if simt else f"{cls or 'unknown'} GPU class")
        + (", LoRA/QLoRA factor" if s.method != "full" and mfu is None else "")
        + (", torch.compile" if s.torch_compile and mfu is None else "")
        + f"); fixed {LAYER_PASS_OVERHEAD_S * 1e3:.2f} ms per layer and pass"
    )
    return TimeEstimate(
        flops_per_token=fpt,
        mfu=float(mfu_v),
        achieved_tflops=achieved / 1e12,
        world_size=n,
        grad_accum=gas,
        tokens_per_step=round(n * real_gpu_step),
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
        optimizer_s=t_opt,
        computed_tokens_per_step=round(n * tok_gpu_step),
        tokens_basis=basis,
        real_tokens_known=not basis.startswith(UNKNOWN_LENGTH),
        gpu_class=cls or "",
        not_timed=not_timed(setup, adapter_s, step),
        total_tokens=float(total) if total is not None else None,
        steps=steps,
        hours_single_gpu=hours_1,
        hours_n_gpus=hours_n,
        assumptions=A,
    )
