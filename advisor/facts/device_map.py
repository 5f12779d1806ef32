"""`device_map` values that spread one model over several GPUs, in a run that starts several
training processes: accelerate refuses to train such a model in any distributed mode.

accelerate 1.15 accelerator.py:1470-1481 (`prepare`) and 1817-1825 (`prepare_model`): when
`verify_device_map(model)` (accelerator.py:4350: some module has an `hf_device_map` with more than
one entry) and `distributed_type != NO`, ValueError "You can't train a model that has been loaded
with `device_map='auto'` in any distributed mode". Every process of a torchrun/accelerate launch
sees the same GPUs, so "auto" (and the other dispatch strategies of transformers' `from_pretrained`:
"balanced", "balanced_low_0", "sequential") maps the layers over all of them. A map to the
process's own GPU (`{"": PartialState().local_process_index}`, `{"": local_rank}`, TRL's
`get_kbit_device_map()`) has one entry and is what the fix writes.

A site under an `if` that the run's flags decide against is not the run's (simplescaling/s1 train/sft.py:37:
`device_map: "auto"` only `if "70B" in config.model_name`, the launch naming a 32B model); one under a
condition they do not decide is kept with that condition in words and a warning's severity: the run may not
reach it (advisor/facts/branches.py).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from advisor.core.document import Location
from advisor.core.paths import relative
from advisor.facts.branches import reached
from advisor.facts.load_calls import field_value
from advisor.facts.script_ast.load_calls import find_field_keywords
from advisor.plan.run_plan import RunPlan
from advisor.sources import launchers
from advisor.sources.python_source import parsed, tree_nodes

SPREADING = frozenset({"auto", "balanced", "balanced_low_0", "sequential"})
MAX_SITES = 20


def _spreading_sites(text: str) -> tuple[tuple[int, int, str], ...]:
    """(line, col, value) of each `device_map=<spreading string>` keyword of a call, or "device_map" key of
    a dict literal (1-based). A name (`device_map=device_map`) is not followed: scripts such as qlora.py
    set it to "auto" and then to {"": local_rank} under DDP."""
    tree = parsed(text)
    if tree is None:
        return ()
    out: list[tuple[int, int, str]] = []
    for node in tree_nodes(tree):
        if isinstance(node, ast.Call):  # from_pretrained(..., device_map="auto"), dict(device_map="auto")
            pairs = [(kw.arg, kw.value) for kw in node.keywords]
        elif isinstance(node, ast.Dict):  # model_kwargs = {"device_map": "auto"} passed as **model_kwargs
            pairs = [
                (k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None, v)
                for k, v in zip(node.keys, node.values, strict=True)
            ]
        else:
            continue
        for key, value in pairs:
            if (
                key == "device_map"
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and value.value in SPREADING
            ):
                out.append((value.lineno, value.col_offset + 1, value.value))
                if len(out) >= MAX_SITES:
                    return tuple(sorted(out))
    return tuple(sorted(out))


def _field_sites(text: str) -> tuple[Any, ...]:
    """Each `device_map=<parsed field>` (`script_args.device_map`, whose dataclass default or the run's
    flag decides the map: TRL's example scripts take it from ScriptArguments)."""
    tree = parsed(text)
    if tree is None:
        return ()
    return find_field_keywords(tree, lambda n: (n.lineno, n.col_offset + 1), "device_map")


def distributed_device_maps(plan: RunPlan, world_size: Any) -> list[dict[str, Any]]:
    """Each spreading device_map of the training script, when the launch starts more than one
    process (a plain `python` run is one process: GA602's business): a literal, or a parsed field
    whose value in this run (the run's flag or config key, else the field's default) spreads."""
    doc = plan.spec.script
    if doc is None or not isinstance(getattr(doc, "text", None), str):
        return []
    if (
        not isinstance(world_size, int)
        or world_size <= 1
        or launchers.spec_of(plan.launch.launcher).is_interpreter
    ):
        return []
    path = Path(relative(doc.path)) if doc.path.is_absolute() else doc.path  # as script facts show it
    context = plan.context
    sites = list(context.derived("device-map-sites", doc.path, lambda: _spreading_sites(doc.text or "")))
    for ref in context.derived("device-map-fields", doc.path, lambda: _field_sites(doc.text or "")):
        v = field_value(plan, ref)
        if v is not None and isinstance(v.value, str) and v.value in SPREADING:
            sites.append((ref.line, ref.col, v.value))
    tree = parsed(doc.text or "")
    out: list[dict[str, Any]] = []
    for line, col, value in sorted(set(sites)):
        taken, why = reached(plan, tree, line, col) if tree is not None else (True, "")
        if taken is False:
            continue
        item: dict[str, Any] = {
            "location": Location(path, line, col),
            "value": value,
            "processes": world_size,
        }
        item["branch"] = why if taken is None else None
        if taken is None:
            item["severity"] = "warning"  # the run may not reach it: no error on what is not known
        out.append(item)
        if len(out) >= MAX_SITES:
            break
    return out
