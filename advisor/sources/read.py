"""Read any file into a Document: guard against bad input, parse, classify by content."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core import records
from advisor.core.document import Document, DocumentKind, SourceProblem, Span
from advisor.sources.classify import classify_mapping, looks_like_launch_script, training_dialect
from advisor.sources.markdown_files import MARKDOWN_SUFFIXES

if TYPE_CHECKING:
    from collections.abc import Callable

    from advisor.sources.json_file import JsonResult
    from advisor.sources.yaml_file import YamlResult
    from advisor.sources.yaml_merge import PyYamlPin

    PinLookup = Callable[[Path], PyYamlPin | None]

MAX_BYTES = 10 * 1024 * 1024
MAX_SCRIPT_CHARS = 1024 * 1024  # launch scripts are read by a shell lexer; keep it well under a second

YAML_SUFFIXES = {".yaml", ".yml"}
JSON_SUFFIXES = {".json", ".conf", ".jsonc", ".hjson"}
SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}
PY_SUFFIXES = {".py"}
CONFIG_SUFFIXES = YAML_SUFFIXES | JSON_SUFFIXES | SHELL_SUFFIXES


def _fail(path: Path, kind: DocumentKind, message: str, span: Span | None = None) -> Document:
    return Document(path, kind, problems=[SourceProblem("unreadable", message, span or Span(1, 1))])


class ReadRefused(Exception):
    """A file that is not read: not a regular file, too large, or not readable. The message is one
    line naming the path (never the content)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(mode: int) -> str | None:
    for test, name in _KINDS:
        if test(mode):
            return f"not a regular file but {name}; not read"
    return None if stat.S_ISREG(mode) else "not a regular file; not read"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop; not read"
    return f"cannot read file: {exc.strerror or exc}"


# --fix and --diff re-check the files as their planned edits would leave them, before anything is
# written: inside `overlay(...)`, reads of those files (by resolved path) see the planned bytes.
_OVERLAY: ContextVar[dict[str, bytes] | None] = ContextVar("gpu_advise_read_overlay", default=None)


@contextmanager
def overlay(files: dict[Path, bytes]) -> Iterator[None]:
    token = _OVERLAY.set({os.path.realpath(p): data for p, data in files.items()} or None)
    try:
        yield
    finally:
        _OVERLAY.reset(token)


def _planned(planned: dict[str, bytes], path: Path) -> bytes | None:
    try:
        return planned.get(os.path.realpath(path))
    except (OSError, ValueError):
        return None


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """An open descriptor of a regular file and its fstat; ReadRefused for anything else. stat first, so
    a FIFO, a device or a socket is never opened; then open with O_NONBLOCK (a FIFO swapped in after the
    stat cannot block the open) and fstat the descriptor, which is what is really read."""
    try:
        reason = _not_regular(os.stat(path).st_mode)
    except OSError as exc:
        raise ReadRefused(path, _os_reason(exc)) from None
    except ValueError:  # a NUL byte in the name
        raise ReadRefused(path, "invalid file name; not read") from None
    if reason:
        raise ReadRefused(path, reason)
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ReadRefused(path, _os_reason(exc)) from None
    try:
        info = os.fstat(fd)
        reason = _not_regular(info.st_mode)
    except OSError as exc:
        os.close(fd)
        raise ReadRefused(path, _os_reason(exc)) from None
    if reason:
        os.close(fd)
        raise ReadRefused(path, reason)
    return fd, info


def _read_upto(path: Path, fd: int, most: int) -> bytes:
    chunks: list[bytes] = []
    got = 0
    try:
        while got < most:
            chunk = os.read(fd, min(1 << 20, most - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise ReadRefused(path, _os_reason(exc)) from None
    return b"".join(chunks)


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file, at most `limit` of them; raises ReadRefused otherwise.

    The one way gpu-advise reads a file it did not write (_open_regular: never a FIFO, device or
    socket). At most limit + 1 bytes are read, so a file that grows, or lies about its size, cannot
    exhaust memory."""
    planned = _OVERLAY.get()
    if planned is not None and (hit := _planned(planned, path)) is not None:
        if len(hit) > limit:
            raise ReadRefused(path, _too_large(len(hit), limit))
        return hit
    fd, info = _open_regular(path)
    try:
        if info.st_size > limit:
            raise ReadRefused(path, _too_large(info.st_size, limit))
        data = _read_upto(path, fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ReadRefused(path, _too_large(len(data), limit, at_least=True))
    return data


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a regular file, however large it is (a safetensors header); raises
    ReadRefused like read_bytes for anything else."""
    fd, _ = _open_regular(path)
    try:
        return _read_upto(path, fd, size)
    finally:
        os.close(fd)


def _too_large(size: int, limit: int, at_least: bool = False) -> str:
    shown = f"more than {limit / 1e6:.0f} MB" if at_least else f"{size / 1e6:.1f} MB"
    return f"file is {shown}, over the {limit / 1e6:.0f} MB limit for a config; not read"


def read_text_file(path: Path, limit: int = MAX_BYTES) -> str:
    """A regular file's UTF-8 text (BOM dropped); raises ReadRefused (one line, no content) otherwise."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ReadRefused(path, f"not valid UTF-8 (line {line}); not read") from None


def read_text(path: Path) -> tuple[str | None, Document | None]:
    """The file's text, or a Document carrying the GA001 problem that stopped us."""
    try:
        raw = read_bytes(path)
    except ReadRefused as exc:
        return None, _fail(path, "unknown", exc.reason)
    if b"\x00" in raw[:8192]:
        return None, _fail(path, "unknown", "binary file (NUL bytes), not a text config")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, _fail(path, "unknown", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", Span(line, col))
    return text, None


def read_document(path: Path, hint: DocumentKind | None = None, pyyaml: PinLookup | None = None) -> Document:
    """Read, parse and classify one file. Never raises for bad content.

    `hint` is the kind another file names it as (`deepspeed: ds.json`). Such a file may be anything
    (a pull request can name any file of the checkout), so when it does not parse, or parses but is
    not that kind of file, the finding says so without quoting a line, key or value of it. `pyyaml`
    gives the PyYAML release a folder's project pins (advisor.sources.pins.pinned_pyyaml), asked only
    for a YAML file with a merge key."""
    text, failed = read_text(path)
    if failed is not None:  # not read at all: the reason names the file, never its content
        if hint:
            failed.kind = hint
        return failed
    doc = _parse(path, text or "", hint, pyyaml)
    return as_named(doc, hint) if hint in NAMED_KINDS else doc


NAMED_KINDS = {"deepspeed": "a DeepSpeed config", "accelerate": "an accelerate config"}


def as_named(doc: Document, hint: DocumentKind | None) -> Document:
    """`doc` judged as the kind another file names it as: itself (as that kind) when it is one, else
    a GA001 document that quotes nothing of it."""
    label = NAMED_KINDS[str(hint)]
    kind = hint or doc.kind
    failed = [p for p in doc.problems if p.fails_reading]
    if failed:
        span = failed[0].span
        where = f"at line {span.line}, column {span.col}" if (span.line, span.col) != (1, 1) else "as a whole"
        return _fail(doc.path, kind, f"named as {label}, but not readable {where}; not judged", span)
    if isinstance(doc.data, list):  # read by the walk as no config (_unnamed_list): named, it is a broken one
        return _fail(
            doc.path, kind, f"named as {label}, but its top level is a list, not a mapping; not judged"
        )
    if not isinstance(doc.data, dict) or not doc.data:
        return doc
    if hint is not None and (
        classify_mapping(doc.data, "json") == hint or any(_near_known(hint, k) for k in doc.data)
    ):
        return doc if doc.kind == hint else records.replace(doc, kind=hint, dialect=None)
    count = len(doc.data)
    return _fail(
        doc.path,
        kind,
        f"named as {label}, but none of its {count} top-level keys is one; not judged",
    )


def _near_known(dialect: str, key: object) -> bool:
    """A known key of the dialect, or a near miss of one (a misspelt config is still that config)."""
    from advisor.sources.known_keys import known_keys, suggest

    return isinstance(key, str) and (key in known_keys(dialect) or suggest(dialect, key) is not None)


def _parse(path: Path, text: str, hint: DocumentKind | None, pyyaml: PinLookup | None = None) -> Document:
    suffix = path.suffix.lower()
    if suffix in PY_SUFFIXES or hint == "script":
        return Document(path, "script", data=None, text=text)
    if suffix in MARKDOWN_SUFFIXES and hint in (None, "launch"):
        from advisor.sources.readme_launch import read_markdown_launch

        return read_markdown_launch(path, text)
    if suffix in SHELL_SUFFIXES or hint == "launch" or (not suffix and looks_like_launch_script(text)):
        from advisor.sources.launch import read_launch

        if len(text) > MAX_SCRIPT_CHARS:
            return _fail(
                path, "launch", f"launch script is {len(text) / 1e6:.1f} MB; over 1 MB it is not read"
            )

        return read_launch(path, text)
    if suffix in JSON_SUFFIXES or (suffix not in YAML_SUFFIXES and text.lstrip().startswith("{")):
        return _read_json(path, text, hint)
    return _read_yaml(path, text, hint, pyyaml)


def _empty(path: Path, hint: DocumentKind | None) -> Document:
    return Document(
        path,
        hint or "unknown",
        data={},
        problems=[
            SourceProblem("empty-file", "empty file: no settings to read", Span(1, 1), severity="warning")
        ],
    )


def _read_yaml(path: Path, text: str, hint: DocumentKind | None, pyyaml: PinLookup | None = None) -> Document:
    import yaml

    from advisor.sources.yaml_file import YamlTooLarge, parse_yaml, yaml_error_message, yaml_error_span

    try:
        # merge-key precedence differs between PyYAML releases: the project's pin, looked up only then
        pin = pyyaml(Path(os.path.abspath(path)).parent) if pyyaml is not None and "<<" in text else None
        result = parse_yaml(text, pin)
    except YamlTooLarge as exc:
        return _fail(path, hint or "unknown", f"YAML rejected: {exc}")
    except yaml.YAMLError as exc:
        return _fail(path, hint or "unknown", yaml_error_message(exc), yaml_error_span(exc))
    except RecursionError:
        return _fail(path, hint or "unknown", "YAML rejected: nested too deeply")
    if result.data is None:
        return _empty(path, hint)
    if not isinstance(result.data, dict):
        if hint is None and isinstance(result.data, list):
            return _unnamed_list(path, result.data)
        kind = hint or "unknown"
        return Document(
            path,
            kind,
            data=result.data,
            problems=[
                SourceProblem(
                    "not-a-mapping",
                    f"expected a mapping of settings at the top level, found a {type(result.data).__name__}",
                    Span(1, 1),
                    severity=None if hint else "warning",
                )
            ],
        )
    return _classified(path, hint or classify_mapping(result.data, "yaml"), result, text)


def _read_json(path: Path, text: str, hint: DocumentKind | None) -> Document:
    from advisor.sources.json_file import JsonSyntaxError, parse_json

    if not text.strip():
        return _empty(path, hint)
    try:
        result = parse_json(text)
    except JsonSyntaxError as exc:
        return _fail(path, hint or "unknown", f"invalid JSON: {exc.message}", exc.span)
    except RecursionError:
        return _fail(path, hint or "unknown", "JSON rejected: nested too deeply")
    if not isinstance(result.data, dict):
        if hint is None and isinstance(result.data, list):
            return _unnamed_list(path, result.data)
        return _fail(path, hint or "unknown", "expected a JSON object at the top level")
    doc = _classified(path, hint or classify_mapping(result.data, "json"), result, text)
    if hint is None and doc.kind == "unknown":
        # what only a strict reader refuses (a comment, a 31-digit integer) is no problem of a file that is
        # no config: .devcontainer/devcontainer.json (JSONC), a tokenizer_config.json's model_max_length
        doc.problems = [p for p in doc.problems if p.kind not in _STRICT_READER_KINDS]
    return doc


_STRICT_READER_KINDS = frozenset({"json-comment", "refused-number"})


def _unnamed_list(path: Path, data: list[Any]) -> Document:
    """A YAML or JSON list that nothing names as a config: a dataset (alpaca_data.json's records), a docs
    table of contents (HF repos' docs/source/_toctree.yml), a playbook. None of the configs read here is a
    list, so it is no config at all, not a broken one; a list a launch names is still refused."""
    return Document(path, "unknown", data=data)


def _classified(path: Path, kind: DocumentKind, result: YamlResult | JsonResult, text: str) -> Document:
    doc = Document(path, kind, result.data, result.key_spans, result.value_spans, result.problems, text)
    if kind == "training_args":
        doc.dialect = training_dialect(result.data)
    elif kind == "axolotl":
        doc.dialect = "axolotl"
    return doc
