"""A run's DeepSpeed config built in the training script (issue 20 item 12): read into the plan's `deepspeed`
namespace the way a JSON file's keys are (advisor.plan.run_plan._fill), each value at the line that writes
it, when the dict is literal enough (advisor.facts.script_ast.deepspeed_dict); otherwise said to be built in
code and not read (`script.deepspeed_in_code`, GA009), the launch's own facts (process count, launcher)
kept as they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Location, pointer
from advisor.core.provenance import Namespace, Value
from advisor.facts.script_ast.deepspeed_dict import CodeDeepSpeed, Leaf, Mapping, code_deepspeed_configs
from advisor.facts.script_ast.results import DEEPSPEED_PACKAGE

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan


def code_configs(plan: RunPlan) -> list[CodeDeepSpeed]:
    """The places the run's script hands DeepSpeed a config that is not a path; [] when it has none, or
    when the run reads a DeepSpeed file (that file is the config)."""
    script = plan.spec.script
    text = getattr(script, "text", None)
    if script is None or not isinstance(text, str) or DEEPSPEED_PACKAGE not in text:
        return []
    from advisor.sources.project_imports import ProjectModule, ProjectModules, import_roots
    from advisor.sources.python_source import parsed

    tree = parsed(text)
    if tree is None:
        return []
    checked = plan.context
    boundary = checked.boundary_for(checked.settings_near(script.path), [script.path])
    roots = import_roots(script.path, boundary.roots)
    module = ProjectModule(script.path, tree, text, "")
    modules = ProjectModules(roots, boundary.contains) if roots else None

    defaults = _argparse_defaults(tree)

    def flag(name: str) -> tuple[bool, Any]:
        v = plan.training.known_value(name)
        if v is not None:  # the launch's flag, else the consumer's default (advisor.plan.run_plan)
            return True, v.value
        if name in defaults and plan.training.entry(name) is None:
            return True, defaults[name]  # not on the command line: argparse gives the script's default
        return False, None

    try:
        return code_deepspeed_configs(tree, module.resolve, module.imports, modules, flag)
    except RecursionError:
        return []


def fill_code_deepspeed(plan: RunPlan) -> None:
    """The one config the script builds, read, as the plan's `deepspeed` namespace (two different ones,
    an actor's and a critic's, say: neither is the run's, and none is filled)."""
    if plan.spec.deepspeed is not None:
        return
    read = [c for c in code_configs(plan) if c.config is not None]
    if len({_shape(c.config) for c in read}) != 1:
        return
    config, script = read[0].config, plan.spec.script
    if config is not None and script is not None:
        _fill(plan.deepspeed, config, (), script.path)


def _shape(config: Mapping | None) -> Any:
    if config is None:
        return None
    return tuple(
        (
            k,
            _shape(v)
            if isinstance(v, Mapping)
            else (v.value, v.unread is None)
            if isinstance(v, Leaf)
            else None,
        )
        for k, (v, _l, _c) in config.items.items()
    )


def _fill(ns: Namespace, mapping: Mapping, path: tuple[str, ...], script: Path) -> None:
    for key, (value, _line, _col) in mapping.items.items():
        here = (*path, key)
        if isinstance(value, Mapping):
            sub = Namespace(f"{ns._name}.{key}")
            _fill(sub, value, here, script)
            ns.set(key, sub)
            continue
        leaf: Leaf = value
        loc = Location(leaf.file or script, leaf.line, leaf.col, pointer(here))
        note = f"--{leaf.flag}" if leaf.flag else "built in code"
        if leaf.unread is not None:
            ns.set(key, Value(None, loc, "deepspeed", unknown=f"built in code: {leaf.unread}"))
        else:
            ns.set(key, Value(leaf.value, loc, "deepspeed", note=note))


def deepspeed_in_code(plan: RunPlan, shown: Path) -> list[dict[str, Any]]:
    """`script.deepspeed_in_code`: each place the script hands DeepSpeed a config built in code, whether it
    was read, and why not."""
    if plan.spec.deepspeed is not None:
        return []  # the run reads a DeepSpeed file
    out = []
    filled = bool(plan.deepspeed)
    for c in code_configs(plan):
        why = c.why
        if c.config is not None and not filled:
            why = "the script builds more than one DeepSpeed config: which is the run's is not read"
        out.append(
            {
                "location": Location(shown, c.line, c.col),
                "call": c.call,
                "read": c.config is not None and filled,
                "why": why,
            }
        )
    return out


def _argparse_defaults(tree: Any) -> dict[str, Any]:
    """dest -> the literal default of each `parser.add_argument("--name", default=...)` of the script, and
    False/True for store_true/store_false without one (Python 3.11 argparse.py _StoreTrueAction)."""
    import ast

    from advisor.sources.argparse_calls import add_arguments, keyword, switch_default

    out: dict[str, Any] = {}
    for name, call in add_arguments(tree).items():
        default = keyword(call, "default")
        if default is not None:
            try:
                out[name] = ast.literal_eval(default)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
        elif (switch := switch_default(call)) is not None:
            out[name] = switch
    return out
