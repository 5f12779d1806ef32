"""The estimator's input (TrainingSetup, checked like pydantic's lax mode) and its output."""

from __future__ import annotations

import math
from typing import Any, Literal, get_args

from advisor.core.records import field, field_types, record, replace
from advisor.estimate.params import ParamCount

Offload = Literal["none", "cpu", "nvme"]
Metric = Literal["allocated", "reserved", "nvidia-smi"]


@record(frozen=True, slots=True, kw_only=True)
class VisionSetup:
    """A LLaVA-style image tower and projector beside the language model (advisor/facts/llava.py): the
    tower frozen in its own dtype and run without grad, the projector trained unless said otherwise."""

    tower_params: int
    tower_hidden: int
    tower_intermediate: int
    tower_layers: int
    tower_heads: int
    tower_tokens: int  # tokens the tower runs per image (its patches and the class token)
    image_tokens: int  # projected tokens per image that enter the language model's sequence
    images_per_sample: int = 1
    tower_bytes: int = 2  # bytes per tower weight and activation element
    projector_params: int = 0
    # per image token, the widths of what the projector's backward keeps (Linear inputs, GELU inputs)
    projector_saved_widths: list[int] = field(default_factory=list)
    projector_trained: bool = True
    # the projector as built (torch's default fp32) and never cast: no DeepSpeed engine to cast it
    projector_fp32: bool = False


@record(frozen=True, slots=True, kw_only=True)
class TrainingSetup:
    """One run, per GPU. ``None`` means "not known": the estimator assumes a value and says so.

    A frozen dataclass checked by ``_check_setup`` (types, choices, int -> float like pydantic's lax mode),
    not a pydantic model: it is built on every check of a run, and pydantic's import and schema building
    cost a pre-commit hook more than the estimate itself. Change it with records.replace().
    """

    model: ParamCount
    method: Literal["full", "lora", "qlora"] = "full"
    lora_r: int | None = None
    lora_targets: list[str] | None = None  # module names (q_proj, ...), or ["all-linear"]
    lora_dropout: float | None = None
    # PEFT modules_to_save (LoraConfig(modules_to_save=...), lora_modules_to_save, LLaMA-Factory
    # additional_target): fully trained copies of those modules beside the adapters; None = none written
    modules_to_save: list[str] | None = None
    micro_batch: int | None = None  # per-device train batch size
    seq_len: int | None = None  # tokens per sequence as fed (padded length, or packed length)
    grad_accum: int = 1
    gradient_checkpointing: bool | None = None
    precision: Literal["bf16", "fp16", "fp32"] | None = None
    amp: bool | None = None  # True: fp32 weights + autocast (no torch_dtype at load); False: 16-bit weights
    optimizer: str | None = None  # HF `optim` string (adamw_torch, adamw_torch_fused, paged_adamw_8bit, ...)
    # GaLore's `optim_args` rank= and `optim_target_modules` (Linears it projects); None: not given
    optim_rank: int | None = None
    optim_target_modules: list[str] | None = None
    strategy: Literal["none", "ddp", "fsdp", "fsdp_grad_op", "zero1", "zero2", "zero3"] = "none"
    world_size: int = 1  # data-parallel shards
    offload_optimizer: Offload = "none"
    offload_params: Offload = "none"
    attn_implementation: Literal["sdpa", "flash_attention_2", "eager", "flex_attention"] | None = None
    # fused: Liger FLCE; cce: cut-cross-entropy (apple/ml-cross-entropy, axolotl's CutCrossEntropyPlugin)
    loss: Literal["standard", "chunked", "fused", "cce", "own"] = "standard"
    # own: the loop computes the cross-entropy itself on the logits (advisor/facts/loop_loss.py), whose
    # elements are own_loss_logit_bytes wide
    own_loss_logit_bytes: int = 2
    liger_kernel: bool = False  # HF use_liger_kernel: fused RMSNorm/SwiGLU/RoPE + fused linear CE
    task: Literal["causal_lm", "sequence_classification"] = "causal_lm"
    framework: Literal["hf", "torchtune"] = "hf"  # HF Trainer/TRL/PEFT layouts, or torchtune recipes
    torch_compile: bool = False
    activation_offloading: bool = False
    optimizer_in_backward: bool = False
    qlora_double_quant: bool = True
    prepare_kbit_training: bool | None = None  # PEFT prepare_model_for_kbit_training (HF QLoRA)
    # the trainer casts the norms and embeddings that prepare_model_for_kbit_training upcast back to the
    # training dtype (axolotl: advisor/facts/axolotl_setup.py kbit_recast): no fp32 weights, no fp32 stream
    kbit_recast: bool = False
    zero_grad_set_to_none: bool = True  # torch >= 2.0 default
    gradient_as_bucket_view: bool = False  # DDP
    # DeepSpeed bucket sizes in elements (resolve HF "auto" before passing: reduce h^2, prefetch 0.9 h^2);
    # None = DeepSpeed's defaults (5e8, 5e8, 5e7, 1e9), stated as an assumption
    ds_reduce_bucket_size: float | None = None
    ds_allgather_bucket_size: float | None = None
    ds_prefetch_bucket_size: float | None = None
    ds_max_live_parameters: float | None = None
    # ZeRO stage 1/2 (advisor/facts/deepspeed_zero12.py): DeepSpeed's defaults
    ds_contiguous_gradients: bool = True
    ds_overlap_comm: bool = False
    # The three dtype facts (issue 10 section 1), each as the consumer resolves it; None = derived from
    # `precision`/`amp` (the compute dtype and "fp32 load under autocast"), as before they existed.
    # storage_dtype: the base (frozen, or fully trained) weights as held during training;
    # trainable_dtype: the trainable parameters (LoRA adapters; PEFT upcasts them to fp32);
    # autocast: the autocast dtype, or "off" (DeepSpeed, pure 16-bit loops, fp32);
    # master_weights: an fp32 master copy of the trainable parameters, the optimizer states in fp32 on it.
    storage_dtype: Literal["fp32", "bf16", "fp16"] | None = None
    trainable_dtype: Literal["fp32", "bf16", "fp16"] | None = None
    autocast: Literal["bf16", "fp16", "off"] | None = None
    master_weights: bool | None = None
    # base Linear weights of a LoRA run (qlora method): bitsandbytes nf4 / int8 loaded from 16-bit weights, or
    # a pre-quantized GPTQ / AWQ checkpoint (advisor/estimate/memory/packed.py) with its group size
    quantization: Literal["nf4", "int8", "gptq4", "gptq8", "awq4"] | None = None
    quant_group_size: int | None = None
    # freeze-tuning (LLaMA-Factory finetuning_type: freeze): a full method training only the last N decoder
    # layers (+ trainable_extra_params of named non-layer modules); None = every parameter trains
    trainable_layers: int | None = None
    trainable_extra_params: int = 0
    # a partly frozen model in general (axolotl unfrozen_parameters, LLaMA-Factory's other freeze forms,
    # BAdam's active block): the trainable parameters of each decoder layer, bottom first, overriding
    # trainable_layers; backward runs from the lowest layer with trainable parameters up, or from the first
    # layer when the embedding's output requires grad (input_requires_grad: transformers' checkpointing
    # calls enable_input_require_grads); frozen_layers_checkpointed False: only layers with trainable
    # parameters are checkpointed (LLaMA-Factory's custom checkpointing), the frozen ones above run
    # unchecked and keep what their ops save for the input's gradient
    layer_trainable: list[int] | None = None
    input_requires_grad: bool = False
    frozen_layers_checkpointed: bool = True
    # BAdam's BlockOptimizer (one block trained at a time, an fp32 copy of it that the base optimizer steps):
    # only the notes differ from a master-weights run; master_weights carries the fp32 copy
    block_optimizer: bool = False
    # FSDP2 shards 4-bit weights only in a floating quant_storage (bnb_4bit_quant_storage bf16); uint8
    # Params4bit stay whole on every GPU (accelerate 1.15 utils/fsdp_utils.py:789-811)
    quantized_sharded: bool = True
    # bytes per logit element the training loop keeps alive through backward and the optimizer step: 0 when
    # it drops the model outputs first (HF Trainer/TRL compute_loss, torchtune's `del logits`), 2 or 4 when
    # a loop of its own holds `outputs` (fp32 logits up to transformers 4.44); None = unknown (assumed 0)
    kept_logits_bytes: int | None = None
    # every batch the same shape (packed, or padded to max_length): True; padded to the longest in the batch
    # or unpadded batch-1 samples: False (the caching allocator's reserved memory grows with each new longest
    # batch, pytorch#96995); None = unknown
    fixed_length: bool | None = None
    # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow in place: no growth), and HF
    # torch_empty_cache_steps (the cache returned every N steps): advisor/facts/allocator_inputs.py
    expandable_segments: bool = False
    empty_cache_steps: int | None = None
    # the bitsandbytes pin: True when it installs a release before 0.43.2, whose MatMul4Bit keeps every 4-bit
    # Linear's input for backward (PR #1270); False for 0.43.2 or later; None = not pinned (current assumed)
    bnb_keeps_input: bool | None = None
    # torch.utils.checkpoint's use_reentrant (advisor/facts/estimate_inputs.py _checkpoint_reentrant); None =
    # not said, the current transformers default (non-reentrant) assumed
    checkpoint_reentrant: bool | None = None
    # FSDP1 units that hold frozen and trainable (LoRA) weights in one flat parameter (use_orig_params=True
    # with a loop of its own; HF Trainer wraps LoRA leaves apart): each keeps a full-size flat gradient
    fsdp_mixed_units: bool = False
    # accelerate's GradientAccumulationPlugin(sync_each_batch=True): no no_sync between micro-batches
    sync_each_batch: bool = False
    # a vision tower + projector feeding the language model (LLaVA): advisor/estimate/memory/vision.py
    vision: VisionSetup | None = None
    gpu_memory_gib: float | None = None  # usable memory per GPU, for the fit verdict
    cuda_context_gib: float | None = None  # None -> constants.CUDA_CONTEXT_GIB
    metric: Metric = "nvidia-smi"

    def __post_init__(self) -> None:
        _check_setup(self)


def partly_frozen(s: TrainingSetup) -> bool:
    """Whether only part of a full fine-tune's parameters train (freeze-tuning, BAdam, axolotl)."""
    return s.method == "full" and (s.layer_trainable is not None or s.trainable_layers is not None)


def fully_trained(s: TrainingSetup) -> TrainingSetup:
    """The same run with every parameter trained: what a "full fine-tune" row of a comparison means."""
    if not partly_frozen(s):
        return s
    return replace(
        s,
        trainable_layers=None,
        trainable_extra_params=0,
        layer_trainable=None,
        input_requires_grad=False,
        frozen_layers_checkpointed=True,
        block_optimizer=False,
        master_weights=None if s.block_optimizer else s.master_weights,
        # the trainable parameters' dtype becomes every parameter's (LLaMA-Factory's fp32 upcast)
        storage_dtype=s.trainable_dtype or s.storage_dtype,
        trainable_dtype=None,
    )


def _setup_rules() -> dict[str, tuple[Any, tuple[Any, ...], bool]]:
    """Per field: (the plain type, the allowed values of a Literal or (), whether None is allowed)."""
    rules = {}
    for name, hint in field_types(TrainingSetup).items():
        args = get_args(hint)
        optional = type(None) in args
        core = [a for a in args if a is not type(None)] if optional else [hint]
        kind = core[0] if len(core) == 1 else hint
        choices: tuple[Any, ...] = ()
        if get_args(kind) and getattr(kind, "__origin__", None) is Literal:
            kind, choices = str, get_args(kind)
        elif getattr(kind, "__origin__", None) is list:
            kind = list[int] if get_args(kind) == (int,) else list
        rules[name] = (kind, choices, optional)
    return rules


_SETUP_RULES = _setup_rules()
_NO = object()
# Larger counts (a 401-digit bucket size, 1e400 steps) are not a setup: rejected, never overflowed.
_MAX_INT = 10**15


def _finite(v: int | float) -> bool:
    try:
        return math.isfinite(float(v)) and abs(float(v)) <= _MAX_INT
    except OverflowError:
        return False


def _check_setup(s: TrainingSetup) -> None:
    """What pydantic's lax mode did for this model: reject wrong types and unknown choices, turn whole
    floats into ints, ints into floats and 0/1 into bools, copy lists. Raises ValueError."""
    for name, (kind, choices, optional) in _SETUP_RULES.items():
        v = getattr(s, name)
        if v is None and optional:
            continue
        out: Any = _NO
        if kind is float:
            if isinstance(v, int | float) and not isinstance(v, bool) and _finite(v):
                out = float(v)
        elif kind is int:
            if (isinstance(v, int) and abs(v) <= _MAX_INT) or (
                isinstance(v, float) and _finite(v) and v.is_integer()
            ):
                out = int(v)
        elif kind is bool:
            if isinstance(v, bool):
                out = v
            elif isinstance(v, int) and v in (0, 1):
                out = bool(v)
        elif kind is str:
            if isinstance(v, str) and not choices:
                out = v
            elif isinstance(v, str) and v in choices:
                out = choices[choices.index(v)]  # the literal itself, not an equal str subclass
        elif kind is list:
            if isinstance(v, list | tuple) and all(isinstance(x, str) for x in v):
                out = list(v)
        elif kind == list[int]:
            if isinstance(v, list | tuple) and all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= _MAX_INT for x in v
            ):
                out = [int(x) for x in v]
        elif isinstance(v, kind):
            out = v
        if out is _NO:
            want = " | ".join(repr(c) for c in choices) if choices else getattr(kind, "__name__", str(kind))
            want += " or None" if optional else ""
            raise ValueError(f"TrainingSetup.{name}: expected {want}, got {v!r}")
        if out is not v:
            object.__setattr__(s, name, out)


Phase = Literal[
    "static", "vision forward", "backward start", "end of backward", "optimizer step", "every phase"
]


@record(frozen=True, slots=True)
class Term:
    """One memory term: how many bytes, what they are, and the phases in which they are live."""

    name: str
    bytes: float
    phases: tuple[Phase, ...]
    note: str = ""


@record(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    name: str
    gib: float
    note: str = ""


@record(frozen=True, slots=True, kw_only=True)
class MemoryEstimate:
    items: list[MemoryItem]
    peak_gib: float  # in `metric`
    low_gib: float
    high_gib: float
    metric: Metric
    peak_allocated_gib: float
    peak_reserved_gib: float
    peak_smi_gib: float
    phase: str  # which phase sets the peak
    phases_gib: dict[str, float]  # dynamic part of each phase
    host_gib: float = 0.0  # offloaded to CPU RAM / NVMe per process
    soft_gib: float = 0.0  # paged (unified-memory) optimizer state: not in torch stats, can spill to CPU
    growth_gib: float = 0.0  # reserved-memory growth on variable-length batches: the band's upper part
    trainable_params: int
    dtypes: dict[str, str] = field(default_factory=dict)  # the storage/compute/optimizer dtypes assumed
    fits: bool | None = None
    verdict: Literal["fits", "borderline", "oom"] | None = None
    assumptions: list[str] = field(default_factory=list)

    def table(self) -> str:
        rows = [f"{it.name:<34} {it.gib:8.2f} GiB  {it.note}" for it in self.items]
        rows.append(
            f"{'peak (' + self.metric + ')':<34} {self.peak_gib:8.2f} GiB  "
            f"[{self.low_gib:.1f} .. {self.high_gib:.1f}], phase: {self.phase}"
        )
        return "\n".join(rows)
