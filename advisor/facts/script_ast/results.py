"""What the training-script analyser reports: side effects, model loads, argument parsers."""

from __future__ import annotations

from advisor.records import record

MAX_SCRIPT_BYTES = 2 * 1024 * 1024


@record(frozen=True, slots=True)
class SideEffect:
    kind: str
    call: str  # source text of the callee, e.g. "model.save_pretrained" or "open"
    line: int  # 1-based position of the call
    col: int
    guarded: bool
    function: str | None  # enclosing function (dotted for methods / nested functions)


@record(frozen=True, slots=True)
class LoadCall:
    """A ``*.from_pretrained(...)`` call and its model-loading keyword arguments as source text (a name
    bound once by a plain assignment is replaced by the text of its value), for the memory estimator."""

    callee: str  # e.g. "AutoModelForCausalLM.from_pretrained"
    line: int
    col: int
    kwargs: tuple[tuple[str, str], ...]  # (dtype | torch_dtype | quantization_config | ..., source text)
    has_star_kwargs: bool  # a **kwargs argument may carry any of them


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
