"""Which model a run trains, and where that is written: `gpu-advise estimate --model`, the run's `model`
setting in [[runs]], the model_name_or_path its files write (base_model, model in the dialects that spell
it so), or the model its training script loads (advisor.facts.load_calls.script_model). When none names
it, the reason says how this run can name it: a flag only when the script's parser takes it. And whether
the base model runs in fp16 only (a GPTQ / AWQ checkpoint or config)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.facts.load_calls import call_where, condition_flag, conditional, load_calls, script_model
from advisor.facts.namespace_entries import truth
from advisor.plan.run_plan import RunPlan

# The key each training dialect names the model with (advisor.plan.run_plan.TRAINING_ALIASES reads them as
# model_name_or_path): axolotl's base_model, LLaMA-Factory's model_name_or_path. TRL's own configs take
# model_name_or_path through its ModelConfig (trl 1.16 trainer/model_config.py). (ms-swift is a launcher,
# not a dialect: its --model is its spec's own_aliases.)
DIALECT_KEYS = {
    "axolotl": "base_model",
    "llamafactory": "model_name_or_path",
    "trl": "model_name_or_path",
}
MODEL_FIELD = "model_name_or_path"


@record(frozen=True, slots=True)
class ModelNaming:
    value: Value | None  # the model name, its origin where it is written
    reason: str | None = None  # when there is none: why, and how this run can name one
    assumption: str | None = None  # a choice the estimate states (the setting over the files' name)


def run_model(plan: RunPlan, names: dict[str, Any]) -> ModelNaming:
    written = plan.model.value("name") if plan.model is not None else None
    files = plan.training.entry(MODEL_FIELD) if plan.training is not None else None
    files_name = files.value if isinstance(files, Value) and files.known else None
    if written is not None and written.source == "cli":  # estimate --model
        if files_name and files_name != written.value:
            over = f"model {written.value} from --model (the run's files name {files_name})"
            return ModelNaming(written, assumption=over)
        return ModelNaming(written)
    setting = _setting(plan)
    if setting is not None:
        if files_name and files_name != setting.value:
            over = f"model {setting.value} from the run's settings entry (the run's files name {files_name})"
            return ModelNaming(setting, assumption=over)
        return ModelNaming(setting)
    if written is not None:
        return ModelNaming(written)
    value, unresolved = script_model(plan, names)
    if value is not None:
        return ModelNaming(value, assumption=f"model {value.value}: {value.note}")
    return ModelNaming(None, reason=_unnamed(plan, names, unresolved))


def _setting(plan: RunPlan) -> Value | None:
    run = plan.settings
    model = getattr(run, "model", None)
    if not isinstance(model, str) or not model.strip():
        return None
    project = plan.project
    origin = None
    if project is not None and project.source is not None and project.run_for(plan.spec.root.path) is run:
        from advisor.core.paths import relative
        from advisor.sources.settings import run_setting_position

        line, col = run_setting_position(project, run, "model")
        origin = Location(Path(relative(project.source)), line, col)
    return Value(model, origin, "settings", note="the run's model setting ([[runs]])")


def _unnamed(plan: RunPlan, names: dict[str, Any], why: str | None) -> str:
    """'no model is named' (or why the script's load cannot be followed) and what names one for this
    run: the key its dialect reads, a flag its script's parser takes, else the run's settings entry."""
    head = f"the model cannot be told: {why}" if why else "no model is named"
    t = plan.training
    written = t.value("dialect") if t is not None else None
    dialect = written.value if written is not None else None
    key = DIALECT_KEYS.get(str(dialect))
    if key is not None:
        return f"{head}; write {key}: ORG/NAME"
    script = names.get("script")
    parser = script.value("parser") if script is not None else None
    if why is None and parser is not None and isinstance(parser.value, dict):
        fact = parser.value
        if fact.get("complete") and MODEL_FIELD in (fact.get("fields") or {}):
            return f"{head}; pass --{MODEL_FIELD} ORG/NAME (a field of {fact['fields'][MODEL_FIELD]})"
        if fact.get("complete") and not _library_takes_model(fact.get("library_bases") or []):
            path = script.value("path") if script is not None else None
            shown = path.value if path is not None else "the script"
            head += f" ({shown}'s {fact.get('name')} takes no --{MODEL_FIELD})"
    return f"{head}; {'or ' if why and why.endswith('ORG/NAME') else ''}{_setting_hint(plan)}"


def _library_takes_model(bases: list[str]) -> bool:
    # TRL's ModelConfig declares model_name_or_path (trl 1.16 trainer/model_config.py)
    return any(b.rsplit(".", 1)[-1] == "ModelConfig" for b in bases)


def _setting_hint(plan: RunPlan) -> str:
    """`model = "ORG/NAME"` in the run's [[runs]] entry of the settings file that governs it, or
    `gpu-advise estimate RUN --model ORG/NAME`."""
    import os

    from advisor.core.paths import relative

    project = plan.project
    source = getattr(project, "source", None)
    root = plan.spec.root.path
    if source is not None:
        folder = Path(source).parent
        table = "[[tool.gpu-advise.runs]]" if Path(source).name == "pyproject.toml" else "[[runs]]"
        shown = relative(source)
    else:
        folder, table, shown = plan.context.cwd, "[[runs]]", ".gpu-advise.toml"
    try:
        path = os.path.relpath(Path(root).absolute(), folder.absolute())
    except ValueError:
        path = str(root)
    run = relative(root)
    return (
        f'name it in {shown}: {table} path = "{Path(path).as_posix()}", model = "ORG/NAME" '
        f"(or gpu-advise estimate {run} --model ORG/NAME)"
    )


FP16_ONLY_NAME = re.compile(r"(?i)(?:^|[-_./])(gptq|awq|int4|int8)(?:$|[-_./])")
FP16_ONLY_CONFIG = re.compile(r"\b(GPTQConfig|AwqConfig)\s*\(")


def fp16_only_base(plan: RunPlan, names: dict[str, Any]) -> Value | None:
    """Why the base model runs in fp16 only (GPTQ / AWQ kernels: the checkpoint's scales and the kernels'
    activations are fp16), or None: a model name with GPTQ/AWQ/Int4/Int8 (Qwen/Qwen-7B-Chat-Int4), or a
    GPTQConfig/AwqConfig in the script's from_pretrained that is in force (a condition on one flag is
    followed; any other condition leaves it unknown, None)."""
    name = run_model(plan, names).value
    if name is not None and name.known and isinstance(name.value, str):
        m = FP16_ONLY_NAME.search(name.value.strip())
        if m is not None:
            return Value(
                f"{name.value} ({m.group(1)}-quantized checkpoint: fp16 kernels)", name.origin, "derived"
            )
    for call in load_calls(names):
        text = call["kwargs"].get("quantization_config")
        m = FP16_ONLY_CONFIG.search(text) if isinstance(text, str) else None
        if m is None:
            continue
        branch = conditional(text, FP16_ONLY_CONFIG)
        if branch is not None:
            cond, quantized_when = branch
            v = condition_flag(plan.training, cond)
            if v is None or truth(v) != quantized_when:
                continue
        return Value(
            f"{call_where(call, 'quantization_config')} ({m.group(1)}: fp16 kernels)",
            call["location"],
            "derived",
        )
    return None
