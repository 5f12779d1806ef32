"""The folder a launch script's commands run in: `cd`, `pushd`, `popd`, and a subshell `( cd x && ... )`
whose change ends at its `)` (bash manual, Bourne Shell Builtins: cd, and Directory Stack Builtins).

Relative paths a command names (its training script, its config files) resolve from there, so
`cd ../sft/ && deepspeed main.py` runs `../sft/main.py`. The folder the script is started from is not
known statically; a `cd` is kept relative to it, or to the script's own folder for the usual
`cd "$(dirname "$0")"`, or as an absolute path."""

from __future__ import annotations

import posixpath
import re

from advisor.core.document import Span
from advisor.core.lazy_pattern import LazyPattern
from advisor.sources.shell.model import Workdir

# `$(dirname "$0")`, `$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)`, `$(dirname $(realpath $0))`:
# the script's own folder, with what is appended inside the substitution (`/..`) in group 1
SCRIPT_DIR_RE = LazyPattern(
    r"dirname\s+(?:--\s+)?[^)]*?(?:\$\{?0\}?|\$\{?BASH_SOURCE(?:\[0\])?\}?)[^)]*\)(?:\"?\))?\"?"
    r"(/[^\"'\s)&;|]*)?"
)
_OPTIONS = frozenset({"-L", "-P", "-e", "-@", "-LP", "-PL", "--"})


class DirTracker:
    """The working folder as the script walks on; `current` is what a launch command records."""

    def __init__(self) -> None:
        self.current: Workdir | None = None  # None: the folder the script was started from
        self.previous: Workdir | None = None  # `cd -`
        self.stack: list[Workdir | None] = []  # pushd / popd
        self.subshells: list[tuple[Workdir | None, Workdir | None, list[Workdir | None]]] = []
        # a function's body runs when it is called, not where it is written: its cd is not followed
        self.function_pending = False  # `name()` was just read: a `{` now opens its body
        self.functions: list[int] = []  # the nesting depth of each open function body

    def enter_function(self, depth: int) -> None:
        self.functions.append(depth)

    def leave_functions(self, depth: int) -> None:
        while self.functions and self.functions[-1] > depth:
            self.functions.pop()

    def open_subshell(self) -> None:
        self.subshells.append((self.current, self.previous, list(self.stack)))

    def close_subshell(self) -> bool:
        """False when no subshell is open (the `)` is something else's)."""
        if not self.subshells:
            return False
        self.current, self.previous, self.stack = self.subshells.pop()
        return True

    def command(self, name: str, args: list[tuple[str | None, str]], span: Span) -> None:
        """`cd`, `pushd` or `popd` with its words as (expanded text or None, text for the idiom check)."""
        if self.functions:
            return
        words = [a for a in args if a[0] not in _OPTIONS]
        if name == "popd":
            if words:  # `popd +1`, `popd -n`: the stack is not followed that far
                self.current = Workdir(None, span, reason="popd with an argument is not followed")
            elif self.stack:
                self.current = self.stack.pop()
            else:
                self.current = Workdir(None, span, reason="popd with nothing pushed fails")
            return
        if not words:
            if name == "pushd":
                self.current = Workdir(None, span, reason="pushd with no folder is not followed")
            else:
                self.current = Workdir(None, span, reason="cd with no folder goes to $HOME")
            return
        text, raw = words[0]
        if name == "cd" and text == "-":
            self.current, self.previous = self.previous, self.current
            return
        target = _joined(self.current, text, raw, span)
        if name == "pushd":
            if text is not None and re.fullmatch(r"[+-]\d+", text):
                target = Workdir(None, span, reason="pushd +N rotates the stack: not followed")
            self.stack.append(self.current)
        else:
            self.previous = self.current
        self.current = target


def _joined(current: Workdir | None, text: str | None, raw: str, span: Span) -> Workdir:
    if text is None:
        m = SCRIPT_DIR_RE.search(raw)
        if m is None:
            return Workdir(None, span, reason=f"cd {raw}: the folder is not known statically")
        last = raw.rfind(")")
        inner = (m.group(1) or "").lstrip("/") if m.start(1) != -1 and m.start(1) < last else ""
        outer = raw[last + 1 :].strip("\"'").lstrip("/")
        if re.search(r"[$`]", outer):
            return Workdir(None, span, reason=f"cd {raw}: the folder is not known statically")
        return Workdir(posixpath.normpath(posixpath.join(inner, outer) or "."), span, script_dir=True)
    if text.startswith("~"):
        return Workdir(None, span, reason=f"cd {raw}: a folder under $HOME")
    if text.startswith("/"):
        return Workdir(posixpath.normpath(text), span)
    if current is None:
        return Workdir(posixpath.normpath(text), span)
    if current.path is None:
        return current
    return Workdir(posixpath.normpath(posixpath.join(current.path, text)), span, current.script_dir)
