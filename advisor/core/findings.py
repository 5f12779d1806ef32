"""What the engine reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from advisor.core.document import Location
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.records import field, record

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

# A number standing on its own in a message ("on line 10", "4 processes"), not part of a name
# such as GA201 or bf16: a keyless fingerprint must not move when lines are added above.
_NUMBER = LazyPattern(r"(?<![\w.])\d+(?:\.\d+)*(?!\w|\.\d)")


def stable_message(message: str) -> str:
    """The message with its stand-alone numbers replaced by '#', for keyless fingerprints."""
    return _NUMBER.sub("#", message)


@record(frozen=True, slots=True)
class Edit:
    """Set (or with value DELETE, remove) one key of one file, or replace one word of a launch script;
    with ``rename``, give the key a new name where it stands (its value, comments and order kept)."""

    file: Path
    key: str | None  # JSON pointer of the key, e.g. /gradient_accumulation_steps; None for a shell word
    value: Any
    line: int | None = None  # for a shell word: where the value is written
    col: int | None = None
    rename: str | None = None  # the key's new name (value unused)


DELETE = object()


@record(frozen=True, slots=True)
class Fix:
    description: str
    safety: Literal["safe", "unsafe", "display"]
    edits: tuple[Edit, ...] = ()


@record(slots=True)
class Finding:
    rule: str
    name: str
    severity: Severity
    message: str
    location: Location
    run: str | None = None
    related: list[Location] = field(default_factory=list)
    fix: Fix | None = None
    evidence: str | None = None  # "measured" when a probe backs it

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        return (str(self.location.file), self.location.line, self.location.col, self.rule)

    @property
    def identity(self) -> tuple[str, str, int, int, str]:
        return (self.rule, str(self.location.file), self.location.line, self.location.col, self.message)

    def fingerprint(self, relative_file: str) -> str:
        """Stable across line moves: rule, file and key path, never line numbers.

        A finding without a key path falls back on its message with the numbers in it normalised
        (a GA900 message names the line of its comment); the baseline counts repeats.
        """
        import hashlib  # here: only baselines, JSON and SARIF need it, and it loads OpenSSL (~3 ms)

        key = self.location.key or f"@{stable_message(self.message)}"
        raw = "\0".join((self.rule, relative_file, key))
        return hashlib.sha256(raw.encode()).hexdigest()[:16]
