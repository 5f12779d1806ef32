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
from collections.abc import Iterable

from advisor.core.records import field, record
from advisor.facts.script_ast.argument_parsers import find_argument_parsers
from advisor.facts.script_ast.load_calls import find_load_calls
from advisor.facts.script_ast.nodes import (
    FLIP,
    const,
    display,
    dotted_name,
    is_main_value,
    is_self_or_super,
    is_write_mode,
    kwarg,
    last_id,
    stmt_bodies,
    terminates,
)
from advisor.facts.script_ast.results import ScriptFacts, SideEffect
from advisor.facts.script_ast.vocabulary import (
    ACCELERATOR_RANK_AWARE,
    ATTR_KINDS,
    ENV_RANK_KEYS,
    GUARD_ATTRS,
    GUARD_DECORATORS,
    GUARD_FUNCS,
    GUARD_NAMES,
    MODE_RE,
    NEITHER,
    NEWLINE_RE,
    OPEN_FUNCS,
    QUALIFIED,
    RANK_FUNCS,
    RANK_NAMES,
    TO_FILE_KINDS,
    TO_FILE_PATH_KWARGS,
    TRAINER_RANK_AWARE,
    BranchGuards,
)
from advisor.sources.python_source import tree_nodes


@record(slots=True)
class _Func:
    key: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None  # enclosing class key, for methods
    decorated_guard: bool = False
    sites: list[tuple[bool, str | None]] = field(default_factory=list)  # (guarded, enclosing func)


@record(slots=True)
class _Raw:
    kind: str
    call: str
    line: int
    col: int
    local_guard: bool
    function: str | None


class ScriptAnalyser:
    def __init__(self, tree: ast.Module, text: str) -> None:
        self.tree = tree
        self.lines = NEWLINE_RE.split(text)
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
        self.guard_alias: dict[str, BranchGuards] = {}
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
        dotted = dotted_name(node)
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
                self.class_bases[key] = [b for b in (last_id(b) for b in node.bases) if b]
                self.class_by_name.setdefault(node.name, []).append(key)
                self._collect_defs(node.body, prefix=f"{key}.", cls=key)
                continue
            if isinstance(node, ast.stmt):
                # nested blocks (if/try/with/for) can hold defs and imports too
                for child_body in stmt_bodies(node):
                    self._collect_defs(child_body, prefix=prefix, cls=cls)

    def _collect_bindings(self) -> None:
        """Names bound to Trainer/Accelerator instances, guard flags and ranks (flow-insensitive)."""
        values: dict[str, list[ast.expr | None]] = {}
        for node in tree_nodes(self.tree):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif (isinstance(node, ast.AnnAssign) and node.value is not None) or isinstance(
                node, ast.NamedExpr
            ):
                targets, value = [node.target], node.value
            elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension):
                for sub in ast.walk(node.target):
                    if isinstance(sub, ast.Name):
                        values.setdefault(sub.id, []).append(None)
                continue
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                for sub in ast.walk(node.optional_vars):
                    if isinstance(sub, ast.Name):
                        values.setdefault(sub.id, []).append(None)
                continue
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(value)
                else:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            values.setdefault(sub.id, []).append(None)
                if isinstance(value, ast.Call):
                    callee = last_id(value.func)
                    last = last_id(target)
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
                    and name not in RANK_NAMES
                    and any(self.is_rank_expr(v) for v in assigned)
                    and all(self.is_rank_expr(v) or is_main_value(const(v)) for v in assigned)
                ):
                    self.rank_alias.add(name)
                    changed = True
                    continue
                if name in self.guard_alias or name in GUARD_NAMES or name in RANK_NAMES:
                    continue
                if name in self.rank_alias:
                    continue
                classes = [self.classify(v) for v in vals if v is not None and const(v) is not True]
                if not classes:
                    continue
                first = classes[0]
                if first != NEITHER and all(c == first for c in classes):
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
        name = last_id(target)
        return name in GUARD_DECORATORS

    # -- guard classification -----------------------------------------------------------------
    def is_rank_expr(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in RANK_NAMES or node.id in self.rank_alias
        if isinstance(node, ast.Attribute):
            return node.attr in RANK_NAMES
        if isinstance(node, ast.Subscript):
            key = const(node.slice)
            base = dotted_name(node.value) or ""
            return base.endswith("environ") and key in ENV_RANK_KEYS
        if isinstance(node, ast.Call):
            name = last_id(node.func)
            if name in ("int", "str") and node.args:
                return self.is_rank_expr(node.args[0])
            if name in RANK_FUNCS:
                return True
            dotted = dotted_name(node.func) or ""
            if (dotted.endswith("environ.get") or name == "getenv") and node.args:
                return const(node.args[0]) in ENV_RANK_KEYS
        return False

    def is_guard_atom(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in GUARD_ATTRS
        if isinstance(node, ast.Call):
            return last_id(node.func) in GUARD_FUNCS
        if isinstance(node, ast.Name):
            return node.id in GUARD_NAMES
        return False

    def classify(self, node: ast.expr) -> BranchGuards:
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
        if isinstance(node, ast.Call) and last_id(node.func) == "bool" and len(node.args) == 1:
            return self.classify(node.args[0])
        if isinstance(node, ast.Compare):
            return self._classify_compare(node)
        if isinstance(node, ast.Name) and node.id in self.guard_alias:
            return self.guard_alias[node.id]
        if self.is_guard_atom(node):
            return (True, False)
        if self.is_rank_expr(node):
            return (False, True)  # `if rank:` is true on every rank but 0
        return NEITHER

    def _classify_compare(self, node: ast.Compare) -> BranchGuards:
        if len(node.ops) != 1:
            return NEITHER
        op, left, right = node.ops[0], node.left, node.comparators[0]
        # flag == True / flag is False ...
        for a, b in ((left, right), (right, left)):
            value = const(b)
            if type(value) is bool and isinstance(op, ast.Eq | ast.Is | ast.NotEq | ast.IsNot):
                pos, neg = self.classify(a)
                same = isinstance(op, ast.Eq | ast.Is) == value
                return (pos, neg) if same else (neg, pos)
        if not self.is_rank_expr(left):
            if not self.is_rank_expr(right) or isinstance(op, ast.In | ast.NotIn):
                return NEITHER
            left, right = right, left
            op = FLIP.get(type(op), op)
        value = const(right)
        if isinstance(op, ast.Eq | ast.Is):
            return (True, False) if is_main_value(value) else NEITHER
        if isinstance(op, ast.NotEq | ast.IsNot):
            return (False, True) if is_main_value(value) else NEITHER
        if isinstance(op, ast.In | ast.NotIn):
            if not isinstance(right, ast.Tuple | ast.List | ast.Set) or not right.elts:
                return NEITHER
            items = [const(e) for e in right.elts]
            if not all(is_main_value(v) for v in items):
                return NEITHER
            return (True, False) if isinstance(op, ast.In) else (False, True)
        if type(value) is int:
            if (isinstance(op, ast.LtE) and value <= 0) or (isinstance(op, ast.Lt) and value <= 1):
                return (True, False)
            if (isinstance(op, ast.Gt) and value >= 0) or (isinstance(op, ast.GtE) and value >= 1):
                return (False, True)
        return NEITHER

    # -- receivers ----------------------------------------------------------------------------
    def _is_trainer_receiver(self, node: ast.expr) -> bool:
        if is_self_or_super(node):
            return self._cls is not None and self._cls.rsplit(".", 1)[-1] in self.trainer_classes
        last = last_id(node)
        return last is not None and (last in self.trainer_vars or "trainer" in last.lower())

    def _is_accelerator_receiver(self, node: ast.expr) -> bool:
        if is_self_or_super(node):
            return self._cls is not None and self._cls.rsplit(".", 1)[-1] in self.accelerator_classes
        last = last_id(node)
        return last is not None and (last in self.accelerator_vars or "accelerator" in last.lower())

    # -- side-effect recognition --------------------------------------------------------------
    def side_effect_kind(self, call: ast.Call) -> tuple[str | None, bool]:
        """(kind, guarded by its own arguments) for a call, kind None when not a side effect."""
        func = call.func
        resolved = self.resolve(func)
        if resolved is not None:
            if resolved in QUALIFIED:
                return QUALIFIED[resolved], False
            if resolved == "logging.basicConfig":
                return ("log_file" if kwarg(call, "filename") is not None else None), False
            if resolved in OPEN_FUNCS or (isinstance(func, ast.Name) and func.id == "open"):
                if isinstance(func, ast.Name) and func.id in self.by_name:
                    return None, False  # the module defines its own open()
                mode = kwarg(call, "mode")
                if mode is None and len(call.args) >= 2:
                    mode = call.args[1]
                return ("open_write" if is_write_mode(mode) else None), False
        if isinstance(func, ast.Name):
            return None, False
        if not isinstance(func, ast.Attribute):
            return None, False
        attr, receiver = func.attr, func.value
        if attr in TRAINER_RANK_AWARE and self._is_trainer_receiver(receiver):
            return None, False
        if attr in ACCELERATOR_RANK_AWARE and self._is_accelerator_receiver(receiver):
            return None, False
        if attr == "open":
            mode = kwarg(call, "mode")
            if mode is None and call.args:
                first = const(call.args[0])
                if isinstance(first, str) and MODE_RE.match(first):
                    mode = call.args[0]  # Path.open("w")
                elif len(call.args) >= 2:
                    mode = call.args[1]  # tarfile.open(name, "w"), fs.open(path, "wb")
            return ("open_write" if is_write_mode(mode) else None), False
        if attr in TO_FILE_KINDS:
            has_dest = bool(call.args) or any(kw.arg in TO_FILE_PATH_KWARGS for kw in call.keywords)
            return (TO_FILE_KINDS[attr] if has_dest else None), False
        if attr in ATTR_KINDS:
            kind = ATTR_KINDS[attr]
            if kind == "save_pretrained":
                flag = kwarg(call, "is_main_process")
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
            body_end = self.block(node.body, g or pos) or terminates(node.body)
            else_end = self.block(node.orelse, g or neg) or terminates(node.orelse)
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
                handlers_end = (self.block(handler.body, g) or terminates(handler.body)) and handlers_end
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
                and const(node.value) == "auto"
                and any(last_id(t) == "device_map" for t in targets)
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
                if k is not None and const(k) == "device_map" and const(v) == "auto":
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
            if kw.arg == "device_map" and const(kw.value) == "auto":
                self.device_map.append(self.pos(kw.value))
        callee = last_id(func)
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
                        function=display(r.function),
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
            load_calls=find_load_calls(self.tree, self.pos),
            argument_parsers=find_argument_parsers(self.tree, self.resolve, self.pos),
        )
