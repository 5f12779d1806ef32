"""Launch commands written in a Markdown file's fenced shell blocks (README.md: ```bash / ```sh /
```shell / ```console / ```zsh or unlabelled), read as a launch script positioned at the README's own
lines and columns, so that findings point into it. Nothing is executed: each block is handed to the
static shell reader (advisor/sources/shell) alone, so a quote left open in one block cannot swallow the
next.

A README command is documentation: the Document is kind "launch" with `LaunchScript.documented` set,
which discovery (advisor/plan/readme_runs.py) and the check (at most warning level) read. What a
README leaves for the reader to fill in is never taken as a value: a word holding a placeholder
(`<your_model>`, `path/to/`, `/path/to/...`, `{model_name}`, `your_model_path`, `...`) is unknown, with
the reason; `${MODEL}` is unknown already (a variable the block does not set)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core import records
from advisor.core.document import Document
from advisor.sources.launchers import starts_launcher
from advisor.sources.markdown import CodeLine, FencedBlock, fenced_blocks

SHELL_LANGUAGES = frozenset({"", "bash", "sh", "shell", "console", "zsh", "shell-session", "shellsession"})
if TYPE_CHECKING:
    from advisor.sources.shell import LaunchScript, Word

MAX_MARKDOWN_CHARS = 1024 * 1024  # as a launch script (advisor/sources/read.py MAX_SCRIPT_CHARS)
MAX_SHELL_BLOCKS = 100  # blocks that name a launcher, read per file
MAX_SHELL_CHARS = 128 * 1024  # their text read per file: a launch script's worst case is 1 MB of it
MAX_README_COMMANDS = 128  # commands kept per file (a launch script keeps 32: shell/lexer.py MAX_COMMANDS)

# a console prompt: `$ cmd` (or `> ` on the lines a continued command goes on), kept at its column
_PROMPT = re.compile(r" *(\$|>)( |$)")
# `<your_model>` is a redirection to bash; in a README it is a blank to fill in: read as one word. Not a
# here-document (`<<EOF > f`: the `<` before, the space before `>`) or a redirection (`< in.txt > out`)
_ANGLE = re.compile(r"(?<![<\w$])<([A-Za-z_](?:[\w.\-/ ]{0,80}[\w.\-/])?)>")
_OPEN, _CLOSE = "\u2039", "\u203a"  # one character each, so every column stays where it was
_PLACEHOLDER = re.compile(
    rf"{_OPEN}|(?:^|/)path/to(?:/|$)|\{{[A-Za-z_]\w*\}}|(?:^|[/=_\-])(?:your|YOUR|Your)[_\-]|\.\.\."
    r"|(?:^|[/=_\-])(?:xxx|XXX)(?:$|[/_\-.])"
)


def read_markdown_launch(path: Path, text: str) -> Document:
    """The launch commands of a Markdown file's shell blocks, as one launch Document. Never raises."""
    from advisor.sources.shell import LaunchScript  # the shell reader loads only when a Markdown file is read

    script = LaunchScript(documented=True)
    doc = Document(path, "launch", data=script, text=text)
    if len(text) > MAX_MARKDOWN_CHARS:
        return doc  # documentation over the limit is not read: no launch, nothing claimed
    text = text[1:] if text.startswith("\ufeff") else text
    read = chars = 0
    for block in fenced_blocks(text):
        if block.language not in SHELL_LANGUAGES or not _names_launcher(block):
            continue
        read += 1
        chars += sum(len(ln.text) + 1 for ln in block.lines)
        if read > MAX_SHELL_BLOCKS or chars > MAX_SHELL_CHARS or len(script.commands) >= MAX_README_COMMANDS:
            break  # the rest of the file's blocks are not read: no launch, nothing claimed of them
        _read_block(path, block, doc, script)
    return doc


def _names_launcher(block: FencedBlock) -> bool:
    """A cheap filter: some word of the block is a launcher's executable (python, accelerate, ...)."""
    return any(starts_launcher(w.rsplit("/", 1)[-1]) for ln in block.lines for w in ln.text.split())


def _command_lines(block: FencedBlock) -> list[CodeLine]:
    """The block's lines a shell would read. In a block with `$ ` prompts only the prompted lines and
    the lines a continued command goes on are commands (the others are output); the prompt is dropped
    and the text keeps its column."""
    prompted = any(ln.text.lstrip(" ").startswith("$") and _PROMPT.match(ln.text) for ln in block.lines)
    if not prompted:
        return list(block.lines)
    out: list[CodeLine] = []
    continued = False
    for ln in block.lines:
        m = _PROMPT.match(ln.text)
        if m is not None and (m.group(1) == "$" or continued):
            ln = CodeLine(ln.line, ln.col + m.end(), ln.text[m.end() :])
        elif not continued:
            continue  # output of the command before
        out.append(ln)
        continued = ln.text.rstrip().endswith("\\")
    return out


def _read_block(path: Path, block: FencedBlock, doc: Document, script: LaunchScript) -> None:
    from advisor.sources.shell import read_launch

    lines = _command_lines(block)
    if not lines:
        return
    first = lines[0].line
    rows = [""] * (lines[-1].line - first + 1)  # output lines of a console block stay blank
    for ln in lines:
        rows[ln.line - first] = " " * ln.col + _ANGLE.sub(rf"{_OPEN}\1{_CLOSE}", ln.text)
    part = read_launch(path, "\n".join(rows), first)
    commands = [_with_placeholders(c, path) for c in part.data.commands]
    if not commands:
        return  # a block that starts nothing (pip install, a python snippet): nothing said of it
    shift = len(script.commands)  # each block numbers its commands from 0: renumbered in the file
    script.commands.extend(commands[: MAX_README_COMMANDS - shift])
    script.written.extend(part.data.written)
    for p in part.problems:  # a documented command the reader cannot follow: never an error
        doc.problems.append(records.replace(p, severity="warning") if p.severity != "info" else p)
    for mine, theirs in ((doc.key_spans, part.key_spans), (doc.value_spans, part.value_spans)):
        for key, span in theirs.items():
            if key[:1] == ("commands",) and len(key) > 1 and isinstance(key[1], int):
                key = ("commands", key[1] + shift, *key[2:])
            mine[key] = span


def _with_placeholders(command: Any, path: Path) -> Any:
    """The command with every placeholder word made unknown."""

    def fix(word: Word | None) -> Word | None:
        if word is None or word.text is None or not _PLACEHOLDER.search(word.text):
            return word
        raw = word.raw.replace(_OPEN, "<").replace(_CLOSE, ">")
        why = f"{raw!r} is a placeholder in {path.name} (documentation), to be filled in by the reader"
        return records.replace(word, text=None, raw=raw, unknown=why)

    return records.replace(
        command,
        env={k: fix(w) for k, w in command.env.items()},
        launcher_args={k: fix(w) for k, w in command.launcher_args.items()},
        script=fix(command.script),
        script_args={k: fix(w) for k, w in command.script_args.items()},
        positional=[fix(w) for w in command.positional],
    )
