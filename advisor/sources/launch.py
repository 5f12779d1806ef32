"""The launch-script reader's public names (the reader itself is advisor/sources/shell), and the
limits it stops at (tests/security/test_slow_inputs.py reads them here)."""

from __future__ import annotations

from advisor.sources.shell import LaunchCommand, LaunchScript, Word, read_launch
from advisor.sources.shell.lexer import MAX_BRACE_DEPTH as _MAX_BRACE_DEPTH
from advisor.sources.shell.lexer import MAX_COMMANDS as _MAX_COMMANDS
from advisor.sources.shell.lexer import MAX_TOKENS as _MAX_TOKENS

__all__ = [
    "_MAX_BRACE_DEPTH",
    "_MAX_COMMANDS",
    "_MAX_TOKENS",
    "LaunchCommand",
    "LaunchScript",
    "Word",
    "read_launch",
]
