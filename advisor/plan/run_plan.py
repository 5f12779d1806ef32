"""RunPlan: the merged, typed view of one run, every value with its provenance.

Precedence: launch-script flags > config files > defaults. The value that loses a conflict is kept
in `related`, so a rule about the conflict has both locations. The defaults are the consumer's: the
TrainingArguments defaults where the run reads TrainingArguments, replaced by the literal defaults of the
training script's own dataclasses, or those of its own argparse parser where it has one instead
(`script_arguments`, read from the script's AST, never run).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Document, KeyPath, Location, pointer, refused_number
from advisor.core.provenance import Namespace, Value
from advisor.core.records import field, record
from advisor.plan.context import CheckContext
from advisor.plan.discover import RunSpec
from advisor.plan.script_training_call import builds_training_arguments, call_value, script_training_call
from advisor.sources import launchers
from advisor.sources.known_keys import HF_ARGUMENT_PARSERS, SEQ_KEYS
from advisor.sources.python_source import parsed, tree_nodes

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary

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
# a launcher with defaults of its own (ms-swift) adds its spec's own_aliases on top of its dialect's

# (No lr_scheduler_type here, nor in a script's dataclass defaults (_DATACLASS_TERMS): GA107 reads one in
# the plan as written.)
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
# ms-swift's own TrainingArguments defaults (ms-swift 4.6.0 swift/trainers/arguments.py:130,135); its
# gradient_accumulation_steps follows the world size when not written (:289-291): left unknown here
SWIFT_DEFAULTS = {"per_device_train_batch_size": 1, "gradient_checkpointing": True}

# accelerate launch mode flags -> the distributed_type they select. Every other flag that names an
# accelerate config key (top level or deepspeed_config, from the shipped key data) overrides that key.
_ACCELERATE_MODE_FLAGS = {
    "multi_gpu": "MULTI_GPU",
    "use_deepspeed": "DEEPSPEED",
    "use_fsdp": "FSDP",
    "cpu": "NO",
}
# Launchers that run a Python script whose flags are TrainingArguments.
SCRIPT_LAUNCHERS = frozenset(name for name, s in launchers.LAUNCHERS.items() if not s.serves)


# Launchers whose flags carry TrainingArguments names but whose own parser has other defaults: the run
# keeps what its flags write and gets no TrainingArguments defaults. ms-swift: per_device_train_batch_size
# defaults to 1 (ms-swift swift/trainers/arguments.py:129), not TrainingArguments' 8.
def has_own_defaults(command: Any) -> bool:
    """Whether the command's flags go to a parser with defaults of its own (a launcher's `own_defaults`):
    the `swift` launcher, or one of ms-swift's route files started directly (`torchrun swift/cli/sft.py`,
    `-m swift.cli.sft`: advisor.sources.launchers.argument_owner)."""
    return own_defaults_owner(command) is not None


def own_defaults_owner(command: Any) -> launchers.LauncherSpec | None:
    """The launcher whose parser, with defaults of its own, reads the command's flags (has_own_defaults)."""
    if command is None:
        return None
    owner = launchers.command_owner(command)
    return owner if owner is not None and owner.own_defaults else None


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
    settings: Any = None  # advisor.sources.settings.RunSettings
    baseline: Any = None  # advisor.pipeline.check.BaselineRun: the same run at --base REV
    project: Any = None  # advisor.sources.settings.Settings: the project settings (thresholds, dataset size)
    online: bool = False  # --online: model configs may be fetched from the Hub
    # the check's, shared by every plan of it; build_plan always sets it (the default is never used)
    context: CheckContext = field(default_factory=CheckContext.standalone)

    @property
    def root_location(self) -> Location:
        if self.spec.command is not None:
            s = self.spec.command.span
            return Location(self.spec.root.path, s.line, s.col)
        return Location(self.spec.root.path, 1, 1)

    def boundary(self) -> ProjectBoundary:
        """The boundary of this run: its root file's project plus the allowed roots of the run's own
        settings, from the check's context (computed once per settings and root file)."""
        root = self.spec.root.path
        return self.context.boundary_for(self.project, [root])

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


# The known-key data (advisor/sources/known_keys.py) of the parser each training dialect's flags go to.
_FLAG_KEY_DIALECTS = {"hf": "training_args", "trl": "trl", "llamafactory": "llamafactory"}
_TRUE_WORDS = frozenset({"yes", "true", "t", "y", "1"})
_FALSE_WORDS = frozenset({"no", "false", "f", "n", "0"})


def typed_flag_word(text: str, kind: str | None) -> Any:
    """A flag's word as HfArgumentParser hands it to a field of this kind: argparse gives every word as a
    string, and the field's type converts it (transformers 5.24 hf_argparser.py:204-234; string_to_bool,
    lines 36-46, for bool fields only), so `--eval_strategy no` is the string "no" and `--report_to none`
    the string "none". A word the type refuses (argparse exits on it) stays the word; a key of no known
    kind, or of one we do not convert to (unions with bool, dicts), is typed as coerce_text would."""
    if kind == "bool":
        low = text.lower()
        return True if low in _TRUE_WORDS else False if low in _FALSE_WORDS else text
    if kind in ("str", "list|str", "list"):
        return text
    if kind in ("int", "float"):  # a whole number stays an int, as the same key written in YAML is
        for convert in (int, float):
            try:
                return convert(text)
            except ValueError:
                pass
        return text  # argparse refuses it: the word as written
    return coerce_text(text)


def _flag_value(word: Any, root: Document, key: str, dialect: str) -> Value:
    """A script flag of a run that reads TrainingArguments, typed by the field it sets."""
    value = _word_value(word, root)
    key_dialect = _FLAG_KEY_DIALECTS.get(dialect)
    if key_dialect is None or not value.known or word.text is None:
        return value
    from advisor.sources.known_keys import value_kind

    typed = typed_flag_word(word.text, value_kind(key_dialect, key))
    refused = refused_number(typed)
    if refused:
        return Value(None, value.origin, value.source, unknown=refused)
    value.value = typed
    return value


@record(frozen=True, slots=True)
class ScriptReaders:
    """What the facts layer reads of a training script that goes into the plan itself, handed down by the
    pipeline (advisor.facts.script_readers) so that the plan imports no fact module: the TrainingArguments
    section of a config the script loads in its own layout, and a DeepSpeed config the script builds."""

    training_values: Callable[[Document, CheckContext], list[tuple[str, Value]]]
    code_deepspeed: Callable[[RunPlan], object]  # fills the plan in place


def build_plan(
    spec: RunSpec,
    hardware: Any = None,
    settings: Any = None,
    context: CheckContext | None = None,
    readers: ScriptReaders | None = None,
) -> RunPlan:
    """The run's merged plan, carrying the check's `context`. Without one (a test, a library user: no
    check under way) the plan gets a standalone context for its root file (CheckContext.standalone, the
    one fallback of a run's facts). Without `readers`, configs in a script's own layout and DeepSpeed
    configs built in code are not read (a caller below the facts layer)."""
    if context is None:
        context = CheckContext.standalone(spec.root.path)
    plan = RunPlan(name=spec.name, spec=spec, hardware=hardware, settings=settings, context=context)
    command = spec.command

    if command is not None:
        root = spec.root
        plan.launch.set(
            "launcher",
            Value(command.launcher, Location(root.path, command.span.line, command.span.col), "launch"),
        )
        for key, word in command.launcher_args.items():
            # deepspeed's and axolotl's own `--launcher pdsh|torchrun` must not replace the launcher's name
            plan.launch.set("launcher_flag" if key == "launcher" else key, _word_value(word, root))
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
    if command is not None and launchers.spec_of(command.launcher).reads_accelerate_config:
        _apply_accelerate_flags(plan, command, spec.root)

    if spec.deepspeed is not None and isinstance(spec.deepspeed.data, dict):
        _fill(plan.deepspeed, spec.deepspeed, spec.deepspeed.data, (), "deepspeed")

    _build_training(plan, spec, readers)
    if readers is not None and spec.deepspeed is None and spec.script is not None:
        readers.code_deepspeed(plan)  # a DeepSpeed config built in the script
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


def _build_training(plan: RunPlan, spec: RunSpec, readers: ScriptReaders | None = None) -> None:
    doc = spec.training
    dialect = (doc.dialect if doc is not None else None) or "hf"
    if doc is not None and doc.kind == "axolotl":
        dialect = "axolotl"
    elif (
        spec.command is not None
        and launchers.spec_of(spec.command.launcher).flags_dialect
        and dialect == "hf"
    ):
        # llamafactory-cli reads its flags (or a config without LLaMA-Factory-only keys) into its own
        # dataclasses, with its own defaults: the same dialect as its YAML (LLaMA-Factory 0.9.5
        # hparams/parser.py read_args; hparams/model_args.py disable_gradient_checkpointing=False)
        dialect = launchers.spec_of(spec.command.launcher).flags_dialect
    plan.training.set("dialect", Value(dialect, None, "derived"))
    aliases = TRAINING_ALIASES.get(dialect, {})
    defaults = AXOLOTL_DEFAULTS if dialect == "axolotl" else {}
    owner = own_defaults_owner(spec.command)
    swift = owner is not None
    if owner is not None:
        aliases = {**aliases, **owner.own_aliases}

    reads = reads_training_arguments(spec, plan.context)
    own = script_arguments(spec, plan.context)
    why = "the run reads no TrainingArguments"
    if swift:
        why = "ms-swift's parser has its own defaults: only its written flags are known"
    elif own is not None and own.kind == "argparse":
        why = f"the script's parser is its own ({own.where})"
    plan.training.set(
        "reads_training_arguments",
        Value(reads, None, "derived", note=None if reads else why),
    )
    if reads:
        for key, default in {**TRAINING_DEFAULTS, **defaults}.items():
            plan.training.set(key, Value(default, None, "default", note="default"))
    elif swift:
        for key, default in SWIFT_DEFAULTS.items():
            note = "ms-swift's default (swift/trainers/arguments.py, 4.6.0)"
            plan.training.set(key, Value(default, None, "default", note=note))
        derived = (
            "ms-swift sets it from the world size when it is not written: max(1, ceil(16 / per-device "
            "batch / world size)) (swift/trainers/arguments.py:289-291, 4.6.0)"
        )
        plan.training.set("gradient_accumulation_steps", Value(None, None, "default", unknown=derived))
    # The script's own parser sets its own defaults: those of its dataclasses replace the library's
    # (HfArgumentParser takes each field's default: transformers hf_argparser.py _parse_dataclass_field);
    # a plain-argparse script's stand where TrainingArguments' do not apply.
    if own is not None and (own.kind == "hf" or not reads):
        for key, value in own.defaults.items():
            plan.training.set(aliases.get(key, key), value)
        if own.kind == "argparse" and "per_device_train_batch_size" not in own.defaults:
            plan.training.set(
                "per_device_train_batch_size",
                Value(None, own.origin, "script", unknown=f"the script's parser is its own ({own.where})"),
            )

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

    if doc is not None and readers is not None:  # a config the script loads itself (issue 20 item 7)
        for key, value in readers.training_values(doc, plan.context):
            plan.training.set(aliases.get(key, key), value)

    command = spec.command
    if command is not None and command.launcher in SCRIPT_LAUNCHERS:
        for key, word in command.script_args.items():
            if key == "config":
                continue
            name = aliases.get(key, key)
            value = _flag_value(word, spec.root, key, dialect) if reads else _word_value(word, spec.root)
            _override(plan.training, name, value)
    call = script_training_call(spec)
    if call is not None and spec.script is not None and command is not None:
        for kw in call.keywords:
            plan.training.set(
                aliases.get(kw.key, kw.key), call_value(kw, call, spec.script, command, spec.root)
            )


def reads_training_arguments(spec: RunSpec, context: CheckContext) -> bool:
    """Whether the run's settings are TrainingArguments (so their defaults apply): a training file,
    a TrainingArguments flag on the command line, or a launcher that always reads them. A script
    with its own flags (OpenRLHF's --micro_train_batch_size, say) gets no made-up defaults, and
    neither does a bare accelerate or DeepSpeed config (no training file, no command).

    A script whose parser is its own argparse.ArgumentParser (DeepSpeed-Chat's main.py, OpenRLHF's
    train_sft.py) reads no TrainingArguments either, whatever its flags are called, and neither does a
    launcher with defaults of its own (has_own_defaults).

    The plan computes this once (`training.reads_training_arguments`); everything else reads that."""
    command = spec.command
    if has_own_defaults(command):
        return False
    if spec.training is not None:
        return True
    if command is None:
        return False
    if launchers.spec_of(command.launcher).runs_trainer:
        return True
    if builds_training_arguments(spec):  # the script builds TrainingArguments itself
        return True
    own = script_arguments(spec, context)
    if own is not None and own.kind == "argparse":
        return False
    if spec.script is None and _names_a_script_file(command):
        return False  # the script is named but not read (missing, outside): whose parser it is, is unknown
    from advisor.sources.known_keys import known_keys

    keys = known_keys("training_args")
    return any(k in keys for k in command.script_args)


def _names_a_script_file(command: Any) -> bool:
    script = getattr(command, "script", None)
    return bool(
        script is not None
        and script.text
        and not command.module
        and not getattr(command, "subcommand", False)
    )


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


# --------------------------------------------------------------------------------------------------
# the training script's own argument parser (read from its AST, never run)
# --------------------------------------------------------------------------------------------------

# The LoRA settings the estimator reads (advisor.facts.estimate_inputs: the rank, dropout and target
# modules under the names the frameworks and scripts give them); a script's own LoraArguments dataclass
# declares them (QwenLM/Qwen @2df8e8a finetune.py:55-60: lora_r 64, lora_dropout 0.05,
# lora_target_modules ["c_attn", "c_proj", "w1", "w2"]) and hands them to LoraConfig.
_LORA_TERMS = frozenset(
    {
        "lora_r",
        "lora_rank",
        "lora_dim",
        "lora_alpha",
        "lora_dropout",
        "lora_target_modules",
        "lora_target",
        "target_modules",
    }
)
# (A script that names one of HF_ARGUMENT_PARSERS, a *TrainingArguments class or anything from trl
# (imported either way), or that pre-parses with parse_known_args and hands the rest on, is not a
# plain-argparse script: _read_script_arguments.)
# The terms the plan and the estimator read whose defaults a script's own parser may set instead of
# TrainingArguments: the batch, the run's length and the sequence length (SEQ_KEYS), gradient checkpointing,
# the LoRA settings.
_ARGPARSE_TERMS = frozenset(
    {
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "num_train_epochs",
        "max_steps",
        "learning_rate",
        "gradient_checkpointing",
        *SEQ_KEYS,
        *_LORA_TERMS,
    }
)
# A dataclass that HfArgumentParser fills has TrainingArguments' meaning for these names (its own
# subclass of transformers.TrainingArguments, as stanford_alpaca's train.py:55-65).
_DATACLASS_TERMS = _ARGPARSE_TERMS | frozenset(TRAINING_DEFAULTS) | {"optim"}
_MAX_SCRIPT_CHARS = 2 * 1024 * 1024
_MAX_CLASS_DEPTH = 16

# (name, value, line, col, what the script declares, the file when not the parser's) of each literal
# default, in the script's order
_Defaults = tuple[tuple[str, Any, int, int, str, Path | None], ...]


@record(frozen=True, slots=True)
class ScriptArguments:
    """The script's own parser: `argparse` (argparse.ArgumentParser, no HfArgumentParser) or `hf`
    (HfArgumentParser / TrlParser over the script's dataclasses), where it is built, and the literal
    defaults it gives the terms the plan reads, each a Value at its line in the script."""

    kind: str
    origin: Location
    where: str
    defaults: dict[str, Value]


def script_arguments(spec: RunSpec, context: CheckContext) -> ScriptArguments | None:
    script = spec.script
    text = getattr(script, "text", None)
    if script is None or not isinstance(text, str) or spec.command is None:
        return None
    read = _read_script_arguments(text)
    site = script.path
    if read is None or read[0] == "hf":
        # the parser, or its dataclasses, in the project's own modules (FastChat's train_mem.py calls
        # fastchat.train.train.train(); train_lora.py imports ModelArguments from there)
        followed = context.derived(
            "script-arguments", script.path, lambda: _followed_script_arguments(script.path, text, context)
        )
        if followed is not None:
            read, site = followed
    if read is None:
        return None
    kind, parser, line, col, defaults = read
    from advisor.core.paths import relative

    def shown(path: Path) -> str:
        return relative(path) if path.is_absolute() else str(path)

    where = f"{parser} at {shown(site)}:{line}"
    values: dict[str, Value] = {}
    for name, value, vline, vcol, declared, declared_in in defaults:
        if name in values:
            continue
        path = declared_in or site
        note = f"the default of {shown(path)}'s own {declared}"
        values[name] = Value(value, Location(path, vline, vcol), "script", note=note)
    return ScriptArguments(kind, Location(site, line, col), where, values)


def _followed_script_arguments(
    path: Path, text: str, context: CheckContext
) -> tuple[tuple[str, str, int, int, _Defaults], Path] | None:
    """(kind, parser, line, col, defaults) with the project modules the script imports read
    (advisor.facts.script_ast.project_modules), and the file the parser is in; None when nothing there."""
    if len(text) > _MAX_SCRIPT_CHARS:
        return None
    from advisor.sources.project_imports import parser_site

    # the settings near the script and their boundary, as the script-flag facts find them
    boundary = context.boundary_for(context.settings_near(path), [path])
    site = parser_site(path, text, boundary.roots, boundary.contains)
    if site is None:
        return None
    where, call, nodes, resolve, lookup = site
    parser = _last_id(call.func) or "HfArgumentParser"
    try:
        defaults = _dataclass_defaults(nodes, call, lookup, resolve)
    except RecursionError:
        return None
    return ("hf", parser, call.lineno, call.col_offset + 1, defaults), where


def _last_id(node: Any) -> str | None:
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _literal(node: Any) -> Any:
    """A literal int, float, str or bool (`-1` included); None for anything else."""
    import ast

    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if type(value) in (int, float, str, bool) else None


def _field_default(node: Any) -> tuple[Any, Any]:
    """(value, its node) of a dataclass field's literal default: `= 512`, `= field(default=512)`, or
    `= field(default_factory=lambda: ["c_attn", "c_proj"])`, whose list the dataclass gets
    (dataclasses.field calls the factory; HfArgumentParser takes it as the default: transformers
    hf_argparser.py _parse_dataclass_field, `field.default_factory()`); (None, None) for anything else."""
    import ast

    if not (isinstance(node, ast.Call) and _last_id(node.func) == "field"):
        return _literal(node), node
    kw = {k.arg: k.value for k in node.keywords if k.arg is not None}
    if "default" in kw:
        return _literal(kw["default"]), kw["default"]
    factory = kw.get("default_factory")
    if isinstance(factory, ast.Lambda) and isinstance(factory.body, ast.List | ast.Tuple):
        items = [_literal(e) for e in factory.body.elts]
        if items and all(i is not None for i in items):
            return items, factory.body
    return None, None


@lru_cache(maxsize=16)
def _read_script_arguments(text: str) -> tuple[str, str, int, int, _Defaults] | None:
    """(kind, parser, line, col, defaults) of the script's parser; None when it builds none we can read."""
    import ast

    if len(text) > _MAX_SCRIPT_CHARS:
        return None
    tree = parsed(text)
    if tree is None:
        return None
    try:
        nodes = list(tree_nodes(tree))
    except RecursionError:
        return None
    hf_call = argparse_call = None
    library = False
    for node in nodes:
        if isinstance(node, ast.Call):
            name = _last_id(node.func)
            if name in HF_ARGUMENT_PARSERS and hf_call is None:
                hf_call = node
            elif name == "ArgumentParser" and argparse_call is None:
                argparse_call = node
            elif name == "parse_known_args":
                # a pre-parser that hands the rest on (to an HfArgumentParser here or in a project
                # function it calls): the flags it leaves are someone else's, so not a plain-argparse script
                library = True
        elif isinstance(node, ast.Name | ast.Attribute | ast.alias):
            name = node.name if isinstance(node, ast.alias) else _last_id(node)
            library = library or bool(name and name.endswith("TrainingArguments"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "trl":
            library = True
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "trl" for a in node.names):
            library = True  # `import trl`, `import trl as t`, `import trl.trainer`
    if hf_call is not None:
        parser = _last_id(hf_call.func) or "HfArgumentParser"
        return "hf", parser, hf_call.lineno, hf_call.col_offset + 1, _dataclass_defaults(nodes, hf_call)
    if argparse_call is not None and not library:
        line, col = argparse_call.lineno, argparse_call.col_offset + 1
        return "argparse", "argparse.ArgumentParser", line, col, _argparse_defaults(nodes)
    return None


def _argparse_defaults(nodes: list[Any]) -> _Defaults:
    """`parser.add_argument("--name", type=int, default=16)`: argparse gives dest `name` (dashes as
    underscores) that default, converted by `type` when it is a string (argparse.py _get_values), and
    False/True to store_true/store_false without one (Python 3.11 argparse.py _StoreTrueAction)."""
    import ast

    from advisor.sources.argparse_calls import dest_of, switch_default

    out = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and _last_id(node.func) == "add_argument"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg is not None}
        dest = dest_of(node)
        if dest not in _ARGPARSE_TERMS:
            continue
        where = kw.get("default", node)
        value = _literal(kw["default"]) if "default" in kw else switch_default(node)
        kind = _last_id(kw["type"]) if "type" in kw else None
        if isinstance(value, str) and kind in ("int", "float"):
            try:
                value = int(value) if kind == "int" else float(value)
            except ValueError:
                value = None
        if value is not None:
            out.append((dest, value, where.lineno, where.col_offset + 1, f"--{dest}", None))
    return tuple(out)


def _dataclass_defaults(nodes: list[Any], call: Any, lookup: Any = None, resolve: Any = None) -> _Defaults:
    """The literal defaults (`name: int = 512`, `name: int = field(default=512)`) of the script's own
    dataclasses that the parser is built from, a subclass's before its base's; ``lookup(qualified)``
    gives (class, its module's classes, its module's resolve, its file) for one of a project module."""
    import ast

    classes: dict[str, Any] = {}
    bound: dict[str, Any] = {}
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, node.value)
    arg = call.args[0] if call.args else None
    if arg is None:
        arg = next((k.value for k in call.keywords if k.arg == "dataclass_types"), None)
    if isinstance(arg, ast.Name) and arg.id not in classes and arg.id in bound:
        arg = bound[arg.id]
    roots = list(arg.elts) if isinstance(arg, ast.Tuple | ast.List) else [arg] if arg is not None else []
    out: list[tuple[str, Any, int, int, str, Path | None]] = []
    seen: set[int] = set()
    for root in roots:
        todo: list[tuple[Any, int, dict[str, Any], Any, Path | None]] = [(root, 0, classes, resolve, None)]
        while todo:
            expr, depth, scope, scope_resolve, declared_in = todo.pop(0)
            local = scope.get(expr.id) if isinstance(expr, ast.Name) else None
            if local is not None and id(local) in seen:
                local = None
            if local is None and lookup is not None and scope_resolve is not None:
                qualified = scope_resolve(expr) or ""
                found = lookup(qualified) if "." in qualified else None
                if found is not None and id(found[0]) not in seen:
                    local, scope, scope_resolve, declared_in = found
            if local is None or id(local) in seen or depth > _MAX_CLASS_DEPTH:
                continue
            seen.add(id(local))
            for stmt in local.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                if stmt.value is None or stmt.target.id not in _DATACLASS_TERMS:
                    continue
                value, value_node = _field_default(stmt.value)
                if value is not None and value_node is not None:
                    name = stmt.target.id
                    line, col = value_node.lineno, value_node.col_offset + 1
                    out.append((name, value, line, col, f"{local.name}.{name}", declared_in))
            todo.extend((b, depth + 1, scope, scope_resolve, declared_in) for b in local.bases)
    return tuple(out)
