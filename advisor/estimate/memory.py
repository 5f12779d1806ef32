"""Phase-aware peak GPU memory per device for a training setup (memory-model.md section 6).

    peak_allocated = W + O + static buffers + max(phi_act, phi_bwd_end, phi_step) + live distributed buffers
    peak_reserved  = peak_allocated + ALLOCATOR_FRAG * (the churning part: everything but W, O, static)
    peak_smi       = peak_reserved + CUDA context (+ NCCL for multi-GPU) + paged optimizer state

phi_act     start of backward: saved activations + logits/loss buffers (+ gradients when they persist:
            gradient accumulation, zero_grad(set_to_none=False)) + autocast weight copies
phi_bwd_end end of backward: all gradients (+ the last recomputed layer with checkpointing)
phi_step    optimizer step: gradients + optimizer temporaries (+ DeepSpeed fp32 gradient partition)

Activations follow what autograd saves in the Hugging Face implementations (fp32 RMSNorm upcasts, SDPA/FA2
vs eager, per-call autocast casts, PEFT adapter input casts), not Megatron's fused-kernel coefficients.
Every input left unset becomes a stated assumption in the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args, get_type_hints

from advisor.estimate import constants as K
from advisor.estimate.params import LinearShape, ParamCount

__all__ = [
    "MemoryEstimate",
    "MemoryItem",
    "TrainingSetup",
    "estimate_memory",
    "has_optimizer_profile",
    "lora_params",
    "what_if",
]

Offload = Literal["none", "cpu", "nvme"]
Metric = Literal["allocated", "reserved", "nvidia-smi"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingSetup:
    """One run, per GPU. ``None`` means "not known": the estimator assumes a value and says so.

    A frozen dataclass checked by ``_check_setup`` (types, choices, int -> float like pydantic's lax mode),
    not a pydantic model: it is built on every check of a run, and pydantic's import and schema building
    cost a pre-commit hook more than the estimate itself. Change it with dataclasses.replace().
    """

    model: ParamCount
    method: Literal["full", "lora", "qlora"] = "full"
    lora_r: int | None = None
    lora_targets: list[str] | None = None  # module names (q_proj, ...), or ["all-linear"]
    lora_dropout: float | None = None
    micro_batch: int | None = None  # per-device train batch size
    seq_len: int | None = None  # tokens per sequence as fed (padded length, or packed length)
    grad_accum: int = 1
    gradient_checkpointing: bool | None = None
    precision: Literal["bf16", "fp16", "fp32"] | None = None
    amp: bool | None = None  # True: fp32 weights + autocast (no torch_dtype at load); False: 16-bit weights
    optimizer: str | None = None  # HF `optim` string (adamw_torch, adamw_torch_fused, paged_adamw_8bit, ...)
    strategy: Literal["none", "ddp", "fsdp", "fsdp_grad_op", "zero1", "zero2", "zero3"] = "none"
    world_size: int = 1  # data-parallel shards
    offload_optimizer: Offload = "none"
    offload_params: Offload = "none"
    attn_implementation: Literal["sdpa", "flash_attention_2", "eager", "flex_attention"] | None = None
    loss: Literal["standard", "chunked", "fused"] = "standard"  # fused: Liger FLCE / cut-cross-entropy
    liger_kernel: bool = False  # HF use_liger_kernel: fused RMSNorm/SwiGLU/RoPE + fused linear CE
    task: Literal["causal_lm", "sequence_classification"] = "causal_lm"
    framework: Literal["hf", "torchtune"] = "hf"  # HF Trainer/TRL/PEFT layouts, or torchtune recipes
    torch_compile: bool = False
    activation_offloading: bool = False
    optimizer_in_backward: bool = False
    qlora_double_quant: bool = True
    prepare_kbit_training: bool | None = None  # PEFT prepare_model_for_kbit_training (HF QLoRA)
    zero_grad_set_to_none: bool = True  # torch >= 2.0 default
    gradient_as_bucket_view: bool = False  # DDP
    # DeepSpeed bucket sizes in elements (resolve HF "auto" before passing: reduce h^2, prefetch 0.9 h^2);
    # None = DeepSpeed's defaults (5e8, 5e8, 5e7, 1e9), stated as an assumption
    ds_reduce_bucket_size: float | None = None
    ds_allgather_bucket_size: float | None = None
    ds_prefetch_bucket_size: float | None = None
    ds_max_live_parameters: float | None = None
    gpu_memory_gib: float | None = None  # usable memory per GPU, for the fit verdict
    cuda_context_gib: float | None = None  # None -> constants.CUDA_CONTEXT_GIB
    metric: Metric = "nvidia-smi"

    def __post_init__(self) -> None:
        _check_setup(self)


def _setup_rules() -> dict[str, tuple[Any, tuple[Any, ...], bool]]:
    """Per field: (the plain type, the allowed values of a Literal or (), whether None is allowed)."""
    rules = {}
    for name, hint in get_type_hints(TrainingSetup).items():
        args = get_args(hint)
        optional = type(None) in args
        core = [a for a in args if a is not type(None)] if optional else [hint]
        kind = core[0] if len(core) == 1 else hint
        choices: tuple[Any, ...] = ()
        if get_args(kind) and getattr(kind, "__origin__", None) is Literal:
            kind, choices = str, get_args(kind)
        elif getattr(kind, "__origin__", None) is list:
            kind = list
        rules[name] = (kind, choices, optional)
    return rules


_SETUP_RULES = _setup_rules()
_NO = object()


def _check_setup(s: TrainingSetup) -> None:
    """What pydantic's lax mode did for this model: reject wrong types and unknown choices, turn whole
    floats into ints, ints into floats and 0/1 into bools, copy lists. Raises ValueError."""
    for name, (kind, choices, optional) in _SETUP_RULES.items():
        v = getattr(s, name)
        if v is None and optional:
            continue
        out: Any = _NO
        if kind is float:
            if isinstance(v, int | float):
                out = float(v)
        elif kind is int:
            if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
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
        elif isinstance(v, kind):
            out = v
        if out is _NO:
            want = " | ".join(repr(c) for c in choices) if choices else getattr(kind, "__name__", str(kind))
            want += " or None" if optional else ""
            raise ValueError(f"TrainingSetup.{name}: expected {want}, got {v!r}")
        if out is not v:
            object.__setattr__(s, name, out)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    name: str
    gib: float
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
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
    trainable_params: int
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


# ---- optimizer profiles -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Opt:
    label: str
    states: float | None  # bytes/param fixed, or None = `mult` x state dtype
    mult: float = 0.0
    temp: Literal["foreach", "per_param", "none", "adafactor"] = "none"
    paged: bool = False
    factored: bool = False


_OPTS: dict[str, _Opt] = {
    "adamw_torch": _Opt("torch AdamW (foreach)", None, 2, "foreach"),
    "adamw_torch_fused": _Opt("torch AdamW (fused)", None, 2, "none"),
    "adamw_hf": _Opt("transformers AdamW (per-parameter loop)", None, 2, "per_param"),
    "adamw_apex_fused": _Opt("apex FusedAdam", None, 2, "none"),
    "adamw_torch_xla": _Opt("torch-xla AdamW", None, 2, "per_param"),
    "adamw_anyprecision": _Opt("AnyPrecisionAdamW", None, 2, "per_param"),
    "adamw_8bit": _Opt("bitsandbytes AdamW 8-bit", 2.0),
    "paged_adamw_8bit": _Opt("bitsandbytes paged AdamW 8-bit", 2.0, paged=True),
    "paged_adamw_32bit": _Opt("bitsandbytes paged AdamW 32-bit", 8.0, paged=True),
    "adamw_torch_8bit": _Opt("torchao AdamW 8-bit", 2.0 * (1 + 4 / 256)),
    "adamw_torch_4bit": _Opt("torchao AdamW 4-bit", 1.0 * (1 + 8 / 128)),
    "lion_32bit": _Opt("bitsandbytes Lion 32-bit", 4.0),
    "lion_8bit": _Opt("bitsandbytes Lion 8-bit", 1.0),
    "paged_lion_32bit": _Opt("bitsandbytes paged Lion 32-bit", 4.0, paged=True),
    "paged_lion_8bit": _Opt("bitsandbytes paged Lion 8-bit", 1.0, paged=True),
    "adafactor": _Opt(
        "Adafactor (factored second moment, no momentum)", 0.0, temp="adafactor", factored=True
    ),
    "sgd": _Opt("SGD (HF default: no momentum)", 0.0),
    "rmsprop": _Opt("RMSprop", None, 1, "foreach"),
    "rmsprop_bnb_8bit": _Opt("bitsandbytes RMSprop 8-bit", 1.0),
    "rmsprop_bnb_32bit": _Opt("bitsandbytes RMSprop 32-bit", 4.0),
    "adagrad": _Opt("Adagrad", None, 1, "foreach"),
    "ademamix": _Opt("AdEMAMix (3 states)", None, 3, "foreach"),
    "ademamix_8bit": _Opt("bitsandbytes AdEMAMix 8-bit", 3.0),
    "paged_ademamix_8bit": _Opt("bitsandbytes paged AdEMAMix 8-bit", 3.0, paged=True),
    "schedule_free_adamw": _Opt("schedule-free AdamW", None, 2, "foreach"),
    "schedule_free_sgd": _Opt("schedule-free SGD", None, 1, "foreach"),
    "lomo": _Opt("LOMO (update fused into backward)", 0.0),
    "adalomo": _Opt("AdaLomo (factored, fused into backward)", 0.0, factored=True),
}
_OPT_ALIASES = {
    "adamw": "adamw_torch",
    "adam": "adamw_torch",
    "torch.optim.adamw": "adamw_torch",
    "torch.optim.adam": "adamw_torch",
    "adamw_bnb_8bit": "adamw_8bit",
    "adamw8bit": "adamw_8bit",
    "adam8bit": "adamw_8bit",
    "bnb_adam8bit": "adamw_8bit",
    "bitsandbytes.optim.adamw8bit": "adamw_8bit",
    "bitsandbytes.optim.adam8bit": "adamw_8bit",
    "pagedadamw8bit": "paged_adamw_8bit",
    "bitsandbytes.optim.pagedadamw8bit": "paged_adamw_8bit",
    "paged_adamw": "paged_adamw_32bit",
    "pagedadamw": "paged_adamw_32bit",
    "bitsandbytes.optim.pagedadamw": "paged_adamw_32bit",
    "pagedadamw32bit": "paged_adamw_32bit",
    "torchao.optim.adamw8bit": "adamw_torch_8bit",
    "adamw8bit_torchao": "adamw_torch_8bit",
    "fusedadam": "adamw_torch_fused",
    "deepspeedcpuadam": "adamw_torch_fused",
    "cpuadam": "adamw_torch_fused",
    "lion": "lion_32bit",
    "paged_lion": "paged_lion_32bit",
    "sgd_momentum": "sgd",
    "rmsprop_bnb": "rmsprop_bnb_32bit",
    "rmsprop_8bit": "rmsprop_bnb_8bit",
    "rmsprop_32bit": "rmsprop_bnb_32bit",
    "adamw_torch_npu_fused": "adamw_torch_fused",
    "adamw_torch_adamw8bit": "adamw_torch_8bit",
}


def _optimizer(name: str) -> _Opt | None:
    key = name.strip().lower().replace("-", "_")
    key = _OPT_ALIASES.get(key, key)
    if key in _OPTS:
        return _OPTS[key]
    tail = key.rsplit(".", 1)[-1]
    tail = _OPT_ALIASES.get(tail, tail)
    return _OPTS.get(tail)  # None: no profile (GaLore, APOLLO, custom classes) -> counted as AdamW, stated


def has_optimizer_profile(name: str) -> bool:
    """True when the memory model knows how `name` (an HF `optim` string or class path) stores its state."""
    return _optimizer(name) is not None


# ---- LoRA ---------------------------------------------------------------------------------------
_PEFT_DEFAULT_TARGETS = {
    "llama": ["q_proj", "v_proj"],
    "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "qwen2": ["q_proj", "v_proj"],
    "qwen3": ["q_proj", "v_proj"],
    "gemma": ["q_proj", "v_proj"],
    "gemma2": ["q_proj", "v_proj"],
    "phi3": ["qkv_proj"],
    "phi": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"],
    "bert": ["query", "value"],
    "opt": ["q_proj", "v_proj"],
    "gpt_neox": ["query_key_value"],
    "falcon": ["query_key_value"],
    "bloom": ["query_key_value"],
}


def _targeted(model: ParamCount, targets: list[str]) -> set[str]:
    want = {t.strip().lower() for t in targets}
    if want & {"all-linear", "all_linear", "all"}:
        return {lin.name for lin in model.linears if lin.name != "router"}
    out = set()
    for lin in model.linears:
        names = {lin.name.lower(), lin.name.split(".")[-1].lower(), *(a.lower() for a in lin.aliases)}
        if names & want:
            out.add(lin.name)
    return out


def lora_params(model: ParamCount, r: int, targets: list[str]) -> int:
    """Adapter parameters: r * (d_in + d_out) per targeted Linear per layer (experts counted E times)."""
    names = _targeted(model, targets)
    per_layer = sum(r * (lin.d_in + lin.d_out) * lin.count for lin in model.linears if lin.name in names)
    if model.moe_layers and model.moe_layers != model.layers:
        dense = sum(
            r * (lin.d_in + lin.d_out)
            for lin in model.linears
            if lin.name in names and lin.count == 1 and not lin.name.startswith("shared_expert")
        )
        return per_layer * model.moe_layers + dense * (model.layers - model.moe_layers)
    return per_layer * model.layers


# ---- resolved setup -----------------------------------------------------------------------------
@dataclass
class _R:
    s: TrainingSetup
    pc: ParamCount
    assumptions: list[str]
    b: int
    seq: int
    gc: bool
    precision: str
    amp: bool
    opt: _Opt
    opt_name: str
    attn: str
    lora_r: int
    targets: set[str]
    lora_dropout: float
    prepare_kbit: bool

    @property
    def full(self) -> bool:
        return self.s.method == "full"

    @property
    def hf(self) -> bool:
        return self.s.framework == "hf"

    @property
    def autocast(self) -> bool:
        # HF Trainer / accelerate wrap forward in autocast whenever bf16/fp16 is on, whatever the weight dtype
        return self.hf and self.precision in ("bf16", "fp16")

    @property
    def deepspeed(self) -> bool:
        return self.s.strategy in ("zero1", "zero2", "zero3")

    @property
    def fsdp(self) -> bool:
        return self.s.strategy in ("fsdp", "fsdp_grad_op")

    @property
    def n(self) -> int:
        return max(1, self.s.world_size) if self.s.strategy != "none" else 1

    @property
    def tokens(self) -> int:
        return self.b * self.seq

    @property
    def qlora_fp32_stream(self) -> bool:
        return self.s.method == "qlora" and self.hf and self.prepare_kbit

    @property
    def wb(self) -> int:  # bytes of base weights as loaded
        return 4 if (self.precision == "fp32" or self.amp) else 2

    @property
    def cb(self) -> int:  # bytes of matmul outputs / attention tensors
        return 4 if (self.precision == "fp32" and not self.amp) else 2

    @property
    def br(self) -> int:  # residual stream bytes
        return 4 if (self.precision == "fp32" or self.amp or self.qlora_fp32_stream) else 2

    @property
    def lin_out(self) -> int:  # bytes of Linear outputs that feed pointwise ops
        return 4 if (self.qlora_fp32_stream or (self.precision == "fp32" and not self.amp)) else 2

    @property
    def ab(self) -> int:  # LoRA adapter bytes: PEFT keeps fp32 adapters; torchtune builds them in bf16
        if self.precision == "fp32" or self.amp or self.hf:
            return 4
        return 2


def _resolve(s: TrainingSetup) -> _R:
    a: list[str] = []
    pc = s.model
    if pc.source == "meta-device":
        a.append(
            f"'{pc.model_type}' has no built-in activation layout: approximated as a generic "
            f"{'gated' if pc.block == 'gated' else 'GELU'} decoder"
        )
    if s.micro_batch is None:
        b = 1
        a.append("micro-batch unknown: assumed 1 sequence per GPU")
    else:
        b = s.micro_batch
    if s.seq_len is None:
        seq = 2048
        a.append("sequence length unknown: assumed 2048 tokens per sequence (padded/packed length)")
    else:
        seq = s.seq_len
    if s.precision is None:
        precision = "bf16"
        a.append("precision unknown: assumed bf16")
    else:
        precision = s.precision
    if precision == "fp32":
        amp = False
    elif s.amp is None:
        amp = False
        a.append(
            "weight dtype unknown: assumed the model is loaded in 16-bit (torch_dtype bf16/'auto'); "
            "an fp32 load with bf16/fp16 autocast needs ~2x the weight/optimizer memory"
        )
    else:
        amp = s.amp
    prepare = False
    if s.method == "qlora" and s.framework == "hf":
        if s.prepare_kbit_training is None:
            prepare = True
            a.append(
                "QLoRA: assumed PEFT prepare_model_for_kbit_training (TRL does it): non-quantized weights "
                "upcast to fp32, gradient checkpointing on"
            )
        else:
            prepare = s.prepare_kbit_training
    if s.gradient_checkpointing is None:
        gc = prepare
        if not prepare:
            a.append("gradient checkpointing unknown: assumed off (HF default)")
    else:
        gc = s.gradient_checkpointing
    if s.optimizer is None:
        opt_name = "adamw_torch_fused"
        a.append(
            "optimizer unknown: assumed adamw_torch_fused (HF default on torch >= 2.8; older: adamw_torch "
            "with a foreach step temporary)"
        )
    else:
        opt_name = s.optimizer
    opt = _optimizer(opt_name)
    if opt is None:
        a.append(f"optimizer '{opt_name}' has no memory profile: counted as AdamW (2 states)")
        opt = _OPTS["adamw_torch_fused"]
    if s.attn_implementation is None:
        attn = "sdpa"
        if pc.block == "bert" or pc.model_type in ("gpt2",):
            a.append(
                "attention implementation unknown: assumed SDPA (flash/mem-efficient kernel, O(s) memory)"
            )
        else:
            a.append("attention implementation unknown: assumed SDPA/flash (O(s) memory)")
    else:
        attn = "eager" if s.attn_implementation == "eager" else "sdpa"
    r = 0
    targets: set[str] = set()
    dropout = 0.0
    if s.method != "full":
        if s.lora_r is None:
            r = 16
            a.append("LoRA rank unknown: assumed r=16")
        else:
            r = s.lora_r
        if s.lora_targets is None:
            tl = _PEFT_DEFAULT_TARGETS.get(pc.model_type, ["q_proj", "v_proj"])
            a.append(
                f"LoRA target modules unknown: assumed PEFT's default for {pc.model_type} ({', '.join(tl)})"
            )
        else:
            tl = s.lora_targets
        targets = _targeted(pc, tl)
        if not targets:
            a.append(f"LoRA targets {tl} match no Linear of {pc.model_type}: no adapters counted")
        if s.lora_dropout is None:
            dropout = 0.05 if s.framework == "hf" else 0.0
            a.append(f"lora_dropout unknown: assumed {dropout}")
        else:
            dropout = s.lora_dropout
    if s.strategy != "none" and s.world_size <= 1:
        a.append(f"strategy {s.strategy} with world_size {s.world_size}: nothing is sharded")
    return _R(
        s=s,
        pc=pc,
        assumptions=a,
        b=b,
        seq=seq,
        gc=gc,
        precision=precision,
        amp=amp,
        opt=opt,
        opt_name=opt_name,
        attn=attn,
        lora_r=r,
        targets=targets,
        lora_dropout=dropout,
        prepare_kbit=prepare,
    )


# ---- activations (bytes per token) --------------------------------------------------------------
def _lin_input(r: _R, d: int, src: int, consumers: list[LinearShape]) -> float:
    """Bytes saved for one tensor of width d (dtype bytes src) that feeds the given Linear layers."""
    if not consumers:
        return 0.0
    if r.full:
        if r.autocast and src == 4:
            return 2.0 * d * len(consumers)  # autocast casts non-leaf inputs again for every call
        return float((2 if r.autocast else src) * d)
    hit = [c for c in consumers if c.name in r.targets]
    if not hit:
        return 0.0  # frozen Linear: the input gradient needs the weight, not the input
    drop = r.lora_dropout > 0
    if r.hf:
        if r.autocast:  # PEFT casts x to the fp32 adapter dtype, autocast casts it back for lora_A
            return float(len(hit) * (2 + (1 if drop else 0)) * d)
        if drop:
            return float(len(hit) * (1 + r.ab) * d)
        return float((r.ab * d * len(hit)) if src != r.ab else src * d)
    if drop:
        return float(len(hit) * (1 + src) * d)
    return float(src * d)


def _norm_out_bytes(r: _R) -> int:
    """dtype bytes of a norm's output (the input of the next Linear)."""
    if r.pc.norm == "layer" and r.autocast:
        return 4  # autocast's fp32 op list includes layer_norm
    return r.br


def _norm_saved(r: _R, h: int, trainable: bool) -> float:
    pc = r.pc
    fused = r.s.torch_compile or r.s.liger_kernel
    if pc.norm == "layer":  # native layer_norm saves its input; autocast runs it in fp32 (an fp32 copy)
        return float(_norm_out_bytes(r) * h)
    if fused:
        return float(r.br * h)
    if r.s.framework == "torchtune":
        return float((8 if trainable else 6) * h)
    if pc.model_type.startswith("gemma"):
        return float((8 if trainable else 4) * h)
    return float(4 * h + (r.br * h if trainable else 0))


def _attn_core(r: _R) -> float:
    """q/k/v, attention output, softmax stats or scores; per token per layer (o_proj input excluded)."""
    pc = r.pc
    cb = 2 if r.autocast else r.cb
    q, kv, nh = pc.q_dim, pc.kv_dim, pc.heads
    drop = pc.attn_dropout > 0
    if r.attn == "eager":
        kv_saved = 2 * q if (pc.block == "gated" and pc.kv_heads != pc.heads) else 2 * kv  # repeat_kv copies
        sm = 4 if (r.autocast or pc.block == "gated") else cb
        mm_in = 2 if r.autocast else cb
        separate = drop or mm_in != sm
        per_score = sm + (mm_in if separate else 0) + (1 if drop else 0)
        # eager: the P @ V matmul saves P and V, not its output; o_proj's input copy is counted by the caller
        return cb * (q + kv_saved) + per_score * nh * r.seq
    qk_norm = (4 + (r.br if r.full else 0)) * (q + kv) if pc.qk_norm else 0
    return cb * (q + 2 * kv) + cb * q + 4 * nh + qk_norm


def _layer_bytes(r: _R) -> tuple[float, float]:
    """(saved activation bytes per token for one decoder layer, backward working set per token)."""
    pc = r.pc
    h = pc.hidden
    full = r.full
    by_src: dict[str, list[LinearShape]] = {}
    for lin in pc.linears:
        if lin.name == "router" or lin.name.startswith(("experts.", "shared_expert")):
            continue
        by_src.setdefault(lin.feeds_from, []).append(lin)
    if pc.parallel_block and pc.norms_per_layer == 1:  # one LayerNorm feeds attention and MLP (Phi-2, Falcon)
        by_src["attn_in"] = by_src.get("attn_in", []) + by_src.pop("mlp_in", [])
    a = pc.norms_per_layer * _norm_saved(r, h, trainable=full)
    nb = _norm_out_bytes(r)
    a += _lin_input(r, h, nb, by_src.get("attn_in", []))
    a += _attn_core(r)
    a += _lin_input(r, pc.q_dim, 2 if r.autocast else r.cb, by_src.get("attn_out", []))
    a += _lin_input(r, h, nb, by_src.get("mlp_in", []))
    lo = r.lin_out
    if pc.block == "gated":
        if pc.moe_experts:
            k, ei = pc.moe_active, pc.expert_intermediate
            experts = [lin for lin in pc.linears if lin.name.startswith("experts.")]
            e_in = [lin for lin in experts if lin.feeds_from == "mlp_in"]
            e_act = [lin for lin in experts if lin.feeds_from == "mlp_act"]
            per_expert = (2 if r.s.liger_kernel else 3) * lo * ei
            per_expert += _lin_input(r, h, nb, e_in) + _lin_input(r, ei, lo, e_act) + lo * h
            a += k * per_expert + 4 * pc.moe_experts
            if pc.shared_expert_intermediate:
                si = pc.shared_expert_intermediate
                sh = [lin for lin in pc.linears if lin.name.startswith("shared_expert.")]
                a += 3 * lo * si + _lin_input(r, h, nb, [x for x in sh if x.feeds_from == "mlp_in"])
                a += _lin_input(r, si, lo, [x for x in sh if x.feeds_from == "mlp_act"]) + 2 * lo
            i_act = k * ei
        else:
            i = pc.intermediate
            a += (2 if r.s.liger_kernel else 3) * lo * i  # gate out, act out, up out (mul saves both)
            a += _lin_input(r, i, lo, by_src.get("mlp_act", []))
            i_act = i
    else:
        i = pc.intermediate
        a += lo * i  # fc1 output, saved by GELU
        a += _lin_input(r, i, lo, by_src.get("mlp_act", []))
        i_act = i
    if pc.hidden_dropout > 0:
        a += 2 * h  # two residual-branch dropout masks (1 byte each)
    work = (2 if r.autocast else r.cb) * (3 * i_act + 2 * h)
    if r.attn == "eager":
        work += 6 * pc.heads * r.seq
    return a, work


def _outside_bytes(r: _R) -> float:
    """Saved activations outside the decoder layers, per token."""
    pc = r.pc
    h = pc.hidden
    out = 0.0
    if pc.embd_dropout > 0:
        out += h
    if pc.block == "bert":
        out += _norm_saved(r, h, trainable=r.full)
    if r.s.task == "causal_lm":
        out += _norm_saved(r, h, trainable=r.full)  # final norm
        if r.full and r.s.loss != "fused" and not r.s.liger_kernel:
            out += (2 if r.autocast else r.br) * h  # lm_head input
    return out


def _logits_bytes(r: _R) -> tuple[float, float, str]:
    """(peak bytes during the loss backward, bytes left when the lm_head grad is formed, label)."""
    pc = r.pc
    T = r.tokens
    if r.s.task != "causal_lm":
        return 0.0, 0.0, "classification head (negligible)"
    V = pc.vocab
    if r.s.loss == "fused" or r.s.liger_kernel:
        x = K.LOGITS_FUSED_PER_H * pc.hidden * T
        return x, x, "fused linear+CE: never materialises tokens x vocab"
    if r.s.loss == "chunked":
        per = K.LOGITS_CHUNKED_COMPILED if r.s.torch_compile else K.LOGITS_CHUNKED
        label = (
            f"chunked CE ({K.CE_CHUNKS} chunks{', compiled' if r.s.torch_compile else ''}): {per:.2f} B/logit"
        )
        return per * T * V, 2.0 * T * V * (K.CE_CHUNKS - 1) / K.CE_CHUNKS, label
    per = K.LOGITS_STANDARD + (K.LOGITS_SOFTCAP_EXTRA if pc.final_logit_softcapping else 0.0)
    return per * T * V, 2.0 * T * V, f"fp32-upcast cross-entropy: {per:.0f} B per token x vocab"


# ---- main ---------------------------------------------------------------------------------------
def _opt_state_bytes(r: _R, n_train: int, sd: int) -> float:
    o = r.opt
    if o.factored:
        pc = r.pc
        if r.full:
            rows_cols = sum((lin.d_in + lin.d_out) * lin.count for lin in pc.linears) * pc.layers
            rows_cols += (pc.vocab + pc.hidden) * (1 if pc.tied else 2)
            vectors = pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head
            return 4.0 * (rows_cols + vectors)
        return 4.0 * n_train * 0.05
    if o.states is not None:
        return o.states * n_train
    return o.mult * sd * n_train


def estimate_memory(setup: TrainingSetup) -> MemoryEstimate:
    r = _resolve(setup)
    s, pc = setup, setup.model
    A = r.assumptions
    n = r.n
    T = r.tokens
    full = r.full

    # -- trainable parameters and their byte sizes -------------------------------------------------
    p_lora = lora_params(pc, r.lora_r, sorted(r.targets)) if not full else 0
    p_t = pc.total if full else p_lora
    sd = r.wb if full else r.ab  # state dtype of trainable params (torch optimizers keep the param dtype)
    gb = sd

    # -- weights -----------------------------------------------------------------------------------
    notes_w = ""
    quant, qb, nonq_b = 0, 0.0, 2
    if s.method == "qlora":
        if r.hf:
            quant = pc.layer_linear_weights  # bnb replaces every decoder Linear; lm_head stays
        else:  # torchtune / torchao quantizes only the LoRA-wrapped Linears
            quant = pc.layers * sum(lin.weight_params for lin in pc.linears if lin.name in r.targets)
        qb = K.NF4_DQ_BYTES if s.qlora_double_quant else K.NF4_BYTES
        nonq_b = 4 if r.prepare_kbit else 2
        w_base = quant * qb + (pc.total - quant) * nonq_b
        notes_w = (
            f"NF4 {quant / 1e9:.2f}B params x {qb:.3f} B + {(pc.total - quant) / 1e9:.2f}B unquantized x "
            f"{nonq_b} B"
        )
    else:
        base_b = r.wb
        if r.deepspeed:
            base_b = 4 if r.precision == "fp32" else 2
        w_base = pc.total * base_b
        notes_w = f"{pc.total / 1e9:.2f}B params x {base_b} B"
    w_adapt = p_lora * r.ab
    if p_lora:
        notes_w += f" + LoRA {p_lora / 1e6:.1f}M x {r.ab} B"
    shard_w = s.strategy in ("zero3", "fsdp", "fsdp_grad_op") and n > 1
    w_gpu = (w_base / n if shard_w else w_base) + (w_adapt / n if shard_w else w_adapt)
    host = 0.0
    if s.offload_params != "none" and s.strategy in ("zero3", "fsdp"):
        host += w_gpu
        w_gpu = 0.0
        notes_w += f"; shards offloaded to {s.offload_params}"
    elif s.offload_params != "none":
        A.append(f"offload_params={s.offload_params} only applies to ZeRO-3/FSDP: ignored for {s.strategy}")
    if shard_w:
        notes_w += f", sharded /{n}"

    # -- gradients ---------------------------------------------------------------------------------
    if r.deepspeed and r.precision != "fp32":
        gb = 2
    if r.fsdp and not r.amp and full:
        gb = 2
    g_full = p_t * gb
    shard_g = (s.strategy in ("zero2", "zero3", "fsdp", "fsdp_grad_op")) and n > 1
    g = g_full / n if shard_g else g_full
    head_param = pc.lm_head if pc.lm_head else pc.embedding
    if s.optimizer_in_backward or r.opt.label.startswith(("LOMO", "AdaLomo")):
        g = pc.largest_tensor * gb if full else g
        grad_note = "optimizer step fused into backward: ~largest tensor's gradient"
    else:
        grad_note = f"{p_t / 1e6:.1f}M trainable x {gb} B" + (f", sharded /{n}" if shard_g else "")
    head_grad = head_param * gb if full else 0.0
    if shard_g:
        head_grad /= n

    # -- optimizer states --------------------------------------------------------------------------
    ds_mixed = r.deepspeed and r.precision != "fp32"
    if ds_mixed:
        o_full = 4.0 * p_t + _opt_state_bytes(r, p_t, 4)  # fp32 master + states on fp32 params
        opt_note = f"{r.opt.label} on fp32 master copy (DeepSpeed)"
    else:
        o_full = _opt_state_bytes(r, p_t, sd)
        opt_note = r.opt.label
    shard_o = s.strategy != "none" and s.strategy != "ddp" and n > 1
    o = o_full / n if shard_o else o_full
    if shard_o:
        opt_note += f", sharded /{n}"
    soft = 0.0
    if r.opt.paged:
        soft, o = o, 0.0
        opt_note += "; paged (CUDA unified memory): outside torch's allocator, may spill to CPU"
    if s.offload_optimizer != "none":
        if s.strategy in ("zero1", "zero2", "zero3", "fsdp"):
            host += o + soft + (4.0 * p_t / n if ds_mixed else 0.0)
            o, soft = 0.0, 0.0
            opt_note += f"; offloaded to {s.offload_optimizer}"
            if s.strategy == "fsdp":  # FSDP CPUOffload moves the gradient shards too
                host += g
                g = 0.0
            else:  # DeepSpeed reduces gradients straight into the fp32 CPU partition (buckets stay on GPU)
                g = 0.0
        else:
            A.append(f"offload_optimizer needs DeepSpeed ZeRO or FSDP: ignored for strategy {s.strategy}")

    # -- optimizer-step temporaries ----------------------------------------------------------------
    largest = max(pc.largest_tensor, 1)
    if s.offload_optimizer != "none" or s.optimizer_in_backward or r.deepspeed:
        t_step = 0.0
    elif r.opt.temp == "foreach":
        t_step = (p_t / (n if shard_o else 1)) * sd
    elif r.opt.temp == "per_param":
        t_step = (largest if full else 0) * sd
    elif r.opt.temp == "adafactor":
        t_step = 3.0 * (largest if full else 0) * 4
    else:
        t_step = 0.0
    if ds_mixed:
        t_step += 4.0 * p_t / n if s.offload_optimizer == "none" else 0.0  # fp32 grad partition at step

    # -- activations -------------------------------------------------------------------------------
    a_layer, work = _layer_bytes(r)
    L = pc.layers
    outside = _outside_bytes(r) * T
    ckpt = L * r.br * pc.hidden * T
    if r.gc:
        if s.activation_offloading:
            ckpt = min(L, K.OFFLOAD_INFLIGHT_LAYERS) * r.br * pc.hidden * T
        act = ckpt + a_layer * T + outside
        act_note = (
            f"checkpointed: {L} layer inputs{' (offloaded)' if s.activation_offloading else ''} + 1 layer"
        )
    else:
        if s.activation_offloading:
            act = min(L, K.OFFLOAD_INFLIGHT_LAYERS) * a_layer * T + outside
            act_note = "all saved activations offloaded to CPU except those in flight"
        else:
            act = L * a_layer * T + outside
            act_note = f"{L} layers x {a_layer / 1024:.1f} KiB/token x {T} tokens"
    if s.torch_compile and s.framework == "torchtune":
        act_note += ", compiled (fused norms)"
    work_b = work * T
    logits_peak, logits_after, logits_note = _logits_bytes(r)

    # autocast weight copies: bf16 casts of fp32 weights saved for backward (all matmul weights)
    cast_copies = 0.0
    if r.amp and r.autocast:
        matmul_w = pc.layer_linear_weights + (pc.lm_head or pc.embedding if s.task == "causal_lm" else 0)
        cast_copies = 2.0 * matmul_w / (n if shard_w else 1)
    dequant = 0.0
    if s.method == "qlora":
        dequant = 2.0 * max((lin.d_in * lin.d_out for lin in pc.linears), default=0)

    # -- distributed buffers -----------------------------------------------------------------------
    static_buf = 0.0
    live_buf = 0.0
    buf_note = ""
    h2 = float(pc.hidden * pc.hidden)
    if s.strategy == "ddp" and n > 1 and not s.gradient_as_bucket_view:
        static_buf = p_t * gb
        buf_note = "DDP gradient buckets (a second copy of the grads; gradient_as_bucket_view=False)"
    elif s.strategy in ("zero1", "zero2") and n > 1:
        rb = s.ds_reduce_bucket_size if s.ds_reduce_bucket_size is not None else K.DS_BUCKET_DEFAULT
        agb = s.ds_allgather_bucket_size if s.ds_allgather_bucket_size is not None else K.DS_BUCKET_DEFAULT
        if s.ds_reduce_bucket_size is None or s.ds_allgather_bucket_size is None:
            A.append(
                "DeepSpeed bucket sizes unset: assumed the 5e8-element defaults (~0.93 GiB each in 16-bit)"
            )
        live_buf = 2.0 * (min(rb, p_t) + min(agb, p_t))
        buf_note = "ZeRO reduce + all-gather buckets"
    elif s.strategy == "zero3" and n > 1:
        rb = s.ds_reduce_bucket_size if s.ds_reduce_bucket_size is not None else K.DS_BUCKET_DEFAULT
        pf = s.ds_prefetch_bucket_size if s.ds_prefetch_bucket_size is not None else K.DS_PREFETCH_DEFAULT
        ml = s.ds_max_live_parameters if s.ds_max_live_parameters is not None else K.DS_MAX_LIVE_DEFAULT
        if s.ds_reduce_bucket_size is None or s.ds_prefetch_bucket_size is None:
            A.append(
                "ZeRO-3 bucket sizes unset: assumed DeepSpeed defaults (reduce 5e8, prefetch 5e7 elements; "
                f"HF 'auto' would use h^2 = {h2:.2g} and 0.9 h^2)"
            )
        gathered = min(ml, max(pc.per_layer, largest) + pf)
        live_buf = 2.0 * (gathered + min(rb, p_t))
        buf_note = "ZeRO-3 gathered params (current + prefetch) + reduce bucket"
    elif r.fsdp and n > 1:
        # unsharded (gathered) bytes: compute dtype for 16-bit weights, NF4 for QLoRA's quantized Linears
        gather_b = 4 if (r.precision == "fp32" and not r.amp) else 2
        lora_layer = p_lora / max(pc.layers, 1)
        if s.method == "qlora":
            quant_layer = quant / max(pc.layers, 1)
            unit = quant_layer * qb + (pc.per_layer - quant_layer) * nonq_b + lora_layer * r.ab
            head_b = nonq_b
        else:
            unit = pc.per_layer * gather_b + lora_layer * r.ab
            head_b = gather_b
        unit_grad = (pc.per_layer if full else lora_layer) * max(gb, 2)
        # HF/accelerate auto-wrap leaves embeddings + lm_head in the root unit (gathered for the whole step);
        # torchtune's big-model recipes shard tok_embeddings and output separately (custom_sharded_layers).
        if r.hf:
            root = (pc.embedding + pc.lm_head + pc.final_norm) * head_b
        else:
            root = max(pc.embedding, pc.lm_head) * head_b
        if s.strategy == "fsdp_grad_op":
            live_buf = unit * pc.layers + (pc.embedding + pc.lm_head) * head_b + unit_grad
            buf_note = "SHARD_GRAD_OP: params stay unsharded from forward to backward"
        else:
            live_buf = root + K.FSDP_LIVE_UNITS * unit + unit_grad
            buf_note = (
                f"FSDP working set: {'embeddings + lm_head' if r.hf else 'embedding or lm_head'} + "
                f"{K.FSDP_LIVE_UNITS} unsharded layers + one unsharded layer gradient"
            )
        if s.grad_accum > 1 and full:
            live_buf += pc.total * 2.0 * (1 - 1 / n)
            A.append(
                "FSDP with gradient accumulation: assumed accelerate's no_sync, which keeps unsharded "
                "gradients between micro-batches (accelerate issue #2035)"
            )

    # -- phases ------------------------------------------------------------------------------------
    grads_persist = (s.grad_accum > 1 or not s.zero_grad_set_to_none) and not s.optimizer_in_backward
    resident_g = g if grads_persist else 0.0
    logits_phase = max(logits_peak, logits_after + (0.0 if grads_persist else head_grad))
    phi_act = act + logits_phase + work_b + resident_g + cast_copies + dequant
    phi_bwd_end = g + work_b + (a_layer * T if r.gc else 0.0)
    phi_step = g + t_step
    phases = {
        "backward start (activations + logits)": phi_act,
        "end of backward (all gradients)": phi_bwd_end,
        "optimizer step": phi_step,
    }
    phase = max(phases, key=lambda k: phases[k])
    dyn = phases[phase]
    static = w_gpu + o + static_buf
    alloc = static + dyn + live_buf
    frag = K.ALLOCATOR_FRAG * (dyn + live_buf)
    reserved = alloc + frag
    ctx = s.cuda_context_gib * K.GIB if s.cuda_context_gib is not None else K.CUDA_CONTEXT_GIB * K.GIB
    nccl = K.NCCL_GIB * K.GIB if (s.world_size > 1 and s.strategy != "none") else 0.0
    smi = reserved + ctx + nccl + soft
    if s.cuda_context_gib is None and s.metric == "nvidia-smi":
        A.append(
            f"CUDA context assumed {K.CUDA_CONTEXT_GIB} GiB (lazy-loading CUDA >= 11.7; older stacks ~1.3)"
        )

    # -- items at the peak -------------------------------------------------------------------------
    gi = K.GIB
    items = [MemoryItem(name="weights", gib=w_gpu / gi, note=notes_w)]
    if o or soft:
        items.append(MemoryItem(name="optimizer states", gib=o / gi, note=opt_note))
    if static_buf:
        items.append(MemoryItem(name="DDP gradient buckets", gib=static_buf / gi, note=buf_note))
    if phase.startswith("backward"):
        items.append(MemoryItem(name="activations", gib=act / gi, note=act_note))
        items.append(MemoryItem(name="logits + loss", gib=logits_phase / gi, note=logits_note))
        items.append(
            MemoryItem(name="backward working set", gib=work_b / gi, note="one layer's gradient temporaries")
        )
        if resident_g:
            items.append(
                MemoryItem(
                    name="gradients", gib=resident_g / gi, note=grad_note + "; kept across micro-batches"
                )
            )
        if cast_copies:
            items.append(
                MemoryItem(
                    name="autocast weight copies",
                    gib=cast_copies / gi,
                    note="16-bit casts of fp32 weights saved for backward",
                )
            )
        if dequant:
            items.append(
                MemoryItem(name="4-bit dequant buffer", gib=dequant / gi, note="largest Linear in bf16")
            )
    elif phase.startswith("end"):
        items.append(MemoryItem(name="gradients", gib=g / gi, note=grad_note))
        items.append(
            MemoryItem(name="last layer recompute + backward working set", gib=(phi_bwd_end - g) / gi)
        )
    else:
        items.append(MemoryItem(name="gradients", gib=g / gi, note=grad_note))
        items.append(
            MemoryItem(
                name="optimizer-step temporaries",
                gib=t_step / gi,
                note=f"{r.opt.label}" + ("; + fp32 grad partition" if ds_mixed else ""),
            )
        )
    if live_buf:
        items.append(MemoryItem(name="distributed buffers", gib=live_buf / gi, note=buf_note))
    if s.metric in ("reserved", "nvidia-smi"):
        items.append(
            MemoryItem(
                name="allocator overhead",
                gib=frag / gi,
                note=f"reserved - allocated ~ {K.ALLOCATOR_FRAG:.0%} of the churning memory",
            )
        )
    if s.metric == "nvidia-smi":
        items.append(MemoryItem(name="CUDA context" + (" + NCCL" if nccl else ""), gib=(ctx + nccl) / gi))
        if soft:
            items.append(
                MemoryItem(
                    name="paged optimizer states",
                    gib=soft / gi,
                    note="unified memory, resident while it fits",
                )
            )

    peak = {"allocated": alloc, "reserved": reserved, "nvidia-smi": smi}[s.metric] / gi
    band = K.BAND_BASE
    if s.method == "qlora" or (s.strategy in ("fsdp", "fsdp_grad_op", "zero2", "zero3") and n > 1):
        band = K.BAND_SHARDED_OR_QUANT
    fits = verdict = None
    if s.gpu_memory_gib is not None:
        need = smi / gi
        fits = need <= s.gpu_memory_gib
        if need > s.gpu_memory_gib * (1 + band):
            verdict = "oom"
        elif need < s.gpu_memory_gib * (1 - band):
            verdict = "fits"
        else:
            verdict = "borderline"
    return MemoryEstimate(
        items=items,
        peak_gib=peak,
        low_gib=peak * (1 - band),
        high_gib=peak * (1 + band),
        metric=s.metric,
        peak_allocated_gib=alloc / gi,
        peak_reserved_gib=reserved / gi,
        peak_smi_gib=smi / gi,
        phase=phase,
        phases_gib={k: v / gi for k, v in phases.items()},
        host_gib=host / gi,
        soft_gib=soft / gi,
        trainable_params=p_t,
        fits=fits,
        verdict=verdict,
        assumptions=A,
    )


def what_if(setup: TrainingSetup) -> list[tuple[str, float]]:
    """The biggest single knobs and the GiB each saves at the peak (nvidia-smi metric), largest first."""
    base = estimate_memory(replace(setup, metric="nvidia-smi")).peak_smi_gib
    trials: list[tuple[str, TrainingSetup]] = []
    s = setup
    if not s.gradient_checkpointing:
        trials.append(("enable gradient checkpointing", replace(s, gradient_checkpointing=True)))
    if (s.micro_batch or 1) > 1:
        trials.append(
            (
                f"micro-batch 1 (x{s.micro_batch} gradient accumulation keeps the effective batch)",
                replace(s, micro_batch=1, grad_accum=s.grad_accum * (s.micro_batch or 1)),
            )
        )
    opt = _optimizer(s.optimizer or "adamw_torch_fused")
    if opt is not None and opt.states is None and opt.mult >= 2:
        trials.append(("8-bit AdamW (optim=adamw_bnb_8bit)", replace(s, optimizer="adamw_8bit")))
    if s.task == "causal_lm" and s.loss == "standard" and not s.liger_kernel:
        trials.append(
            (
                "fused linear cross-entropy (use_liger_kernel=True)",
                replace(s, liger_kernel=True),
            )
        )
    if s.method == "full" and s.strategy not in ("zero3", "fsdp"):
        n = s.world_size if s.world_size > 1 else 8
        trials.append((f"ZeRO-3 across {n} GPUs", replace(s, strategy="zero3", world_size=n)))
    if s.method == "full":
        trials.append(
            (
                "LoRA r=16 on all linear layers",
                replace(s, method="lora", lora_r=16, lora_targets=["all-linear"], lora_dropout=0.05),
            )
        )
    if s.method == "lora":
        trials.append(("QLoRA (4-bit NF4 base)", replace(s, method="qlora")))
    out = []
    for label, trial in trials:
        saved = base - estimate_memory(replace(trial, metric="nvidia-smi")).peak_smi_gib
        if saved > 0.05:
            out.append((label, round(saved, 2)))
    return sorted(out, key=lambda x: -x[1])
