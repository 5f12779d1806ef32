"""The files a command of the launch script writes: they exist for the commands after it (a config made
by `cat <<EOF > ds.json` just before the launch reads it), even when the repository does not hold them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.sources.shell.model import Workdir, WrittenFile

if TYPE_CHECKING:
    from advisor.sources.shell.lexer import Tok
    from advisor.sources.shell.protocol import ShellReader

# bash manual, Redirections: output to a file (`>`, `>|`, `>>`) and of both streams (`&>`, `&>>`)
_WRITE_REDIRS = frozenset({">", ">|", ">>", "&>", "&>>"})
_NO_FILE = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def written_files(
    shell: ShellReader, words: list[Tok], redirs: list[tuple[Tok, Tok | None]], workdir: Workdir | None
) -> list[WrittenFile]:
    """Its output redirections' targets and `tee`'s file operands, in the order of the text (a function's
    body is taken where it is written, as its launch commands are). A target whose name is not known
    statically is left out."""
    targets = [(tgt, op) for op, tgt in redirs if tgt is not None and op.value in _WRITE_REDIRS]
    if words and shell.static_text(words[0]) == "tee":
        targets += [(w, w) for w in words[1:] if not (shell.static_text(w) or "").startswith("-")]
    out = []
    for tgt, at in targets:
        text = shell.static_text(tgt)
        if text and text not in _NO_FILE:
            out.append(WrittenFile(text, shell.span(at.src.off(at.start)), workdir))
    return out
