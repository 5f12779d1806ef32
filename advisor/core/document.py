"""The common shape every reader returns: typed values plus where each one is written."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from advisor.core.records import field, record

KeyPath = tuple[str | int, ...]

DocumentKind = Literal[
    "training_args",  # HF TrainingArguments and the dialects built on it (TRL, LLaMA-Factory)
    "axolotl",
    "accelerate",
    "deepspeed",
    "launch",
    "hardware",
    "script",
    "settings",
    "unknown",
]


@record(frozen=True, slots=True)
class Span:
    """A 1-based line and column in a file. A value's span also says where it ends: the line and
    column just after its last character, and both ends as 0-based character offsets into the text
    the reader parsed (the shell reader drops a BOM and reads CRLF as LF, so --fix maps spans by
    line and column). The ends are None where the value is not written in one piece (a `bash -c`
    string's word built from several places, a YAML block collection); they never take part in
    comparisons."""

    line: int
    col: int
    end_line: int | None = field(default=None, compare=False)
    end_col: int | None = field(default=None, compare=False)
    offset: int | None = field(default=None, compare=False)
    end_offset: int | None = field(default=None, compare=False)

    @property
    def has_end(self) -> bool:
        return self.end_line is not None and self.end_col is not None


@record(frozen=True, slots=True)
class Location:
    file: Path
    line: int
    col: int
    key: str | None = None  # JSON-pointer-like key path, e.g. /zero_optimization/stage

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# What a reader can find, by kind. Rule files choose the kinds they report (GA001 and GA003 read
# `document.problems`); a reader tags each problem with one of these, never with a rule code.
PROBLEM_KINDS: dict[str, str] = {
    "unreadable": "the file cannot be read or parsed (syntax, encoding, size, nesting)",
    "not-a-mapping": "the top level is not a mapping of settings",
    "empty-file": "the file holds no settings",
    "duplicate-key": "a key written twice in one mapping",
    "json-comment": "a comment in a JSON file that strict json readers refuse",
    "trailing-comma": "a trailing comma in a JSON file that strict json readers refuse",
    "refused-number": "NaN, infinity or a number beyond 64 bits",
    "launch-syntax": "a launch script's command the reader cannot follow",
    "refused-path": "a file the run names that the tool may not read (outside the project, not a file)",
    "too-many-problems": "more problems than a file reports",
    "yaml11-scalar": "a YAML 1.1 scalar the consumer reads differently than it looks (1e-5, yes, 1:30)",
}
# Kinds that mean the file's values cannot be trusted (when not a warning): GA001's errors.
SURPRISE_KINDS = frozenset({"yaml11-scalar"})


@record(frozen=True, slots=True)
class SourceProblem:
    """Something a reader found while reading: a parse error, a duplicate key, a YAML 1.1 surprise."""

    kind: str  # one of PROBLEM_KINDS; rule files choose which kinds they report
    message: str
    span: Span
    key: KeyPath = ()
    severity: Literal["error", "warning", "info"] | None = None  # None: the rule's default
    # More about the kind, for facts that judge it by the file's consumer. yaml11-scalar: "number-string"
    # (1e-5 read as a string), "bool-word" (yes/no/on/off read as a boolean), "sexagesimal" (1:30 or 010
    # read as an integer).
    detail: str | None = None

    @property
    def fails_reading(self) -> bool:
        """The file's values cannot be trusted: a reading error, not a warning or a surprise."""
        return self.kind not in SURPRISE_KINDS and self.severity != "warning"


# The largest magnitude a count, size or step setting can have anywhere it is consumed (torch and
# DeepSpeed hold them in 64-bit integers).
MAX_INT = 2**63 - 1


def refused_number(value: Any) -> str | None:
    """Why a number read from a config is refused (NaN, infinity, beyond 64 bits), else None.

    Readers report it (GA001) and the plan sees the value as unknown, so no later stage computes with
    it (int(inf) raises OverflowError; a 400-digit bucket size overflows every estimate)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number: no training setting takes it"
    if isinstance(value, int) and abs(value) > MAX_INT:
        return f"an integer of {len(str(abs(value)))} digits is out of range (at most 2**63 - 1)"
    if isinstance(value, float) and abs(value) > MAX_INT:
        return f"{value:g} is out of range for any training setting (at most 2**63 - 1)"
    return None


def pointer(path: KeyPath) -> str:
    """Render a key path as a JSON pointer (/a/0/b)."""
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path) if path else ""


@record(slots=True)
class Document:
    """One file, read the way its consumer reads it, with the position of every key and value."""

    path: Path
    kind: DocumentKind
    data: Any = None
    key_spans: dict[KeyPath, Span] = field(default_factory=dict)
    value_spans: dict[KeyPath, Span] = field(default_factory=dict)
    problems: list[SourceProblem] = field(default_factory=list)
    text: str | None = None
    dialect: str | None = None  # for training_args: "hf", "trl", "llamafactory"; for axolotl: "axolotl"
    # (script path, "positional" | "config") for each run that hands this file to a training script
    consumers: list[tuple[Path, str]] = field(default_factory=list)
    # the launchers whose own parser, with defaults of its own, reads this file (`swift sft cfg.yaml`)
    read_by: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.fails_reading for p in self.problems)

    def span(self, path: KeyPath, *, value: bool = False) -> Span:
        """The position of a key (or its value); falls back to the nearest written ancestor."""
        spans = self.value_spans if value else self.key_spans
        probe = path
        while probe:
            if probe in spans:
                return spans[probe]
            if not value and probe in self.value_spans:
                return self.value_spans[probe]
            probe = probe[:-1]
        return Span(1, 1)

    def location(self, path: KeyPath = (), *, value: bool = False) -> Location:
        s = self.span(path, value=value)
        return Location(self.path, s.line, s.col, pointer(path) or None)

    def get(self, path: KeyPath, default: Any = None) -> Any:
        node = self.data
        for part in path:
            in_dict = isinstance(node, dict) and part in node
            in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
            if in_dict or in_list:
                node = node[part]
            else:
                return default
        return node

    def has(self, path: KeyPath) -> bool:
        sentinel = object()
        return self.get(path, sentinel) is not sentinel
