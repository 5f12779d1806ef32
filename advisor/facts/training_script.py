"""The training script of a run, as facts: side effects outside a main-process guard, device_map."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location
from advisor.core.paths import relative
from advisor.core.provenance import Value
from advisor.facts.declare import FactNamespace, fact
from advisor.facts.script_ast import ScriptFacts, analyse_script

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan


class TrainingScriptFacts(
    FactNamespace, name="script", doc="The training script, read as an AST (never run)."
):
    path = fact(str, "the script's path")
    syntax_error = fact(
        dict,
        "the script does not parse (nothing else of it is read): {location, message}",
        items=("location", "message"),
    )
    uses_trainer = fact(bool, "the script builds a transformers Trainer")
    unguarded_side_effects = fact(
        list[dict],
        "file writes every rank runs without a rank guard",
        items=("call", "consequence", "function", "kind", "location"),
    )
    unguarded_side_effects_omitted = fact(int, "more of them, not listed")
    device_map_auto = fact(
        list[dict], "from_pretrained(device_map='auto') under a multi-process launcher", items=("location",)
    )
    load_calls = fact(
        list[dict],
        (
            "from_pretrained calls, their keyword arguments and, for a model class, what it loads "
            "(model: {text, location, literal, key, flags, default, ...}, followed by the estimate's "
            "model name)"
        ),
        items=("callee", "kwargs", "location", "model", "star_kwargs"),
    )
    deepspeed_in_code = fact(
        list[dict],
        (
            "each place the script hands DeepSpeed a config built in code (deepspeed.initialize(config=), "
            "TrainingArguments(deepspeed=<dict>)): read (into the run's deepspeed settings) or not, and why"
        ),
        items=("call", "location", "read", "why"),
    )
    parser = fact(
        dict,
        (
            "the script's HfArgumentParser/TrlParser (in the script or a project module it calls): "
            "{name, location, complete, drops_unknown, fields (field: its class), library_bases, "
            "config_file, config_passed (positional | config), config_judged (the file's keys are "
            "judged against these dataclasses)}"
        ),
    )


# What happens when every process of a multi-process run performs the side effect.
CONSEQUENCES = {
    "push_to_hub": "each one pushes to the Hub",
    "save_to_disk": "each one writes the same dataset files at once",
    "save_pretrained": "each one writes the same files at once (partial or corrupt checkpoints; tokenizer, "
    "processor and config saves are never rank-aware)",
    "save_model": "each one writes the same checkpoint at once",
    "torch_save": "each one writes the same file at once",
    "safetensors_save": "each one writes the same file at once",
    "numpy_save": "each one writes the same file at once",
    "to_csv": "each one writes the same file at once",
    "to_json": "each one writes the same file at once",
    "to_parquet": "each one writes the same file at once",
    "wandb_init": "each one starts its own W&B run",
    "tensorboard_writer": "each one writes its own event file into the same folder",
    "log_file": "each one writes to the same log file",
    "open_write": "each one writes the same file",
    "shutil_copy": "each one copies the same files at once",
    "shutil_move": "each one moves the same files, and all but one fail",
    "rmtree": "each one deletes the same folder, racing the others",
    "remove": "each one removes or renames the same file, and all but one fail",
    "mkdir": "each one creates the same folder (an error without exist_ok)",
    "makedirs": "each one creates the same folder (an error without exist_ok)",
}


# Rule expressions walk these lists in comprehensions, which the evaluator bounds (advisor/core/expr.py
# Limits.items): a script with 10,001 `os.makedirs` calls once made GA601 fail with "internal error".
# A few sites per kind say all there is to say; the rest become a count.
MAX_SITES_PER_KIND = 20
MAX_DEVICE_MAP_SITES = 20


def _shown(path: Path) -> Path:
    """The script as the user sees it: relative to the current folder when below it (references
    are resolved to absolute paths; findings elsewhere use the path as written)."""
    return Path(relative(path)) if path.is_absolute() else path


def script_facts(plan: RunPlan) -> TrainingScriptFacts:
    ns = TrainingScriptFacts()
    doc = plan.spec.script
    if doc is None or doc.text is None:
        return ns
    text = doc.text
    facts = plan.context.derived("script-facts", doc.path, lambda: analyse_script(text))
    path = _shown(doc.path)
    ns.path = Value(str(path), Location(path, 1, 1), "script")
    ns.uses_trainer = Value(facts.uses_trainer, None, "script")
    not_reached = _not_reached(plan, text)
    effects, omitted = _bounded_side_effects(facts, path, not_reached)
    ns.unguarded_side_effects = Value(effects, None, "script")
    ns.unguarded_side_effects_omitted = Value(omitted, None, "script")
    maps = [site for site in facts.device_map_auto if not not_reached(*site)]  # on the run's branches
    ns.device_map_auto = Value(
        [{"location": Location(path, line, col)} for line, col in maps[:MAX_DEVICE_MAP_SITES]],
        None,
        "script",
    )
    ns.load_calls = Value(
        [
            {
                "location": Location(path, c.line, c.col),
                "callee": c.callee,
                "kwargs": dict(c.kwargs),
                "star_kwargs": c.has_star_kwargs,
                "model": _model_argument(c.model, path),
            }
            for c in facts.load_calls
        ],
        None,
        "script",
    )
    _set_parser(ns, plan, path)
    in_code: list[dict[str, Any]] = []
    script_text = getattr(plan.spec.script, "text", None)
    from advisor.facts.script_ast.results import (
        DEEPSPEED_PACKAGE,  # else none is built: the reader not imported
    )

    if isinstance(script_text, str) and DEEPSPEED_PACKAGE in script_text:  # else none built, none imported
        from advisor.facts.deepspeed_code import deepspeed_in_code

        in_code = deepspeed_in_code(plan, path)
    ns.deepspeed_in_code = Value(in_code, None, "script")
    if facts.syntax_error is not None:
        message, line, col = facts.syntax_error
        ns.syntax_error = Value({"location": Location(path, line, col), "message": message}, None, "script")
    return ns


def _model_argument(arg: Any, path: Path) -> dict[str, Any] | None:
    """What a model class's from_pretrained loads (advisor.facts.load_calls.script_model follows it)."""
    if arg is None:
        return None
    default = arg.default
    return {
        "text": arg.text,
        "location": Location(path, arg.line, arg.col),
        "literal": arg.literal,
        "literal_location": Location(path, *arg.literal_at) if arg.literal_at else None,
        "key": arg.key,
        "flags": list(arg.flags),
        "default": default[0] if default else None,
        "default_location": Location(path, default[1], default[2]) if default else None,
        "default_declared": default[3] if default else None,
    }


def _set_parser(ns: TrainingScriptFacts, plan: RunPlan, path: Path) -> None:
    from advisor.facts.script_flags import parser_fact

    parser = parser_fact(plan, path)
    if parser is not None:
        ns.parser = Value(parser, parser["location"], "script")


def _not_reached(plan: RunPlan, text: str) -> Callable[[int, int], bool]:
    """Whether the run does not reach a position of its script: an `if` around it that the run's known
    flags decide against (`if model_args.lora:` with the field's default False, advisor/facts/branches.py)."""
    from advisor.facts.branches import reached
    from advisor.sources.python_source import parsed

    tree = parsed(text)
    return lambda line, col: tree is not None and reached(plan, tree, line, col)[0] is False


def _bounded_side_effects(
    facts: ScriptFacts, path: Path, not_reached: Callable[[int, int], bool] = lambda line, col: False
) -> tuple[list[dict[str, Any]], int]:
    """The unguarded side effects the run reaches, at most MAX_SITES_PER_KIND of each kind (the last one
    kept says how many more of its kind there are), and the number left out."""
    by_kind: dict[str, list[Any]] = {}
    for effect in facts.side_effects:
        if not effect.guarded and not not_reached(effect.line, effect.col):
            by_kind.setdefault(effect.kind, []).append(effect)
    items: list[dict[str, Any]] = []
    omitted = 0
    for kind, effects in by_kind.items():
        extra = len(effects) - MAX_SITES_PER_KIND
        for i, s in enumerate(effects[:MAX_SITES_PER_KIND]):
            consequence = CONSEQUENCES.get(kind, "each one writes the same output")
            if extra > 0 and i == MAX_SITES_PER_KIND - 1:
                consequence += f" ({extra} more unguarded {s.call}() calls are not listed)"
            items.append(
                {
                    "location": Location(path, s.line, s.col),
                    "call": s.call,
                    "kind": s.kind,
                    "function": s.function,
                    "consequence": consequence,
                }
            )
        omitted += max(extra, 0)
    items.sort(key=lambda item: (item["location"].line, item["location"].col))
    return items, omitted
