"""How each optimizer stores its state: bytes per trainable parameter and step temporaries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from advisor.core.records import record

if TYPE_CHECKING:
    from advisor.estimate.params import LinearShape, ParamCount

__all__ = [
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


# GaLore through the HF Trainer (transformers 5.24 trainer_optimizer.py:351-378): galore_torch's GaLoreAdamW
# for both names; the layer-wise one steps each parameter in its post-accumulate-grad hook and zeroes its
# gradient there (trainer_optimizer.py:166-179), as optimizer_in_backward. rank defaults to 128
# (trainer_optimizer.py:370). The 8-bit and Adafactor variants are not modelled.
LOW_RANK_OPTIMIZERS = {"galore_adamw": "GaLore AdamW", "galore_adamw_layerwise": "GaLore AdamW (layer-wise)"}
GALORE_DEFAULT_RANK = 128


def _low_rank_key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def low_rank_profile(
    name: str, pc: ParamCount, rank: int | None, targets: list[str] | None, a: list[str]
) -> OptimizerProfile | None:
    """GaLore's states as a multiple of the model's parameters, from the model's shapes: the Trainer puts
    the weight of every nn.Linear that `optim_target_modules` names in GaLore's group and every other
    parameter in a plain AdamW group (trainer_optimizer.py:137-162). For a targeted m x n weight (m >= n),
    GaLoreProjector keeps the rank x n orthogonal matrix (galore_torch galore_projector.py project /
    get_orthogonal_matrix: Vh[:rank], cast back to the weight's dtype) and AdamW's exp_avg / exp_avg_sq on
    the projected m x rank gradient: rank * (2m + n) elements; the others 2 per parameter, all in the
    parameter dtype. None when the name is not GaLore or no Linear is matched."""
    key = _low_rank_key(name)
    if key not in LOW_RANK_OPTIMIZERS or not targets or pc.total <= 0:
        return None
    r = rank if rank is not None and rank > 0 else GALORE_DEFAULT_RANK
    if rank is None:
        a.append(f"GaLore rank not given in optim_args: the Trainer's default {GALORE_DEFAULT_RANK}")
    hit = galore_targets(pc, targets)
    if not hit:
        return None
    low_rank = targeted_weights = 0
    for lin, times in hit:
        big, small = max(lin.d_in, lin.d_out), min(lin.d_in, lin.d_out)
        rr = min(r, small)
        low_rank += times * rr * (2 * big + small)
        targeted_weights += times * lin.d_in * lin.d_out
    elements = low_rank + 2 * (pc.total - targeted_weights)
    names = ", ".join(sorted({lin.name for lin, _ in hit}))
    label = (
        f"{LOW_RANK_OPTIMIZERS[key]} rank {r} on {names}: rank x (2 max + min dim) per targeted weight, "
        "AdamW's 2 states elsewhere"
    )
    return OptimizerProfile(label, None, elements / pc.total, "per_param")


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
