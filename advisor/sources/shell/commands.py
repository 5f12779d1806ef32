"""How the shell interpreter reads a launch command: the launcher the words start (launchers.find), its
flags by its spec's flag table, the training script (or `-m` module, or a subcommand's config) and the
script's own flags. What a launcher does differently is its spec's data (form, flags, launcher_flag and
starts, no_module_flags, module_words), never its name."""

from __future__ import annotations

from collections.abc import Callable

from advisor.core.document import KeyPath, Span
from advisor.sources import launchers
from advisor.sources.launchers import starts_launcher
from advisor.sources.launchers.spec import Flags, LauncherSpec
from advisor.sources.shell.expand import Field, Var
from advisor.sources.shell.lexer import MAX_COMMANDS, NEG_NUM_RE
from advisor.sources.shell.model import LaunchCommand, Word
from advisor.sources.shell.words import Words
from advisor.sources.shell.workdir import DirTracker
from advisor.sources.shell.wrappers import RUNNERS, SHELLS, SIMPLE_WRAPPERS, WRAPPERS

_PY_VALUE_OPTS = {"-W", "-X", "-Q"}  # python options that take a value


def is_cmd_name(text: str | None) -> bool:
    if not text:
        return False
    base = text.rsplit("/", 1)[-1]
    return bool(
        starts_launcher(base)
        or base in WRAPPERS
        or base in SIMPLE_WRAPPERS
        or base in SHELLS
        or base in RUNNERS
        or base == "env"
    )


def is_flag(f: Field) -> bool:
    if not f.pieces or f.pieces[0].text is None:
        return False
    t = f.known_prefix
    if not t.startswith("-") or t == "-":
        return False
    return not NEG_NUM_RE.match(t)


def _norm(name: str, shorts: tuple[tuple[str, str], ...] = ()) -> str:
    if name.startswith("--"):
        key = name[2:]
    else:
        key = name[1:]
        key = dict(shorts).get(key, key)
    return key.replace("-", "_")


def _looks_like_script(f: Field) -> bool:
    t = f.text
    return (t is not None and t.endswith(".py")) or f.raw_text().rstrip("\"'").endswith(".py")


def _one_value(key: str) -> bool:
    """Whether a script flag takes exactly one word: a TrainingArguments field that is not a list.
    HfArgumentParser gives nargs="+" only to list fields (transformers 5.24 hf_argparser.py:220-222,
    `_parse_dataclass_field`), so in `--deepspeed ds.json t.yaml` the second word is positional."""
    from advisor.sources.known_keys import field_type

    kind = field_type("training_args", key)
    return kind is not None and "list" not in kind.kind.split("|") and kind.kind != "any"


class LauncherReading(Words):
    """The interpreter's reading of launch commands: launcher flags, the script and its flags."""

    # declared for the type checker: set and defined by the interpreter, Shell (interpreter.py)
    commands: list[LaunchCommand]
    key_spans: dict[KeyPath, Span]
    value_spans: dict[KeyPath, Span]
    span_override: int | None
    dirs: DirTracker
    problem: Callable[..., None]

    # -- launchers ------------------------------------------------------------------------------

    def launcher(self, fields: list[Field], i: int, env: dict[str, Var], start_off: int) -> None:
        names = [f.text for f in fields[i : i + 3]]
        found = launchers.find(names)
        if found is None:
            return
        spec, used = found
        cmd: LaunchCommand | None
        if spec.form == "interpreter":
            cmd, koffs = self.python(spec, fields, i + used)
        elif spec.form == "server":
            cmd, koffs = self.server(spec, fields, i + used)
        elif spec.form == "subcommand":
            cmd, koffs = self.subcommand(spec, fields, i + used)
        else:
            cmd, koffs = self.spec_launch(spec, fields, i + used)
        if cmd is None:
            return
        off = self.span_override if self.span_override is not None else start_off
        if len(self.commands) >= MAX_COMMANDS:
            if len(self.commands) == MAX_COMMANDS:
                self.problem(
                    f"more than {MAX_COMMANDS} launch commands: the rest are not read",
                    off,
                    severity="warning",
                )
                self.commands.append(cmd)  # a sentinel, removed when the script is done
            return
        cmd.span = self.span(off)
        cmd.env = {k: v.word for k, v in env.items()}
        cmd.workdir = self.dirs.current
        idx = len(self.commands)
        self.commands.append(cmd)
        base_path: KeyPath = ("commands", idx)
        self.key_spans[base_path] = cmd.span
        self.value_spans[(*base_path, "launcher")] = self.span(fields[i].offset())
        for k, v in env.items():
            self.key_spans[(*base_path, "env", k)] = self.span(v.key_off)
            self.value_spans[(*base_path, "env", k)] = v.word.span
        for group in ("launcher_args", "script_args"):
            for k, w in getattr(cmd, group).items():
                self.value_spans[(*base_path, group, k)] = w.span
                if (group, k) in koffs:
                    self.key_spans[(*base_path, group, k)] = self.span(koffs[(group, k)])
        if cmd.script is not None:
            self.value_spans[(*base_path, "script")] = cmd.script.span
        for j, w in enumerate(cmd.positional):
            self.value_spans[(*base_path, "positional", j)] = w.span

    def flags(
        self, fields: list[Field], i: int, spec: Flags, group: str, koffs: dict, args: dict[str, Word]
    ) -> tuple[int, bool]:
        """Launcher flags from i up to the first word that is not a flag or a flag's value."""
        module = False
        n = len(fields)
        while i < n:
            f = fields[i]
            if not is_flag(f):
                break
            if f.text == "--":
                i += 1
                break
            sp = f.split_eq()
            if sp is not None:
                key = _norm(sp[0], spec.shorts)
                args[key] = self.word(sp[1])
                koffs[(group, key)] = f.offset()
                i += 1
                continue
            key = _norm(f.text if f.text is not None else f.known_prefix, spec.shorts)
            koffs[(group, key)] = f.offset()
            if key in spec.bools:
                args[key] = self.true_word(f)
                module = module or key == "module"
                i += 1
                continue
            nxt = fields[i + 1] if i + 1 < n else None
            if nxt is None or is_flag(nxt) or (key not in spec.values and _looks_like_script(nxt)):
                args[key] = self.true_word(f)
                i += 1
                continue
            args[key] = self.word(nxt)
            i += 2
        return i, module

    def script_flags(
        self, fields: list[Field], i: int, cmd: LaunchCommand, koffs: dict, spec: LauncherSpec | None = None
    ) -> None:
        """Flags and positional words after the script. With spec, the launcher's own flags
        (trl: accelerate's) go to launcher_args."""
        n = len(fields)
        after = False
        own = launchers.spec_of(cmd.launcher)
        while i < n:
            f = fields[i]
            if after or not is_flag(f):
                cmd.positional.append(self.word(f))
                i += 1
                continue
            if f.text == "--":
                chosen = cmd.launcher_args.get(own.launcher_flag) if own.launcher_flag else None
                started = launchers.started_launcher(own, chosen.text if chosen is not None else None)
                if started is not None:  # axolotl passes what follows `--` to the launcher it starts
                    self.flags(fields, i + 1, started.flags, "launcher_args", koffs, cmd.launcher_args)
                    return
                after = True
                i += 1
                continue
            sp = f.split_eq()
            if sp is not None:
                name, value = sp[0], [sp[1]]
                j = i + 1
            else:
                name = f.text if f.text is not None else f.known_prefix
                value = []
                j = i + 1
                most = 1 if _one_value(_norm(name)) else n
                while j < n and len(value) < most and not is_flag(fields[j]) and fields[j].text != "--":
                    value.append(fields[j])
                    j += 1
            key = _norm(name)
            group = "script_args"
            target = cmd.script_args
            theirs = spec.subcommand_flags if spec is not None else None
            if theirs is not None and theirs.knows(key) and key not in spec.run_keeps:  # type: ignore[union-attr]
                group, target = "launcher_args", cmd.launcher_args
            if own.launcher_flag and key == own.launcher_flag:
                group, target = "launcher_args", cmd.launcher_args
            koffs[(group, key)] = f.offset()
            if not value:
                target[key] = self.true_word(f)
            elif len(value) == 1:
                target[key] = self.word(value[0])
            else:
                target[key] = self.joined_word(value)
            i = j

    def spec_launch(self, spec: LauncherSpec, fields: list[Field], i: int) -> tuple[LaunchCommand, dict]:
        cmd = LaunchCommand(spec.name, Span(1, 1))
        koffs: dict = {}
        i, module = self.flags(fields, i, spec.flags, "launcher_args", koffs, cmd.launcher_args)
        if any(flag in cmd.launcher_args for flag in spec.no_module_flags):
            module = False
        if i < len(fields):
            cmd.script = self.word(fields[i])
            cmd.module = module
            self.script_flags(fields, i + 1, cmd, koffs)
        return cmd, koffs

    def subcommand(self, spec: LauncherSpec, fields: list[Field], i: int) -> tuple[LaunchCommand, dict]:
        """`llamafactory-cli train cfg.yaml`, `trl sft ...`: the command word is not a file."""
        cmd = LaunchCommand(spec.name, Span(1, 1), subcommand=True)
        koffs: dict = {}
        cmd.script = self.word(fields[i])
        self.script_flags(fields, i + 1, cmd, koffs, spec)
        return cmd, koffs

    def server(self, spec: LauncherSpec, fields: list[Field], i: int) -> tuple[LaunchCommand, dict]:
        """An inference server (vLLM): every flag goes to launcher_args (dashes as underscores, its
        short forms -tp/-pp/-dp spelled out), the model (a positional word or --model) to
        launcher_args["model"]. There is no training script and no TrainingArguments."""
        cmd = LaunchCommand(spec.name, Span(1, 1))
        koffs: dict = {}
        own_flags = spec.flags
        n = len(fields)
        while i < n:
            f = fields[i]
            if not is_flag(f):
                word = self.word(f)
                if "model" not in cmd.launcher_args and not cmd.positional:
                    cmd.launcher_args["model"] = word
                    koffs[("launcher_args", "model")] = f.offset()
                cmd.positional.append(word)
                i += 1
                continue
            sp = f.split_eq()
            if sp is not None:
                key = _norm(sp[0], own_flags.shorts)
                koffs[("launcher_args", key)] = f.offset()
                cmd.launcher_args[key] = self.word(sp[1])
                i += 1
                continue
            key = _norm(f.text if f.text is not None else f.known_prefix, own_flags.shorts)
            koffs[("launcher_args", key)] = f.offset()
            nxt = fields[i + 1] if i + 1 < n else None
            if nxt is None or is_flag(nxt) or key in own_flags.bools or key.startswith("no_"):
                cmd.launcher_args[key] = self.true_word(f)
                i += 1
            else:
                cmd.launcher_args[key] = self.word(nxt)
                i += 2
        return cmd, koffs

    def python(self, python: LauncherSpec, fields: list[Field], i: int) -> tuple[LaunchCommand | None, dict]:
        n = len(fields)
        pyargs: dict[str, Word] = {}
        koffs: dict = {}
        module: Field | None = None
        while i < n:
            f = fields[i]
            t = f.text
            if t is None or not t.startswith("-") or t == "-":
                break
            if t == "-m" or (t.startswith("-m") and not t.startswith("--")):
                if t == "-m":
                    if i + 1 >= n:
                        return None, {}
                    module = fields[i + 1]
                    i += 2
                else:
                    module = Field([p for p in f.pieces], None, None)
                    first = module.pieces[0]
                    module.pieces[0] = first.sub(2, len(first.text or "")) if first.text else first
                    i += 1
                break
            if t.startswith("-c"):
                return None, {}  # python -c '...': inline code, not a training script
            if t in _PY_VALUE_OPTS and i + 1 < n:
                key = t[1:]
                pyargs[key] = self.word(fields[i + 1])
                koffs[("launcher_args", key)] = f.offset()
                i += 2
                continue
            key = t.lstrip("-").replace("-", "_")
            pyargs[key] = self.true_word(f)
            koffs[("launcher_args", key)] = f.offset()
            i += 1
        if module is None:
            if i >= n or fields[i].text == "-":
                # `python - <<PY`: the program is read from standard input (a here-document: Python's
                # docs, Command line "-"), inline code like -c, no training script file
                return None, {}
            cmd = LaunchCommand(python.name, Span(1, 1), launcher_args=pyargs)
            cmd.script = self.word(fields[i])
            self.script_flags(fields, i + 1, cmd, koffs)
            return cmd, koffs
        mod = module.text
        spec = launchers.by_module(mod)
        if spec is not None and spec.form == "script":
            return self.spec_launch(spec, fields, i)
        if spec is not None and spec.form == "server":
            word = spec.module_words.get(mod or "")
            if word is not None and (i >= n or fields[i].text != word):
                return None, {}
            return self.server(spec, fields, i + (1 if word is not None else 0))
        owner = spec if spec is not None else python
        cmd = LaunchCommand(owner.name, Span(1, 1), launcher_args=pyargs if owner.is_interpreter else {})
        cmd.script = self.word(module)
        cmd.module = True
        self.script_flags(fields, i, cmd, koffs)
        return cmd, koffs
