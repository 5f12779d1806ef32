"""A TrainingSetup with every unknown input replaced by a stated assumption, and its dtype facts.

The three dtype facts of a run are kept apart (issue 10 section 1): the storage dtype of the base
weights and of the trainable parameters, the compute dtype (autocast on or off), and the dtype of the
optimizer state (the parameter dtype for torch optimizers, fp32 on a master copy under DeepSpeed).
Activations follow the compute dtype; the residual stream follows the storage dtype (an fp32 residual
plus a bf16 autocast output is fp32).
"""

from __future__ import annotations

from advisor.core.records import record
from advisor.estimate.memory.lora import PEFT_DEFAULT_TARGETS, targeted
from advisor.estimate.memory.optimizers import OptimizerProfile, low_rank_profile, optimizer_profile
from advisor.estimate.memory.setup import TrainingSetup
from advisor.estimate.params import ParamCount

__all__ = ["DtypeFacts", "ResolvedSetup", "dtype_bytes", "resolve_setup"]

_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def dtype_bytes(dtype: str) -> int:
    return _BYTES[dtype]


@record(frozen=True, slots=True)
class DtypeFacts:
    storage: str  # base weights as held during training (fp32 | bf16 | fp16; quantized Linears apart)
    trainable: str  # trainable parameters: = storage for a full fine-tune, the adapters' dtype for LoRA
    autocast: str | None  # the autocast dtype, None when forward runs without autocast
    master: bool  # fp32 master copy of the trainable parameters, optimizer states on it (DeepSpeed)
    quant: str | None  # nf4 | int8 base Linears (LoRA on a quantized base), None otherwise

    @property
    def compute(self) -> str:
        """The dtype matmuls run and save their tensors in."""
        return self.autocast or self.storage

    @property
    def optimizer_state(self) -> str:
        return "fp32" if self.master else self.trainable

    def as_dict(self) -> dict[str, str]:
        return {
            "storage": self.storage + (f" (Linear weights {self.quant})" if self.quant else ""),
            "trainable": self.trainable,
            "compute": f"autocast {self.autocast}" if self.autocast else f"{self.storage}, no autocast",
            "optimizer": ("fp32 master copy + fp32 states" if self.master else f"{self.trainable} states"),
        }


@record
class ResolvedSetup:
    s: TrainingSetup
    pc: ParamCount
    assumptions: list[str]
    b: int
    seq: int
    gc: bool
    dtypes: DtypeFacts
    opt: OptimizerProfile
    opt_name: str
    attn: str
    lora_r: int
    targets: set[str]
    lora_dropout: float
    prepare_kbit: bool
    saved: int = 0  # parameters of the modules_to_save copies (fully trained, in the base's dtype)
    saved_matmul: int = 0  # of those, the lm_head copy's: a matmul whose weight gradient backward computes

    @property
    def full(self) -> bool:
        return self.s.method == "full"

    @property
    def layer_trainable(self) -> list[int] | None:
        """Trainable parameters of each decoder layer, bottom first, for a partly frozen full fine-tune
        (s.layer_trainable, or the last s.trainable_layers whole layers); None when every parameter trains."""
        if not self.full:
            return None
        L = self.pc.layers
        if self.s.layer_trainable is not None:
            return (list(self.s.layer_trainable) + [0] * L)[:L]
        n = self.s.trainable_layers
        if n is None:
            return None
        n = max(0, min(n, L))
        return [0] * (L - n) + [self.pc.per_layer] * n

    @property
    def partly_frozen(self) -> bool:
        return self.layer_trainable is not None

    @property
    def frozen_below(self) -> int:
        """Decoder layers below the lowest one with trainable parameters that backward never reaches (their
        forward records nothing); 0 when every layer trains or the embedding's output requires grad."""
        per = self.layer_trainable
        if per is None or self.s.input_requires_grad:
            return 0
        if self.gc and self.hf and self.s.frozen_layers_checkpointed:
            # transformers' checkpointing makes the embedding's output require grad for every input_ids
            # model (transformers 5.25 modeling_utils.py:3192-3200 enable_input_require_grads)
            return 0
        return next((i for i, x in enumerate(per) if x), len(per))

    @property
    def frozen_in_backward(self) -> int:
        """Frozen decoder layers that backward runs through (above the lowest trainable layer, or every
        frozen layer when the embedding's output requires grad)."""
        per = self.layer_trainable
        return 0 if per is None else sum(1 for x in per[self.frozen_below :] if not x)

    @property
    def hf(self) -> bool:
        return self.s.framework == "hf"

    @property
    def precision(self) -> str:
        """The compute dtype (the time model's precision)."""
        return self.dtypes.compute

    @property
    def amp(self) -> bool:
        """fp32 weights under 16-bit autocast."""
        return self.dtypes.storage == "fp32" and self.dtypes.autocast is not None

    @property
    def autocast(self) -> bool:
        return self.dtypes.autocast is not None

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
    def kbit_fp32(self) -> bool:
        """prepare_model_for_kbit_training's fp32 upcast of the non-quantized weights stays in force."""
        return self.prepare_kbit and not self.s.kbit_recast

    @property
    def qlora_fp32_stream(self) -> bool:
        return self.s.method == "qlora" and self.hf and self.kbit_fp32

    @property
    def wb(self) -> int:
        """Bytes per base weight as held on the GPU."""
        return dtype_bytes(self.dtypes.storage)

    @property
    def cb(self) -> int:
        """Bytes of matmul outputs and attention tensors."""
        return dtype_bytes(self.dtypes.compute)

    @property
    def fsdp_param_dtype(self) -> bool:
        """FSDP gathers fp32 shards in MixedPrecision's param_dtype (accelerate 1.16 utils/dataclasses.py
        1981-2011 set_mixed_precision: MixedPrecision(param_dtype=dtype, reduce_dtype=dtype)): forward
        computes with 16-bit weights, so activations follow the compute dtype, not the fp32 storage."""
        return self.fsdp and self.n > 1 and self.dtypes.storage == "fp32" and self.autocast

    @property
    def br(self) -> int:
        """Residual stream bytes: the storage dtype (fp32 after prepare_model_for_kbit_training), the
        compute dtype when FSDP gathers fp32 shards in its param_dtype (the embedding output is 16-bit)."""
        if self.qlora_fp32_stream:
            return 4
        if self.fsdp_param_dtype:
            return dtype_bytes(self.dtypes.compute)
        return dtype_bytes(self.dtypes.storage)

    @property
    def lin_out(self) -> int:
        """Bytes of Linear outputs that feed pointwise ops."""
        return 4 if self.qlora_fp32_stream else dtype_bytes(self.dtypes.compute)

    @property
    def ab(self) -> int:
        """Bytes per trainable adapter parameter."""
        return dtype_bytes(self.dtypes.trainable)


def _dtypes(s: TrainingSetup, a: list[str]) -> DtypeFacts:
    """The dtype facts: the explicit fields when given, else derived from precision/amp."""
    deepspeed = s.strategy in ("zero1", "zero2", "zero3")
    if s.precision is None and s.storage_dtype is None and s.autocast is None:
        a.append("precision unknown: assumed bf16")
    autocast = None if s.autocast == "off" else s.autocast
    precision = s.precision or autocast or s.storage_dtype or "bf16"
    if s.storage_dtype is not None:
        storage = s.storage_dtype
    elif precision == "fp32":
        storage = "fp32"
    elif s.amp is None:
        storage = precision
        if not deepspeed:  # DeepSpeed casts the module itself: the load dtype does not matter
            a.append(
                "weight dtype unknown: assumed the model is loaded in 16-bit (torch_dtype bf16/'auto'); "
                "an fp32 load with bf16/fp16 autocast needs ~2x the weight/optimizer memory"
            )
    else:
        storage = "fp32" if s.amp else precision
    if deepspeed and precision in ("bf16", "fp16") and s.storage_dtype is None:
        # DeepSpeed's bf16/fp16 block casts every parameter of the module (deepspeed 0.19.8
        # runtime/engine.py:2080-2088, _cast_module_mixed_precision): the fp32 load is not kept
        storage = precision
    if s.autocast is not None:
        autocast = None if s.autocast == "off" else s.autocast
    elif deepspeed:
        # accelerate enables native AMP only outside DeepSpeed (accelerate 1.15 accelerator.py:566-600):
        # DeepSpeed runs forward in the module's own dtype
        autocast = None
    else:
        # HF Trainer / accelerate wrap forward in autocast whenever bf16/fp16 is on; torchtune never does
        autocast = precision if (s.framework == "hf" and precision in ("bf16", "fp16")) else None
    # DeepSpeed keeps an fp32 partition of the trainable parameters only (runtime/bf16_optimizer.py:182,
    # zero/stage_1_and_2.py single_partition_of_fp32_groups) and runs the optimizer on it
    default_master = deepspeed and storage in ("bf16", "fp16")
    master = s.master_weights if s.master_weights is not None else default_master
    if s.trainable_dtype is not None:
        trainable = s.trainable_dtype
    elif s.method == "full":
        trainable = storage
    elif deepspeed and storage != "fp32":
        trainable = storage  # the engine's cast covers the adapters too
    elif s.framework == "hf":
        # PEFT upcasts fp16/bf16 adapter weights to fp32 (autocast_adapter_dtype=True, peft 0.21.2
        # tuners/tuners_utils.py:2722 cast_adapter_dtype)
        trainable = "fp32"
    else:
        trainable = storage  # torchtune builds the adapters in the model's dtype
    quant = s.quantization or ("nf4" if s.method == "qlora" else None)
    return DtypeFacts(storage=storage, trainable=trainable, autocast=autocast, master=master, quant=quant)


def resolve_setup(s: TrainingSetup) -> ResolvedSetup:
    """Every input the estimator needs, with an assumption stated for each one the setup left unknown."""
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
    dtypes = _dtypes(s, a)
    prepare = False
    if s.method == "qlora" and s.framework == "hf":
        if s.prepare_kbit_training is None:
            prepare = True
            a.append(
                "QLoRA: assumed PEFT prepare_model_for_kbit_training (axolotl and most QLoRA scripts call "
                "it; TRL's SFTTrainer does not): non-quantized weights upcast to fp32, gradient "
                "checkpointing on"
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
    opt = optimizer_profile(opt_name) or low_rank_profile(
        opt_name, pc, s.optim_rank, s.optim_target_modules, a, dtype_bytes(dtypes.optimizer_state)
    )
    if opt is None:
        a.append(f"optimizer '{opt_name}' has no memory profile: counted as AdamW (2 states)")
        opt = optimizer_profile("adamw_torch_fused")
        assert opt is not None
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
        low = "no adapters counted (the estimate is low by their weights, gradients and optimizer states)"
        if s.lora_targets is None:
            mt = pc.model_type
            default = PEFT_DEFAULT_TARGETS.get(mt)
            tl = default or ["q_proj", "v_proj"]
            targets = targeted(pc, tl)
            if targets and default is not None:
                a.append(f"LoRA target modules unknown: assumed PEFT's default for {mt} ({', '.join(tl)})")
            elif targets:
                a.append(
                    f"LoRA target modules unknown: assumed {', '.join(tl)} (PEFT's default for most "
                    f"decoders; this tool's table has no entry for {mt})"
                )
            elif default is None:
                # a model type outside PEFT's mapping (peft 0.17.1 utils/constants.py:100, no "qwen"):
                # get_peft_model without target_modules raises "Please specify `target_modules` or
                # `target_parameters`" (tuners/lora/model.py:518-526), so the run names them somewhere this
                # tool did not read
                a.append(
                    "LoRA adapters unknown: the target modules are not written where this tool reads them "
                    f"and this tool knows no PEFT default for {mt}: {low}"
                )
            else:
                a.append(
                    f"LoRA adapters unknown: the target modules are not written and PEFT's default for "
                    f"{mt} ({', '.join(tl)}) matches no Linear of the model: {low}"
                )
        else:
            tl = s.lora_targets
            targets = targeted(pc, tl)
            if not targets and tl:  # [] is no adapter at all (prompt/prefix tuning: the base frozen)
                a.append(f"LoRA adapters unknown: the targets {tl} match no Linear of {pc.model_type}: {low}")
        if s.lora_dropout is None:
            dropout = 0.05 if s.framework == "hf" else 0.0
            a.append(f"lora_dropout unknown: assumed {dropout}")
        else:
            dropout = s.lora_dropout
    saved, saved_matmul = _modules_to_save(s, pc, a) if s.method != "full" else (0, 0)
    if s.strategy != "none" and s.world_size <= 1:
        a.append(f"strategy {s.strategy} with world_size {s.world_size}: nothing is sharded")
    partly = s.method == "full" and (s.layer_trainable is not None or s.trainable_layers is not None)
    if partly and gc and s.framework == "hf" and s.frozen_layers_checkpointed and not s.input_requires_grad:
        a.append(
            "partly frozen with gradient checkpointing: transformers makes the embedding's output require "
            "grad (modeling_utils.py:3192-3200 enable_input_require_grads), so every layer is checkpointed "
            "and backpropagated, the frozen ones below the lowest trainable layer too"
        )
    return ResolvedSetup(
        s=s,
        pc=pc,
        assumptions=a,
        b=b,
        seq=seq,
        gc=gc,
        dtypes=dtypes,
        opt=opt,
        opt_name=opt_name,
        attn=attn,
        lora_r=r,
        targets=targets,
        lora_dropout=dropout,
        prepare_kbit=prepare,
        saved=saved,
        saved_matmul=saved_matmul,
    )


# module names whose size the shapes tell, by what they are (HF names across the catalog's families)
_EMBED_NAMES = {"embed_tokens", "wte", "word_embeddings", "embed_in", "tok_embeddings", "shared"}
_HEAD_NAMES = {"lm_head", "embed_out"}
_FINAL_NORM_NAMES = {"ln_f", "final_layernorm", "final_layer_norm"}


def _modules_to_save(s: TrainingSetup, pc: ParamCount, a: list[str]) -> tuple[int, int]:
    """Parameters of PEFT's modules_to_save copies: ModulesToSaveWrapper deep-copies each module it wraps
    and marks the copy trainable (peft 0.17.1 utils/other.py:513,527), so the copy has gradients and
    optimizer states like a full fine-tune of that module. A name matches every module whose name ends
    with it (other.py:856 `key.endswith(target_key)`): "norm" is every RMSNorm/LayerNorm. A name whose
    size the model's shapes do not tell is stated, not counted."""
    names = [n.strip() for n in (s.modules_to_save or []) if n.strip()]
    if not names:
        return 0, 0
    total = head = 0
    counted: list[str] = []
    unknown: list[str] = []
    for raw in names:
        n = raw.split(".")[-1].lower()
        if n in _EMBED_NAMES:
            size = pc.embedding
        elif n in _HEAD_NAMES:
            # a tied lm_head shares the embedding's weight; the wrapper's deepcopy is a new trainable V*h
            size = pc.lm_head or pc.embedding
            head += size
        elif n in _FINAL_NORM_NAMES:
            size = pc.final_norm
        elif n == "norm":  # model.norm and, by the suffix match, every layer's *norm
            size = pc.final_norm + pc.norm_per_layer * pc.layers
        else:
            unknown.append(raw)
            continue
        if size <= 0:
            unknown.append(raw)
            continue
        total += size
        counted.append(f"{raw} {size / 1e6:.1f}M")
    if counted:
        a.append(
            "modules_to_save "
            + ", ".join(counted)
            + ": fully trained copies (PEFT ModulesToSaveWrapper), with gradients and optimizer states"
        )
    if unknown:
        a.append(
            f"modules_to_save {', '.join(unknown)}: size unknown, because the name is not an embedding, "
            f"lm_head or norm of {pc.model_type}: not counted (the estimate is low by their weights, "
            "gradients and optimizer states)"
        )
    return total, head
