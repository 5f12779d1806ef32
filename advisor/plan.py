"""RunPlan: the merged, typed view of one run, every value with its provenance.

Precedence: launch-script flags > config files > defaults. The value that loses a conflict is kept
in `related`, so a rule about the conflict has both locations.
"""

from __future__ import annotations

from typing import Any

from advisor.discover import RunSpec
from advisor.provenance import Namespace, Value
from advisor.records import field, record
from advisor.sources.document import Document, KeyPath, Location, pointer, refused_number

# TrainingArguments names that the dialects spell differently.
TRAINING_ALIASES: dict[str, dict[str, str]] = {
    "axolotl": {
        "micro_batch_size": "per_device_train_batch_size",
        "eval_batch_size": "per_device_eval_batch_size",
        "num_epochs": "num_train_epochs",
        "sequence_len": "max_seq_length",
        "base_model": "model_name_or_path",
        "optimizer": "optim",
        "lr_scheduler": "lr_scheduler_type",
    },
    "llamafactory": {
        "cutoff_len": "max_seq_length",
        "micro_batch_size": "per_device_train_batch_size",
        "model": "model_name_or_path",
    },
    "trl": {"max_length": "max_seq_length"},
    "hf": {},
}

TRAINING_DEFAULTS: dict[str, Any] = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-5,
    "bf16": False,
    "fp16": False,
    "tf32": None,
    "dataloader_num_workers": 0,
    "dataloader_pin_memory": True,
    "dataloader_prefetch_factor": None,
    "gradient_checkpointing": False,
    "max_steps": -1,
    "num_train_epochs": 3.0,
}
AXOLOTL_DEFAULTS = {"per_device_train_batch_size": 1, "gradient_accumulation_steps": 1, "num_train_epochs": 1}

# accelerate launch mode flags -> the distributed_type they select. Every other flag that names an
# accelerate config key (top level or deepspeed_config, from the shipped key data) overrides that key.
_ACCELERATE_MODE_FLAGS = {
    "multi_gpu": "MULTI_GPU",
    "use_deepspeed": "DEEPSPEED",
    "use_fsdp": "FSDP",
    "cpu": "NO",
}
# Launchers that run a Python script whose flags are TrainingArguments.
SCRIPT_LAUNCHERS = {"accelerate", "torchrun", "deepspeed", "python", "trl", "llamafactory", "axolotl"}


def coerce_text(text: str) -> Any:
    """A shell word as HfArgumentParser/argparse would most likely type it."""
    low = text.lower()
    if low in {"true", "yes"}:
        return True
    if low in {"false", "no"}:
        return False
    if low in {"none", "null"}:
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@record(slots=True)
class RunPlan:
    name: str
    spec: RunSpec
    training: Namespace = field(default_factory=lambda: Namespace("training"))
    accelerate: Namespace = field(default_factory=lambda: Namespace("accelerate"))
    deepspeed: Namespace = field(default_factory=lambda: Namespace("deepspeed"))
    launch: Namespace = field(default_factory=lambda: Namespace("launch"))
    env: Namespace = field(default_factory=lambda: Namespace("env"))
    model: Namespace = field(default_factory=lambda: Namespace("model"))
    hardware: Any = None  # advisor.sources.hardware.Machine
    settings: Any = None  # advisor.settings.RunSettings
    baseline: Any = None  # advisor.check.BaselineRun: the same run at --base REV
    project: Any = None  # advisor.settings.Settings: the project settings (thresholds, dataset size)
    online: bool = False  # --online: model configs may be fetched from the Hub

    @property
    def root_location(self) -> Location:
        if self.spec.command is not None:
            s = self.spec.command.span
            return Location(self.spec.root.path, s.line, s.col)
        return Location(self.spec.root.path, 1, 1)

    def namespaces(self) -> dict[str, Namespace]:
        return {
            "training": self.training,
            "accelerate": self.accelerate,
            "deepspeed": self.deepspeed,
            "launch": self.launch,
            "env": self.env,
            "model": self.model,
        }


def _doc_value(doc: Document, path: KeyPath, value: Any, source: str) -> Value:
    span = doc.span(path, value=True)
    loc = Location(doc.path, span.line, span.col, pointer(path))
    refused = refused_number(value)  # NaN, inf, beyond 64 bits: the reader reports it (GA001)
    return Value(None, loc, source, unknown=refused) if refused else Value(value, loc, source)


def _fill(ns: Namespace, doc: Document, data: dict[str, Any], path: KeyPath, source: str) -> None:
    """Copy a mapping into a namespace, nested mappings as child namespaces, keeping positions."""
    for key, value in data.items():
        if not isinstance(key, str):
            continue
        child_path = (*path, key)
        if isinstance(value, dict):
            ns.set(key, _doc_value(doc, child_path, value, source))
            sub = Namespace(f"{ns._name}.{key}")
            _fill(sub, doc, value, child_path, source)
            ns.set(key, sub)
        else:
            ns.set(key, _doc_value(doc, child_path, value, source))


def _override(ns: Namespace, key: str, new: Value) -> None:
    """Set key, keeping the value it replaces as a related location."""
    old = ns.entry(key)
    if isinstance(old, Value) and old.origin is not None:
        new.related.append(old.origin)
    ns.set(key, new)


def _word_value(word: Any, root: Document, source: str = "launch") -> Value:
    loc = Location(root.path, word.span.line, word.span.col)
    if word.text is None:
        return Value(None, loc, source, unknown=word.unknown or f"'{word.raw}' cannot be resolved statically")
    value = coerce_text(word.text)
    refused = refused_number(value)  # `--max_steps 1e400` is inf once typed
    return Value(None, loc, source, unknown=refused) if refused else Value(value, loc, source)


def build_plan(spec: RunSpec, hardware: Any = None, settings: Any = None) -> RunPlan:
    plan = RunPlan(name=spec.name, spec=spec, hardware=hardware, settings=settings)
    command = spec.command

    if command is not None:
        root = spec.root
        plan.launch.set(
            "launcher",
            Value(command.launcher, Location(root.path, command.span.line, command.span.col), "launch"),
        )
        for key, word in command.launcher_args.items():
            plan.launch.set(key, _word_value(word, root))
        for key, word in command.env.items():
            plan.env.set(
                key,
                _word_value(word, root)
                if word.text is None
                else Value(word.text, Location(root.path, word.span.line, word.span.col), "launch"),
            )
        sbatch = getattr(root.data, "sbatch", {}) or {}
        sb = plan.launch.child("sbatch")
        for key, word in sbatch.items():
            sb.set(key, _word_value(word, root))

    if spec.accelerate is not None and isinstance(spec.accelerate.data, dict):
        _fill(plan.accelerate, spec.accelerate, spec.accelerate.data, (), "accelerate")
    if command is not None and command.launcher in {"accelerate", "trl", "axolotl"}:
        _apply_accelerate_flags(plan, command, spec.root)

    if spec.deepspeed is not None and isinstance(spec.deepspeed.data, dict):
        _fill(plan.deepspeed, spec.deepspeed, spec.deepspeed.data, (), "deepspeed")

    _build_training(plan, spec)
    _build_model(plan)
    return plan


def _apply_accelerate_flags(plan: RunPlan, command: Any, root: Document) -> None:
    from advisor.sources.known_keys import known_keys

    top_keys = known_keys("accelerate")
    deepspeed_keys = known_keys("accelerate", ("deepspeed_config",))
    for flag, word in command.launcher_args.items():
        value = _word_value(word, root)
        if flag in _ACCELERATE_MODE_FLAGS and value.value is True:
            _override(
                plan.accelerate,
                "distributed_type",
                Value(_ACCELERATE_MODE_FLAGS[flag], value.origin, "launch", note=f"--{flag}"),
            )
        elif flag in top_keys:
            if flag == "gpu_ids" and value.known:
                value.value = str(word.text)
            _override(plan.accelerate, flag, value)
        elif flag in deepspeed_keys:
            _override(plan.accelerate.child("deepspeed_config"), flag, value)
        elif flag.startswith("fsdp_"):
            _override(plan.accelerate.child("fsdp_config"), flag, value)
        elif flag.startswith("parallelism_config_"):
            _override(plan.accelerate.child("parallelism_config"), flag, value)


def _build_training(plan: RunPlan, spec: RunSpec) -> None:
    doc = spec.training
    dialect = (doc.dialect if doc is not None else None) or "hf"
    if doc is not None and doc.kind == "axolotl":
        dialect = "axolotl"
    plan.training.set("dialect", Value(dialect, None, "derived"))
    aliases = TRAINING_ALIASES.get(dialect, {})
    defaults = AXOLOTL_DEFAULTS if dialect == "axolotl" else {}

    reads = reads_training_arguments(spec)
    plan.training.set(
        "reads_training_arguments",
        Value(reads, None, "derived", note=None if reads else "the run reads no TrainingArguments"),
    )
    if reads:
        for key, default in {**TRAINING_DEFAULTS, **defaults}.items():
            plan.training.set(key, Value(default, None, "default", note="default"))

    if doc is not None and isinstance(doc.data, dict):
        for key, value in doc.data.items():
            if not isinstance(key, str):
                continue
            name = aliases.get(key, key)
            v = _doc_value(doc, (key,), value, "training_args")
            if isinstance(value, dict):
                sub = Namespace(f"training.{name}")
                _fill(sub, doc, value, (key,), "training_args")
                plan.training.set(name, sub)
                plan.training.set(f"{name}__raw", v)
            else:
                plan.training.set(name, v)
        env = doc.data.get("env")
        if isinstance(env, dict):  # TrlParser exports this mapping before anything else runs
            for key, value in env.items():
                if isinstance(key, str) and key not in plan.env:
                    plan.env.set(key, _doc_value(doc, ("env", key), str(value), "training_args"))

    command = spec.command
    if command is not None and command.launcher in SCRIPT_LAUNCHERS:
        for key, word in command.script_args.items():
            if key == "config":
                continue
            _override(plan.training, aliases.get(key, key), _word_value(word, spec.root))


def reads_training_arguments(spec: RunSpec) -> bool:
    """Whether the run's settings are TrainingArguments (so their defaults apply): a training file,
    a TrainingArguments flag on the command line, or a launcher that always reads them. A script
    with its own flags (OpenRLHF's --micro_train_batch_size, say) gets no made-up defaults, and
    neither does a bare accelerate or DeepSpeed config (no training file, no command).

    The plan computes this once (`training.reads_training_arguments`); everything else reads that."""
    if spec.training is not None:
        return True
    command = spec.command
    if command is None:
        return False
    if command.launcher in {"llamafactory", "trl", "axolotl"}:
        return True
    from advisor.sources.known_keys import known_keys

    keys = known_keys("training_args")
    return any(k in keys for k in command.script_args)


def _build_model(plan: RunPlan) -> None:
    t = plan.training
    name = t.entry("model_name_or_path")
    if isinstance(name, Value):
        plan.model.set("name", name)
    seq = t.entry("max_seq_length")
    if isinstance(seq, Value):
        plan.model.set("seq_len", seq)
    method, origin = "full", None
    for key, test, result in (
        ("adapter", lambda v: v in {"lora", "qlora"}, None),
        ("finetuning_type", lambda v: v == "lora", "lora"),
        ("use_peft", lambda v: v is True, "lora"),
    ):
        entry = t.entry(key)
        if isinstance(entry, Value) and entry.known and test(entry.value):
            method, origin = result or entry.value, entry.origin
            break
    quant = None
    for key in ("load_in_4bit", "quantization_bit"):
        entry = t.entry(key)
        if isinstance(entry, Value) and entry.known and entry.value in (True, 4):
            quant = entry
    if quant is not None and method in {"lora", "qlora"}:
        method, origin = "qlora", quant.origin
    plan.model.set("method", Value(method, origin, "derived" if origin is None else "training_args"))
