"""Flags a launch command passes to a training script, against the arguments that script declares.

The script is read (never run) from the launch command's script word, inside the project boundary. When
it builds one ``HfArgumentParser`` / ``TrlParser`` from dataclasses we can read whole (its own, with their
own bases, and library classes such as ``transformers.Seq2SeqTrainingArguments`` or TRL's configs), every
``--flag`` is judged against the union of their fields at the releases the project pins
(advisor.facts.versions): a flag no dataclass has is unknown (HfArgumentParser raises ValueError "Some
specified arguments are not used by the HfArgumentParser"), a removed one says when it went, a
deprecated one says what replaces it; and when the script parses with ``return_remaining_strings=True``
(or ``parse_known_args``) an unknown flag is not refused but set aside, silently: artidoro/qlora's
qlora.py does this, so ``--evaluation_strategy steps`` on a transformers without that field means no
evaluation ever runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.document import Document, Location, pointer
from advisor.core.suggest import close_matches
from advisor.facts.script_ast import MAX_SCRIPT_BYTES, ArgumentParsing, analyse_script
from advisor.plan.context import CheckContext
from advisor.plan.run_plan import RunPlan
from advisor.sources import launchers

# Library dataclasses by module prefix: (package in versions.json, extends transformers.TrainingArguments)
_TRANSFORMERS_CLASSES = {"TrainingArguments", "Seq2SeqTrainingArguments"}
_TRL_NOT_TRAINING = {"ModelConfig", "ScriptArguments", "DatasetConfig", "DatasetMixtureConfig"}
# The calls that parse sys.argv (transformers hf_argparser.py, trl scripts/utils.py TrlParser,
# alignment-handbook's H4ArgumentParser.parse)
_ARGV_METHODS = frozenset(
    {"parse_args_into_dataclasses", "parse_args_and_config", "parse_known_args", "parse"}
)
# Flags every HfArgumentParser / TrlParser accepts besides the fields (argparse's own and TrlParser's).
_PARSER_FLAGS = frozenset({"help", "h", "config"})


def _analysed(path: Path, context: CheckContext) -> ArgumentParsing | str | None:
    """The script's one argument parser; "several" when it builds more than one; None when none (the
    script read once per check, through the check's context)."""
    return context.derived("argument-parser", path, lambda: _parser_of(path, context))


def _parser_of(path: Path, context: CheckContext) -> ArgumentParsing | str | None:
    text = context.script_text(path, MAX_SCRIPT_BYTES)
    if text is None:
        return None
    facts = analyse_script(text)
    parsers = facts.argument_parsers
    if facts.syntax_error is None and (not parsers or not all(p.complete for p in parsers)):
        parsers = _followed(path, text, parsers, context)
    if len(parsers) > 1:
        return "several"
    return parsers[0] if parsers else None


def _pre_parsed(path: Path, context: CheckContext) -> frozenset[str]:
    return context.derived(
        "pre-parser", path, lambda: _pre_parser_flags(context.script_text(path, MAX_SCRIPT_BYTES))
    )


def _pre_parser_flags(text: str | None) -> frozenset[str]:
    """Flags an argparse pre-parser of the script declares when it also calls `parse_known_args`
    (`known, rest = pre.parse_known_args()`, then `HfArgumentParser(...).parse_args_into_dataclasses(
    args=rest)`): those flags may never reach the HF parser, so they are not judged against its
    dataclasses (whether the rest is what the HF parser reads is not followed)."""
    import ast

    from advisor.sources.python_source import parsed, tree_nodes

    tree = parsed(text) if text is not None else None
    if tree is None:
        return frozenset()
    calls = [n for n in tree_nodes(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    if not any(c.func.attr == "parse_known_args" for c in calls):  # type: ignore[attr-defined]
        return frozenset()
    return frozenset(
        arg.value[2:].replace("-", "_")
        for c in calls
        if c.func.attr == "add_argument"  # type: ignore[attr-defined]
        for arg in c.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("--")
    )


def _followed(
    path: Path, text: str, own: tuple[ArgumentParsing, ...], context: CheckContext
) -> tuple[ArgumentParsing, ...]:
    """The parsers again with the project's own modules the script imports read (FastChat's
    train_lora.py takes ModelArguments from fastchat.train.train; train_mem.py only calls its train())."""
    from advisor.facts.script_ast.project_modules import follow_argument_parsers

    boundary = context.boundary_for(context.settings_near(path), [path])
    return follow_argument_parsers(path, text, own, boundary.roots, boundary.contains)


def _script_path(
    doc: Document, raw: str, settings: Any, context: CheckContext, workdir: Any = None
) -> Path | None:
    path = context.launched_script(doc.path, raw, settings, workdir)
    return path if path is not None and path.suffix == ".py" else None


def _library_sources(parsing: ArgumentParsing) -> list[tuple[str, tuple[str, ...]]] | None:
    """[(package, classes)] for the library bases; None when one of them has no key data."""
    from advisor.facts import versions

    by_package: dict[str, list[str]] = {}
    for qualified in parsing.library_bases:
        package, _, rest = qualified.partition(".")
        name = rest.rsplit(".", 1)[-1] if rest else ""
        if package == "transformers" and name in _TRANSFORMERS_CLASSES:
            by_package.setdefault("transformers", []).append(name)
        elif package == "trl" and versions.has_class("trl", name):
            by_package.setdefault("trl", []).append(name)
            if name not in _TRL_NOT_TRAINING:
                by_package.setdefault("transformers", []).append("TrainingArguments")
        elif package == "peft" and versions.has_class("peft", name):
            by_package.setdefault("peft", []).append(name)
        else:
            return None
    return [(p, tuple(dict.fromkeys(c))) for p, c in by_package.items()]


def _judge(
    key: str, parsing: ArgumentParsing, sources: list[tuple[str, tuple[str, ...]]], targets: dict[str, Any]
) -> tuple[str, str, str | None]:
    """(state, detail, suggestion): state is present, deprecated, removed or unknown."""
    from advisor.facts import versions

    known = set(parsing.fields) | _PARSER_FLAGS
    statuses = []
    for package, classes in sources:
        target = targets[package]
        known |= versions.keys_at(package, classes, target.index)
        statuses.append((target, versions.key_status(package, classes, key, target.index)))
    if key in parsing.fields or key in _PARSER_FLAGS or any(st.state == "present" for _, st in statuses):
        return "present", "", None
    # HfArgumentParser adds --no_X for a bool field defaulting to True; argparse takes a unique prefix
    if key.startswith("no_") and key[3:] in known:
        return "present", "", None
    # (the key itself is no prefix of itself: a removed or deprecated field still listed in `known` at
    # another release, --evaluation_strategy, must reach the verdicts below)
    prefixed = [k for k in known if k.startswith(key) and k != key]
    if len(prefixed) == 1:
        return "present", "", None
    for state in ("deprecated", "removed"):
        for target, st in statuses:
            if st.state == state:
                use = f"; use --{st.replacement}" if st.replacement else ""
                if state == "deprecated":
                    return "deprecated", f"is deprecated in {target.label}{use}", None
                return (
                    "removed",
                    f"was removed in {target.package} {st.first} (last in {st.last}): {target.label} has no "
                    f"such argument{use}",
                    None,
                )
    guess = close_matches(key, sorted(known), n=1, cutoff=0.8)
    added = next((f" (added in {t.package} {st.first})" for t, st in statuses if st.state == "new"), "")
    labels = ", ".join(t.label for t, _ in statuses)
    detail = f"is an argument of none of its dataclasses{added}" + (f" at {labels}" if labels else "")
    return "unknown", detail, guess[0] if guess else None


def _added(detail: str) -> str:
    """' (added in transformers 4.45)' of an unknown flag's detail: why a flag of a later release is
    unknown at the pinned one; '' when the release that added it is not the reason."""
    start = detail.find(" (added in ")
    return detail[start : detail.index(")", start) + 1] if start >= 0 else ""


def script_flag_items(doc: Document, context: CheckContext) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {
        "unknown_keys": [],
        "removed_keys": [],
        "deprecated_keys": [],
        "dropped_flags": [],
    }
    commands = getattr(doc.data, "commands", None) or []
    settings = None
    for idx, cmd in enumerate(commands):
        spec = launchers.spec_of(cmd.launcher)
        # a server, or a launcher running its own trainer: no script of the project reads the flags
        if spec.serves or spec.runs_trainer or cmd.module or not cmd.script_args:
            continue
        if cmd.script is None or not cmd.script.text:
            continue
        if settings is None:
            settings = context.settings_near(doc.path)
        path = _script_path(doc, cmd.script.text, settings, context, getattr(cmd, "workdir", None))
        if path is None:
            continue
        parsing = _analysed(path, context)
        if not isinstance(parsing, ArgumentParsing) or not parsing.complete:
            continue
        if not set(parsing.methods) & _ARGV_METHODS:
            continue  # only parse_yaml_file / parse_dict: the command line is not this parser's
        sources = _library_sources(parsing)
        if sources is None:
            continue
        from advisor.facts import versions

        # the environment the script runs in: its folder's pins first (a sub-project's requirements.txt)
        targets = versions.targets_for(doc.path, settings, context, script=path)
        if any(p not in targets for p, _ in sources):
            continue
        pre_parsed = _pre_parsed(path, context)
        _judge_command(doc, idx, cmd, parsing, sources, targets, path, out, pre_parsed)
    return out


def _leftovers_read_by_script(
    cmd: Any,
    parsing: ArgumentParsing,
    sources: list[tuple[str, tuple[str, ...]]],
    targets: dict[str, Any],
    pre_parsed: frozenset[str],
) -> frozenset[str]:
    """The flags whose strings the script reads back from its leftovers (MetaMath train_math.py:251-252:
    `int(remaining_args[1])` after return_remaining_strings=True). HfArgumentParser hands back the strings
    no class takes in the order written (argparse parse_known_args; transformers hf_argparser.py:338-354):
    `--flag value` two of them, a bare switch one; a constant index names the flag it falls in."""
    if parsing.reads_leftovers is None:
        return frozenset()
    indices = parsing.reads_leftovers[2]
    out: set[str] = set()
    position = 0
    for key, word in cmd.script_args.items():
        name = key.replace("-", "_")
        if name in pre_parsed or _judge(name, parsing, sources, targets)[0] in ("present", "deprecated"):
            continue
        width = 1 if str(getattr(word, "raw", "")).startswith("-") else 2
        if indices is None or any(position <= i < position + width for i in indices):
            out.add(key)
        position += width
    return frozenset(out)


def _judge_command(
    doc: Document,
    idx: int,
    cmd: Any,
    parsing: ArgumentParsing,
    sources: list[tuple[str, tuple[str, ...]]],
    targets: dict[str, Any],
    script: Path,
    out: dict[str, list[dict[str, Any]]],
    pre_parsed: frozenset[str] = frozenset(),
) -> None:
    from advisor.core.paths import relative

    shown = relative(script) if script.is_absolute() else str(script)
    # where the parser is: the script, or the project module whose function the script calls
    built = relative(Path(parsing.source)) if parsing.source else shown
    classes = ", ".join(c.name for c in parsing.classes)
    read_by_script = _leftovers_read_by_script(cmd, parsing, sources, targets, pre_parsed)
    for key in cmd.script_args:
        name = key.replace("-", "_")
        if name in pre_parsed or key in read_by_script:
            continue
        state, detail, guess = _judge(name, parsing, sources, targets)
        if state == "present":
            continue
        path = ("commands", idx, "script_args", key)
        span = doc.span(path)
        location = Location(doc.path, span.line, span.col, pointer(path))
        hint = f" (did you mean --{guess}?)" if guess else ""
        base = f"--{key} {detail}"
        if state == "deprecated":
            out["deprecated_keys"].append(
                {"location": location, "key": key, "message": base, "severity": None}
            )
            continue
        if parsing.drops_unknown is not None:
            line, _col, how = parsing.drops_unknown
            out["dropped_flags"].append(
                {
                    "location": location,
                    "key": key,
                    "suggestion": guess,
                    "message": f"--{key} is dropped without a word: {built} parses with {how} "
                    f"({built}:{line}), "
                    f"so a flag none of {classes} has is set aside, not refused{hint}",
                    "severity": None,
                }
            )
        # HfArgumentParser (and TrlParser, H4ArgumentParser on top of it) reads sys.argv with
        # parse_known_args and raises on what is left (transformers 5.24 hf_argparser.py:338-354):
        # ValueError, not argparse's "unrecognized arguments" exit
        consequence = (
            ""
            if parsing.drops_unknown is not None
            else f"; {built}'s {parsing.parser} raises ValueError at start ('Some specified arguments are "
            "not used by the HfArgumentParser')"
        )
        if state == "removed":
            out["removed_keys"].append(
                {"location": location, "key": key, "message": base + consequence, "severity": None}
            )
        elif parsing.drops_unknown is None:
            from advisor.facts import versions

            unsure = versions.unknown_release_note(targets, (p for p, _ in sources))  # a git commit pinned
            out["unknown_keys"].append(
                {
                    "location": location,
                    "key": key,
                    "suggestion": guess,
                    "message": f"--{key} is not an argument of {shown} ({classes}){_added(detail)}{hint}"
                    f"{consequence}{unsure}",
                    "severity": None if unsure else "error",
                }
            )


# --------------------------------------------------------------------------------------------------
# keys of a YAML/JSON file that a run hands to the script (advisor.plan.discover links them)
# --------------------------------------------------------------------------------------------------

# How the script reads a file given as its sole argument: transformers hf_argparser.py parse_dict
# (5.24, lines 374-383) takes `{f.name for f in records.fields(dtype) if f.init}` of each class and
# raises ValueError("Some keys are not used by the HfArgumentParser") for the rest unless
# allow_extra_keys=True; parse_yaml_file / parse_json_file go through it (lines 386-420).
_FILE_METHODS = frozenset({"parse_yaml_file", "parse_json_file", "parse_dict", "parse"})
# `--config recipe.yaml`: trl 1.16 scripts/utils.py TrlParser.parse_args_and_config (lines 321-356) sets
# each key as its argument's default and raises ValueError("Unknown arguments from config file") for
# the rest (fail_with_unknown_args defaults to True); its `env` mapping is consumed first (lines 331-338).
_CONFIG_METHODS = frozenset({"parse_args_and_config", "parse"})
_CONFIG_FILE_KEYS = frozenset({"env"})

ScriptJudge = tuple[Path, str, ArgumentParsing, list[tuple[str, tuple[str, ...]]], dict[str, Any]]


def config_consumers(doc: Document, context: CheckContext) -> list[ScriptJudge] | None:
    """[(script, how, parsing, library sources, targets)] for every run that hands ``doc`` to a script;
    None when there is none, or when one of them cannot be read whole (then the file alone judges)."""
    if not doc.consumers:
        return None
    from advisor.facts import versions

    settings = context.settings_near(doc.path)
    out: list[ScriptJudge] = []
    for script, how in doc.consumers:
        parsing = _analysed(script, context)
        if not isinstance(parsing, ArgumentParsing) or not parsing.complete:
            return None
        methods = set(parsing.methods)
        if how == "config" and not (parsing.parser != "HfArgumentParser" and methods & _CONFIG_METHODS):
            return None
        if how == "positional" and not methods & _FILE_METHODS:
            return None  # the script parses the command line only: the file is not read through it
        sources = _library_sources(parsing)
        if sources is None:
            return None
        targets = versions.targets_for(doc.path, settings, context, script=script)
        if any(p not in targets for p, _ in sources):
            return None
        out.append((script, how, parsing, sources, targets))
    return out


def own_fields(doc: Document, context: CheckContext) -> frozenset[str]:
    """The fields the scripts that read ``doc`` declare in their own dataclasses (a `SimPOConfig(CPOConfig)`
    or `SimPOConfig(TrainingArguments)` adding `gamma_beta_ratio`), whether or not their parsers can be read
    whole: when the file is judged alone, these keys are the scripts' and known. A file no run hands to a
    script takes the fields of the project's scripts whose parser reads a config file."""
    scripts = [script for script, _how in doc.consumers] or _project_file_parsers(doc.path, context)
    out: set[str] = set()
    for script in scripts:
        parsing = _analysed(script, context)
        if isinstance(parsing, ArgumentParsing):
            out |= parsing.fields
    return frozenset(out)


# A project's own scripts, looked through for the parsers that may read a config no launch names (Firefly's
# train.py reads `--train_args_file x.json` with parse_json_file; its launches are only in the README).
_PARSER_WORDS = ("HfArgumentParser", "TrlParser", "ArgumentParser((")
_READS_A_FILE = _FILE_METHODS | _CONFIG_METHODS


def _project_file_parsers(path: Path, context: CheckContext) -> list[Path]:
    """The Python files of the project holding ``path`` whose parser reads a config file (parse_yaml_file,
    parse_json_file, parse_dict, TrlParser's --config): a file that no launch hands to a script is read by
    one of them, so their dataclass fields are its keys too."""
    root = context.project_root_of(path)
    if root is None:
        return []
    return context.derived("project-file-parsers", root, lambda: _file_parsers_under(root, context))


def _file_parsers_under(root: Path, context: CheckContext) -> list[Path]:
    out: list[Path] = []
    for script in context.project_files(root, (".py",)):
        text = context.script_text(script, MAX_SCRIPT_BYTES)
        if not text or not any(w in text for w in _PARSER_WORDS):
            continue
        parsing = _analysed(script, context)
        if isinstance(parsing, ArgumentParsing) and set(parsing.methods) & _READS_A_FILE:
            out.append(script)
    return out


def _file_verdict(
    key: str,
    how: str,
    parsing: ArgumentParsing,
    sources: list[tuple[str, tuple[str, ...]]],
    targets: dict[str, Any],
) -> tuple[str, str, str | None]:
    """(state, detail, suggestion) of one top-level key read through the script's parser: exact field
    names only (no argparse prefixes or --no_ forms: the file never goes through argparse's matching)."""
    from advisor.facts import versions

    if key in parsing.fields or (how == "config" and key in _CONFIG_FILE_KEYS):
        return "present", "", None
    known = set(parsing.fields)
    statuses = []
    for package, classes in sources:
        target = targets[package]
        known |= versions.keys_at(package, classes, target.index)
        statuses.append((target, versions.key_status(package, classes, key, target.index)))
    if any(st.state == "present" for _, st in statuses):
        return "present", "", None
    for target, st in statuses:
        use = f"; use {st.replacement}" if st.replacement else ""
        if st.state == "deprecated":
            return "deprecated", f"'{key}' is deprecated in {target.label}{use}", None
        if st.state == "removed":
            detail = f"'{key}' was removed in {target.package} {st.first} (last in {st.last}){use}"
            return "removed", detail, None
    guess = close_matches(key, sorted(known), n=1, cutoff=0.8)
    return "unknown", "", guess[0] if guess else None


def config_key_items(doc: Document, consumers: list[ScriptJudge]) -> dict[str, list[dict[str, Any]]]:
    """The top-level keys of ``doc`` judged per run against its script's dataclasses; one finding per key
    however many runs read the file, naming the scripts that do not take it."""
    from advisor.core.paths import relative
    from advisor.facts import versions

    out: dict[str, list[dict[str, Any]]] = {"unknown_keys": [], "removed_keys": [], "deprecated_keys": []}
    data = doc.data if isinstance(doc.data, dict) else {}
    for key in data:
        if not isinstance(key, str):
            continue
        verdicts = []
        for script, how, parsing, sources, targets in consumers:
            state, detail, guess = _file_verdict(key, how, parsing, sources, targets)
            if state != "present":
                verdicts.append((script, how, parsing, state, detail, guess))
        if not verdicts:
            continue
        span = doc.span((key,))
        location = Location(doc.path, span.line, span.col, pointer((key,)))
        _script, _how, _parsing, state, detail, guess = verdicts[0]
        if state in ("deprecated", "removed"):
            item = {"location": location, "key": key, "message": detail, "severity": None}
            out[f"{state}_keys"].append(item)
            continue
        names = ", ".join(dict.fromkeys(relative(v[0]) for v in verdicts))
        classes = ", ".join(dict.fromkeys(c.name for v in verdicts for c in v[2].classes))
        refuses = [v for v in verdicts if v[2].drops_unknown is None]
        hint = f" (did you mean '{guess}'?)" if guess else ""
        consequence = (
            ": the script's parser raises ValueError on it at start"
            if refuses
            else ": the script keeps it aside unread"
        )
        unsure = "".join(
            dict.fromkeys(
                versions.unknown_release_note(t, (p for p, _ in src)) for _s, _h, _p, src, t in consumers
            )
        )  # a git commit pinned: no error
        out["unknown_keys"].append(
            {
                "location": location,
                "key": key,
                "suggestion": guess,
                "message": f"'{key}' is not a field of {names} ({classes}){hint}{consequence}{unsure}",
                "severity": "error" if refuses and not unsure else None,
            }
        )
    return out


def parser_fact(plan: RunPlan, shown: Path) -> dict[str, Any] | None:
    """`script.parser`: the run's script's one argument parser, the names it accepts and where each comes
    from (own fields by class; library bases by qualified name), and how the run hands it its file."""
    script = plan.spec.script
    if script is None:
        return None
    context = plan.context
    parsing = _analysed(script.path, context)
    if not isinstance(parsing, ArgumentParsing):
        return None
    from advisor.core.paths import relative

    training = plan.spec.training
    how = None
    if training is not None:
        how = next((h for p, h in training.consumers if p == script.path), None)
    return {
        "name": parsing.parser,
        "location": Location(
            Path(relative(Path(parsing.source))) if parsing.source else shown, parsing.line, parsing.col
        ),
        "complete": parsing.complete,
        "drops_unknown": parsing.drops_unknown is not None,
        "fields": {f: c.name for c in reversed(parsing.classes) for f in c.fields},
        "library_bases": list(parsing.library_bases),
        "config_file": str(training.path) if training is not None and how is not None else None,
        "config_passed": how,
        "config_judged": training is not None
        and how is not None
        and config_consumers(training, context) is not None,
    }
