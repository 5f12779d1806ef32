"""Fix edits as character ranges: one Edit (set or delete a YAML or JSON key, replace a launch-script
word) becomes a TextEdit planned from the file as it is on disk, by position, so every byte outside
the edited value stays.

- YAML: the key and value nodes come from PyYAML's composer (the reader HF and accelerate use),
  which gives exact start and end marks. A set replaces the value's characters; a delete removes
  the lines of the entry; a missing key is inserted after the last entry of its mapping with the
  indentation of its siblings. Comments, quoting, order and indentation elsewhere are untouched.
- JSON: the value's start and end come from the position-keeping reader's spans. A delete takes the
  member and its comma; the result must parse again (and stay strict JSON if it was).
- Rename (Edit.rename): only the key's own characters change, to the new name in the key's quoting;
  refused when the new name is already in the mapping (or a merge key `<<` may bring it).
- Shell: the value's span as the shell reader found it, quotes included (for `--flag=value`, only
  the value); a value whose end is not known (built from several places) is not edited.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from advisor.core.findings import DELETE, Edit
from advisor.core.records import record

JSON_SUFFIXES = {".json", ".conf", ".jsonc", ".hjson"}
SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}


class FixError(Exception):
    """A fix that cannot be applied safely by position; the finding stays."""


@record(frozen=True, slots=True)
class TextEdit:
    file: Path
    start: int  # character offsets into the decoded text
    end: int
    text: str
    # non-empty when the edit changes more than its key (an anchored value that aliases share): the
    # fix is then unsafe whatever its rule says, and the reason is shown
    also_changes: str = ""


@record(slots=True)
class SourceFile:
    path: Path
    raw: bytes
    text: str
    bom: bool
    newline: str
    line_starts: list[int]

    def offset(self, line: int, col: int) -> int:
        if line < 1 or line > len(self.line_starts):
            raise FixError(f"line {line} is outside the file")
        return self.line_starts[line - 1] + col - 1

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset."""
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.line_starts[lo] + 1


def load_source(path: Path) -> SourceFile:
    """The file as the fixes are planned from: through the one safe reader (regular files only,
    size-limited), which also serves the planned bytes of earlier fix rounds."""
    from advisor.sources.read import ReadRefused, read_bytes

    try:
        raw = read_bytes(path)
    except ReadRefused as exc:
        raise FixError(f"cannot read {path}: {exc.reason}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FixError(f"{path} is not UTF-8") from None
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    return SourceFile(path, raw, text, bom, newline, starts)


def _encode(src: SourceFile, text: str) -> bytes:
    return (("\ufeff" if src.bom else "") + text).encode("utf-8")


def _parts(key: str) -> list[str]:
    if not key.startswith("/"):
        raise FixError(f"key '{key}' is not a JSON pointer")
    return [p.replace("~1", "/").replace("~0", "~") for p in key[1:].split("/")] if key != "/" else [""]


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_end(text: str, pos: int) -> int:
    """Offset just after the newline of the line holding pos (or the end of the text)."""
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


# ---------------------------------------------------------------- YAML


def _yaml_scalar(value: Any, style: str | None = None) -> str:
    import yaml

    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, _, exp = text.partition("e")
            text = f"{mantissa}.0e{exp}"  # YAML 1.1 needs the point: 2e-05 is a string there
        return text
    if isinstance(value, str):
        if style == "'":
            return "'" + value.replace("'", "''") + "'"
        if style == '"':
            return json.dumps(value)
        try:
            if (
                value
                and value.strip() == value
                and yaml.safe_load(f"k: {value}") == {"k": value}
                and "#" not in value
            ):
                return value
        except yaml.YAMLError:
            pass
        return json.dumps(value)
    if isinstance(value, list | dict):
        return json.dumps(value)
    raise FixError(f"cannot write a {type(value).__name__} value to YAML")


def _yaml_root(text: str) -> Any:
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)  # pure-Python marks: character offsets
    except yaml.YAMLError as exc:
        raise FixError(f"YAML does not parse: {str(exc).splitlines()[0]}") from None


def _yaml_child(node: Any, part: str) -> tuple[Any, Any] | None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        found = None
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == part:
                found = (k, v)  # the last one wins, as in PyYAML
        return found
    if isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
        item = node.value[int(part)]
        return item, item
    return None


def _yaml_references(root: Any) -> dict[int, int]:
    """How many places (mapping values and keys, sequence items, the document) hold each node. An
    alias (*name) makes the composer hand out its anchor's node object again, so a node held in two
    places is one value read under two keys. Each node is walked once: an alias bomb stays linear."""
    import yaml

    counts: dict[int, int] = {id(root): 1}
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            children = [c for pair in node.value for c in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            continue
        for child in children:
            counts[id(child)] = counts.get(id(child), 0) + 1
            stack.append(child)
    return counts


def _shared_along(root: Any, nodes: list[Any], key: str, text: str) -> str:
    """Why editing under `nodes` (the mapping chain from the root, then the edited node) changes more
    than `key`: one of them is anchored and aliased elsewhere (a merge key `<<: *base` included)."""
    counts = _yaml_references(root)
    for node in nodes:
        n = counts.get(id(node), 1)
        if n > 1:
            what = "the value" if node is nodes[-1] else "its enclosing mapping"
            found = re.compile(r"&([^\s,\[\]{}]+)").match(text, node.start_mark.index)
            name = found.group(1) if found else "name"
            return (
                f"{key}: {what} is anchored (&{name}) and {n - 1} alias{'es' if n > 2 else ''} "
                f"(*{name}) elsewhere read the same value, so the edit changes them too"
            )
    return ""


def _yaml_content_end(node: Any) -> int:
    """Where the node's own characters end (block collections end at the next token otherwise)."""
    import yaml

    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return node.end_mark.index
    ends = [node.start_mark.index]
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            ends += [_yaml_content_end(k), _yaml_content_end(v)]
    else:
        ends += [_yaml_content_end(v) for v in node.value]
    return max(ends)


def _yaml_parent(edit: Edit, root: Any) -> tuple[Any, list[Any], list[str]]:
    """The mapping that holds the edited key, the chain of nodes from the root to it, the key's parts."""
    import yaml

    parts = _parts(edit.key or "")
    parent = root
    chain = [root]
    for part in parts[:-1]:
        hit = _yaml_child(parent, part)
        if hit is None:
            raise FixError(f"{edit.key}: the enclosing key is not in the file")
        parent = hit[1]
        chain.append(parent)
    if not isinstance(parent, yaml.MappingNode):
        raise FixError(f"{edit.key}: the enclosing value is not a mapping")
    return parent, chain, parts


def _skip_properties(text: str, start: int, end: int) -> int:
    """Past an anchor (&name) or a tag (!tag) written before a scalar: they stay."""
    prop = re.compile(r"[&!][^\s]*\s+").match(text, start)
    while prop is not None and prop.end() <= end:
        start = prop.end()
        prop = re.compile(r"[&!][^\s]*\s+").match(text, start)
    return start


def _rename_yaml(edit: Edit, src: SourceFile, new: str) -> TextEdit:
    """The key's own characters replaced by the new name: its value, comments and place stay."""
    import yaml

    text = src.text
    root = _yaml_root(text)
    parent, chain, parts = _yaml_parent(edit, root)
    names = [k.value for k, _ in parent.value if isinstance(k, yaml.ScalarNode)]
    if names.count(parts[-1]) != 1:
        raise FixError(f"{edit.key}: key not found" if parts[-1] not in names else f"{edit.key}: set twice")
    if new in names or "<<" in names:  # a merge key may bring the new name in from elsewhere
        raise FixError(f"{edit.key}: '{new}' is already set in the same mapping (or may be, through <<)")
    key_node = next(k for k, _ in parent.value if isinstance(k, yaml.ScalarNode) and k.value == parts[-1])
    if key_node.style in ("|", ">"):
        raise FixError(f"{edit.key}: renaming a block scalar key is not supported")
    start = _skip_properties(text, key_node.start_mark.index, key_node.end_mark.index)
    rendered = _yaml_scalar(new, key_node.style)
    return TextEdit(
        src.path, start, key_node.end_mark.index, rendered, _shared_along(root, chain, edit.key or "", text)
    )


def _plan_yaml(edit: Edit, src: SourceFile) -> TextEdit:
    import yaml

    text = src.text
    root = _yaml_root(text)
    parent, chain, parts = _yaml_parent(edit, root)
    hit = _yaml_child(parent, parts[-1])

    if edit.value is DELETE:
        if hit is None:
            raise FixError(f"{edit.key}: key not found")
        key_node, value_node = hit
        if parent.flow_style:
            raise FixError(f"{edit.key}: deleting from a flow mapping is not supported")
        if len(parent.value) < 2:
            raise FixError(f"{edit.key}: deleting the only key would leave the mapping empty")
        start = _line_start(text, key_node.start_mark.index)
        if text[start : key_node.start_mark.index].strip():
            raise FixError(f"{edit.key}: the key shares its line with other content")
        end = _line_end(text, max(_yaml_content_end(value_node) - 1, key_node.end_mark.index))
        return TextEdit(src.path, start, end, "", _shared_along(root, chain, edit.key or "", text))

    if hit is not None:
        key_node, value_node = hit
        if value_node.start_mark.index < key_node.end_mark.index:
            raise FixError(f"{edit.key}: the value is an alias (*name) of a value written elsewhere")
        if not isinstance(value_node, yaml.ScalarNode):
            raise FixError(f"{edit.key}: replacing a collection value is not supported")
        if value_node.style in ("|", ">"):
            raise FixError(f"{edit.key}: replacing a block scalar is not supported")
        start, end = value_node.start_mark.index, value_node.end_mark.index
        start = _skip_properties(text, start, end)  # keep an anchor or a tag
        rendered = _yaml_scalar(edit.value, value_node.style if isinstance(edit.value, str) else None)
        if start == end and value_node.value == "":  # `key:` with no value
            rendered = " " + rendered
        return TextEdit(
            src.path, start, end, rendered, _shared_along(root, [*chain, value_node], edit.key or "", text)
        )

    # insert a new key after the last entry of its mapping, indented like its siblings
    if parent.flow_style or not parent.value:
        raise FixError(f"{edit.key}: cannot insert into an empty or flow mapping")
    first_key = parent.value[0][0]
    indent = " " * first_key.start_mark.column
    last_key, last_value = parent.value[-1]
    at = _line_end(text, max(_yaml_content_end(last_value) - 1, last_key.end_mark.index))
    key_text = _yaml_scalar(parts[-1])
    line = f"{indent}{key_text}: {_yaml_scalar(edit.value)}{src.newline}"
    if at == len(text) and text and not text.endswith("\n"):
        line = src.newline + line
    return TextEdit(src.path, at, at, line, _shared_along(root, chain, edit.key or "", text))


# ---------------------------------------------------------------- JSON


def _json_skip(text: str, pos: int) -> int:
    """Skip whitespace and comments forward."""
    n = len(text)
    while pos < n:
        ch = text[pos]
        if ch in " \t\r\n":
            pos += 1
        elif text.startswith("//", pos) or ch == "#":
            nl = text.find("\n", pos)
            pos = n if nl < 0 else nl
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            pos = n if end < 0 else end + 2
        else:
            break
    return pos


def _plan_json(edit: Edit, src: SourceFile) -> TextEdit:
    from advisor.sources.json_file import JsonSyntaxError, parse_json

    text = src.text
    try:
        parsed = parse_json(text)
    except JsonSyntaxError as exc:
        raise FixError(f"JSON does not parse: {exc.message}") from None
    parts = _parts(edit.key or "")
    path: tuple[Any, ...] = ()
    node = parsed.data
    for part in parts[:-1]:
        if isinstance(node, list) and part.isdigit():
            path = (*path, int(part))
            node = node[int(part)] if int(part) < len(node) else None
        elif isinstance(node, dict):
            path = (*path, part)
            node = node.get(part)
        else:
            node = None
        if node is None:
            raise FixError(f"{edit.key}: the enclosing key is not in the file")
    if not isinstance(node, dict):
        raise FixError(f"{edit.key}: the enclosing value is not an object")
    target = (*path, parts[-1])

    def off(span: Any) -> int:
        return src.offset(span.line, span.col)

    def end(span: Any) -> int:  # the JSON reader's span ends just after the value
        if not span.has_end:
            raise FixError(f"{edit.key}: the value's end is not known")
        return src.offset(span.end_line, span.end_col)

    if edit.rename is not None:
        if parts[-1] not in node:
            raise FixError(f"{edit.key}: key not found")
        if edit.rename in node:
            raise FixError(f"{edit.key}: '{edit.rename}' is already set in the same object")
        key_start = off(parsed.key_spans[target])
        if not text.startswith('"', key_start):
            raise FixError(f"{edit.key}: the key is not a quoted string")
        try:
            _, key_end = json.JSONDecoder().raw_decode(text, key_start)  # just after the closing quote
        except ValueError:
            raise FixError(f"{edit.key}: the key's end is not known") from None
        return TextEdit(src.path, key_start, key_end, json.dumps(edit.rename))

    if parts[-1] in node:
        key_start = off(parsed.key_spans[target])
        value_start = off(parsed.value_spans[target])
        value_end = end(parsed.value_spans[target])
        if edit.value is not DELETE:
            return TextEdit(src.path, value_start, value_end, json.dumps(edit.value))
        after = _json_skip(text, value_end)
        line_start = _line_start(text, key_start)
        alone = not text[line_start:key_start].strip()
        if text.startswith(",", after):
            stop = after + 1
            rest_end = _line_end(text, stop)
            if alone and not text[stop:rest_end].strip():
                return TextEdit(src.path, line_start, rest_end, "")
            while stop < len(text) and text[stop] in " \t":
                stop += 1
            return TextEdit(src.path, key_start, stop, "")
        before = key_start - 1
        while before >= 0 and text[before] in " \t\r\n":
            before -= 1
        if before >= 0 and text[before] == ",":
            return TextEdit(src.path, before, value_end, "")
        if alone and not text[value_end : _line_end(text, value_end)].strip():
            return TextEdit(src.path, line_start, _line_end(text, value_end), "")
        return TextEdit(src.path, key_start, value_end, "")

    if edit.value is DELETE:
        raise FixError(f"{edit.key}: key not found")
    obj_start = off(parsed.value_spans[path])
    obj_end = end(parsed.value_spans[path]) - 1  # the closing brace
    member = f"{json.dumps(parts[-1])}: {json.dumps(edit.value)}"
    if not node:
        return TextEdit(src.path, obj_start + 1, obj_start + 1, member)
    last = max(
        (k for k in parsed.key_spans if len(k) == len(target) and k[:-1] == path),
        key=lambda k: off(parsed.key_spans[k]),
    )
    last_key = off(parsed.key_spans[last])
    last_end = end(parsed.value_spans[last])
    line_start = _line_start(text, last_key)
    if not text[line_start:last_key].strip() and "\n" in text[last_end:obj_end]:
        indent = text[line_start:last_key]
        return TextEdit(src.path, last_end, last_end, f",{src.newline}{indent}{member}")
    return TextEdit(src.path, last_end, last_end, f", {member}")


def _check_yaml(after: str) -> None:
    import yaml

    try:
        yaml.compose(after, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise FixError(f"the edited YAML would not parse ({str(exc).splitlines()[0]})") from None


def _check_json(before: str, after: str) -> None:
    from advisor.sources.json_file import JsonSyntaxError, parse_json

    try:
        parse_json(after)
    except JsonSyntaxError as exc:
        raise FixError(f"the edited JSON would not parse ({exc.message})") from None
    try:
        json.loads(before)
    except ValueError:
        return
    try:
        json.loads(after)
    except ValueError as exc:
        raise FixError(f"the edited file would no longer be strict JSON ({exc})") from None


# ---------------------------------------------------------------- shell


def _shell_value_span(src: SourceFile, line: int, col: int) -> Any:
    """The span, with its end, of the launch-script value written at line:col, as the shell reader
    found it (advisor/sources/shell/words.py): the exact characters of the word, quotes included.
    At the start of `--flag=value` it is the value's span. None when no value with a known end is
    written there (a word inside a `bash -c` string built from several places, say)."""
    from advisor.sources.launch import read_launch

    doc = read_launch(src.path, src.text)
    at = (line, col)
    for span in doc.value_spans.values():
        if (span.line, span.col) == at and span.has_end:
            return span
    for path, key in doc.key_spans.items():  # `--flag=value` located at the flag
        flag_value = doc.value_spans.get(path)
        if flag_value is None or (key.line, key.col) != at:
            continue
        if flag_value.has_end and flag_value.line == line:
            between = src.text[src.offset(line, col) : src.offset(flag_value.line, flag_value.col)]
            if between.startswith("-") and between.endswith("=") and not any(c.isspace() for c in between):
                return flag_value
    return None


def _plan_shell(edit: Edit, src: SourceFile) -> TextEdit:
    if edit.line is None or edit.col is None:
        raise FixError("a launch-script edit needs a line and column")
    if edit.value is DELETE:
        raise FixError("deleting a launch-script word is not supported")
    span = _shell_value_span(src, edit.line, edit.col)
    if span is None:
        raise FixError(f"no launch-script value with a known end at {edit.line}:{edit.col}")
    start = src.offset(span.line, span.col)
    end = src.offset(span.end_line, span.end_col)
    if end <= start:
        raise FixError(f"no word at {edit.line}:{edit.col}")
    value = edit.value
    rendered = ("true" if value else "false") if isinstance(value, bool) else shlex.quote(str(value))
    return TextEdit(src.path, start, end, rendered)


# ---------------------------------------------------------------- planning and applying


def plan_edit(edit: Edit, src: SourceFile) -> TextEdit:
    if edit.key is None:
        if edit.rename is not None:
            raise FixError("renaming a launch-script flag is not supported")
        return _plan_shell(edit, src)
    suffix = src.path.suffix.lower()
    if suffix in JSON_SUFFIXES or (suffix not in {".yaml", ".yml"} and src.text.lstrip().startswith("{")):
        return _plan_json(edit, src)
    if suffix in SHELL_SUFFIXES:
        raise FixError("a launch-script edit needs a line and column")
    if edit.rename is not None:
        return _rename_yaml(edit, src, edit.rename)
    return _plan_yaml(edit, src)
