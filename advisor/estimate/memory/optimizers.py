"""How each optimizer stores its state: bytes per trainable parameter and step temporaries."""

from __future__ import annotations

from typing import Literal

from advisor.core.records import record

__all__ = ["OptimizerProfile", "has_optimizer_profile", "optimizer_profile"]


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
