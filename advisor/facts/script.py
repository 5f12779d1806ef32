"""Static facts about a training script: rank-unguarded side effects and ``device_map="auto"``.

Used by GA601 (unguarded-side-effect) and GA602 (device-map-auto-unscoped). The script is parsed
with :mod:`ast` and never imported or executed; nothing here imports torch or transformers.

Why it matters: ``accelerate launch`` and ``torchrun`` start one process per GPU and *every*
process runs the whole script. A ``model.save_pretrained(out)`` or ``open(log, "w")`` outside a
rank guard is done once per rank: N processes writing the same files, pushing to the Hub N times.

What counts as a side effect (``SideEffect.kind``)
    ``save_to_disk``, ``push_to_hub`` (also ``upload_folder``/``upload_file``), ``save_pretrained``,
    ``save_model`` (any receiver that is not a Trainer/Accelerator), ``open_write`` (``open`` /
    ``io.open`` / ``Path.open`` with a w/a/x mode, ``Path.write_text``/``write_bytes``; a
    ``json.dump`` into such a file is reported once, through its ``open``), ``torch_save``,
    ``safetensors_save``, ``numpy_save``, ``to_csv``/``to_json``/``to_parquet`` (only with a path
    argument: without one pandas returns a string), ``mkdir``/``makedirs`` (lower importance),
    ``log_file`` (``logging.FileHandler`` and friends, ``logging.basicConfig(filename=...)``),
    ``shutil_copy``/``shutil_move``/``rmtree``/``remove``, ``wandb_init``, ``tensorboard_writer``.
    An ``open`` whose mode is not a literal is not reported (we cannot tell read from write).

Not side effects (rank-aware inside the library): ``trainer.save_model``, ``trainer.push_to_hub``,
``trainer.save_state``, ``trainer.save_metrics``, ``trainer.create_model_card``,
``trainer.save_checkpoint`` and ``accelerator.save``, ``accelerator.save_model``,
``accelerator.save_state``. A receiver is a Trainer when it was assigned from a ``*Trainer(...)``
call, its name contains "trainer", or it is ``self`` inside a ``*Trainer`` subclass; the same
way for "accelerator".

Rank guards
    A call is *guarded* when only one process can reach it:

    * inside ``if G:`` (or the ``else`` of ``if not G:``), ``G and ...``, ``... if G else ...``;
    * after an early exit in the same block, ``if not G: return`` (also ``raise``, ``continue``,
      ``break``, ``sys.exit()``); an early exit inside a ``with`` block carries past it;
    * in a function decorated ``@accelerator.on_main_process`` / ``on_local_main_process`` /
      ``on_last_process`` / ``on_process(...)`` / ``@rank_zero_only`` / ``@master_only``;
    * in a function every one of whose call sites in the module is guarded (see below).

    ``G`` is one of: ``X.is_main_process``, ``X.is_local_main_process``, ``X.is_last_process``,
    ``X.is_world_process_zero()``, ``X.is_local_process_zero()``, ``X.is_global_zero``,
    ``args.should_save`` / ``should_log`` (TrainingArguments, rank-aware), ``is_main_process(...)``,
    ``is_rank_0()``, ``is_master()``, ``xm.is_master_ordinal()``; a comparison of a rank with zero
    (``rank == 0``, ``local_rank in (-1, 0)``, ``local_rank <= 0``, ``not rank``,
    ``int(os.environ["RANK"]) == 0``, ``os.environ.get("LOCAL_RANK", "0") == "0"``,
    ``dist.get_rank() == 0``, ``X.process_index == 0``, ``local_rank == -1`` (not distributed));
    a name bound only to such expressions (``master_process = ddp_rank == 0``, or ``True`` in
    the single-process branch); and their combinations: ``G and H`` is a guard when either side
    is, ``G or H`` only when both are, ``not`` swaps the branches. So in ``if G: ... else: X``
    the ``X`` is unguarded: the else branch runs on every other rank.

    ``if __name__ == "__main__":`` is not a rank guard: every rank runs the script as __main__.

    ``with accelerator.main_process_first():`` (also ``training_args.main_process_first(...)``,
    ``state.main_process_first()``) is NOT a guard. In accelerate it is ``_goes_first``: the other
    ranks wait on a barrier, then run the same body; transformers' version does the same. It
    orders the processes (rank 0 fills a cache, the others then read it); it does not filter
    them, so a write inside it still happens once per rank.

    ``model.save_pretrained(out, is_main_process=G)`` is treated as guarded: it is the idiom the
    HF docs and accelerate examples use. Caveats, by transformers version (checked in the
    sources): in 4.x the safetensors weight shards are still written by every rank (only
    config/index/cleanup honour ``is_main_process``); in 5.x ``PreTrainedModel.save_pretrained``
    writes only where ``is_main_process`` holds *and* ``torch.distributed`` rank is 0, so even a
    bare ``model.save_pretrained`` is rank-aware there (it still calls ``os.makedirs`` on every
    rank). Tokenizer, processor and config ``save_pretrained`` are not rank-aware in either. We
    cannot tell a model from a tokenizer by name, so a bare ``X.save_pretrained`` is reported
    unguarded; the rule may word its message for the transformers version in use.

Interprocedural
    Functions and methods defined in the module are linked to their call sites (``f(...)``,
    ``self.m(...)``, and a bare reference such as ``fire.Fire(main)`` or ``mp.spawn(main)``,
    which counts as an unguarded use unless it sits under a guard). A function is a guarded
    context when decorated as above, or when it has at least one call site and every call site
    is guarded or lies in a guarded-context function (greatest fixpoint, so recursion does not
    spoil it). A function with no call site in the module (a callback the library invokes, a
    ``TrainerCallback.on_save``) runs on every rank: unguarded. ``_save`` overridden in a
    ``*Trainer`` subclass is a guarded context (Trainer calls it only when ``should_save``).

Positions are 1-based lines and 1-based character columns (``ast`` gives UTF-8 byte offsets;
they are converted). ``SideEffect.function`` is the dotted name of the enclosing function
(``Saver.save`` for a method, ``outer.inner`` for a nested function), ``None`` at module level.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = [
    "MAX_SCRIPT_BYTES",
    "ArgumentClass",
    "ArgumentParsing",
    "LoadCall",
    "ScriptFacts",
    "SideEffect",
    "analyse_script",
]

MAX_SCRIPT_BYTES = 2 * 1024 * 1024
# from_pretrained keyword arguments that decide the memory of the loaded model (LoadCall)
_LOAD_KWARGS = frozenset(
    {
        "dtype",
        "torch_dtype",
        "quantization_config",
        "device_map",
        "attn_implementation",
        "load_in_4bit",
        "load_in_8bit",
    }
)


@dataclass(frozen=True, slots=True)
class SideEffect:
    kind: str
    call: str  # source text of the callee, e.g. "model.save_pretrained" or "open"
    line: int  # 1-based position of the call
    col: int
    guarded: bool
    function: str | None  # enclosing function (dotted for methods / nested functions)


@dataclass(frozen=True, slots=True)
class LoadCall:
    """A ``*.from_pretrained(...)`` call and its model-loading keyword arguments as source text (a name
    bound once by a plain assignment is replaced by the text of its value), for the memory estimator."""

    callee: str  # e.g. "AutoModelForCausalLM.from_pretrained"
    line: int
    col: int
    kwargs: tuple[tuple[str, str], ...]  # (dtype | torch_dtype | quantization_config | ..., source text)
    has_star_kwargs: bool  # a **kwargs argument may carry any of them


@dataclass(frozen=True, slots=True)
class ArgumentClass:
    """A dataclass handed to the script's argument parser: the fields the script declares itself (with
    those of its own base dataclasses) and the library classes it extends."""

    name: str
    fields: tuple[str, ...]
    library_bases: tuple[str, ...]  # qualified names, e.g. "transformers.Seq2SeqTrainingArguments"
    resolved: bool  # False: a base (or the class itself) comes from somewhere we cannot read


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


# ---------------------------------------------------------------------------------------------
# vocabulary

# attributes / zero-argument methods that are true on exactly one process
_GUARD_ATTRS = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_last_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",
        "should_save",
        "should_log",
        "is_master",
        "is_master_process",
        "is_rank_zero",
        "is_rank_0",
        "is_master_ordinal",
    }
)
# functions (or methods) whose call result is true on exactly one process
_GUARD_FUNCS = _GUARD_ATTRS | {"is_rank0", "is_main", "is_primary", "is_main_rank", "is_master_rank"}
# bare names conventionally holding such a flag
_GUARD_NAMES = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",
        "is_main",
        "is_master",
        "is_master_process",
        "master_process",
        "main_process",
        "is_rank_zero",
        "is_rank0",
        "is_rank_0",
    }
)
# names / attributes holding a process rank
_RANK_NAMES = frozenset(
    {
        "rank",
        "local_rank",
        "global_rank",
        "world_rank",
        "ddp_rank",
        "ddp_local_rank",
        "process_index",
        "local_process_index",
        "rank_id",
        "proc_rank",
        "process_rank",
        "gpu_rank",
    }
)
_RANK_FUNCS = frozenset(
    {
        "get_rank",
        "get_local_rank",
        "get_global_rank",
        "get_world_rank",
        "get_ordinal",
        "global_ordinal",
        "local_ordinal",
    }
)
_ENV_RANK_KEYS = frozenset(
    {
        "RANK",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "SLURM_LOCALID",
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "PMI_RANK",
        "PMIX_RANK",
    }
)
_MAIN_RANK_VALUES = frozenset({0, -1, "0", "-1"})

_GUARD_DECORATORS = frozenset(
    {
        "on_main_process",
        "on_local_main_process",
        "on_last_process",
        "on_process",
        "on_local_process",
        "rank_zero_only",
        "main_process_only",
        "master_only",
        "rank_zero",
        "on_rank_zero",
    }
)

_TRAINER_RANK_AWARE = frozenset(
    {
        "save_model",
        "push_to_hub",
        "save_state",
        "save_metrics",
        "create_model_card",
        "save_checkpoint",
        "log_metrics",
    }
)
_ACCELERATOR_RANK_AWARE = frozenset({"save", "save_model", "save_state"})

_EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})

# fully-qualified callee (after import aliases) -> kind
_QUALIFIED: dict[str, str] = {
    "torch.save": "torch_save",
    "safetensors.torch.save_file": "safetensors_save",
    "safetensors.torch.save_model": "safetensors_save",
    "safetensors.numpy.save_file": "safetensors_save",
    "numpy.save": "numpy_save",
    "numpy.savez": "numpy_save",
    "numpy.savez_compressed": "numpy_save",
    "numpy.savetxt": "numpy_save",
    "os.makedirs": "makedirs",
    "os.mkdir": "mkdir",
    "shutil.copy": "shutil_copy",
    "shutil.copy2": "shutil_copy",
    "shutil.copyfile": "shutil_copy",
    "shutil.copytree": "shutil_copy",
    "shutil.move": "shutil_move",
    "shutil.rmtree": "rmtree",
    "os.remove": "remove",
    "os.unlink": "remove",
    "os.rename": "remove",
    "os.replace": "remove",
    "logging.FileHandler": "log_file",
    "logging.handlers.RotatingFileHandler": "log_file",
    "logging.handlers.TimedRotatingFileHandler": "log_file",
    "logging.handlers.WatchedFileHandler": "log_file",
    "wandb.init": "wandb_init",
    "torch.utils.tensorboard.SummaryWriter": "tensorboard_writer",
    "tensorboardX.SummaryWriter": "tensorboard_writer",
    "huggingface_hub.upload_folder": "push_to_hub",
    "huggingface_hub.upload_file": "push_to_hub",
}
# open-like callables whose mode is the second positional argument
_OPEN_FUNCS = frozenset(
    {"open", "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "builtins.open"}
)
# attribute calls flagged whatever the receiver (unless rank-aware, see above)
_ATTR_KINDS: dict[str, str] = {
    "save_to_disk": "save_to_disk",
    "push_to_hub": "push_to_hub",
    "upload_folder": "push_to_hub",
    "upload_file": "push_to_hub",
    "upload_large_folder": "push_to_hub",
    "save_pretrained": "save_pretrained",
    "save_model": "save_model",
    "mkdir": "mkdir",
    "makedirs": "makedirs",
    "write_text": "open_write",
    "write_bytes": "open_write",
    "FileHandler": "log_file",
    "RotatingFileHandler": "log_file",
    "TimedRotatingFileHandler": "log_file",
    "SummaryWriter": "tensorboard_writer",
}
# dataframe / dataset writers: only a side effect when given a destination
_TO_FILE_KINDS: dict[str, str] = {
    "to_csv": "to_csv",
    "to_json": "to_json",
    "to_parquet": "to_parquet",
    "to_json_file": "to_json",
    "save_to_json": "to_json",
}
_TO_FILE_PATH_KWARGS = frozenset({"path", "path_or_buf", "path_or_paths", "json_file_path", "fname"})
_MODE_RE = re.compile(r"^[rwxabtU+]{1,4}$")
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")

_Cls = tuple[bool, bool]  # (only main when the test is true, only main when the test is false)
_NEITHER: _Cls = (False, False)


# ---------------------------------------------------------------------------------------------
# small AST helpers


def _last_id(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _const(node: ast.AST | None) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _is_main_value(value: object) -> bool:
    return type(value) in (int, str) and value in _MAIN_RANK_VALUES


def _kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


@dataclass(slots=True)
class _Func:
    key: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None  # enclosing class key, for methods
    decorated_guard: bool = False
    sites: list[tuple[bool, str | None]] = field(default_factory=list)  # (guarded, enclosing func)


@dataclass(slots=True)
class _Raw:
    kind: str
    call: str
    line: int
    col: int
    local_guard: bool
    function: str | None


# ---------------------------------------------------------------------------------------------
# the analysis


class _Analyser:
    def __init__(self, tree: ast.Module, text: str) -> None:
        self.tree = tree
        self.lines = _NEWLINE_RE.split(text)
        self.imports: dict[str, str] = {}
        self.funcs: dict[str, _Func] = {}
        self.by_name: dict[str, list[str]] = {}  # plain (non-method) functions by simple name
        self.methods: dict[str, dict[str, str]] = {}  # class key -> method name -> func key
        self.class_bases: dict[str, list[str]] = {}  # class key -> base simple names
        self.class_by_name: dict[str, list[str]] = {}
        self.keys: dict[int, str] = {}  # id(FunctionDef | ClassDef) -> key
        self.trainer_classes: set[str] = set()  # simple names
        self.accelerator_classes: set[str] = set()
        self.trainer_vars: set[str] = set()
        self.accelerator_vars: set[str] = set()
        self.guard_alias: dict[str, _Cls] = {}
        self.rank_alias: set[str] = set()
        self.raw: list[_Raw] = []
        self.device_map: list[tuple[int, int]] = []
        self.uses_trainer = False
        # walk state
        self._func: str | None = None
        self._cls: str | None = None

    # -- positions ----------------------------------------------------------------------------
    def pos(self, node: ast.AST) -> tuple[int, int]:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        if 1 <= line <= len(self.lines):
            text = self.lines[line - 1]
            if not text.isascii():
                col = len(text.encode("utf-8")[:col].decode("utf-8", errors="replace"))
        return line, col + 1

    # -- import aliases -----------------------------------------------------------------------
    def resolve(self, node: ast.AST) -> str | None:
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        origin = self.imports.get(head)
        if origin is None:
            return dotted
        return f"{origin}.{rest}" if rest else origin

    # -- pass 1: declarations -----------------------------------------------------------------
    def collect(self) -> None:
        self._collect_defs(self.tree.body, prefix="", cls=None)
        # Trainer / Accelerator subclasses (transitively, by simple name)
        changed = True
        while changed:
            changed = False
            for key, bases in self.class_bases.items():
                simple = key.rsplit(".", 1)[-1]
                if simple not in self.trainer_classes and any(
                    b == "Trainer" or b.endswith("Trainer") or b in self.trainer_classes for b in bases
                ):
                    self.trainer_classes.add(simple)
                    changed = True
                if simple not in self.accelerator_classes and any(
                    b == "Accelerator" or b in self.accelerator_classes for b in bases
                ):
                    self.accelerator_classes.add(simple)
                    changed = True
        for func in self.funcs.values():
            func.decorated_guard = any(self._is_guard_decorator(d) for d in func.node.decorator_list)
            if (
                func.cls is not None
                and func.node.name == "_save"
                and func.cls.rsplit(".", 1)[-1] in self.trainer_classes
            ):
                func.decorated_guard = True
        self._collect_bindings()

    def _collect_defs(self, body: Iterable[ast.AST], prefix: str, cls: str | None) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".", 1)[0]
                        self.imports.setdefault(head, head)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    if alias.name != "*":
                        self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{prefix}{node.name}"
                if key in self.funcs:  # redefinition: keep both under distinct keys
                    n = 2
                    while f"{key}#{n}" in self.funcs:
                        n += 1
                    key = f"{key}#{n}"
                self.funcs[key] = _Func(key=key, node=node, cls=cls)
                self.keys[id(node)] = key
                if cls is not None:
                    self.methods.setdefault(cls, {}).setdefault(node.name, key)
                else:
                    self.by_name.setdefault(node.name, []).append(key)
                self._collect_defs(node.body, prefix=f"{key}.", cls=None)
                continue
            if isinstance(node, ast.ClassDef):
                key = f"{prefix}{node.name}"
                self.keys[id(node)] = key
                self.class_bases[key] = [b for b in (_last_id(b) for b in node.bases) if b]
                self.class_by_name.setdefault(node.name, []).append(key)
                self._collect_defs(node.body, prefix=f"{key}.", cls=key)
                continue
            if isinstance(node, ast.stmt):
                # nested blocks (if/try/with/for) can hold defs and imports too
                for child_body in _stmt_bodies(node):
                    self._collect_defs(child_body, prefix=prefix, cls=cls)

    def _collect_bindings(self) -> None:
        """Names bound to Trainer/Accelerator instances, guard flags and ranks (flow-insensitive)."""
        values: dict[str, list[ast.expr | None]] = {}
        for node in ast.walk(self.tree):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif (isinstance(node, ast.AnnAssign) and node.value is not None) or isinstance(
                node, ast.NamedExpr
            ):
                targets, value = [node.target], node.value
            elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension):
                for name in ast.walk(node.target):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, []).append(None)
                continue
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                for name in ast.walk(node.optional_vars):
                    if isinstance(name, ast.Name):
                        values.setdefault(name.id, []).append(None)
                continue
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(value)
                else:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            values.setdefault(name.id, []).append(None)
                if isinstance(value, ast.Call):
                    callee = _last_id(value.func)
                    last = _last_id(target)
                    if callee and last:
                        if self._is_trainer_class_name(callee):
                            self.trainer_vars.add(last)
                        elif callee == "Accelerator" or callee in self.accelerator_classes:
                            self.accelerator_vars.add(last)
        # guard / rank aliases: iterate, since an alias may be defined from another alias
        for _ in range(4):
            changed = False
            for name, vals in values.items():
                if any(v is None for v in vals):
                    continue
                assigned = [v for v in vals if v is not None]
                if (
                    name not in self.rank_alias
                    and name not in _RANK_NAMES
                    and any(self.is_rank_expr(v) for v in assigned)
                    and all(self.is_rank_expr(v) or _is_main_value(_const(v)) for v in assigned)
                ):
                    self.rank_alias.add(name)
                    changed = True
                    continue
                if name in self.guard_alias or name in _GUARD_NAMES or name in _RANK_NAMES:
                    continue
                if name in self.rank_alias:
                    continue
                classes = [self.classify(v) for v in vals if v is not None and _const(v) is not True]
                if not classes:
                    continue
                first = classes[0]
                if first != _NEITHER and all(c == first for c in classes):
                    if first != (True, False) and len(classes) != len(vals):
                        continue  # `x = True` only fits a positive flag
                    self.guard_alias[name] = first
                    changed = True
            if not changed:
                break

    def _is_trainer_class_name(self, name: str) -> bool:
        return name == "Trainer" or name.endswith("Trainer") or name in self.trainer_classes

    def _is_guard_decorator(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        name = _last_id(target)
        return name in _GUARD_DECORATORS

    # -- guard classification -----------------------------------------------------------------
    def is_rank_expr(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in _RANK_NAMES or node.id in self.rank_alias
        if isinstance(node, ast.Attribute):
            return node.attr in _RANK_NAMES
        if isinstance(node, ast.Subscript):
            key = _const(node.slice)
            base = _dotted(node.value) or ""
            return base.endswith("environ") and key in _ENV_RANK_KEYS
        if isinstance(node, ast.Call):
            name = _last_id(node.func)
            if name in ("int", "str") and node.args:
                return self.is_rank_expr(node.args[0])
            if name in _RANK_FUNCS:
                return True
            dotted = _dotted(node.func) or ""
            if (dotted.endswith("environ.get") or name == "getenv") and node.args:
                return _const(node.args[0]) in _ENV_RANK_KEYS
        return False

    def is_guard_atom(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in _GUARD_ATTRS
        if isinstance(node, ast.Call):
            return _last_id(node.func) in _GUARD_FUNCS
        if isinstance(node, ast.Name):
            return node.id in _GUARD_NAMES
        return False

    def classify(self, node: ast.expr) -> _Cls:
        """(pos, neg): only the main process gets here when `node` is true / when it is false."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            if self.is_rank_expr(node.operand):
                return (True, False)  # `not rank`: rank == 0
            pos, neg = self.classify(node.operand)
            return (neg, pos)
        if isinstance(node, ast.BoolOp):
            parts = [self.classify(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return (any(p for p, _ in parts), all(n for _, n in parts))
            return (all(p for p, _ in parts), any(n for _, n in parts))
        if isinstance(node, ast.NamedExpr):
            return self.classify(node.value)
        if isinstance(node, ast.Call) and _last_id(node.func) == "bool" and len(node.args) == 1:
            return self.classify(node.args[0])
        if isinstance(node, ast.Compare):
            return self._classify_compare(node)
        if isinstance(node, ast.Name) and node.id in self.guard_alias:
            return self.guard_alias[node.id]
        if self.is_guard_atom(node):
            return (True, False)
        if self.is_rank_expr(node):
            return (False, True)  # `if rank:` is true on every rank but 0
        return _NEITHER

    def _classify_compare(self, node: ast.Compare) -> _Cls:
        if len(node.ops) != 1:
            return _NEITHER
        op, left, right = node.ops[0], node.left, node.comparators[0]
        # flag == True / flag is False ...
        for a, b in ((left, right), (right, left)):
            value = _const(b)
            if type(value) is bool and isinstance(op, ast.Eq | ast.Is | ast.NotEq | ast.IsNot):
                pos, neg = self.classify(a)
                same = isinstance(op, ast.Eq | ast.Is) == value
                return (pos, neg) if same else (neg, pos)
        if not self.is_rank_expr(left):
            if not self.is_rank_expr(right) or isinstance(op, ast.In | ast.NotIn):
                return _NEITHER
            left, right = right, left
            op = _FLIP.get(type(op), op)
        value = _const(right)
        if isinstance(op, ast.Eq | ast.Is):
            return (True, False) if _is_main_value(value) else _NEITHER
        if isinstance(op, ast.NotEq | ast.IsNot):
            return (False, True) if _is_main_value(value) else _NEITHER
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(right, ast.Tuple | ast.List | ast.Set) or not right.elts:
                return _NEITHER
            items = [_const(e) for e in right.elts]
            if not all(_is_main_value(v) for v in items):
                return _NEITHER
            return (True, False) if isinstance(op, ast.In) else (False, True)
        if type(value) is int:
            if (isinstance(op, ast.LtE) and value <= 0) or (isinstance(op, ast.Lt) and value <= 1):
                return (True, False)
            if (isinstance(op, ast.Gt) and value >= 0) or (isinstance(op, ast.GtE) and value >= 1):
                return (False, True)
        return _NEITHER

    # -- receivers ----------------------------------------------------------------------------
    def _is_trainer_receiver(self, node: ast.expr) -> bool:
        if _is_self_or_super(node):
            return self._cls is not None and self._cls.rsplit(".", 1)[-1] in self.trainer_classes
        last = _last_id(node)
        return last is not None and (last in self.trainer_vars or "trainer" in last.lower())

    def _is_accelerator_receiver(self, node: ast.expr) -> bool:
        if _is_self_or_super(node):
            return self._cls is not None and self._cls.rsplit(".", 1)[-1] in self.accelerator_classes
        last = _last_id(node)
        return last is not None and (last in self.accelerator_vars or "accelerator" in last.lower())

    # -- side-effect recognition --------------------------------------------------------------
    def side_effect_kind(self, call: ast.Call) -> tuple[str | None, bool]:
        """(kind, guarded by its own arguments) for a call, kind None when not a side effect."""
        func = call.func
        resolved = self.resolve(func)
        if resolved is not None:
            if resolved in _QUALIFIED:
                return _QUALIFIED[resolved], False
            if resolved == "logging.basicConfig":
                return ("log_file" if _kwarg(call, "filename") is not None else None), False
            if resolved in _OPEN_FUNCS or (isinstance(func, ast.Name) and func.id == "open"):
                if isinstance(func, ast.Name) and func.id in self.by_name:
                    return None, False  # the module defines its own open()
                mode = _kwarg(call, "mode")
                if mode is None and len(call.args) >= 2:
                    mode = call.args[1]
                return ("open_write" if _is_write_mode(mode) else None), False
        if isinstance(func, ast.Name):
            return None, False
        if not isinstance(func, ast.Attribute):
            return None, False
        attr, receiver = func.attr, func.value
        if attr in _TRAINER_RANK_AWARE and self._is_trainer_receiver(receiver):
            return None, False
        if attr in _ACCELERATOR_RANK_AWARE and self._is_accelerator_receiver(receiver):
            return None, False
        if attr == "open":
            mode = _kwarg(call, "mode")
            if mode is None and call.args:
                first = _const(call.args[0])
                if isinstance(first, str) and _MODE_RE.match(first):
                    mode = call.args[0]  # Path.open("w")
                elif len(call.args) >= 2:
                    mode = call.args[1]  # tarfile.open(name, "w"), fs.open(path, "wb")
            return ("open_write" if _is_write_mode(mode) else None), False
        if attr in _TO_FILE_KINDS:
            has_dest = bool(call.args) or any(kw.arg in _TO_FILE_PATH_KWARGS for kw in call.keywords)
            return (_TO_FILE_KINDS[attr] if has_dest else None), False
        if attr in _ATTR_KINDS:
            kind = _ATTR_KINDS[attr]
            if kind == "save_pretrained":
                flag = _kwarg(call, "is_main_process")
                if flag is not None and self.classify(flag)[0]:
                    return kind, True
            return kind, False
        return None, False

    # -- pass 2: walk -------------------------------------------------------------------------
    def walk(self) -> None:
        self.block(self.tree.body, False)

    def block(self, stmts: list[ast.stmt], guarded: bool) -> bool:
        """Walk a block; True when only the main process can fall out of its end."""
        g = guarded
        for stmt in stmts:
            g = self.stmt(stmt, g) or g
        return g

    def stmt(self, node: ast.stmt, g: bool) -> bool:
        """Walk one statement; True when only the main process gets past it."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function_def(node, g)
            return False
        if isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self.expr(expr, g)
            outer_cls, outer_func = self._cls, self._func
            self._cls = self.keys.get(id(node))
            self.block(node.body, g)
            self._cls, self._func = outer_cls, outer_func
            return False
        if isinstance(node, ast.If):
            self.expr(node.test, g)
            pos, neg = self.classify(node.test)
            body_end = self.block(node.body, g or pos) or _terminates(node.body)
            else_end = self.block(node.orelse, g or neg) or _terminates(node.orelse)
            return body_end and else_end
        if isinstance(node, ast.With | ast.AsyncWith):
            # main_process_first() is a barrier, not a filter: no guard here (see module docstring)
            for item in node.items:
                self.expr(item.context_expr, g)
                if item.optional_vars is not None:
                    self.expr(item.optional_vars, g)
            return self.block(node.body, g)
        if isinstance(node, ast.For | ast.AsyncFor):
            self.expr(node.target, g)
            self.expr(node.iter, g)
            self.block(node.body, g)
            self.block(node.orelse, g)
            return False
        if isinstance(node, ast.While):
            self.expr(node.test, g)
            self.block(node.body, g)
            self.block(node.orelse, g)
            return False
        if isinstance(node, ast.Try | ast.TryStar):
            body_end = self.block(node.body, g)
            handlers_end = True
            for handler in node.handlers:
                if handler.type is not None:
                    self.expr(handler.type, g)
                handlers_end = (self.block(handler.body, g) or _terminates(handler.body)) and handlers_end
            self.block(node.orelse, body_end)
            final_end = self.block(node.finalbody, g)
            return final_end or (body_end and handlers_end)
        if isinstance(node, ast.Match):
            self.expr(node.subject, g)
            for case in node.cases:
                if case.guard is not None:
                    self.expr(case.guard, g)
                self.block(case.body, g)
            return False
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (
                node.value is not None
                and _const(node.value) == "auto"
                and any(_last_id(t) == "device_map" for t in targets)
            ):
                self.device_map.append(self.pos(node.value))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, g)
        return False

    def _function_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef, g: bool) -> None:
        # decorators and defaults run at definition time, in the enclosing context
        for expr in node.decorator_list:
            self.expr(expr, g)
        args = node.args
        for expr in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.expr(expr, g)
        outer_func = self._func
        self._func = self.keys.get(id(node))
        # self._cls is kept: in a method (and in closures inside it) `self` is that class's instance
        self.block(node.body, False)
        self._func = outer_func

    def expr(self, node: ast.expr, g: bool) -> None:
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            reached = g
            for value in node.values:
                self.expr(value, reached)
                pos, neg = self.classify(value)
                # `a and b`: b runs only when a is true; `a or b`: only when a is false
                reached = reached or (pos if is_and else neg)
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, g)
            pos, neg = self.classify(node.test)
            self.expr(node.body, g or pos)
            self.expr(node.orelse, g or neg)
            return
        if isinstance(node, ast.Call):
            self._call(node, g)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            for key in self.by_name.get(node.id, ()):
                self.funcs[key].sites.append((g, self._func))  # passed as a callback
            return
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if k is not None and _const(k) == "device_map" and _const(v) == "auto":
                    self.device_map.append(self.pos(v))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, g)
            elif isinstance(child, ast.comprehension):
                self.expr(child.target, g)
                self.expr(child.iter, g)
                for cond in child.ifs:
                    self.expr(cond, g)
            elif isinstance(child, ast.keyword):
                self.expr(child.value, g)
            elif isinstance(child, ast.arguments):
                for default in [*child.defaults, *child.kw_defaults]:
                    if default is not None:
                        self.expr(default, g)

    def _call(self, node: ast.Call, g: bool) -> None:
        func = node.func
        for kw in node.keywords:
            if kw.arg == "device_map" and _const(kw.value) == "auto":
                self.device_map.append(self.pos(kw.value))
        callee = _last_id(func)
        if callee is not None and self._is_trainer_class_name(callee):
            origin = self.resolve(func) or ""
            if not origin.startswith(("lightning", "pytorch_lightning")):
                self.uses_trainer = True
        kind, self_guarded = self.side_effect_kind(node)
        if kind is not None:
            line, col = self.pos(node)
            self.raw.append(_Raw(kind, ast.unparse(func), line, col, g or self_guarded, self._func))
        # call sites of the module's own functions
        targets: list[str] = []
        if isinstance(func, ast.Name):
            targets = list(self.by_name.get(func.id, ()))
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and self._cls is not None
        ):
            targets = self._method_targets(self._cls, func.attr)
        for key in targets:
            self.funcs[key].sites.append((g, self._func))
        # walk the callee expression (but a plain name call is not a callback reference)
        if not isinstance(func, ast.Name):
            self.expr(func, g)
        for arg in node.args:
            self.expr(arg, g)
        for kw in node.keywords:
            self.expr(kw.value, g)

    def _method_targets(self, cls: str, name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if cls in seen:
            return []
        found = self.methods.get(cls, {}).get(name)
        if found is not None:
            return [found]
        out: list[str] = []
        for base in self.class_bases.get(cls, ()):
            for base_key in self.class_by_name.get(base, ()):
                out.extend(self._method_targets(base_key, name, seen | {cls}))
        return out

    # -- pass 3: interprocedural fixpoint -----------------------------------------------------
    def guarded_contexts(self) -> dict[str, bool]:
        """Greatest fixpoint: start from "guarded" for every function with a call site, then
        withdraw it from any function reached by an unguarded site or from a withdrawn function."""
        ctx = {key: f.decorated_guard or bool(f.sites) for key, f in self.funcs.items()}
        dependents: dict[str, set[str]] = {}
        for key, func in self.funcs.items():
            for site_g, site_f in func.sites:
                if not site_g and site_f is not None:
                    dependents.setdefault(site_f, set()).add(key)
        work = list(self.funcs)
        while work:
            key = work.pop()
            func = self.funcs[key]
            if not ctx[key] or func.decorated_guard:
                continue
            if not all(site_g or (site_f is not None and ctx[site_f]) for site_g, site_f in func.sites):
                ctx[key] = False
                work.extend(dependents.get(key, ()))
        return ctx

    def facts(self) -> ScriptFacts:
        ctx = self.guarded_contexts()
        effects = tuple(
            sorted(
                (
                    SideEffect(
                        kind=r.kind,
                        call=r.call,
                        line=r.line,
                        col=r.col,
                        guarded=r.local_guard or (r.function is not None and ctx.get(r.function, False)),
                        function=_display(r.function),
                    )
                    for r in self.raw
                ),
                key=lambda e: (e.line, e.col),
            )
        )
        return ScriptFacts(
            side_effects=effects,
            device_map_auto=tuple(sorted(set(self.device_map))),
            uses_trainer=self.uses_trainer,
            load_calls=self.load_calls(),
            argument_parsers=_argument_parsers(self.tree, self.resolve, self.pos),
        )

    def load_calls(self) -> tuple[LoadCall, ...]:
        bound: dict[str, list[ast.expr]] = {}
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                bound.setdefault(node.targets[0].id, []).append(node.value)
        out = []
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "from_pretrained":
                continue
            kwargs = []
            for kw in node.keywords:
                if kw.arg in _LOAD_KWARGS:
                    value = kw.value
                    if isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1:
                        value = bound[value.id][0]
                    kwargs.append((kw.arg, ast.unparse(value)[:2000]))
            line, col = self.pos(node)
            star = any(kw.arg is None for kw in node.keywords)
            out.append(LoadCall(ast.unparse(node.func)[:200], line, col, tuple(kwargs), star))
        return tuple(sorted(out, key=lambda c: (c.line, c.col)))


# ---------------------------------------------------------------------------------------------
# argument parsers: HfArgumentParser((ModelArguments, DataArguments, TrainingArguments)), TrlParser

# Parser classes and the methods that fill their dataclasses (transformers hf_argparser.py,
# trl scripts/utils.py TrlParser.parse_args_and_config).
_PARSER_CLASSES = frozenset({"HfArgumentParser", "TrlParser", "H4ArgumentParser"})
_PARSE_METHODS = frozenset(
    {
        "parse_args_into_dataclasses",
        "parse_args_and_config",
        "parse_yaml_file",
        "parse_json_file",
        "parse_dict",
        "parse_known_args",
        "parse",
    }
)
# Library modules whose classes we have key data for; any other base is unreadable from here.
LIBRARY_PACKAGES = ("transformers", "trl", "peft", "alignment", "open_r1")
_MAX_CLASS_DEPTH = 16


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return _last_id(target) in ("dataclass", "dataclasses.dataclass")


def _class_fields(node: ast.ClassDef) -> list[str]:
    """Annotated class-level names: the fields of a dataclass (ClassVar excluded)."""
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = ast.unparse(stmt.annotation)
            if "ClassVar" in ann or "InitVar" in ann:
                continue
            out.append(stmt.target.id)
    return out


def _argument_parsers(tree: ast.Module, resolve: Any, pos: Any) -> tuple[ArgumentParsing, ...]:
    classes: dict[str, ast.ClassDef] = {}
    bound: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, node)
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            bound[node.targets[0].id] = node.value

    def describe(name_node: ast.expr) -> ArgumentClass:
        name = _last_id(name_node) or ast.unparse(name_node)[:80]
        fields: list[str] = []
        library: list[str] = []
        resolved = True
        seen: set[str] = set()
        todo: list[tuple[ast.expr, int]] = [(name_node, 0)]
        while todo:
            expr, depth = todo.pop()
            simple = _last_id(expr)
            local = classes.get(simple) if isinstance(expr, ast.Name) and simple else None
            if local is not None and simple not in seen:
                if depth > _MAX_CLASS_DEPTH:
                    resolved = False
                    continue
                seen.add(simple)
                fields.extend(_class_fields(local))
                todo.extend((b, depth + 1) for b in local.bases)
                continue
            qualified = resolve(expr) or ""
            if qualified.split(".", 1)[0] in LIBRARY_PACKAGES:
                library.append(qualified)
            elif qualified not in ("object", "ABC", "abc.ABC", "Generic"):
                resolved = False
        return ArgumentClass(name, tuple(dict.fromkeys(fields)), tuple(dict.fromkeys(library)), resolved)

    def class_nodes(arg: ast.expr) -> list[ast.expr] | None:
        if isinstance(arg, ast.Name) and arg.id in bound and arg.id not in classes:
            arg = bound[arg.id]
        if isinstance(arg, ast.Tuple | ast.List):
            if all(isinstance(e, ast.Name | ast.Attribute) for e in arg.elts):
                return list(arg.elts)
            return None
        if isinstance(arg, ast.Name | ast.Attribute):
            return [arg]
        return None

    assigned: dict[int, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned[id(node.value)] = [t.id for t in targets if isinstance(t, ast.Name)]
    parsers: dict[str, tuple[ast.Call, str, list[ArgumentClass] | None]] = {}
    anonymous: list[tuple[ast.Call, str, list[ArgumentClass] | None]] = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or _last_id(call.func) not in _PARSER_CLASSES:
            continue
        arg = call.args[0] if call.args else _kwarg(call, "dataclass_types")
        nodes = class_nodes(arg) if arg is not None else None
        described = [describe(n) for n in nodes] if nodes is not None else None
        entry = (call, _last_id(call.func) or "", described)
        names = assigned.get(id(call), [])
        for n in names:
            parsers[n] = entry
        if not names:
            anonymous.append(entry)

    methods: dict[int, list[str]] = {}
    drops: dict[int, tuple[int, int, str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in _PARSE_METHODS:
            continue
        receiver = node.func.value
        entry = None
        if isinstance(receiver, ast.Name) and receiver.id in parsers:
            entry = parsers[receiver.id]
        elif isinstance(receiver, ast.Call):
            entry = next((e for e in anonymous if e[0] is receiver), None)
        if entry is None:
            continue
        key = id(entry[0])
        methods.setdefault(key, []).append(node.func.attr)
        for flag in ("return_remaining_strings", "allow_extra_keys"):
            value = _kwarg(node, flag)
            if value is not None and _const(value) is True and key not in drops:
                line, col = pos(value)
                drops[key] = (line, col, f"{flag}=True")
        if node.func.attr == "parse_known_args" and key not in drops:
            line, col = pos(node)
            drops[key] = (line, col, "parse_known_args()")

    out = []
    seen_calls: set[int] = set()
    for call, parser, described in [*parsers.values(), *anonymous]:
        if id(call) in seen_calls:
            continue
        seen_calls.add(id(call))
        line, col = pos(call)
        if described is None:
            described = [ArgumentClass("?", (), (), False)]
        out.append(
            ArgumentParsing(
                parser=parser,
                line=line,
                col=col,
                classes=tuple(described),
                methods=tuple(dict.fromkeys(methods.get(id(call), ()))),
                drops_unknown=drops.get(id(call)),
            )
        )
    return tuple(sorted(out, key=lambda p: (p.line, p.col)))


_FLIP: dict[type, ast.cmpop] = {
    ast.Lt: ast.Gt(),
    ast.Gt: ast.Lt(),
    ast.LtE: ast.GtE(),
    ast.GtE: ast.LtE(),
}


def _is_self_or_super(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "self"
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _display(key: str | None) -> str | None:
    if key is None:
        return None
    return ".".join(part.split("#", 1)[0] for part in key.split("."))


def _is_write_mode(node: ast.expr | None) -> bool:
    value = _const(node)
    if not isinstance(value, str):
        return False
    return any(c in value for c in "wax+")


def _stmt_bodies(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        body = getattr(node, name, None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            yield body
    for handler in getattr(node, "handlers", ()) or ():
        yield handler.body
    for case in getattr(node, "cases", ()) or ():
        yield case.body


def _terminates(body: list[ast.stmt]) -> bool:
    """The block never falls through its end (return, raise, continue, break, sys.exit())."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return | ast.Raise | ast.Continue | ast.Break):
        return True
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        return _dotted(last.value.func) in _EXIT_CALLS
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    if isinstance(last, ast.With | ast.AsyncWith):
        return _terminates(last.body)
    return False


@lru_cache(maxsize=16)
def analyse_script(text: str) -> ScriptFacts:
    """Static facts about a training script's text; never raises on bad input, never executes it.
    Cached by text (the facts are frozen): the run's script facts and the launch flags' check
    (advisor.facts.script_flags) read the same script."""
    if len(text) > MAX_SCRIPT_BYTES or (
        len(text) * 4 > MAX_SCRIPT_BYTES and len(text.encode("utf-8", errors="replace")) > MAX_SCRIPT_BYTES
    ):
        return ScriptFacts(
            syntax_error=(f"script larger than {MAX_SCRIPT_BYTES // (1024 * 1024)} MB: not analysed", 1, 1)
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return ScriptFacts(syntax_error=("source contains a null byte", line, col))
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return ScriptFacts(syntax_error=(exc.msg or "invalid syntax", exc.lineno or 1, exc.offset or 1))
    except (ValueError, RecursionError, MemoryError) as exc:
        return ScriptFacts(syntax_error=(f"cannot parse script: {type(exc).__name__}", 1, 1))
    analyser = _Analyser(tree, text)
    try:
        analyser.collect()
        analyser.walk()
        return analyser.facts()
    except RecursionError:
        return ScriptFacts(syntax_error=("script too deeply nested to analyse", 1, 1))
