"""Where a setting is written in a settings file: the line and column of a key, or of one value in it.

tomllib gives values without positions, so the policy findings find them in the text: the table
headers (`[tool.gpu-advise.severity]`), dotted and quoted keys (`severity.GA101 = ...`,
`"configs/*.yaml" = [...]`), inline tables (`severity = {GA101 = "info"}`) and arrays over several
lines. A path that is not written (a key the change removed) falls back to its closest written parent,
then to the top of the file.
"""

from __future__ import annotations

import re

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"\s*\[\[?\s*(?P<keys>[^\]]*?)\s*\]\]?\s*(?:#.*)?$")


def _keys(text: str, start: int) -> tuple[list[tuple[str, int]], int] | None:
    """A dotted key at text[start:]: its parts with their columns (0-based), and where it ends."""
    parts: list[tuple[str, int]] = []
    i = start
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] in "\"'":
            quote = text[i]
            end = text.find(quote, i + 1)
            if end < 0:
                return None
            parts.append((text[i + 1 : end], i))
            i = end + 1
        else:
            m = _BARE.match(text, i)
            if m is None:
                return None
            parts.append((m.group(), i))
            i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == ".":
            i += 1
            continue
        return parts, i


def _assignments(lines: list[str], prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], int, int, int]]:
    """Every `key = value` under `prefix`: (full key path below the prefix, line index, key column, value
    column). Keys of inline tables are listed too, as children of their key."""
    out: list[tuple[tuple[str, ...], int, int, int]] = []
    table: tuple[str, ...] | None = () if not prefix else None
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is not None and line.lstrip().startswith("["):
            parsed = _keys(header.group("keys"), 0)
            names = tuple(p for p, _ in parsed[0]) if parsed else ()
            table = names[len(prefix) :] if names[: len(prefix)] == prefix else None
            if table is not None:
                out.append((table, index, line.find("["), line.find("[")))
            continue
        if table is None:
            continue
        parsed = _keys(line, 0)
        if parsed is None:
            continue
        parts, end = parsed
        if end >= len(line) or line[end] != "=":
            continue
        path = (*table, *(p for p, _ in parts))
        value_col = end + 1 + (len(line[end + 1 :]) - len(line[end + 1 :].lstrip()))
        out.append((path, index, parts[0][1], value_col))
        if line[value_col : value_col + 1] == "{":
            for inner in re.finditer(r"[{,]\s*", line[value_col:]):
                at = value_col + inner.end()
                sub = _keys(line, at)
                if sub is not None and sub[1] < len(line) and line[sub[1]] == "=":
                    out.append(((*path, *(p for p, _ in sub[0])), index, sub[0][0][1], sub[1] + 1))
    return out


def locate(
    text: str, prefix: tuple[str, ...], path: tuple[str, ...], value: str | None = None
) -> tuple[int, int]:
    """1-based (line, column) of `path` (keys below `prefix`) in a TOML text; with `value`, of that quoted
    string inside the key's value (an entry of an array). Unwritten paths fall back to a parent."""
    lines = text.splitlines()
    found = _assignments(lines, prefix)
    for depth in range(len(path), -1, -1):
        want = path[:depth]
        hits = [(i, kc, vc) for p, i, kc, vc in found if p == want]
        if not hits:
            continue
        index, key_col, value_col = hits[-1]
        if value is not None and depth == len(path):
            spot = _find_value(lines, index, value_col, value, {i for _, i, _, _ in found})
            if spot is not None:
                return spot
        return index + 1, key_col + 1
    return 1, 1


def _find_value(
    lines: list[str], index: int, start: int, value: str, key_lines: set[int]
) -> tuple[int, int] | None:
    """The quoted `value` from (index, start) on, until the next key or table."""
    for quoted in (f'"{value}"', f"'{value}'"):
        for i in range(index, len(lines)):
            if i != index and (i in key_lines or lines[i].lstrip().startswith("[")):
                break
            col = lines[i].find(quoted, start if i == index else 0)
            if col >= 0:
                return i + 1, col + 1
    return None
