"""axolotl's unfrozen_parameters as TrainingSetup fields: which parts of which decoder layers train.

axolotl 0.19.0 utils/freeze.py freeze_layers_except: every parameter is frozen, then those whose name a
pattern matches train (:75-83). A pattern is a regex in which "." is a literal dot unless it is followed by
"+" (LayerNamePattern.__init__, :225: `re.sub(r"\\.(?!\\+)", "\\\\.", name_pattern)`), matched from the
name's start (`re.match`, :237); an optional "[start:end]" suffix names a slice of the parameter whose
gradient a hook zeroes (:244-268, :184-211): the whole gradient and optimizer state still exist. When a
pattern names lm_head or embed_tokens, axolotl also calls enable_input_require_grads (train.py:110-116), and
with gradient checkpointing transformers calls it for every input_ids model (transformers 5.25
modeling_utils.py:3192-3200): the embedding's output then requires grad and backward runs through every
layer, each checkpointed.

The catalog does not list parameter names, so a pattern is read, not matched: the decoder layers it names
(a "layers." / "blocks." / "h." index part, tried against each layer number) and the child module after it
(attention, MLP, a norm, a Linear of the family, MoE experts or router). What cannot be read this way is
counted as the whole layer, or the whole model, and said to be a bound.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from advisor.facts.layer_parts import ATTENTION, MLP, layer_part
from advisor.facts.namespace_entries import written

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

__all__ = ["read_pattern", "unfrozen_patterns", "unfrozen_setup"]

_RANGE = re.compile(r"^(.+)\[([0-9]*)(?::([0-9]*))?\]$")  # freeze.py:250 _parse_pattern
_LAYERS = re.compile(
    r"(?:^|\\\.|\^)(?:layers|blocks|h|layer)\\\.(?P<idx>(?:(?!\\\.).)+?)(?:\\\.(?P<rest>.*))?$"
)
_LITERAL = re.compile(r"[A-Za-z0-9_]+")
_EMBED = ("embed_tokens", "wte", "embed_in", "word_embeddings")
_HEAD = ("lm_head", "embed_out")
_MAX_PATTERNS = 4096


def unfrozen_patterns(plan: RunPlan) -> list[str] | None:
    """The run's unfrozen_parameters patterns (axolotl), [] when they are not known statically, or None."""
    t = plan.training
    dialect = t.known_value("dialect") if t is not None else None
    if dialect is None or dialect.value != "axolotl":
        return None
    v = written(t, "unfrozen_parameters")
    if v is None or (v.known and v.value in (None, [], "")):
        return None
    raw = v.value if v.known else None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return []
    return [str(x) for x in raw[:_MAX_PATTERNS]]


def _module(pc: Any, rest: str) -> tuple[int, bool]:
    """(parameters of one layer the module part names, whether that count is exact)."""
    comps: list[str] = []
    for piece in rest.rstrip("$").split("\\."):
        if not _LITERAL.fullmatch(piece):
            break  # a wildcard from here on: the parent module is the bound
        comps.append(piece)
    while comps and comps[-1] in ("weight", "bias"):
        comps.pop()
    if not comps:
        return int(pc.per_layer), not rest.strip("$")
    head = comps[0]
    part = layer_part(pc, head)
    if part is None:
        return int(pc.per_layer), False
    if len(comps) == 1:
        return part, True
    child = comps[1]
    lins = list(pc.linears)
    if head in MLP and pc.moe_experts and child in ("gate", "router"):
        picked = [lin for lin in lins if lin.name == "router"]
    elif head in MLP and child == "experts":
        picked = [lin for lin in lins if lin.name.startswith("experts.")]
    elif head in ATTENTION or head in MLP:
        picked = [
            lin
            for lin in lins
            if not lin.name.startswith(("experts.", "router")) and (child == lin.name or child in lin.aliases)
        ]
    else:
        picked = []
    if not picked:
        return part, False
    return sum(lin.weight_params + (lin.d_out * lin.count if lin.bias else 0) for lin in picked), True


def read_pattern(pc: Any, pattern: str) -> tuple[dict[int, int], int, bool, bool]:
    """One pattern as (trainable parameters per layer index, non-layer parameters, names the embedding or
    lm_head, exact): what the pattern selects, or a bound on it where it cannot be read."""
    m = _RANGE.match(pattern)
    base = m.group(1) if m else pattern
    rx = re.sub(r"\.(?!\+)", "\\.", base)  # freeze.py:225
    embed = any(x in pattern for x in _EMBED)
    head = any(x in pattern for x in _HEAD)
    if embed or head:
        extra = (int(pc.embedding + pc.position_embedding) if embed else 0) + (int(pc.lm_head) if head else 0)
        return {}, extra, True, True
    L = int(pc.layers)
    lm = _LAYERS.search(rx)
    if lm is None:
        # not a layer pattern this reading knows: every parameter, the bound
        return {i: int(pc.per_layer) for i in range(L)}, int(pc.total - L * pc.per_layer), True, False
    idx, rest = lm.group("idx"), lm.group("rest")
    try:
        index = re.compile(idx)
    except re.error:
        return {i: int(pc.per_layer) for i in range(L)}, 0, False, False
    # with a module part the index is followed by a dot (a whole number); without one, re.match's prefix
    # reading: "layers.2" also names layers 20-29
    ids = [i for i in range(L) if (index.fullmatch(str(i)) if rest is not None else index.match(str(i)))]
    share, exact = _module(pc, rest or "")
    return {i: share for i in ids}, 0, False, exact


def unfrozen_setup(plan: RunPlan, pc: Any, a: list[str]) -> tuple[dict[str, Any], str | None]:
    """(TrainingSetup fields, why it has no estimate) for an axolotl run with unfrozen_parameters."""
    patterns = unfrozen_patterns(plan) or []
    L = int(pc.layers)
    parts: dict[int, dict[str, int]] = {}
    extra, input_grad, loose = 0, False, []
    if not patterns:
        loose.append("unfrozen_parameters is not known statically: every parameter counted")
        patterns = [".+"]
    seen_extra: set[str] = set()
    for p in patterns:
        per, x, names_io, exact = read_pattern(pc, p)
        for i, n in per.items():
            parts.setdefault(i, {})[p] = n
        if x and p not in seen_extra:
            seen_extra.add(p)
            extra += x
        input_grad = input_grad or names_io
        if not exact:
            loose.append(repr(p))
        if _RANGE.match(p):
            loose.append(f"{p!r} names a slice: its whole gradient and optimizer state are counted")
    layer = [min(int(pc.per_layer), sum(parts.get(i, {}).values())) for i in range(L)]
    extra = min(extra, int(pc.total - L * pc.per_layer))
    kw: dict[str, Any] = {
        "layer_trainable": layer,
        "trainable_extra_params": extra,
        "input_requires_grad": input_grad,
    }
    rows = [i for i, x in enumerate(layer) if x]
    span = f"layers {rows[0]}-{rows[-1]}" if rows else "no decoder layer"
    bound = (
        "; a bound, not matched (the catalog lists no parameter names): " + ", ".join(loose) if loose else ""
    )
    a.append(
        f"axolotl unfrozen_parameters: {(sum(layer) + extra) / 1e6:.0f}M trainable parameters ({span} of {L}"
        + (f", {extra / 1e6:.0f}M outside the layers" if extra else "")
        + "), read from the patterns (axolotl utils/freeze.py freeze_layers_except)"
        + (
            "; a pattern names the embedding or lm_head: axolotl calls enable_input_require_grads "
            "(train.py:110-116), so backward runs through every layer"
            if input_grad
            else ""
        )
        + bound
    )
    return kw, None
