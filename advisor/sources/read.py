"""Read any file into a Document: guard against bad input, parse, classify by content."""

from __future__ import annotations

from pathlib import Path

from advisor.sources.classify import classify_mapping, looks_like_launch_script, training_dialect
from advisor.sources.document import Document, DocumentKind, SourceProblem, Span

MAX_BYTES = 10 * 1024 * 1024
MAX_SCRIPT_CHARS = 1024 * 1024  # launch scripts are read by a shell lexer; keep it well under a second

YAML_SUFFIXES = {".yaml", ".yml"}
JSON_SUFFIXES = {".json", ".conf", ".jsonc", ".hjson"}
SHELL_SUFFIXES = {".sh", ".bash", ".slurm", ".sbatch", ".zsh"}
PY_SUFFIXES = {".py"}
CONFIG_SUFFIXES = YAML_SUFFIXES | JSON_SUFFIXES | SHELL_SUFFIXES


def _fail(path: Path, kind: DocumentKind, message: str, span: Span | None = None) -> Document:
    return Document(path, kind, problems=[SourceProblem("GA001", message, span or Span(1, 1))])


def read_text(path: Path) -> tuple[str | None, Document | None]:
    """The file's text, or a Document carrying the GA001 problem that stopped us."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return None, _fail(path, "unknown", f"cannot read file: {exc.strerror}")
    if size > MAX_BYTES:
        return None, _fail(path, "unknown", f"file is {size / 1e6:.1f} MB, over the 10 MB limit for a config")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, _fail(path, "unknown", f"cannot read file: {exc.strerror}")
    if b"\x00" in raw[:8192]:
        return None, _fail(path, "unknown", "binary file (NUL bytes), not a text config")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, _fail(path, "unknown", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", Span(line, col))
    return text, None


def read_document(path: Path, hint: DocumentKind | None = None) -> Document:
    """Read, parse and classify one file. Never raises for bad content."""
    text, failed = read_text(path)
    if failed is not None:
        if hint:
            failed.kind = hint
        return failed
    assert text is not None
    suffix = path.suffix.lower()
    if suffix in PY_SUFFIXES or hint == "script":
        return Document(path, "script", data=None, text=text)
    if suffix in SHELL_SUFFIXES or hint == "launch" or (not suffix and looks_like_launch_script(text)):
        from advisor.sources.launch import read_launch

        if len(text) > MAX_SCRIPT_CHARS:
            return _fail(
                path, "launch", f"launch script is {len(text) / 1e6:.1f} MB; over 1 MB it is not read"
            )

        return read_launch(path, text)
    if suffix in JSON_SUFFIXES or (suffix not in YAML_SUFFIXES and text.lstrip().startswith("{")):
        return _read_json(path, text, hint)
    return _read_yaml(path, text, hint)


def _empty(path: Path, hint: DocumentKind | None) -> Document:
    return Document(
        path,
        hint or "unknown",
        data={},
        problems=[SourceProblem("GA001", "empty file: no settings to read", Span(1, 1), severity="warning")],
    )


def _read_yaml(path: Path, text: str, hint: DocumentKind | None) -> Document:
    import yaml

    from advisor.sources.yaml_file import YamlTooLarge, parse_yaml, yaml_error_message, yaml_error_span

    try:
        result = parse_yaml(text)
    except YamlTooLarge as exc:
        return _fail(path, hint or "unknown", f"YAML rejected: {exc}")
    except yaml.YAMLError as exc:
        return _fail(path, hint or "unknown", yaml_error_message(exc), yaml_error_span(exc))
    except RecursionError:
        return _fail(path, hint or "unknown", "YAML rejected: nested too deeply")
    if result.data is None:
        return _empty(path, hint)
    if not isinstance(result.data, dict):
        kind = hint or "unknown"
        return Document(
            path,
            kind,
            data=result.data,
            problems=[
                SourceProblem(
                    "GA001",
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
        return _fail(path, hint or "unknown", "expected a JSON object at the top level")
    return _classified(path, hint or classify_mapping(result.data, "json"), result, text)


def _classified(path: Path, kind: DocumentKind, result: object, text: str) -> Document:
    doc = Document(path, kind, result.data, result.key_spans, result.value_spans, result.problems, text)
    if kind == "training_args":
        doc.dialect = training_dialect(result.data)
    elif kind == "axolotl":
        doc.dialect = "axolotl"
    return doc
