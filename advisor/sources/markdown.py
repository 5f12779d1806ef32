"""Fenced code blocks of a Markdown file, found as CommonMark finds them (spec 0.31.2, section 4.5
"Fenced code blocks" and 5.2 "List items"), with the real line and column of every content line.

A fence is a line of at least three backticks or tildes, indented up to three spaces from its container;
a backtick fence's info string holds no backtick. The block ends at a line of the same character, at
least as long, indented up to three spaces and followed only by spaces; an unclosed block runs to the end
of its container (the list item it opened in) or of the file. Content lines lose up to as many leading
spaces as the opening fence was indented. Inside a list item, the container's content column counts as
column 0 (a fence indented under `1. ` is the item's). Block quotes and indented (4-space) code blocks
are not launch documentation and are not read. A line's indentation counts spaces only: a tab ends it
(tabs in indentation are rare in READMEs, and CommonMark's tab stops would shift the column this reader
reports)."""

from __future__ import annotations

import re

from advisor.core.records import record

MAX_BLOCKS = 500  # a README with more fenced blocks than this is read up to here
MAX_LINES = 20_000  # lines of one file looked at

_FENCE = re.compile(r"(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)")
_LIST_ITEM = re.compile(r"(?P<indent> {0,3})(?P<marker>[-+*]|\d{1,9}[.)])(?P<gap> +|$)")


@record(frozen=True, slots=True)
class CodeLine:
    """One content line of a block: its 1-based line in the file, the 0-based column where the kept text
    starts, and that text."""

    line: int
    col: int
    text: str


@record(frozen=True, slots=True)
class FencedBlock:
    info: str  # the info string, trimmed
    line: int  # the opening fence's line
    col: int  # its 0-based column
    lines: tuple[CodeLine, ...]
    closed: bool

    @property
    def language(self) -> str:
        """The info string's first word, lowercased, without a `{.bash}` attribute's braces and dot."""
        word = self.info.split(maxsplit=1)[0] if self.info else ""
        return word.strip("{}").lstrip(".").lower()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _list_content(rest: str, at: int) -> tuple[int, str] | None:
    """(the item's content column, its first line's text) when `rest`, starting at column `at`, opens a
    list item; CommonMark 5.2: one to four spaces after the marker, else the content starts one space
    after it."""
    m = _LIST_ITEM.match(rest)
    if m is None:
        return None
    gap = len(m.group("gap"))
    if gap == 0:  # the marker alone on its line
        return at + m.end("marker") + 1, ""
    width = m.end("marker") + (gap if gap <= 4 else 1)
    return at + width, rest[width:]


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced code block of `text`, in order (at most MAX_BLOCKS; lines past MAX_LINES are unread)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:MAX_LINES]
    blocks: list[FencedBlock] = []
    containers: list[int] = []  # content columns of the open list items, outermost first
    i = 0
    while i < len(lines) and len(blocks) < MAX_BLOCKS:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        n = _indent(line)
        while containers and n < containers[-1]:
            containers.pop()
        base = containers[-1] if containers else 0
        rest = line[base:]
        at = base
        item = _list_content(rest, base) if _indent(rest) <= 3 else None
        if item is not None:
            containers.append(item[0])
            at, rest = item[0], item[1]
            if _indent(rest) > 3:  # content starting an indented code block, not a fence
                i += 1
                continue
        m = _FENCE.fullmatch(rest)
        if m is None or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        container = containers[-1] if containers else 0
        block, i = _read_block(lines, i, at + len(m.group("indent")), m, container)
        blocks.append(block)
    return blocks


def _read_block(
    lines: list[str], start: int, col: int, m: re.Match[str], container: int
) -> tuple[FencedBlock, int]:
    """The block opened on line index `start` at column `col`, and the index of the line after it."""
    fence = m.group("fence")
    indent = col - container
    close = re.compile(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}} *")
    content: list[CodeLine] = []
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and _indent(line) < container:  # the list item ended, and the block with it
            return FencedBlock(m.group("info").strip(), start + 1, col, tuple(content), False), i
        inner = line[container:] if line.strip() else ""
        if close.fullmatch(inner):
            return FencedBlock(m.group("info").strip(), start + 1, col, tuple(content), True), i + 1
        drop = min(indent, _indent(inner))
        content.append(CodeLine(i + 1, container + drop, inner[drop:]))
        i += 1
    return FencedBlock(m.group("info").strip(), start + 1, col, tuple(content), False), i
