"""A LLaVA-style run's vision tower (a CLIP image encoder) and projector: shapes and exact parameter counts.

The tower is transformers' CLIPVisionModel (LLaVA clip_encoder.py:30), whose parameters are (transformers
5.25 models/clip/modeling_clip.py):
    embeddings     class_embedding h (:146) + patch Conv2d(channels, h, p, stride p, bias=False) (:148-154)
                   + position Embedding(patches + 1, h) (:157-158)
    pre_layrnorm, post_layernorm   LayerNorm(h) each, weight and bias (:595, :597)
    per layer      q/k/v/out_proj Linear(h, h) with bias (:293-296), fc1 Linear(h, I), fc2 Linear(I, h)
                   (:343-344), layer_norm1/2 LayerNorm(h) (:358, :360)
The projector is LLaVA's build_vision_projector (multimodal_projector/builder.py:33-51): `linear` is one
Linear(mm_hidden, h_lm); `mlp{N}x_gelu` is Linear(mm_hidden, h_lm) then N-1 times GELU + Linear(h_lm, h_lm);
`identity` has no parameters. Shapes of the known towers: advisor/data/models/vision_towers.json.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from advisor.core.records import record

__all__ = ["Projector", "VisionTower", "projector", "vision_tower"]

_MLP_GELU = re.compile(r"^mlp(\d+)x_gelu$")  # builder.py:39


@record(frozen=True, slots=True, kw_only=True)
class VisionTower:
    """One CLIP image tower's shapes, from its CLIPVisionConfig keys."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    image_size: int
    patch_size: int
    channels: int = 3

    @property
    def patches(self) -> int:
        """Patch tokens per image (clip_encoder.py:88 num_patches; modeling_clip.py:156)."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def tokens(self) -> int:
        """Tokens the encoder runs per image: the patches and the class token (modeling_clip.py:157)."""
        return self.patches + 1

    @property
    def per_layer(self) -> int:
        h, i = self.hidden, self.intermediate
        return 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h

    @property
    def params(self) -> int:
        h = self.hidden
        embeddings = h + self.channels * self.patch_size * self.patch_size * h + self.tokens * h
        return embeddings + 2 * 2 * h + self.layers * self.per_layer


@record(frozen=True, slots=True, kw_only=True)
class Projector:
    """LLaVA's mm_projector: its parameters and the widths of the tensors its backward keeps per token."""

    kind: str
    params: int
    # per image token: each Linear's input (saved for its weight gradient) and each GELU's input
    saved_widths: list[int]
    linears: int


def tower_from_config(name: str, config: dict[str, Any]) -> VisionTower:
    """A VisionTower from CLIPVisionConfig keys. Raises KeyError or TypeError for a config without them."""
    return VisionTower(
        name=name,
        hidden=int(config["hidden_size"]),
        intermediate=int(config["intermediate_size"]),
        layers=int(config["num_hidden_layers"]),
        heads=int(config["num_attention_heads"]),
        image_size=int(config["image_size"]),
        patch_size=int(config["patch_size"]),
        channels=int(config.get("num_channels", 3)),
    )


@lru_cache(maxsize=1)
def _towers() -> dict[str, dict[str, Any]]:
    from advisor import PACKAGE_DIR

    data = json.loads((PACKAGE_DIR / "data" / "models" / "vision_towers.json").read_text(encoding="utf-8"))
    return dict(data["towers"])


def vision_tower(name: str) -> VisionTower | None:
    """The catalog's tower of that Hub id (case-insensitive), or None."""
    key = name.strip().rstrip("/").lower()
    for tower_id, config in _towers().items():
        if tower_id.lower() == key:
            return tower_from_config(tower_id, config)
    return None


def projector(kind: str, mm_hidden: int, hidden: int) -> Projector | None:
    """LLaVA's projector of that mm_projector_type (builder.py:33-51), or None for a type it raises on."""
    if kind == "linear":
        return Projector(kind=kind, params=mm_hidden * hidden + hidden, saved_widths=[mm_hidden], linears=1)
    if kind == "identity":
        return Projector(kind=kind, params=0, saved_widths=[], linears=0)
    m = _MLP_GELU.match(kind)
    if m is None or int(m.group(1)) < 1:
        return None
    depth = int(m.group(1))
    params = mm_hidden * hidden + hidden + (depth - 1) * (hidden * hidden + hidden)
    # the first Linear keeps its input; each GELU keeps its input and the Linear after it the GELU's output
    widths = [mm_hidden] + [hidden, hidden] * (depth - 1)
    return Projector(kind=kind, params=params, saved_widths=widths, linears=depth)
