"""A model known only by the size in its name: the listed dense decoder nearest that size, its depth scaled.

When a name resolves nowhere (no local folder, no cache, not listed, no family of the catalog written in it)
but it writes a plain size (``arcee-ai/AFM-4.5B``, ``tencent/Hunyuan-0.5B-Instruct``), the estimate can still
be made from that size: weights, gradients and optimizer states scale with the parameter count, which the
name gives, while the widths that set activations do not follow from it. This module takes the widths of the
listed modern dense decoder (gated MLP, RMSNorm, grouped-query attention) whose total is nearest the size and
sets its layer count so that the total matches the name; the estimate states it as an assumption, and the
rules read ``estimates.shapes_from == "size"`` (GA401 is then a warning, never an error).

Mixture-of-experts sizes (``8x7b``, ``30b-a3b``, ``17b-16e``) are not matched: total and active parameters
alone do not say how the experts are split, and a dense stand-in would misstate both memory and time.
"""

from __future__ import annotations

import math
import re
from typing import Any

from advisor.core.records import record

__all__ = ["SizeMatch", "StandIn", "match_size", "size_in_params", "stand_ins"]

# (total, hub id, config, params per layer, params outside the layers)
StandIn = tuple[int, str, dict[str, Any], int, int]

# the families whose shapes a model of 2024-2025 most often copies (a Llama-style decoder); older layouts
# (multi-head attention, LayerNorm, GELU MLPs) are not offered as a stand-in for a model we cannot see
_STAND_IN_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3"})
# a name the catalog does not know is most likely a recent model, and recent tokenizers hold 100k-262k entries
# (Llama 3 128,256, Qwen 151,936, Mistral's Tekken 131,072, Gemma 3 262,144, OLMo 2 100,278): an older 32k
# vocabulary would understate the logits, the largest transient of a small model's step
_MIN_VOCAB = 100_000
# the catalog's dense decoders run from ~0.1B to ~405B; a size this far outside them is not extrapolated
_SPAN = 2.0
# a size in a name is rounded (Mistral-7B holds 7.24B, Qwen2.5-7B 7.62B): within this much (as a log ratio,
# about 15 %) the stand-in keeps its own depth rather than a false precision
_ROUNDING = 0.14
_PLAIN_SIZE = re.compile(r"(\d+(?:\.\d+)?)([bm])")


@record(frozen=True, slots=True)
class SizeMatch:
    hub_id: str  # the listed model whose widths are taken
    config: dict[str, Any]  # its config with num_hidden_layers scaled to the stated size
    stated: int  # the size the name writes, in parameters
    listed_total: int  # the listed model's own total
    layers: int  # the scaled layer count
    listed_layers: int

    @property
    def note(self) -> str:
        depth = (
            f" with {self.layers} layers instead of its {self.listed_layers}"
            if self.layers != self.listed_layers
            else ""
        )
        hub = self.hub_id
        return (
            f"assumed {hub}'s shapes{depth}: no listed model has the name's family and size; the name says "
            f"{_show(self.stated)}, near {hub}'s {_show(self.listed_total)}, so the weights, gradients and "
            f"optimizer states follow that size and the activations {hub}'s widths, not the model's own: "
            "give its config.json (a local folder, or --online) to estimate the model itself"
        )


def size_in_params(size: str | None) -> int | None:
    """'4.5b' -> 4_500_000_000, '135m' -> 135_000_000; None for a mixture-of-experts size or none."""
    if not size:
        return None
    m = _PLAIN_SIZE.fullmatch(size)
    if m is None:
        return None
    value = float(m.group(1)) * (1e9 if m.group(2) == "b" else 1e6)
    return int(value) if value >= 1e6 else None


def match_size(
    stated: int, candidates: tuple[StandIn, ...], family: tuple[str, ...] = ()
) -> SizeMatch | None:
    """The listed stand-in nearest ``stated`` (by the log of the totals; within about 10 % the one sharing
    more of the name's ``family`` tokens, then the plainest name), its depth scaled so its total is
    ``stated``: Mistral-Small-3.2-24B takes Mistral-Small-24B's widths before Devstral-Small's."""
    from advisor.estimate.model_names import parse_name

    if not candidates:
        return None
    lo, hi = candidates[0][0], candidates[-1][0]
    if not lo / _SPAN <= stated <= hi * _SPAN:
        return None
    wanted = set(family)

    def rank(c: StandIn) -> tuple[float, int, int, str]:
        parts = parse_name(c[1])
        nearness = round(abs(math.log(c[0] / stated)), 1)
        return nearness, -len(wanted & set(parts.before)), len(parts.tokens), c[1]

    total, hub_id, config, per_layer, fixed = min(candidates, key=rank)
    listed_layers = int(config["num_hidden_layers"])
    layers = listed_layers
    if abs(math.log(total / stated)) > _ROUNDING:
        layers = max(1, round((stated - fixed) / per_layer)) if stated > fixed else 1
    scaled = {**config, "num_hidden_layers": layers}
    return SizeMatch(hub_id, scaled, stated, total, layers, listed_layers)


def stand_ins(catalog: dict[str, dict[str, Any]]) -> tuple[StandIn, ...]:
    """(total, hub id, config, params per layer, params outside the layers), by total: the catalog's dense
    Llama-style decoders with grouped-query attention, one layer shape (no per-layer lists) and a recent
    tokenizer's vocabulary."""
    from advisor.estimate.params import UnknownModelTypeError, count_params

    out = []
    for hub_id, config in catalog.items():
        per_layer_lists = [k for k, v in config.items() if isinstance(v, list) and k != "architectures"]
        if config.get("model_type") not in _STAND_IN_TYPES or per_layer_lists:
            continue
        try:
            pc = count_params(dict(config))
        except (UnknownModelTypeError, KeyError, TypeError, ValueError):
            continue
        if pc.moe_experts or pc.kv_heads >= pc.heads or pc.block != "gated" or pc.norm != "rms":
            continue
        if pc.vocab < _MIN_VOCAB:
            continue
        out.append((pc.total, hub_id, dict(config), pc.per_layer, pc.total - pc.per_layer * pc.layers))
    return tuple(sorted(out, key=lambda c: (c[0], c[1])))


def _show(params: int) -> str:
    return f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.0f}M"
