"""The launch-script reader's entry: a script's text to a launch Document (advisor/sources/shell)."""

from __future__ import annotations

from pathlib import Path

from advisor.core.document import Document, SourceProblem, Span
from advisor.sources.shell.expand import TooLarge
from advisor.sources.shell.interpreter import Shell
from advisor.sources.shell.lexer import JUNK_RE, MAX_COMMANDS, Src
from advisor.sources.shell.model import LaunchScript
from advisor.sources.shell.sbatch import read_sbatch


def read_launch(path: Path, text: str, first_line: int = 1) -> Document:
    """Read a bash/sbatch launch script statically. Never raises for bad content. `first_line`: the line of
    the file that `text` starts on (a README code block, advisor/sources/readme_launch.py): every span is
    that file's, without lexing the lines before it."""
    problems: list[SourceProblem] = []
    doc = Document(path, "launch", data=LaunchScript(), text=text, problems=problems)
    try:
        _read(text, doc, problems, first_line)
    except Exception as exc:  # a reader must never crash the tool; say what happened instead
        message = f"launch script could not be read: {type(exc).__name__}: {exc}"
        problems.append(SourceProblem("unreadable", message, Span(1, 1)))
    return doc


def _read(text: str, doc: Document, problems: list[SourceProblem], first_line: int = 1) -> None:
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n")
    shell = Shell(text, problems)
    # one start below offset 0 per line before the text: Words.span then counts them into every line number
    shell.starts = list(range(1 - first_line, 0)) + shell.starts

    # Lines with binary junk are reported and blanked, so the rest of the file is still read.
    lines = text.split("\n")
    cleaned = []
    pos = 0
    for line in lines:
        m = JUNK_RE.search(line)
        if m:
            what = f"U+{ord(m.group()):04X}"
            shell.problem(f"line contains binary data ({what}); the line is skipped", pos + m.start())
            line = " " * len(line)
        cleaned.append(line)
        pos += len(line) + 1
    text = "\n".join(cleaned)
    shell.text = text

    script: LaunchScript = doc.data
    read_sbatch(shell, text, script)
    try:
        shell.run(Src(text))
    except TooLarge:
        shell.problem("the script expands to too much text to follow statically; the rest is not read", 0)
    script.commands = shell.commands[:MAX_COMMANDS]
    script.written = shell.written
    script.variables = {k: v.word for k, v in shell.vars.items()}
    for k, v in shell.vars.items():
        shell.key_spans[("variables", k)] = shell.span(v.key_off)
        shell.value_spans[("variables", k)] = v.word.span
    doc.key_spans = shell.key_spans
    doc.value_spans = shell.value_spans
