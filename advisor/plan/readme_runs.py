"""Which launch commands of a README's code blocks (advisor/sources/readme_launch.py) become runs.

A README command is documentation, so it only connects what nothing else connects: it makes no run when
a launch script of the project already launches the same training config (or, naming none, the same
training script); the script is what is run, and the README may be out of date. It makes no run either
when it does not start training that can be told from the files: a server (`vllm serve`), or a plain
`python X.py` whose X.py neither builds a Trainer, TrainingArguments or a TRL trainer, nor parses them
(HfArgumentParser), nor calls `backward` (an inference, download or evaluation script), unless the command
hands it a training, accelerate or DeepSpeed config. Two README commands that are the same command (a
README.md and its README_zh.md translation) are one run, the first; the same files under another launcher or
other flags (`python train.py` and `torchrun --nproc_per_node=4 train.py`) are two."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from advisor.core.paths import relative, resolved
from advisor.sources import launchers
from advisor.sources.python_source import parsed

# a run is discover.RunSpec, typed Any here: discover imports this module
RunSpec = Any

_TRAINS = frozenset({"backward", "HfArgumentParser", "TrainingArguments", "Seq2SeqTrainingArguments"})


def documented_run_name(path: Path, line: int) -> str:
    """A README run is named by the line of its command, however many the file holds: `README.md:83`."""
    return f"{relative(path)}:{line}"


def _files(run: RunSpec) -> tuple[object, ...]:
    """What two README commands must share to be one run: the launcher, its words and the files it reads."""
    files = (run.script, run.training, run.accelerate, run.deepspeed)
    command = run.command
    words = tuple(
        (group, k, getattr(w, "text", None))
        for group, args in (
            ("env", command.env),
            ("launcher", command.launcher_args),
            ("script", command.script_args),
        )
        for k, w in sorted(args.items())
    )
    positional = tuple(getattr(w, "text", None) for w in command.positional)
    return (
        command.launcher,
        *(resolved(d.path) if d is not None else None for d in files),
        words,
        positional,
    )


def keep_documented(run: RunSpec, runs: list[RunSpec]) -> bool:
    """Whether a README command's run is kept beside the runs found so far (scripts first)."""
    spec = launchers.spec_of(run.command.launcher)
    if spec.serves or not _starts_training(run, spec):
        return False
    mine = _files(run)
    for other in runs:
        if other.command is None:
            continue
        if getattr(other.root.data, "documented", False):
            if _files(other) == mine:
                return False
            continue
        if run.training is not None:
            if other.training is not None and resolved(other.training.path) == mine[2]:
                return False
        elif _names_config(run):
            continue  # a config that is not there (GA004): no launch script runs it
        elif run.script is not None and other.script is not None and resolved(other.script.path) == mine[1]:
            return False
    return True


def _names_config(run: RunSpec) -> bool:
    return any(ref.role == "training_args" for ref in run.references)


def _starts_training(run: RunSpec, spec: launchers.LauncherSpec) -> bool:
    if _names_config(run) and run.script is not None and trains(run.script.text or ""):
        return True
    if run.training is not None or run.deepspeed is not None or run.accelerate is not None:
        return True
    if spec.runs_trainer and run.command.subcommand:  # `trl sft`, `llamafactory-cli train`
        return True
    return run.script is not None and trains(run.script.text or "")


def trains(text: str) -> bool:
    """Whether a Python script's own text trains: a Trainer or TrainingArguments class (transformers', TRL's,
    a subclass of the project's), HfArgumentParser, or a `.backward(...)` call. Read as AST."""
    tree = parsed(text)
    if tree is None:
        return False
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.alias):
            name = node.name.rsplit(".", 1)[-1]
        if name is not None and (name in _TRAINS or name.endswith("Trainer")):
            return True
    return False


def prune_documented(docs: list[Any], runs: list[RunSpec]) -> None:
    """Keep in each README Document only the commands that became runs, so that its document-level
    findings (a removed flag, a missing file) stand only where the README connects something: a README
    command that a launch script supersedes, or that starts no training, says nothing. The key and value
    spans are renumbered with the commands, and each run's command_index follows."""
    for doc in docs:
        script: Any = getattr(doc, "data", None)
        if not getattr(script, "documented", False):
            continue
        mine = sorted({r.command_index for r in runs if r.root is doc})
        new = {old: i for i, old in enumerate(mine)}
        script.commands = [script.commands[i] for i in mine]
        for spans in (doc.key_spans, doc.value_spans):
            kept = {}
            for key, span in spans.items():
                if key[:1] == ("commands",) and len(key) > 1 and isinstance(key[1], int):
                    if key[1] not in new:
                        continue
                    key = ("commands", new[key[1]], *key[2:])
                kept[key] = span
            spans.clear()
            spans.update(kept)
        for r in runs:
            if r.root is doc:
                r.command_index = new[r.command_index]
