"""A config in the training script's own layout (issue 20 item 7), judged and read as that script reads it.

The script loads the file itself and hands each section to a class as keyword arguments
(advisor.facts.script_ast.config_sections): `Seq2SeqTrainingArguments(**cfg["training_args"])`,
`get_peft_config(cfg["peft_config"])`, its own `DataConfig(**cfg["data_config"])`. A dataclass's
`__init__` raises TypeError on a keyword it does not declare, so each section's keys are judged against
its consumer: a library class at the release the project pins (advisor.facts.versions, the same data
GA002/GA005/GA007 judge flat files with), the script's own dataclass by its fields. The section that
goes to TrainingArguments is the run's training settings (batch, accumulation, precision), typed as the
script's loader types them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from advisor.core.document import Document, KeyPath, Location, SourceProblem, pointer
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.core.suggest import close_matches
from advisor.facts.script_ast.config_sections import (
    ANY_KEY,
    PEFT_TYPE_CLASSES,
    ConfigLoad,
    SectionUse,
    config_loads,
)
from advisor.facts.script_ast.results import MAX_SCRIPT_BYTES
from advisor.plan.context import CheckContext

# How each loader reads the scalars PyYAML (YAML 1.1) reads otherwise (advisor.sources.yaml_file records
# each such scalar as a yaml11-scalar problem): ruamel.yaml is YAML 1.2 (0.18.6 resolver.py:25-44: 1.2
# booleans are true/false only, `5e-5` is a float); OmegaConf's loader adds only a float resolver to
# PyYAML's SafeLoader (omegaconf 2.3.0 _utils.py:136-166), so `yes` is still True there.
_RETYPED = {"ruamel": frozenset({"number-string", "bool-word"}), "omegaconf": frozenset({"number-string"})}
_TRAINING_PACKAGES = frozenset({"transformers", "trl"})
# LoraConfig's names for the LoRA settings the estimator reads (advisor.facts.estimate_inputs)
_LORA_NAMES = {"r": "lora_r", "lora_alpha": "lora_alpha", "lora_dropout": "lora_dropout"}
_LORA_NAMES["target_modules"] = "lora_target_modules"
_WORD = re.compile(r"[^\s#,\]}]+")


@record(frozen=True, slots=True)
class Layout:
    """The script that loads the file and how (one load site of it)."""

    script: Path
    load: ConfigLoad

    def where(self, use: SectionUse | None = None) -> str:
        line = use.line if use is not None else self.load.line
        return f"{self.script.name}:{line}"


def layout_of(doc: Document, context: CheckContext) -> Layout | None:
    """The script load that reads ``doc`` in the script's own layout; None when no run hands the file to a
    script that loads it itself, or when which load reads it is not clear (two loads could)."""
    if not doc.consumers or not isinstance(doc.data, dict):
        return None
    return context.derived("config-layout", doc.path, lambda: _layout(doc, context))


def _layout(doc: Document, checked: CheckContext) -> Layout | None:
    found: Layout | None = None
    for script, how in dict.fromkeys(doc.consumers):
        text = checked.script_text(script, MAX_SCRIPT_BYTES)
        if text is None:
            return None
        loads = [load for load in config_loads(text) if _reads(load, doc, how)]
        if len(loads) != 1:
            return None
        if found is None:
            found = Layout(script, loads[0])
    return found


def _reads(load: ConfigLoad, doc: Document, how: str) -> bool:
    """Whether this load can be the one that reads ``doc``: a path from outside the script (argv, the flag
    the run hands it with) or the file's own name, a loader for its format, and sections the file has."""
    if load.literal is not None and Path(load.literal).name != doc.path.name:
        return False
    if how == "config" and load.flags and "config" not in load.flags:
        return False  # `--config cfg.yaml`, while the script loads `args.data_config`
    if (load.loader == "json") != (doc.path.suffix.lower() == ".json"):
        return False
    sections = [u.path for u in load.sections if u.path]
    data = doc.data if isinstance(doc.data, dict) else {}
    if sections:
        return any(path[0] in data for path in sections)
    return any(not u.path for u in load.sections)


def _node(doc: Document, path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = doc.data
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _loc(doc: Document, path: KeyPath, *, value: bool = False) -> Location:
    s = doc.span(path, value=value)
    return Location(doc.path, s.line, s.col, pointer(path))


# --------------------------------------------------------------------------------------------------
# the keys of each section against its consumer
# --------------------------------------------------------------------------------------------------


def layout_key_items(doc: Document, context: CheckContext) -> dict[str, list[dict[str, Any]]] | None:
    """unknown / removed / deprecated keys of each section the script hands to a class; None: no layout."""
    layout = layout_of(doc, context)
    if layout is None:
        return None
    from advisor.facts import versions

    targets = versions.targets_for(doc.path, context.settings_near(doc.path), context, script=layout.script)
    out: dict[str, list[dict[str, Any]]] = {"unknown_keys": [], "removed_keys": [], "deprecated_keys": []}
    by_path: dict[tuple[str, ...], list[SectionUse]] = {}
    for use in layout.load.sections:
        by_path.setdefault(use.path, []).append(use)
    for path, uses in by_path.items():
        node = _node(doc, path)
        if node is None:
            continue
        if any(ANY_KEY in u.exempt for u in uses):
            continue  # the script removes keys it computes: any of them may never reach the consumer
        judges = [j for j in (_judge(u, node, targets) for u in uses) if j is not None]
        if len(judges) != len(uses) or not judges:
            continue  # a consumer we cannot read whole (GenerationConfig(**kw), a class of elsewhere)
        for key in node:
            if not isinstance(key, str) or any(key in u.exempt for u in uses):
                continue
            verdicts = [judge(key) for judge in judges]
            if any(v is None for v in verdicts):
                continue  # some consumer accepts it
            kind, message, suggestion = next(v for v in verdicts if v is not None)
            use = uses[0]
            item: dict[str, Any] = {
                "location": _loc(doc, (*path, key)),
                "key": key,
                "message": f"{message}: {layout.where(use)} hands {_section_name(path)} to {use.consumer}"
                + (", which raises TypeError on it at start" if kind == "unknown_keys" else ""),
                # as for flat files (advisor.facts.keys): a key unknown to every release is an error; a
                # removed or deprecated one has the rule's own severity (the release judged may not be run)
                "severity": "error" if kind == "unknown_keys" else None,
            }
            if kind != "removed_keys":
                item["suggestion"] = suggestion
            if kind != "unknown_keys":
                item["rename"] = None
            out[kind].append(item)
    return out


def _section_name(path: tuple[str, ...]) -> str:
    return f"`{'.'.join(path)}`" if path else "the file's top level"


def _judge(use: SectionUse, node: dict[str, Any], targets: dict[str, Any]) -> Any:
    """key -> None (accepted) or (kind, message, suggestion); None when the consumer is not judged."""
    if use.package is None or use.library is None:
        fields = use.fields
        if fields is None or use.package is not None:
            return None

        def own(key: str) -> tuple[str, str, str | None] | None:
            if key in fields:
                return None
            guess = close_matches(key, sorted(fields), n=1, cutoff=0.8)
            hint = f" (did you mean '{guess[0]}'?)" if guess else ""
            return (
                "unknown_keys",
                f"'{key}' is not a field of {use.consumer}{hint}",
                guess[0] if guess else None,
            )

        return own
    from advisor.facts import versions

    cls = use.library
    if use.by_peft_type:
        cls = PEFT_TYPE_CLASSES.get(str(node.get("peft_type", "")).upper(), "")
    if not versions.has_class(use.package, cls):
        return None
    subclass_fields = use.fields or frozenset()  # a script's subclass adds its own fields
    # a TRL config subclasses TrainingArguments, whose fields versions.json lists under transformers only
    # (the union, as advisor.facts.keys judges a TRL recipe: its _VERSIONED ("trl", ()) entry)
    judged = [(use.package, (cls,))] + (
        [("transformers", ("TrainingArguments",))] if use.package == "trl" else []
    )
    found_targets = [(targets.get(package), classes) for package, classes in judged]
    if any(t is None or not getattr(t, "known", True) for t, _ in found_targets):
        return None  # a git commit is pinned: which keys its tree has is unknown (advisor.facts.versions)
    sources: list[tuple[Any, tuple[str, ...]]] = [(t, c) for t, c in found_targets if t is not None]

    def library(key: str) -> tuple[str, str, str | None] | None:
        if (use.by_peft_type and key == "peft_type") or key in subclass_fields:
            return None  # get_peft_config reads peft_type to choose the class; a subclass's own field
        found = [(t, versions.key_status(t.package, classes, key, t.index)) for t, classes in sources]
        if any(st.state == "present" for _, st in found):
            return None
        for state in ("deprecated", "removed", "new"):
            for target, st in found:
                if st.state != state:
                    continue
                use_hint = f"; use {st.replacement}" if st.replacement else ""
                if state == "deprecated":
                    return (
                        "deprecated_keys",
                        f"'{key}' is deprecated in {cls} of {target.label}{use_hint}",
                        None,
                    )
                if state == "removed":
                    message = (
                        f"'{key}' was removed in {target.package} {st.first} (last in {st.last}){use_hint}"
                    )
                    return "removed_keys", f"{message}; it is not a key of {cls} in {target.label}", None
        known: set[str] = set()
        for t, classes in sources:
            known |= versions.keys_at(t.package, classes, t.index)
        guess = close_matches(key, sorted(known), n=1, cutoff=0.8)
        hint = f" (did you mean '{guess[0]}'?)" if guess else ""
        new = next((st.first for _, st in found if st.state == "new"), None)
        added = f": it was added in {new}" if new else ""
        labels = ", ".join(t.label for t, _ in sources)
        return (
            "unknown_keys",
            f"'{key}' is not a key of {cls} in {labels}{added}{hint}",
            guess[0] if guess else None,
        )

    return library


# --------------------------------------------------------------------------------------------------
# YAML 1.1 surprises, as the script's loader has them
# --------------------------------------------------------------------------------------------------


def loader_surprises(doc: Document, context: CheckContext) -> list[SourceProblem]:
    """The reader's YAML 1.1 surprises that matter to the script that loads ``doc``: none the loader
    reads as they look (ruamel: `5e-5` is a float, `yes` a string), and a number-looking string only
    where a section goes to a class unconverted (a dataclass's `__init__` converts nothing)."""
    layout = layout_of(doc, context)
    if layout is None:
        return []
    retyped = _RETYPED.get(layout.load.loader, frozenset())
    handed = {u.path for u in layout.load.sections}
    out = []
    for p in doc.problems:
        if p.kind != "yaml11-scalar" or p.detail in retyped:
            continue
        if p.detail == "number-string" and tuple(p.key[:-1]) not in handed:
            continue
        out.append(p)
    return out


def loader_value(doc: Document, loader: str, path: KeyPath, value: Any) -> Any:
    """The value at ``path`` as the script's loader reads it (the document holds PyYAML's reading)."""
    retyped = _RETYPED.get(loader, frozenset())
    if not retyped or not isinstance(value, str | bool):
        return value
    for p in doc.problems:
        if p.kind != "yaml11-scalar" or p.key != path or p.detail not in retyped:
            continue
        if p.detail == "number-string" and isinstance(value, str):
            try:
                return float(value.replace("_", ""))
            except ValueError:
                return value
        if p.detail == "bool-word" and isinstance(value, bool):
            return _word_at(doc, p) or value
    return value


def _word_at(doc: Document, problem: SourceProblem) -> str | None:
    if doc.text is None:
        return None
    lines = doc.text.splitlines()
    if not 0 < problem.span.line <= len(lines):
        return None
    match = _WORD.match(lines[problem.span.line - 1], problem.span.col - 1)
    return match.group(0) if match else None


# --------------------------------------------------------------------------------------------------
# the run's training settings from the section that goes to TrainingArguments
# --------------------------------------------------------------------------------------------------


def training_values(doc: Document, context: CheckContext) -> list[tuple[str, Value]]:
    """(key, Value) of the section the script hands to TrainingArguments (or a TRL config), typed as its
    loader reads them, and the LoRA settings of a section it hands to LoraConfig; [] when no layout."""
    layout = layout_of(doc, context)
    if layout is None:
        return []
    from advisor.facts import versions

    loader = layout.load.loader
    out: list[tuple[str, Value]] = []
    for use in layout.load.sections:
        node = _node(doc, use.path)
        if node is None:
            continue
        note = f"{layout.where(use)} hands {_section_name(use.path)} to {use.consumer}"
        if use.package in _TRAINING_PACKAGES and versions.has_class(use.package, use.library or ""):
            for key, raw in node.items():
                if isinstance(key, str) and not isinstance(raw, dict | list):
                    path = (*use.path, key)
                    value = loader_value(doc, loader, path, raw)
                    out.append((key, Value(value, _loc(doc, path, value=True), "training_args", note=note)))
            continue
        peft = str(node.get("peft_type", "")).upper() if use.by_peft_type else ""
        if use.library == "LoraConfig" or PEFT_TYPE_CLASSES.get(peft) == "LoraConfig":
            out.append(("use_peft", Value(True, _loc(doc, use.path), "training_args", note=note)))
            for key, name in _LORA_NAMES.items():
                if key in node:
                    path = (*use.path, key)
                    value = loader_value(doc, loader, path, node[key])
                    out.append((name, Value(value, _loc(doc, path, value=True), "training_args", note=note)))
    return out
