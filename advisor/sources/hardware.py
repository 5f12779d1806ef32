"""Hardware: the GPU catalog, the built-in machines and hardware descriptor files.

A hardware descriptor (YAML) says what the run will execute on::

    name: 4xH100-NVL
    gpus: {model: H100-NVL, count: 4}     # model: a GPU catalog key; memory_gib may override
    nvlink: [[0, 1], [2, 3]]              # groups joined by NVLink (AMD: Infinity Fabric); `all` = NVSwitch
                                           # (or an xGMI mesh); [] = none
    cpu_cores: 64
    ram_gib: 512
    nodes: 1                               # >1: the same box repeated, joined by `network`
    network: ib-400g                       # <ib|eth|efa|roce>-<Gb/s per NIC>g[x<NICs per node>]

Everything here is read lazily and cached: importing this module reads no file. Errors in a
descriptor raise `HardwareError` whose message names the file and the 1-based line and column.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from advisor.core.records import fields
from advisor.core.suggest import close_matches

# The GPU types, the catalog and the machine types live in modules of their own, so that
# advisor.sources.schema.hardware validates with them without importing this module; re-exported here.
from advisor.sources.gpu_catalog import (
    DATA_DIR,
    GPUS_FILE,
    _Loader,
    gpu_catalog,
    normalize_gpu_name,
    resolve_gpu,
    suggest_gpu,
    unknown_gpu_message,
)
from advisor.sources.gpu_catalog import (  # tests build and inspect the catalog through these
    _build_catalog_and_index as _build_catalog_and_index,
)
from advisor.sources.gpu_catalog import (
    _catalog_and_index as _catalog_and_index,
)
from advisor.sources.gpu_catalog import (
    _catalog_from_data as _catalog_from_data,
)
from advisor.sources.gpu_types import GpuSpec, NvlinkSpec, PcieSpec
from advisor.sources.machine_types import GpuGroup, Machine, parse_network

MACHINES_DIR = DATA_DIR / "machines"

__all__ = [
    "GpuGroup",
    "GpuSpec",
    "HardwareError",
    "Machine",
    "NvlinkSpec",
    "PcieSpec",
    "builtin_machines",
    "gpu_catalog",
    "hardware_schema",
    "load_hardware",
    "machine_yaml",
    "normalize_gpu_name",
    "parse_network",
    "resolve_gpu",
    "suggest_gpu",
    "unknown_gpu_message",
    "validate_machine",
]


class HardwareError(Exception):
    """A hardware name, descriptor or detection problem, with a message fit for the user.

    `file`, `line` and `col` (1-based) are set when the problem is in a descriptor file.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        lines: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.lines = lines or (message,)  # several problems of one descriptor: one line each

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------------------------
# Machine descriptor


def validate_machine(data: Any) -> Machine:
    """A Machine from a descriptor's mapping; raises advisor.core.datacodec.Invalid (a ValueError)."""
    from advisor.sources.schema.hardware import validate_machine as validate

    return validate(data)


def machine_yaml(machine: Machine) -> str:
    """The machine as descriptor YAML (loads back with load_hardware to an equal Machine)."""
    data = machine.to_descriptor()
    head = f"# {machine.gpus.count} x {machine.gpu.display_name}"
    if machine.nodes > 1:
        head += f", {machine.nodes} nodes"
    lines = [head, f"name: {_yaml_scalar(data['name'])}"]
    gpus = ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v in data["gpus"].items())
    lines.append(f"gpus: {{{gpus}}}")
    nvlink = data["nvlink"]
    lines.append(f"nvlink: {nvlink if nvlink == 'all' else '[' + ', '.join(str(g) for g in nvlink) + ']'}")
    for key in ("cpu_cores", "ram_gib", "nodes", "network", "notes"):
        if key in data and not (key == "nodes" and data[key] == 1):
            lines.append(f"{key}: {_yaml_scalar(data[key])}")
    return "\n".join(lines) + "\n"


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, str):
        # quote anything YAML 1.1 would read as another type, or that has YAML syntax in it
        plain = yaml.safe_load(value) == value if re.fullmatch(r"[\w.+-]+", value) else False
        return value if plain else yaml.safe_dump(value, default_style='"', width=1_000_000).strip()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def hardware_schema() -> dict[str, Any]:
    """JSON schema of the hardware descriptor."""
    from advisor.sources.schema.hardware import json_schema

    schema = json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpu-advise hardware descriptor"
    return schema


# --------------------------------------------------------------------------------------------
# Reading descriptors


def _mark_of(root: yaml.Node, loc: tuple[str | int, ...], *, key: bool) -> yaml.Mark:
    """The mark of the node at `loc` (the key node when `key`), or of the deepest one found."""
    node = root
    mark = root.start_mark
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                    mark = k.start_mark if key and part == loc[-1] else v.start_mark
                    node = v
                    break
            else:
                return mark
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            mark = node.start_mark
        else:
            return mark
    return mark


def _duplicate_keys(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                if k.value in seen:
                    yield k
                seen.add(k.value)
            yield from _duplicate_keys(v)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _duplicate_keys(item)


_FIELD_NAMES = {"": {f.name for f in fields(Machine)}, "gpus": {f.name for f in fields(GpuGroup)}}


def _describe(error: Any) -> tuple[tuple[str | int, ...], bool, str]:
    """(location, points-at-the-key, message) of one validation problem (advisor.core.datacodec.Invalid)."""
    loc = tuple(error["loc"])
    if error["type"] in ("invalid", "value_error"):  # the descriptor's own checks: whole sentences
        return loc, False, error["msg"]
    # drop union-branch labels such as "list[list[int]]" or "literal['all']"
    clean = tuple(p for p in loc if isinstance(p, int) or p in _FIELD_NAMES[""] | _FIELD_NAMES["gpus"])
    dotted = ".".join(str(p) for p in clean) or "descriptor"
    if error["type"] == "extra_forbidden":
        parent = ".".join(str(p) for p in loc[:-1])
        allowed = sorted(_FIELD_NAMES.get(parent, set()))
        msg = f"unknown key {loc[-1]!r}" + (f" in {parent}" if parent else "")
        close = close_matches(str(loc[-1]), allowed, n=1)
        msg += f"; did you mean {close[0]!r}?" if close else f"; allowed keys: {', '.join(allowed)}"
        return loc, True, msg
    if error["type"] == "missing":
        return loc[:-1], False, f"missing required key {dotted!r}"
    return clean, False, f"{dotted}: {error['msg']} (got {_shown(error.get('input'))})"


def _shown(value: Any, limit: int = 80) -> str:
    """A value for a message, cut short: a descriptor may hold a 10 MB string or a long list."""
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse_cached(text: str, source: str, default_name: str) -> Machine:
    """_parse_descriptor through the on-disk cache, keyed by the text and the GPU catalog's stamp."""
    from advisor.core.cache import cached, file_stamps

    key = (text, source, default_name, file_stamps([GPUS_FILE]))
    slot = os.path.abspath(source)
    from advisor.core.datacodec import decode, encode

    return cached(
        "machine",
        slot,
        key,
        lambda: _parse_descriptor(text, source, default_name=default_name),
        to_data=encode,
        from_data=lambda data: decode(Machine, data),
    )


def _builtin_key(text: str, stem: str) -> object:
    from advisor.core.cache import content_stamps

    return (text, stem, content_stamps([GPUS_FILE]))


def _parse_builtin(path: Path, *, use_cache: bool = True) -> Machine:
    """A shipped machine: decoded at build time in an installed wheel (setup.py), else through the cache."""
    from advisor.core.cache import has_prebuilt, prebuilt

    text = path.read_text(encoding="utf-8")
    name = f"machine:{path.stem}"
    if has_prebuilt(name):
        data = prebuilt(name, _builtin_key(text, path.stem))
        if data is not None:
            from advisor.core.datacodec import DataError, decode

            try:
                return decode(Machine, data)
            except DataError:
                pass
    if not use_cache:
        return _parse_descriptor(text, str(path), default_name=path.stem)
    return _parse_cached(text, str(path), path.stem)


def prebuilt_machines() -> dict[str, tuple[object, Any]]:
    """{entry name: (key, data)} of every shipped machine, for the build to store (setup.py)."""
    from advisor.core.datacodec import encode

    out: dict[str, tuple[object, Any]] = {}
    for path in sorted(MACHINES_DIR.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        machine = _parse_descriptor(text, str(path), default_name=path.stem)
        out[f"machine:{path.stem}"] = (_builtin_key(text, path.stem), encode(machine))
    return out


def _parse_descriptor(text: str, source: str, *, default_name: str | None = None) -> Machine:
    def fail(message: str, mark: yaml.Mark | None) -> HardwareError:
        line = mark.line + 1 if mark is not None else 1
        col = mark.column + 1 if mark is not None else 1
        return HardwareError(f"{source}:{line}:{col}: {message}", file=source, line=line, col=col)

    from advisor.sources.yaml_file import parse_yaml

    try:
        # the bounded reader first (node, alias, size and depth limits; values yaml.safe_load cannot
        # construct, such as `!!int ''`, are errors at their node), then the composer for the marks
        data = parse_yaml(text).data
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise fail(f"invalid YAML: {problem}", mark) from None
    except RecursionError:
        raise fail("invalid YAML: nested too deeply", None) from None
    if root is None:
        raise fail("the hardware descriptor is empty", None)
    if not isinstance(root, yaml.MappingNode):
        raise fail("a hardware descriptor must be a mapping (name:, gpus:, nvlink:, ...)", root.start_mark)
    for dup in _duplicate_keys(root):
        raise fail(f"duplicate key {dup.value!r}", dup.start_mark)
    if default_name and isinstance(data, dict) and not data.get("name"):
        data["name"] = default_name
    from advisor.core.datacodec import Invalid

    try:
        return validate_machine(data)
    except Invalid as exc:
        problems = [_describe(e) for e in exc.errors()]
        lines = []
        first: HardwareError | None = None
        for loc, at_key, msg in problems:
            err = fail(msg, _mark_of(root, loc, key=at_key))
            first = first or err
            lines.append(err.message)
        assert first is not None
        raise HardwareError(
            "\n".join(lines), file=first.file, line=first.line, col=first.col, lines=tuple(lines)
        ) from None


class _CaseInsensitive(dict[str, Machine]):
    """A dict of machines whose lookups ignore case; iteration keeps the canonical names."""

    def __init__(self, items: Mapping[str, Machine]) -> None:
        super().__init__(items)
        self._folded = {k.casefold(): k for k in items}

    def _key(self, key: str) -> str:
        return self._folded.get(key.casefold(), key)

    def __getitem__(self, key: str) -> Machine:
        return super().__getitem__(self._key(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key) if isinstance(key, str) else key)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(self._key(key), default)


@cache
def builtin_machines() -> dict[str, Machine]:
    """The shipped machines (advisor/data/machines/*.yaml) by name; lookups ignore case."""
    machines: dict[str, Machine] = {}
    for path in sorted(MACHINES_DIR.glob("*.yaml")):
        machine = _parse_builtin(path, use_cache=False)
        machines[machine.name] = machine
    return _CaseInsensitive(machines)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name longer than the file system allows, a NUL byte
        return False


def load_hardware(name_or_path: str | Path) -> Machine:
    """A built-in machine by name (case-insensitive) or a descriptor YAML file."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if _is_file(path):
        from advisor.sources.read import ReadRefused, read_text_file

        try:
            content = read_text_file(path)  # regular files only, at most 10 MB read
        except ReadRefused as exc:
            raise HardwareError(f"{text}: cannot read hardware descriptor: {exc.reason}", file=text) from None
        return _parse_cached(content, text, path.stem)
    for candidate in MACHINES_DIR.glob("*.yaml"):  # parse only the one asked for: start-up matters
        if candidate.stem.casefold() == text.casefold():
            machine = _parse_builtin(candidate)
            if machine.name.casefold() == text.casefold():
                return machine
    machines = builtin_machines()
    if text in machines:
        return machines[text]
    if path.suffix.lower() in (".yaml", ".yml", ".json") or "/" in text or "\\" in text:
        raise HardwareError(f"{text}: hardware descriptor file not found", file=text)
    close = close_matches(text.casefold(), [m.casefold() for m in machines], n=3, cutoff=0.5)
    canon = {m.casefold(): m for m in machines}
    msg = f"unknown hardware {_shown(text)}: not a built-in machine and not a file"
    if close:
        msg += f"; did you mean {' or '.join(repr(canon[c]) for c in close)}?"
    msg += f" (built-in: {', '.join(machines)})"
    raise HardwareError(msg)
