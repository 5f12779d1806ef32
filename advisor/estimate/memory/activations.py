"""Saved activations, backward working set and logits/loss bytes per token, as autograd keeps them in
the Hugging Face implementations (fp32 RMSNorm upcasts, SDPA/FA2 vs eager, per-call autocast casts, PEFT
adapter input casts) and in torchtune's recipes. memory-model.md sections 6.4-6.5.

Every tensor's size follows the dtype facts: matmul outputs and attention tensors the compute dtype
(`r.cb`), the residual stream and norm inputs the storage dtype (`r.br`), adapter inputs the adapter dtype.
"""

from __future__ import annotations

from advisor.core.records import replace
from advisor.estimate import constants as K
from advisor.estimate.memory.resolve import ResolvedSetup
from advisor.estimate.params import LinearShape

__all__ = [
    "adapter_call_peak",
    "first_layer_inputs",
    "frozen_layer_bytes",
    "layer_bytes",
    "logits_bytes",
    "outside_bytes",
]

# Model types whose attention concatenates the rotated and the pass-through halves of q and k (partial
# rotary), so the query reaching attention is a new contiguous (b, heads, s, d) tensor (transformers 5.24
# models/gpt_neox/modeling_gpt_neox.py:138, phi3/modeling_phi3.py:184, phi/modeling_phi.py:212,
# stablelm/modeling_stablelm.py:292; transformers 5.25 glm4/modeling_glm4.py:193). Flash attention allocates
# its output like the query (torch/_meta_registrations.py:6122 and :6389 `torch.empty_like(query)`), so the
# output is (b, heads, s, d) in memory and integrations/sdpa_attention.py:195 `transpose(1, 2).contiguous()`
# copies it.
ROTARY_CAT = frozenset({"glm4", "gpt_neox", "phi", "phi3", "stablelm"})


def _fused_qkv_extra(r: ResolvedSetup) -> int:
    """Elements per token that a fused q/k/v projection keeps beyond v: v is a slice of the fused output
    (phi3/modeling_phi3.py:219-223, gpt_neox/modeling_gpt_neox.py:195-196 chunk), so the attention op saving
    v keeps the whole storage alive (q and k are rotated into new tensors)."""
    pc = r.pc
    fused = any(
        lin.feeds_from == "attn_in" and lin.d_out == pc.q_dim + 2 * pc.kv_dim and lin.count == 1
        for lin in pc.linears
    )
    return pc.q_dim + pc.kv_dim if fused else 0


def _lin_input(r: ResolvedSetup, d: int, src: int, consumers: list[LinearShape]) -> float:
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


def _norm_out_bytes(r: ResolvedSetup) -> int:
    """dtype bytes of a norm's output (the input of the next Linear)."""
    if r.pc.norm == "layer" and r.autocast:
        return 4  # autocast's fp32 op list includes layer_norm
    return r.br


def _norm_saved(r: ResolvedSetup, h: int, trainable: bool) -> float:
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


def _attn_core(r: ResolvedSetup) -> float:
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
        if pc.attn_logit_softcapping:
            # the scores' tanh saves its output for backward (transformers 5.24 gemma2/modeling_gemma2.py:197
            # `torch.tanh(attn_weights)`; tanh_backward uses the result), in the matmul's dtype
            per_score += mm_in
        # eager: the P @ V matmul saves P and V, not its output; o_proj's input copy is counted by the caller
        return cb * (q + kv_saved + _fused_qkv_extra(r)) + per_score * nh * r.seq
    qk_norm = (4 + (r.br if r.full else 0)) * (q + kv) if pc.qk_norm else 0
    return cb * (q + 2 * kv + _fused_qkv_extra(r)) + cb * q + 4 * nh + qk_norm


def layer_bytes(r: ResolvedSetup) -> tuple[float, float]:
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
    saved = pc.norms_per_layer * _norm_saved(r, h, trainable=full)
    norm_out = _norm_out_bytes(r)
    saved += _lin_input(r, h, norm_out, by_src.get("attn_in", []))
    saved += _attn_core(r)
    if not (r.full and r.attn != "eager") or pc.model_type in ROTARY_CAT:
        # fused attention (SDPA flash / efficient, FA2) returns its output in (b, s, heads, d) layout, so
        # transformers' transpose(1, 2).contiguous() + reshape (integrations/sdpa_attention.py) is a view:
        # o_proj saves the tensor attention already saved (counted in _attn_core); eager's P @ V output is
        # (b, heads, s, d) and the contiguous copy is a new tensor, as is any output laid out like a
        # concatenated query (ROTARY_CAT). Adapters save their own casts.
        saved += _lin_input(r, pc.q_dim, r.cb, by_src.get("attn_out", []))
    saved += _lin_input(r, h, norm_out, by_src.get("mlp_in", []))
    lin_out = r.lin_out  # Linear outputs that feed pointwise ops
    if pc.block == "gated":
        if pc.moe_experts:
            active, expert_i = pc.experts_computed, pc.expert_intermediate
            experts = [lin for lin in pc.linears if lin.name.startswith("experts.")]
            e_in = [lin for lin in experts if lin.feeds_from == "mlp_in"]
            e_act = [lin for lin in experts if lin.feeds_from == "mlp_act"]
            per_expert: float = (2 if r.s.liger_kernel else 3) * lin_out * expert_i
            per_expert += (
                _lin_input(r, h, norm_out, e_in) + _lin_input(r, expert_i, lin_out, e_act) + lin_out * h
            )
            saved += active * per_expert + 4 * pc.moe_experts
            if pc.shared_expert_intermediate:
                shared_i = pc.shared_expert_intermediate
                shared = [lin for lin in pc.linears if lin.name.startswith("shared_expert.")]
                saved += 3 * lin_out * shared_i + _lin_input(
                    r, h, norm_out, [x for x in shared if x.feeds_from == "mlp_in"]
                )
                saved += (
                    _lin_input(r, shared_i, lin_out, [x for x in shared if x.feeds_from == "mlp_act"])
                    + 2 * lin_out
                )
            mlp_width = active * expert_i
        else:
            i = pc.intermediate
            saved += (
                (2 if r.s.liger_kernel else 3) * lin_out * i
            )  # gate out, act out, up out (mul saves both)
            saved += _lin_input(r, i, lin_out, by_src.get("mlp_act", []))
            mlp_width = i
    else:
        i = pc.intermediate
        saved += lin_out * i  # fc1 output, saved by GELU
        saved += _lin_input(r, i, lin_out, by_src.get("mlp_act", []))
        mlp_width = i
    if pc.hidden_dropout > 0:
        saved += 2 * h  # two residual-branch dropout masks (1 byte each)
    work = r.cb * (3 * mlp_width + 2 * h)
    if r.attn == "eager":
        work += 6 * pc.heads * r.seq
    return saved, work


def frozen_layer_bytes(r: ResolvedSetup) -> float:
    """Saved activation bytes per token of a decoder layer with no trainable parameter whose input requires
    grad, run without checkpointing: what its ops save for the input's gradient only (a frozen Linear keeps
    its weight, not its input; the norms save their fp32 input): layer_bytes as for adapters on no module."""
    frozen = replace(
        r, s=replace(r.s, method="lora", layer_trainable=None, trainable_layers=None), targets=set(), saved=0
    )
    return layer_bytes(frozen)[0]


def adapter_call_peak(r: ResolvedSetup, quantized: bool) -> float:
    """Bytes live beside a decoder layer's saved tensors while its forward, or its recompute under
    checkpointing, runs the costliest adapter-wrapped (or, `quantized`, 4-bit) Linear.

    The layer's Python frames still hold the residual, the block input and the Linear's input; the base
    output exists; PEFT's adapter branch `x = self._cast_input_dtype(x, lora_A.weight.dtype)` makes a new
    tensor when x is not in the adapter dtype (peft 0.21 tuners/tuners_utils.py:2233-2235), and
    `lora_B(lora_A(dropout(x)))` a dropout output of that dtype (tuners/lora/layer.py:1088-1102); what
    lora_A saves, and the mask, are in layer_bytes, the rest dies after the call. A 4-bit base dequantizes
    its weight for the call (bitsandbytes MatMul4Bit.forward `linear(A, dequantize_4bit(B).to(A.dtype).t())`).
    Under checkpointing the layer output's gradient is live too: the recompute runs inside backward.
    0 for a full fine-tune, whose backward working set (layer_bytes) is larger."""
    if r.full or not r.hf:
        return 0.0
    pc = r.pc
    h, ab = pc.hidden, r.ab
    norm_out = _norm_out_bytes(r)
    frame = r.br * h + (r.cb * h if r.gc else 0)  # the residual (+ the incoming gradient)
    drop = r.lora_dropout > 0
    best = 0.0
    for lin in pc.linears:
        if lin.name == "router" or lin.name.startswith(("experts.", "shared_expert")):
            continue
        d = lin.d_in
        if lin.feeds_from == "mlp_act":  # the MLP frame holds its input and the product it feeds
            src = r.lin_out
            held = norm_out * h + src * d
        elif lin.feeds_from == "attn_out":
            src = r.cb
            held = src * d
        else:
            src = norm_out
            held = src * d
        base = (frame + held + r.cb * lin.d_out) * r.tokens
        if quantized:
            best = max(best, base + r.cb * d * lin.d_out)  # the dequantized weight, during the base call
        if lin.name in r.targets and not r.s.torch_compile:  # compiled, the casts fuse into the kernels
            cast = ab * d if src != ab else 0
            # autocast: lora_A saves autocast's 16-bit cast, PEFT's cast and the dropout output die; without:
            # lora_A saves its input, the dropout output, or PEFT's cast when there is no dropout
            branch = (cast + (ab * d if drop else 0)) if r.autocast else (cast if drop else 0)
            best = max(best, base + branch * r.tokens)
    return float(best)


def first_layer_inputs(r: ResolvedSetup) -> list[LinearShape]:
    """The Linears of a decoder layer that read its input through a norm (all of them in a parallel block)."""
    pc = r.pc
    src = ("attn_in", "mlp_in") if pc.parallel_block else ("attn_in",)
    return [
        lin for lin in pc.linears if lin.feeds_from in src and not lin.name.startswith(("experts.", "router"))
    ]


def outside_bytes(r: ResolvedSetup) -> float:
    """Saved activations outside the decoder layers, per token."""
    pc = r.pc
    h = pc.hidden
    out = 0.0
    if pc.embd_dropout > 0:
        out += h
    if pc.block == "bert":
        out += _norm_saved(r, h, trainable=r.full)
    if not r.full and not r.gc and not r.prepare_kbit and not r.saved:
        # adapters without checkpointing: nothing makes the frozen embedding's output require grad (the
        # Trainer calls enable_input_require_grads only with checkpointing, transformers 5.24
        # trainer.py _activate_gradient_checkpointing; PEFT's prepare_model_for_kbit_training does too), so
        # the norms the first layer applies to it save nothing (autograd records no node)
        firsts = pc.norms_per_layer if pc.parallel_block else 1
        out -= firsts * _norm_saved(r, h, trainable=False)
        if r.lora_dropout > 0:  # nor do the dropouts of the adapters that read it: no mask recorded
            out -= sum(1.0 * h for lin in first_layer_inputs(r) if lin.name in r.targets)
    if r.s.task == "causal_lm":
        out += _norm_saved(r, h, trainable=r.full)  # final norm
        if r.full and r.s.loss not in ("fused", "cce") and not r.s.liger_kernel:
            out += (2 if r.autocast else r.br) * h  # lm_head input
    return out


def normalized_head_bytes(autocast: bool, weight_bytes: int) -> int:
    """Bytes per lm_head weight element that a normalising head (Baichuan 2's NormHead: `linear(h,
    normalize(W))`) saves from its forward to its backward: the normalised copy `linear` keeps. normalize is
    `W / W.norm(dim=1)` (torch/nn/functional.py normalize); under CUDA autocast the norm runs with an fp32
    dtype (linalg_vector_norm, fp32_set_opt_dtype in aten/src/ATen/autocast_mode.cpp), so the division
    promotes to an fp32 copy that `linear` casts to 16 bits and saves (a non-leaf's cast is not cached);
    without autocast the copy is in the weight's dtype. norm's and the division's backward keep only W
    itself and the V x 1 norms, whether W trains or not."""
    return 2 if autocast else weight_bytes


def logits_bytes(r: ResolvedSetup) -> tuple[float, float, str]:
    """(peak bytes during the loss backward, bytes left when the lm_head grad is formed, label)."""
    peak, after, label = _logits_bytes(r)
    pc = r.pc
    if pc.normalized_head and r.s.task == "causal_lm":
        head = float(normalized_head_bytes(r.autocast, r.wb) * pc.vocab * pc.hidden)
        return peak + head, after + head, label + " + the normalised lm_head weight saved for backward"
    return peak, after, label


def _logits_bytes(r: ResolvedSetup) -> tuple[float, float, str]:
    pc = r.pc
    tokens = r.tokens
    if r.s.task != "causal_lm":
        return 0.0, 0.0, "classification head (negligible)"
    vocab = pc.vocab
    if r.s.loss == "cce":
        x = (r.br * pc.hidden + K.CCE_PER_TOKEN) * tokens
        return x, x, "cut-cross-entropy: its input's gradient + fp32 LSE per token, never tokens x vocab"
    if r.s.loss == "fused" or r.s.liger_kernel:
        x = K.LOGITS_FUSED_PER_H * pc.hidden * tokens
        return x, x, "fused linear+CE: never materialises tokens x vocab"
    if r.s.loss == "chunked":
        per = K.LOGITS_CHUNKED_COMPILED if r.s.torch_compile else K.LOGITS_CHUNKED
        label = (
            f"chunked CE ({K.CE_CHUNKS} chunks{', compiled' if r.s.torch_compile else ''}): {per:.2f} B/logit"
        )
        return per * tokens * vocab, 2.0 * tokens * vocab * (K.CE_CHUNKS - 1) / K.CE_CHUNKS, label
    if r.s.loss == "own" and r.dtypes.autocast is None:
        # the loop's own cross-entropy on b-byte logits (advisor/facts/loop_loss.py): the logits, their
        # flattened copy and log_softmax's output in the forward; log_softmax's output and the two loss
        # gradients in the backward; softcapping keeps its tanh output (Gemma 2)
        b = float(r.s.own_loss_logit_bytes)
        per = 3.0 * b + (b if pc.final_logit_softcapping else 0.0)
        return (
            per * tokens * vocab,
            b * tokens * vocab,
            f"the loop's own cross-entropy: {per:.0f} B per token x vocab",
        )
    per = K.LOGITS_STANDARD + (K.LOGITS_SOFTCAP_EXTRA if pc.final_logit_softcapping else 0.0)
    return (
        per * tokens * vocab,
        2.0 * tokens * vocab,
        f"fp32-upcast cross-entropy: {per:.0f} B per token x vocab",
    )
