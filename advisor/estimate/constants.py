"""The one set of documented constants used by the memory and time models.

Every number here is applied to every setup alike (no per-model or per-row tuning). Sources are the research
notes in the shared domain folder (memory-model.md sections 3, 6; hardware.md sections 2, 3, 6).
"""

from __future__ import annotations

GIB = float(2**30)

# ---- memory --------------------------------------------------------------------------------------
# CUDA context + cuBLAS/cuDNN workspaces outside the PyTorch allocator (nvidia-smi only). memory-model.md 6.2:
# 0.3-0.6 GiB on current CUDA/torch with lazy module loading, ~1.3 GiB on older stacks (HF docs, V100).
CUDA_CONTEXT_GIB = 0.5
# NCCL communicator buffers per process in multi-GPU runs (memory-model.md 6.2/6.6: ~0.5-1 GiB).
NCCL_GIB = 0.75
# Caching-allocator overhead: reserved - allocated, as a fraction of the memory that churns (activations,
# logits, gradients, step temporaries, communication buffers). Static states are allocated once and pack
# tightly. Answer.AI measured reserved 10.22 vs allocated 9.16 GiB (+12 % of all); torchtune's tutorial shows
# 13.98 vs 13.96 GB (~0 %) -- 10 % of the dynamic part sits between them.
ALLOCATOR_FRAG = 0.10

# NF4 storage (bitsandbytes / torchao), bytes per quantized parameter (memory-model.md 3.7):
NF4_BYTES = 0.5 + 4 / 64  # 4-bit codes + one fp32 absmax per 64-weight block
NF4_DQ_BYTES = 0.5 + 1 / 64 + 4 / (64 * 256)  # double quantization: 8-bit absmax + fp32 per 256 blocks

# LLM.int8 storage (bitsandbytes Int8Params): one int8 code per weight + one fp32 scale (SCB) per output row
# (4 bytes / d_in per weight; d_in ~ 4096 for 7B-class models).
INT8_BYTES = 1.0 + 4 / 4096

# Logits + cross-entropy, bytes per (token x vocab) element at the start of backward (memory-model.md 6.5):
# fp32 log-softmax output saved (4) + its incoming fp32 grad (4) + the fp32 grad it produces (4).
LOGITS_STANDARD = 12.0
# Chunked CE (torchtune CEWithChunkedOutputLoss, 8 chunks). Eager: the fp32 log-probs of every chunk stay
# saved (4) + one chunk's fp32 backward pair (8 / 8). Compiled loss: only the bf16 chunk logits are saved (2);
# Inductor's fused backward keeps the fp32 softmax in registers and writes one chunk's bf16 grad (2 / 8).
CE_CHUNKS = 8
LOGITS_CHUNKED = 4.0 + 8.0 / CE_CHUNKS
LOGITS_CHUNKED_COMPILED = 2.0 + 2.0 / CE_CHUNKS
# Fused linear + CE (Liger FLCE, cut-cross-entropy): never materialises T x V; ~ the grad-input stash (2h) and
# one chunk of ~T*h/V tokens x V logits in fp32 + grads (~10h), bytes per token per hidden unit.
LOGITS_FUSED_PER_H = 12.0
# cut-cross-entropy (axolotl-ai-cloud/ml-cross-entropy@48b5169 cut_cross_entropy/cce.py:57-130): the forward
# saves its input e (already an activation), the fp32 log-sum-exp per token and the fp32 nll it adds the
# target logit to (cce.py:118); the backward allocates de like e (cce_backward.py:354-355, accum_e_fp32
# False by default: transformers/patch.py:99) and dc only for a trained lm_head (its gradient, counted with
# the gradients). No tokens x vocab tensor: the blocks live in the kernels' registers. Bytes per token beyond
# de: lse + nll (fp32) and the int64 targets / valid-token indices (cce.py:130 saves both).
CCE_PER_TOKEN = 4.0 + 4.0 + 8.0 + 8.0
# Gemma-2 final logit soft-capping keeps tanh's bf16 output for backward.
LOGITS_SOFTCAP_EXTRA = 2.0

# Activation offloading keeps this many layers' checkpoints on the GPU in flight.
OFFLOAD_INFLIGHT_LAYERS = 2

# DeepSpeed defaults (elements) when the config leaves them unset; HF "auto" replaces some with h-based
# values.
DS_BUCKET_DEFAULT = 5e8  # reduce_bucket_size / allgather_bucket_size
DS_PREFETCH_DEFAULT = 5e7  # stage3_prefetch_bucket_size
DS_MAX_LIVE_DEFAULT = 1e9  # stage3_max_live_parameters
# ZeRO-3 fetches (and prefetches) at every hooked module call: per decoder layer, besides its Linears and
# norms, the layer, its attention and MLP containers and the activation module.
ZERO3_CONTAINER_CALLS = 4
DS_PERSISTENCE_DEFAULT = 1e5  # stage3_param_persistence_threshold: smaller params are never partitioned
# FSDP: unsharded units live at once during forward/backward (current + one prefetched).
FSDP_LIVE_UNITS = 2

# Uncertainty band around the point estimate (memory-model.md section 7 accuracy targets).
BAND_BASE = 0.10
BAND_SHARDED_OR_QUANT = 0.20

# ---- time ----------------------------------------------------------------------------------------
# Model FLOPs utilisation of HF-Trainer-class stacks against the dense BF16/FP16 peak (FP32 accumulate on
# GeForce), hardware.md 3.2 "Recommended defaults (judgement)". Keys are matched as substrings of the GPU
# class.
MFU_DEFAULTS: dict[str, float] = {
    "a100": 0.40,
    "h100": 0.32,
    "h200": 0.32,
    "gh200": 0.32,
    "b200": 0.28,
    "b100": 0.28,
    "l40s": 0.35,
    "l40": 0.35,
    "a6000": 0.35,
    "a40": 0.35,
    "l4": 0.35,
    "a10": 0.35,
    "4090": 0.35,
    "3090": 0.35,
    "5090": 0.35,
    "v100": 0.25,
    "t4": 0.25,
    "mi300": 0.30,
    "mi250": 0.30,
}
MFU_FALLBACK = 0.30
# LoRA runs achieve a lower MFU than full FT on the (smaller) FLOP count: hardware.md 6 worked example.
MFU_LORA_FACTOR = 0.80
# QLoRA dequantisation: torchtune 4090 LoRA 3083 vs QLoRA 2413 tok/s -> x0.78 (hardware.md 3.1).
MFU_QLORA_FACTOR = 0.78
# Fraction of overlappable compute that hides communication (hardware.md 6: overlap ~0.8).
COMM_OVERLAP = 0.80
# DDP's 25 MB buckets run far below the large-message busbw on fast fabrics (hardware.md 2.2: A100 16 MiB
# 106 vs 235 GB/s, H200 220 vs 482): derate busbw by this factor for DDP when busbw > DDP_DERATE_ABOVE_GBS.
DDP_SMALL_MESSAGE_DERATE = 0.5
DDP_DERATE_ABOVE_GBS = 100.0
# Host link for CPU offload (PCIe Gen4/5 x16 achieved) and CPU-Adam rate (hardware.md 3.3: 0.06-0.25 B/s).
PCIE_HOST_GBS = 25.0
CPU_ADAM_PARAMS_PER_S = 0.15e9
