"""The memory terms of one training process: each a small function of the resolved setup and its dtype
facts, returning a Term (bytes, what it is, the phases it is live in). memory-model.md section 6.3-6.6.

Phases: "static" (allocated once: weights, optimizer states, DDP buckets), "backward start" (saved
activations, logits and loss), "end of backward" (all gradients), "optimizer step" (gradients and step
temporaries), "every phase" (distributed buffers that churn throughout).
"""

from __future__ import annotations

from advisor.core.records import record
from advisor.estimate import constants as K
from advisor.estimate.memory.activations import (
    first_layer_inputs,
    frozen_layer_bytes,
    layer_bytes,
    logits_bytes,
    outside_bytes,
)
from advisor.estimate.memory.lora import lora_params
from advisor.estimate.memory.optimizers import per_param_step_elements
from advisor.estimate.memory.packed import PACKED, packed_bytes
from advisor.estimate.memory.resolve import ResolvedSetup, dtype_bytes
from advisor.estimate.memory.setup import Phase, Term
from advisor.estimate.memory.zero3 import forward_calls, gathered_peak

__all__ = ["Placement", "Trainables", "placement", "trainables"]

VISION_FORWARD: Phase = "vision forward"  # an image tower's no-grad forward (memory/vision.py)
BACKWARD: Phase = "backward start"
END: Phase = "end of backward"
STEP: Phase = "optimizer step"


@record(frozen=True, slots=True)
class Trainables:
    """What is trained and in which dtypes."""

    lora: int  # adapter parameters (0 for a full fine-tune)
    count: int  # trainable parameters
    state_bytes: int  # bytes per element of the optimizer state when it follows the parameter dtype
    grad_bytes: int  # bytes per gradient element
    quantized: int  # base parameters stored quantized (QLoRA / 8-bit LoRA)
    quant_bytes: float  # bytes per quantized parameter
    unquant_bytes: int  # bytes per base parameter that is not quantized
    saved: int = 0  # modules_to_save copies (part of count), held in the base's dtype
    saved_bytes: int = 2  # bytes per element of those copies, their gradients and their Adam states


@record(frozen=True, slots=True)
class Placement:
    """Which states are sharded across the data-parallel group."""

    n: int
    weights: bool
    grads: bool
    optimizer: bool


def trainables(r: ResolvedSetup) -> Trainables:
    s, pc, d = r.s, r.pc, r.dtypes
    p_lora = lora_params(pc, r.lora_r, sorted(r.targets)) if not r.full else 0
    saved = 0 if r.full else r.saved
    count = pc.total if r.full else p_lora + saved
    per_layer = r.layer_trainable
    if per_layer is not None:
        # a partly frozen model: the trainable part of each decoder layer and the named extra modules
        # (LLaMA-Factory model/adapter.py _setup_freeze_tuning, axolotl utils/freeze.py freeze_layers_except:
        # requires_grad False on every other parameter)
        count = sum(per_layer) + s.trainable_extra_params
    # torch optimizers allocate their states like the parameter (torch/optim/adam.py:178-182 zeros_like)
    sd = dtype_bytes(d.trainable)
    gb = sd
    if d.master:
        gb = dtype_bytes(d.storage)  # DeepSpeed's 16-bit module produces 16-bit gradients
    quant, qb, nonq = 0, 0.0, r.wb
    if s.method == "qlora" and d.quant in PACKED:
        # a GPTQ/AWQ checkpoint: the decoder blocks' Linears in packed codes + group scales, the rest fp16
        quant = pc.layer_linear_weights
        qb = packed_bytes(d.quant, s.quant_group_size, pc.hidden)
        nonq = 4 if r.kbit_fp32 else r.wb
    elif s.method == "qlora":
        if r.hf:
            quant = pc.layer_linear_weights  # bnb replaces every decoder Linear; lm_head stays
        else:  # torchtune / torchao quantizes only the LoRA-wrapped Linears
            quant = pc.layers * sum(lin.weight_params for lin in pc.linears if lin.name in r.targets)
        nf4 = K.NF4_DQ_BYTES if s.qlora_double_quant else K.NF4_BYTES
        qb = K.INT8_BYTES if d.quant == "int8" else nf4
        # prepare_model_for_kbit_training casts every non-quantized parameter to fp32 (peft
        # utils/other.py prepare_model_for_kbit_training), unless the trainer casts them back (kbit_recast)
        nonq = 4 if r.kbit_fp32 else r.wb
    # modules_to_save copies are deep copies of base modules (peft 0.17.1 utils/other.py:513): the base's
    # dtype, not the adapters' fp32 (PEFT's autocast_adapter_dtype upcasts only the tuner layers), unless
    # the run names the trainable dtype: a cast of every requires_grad parameter (LLaMA-Factory
    # adapter.py:325, accelerate's FSDP upcast) reaches the copies too
    saved_b = dtype_bytes(d.trainable) if s.trainable_dtype is not None else r.wb
    return Trainables(p_lora, count, sd, gb, quant, qb, nonq, saved, saved_b)


def placement(r: ResolvedSetup) -> Placement:
    n, strategy = r.n, r.s.strategy
    return Placement(
        n=n,
        weights=strategy in ("zero3", "fsdp", "fsdp_grad_op") and n > 1,
        grads=strategy in ("zero2", "zero3", "fsdp", "fsdp_grad_op") and n > 1,
        optimizer=strategy not in ("none", "ddp") and n > 1,
    )


def weights(r: ResolvedSetup, train: Trainables, shards: Placement) -> tuple[Term, float]:
    """(the weights on the GPU, bytes offloaded to the host)."""
    s, pc = r.s, r.pc
    if train.quantized:
        base = train.quantized * train.quant_bytes + (pc.total - train.quantized) * train.unquant_bytes
        label = quant_label(r.dtypes.quant)
        note = (
            f"{label} {train.quantized / 1e9:.2f}B params x {train.quant_bytes:.3f} B + "
            f"{(pc.total - train.quantized) / 1e9:.2f}B unquantized x {train.unquant_bytes} B"
        )
    elif r.partly_frozen:
        # the trainable part in its own dtype (LLaMA-Factory upcasts it to fp32: adapter.py
        # cast_trainable_params_to_fp32), the frozen rest in the storage dtype
        tb = dtype_bytes(r.dtypes.trainable)
        base = (pc.total - train.count) * r.wb + train.count * tb
        layers = sum(1 for x in r.layer_trainable or [] if x)
        note = (
            f"{(pc.total - train.count) / 1e9:.2f}B frozen x {r.wb} B + {train.count / 1e9:.2f}B trainable "
            f"(in {layers} of {pc.layers} layers) x {tb} B"
        )
    else:
        base = pc.total * r.wb
        note = f"{pc.total / 1e9:.2f}B params x {r.wb} B"
    adapters = train.lora * r.ab + train.saved * train.saved_bytes
    if train.lora:
        note += f" + LoRA {train.lora / 1e6:.1f}M x {r.ab} B"
    if train.saved:
        note += f" + modules_to_save copies {train.saved / 1e6:.1f}M x {train.saved_bytes} B"
    whole = 0.0  # quantized weights FSDP cannot shard (uint8 quant storage under FSDP2)
    if train.quantized and shards.weights and not s.quantized_sharded:
        whole = train.quantized * train.quant_bytes
        base -= whole
        note += f"; {quant_label(r.dtypes.quant)} weights not sharded (uint8 quant storage)"
    on_gpu = (base + adapters) / (shards.n if shards.weights else 1) + whole
    host = 0.0
    if s.offload_params != "none" and s.strategy in ("zero3", "fsdp"):
        host, on_gpu = on_gpu, 0.0
        note += f"; shards offloaded to {s.offload_params}"
    elif s.offload_params != "none":
        r.assumptions.append(
            f"offload_params={s.offload_params} only applies to ZeRO-3/FSDP: ignored for {s.strategy}"
        )
    if shards.weights:
        note += f", sharded /{shards.n}"
    return Term("weights", on_gpu, ("static",), note), host


def _state_bytes(r: ResolvedSetup, n_train: int, sd: int) -> float:
    o, pc = r.opt, r.pc
    if o.factored:
        if r.full:
            rows_cols = sum((lin.d_in + lin.d_out) * lin.count for lin in pc.linears) * pc.layers
            rows_cols += (pc.vocab + pc.hidden) * (1 if pc.tied else 2)
            vectors = pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head
            return 4.0 * (rows_cols + vectors)
        return 4.0 * n_train * 0.05
    if o.states is not None:
        return o.states * n_train
    return o.mult * sd * n_train


@record(frozen=True, slots=True)
class OptimizerStates:
    term: Term
    soft: float  # paged (unified-memory) state
    host: float  # offloaded state (and FSDP's offloaded gradient shards)
    grads_offloaded: bool


def optimizer_states(
    r: ResolvedSetup, train: Trainables, shards: Placement, grads_on_gpu: float
) -> OptimizerStates:
    s = r.s
    if r.dtypes.master:
        full = 4.0 * train.count + _state_bytes(r, train.count, 4)  # fp32 master + states on the fp32 copy
        note = f"{r.opt.label} on fp32 master copy ({'BAdam block' if s.block_optimizer else 'DeepSpeed'})"
    else:
        plain = train.count - train.saved
        full = _state_bytes(r, plain, train.state_bytes) + (
            _state_bytes(r, train.saved, train.saved_bytes) if train.saved else 0.0
        )
        note = r.opt.label
    o = full / shards.n if shards.optimizer else full
    if shards.optimizer:
        note += f", sharded /{shards.n}"
    soft = host = 0.0
    if r.opt.paged:
        soft, o = o, 0.0
        note += "; paged (CUDA unified memory): outside torch's allocator, may spill to CPU"
    offloaded = False
    if s.offload_optimizer != "none":
        if s.strategy in ("zero1", "zero2", "zero3", "fsdp"):
            host += (
                o + soft + (4.0 * train.count / shards.n if r.dtypes.master else 0.0)
            )  # + fp32 grad partition
            o, soft = 0.0, 0.0
            note += f"; offloaded to {s.offload_optimizer}"
            offloaded = True
            if s.strategy == "fsdp":  # FSDP CPUOffload moves the gradient shards too
                host += grads_on_gpu
        else:
            r.assumptions.append(
                f"offload_optimizer needs DeepSpeed ZeRO or FSDP: ignored for strategy {s.strategy}"
            )
    return OptimizerStates(Term("optimizer states", o, ("static",), note), soft, host, offloaded)


def mixed_units(r: ResolvedSetup) -> float:
    """Parameters in FSDP1 units that hold frozen base weights and LoRA adapters in one FlatParameter:
    with use_orig_params=True the unit's gradient is the whole flat parameter's size ("recommended to avoid
    ... higher than expected gradient memory usage", torch 2.13 distributed/fsdp/fully_sharded_data_parallel
    .py:208-213). HF Trainer wraps LoRA leaves in units of their own (transformers distributed/fsdp.py:276-
    279, peft utils/other.py:1294-1307 fsdp_auto_wrap_policy), so only a loop of its own pays it."""
    s = r.s
    if not (s.fsdp_mixed_units and r.fsdp and r.n > 1 and s.method == "lora" and r.lora_r):
        return 0.0
    return float(r.pc.per_layer * r.pc.layers)


def gradients(r: ResolvedSetup, train: Trainables, shards: Placement) -> tuple[float, float, str]:
    """(all gradients on the GPU, the lm_head/embedding gradient, note)."""
    s, pc = r.s, r.pc
    per: float = (train.count - train.saved) * train.grad_bytes
    per += train.saved * (train.grad_bytes if r.dtypes.master else train.saved_bytes)
    flat = mixed_units(r)
    if flat:
        per = flat * r.wb + train.saved * train.saved_bytes  # the flat parameter's dtype: the base's
    g = per / (shards.n if shards.grads else 1)
    if flat:
        note = (
            f"FSDP units mixing frozen and LoRA weights: {flat / 1e9:.2f}B x {r.wb} B full-size flat "
            f"gradients, sharded /{shards.n}"
        )
        return g, 0.0, note
    if s.optimizer_in_backward or r.opt.label.startswith(("LOMO", "AdaLomo")):
        g = pc.largest_tensor * train.grad_bytes if r.full else g
        note = "optimizer step fused into backward: ~largest tensor's gradient"
    else:
        saved_grad_b = train.grad_bytes if r.dtypes.master else train.saved_bytes
        if train.saved and saved_grad_b != train.grad_bytes:
            # each part with its own gradient dtype: the adapters' and the modules_to_save copies'
            note = (
                f"{(train.count - train.saved) / 1e6:.1f}M trainable x {train.grad_bytes} B"
                f" + modules_to_save {train.saved / 1e6:.1f}M x {saved_grad_b} B"
            )
        else:
            note = f"{train.count / 1e6:.1f}M trainable x {train.grad_bytes} B"
        note += f", sharded /{shards.n}" if shards.grads else ""
    head = (pc.lm_head if pc.lm_head else pc.embedding) * train.grad_bytes if r.full else 0.0
    if r.partly_frozen:
        head = 0.0  # partly frozen: the lm_head is frozen unless an extra module (counted with the rest)
    return g, head / (shards.n if shards.grads else 1), note


def late_gradients(r: ResolvedSetup, train: Trainables, shards: Placement, g: float, persist: bool) -> float:
    """Gradient bytes that do not exist yet while the first (lowest trainable) decoder layer is recomputed
    and backpropagated: its own weights' and the input embeddings'.

    The autograd engine runs a node when its inputs' gradients are complete, and AccumulateGrad creates a
    parameter's .grad when its gradient arrives (torch/csrc/autograd/functions/accumulate_grad.h, steal the
    incoming tensor); the token and position embeddings come after every layer in backward. With
    non-reentrant checkpointing (transformers 5.24 modeling_utils.py:3158 use_reentrant=False) a layer is
    recomputed on the first unpack of one of its saved tensors (torch 2.13 torch/utils/checkpoint.py:1175-1183
    _checkpoint_hook.unpack_hook), i.e. when backward reaches the layer's last op, before any of its weight
    gradients. A tied embedding's gradient already exists (the lm_head's); gradients kept across
    micro-batches all exist."""
    s, pc = r.s, r.pc
    if persist or s.optimizer_in_backward or mixed_units(r) or not pc.layers:
        return 0.0
    per_layer = r.layer_trainable
    if per_layer is not None:
        # partly frozen: the lowest layer backward reaches, its trainable part (0 when it is a frozen layer
        # backward runs through because the embedding's output requires grad); the embeddings are frozen
        late = float(per_layer[r.frozen_below]) if r.frozen_below < len(per_layer) else 0.0
    elif r.full:
        late = float(pc.per_layer + pc.position_embedding + (0 if pc.tied else pc.embedding))
    else:
        late = (train.count - train.saved) / pc.layers  # one layer's adapters
    return min(g, late * train.grad_bytes / (shards.n if shards.grads else 1))


def step_temporaries(r: ResolvedSetup, train: Trainables, shards: Placement) -> Term:
    s = r.s
    largest = max(r.pc.largest_tensor, 1)
    sd = train.state_bytes
    if s.offload_optimizer != "none" or s.optimizer_in_backward or r.deepspeed:
        tmp = 0.0
    elif r.opt.temp == "foreach":
        per = (train.count - train.saved) * sd + train.saved * train.saved_bytes
        tmp = per / (shards.n if shards.optimizer else 1)
    elif r.opt.temp == "per_param":
        tmp = per_param_step_elements(r.pc, r.full, r.targets, r.lora_r or 0) * sd
    elif r.opt.temp == "adafactor":
        tmp = 3.0 * (largest if r.full else 0) * 4
    else:
        tmp = 0.0
    if r.dtypes.master and s.offload_optimizer == "none":
        # the fp32 gradients DeepSpeed builds for the step: a partition under ZeRO, all of them at stage 0
        tmp += 4.0 * train.count / (shards.n if shards.optimizer else 1)
    note = r.opt.label + ("; + fp32 grad partition" if r.dtypes.master else "")
    return Term("optimizer-step temporaries", tmp, (STEP,), note)


@record(frozen=True, slots=True)
class Activations:
    saved: Term
    last_layer: float  # one layer's saved activations (recomputed at the end of backward with checkpointing)
    work: Term
    one_layer: float = 0.0  # one layer's saved activations, with or without checkpointing
    layer_input: float = 0.0  # one checkpointed layer's input (0 without checkpointing)


def activations(r: ResolvedSetup) -> Activations:
    s, pc = r.s, r.pc
    T = r.tokens
    a_layer, work = layer_bytes(r)
    L = pc.layers - r.frozen_below  # partly frozen: the frozen layers below save nothing for backward
    outside = outside_bytes(r) * T
    frozen = r.frozen_in_backward
    if frozen and not (r.gc and s.frozen_layers_checkpointed) and not s.activation_offloading:
        # frozen layers backward runs through, unchecked (LLaMA-Factory checkpoints only the layers with
        # trainable parameters: model_utils/checkpointing.py get_custom_gradient_checkpointing_func), keep
        # what their ops save for the input's gradient
        frozen_b = frozen_layer_bytes(r) * T
        unchecked = f"; {frozen} frozen layers unchecked x {frozen_b / T / 1024:.1f} KiB/token"
        trained = L - frozen
        if r.gc:
            act = trained * r.br * pc.hidden * T + frozen * frozen_b + outside
            note = f"checkpointed: {trained} layer inputs" + unchecked
        else:
            act = trained * a_layer * T + frozen * frozen_b + outside
            note = f"{trained} layers x {a_layer / 1024:.1f} KiB/token x {T} tokens" + unchecked
    elif r.gc:
        # the first recomputed layer is not live yet when backward starts: the Trainer/TRL loops drop the
        # outputs before backward, so the loss backward frees the logits before torch.utils.checkpoint
        # recomputes the last layer (torch/utils/checkpoint.py _checkpoint_hook unpack): that layer is counted
        # in the backward working set and at the end of backward (benchmarks/simulate.py measures it)
        kept = min(L, K.OFFLOAD_INFLIGHT_LAYERS) if s.activation_offloading else L
        act = kept * r.br * pc.hidden * T + outside
        note = f"checkpointed: {L} layer inputs{' (offloaded)' if s.activation_offloading else ''}"
    elif s.activation_offloading:
        act = min(L, K.OFFLOAD_INFLIGHT_LAYERS) * a_layer * T + outside
        note = "all saved activations offloaded to CPU except those in flight"
    else:
        act = L * a_layer * T + outside
        note = f"{L} layers x {a_layer / 1024:.1f} KiB/token x {T} tokens"
    per_layer = r.layer_trainable
    if not r.gc and per_layer is not None and any(0 < x < pc.per_layer for x in per_layer):
        note += "; partly trainable layers counted as whole ones (a bound)"
    if s.torch_compile and s.framework == "torchtune":
        note += ", compiled (fused norms)"
    return Activations(
        saved=Term("activations", act, (BACKWARD,), note),
        last_layer=a_layer * T if r.gc else 0.0,
        one_layer=a_layer * T,
        layer_input=r.br * pc.hidden * T if r.gc else 0.0,
        work=Term("backward working set", work * T, (BACKWARD,), "one layer's gradient temporaries"),
    )


def logits(r: ResolvedSetup, head_grad: float, grads_persist: bool) -> Term:
    peak, after, note = logits_bytes(r)
    live = max(peak, after + (0.0 if grads_persist else head_grad))
    return Term("logits + loss", live, (BACKWARD,), note)


def kept_logits(r: ResolvedSetup) -> Term:
    """The logits a training loop of its own keeps alive through backward and the optimizer step (its
    `outputs` still bound): `outputs.logits`, tokens x vocab at s.kept_logits_bytes per element."""
    s = r.s
    per = s.kept_logits_bytes or 0
    if s.task != "causal_lm" or s.loss in ("fused", "cce") or s.liger_kernel:
        per = 0  # no tokens x vocab tensor in the outputs
    x = float(per * r.tokens * r.pc.vocab)
    note = f"outputs.logits kept by the training loop ({per} B per token x vocab)" if x else ""
    return Term("kept logits", x, (END, STEP), note)


def autocast_copies(r: ResolvedSetup, shards: Placement) -> Term:
    """16-bit casts of fp32 weights that autocast saves for backward (all matmul weights)."""
    pc = r.pc
    copies = 0.0
    # FSDP's MixedPrecision all-gathers the fp32 shards in the compute dtype (the working set among the
    # distributed buffers): autocast finds 16-bit weights and keeps no copies of its own
    if r.dtypes.storage == "fp32" and r.dtypes.autocast is not None and not (r.fsdp and r.n > 1):
        matmul_w = pc.layer_linear_weights + (pc.lm_head or pc.embedding if r.s.task == "causal_lm" else 0)
        copies = 2.0 * matmul_w / (shards.n if shards.weights else 1)
    if not r.full and r.dtypes.trainable == "fp32" and r.dtypes.autocast is not None and not r.gc:
        # fp32 adapters: autocast caches its 16-bit cast of each leaf weight (aten/src/ATen/autocast_mode.cpp
        # cached_cast) and the matmuls save it for backward; with checkpointing nothing saves them and the
        # cache is cleared when the forward's autocast exits (torch/amp/autocast_mode.py:349 __exit__)
        copies += 2.0 * lora_params(pc, r.lora_r, sorted(r.targets))
        if not r.prepare_kbit and not r.saved:
            # the first layer's input needs no gradient (activations.outside_bytes): its lora_A matmuls
            # save their input only, not the weight cast
            copies -= 2.0 * r.lora_r * sum(lin.d_in for lin in first_layer_inputs(r) if lin.name in r.targets)
    copies += _layer_norm_fp32_copies(r)
    return Term(
        "autocast weight copies",
        copies,
        (BACKWARD,),
        "casts of weights that autocast makes and the ops save for backward",
    )


def _layer_norm_fp32_copies(r: ResolvedSetup) -> float:
    """fp32 copies of 16-bit LayerNorm weights and biases: CUDA autocast runs layer_norm in fp32
    (aten/src/ATen/autocast_mode.h AT_FORALL_FP32, benchmarks/cuda_autocast.py), casting each call's weight
    and bias anew (cached_cast caches only lower-precision casts of fp32 leaves: autocast_mode.cpp), and
    native_layer_norm saves both for its backward (tools/autograd/derivatives.yaml native_layer_norm ->
    native_layer_norm_backward(..., weight, bias, ...)) whenever its input or weight needs a gradient."""
    pc = r.pc
    norm_b = 4 if r.kbit_fp32 else dtype_bytes(r.dtypes.storage)
    if pc.norm != "layer" or r.dtypes.autocast is None or norm_b >= 4 or not pc.norms_per_layer:
        return 0.0
    per_norm = pc.norm_per_layer / pc.norms_per_layer  # weight (+ bias)
    saving = 0.0
    if not r.gc:  # a checkpointed layer's forward saves nothing; its recompute's casts die with the layer
        saving = float((pc.layers - r.frozen_below) * pc.norms_per_layer)
        if not r.full and not r.prepare_kbit and not r.saved:
            # the first layer's norms read the frozen embedding's output, which needs no gradient
            # (activations.outside_bytes): no autograd node, nothing saved
            saving -= pc.norms_per_layer if pc.parallel_block else 1
    return 4.0 * (saving * per_norm + (pc.final_norm if r.s.task == "causal_lm" else 0))


def bnb_kept_inputs(r: ResolvedSetup) -> float:
    """Bytes one decoder layer's 4-bit Linears keep for backward under bitsandbytes before 0.43.2: its
    MatMul4Bit kept every input whenever it needed a gradient (bitsandbytes/autograd/_functions.py
    MatMul4Bit.forward `ctx.tensors = (A, B)`, 0.42.0 line 523; 0.43.2 line 516 keeps `(None, B)`: PR #1270;
    the input gradient needs only the weight); 0 where it does not apply
    (int8 and pre-quantized bases have kernels of their own)."""
    if r.s.method != "qlora" or not r.hf or r.dtypes.quant == "int8" or r.dtypes.quant in PACKED:
        return 0.0
    widths = {lin.feeds_from: lin.d_in for lin in r.pc.linears if not lin.name.startswith(("router",))}
    return r.cb * sum(widths.values()) * r.tokens  # one compute-dtype copy of each distinct Linear input


def bnb_recomputed_only(r: ResolvedSetup) -> bool:
    """Whether only the recomputed layer holds the inputs bitsandbytes < 0.43.2 keeps (bnb_kept_inputs):
    under reentrant checkpointing the forward runs without grad, so no MatMul4Bit context outlives it.
    Non-reentrant checkpointing (transformers' default from 5.0) runs it with grad and drops only what
    save_for_backward passes through its saved-tensor hooks (torch/utils/checkpoint.py
    _checkpoint_hook); MatMul4Bit keeps its input as a context attribute (`ctx.tensors = (A, B)`), so
    every layer's inputs stay from its forward to its backward, and the recompute's copies are freed
    with the recomputed graph."""
    return r.gc and r.s.checkpoint_reentrant is True


def bnb_input_note(r: ResolvedSetup) -> str | None:
    """What bitsandbytes before 0.43.2 adds (bnb_kept_inputs): counted when the pin says so, stated when
    nothing pins bitsandbytes."""
    per_layer = bnb_kept_inputs(r)
    if not per_layer or r.s.bnb_keeps_input is False:
        return None
    one = bnb_recomputed_only(r)
    extra = per_layer * (1 if one else r.pc.layers) / K.GIB
    if one:
        where = ", in the recomputed layer (reentrant checkpointing)"
    elif r.gc:
        where = ", in every layer: non-reentrant checkpointing does not drop a context attribute" + (
            "" if r.s.checkpoint_reentrant is False else " (use_reentrant not said: transformers 5's)"
        )
    else:
        where = ""
    if r.s.bnb_keeps_input:
        return (
            "bitsandbytes pinned below 0.43.2: every 4-bit Linear also keeps its input for backward "
            f"(PR #1270), counted: +{extra:.2f} GiB{where}"
        )
    return (
        "bitsandbytes >= 0.43.2 assumed (not pinned): before it (PR #1270) every 4-bit Linear also keeps its "
        f"input for backward (+{extra:.2f} GiB here{where})"
    )


def dequant_buffer(r: ResolvedSetup) -> Term:
    largest = max((lin.d_in * lin.d_out for lin in r.pc.linears), default=0)
    if r.s.method == "qlora" and r.dtypes.quant in PACKED:
        x, note = _packed_layer(r, largest)
        return Term(f"{quant_label(r.dtypes.quant)} dequantized weights", x, (BACKWARD,), note)
    x = 2.0 * largest if r.s.method == "qlora" else 0.0
    label = "8-bit" if r.dtypes.quant == "int8" else "4-bit"
    return Term(f"{label} dequant buffer", x, (BACKWARD,), "largest Linear in bf16")


def _packed_saved(r: ResolvedSetup) -> float:
    """What one layer of a GPTQ/AWQ base keeps for its backward (packed.py): auto-gptq's torch.matmul keeps
    each Linear's fp16 weight; AutoAWQ's WQLinearMMFunction saves its input x (ctx.save_for_backward(x,
    qweight, qzeros, scales, bias), autoawq 0.2.9 awq/modules/linear/gemm.py:39) and dequantizes again in
    backward (gemm.py:99-106)."""
    pc = r.pc
    if PACKED[r.dtypes.quant or ""][0] == "GPTQ":
        return 2.0 * sum(lin.weight_params for lin in pc.linears)
    widths = {lin.feeds_from: lin.d_in for lin in pc.linears if not lin.name.startswith(("router",))}
    return r.cb * sum(widths.values()) * r.tokens  # one compute-dtype copy of each distinct Linear input


def _packed_layer(r: ResolvedSetup, largest: int) -> tuple[float, str]:
    if PACKED[r.dtypes.quant or ""][0] == "GPTQ":
        # the codes unpack through int32 temporaries (auto-gptq qlinear_cuda_old.py:300-350)
        return max(
            _packed_saved(r), 4.0 * largest
        ), "one layer's Linear weights in fp16, kept for the input's gradient"
    return _packed_saved(
        r
    ) + 2.0 * largest, "one layer's Linear inputs + the largest Linear dequantized in backward"


def packed_weights_saved(r: ResolvedSetup) -> Term:
    """Without gradient checkpointing every layer of a GPTQ/AWQ base keeps what its backward needs from the
    forward on (_packed_saved); the layer being backpropagated is in dequant_buffer."""
    x = 0.0
    if r.s.method == "qlora" and r.dtypes.quant in PACKED and not r.gc and r.pc.layers > 1:
        x = _packed_saved(r) * (r.pc.layers - 1)
    return Term(
        "quantized Linears' saved tensors",
        x,
        (BACKWARD,),
        "the other layers' fp16 weights (GPTQ) or Linear inputs (AWQ), kept for backward (no checkpointing)",
    )


def quant_label(quant: str | None) -> str:
    """NF4 / INT8 (bitsandbytes), GPTQ 4-bit, AWQ 4-bit (packed checkpoints)."""
    if quant in PACKED:
        method, bits = PACKED[quant]
        return f"{method} {bits}-bit"
    return (quant or "nf4").upper()


def distributed_buffers(r: ResolvedSetup, train: Trainables, shards: Placement) -> tuple[Term, Term]:
    """(DDP gradient buckets: static, the sharding engines' live buffers: every phase)."""
    s, n = r.s, shards.n
    static = live = 0.0
    static_note = note = ""
    if s.strategy == "ddp" and n > 1 and not s.gradient_as_bucket_view:
        static = train.count * train.grad_bytes
        static_note = "DDP gradient buckets (a second copy of the grads; gradient_as_bucket_view=False)"
    elif s.strategy in ("zero1", "zero2") and n > 1:
        rb = s.ds_reduce_bucket_size if s.ds_reduce_bucket_size is not None else K.DS_BUCKET_DEFAULT
        agb = s.ds_allgather_bucket_size if s.ds_allgather_bucket_size is not None else K.DS_BUCKET_DEFAULT
        if s.ds_reduce_bucket_size is None or s.ds_allgather_bucket_size is None:
            r.assumptions.append(
                "DeepSpeed bucket sizes unset: assumed the 5e8-element defaults (~0.93 GiB each in 16-bit)"
            )
        live = 2.0 * (min(rb, train.count) + min(agb, train.count))
        note = "ZeRO reduce + all-gather buckets"
    elif s.strategy == "zero3":
        # the stage-3 engine gathers, prefetches and buckets whatever the world size (one GPU included)
        live, note = _zero3_working_set(r, train, n)
    elif r.fsdp and n > 1:
        live, note = _fsdp_working_set(r, train)
    return (
        Term("DDP gradient buckets", static, ("static",), static_note),
        Term("distributed buffers", live, ("every phase",), note),
    )


def _zero3_working_set(r: ResolvedSetup, train: Trainables, n: int) -> tuple[float, str]:
    """What DeepSpeed ZeRO-3 holds on each GPU beyond the shards: its gradient bucket and the gathered
    parameters (read from deepspeed bf6b9802, the PR #2653 that PEFT's 2022-12 README requires, and 0.16.5).

    - The contiguous gradient bucket is allocated whole, reduce_bucket_size elements in the dtype of the
      optimizer's first parameter, however few parameters train (stage3.py:385-389 @bf6b9802,
      0.16.5 stage3.py:537-540 `torch.empty(self.reduce_bucket_size, dtype=self.dtype)`).
    - Parameters are gathered in the module's dtype. Every hooked module's forward/backward fetch also
      prefetches up to stage3_prefetch_bucket_size further elements, bounded by stage3_max_live_parameters
      minus those available, adding whole parameters while under that bound (replayed over the model's
      module calls in advisor.estimate.memory.zero3).
    - A parameter's gather copies its partition to the device beside the gathered buffer
      (partition_parameters.py:836-851 @bf6b9802, 0.16.5 :1246-1266 `param_ds_tensor.to(device)`): with
      offload_param that is a second copy of 1/n of the largest parameter while it is in flight."""
    s, pc = r.s, r.pc
    rb = s.ds_reduce_bucket_size if s.ds_reduce_bucket_size is not None else K.DS_BUCKET_DEFAULT
    pf = s.ds_prefetch_bucket_size if s.ds_prefetch_bucket_size is not None else K.DS_PREFETCH_DEFAULT
    ml = s.ds_max_live_parameters if s.ds_max_live_parameters is not None else K.DS_MAX_LIVE_DEFAULT
    if s.ds_reduce_bucket_size is None or s.ds_prefetch_bucket_size is None:
        h2 = float(pc.hidden * pc.hidden)
        r.assumptions.append(
            "ZeRO-3 bucket sizes unset: assumed DeepSpeed defaults (reduce 5e8, prefetch 5e7, max live 1e9 "
            f"elements; HF 'auto' would use h^2 = {h2:.2g} and 0.9 h^2)"
        )
    largest = float(max(pc.largest_tensor, 1))
    adapted = set(r.targets) if not r.full else set()
    calls = forward_calls(pc, adapted, K.DS_PERSISTENCE_DEFAULT)
    gathered = min(gathered_peak(calls, pf, ml), float(pc.total))
    bucket = rb
    in_flight = largest / max(n, 1) if s.offload_params not in ("none", None) else 0.0
    live = r.wb * (gathered + in_flight) + r.wb * bucket
    note = (
        f"ZeRO-3 gathered params ({gathered / 1e9:.3g}B: prefetched ahead up to max_live {ml / 1e9:.3g}B"
        + (f", + the largest's partition copied in from the CPU, {in_flight / 1e9:.3g}B" if in_flight else "")
        + f") + the {rb / 1e9:.2g}B-element gradient bucket, {r.wb} B each"
    )
    return live, note


def _fsdp_working_set(r: ResolvedSetup, train: Trainables) -> tuple[float, str]:
    s, pc, n = r.s, r.pc, r.n
    # unsharded (gathered) bytes: the compute dtype (MixedPrecision param_dtype) for 16-bit weights, the
    # quantized storage for QLoRA's Linears
    gather_b = r.cb
    lora_layer = train.lora / max(pc.layers, 1)
    if train.quantized:
        quant_layer = train.quantized / max(pc.layers, 1)
        # uint8 4-bit weights FSDP2 leaves whole are not gathered (they are counted with the weights)
        gathered_quant = quant_layer * train.quant_bytes if s.quantized_sharded else 0.0
        unit = gathered_quant + (pc.per_layer - quant_layer) * train.unquant_bytes + lora_layer * r.ab
        head_b = train.unquant_bytes
    else:
        unit = pc.per_layer * gather_b + lora_layer * r.ab
        head_b = gather_b
    unit_grad = (pc.per_layer if r.full else lora_layer) * max(train.grad_bytes, 2)
    # HF/accelerate auto-wrap leaves embeddings + lm_head in the root unit (gathered for the whole step);
    # torchtune's big-model recipes shard tok_embeddings and output separately (custom_sharded_layers).
    if r.hf:
        root = (pc.embedding + pc.lm_head + pc.final_norm) * head_b
    else:
        root = max(pc.embedding, pc.lm_head) * head_b
    if s.strategy == "fsdp_grad_op":
        live = unit * pc.layers + (pc.embedding + pc.lm_head) * head_b + unit_grad
        note = "SHARD_GRAD_OP: params stay unsharded from forward to backward"
    else:
        live = root + K.FSDP_LIVE_UNITS * unit + unit_grad
        note = (
            f"FSDP working set: {'embeddings + lm_head' if r.hf else 'embedding or lm_head'} + "
            f"{K.FSDP_LIVE_UNITS} unsharded layers + one unsharded layer gradient"
        )
    flat = mixed_units(r)
    if s.grad_accum > 1 and (r.full or flat) and not s.sync_each_batch:
        live += (pc.total if r.full else flat) * 2.0 * (1 - 1 / n)
        r.assumptions.append(
            "FSDP with gradient accumulation: assumed accelerate's no_sync, which keeps unsharded "
            "gradients between micro-batches (accelerate issue #2035; FSDP2: "
            "set_requires_gradient_sync(False) from accelerate 1.11.0; sync_each_batch=True turns it off, "
            "accelerate 1.16 accelerator.py:1245-1257)"
        )
    return live, note
