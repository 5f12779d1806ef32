"""What the training-script analyser reports: side effects, model loads, argument parsers."""

from __future__ import annotations

from advisor.core.records import record

MAX_SCRIPT_BYTES = 2 * 1024 * 1024
DEEPSPEED_PACKAGE = "deepspeed"  # a script that never names the package builds no DeepSpeed config


@record(frozen=True, slots=True)
class SideEffect:
    kind: str
    call: str  # source text of the callee, e.g. "model.save_pretrained" or "open"
    line: int  # 1-based position of the call
    col: int
    guarded: bool
    function: str | None  # enclosing function (dotted for methods / nested functions)


@record(frozen=True, slots=True)
class ModelArgument:
    """What a model class's ``from_pretrained`` is given to load (its first argument or
    ``pretrained_model_name_or_path=``), read, never run: a string literal (directly, or through a name
    bound once), or the flag / dataclass field an attribute reads (``args.base_model`` -> base_model)
    with the script's own literal default for it (a dataclass field or an ``add_argument`` default)."""

    text: str  # the argument as written, e.g. "model_args.model_path"
    line: int  # 1-based position of the argument
    col: int
    literal: str | None = None  # "Qwen/Qwen2.5-0.5B"
    literal_at: tuple[int, int] | None = None  # where the literal is written (a bound name's value)
    key: str | None = None  # the flag / field name an attribute reads
    flags: tuple[str, ...] = ()  # the command-line names that set it (an add_argument's option strings)
    default: tuple[str, int, int, str] | None = None  # (value, line, col, "ModelArguments.model_path")


@record(frozen=True, slots=True)
class FieldReference:
    """A keyword argument whose value is a flag / dataclass field the script parses (`device_map=
    script_args.device_map`, `torch_dtype=model_args.torch_dtype`): the field's name, the command-line names
    that set it and the script's own literal default for it (a str, bool or number), read, never run."""

    text: str  # the argument as written, e.g. "script_args.device_map"
    line: int  # 1-based position of the argument
    col: int
    key: str
    flags: tuple[str, ...] = ()
    default: tuple[object, int, int, str] | None = None  # (value, line, col, "ScriptArguments.device_map")


@record(frozen=True, slots=True)
class LoadCall:
    """A ``*.from_pretrained(...)`` call and its model-loading keyword arguments as source text (a name
    bound once by a plain assignment is replaced by the text of its value), for the memory estimator."""

    callee: str  # e.g. "AutoModelForCausalLM.from_pretrained"
    line: int
    col: int
    kwargs: tuple[tuple[str, str], ...]  # (dtype | torch_dtype | quantization_config | ..., source text)
    has_star_kwargs: bool  # a **kwargs argument may carry any of them
    model: ModelArgument | None = None  # what it loads, for a model class (not a tokenizer, config, adapter)
    # keywords read from a parsed field: ("device_map", ...), ("quantization_config.load_in_4bit", ...)
    fields: tuple[tuple[str, FieldReference], ...] = ()


@record(frozen=True, slots=True)
class ArgumentClass:
    """A dataclass handed to the script's argument parser: the fields the script declares itself (with
    those of its own base dataclasses) and the library classes it extends."""

    name: str
    fields: tuple[str, ...]
    library_bases: tuple[str, ...]  # qualified names, e.g. "transformers.Seq2SeqTrainingArguments"
    resolved: bool  # False: a base (or the class itself) comes from somewhere we cannot read


@record(frozen=True, slots=True)
class ArgumentParsing:
    """An ``HfArgumentParser(...)`` / ``TrlParser(...)`` in the script and how its result is parsed."""

    parser: str  # "HfArgumentParser" | "TrlParser"
    line: int
    col: int
    classes: tuple[ArgumentClass, ...]
    methods: tuple[str, ...]  # parse_args_into_dataclasses, parse_yaml_file, ... called on it
    # where unknown flags or keys are kept aside instead of refused: return_remaining_strings=True,
    # parse_known_args, allow_extra_keys=True (line, col, the argument as written)
    drops_unknown: tuple[int, int, str] | None = None
    # the leftover strings the script then reads itself (`int(remaining_args[1])`): (line, as written, the
    # constant indices read, or None when it reads them all: a loop, a computed index)
    reads_leftovers: tuple[int, str, tuple[int, ...] | None] | None = None
    # the project module that builds it when not the script (the script calls a function of it:
    # FastChat's train_mem.py calls fastchat.train.train.train()); line and col are in that file
    source: str | None = None

    @property
    def complete(self) -> bool:
        """Every class passed is known, so a flag none of them has is unknown to the script."""
        return bool(self.classes) and all(c.resolved for c in self.classes)

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(f for c in self.classes for f in c.fields)

    @property
    def library_bases(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b for c in self.classes for b in c.library_bases))


@record(frozen=True, slots=True)
class ScriptFacts:
    side_effects: tuple[SideEffect, ...] = ()
    device_map_auto: tuple[tuple[int, int], ...] = ()  # 1-based (line, col) of each "auto" value
    uses_trainer: bool = False  # an HF Trainer / TRL trainer is instantiated
    load_calls: tuple[LoadCall, ...] = ()
    argument_parsers: tuple[ArgumentParsing, ...] = ()
    syntax_error: tuple[str, int, int] | None = None  # message, line, col

    @property
    def unguarded(self) -> tuple[SideEffect, ...]:
        return tuple(e for e in self.side_effects if not e.guarded)
