"""The memory terms of a LLaVA-style image tower and projector (TrainingSetup.vision).

LLaVA (haotian-liu/LLaVA @c121f04) loads the tower with requires_grad_(False) (multimodal_encoder/
clip_encoder.py:31), casts it to the run's 16-bit dtype (llava/train/train.py:917) and runs it under
@torch.no_grad() with output_hidden_states=True (clip_encoder.py:45-57): it keeps no activations for
backward, but while it runs it holds every layer's hidden state (transformers 4.37.2, LLaVA's pin, CLIPEncoder
collects them in a tuple: models/clip/modeling_clip.py:614-643) and one layer's eager attention scores and
softmax (modeling_clip.py:271, 297; CLIP has no SDPA path there). That is before the language model's forward,
so it is a phase of its own ("vision forward"). Under ZeRO-3 the tower is built inside deepspeed.zero.Init
(transformers 4.37.2 modeling_utils.py:3583 from_pretrained) and partitioned like the rest; under FSDP LLaVA
keeps it outside the wrapped module (llava_arch.py:61-62), whole on every GPU.
The projector (built by initialize_vision_modules, llava_arch.py:79-80) trains unless the language model's
pretraining stage says otherwise; its Linears keep their inputs and its GELUs theirs for backward.
"""

from __future__ import annotations

from advisor.core.records import record
from advisor.estimate import constants as K
from advisor.estimate.memory.resolve import ResolvedSetup
from advisor.estimate.memory.setup import Term, VisionSetup
from advisor.estimate.memory.terms import VISION_FORWARD

__all__ = ["VISION_FORWARD", "VisionTerms", "vision_terms"]

_ZERO = ("zero1", "zero2", "zero3")


@record(frozen=True, slots=True)
class VisionTerms:
    weights: Term  # static: the tower's and the projector's weights
    optimizer: Term  # static: the projector's optimizer states (and fp32 master copy)
    gradients: float  # the projector's gradients (live at the end of backward and in the step)
    saved: Term  # backward start: what the projector keeps for its backward
    forward: Term  # the tower's forward working set, in its own phase
    trainable: int


def _projector_bytes(r: ResolvedSetup, v: VisionSetup) -> int:
    """Bytes per projector weight: DeepSpeed's 16-bit engine casts the whole module (as the language model's
    weights, resolve._dtypes); outside it the projector stays as built."""
    if r.s.strategy in _ZERO:
        return r.wb
    return 4 if v.projector_fp32 else r.wb


def _states(r: ResolvedSetup, count: int, sd: int) -> float:
    o = r.opt
    if o.factored:
        return 4.0 * count  # factored moments not sized per projector matrix: one fp32 state each, a bound
    if o.states is not None:
        return o.states * count
    return o.mult * sd * count


def vision_terms(r: ResolvedSetup, n_weights: int, n_grads: int, n_optimizer: int) -> VisionTerms:
    """The tower's and projector's terms; n_* divide what the data-parallel group shards (1: not sharded)."""
    v = r.s.vision
    assert v is not None
    pb = _projector_bytes(r, v)
    p = v.projector_params if v.projector_trained else 0
    frozen_proj = v.projector_params - p
    # under FSDP LLaVA keeps the tower in a list, outside the wrapped module (llava_arch.py:61-62): whole on
    # every GPU; ZeRO-3 partitions it from its construction on
    tower_n = n_weights if r.s.strategy == "zero3" else 1
    w = v.tower_params * v.tower_bytes / tower_n + v.projector_params * pb / n_weights
    w_note = (
        f"vision tower {v.tower_params / 1e6:.1f}M x {v.tower_bytes} B (frozen) + projector "
        f"{v.projector_params / 1e6:.1f}M x {pb} B" + (" (frozen)" if frozen_proj else "")
    )
    if n_weights > 1:
        w_note += f", sharded /{n_weights}" if tower_n > 1 else f", the projector sharded /{n_weights}"
    master = r.dtypes.master and r.s.strategy in _ZERO
    states = (4.0 * p + _states(r, p, 4)) if master else _states(r, p, pb)
    o_note = f"the projector's {r.opt.label}" + (" on an fp32 master copy" if master else "")
    if n_optimizer > 1:
        o_note += f", sharded /{n_optimizer}"
    grads = p * pb / n_grads
    images = r.b * v.images_per_sample
    saved = float(images * v.image_tokens * sum(v.projector_saved_widths) * r.cb) if p else 0.0
    # the tower's forward under no_grad: every hidden state (embeddings + each layer) in the tuple, plus the
    # larger of one layer's attention (q, k, v and the scores with their softmax) and its MLP (fc1 + act)
    tb, T, h = v.tower_bytes, v.tower_tokens, v.tower_hidden
    states_kept = (v.tower_layers + 1) * images * T * h * tb
    attn = images * (3 * T * h + 2 * v.tower_heads * T * T) * tb
    mlp = images * 2 * T * v.tower_intermediate * tb
    fwd = float(states_kept + max(attn, mlp))
    return VisionTerms(
        weights=Term("vision tower + projector weights", w, ("static",), w_note),
        optimizer=Term("projector optimizer states", states / n_optimizer, ("static",), o_note),
        gradients=grads,
        saved=Term(
            "projector activations",
            saved,
            ("backward start",),
            f"{images} image(s) x {v.image_tokens} tokens x the projector's Linear/GELU inputs",
        ),
        forward=Term(
            "vision tower forward (no grad)",
            fwd,
            (VISION_FORWARD,),
            f"{v.tower_layers + 1} hidden states of {images} x {T} tokens kept by output_hidden_states + one "
            f"layer's eager attention, freed before the language model runs ({fwd / K.GIB:.2f} GiB)",
        ),
        trainable=p,
    )
