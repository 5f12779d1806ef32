"""The error that means the tool cannot do its job (exit code 2); a leaf so any stage can raise it."""

from __future__ import annotations

from collections.abc import Sequence


class CheckError(Exception):
    """The tool cannot do its job (exit code 2): a missing path, an unknown hardware name.

    `lines`: the problems one by one when there are several (each problem of a descriptor file at its own
    line and column), each said on a line of its own; otherwise the message alone."""

    def __init__(self, message: str, *, lines: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.lines = tuple(lines) or (message,)


def problem_lines(exc: BaseException) -> tuple[str, ...]:
    """The lines an error is said in: its `lines` when it has them, else its message. Each is escaped
    on its own when printed (advisor/commands/base.py `die`): a newline inside one, which user text can
    carry, stays visible as `\\n` and cannot start a line of its own."""
    lines = getattr(exc, "lines", None)
    if isinstance(lines, tuple) and lines and all(isinstance(line, str) for line in lines):
        return lines
    return (str(exc),)
