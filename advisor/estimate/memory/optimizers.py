"""How each optimizer stores its state: bytes per trainable parameter and step temporaries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from advisor.core.records import record

if TYPE_CHECKING:
    from advisor.estimate.params import LinearShape, ParamCount

__all__ = [
    "LOW_RANK_FAILS",
    "LOW_RANK_OPTIMIZERS",
    "OptimizerProfile",
    "has_optimizer_profile",
    "low_rank_profile",
    "optimizer_profile",
]


@record(frozen=True)
class OptimizerProfile:
    label: str
    states: float | None  # bytes/param fixed, or None = `mult` x state dtype
    mult: float = 0.0
    temp: Literal["foreach", "per_param", "none", "adafactor"] = "none"
    paged: bool = False
    factored: bool = False

    # the state follows the parameter dtype (torch optimizers: torch/optim/adamw.py zeros_like(param)),
    # or has a fixed size (bitsandbytes / torchao quantized states)
    @property
    def follows_param_dtype(self) -> bool:
        return self.states is None


_OPTS: dict[str, OptimizerProfile] = {
    "adamw_torch": OptimizerProfile("torch AdamW (foreach)", None, 2, "foreach"),
    "adamw_torch_fused": OptimizerProfile("torch AdamW (fused)", None, 2, "none"),
    "adamw_hf": OptimizerProfile("transformers AdamW (per-parameter loop)", None, 2, "per_param"),
    "adamw_apex_fused": OptimizerProfile("apex FusedAdam", None, 2, "none"),
    # a DeepSpeed config's optimizer block (advisor/facts/deepspeed_optimizer.py)
    "deepspeed_fused_adam": OptimizerProfile("DeepSpeed FusedAdam", None, 2, "none"),
    "deepspeed_cpu_adam": OptimizerProfile("DeepSpeedCPUAdam", None, 2, "none"),
    "deepspeed_fused_lamb": OptimizerProfile("DeepSpeed FusedLamb", None, 2, "none"),
    "deepspeed_fused_lion": OptimizerProfile("DeepSpeed FusedLion", None, 1, "none"),
    "adamw_torch_xla": OptimizerProfile("torch-xla AdamW", None, 2, "per_param"),
    "adamw_anyprecision": OptimizerProfile("AnyPrecisionAdamW", None, 2, "per_param"),
    "adamw_8bit": OptimizerProfile("bitsandbytes AdamW 8-bit", 2.0),
    "paged_adamw_8bit": OptimizerProfile("bitsandbytes paged AdamW 8-bit", 2.0, paged=True),
    "paged_adamw_32bit": OptimizerProfile("bitsandbytes paged AdamW 32-bit", 8.0, paged=True),
    "adamw_torch_8bit": OptimizerProfile("torchao AdamW 8-bit", 2.0 * (1 + 4 / 256)),
    "adamw_torch_4bit": OptimizerProfile("torchao AdamW 4-bit", 1.0 * (1 + 8 / 128)),
    "lion_32bit": OptimizerProfile("bitsandbytes Lion 32-bit", 4.0),
    "lion_8bit": OptimizerProfile("bitsandbytes Lion 8-bit", 1.0),
    "paged_lion_32bit": OptimizerProfile("bitsandbytes paged Lion 32-bit", 4.0, paged=True),
    "paged_lion_8bit": OptimizerProfile("bitsandbytes paged Lion 8-bit", 1.0, paged=True),
    "adafactor": OptimizerProfile(
        "Adafactor (factored second moment, no momentum)", 0.0, temp="adafactor", factored=True
    ),
    "sgd": OptimizerProfile("SGD (HF default: no momentum)", 0.0),
    "rmsprop": OptimizerProfile("RMSprop", None, 1, "foreach"),
    "rmsprop_bnb_8bit": OptimizerProfile("bitsandbytes RMSprop 8-bit", 1.0),
    "rmsprop_bnb_32bit": OptimizerProfile("bitsandbytes RMSprop 32-bit", 4.0),
    "adagrad": OptimizerProfile("Adagrad", None, 1, "foreach"),
    "ademamix": OptimizerProfile("AdEMAMix (3 states)", None, 3, "foreach"),
    "ademamix_8bit": OptimizerProfile("bitsandbytes AdEMAMix 8-bit", 3.0),
    "paged_ademamix_8bit": OptimizerProfile("bitsandbytes paged AdEMAMix 8-bit", 3.0, paged=True),
    "schedule_free_adamw": OptimizerProfile("schedule-free AdamW", None, 2, "foreach"),
    "schedule_free_sgd": OptimizerProfile("schedule-free SGD", None, 1, "foreach"),
    "lomo": OptimizerProfile("LOMO (update fused into backward)", 0.0),
    "adalomo": OptimizerProfile("AdaLomo (factored, fused into backward)", 0.0, factored=True),
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


def optimizer_profile(name: str) -> OptimizerProfile | None:
    key = name.strip().lower().replace("-", "_")
    key = _OPT_ALIASES.get(key, key)
    if key in _OPTS:
        return _OPTS[key]
    tail = key.rsplit(".", 1)[-1]
    tail = _OPT_ALIASES.get(tail, tail)
    return _OPTS.get(tail)  # None: no profile (GaLore, APOLLO, custom classes) -> counted as AdamW, stated


def has_optimizer_profile(name: str) -> bool:
    """True when the memory model knows how `name` (an HF `optim` string or class path) stores its state."""
    return optimizer_profile(name) is not None


# GaLore through the HF Trainer (transformers 5.25 trainer_optimizer.py:351-381): galore_torch 1.0's
# GaLoreAdamW, GaLoreAdamW8bit or GaLoreAdafactor; the layer-wise names step each parameter in its
# post-accumulate-grad hook and zero its gradient there (trainer_optimizer.py:166-179), as
# optimizer_in_backward. rank defaults to 128 (trainer_optimizer.py:370).
LOW_RANK_OPTIMIZERS = {
    "galore_adamw": "GaLore AdamW",
    "galore_adamw_layerwise": "GaLore AdamW (layer-wise)",
    "galore_adamw_8bit": "GaLore AdamW 8-bit",
    "galore_adamw_8bit_layerwise": "GaLore AdamW 8-bit (layer-wise)",
    "galore_adafactor": "GaLore Adafactor",
}
# galore_adafactor_layerwise: the Trainer builds the per-parameter optimizers with {"lr": learning_rate}
# (trainer.py:1409) before it sets relative_step=False, which it does only for the non-layer-wise name
# (trainer_optimizer.py:379-380), and galore_torch adafactor.py:112-113 raises ValueError on a manual lr
# with relative_step=True
LOW_RANK_FAILS = {
    "galore_adafactor_layerwise": (
        "the Trainer raises ValueError: it builds each layer-wise GaLoreAdafactor with lr and "
        "relative_step=True (transformers trainer_optimizer.py:379-380, galore_torch adafactor.py:112-113)"
    )
}
GALORE_DEFAULT_RANK = 128
# bitsandbytes Optimizer2State keeps a state in 8 bits when the tensor has at least min_8bit_size
# elements (galore_torch adamw8bit.py:9: 4096), else in fp32
_MIN_8BIT = 4096


def _low_rank_key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def low_rank_profile(
    name: str,
    pc: ParamCount,
    rank: int | None,
    targets: list[str] | None,
    a: list[str],
    param_bytes: int = 2,
) -> OptimizerProfile | None:
    """GaLore's states as a multiple of the model's parameters, from the model's shapes: the Trainer puts
    the weight of every nn.Linear that `optim_target_modules` names in GaLore's group and every other
    parameter in a plain group of the same optimizer (trainer_optimizer.py:137-162). For a targeted
    m x n weight (big = max, small = min), GaLoreProjector keeps the rank x small orthogonal matrix
    (galore_torch galore_projector.py project / get_orthogonal_matrix: Vh[:rank], cast back to the weight's
    dtype), and the optimizer keeps its moments on the projected big x rank gradient:
    - AdamW (adamw.py): exp_avg / exp_avg_sq, 2 x big x rank, in the parameter dtype; 2 per other parameter;
    - AdamW 8-bit (adamw8bit.py:52-61: the projected gradient replaces p.data before bitsandbytes'
      init_state): the two moments in 1 byte each, other tensors too when >= 4096 elements, else fp32;
      the block-wise absmax scales (a few per mille) are left out as for adamw_8bit;
    - Adafactor (adafactor.py:200-209, the Trainer's beta1 None: no exp_avg): factored exp_avg_sq_row /
      _col, big + rank per projected weight, rows + columns of every other matrix, a full copy of every
      vector, in the gradient's dtype.
    `param_bytes`: bytes per element of the trainable parameters (the projector's and the moments' dtype).
    None when the name is not GaLore or no Linear is matched."""
    key = _low_rank_key(name)
    if key not in LOW_RANK_OPTIMIZERS or not targets or pc.total <= 0:
        return None
    r = rank if rank is not None and rank > 0 else GALORE_DEFAULT_RANK
    if rank is None:
        a.append(f"GaLore rank not given in optim_args: the Trainer's default {GALORE_DEFAULT_RANK}")
    hit = galore_targets(pc, targets)
    if not hit:
        return None
    projector = moments = targeted_weights = 0
    for lin, times in hit:
        big, small = max(lin.d_in, lin.d_out), min(lin.d_in, lin.d_out)
        rr = min(r, small)
        projector += times * rr * small
        moments += times * (big + rr if key == "galore_adafactor" else 2 * big * rr)
        targeted_weights += times * lin.d_in * lin.d_out
    names = ", ".join(sorted({lin.name for lin, _ in hit}))
    head = f"{LOW_RANK_OPTIMIZERS[key]} rank {r} on {names}"
    if key == "galore_adafactor":
        others = _adafactor_untargeted(pc, hit)
        label = f"{head}: projector + factored moments (big + rank) per targeted weight, Adafactor elsewhere"
        return OptimizerProfile(label, None, (projector + moments + others) / pc.total, "none")
    rest = pc.total - targeted_weights
    if key.startswith("galore_adamw_8bit"):
        small_vectors = _small_vectors(pc)
        state = moments * 1 + 2 * (rest - small_vectors) * 1 + 2 * small_vectors * 4
        label = f"{head}: 8-bit moments on the rank-projected gradient, 8-bit AdamW elsewhere"
        return OptimizerProfile(label, (state + projector * param_bytes) / pc.total)
    label = f"{head}: rank x (2 max + min dim) per targeted weight, AdamW's 2 states elsewhere"
    return OptimizerProfile(label, None, (projector + moments + 2 * rest) / pc.total, "per_param")


def _small_vectors(pc: ParamCount) -> int:
    """Parameters in norm weights and biases under 4096 elements (fp32 states in bitsandbytes): the
    per-layer parameters no Linear weight accounts for, when the hidden size is under the threshold."""
    if pc.hidden >= _MIN_8BIT or not pc.layers:
        return 0
    return max(pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head - pc.position_embedding, 0)


def _adafactor_untargeted(pc: ParamCount, hit: list[tuple[LinearShape, int]]) -> int:
    """Adafactor state elements of the parameters GaLore does not project: rows + columns of every
    untargeted Linear weight and embedding matrix, the full size of every vector (galore_torch
    adafactor.py:203-209, factored when the tensor has 2 dimensions)."""
    hit_names = {lin.name for lin, _ in hit}
    rows_cols = 0
    for lin in pc.linears:
        if lin.name in hit_names:
            continue
        per_layer_layers = pc.moe_layers if lin.count > 1 and pc.moe_layers else pc.layers
        rows_cols += (lin.d_in + lin.d_out) * lin.count * per_layer_layers
    rows_cols += pc.vocab + pc.hidden  # the input embedding
    if pc.lm_head and "lm_head" not in hit_names:
        rows_cols += pc.vocab + pc.hidden
    vectors = max(pc.total - pc.layer_linear_weights - pc.embedding - pc.lm_head, 0)
    return rows_cols + vectors


def galore_targets(pc: ParamCount, targets: list[str]) -> list[tuple[LinearShape, int]]:
    """(Linear, how many of it in the model) for the Linear weights `optim_target_modules` names: a list
    entry matches a module whose name contains it (transformers trainer_utils.py:1042-1046
    check_target_module_exists), "all-linear" every nn.Linear, lm_head included (trainer_optimizer.py:133,
    147); a regex string is not matched here."""
    want = [t.strip() for t in targets if t.strip()]
    # "all-decoder-linear": LLaMA-Factory's galore_target "all", every Linear but lm_head
    # (llamafactory 0.9.3 model/model_utils/misc.py:31-45)
    decoder = "all-decoder-linear" in want
    all_linear = decoder or any(t.replace("_", "-").lower() == "all-linear" for t in want)
    out: list[tuple[LinearShape, int]] = []
    for lin in pc.linears:
        if lin.name == "router" and not all_linear:
            continue
        full = f"{lin.feeds_from.split('_')[0]}.{lin.name}"  # attn.c_proj, mlp.w1: the block's own name
        if all_linear or any(t in lin.name or t in full or t in lin.aliases for t in want):
            per_layer_layers = pc.moe_layers if lin.count > 1 and pc.moe_layers else pc.layers
            out.append((lin, lin.count * per_layer_layers))
    if all_linear and not decoder and pc.lm_head:
        from advisor.estimate.params import LinearShape as Shape

        head = Shape(name="lm_head", d_in=pc.hidden, d_out=pc.vocab, count=1)
        out.append((head, 1))
    return out


def per_param_step_elements(pc: ParamCount, full: bool, targets: set[str] | frozenset[str], rank: int) -> int:
    """Elements of the largest temporary set of a per-parameter optimizer loop (torch AdamW with foreach
    and fused off, transformers' old AdamW). torch 2.13 torch/optim/adam.py:544 _single_tensor_adam:
    `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` makes two parameter-sized tensors at
    once (sqrt's output and the quotient), and `denom` stays bound until the next parameter's is made: the
    peak is the previous parameter plus twice the current one, over the trainable tensors in module order
    (the embedding first, the untied lm_head last after the final norm; each LoRA A then B). Biases and
    norm weights between Linears are left out (a few KiB)."""
    seq: list[int] = []
    for lin in pc.linears:
        if lin.name == "router" or lin.name.startswith(("experts.", "shared_expert")):
            continue
        if full:
            seq += [lin.d_in * lin.d_out] * lin.count
        elif lin.name in targets:
            seq += [rank * lin.d_in, lin.d_out * rank] * lin.count
    if not seq:
        return 0
    # the layers repeat, so the last tensor of one layer precedes the first of the next
    best = max(prev + 2 * cur for prev, cur in zip([seq[-1], *seq[:-1]], seq, strict=True))
    if full:
        best = max(best, 2 * pc.embedding, pc.hidden + 2 * pc.lm_head)
    return best
