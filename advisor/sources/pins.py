"""The versions a project pins for the libraries whose keys we judge (transformers, TRL, accelerate, ...).

Read from the files people pin in, nearest folder first: lock files (uv.lock, poetry.lock, Pipfile.lock:
exact versions), then requirements*.txt, pyproject.toml (PEP 621 dependencies and optional dependencies,
poetry dependencies), environment.yml (conda and its pip list), setup.cfg (install_requires) and
setup.py (the literal ``install_requires=[...]`` of its ``setup()`` call, read from the AST, never run).
A pin is a specifier (``==4.57.1``, ``>=4.41,<5``, poetry ``^4.40``); which release it means is decided
against the releases we ship key data for (advisor.facts.versions).
"""

from __future__ import annotations

import ast
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from advisor.core.records import record
from advisor.sources.yaml_merge import PyYamlPin

PACKAGES = ("transformers", "trl", "accelerate", "peft", "deepspeed")
# read too, for the readers: PyYAML's release decides merge-key precedence (advisor/sources/yaml_merge.py)
_WANTED = (*PACKAGES, "pyyaml")

# lock files first: an exact version beats a range written elsewhere in the same folder
PIN_FILES = (
    "uv.lock",
    "poetry.lock",
    "Pipfile.lock",
    "requirements.txt",
    "pyproject.toml",
    "environment.yml",
    "environment.yaml",
    "setup.cfg",
    "setup.py",
)
MAX_PIN_FILE_BYTES = 2 * 1024 * 1024

_REQ_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(\(?[<>=!~^][^;#]*)?")


@record(frozen=True, slots=True)
class Pin:
    package: str
    spec: str  # as written, normalised to PEP 440 ("^4.40" becomes ">=4.40,<5")
    path: Path
    line: int

    @property
    def where(self) -> str:
        """``sft/requirements.txt:3``: the path from the current folder, as the report shows paths, so that
        a sub-project's pin is told from the root's; only its name when it lies outside that folder."""
        from advisor.core.paths import relative

        shown = relative(self.path)
        return f"{self.path.name if shown.startswith('../') else shown}:{self.line}"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _poetry_spec(spec: str) -> str:
    """Poetry's caret and tilde forms as PEP 440 (^4.40 means >=4.40,<5; ~4.40 means >=4.40,<4.41)."""
    spec = spec.strip()
    m = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)", spec)
    if not m:
        return spec
    parts = [int(p) for p in m.group(2).split(".")]
    if m.group(1) == "^":
        idx = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
    else:
        idx = min(1, len(parts) - 1) if len(parts) > 1 else 0
    upper = [*parts[:idx], parts[idx] + 1]
    return f">={m.group(2)},<{'.'.join(map(str, upper))}"


def _from_requirement(text: str, path: Path, line: int, out: dict[str, Pin]) -> None:
    m = _REQ_RE.match(text)
    if not m:
        return
    name = _norm(m.group(1))
    if name not in _WANTED or name in out:
        return
    spec = (m.group(3) or "").strip().strip("()").replace(" ", "")
    if spec.startswith("=") and not spec.startswith("=="):
        spec = "=" + spec  # conda's single "=" (transformers=4.57.1)
    if spec:
        out[name] = Pin(name, _poetry_spec(spec), path, line)


def _names_wanted(requirement: str) -> bool:
    m = _REQ_RE.match(requirement)
    return m is not None and _norm(m.group(1)) in _WANTED


def _line_of(text: str, needle: str, start: int = 0) -> int:
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _requirements(text: str, path: Path, out: dict[str, Pin]) -> None:
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            _from_requirement(line, path, n, out)


def _lock(text: str, path: Path, out: dict[str, Pin]) -> None:
    """uv.lock / poetry.lock: [[package]] tables with name and version."""
    import tomllib

    data = tomllib.loads(text)
    for pkg in data.get("package", ()):
        if not isinstance(pkg, dict):
            continue
        name, version = _norm(str(pkg.get("name", ""))), pkg.get("version")
        if name in _WANTED and isinstance(version, str) and name not in out:
            out[name] = Pin(name, f"=={version}", path, _line_of(text, f'name = "{pkg.get("name")}"'))


def _pipfile_lock(text: str, path: Path, out: dict[str, Pin]) -> None:
    data = json.loads(text)
    for group in ("default", "develop"):
        for name, entry in (data.get(group) or {}).items():
            n = _norm(name)
            if n in _WANTED and isinstance(entry, dict) and isinstance(entry.get("version"), str):
                out.setdefault(n, Pin(n, entry["version"], path, _line_of(text, f'"{name}"')))


def _pyproject(text: str, path: Path, out: dict[str, Pin]) -> None:
    import tomllib

    data = tomllib.loads(text)
    project = data.get("project") or {}
    reqs = list(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}).values():
        reqs.extend(group if isinstance(group, list) else [])
    for req in reqs:
        if isinstance(req, str) and _names_wanted(req):  # its line looked up only then: 100,000
            _from_requirement(req, path, _line_of(text, req), out)  # requirements x a 2 MB text hang
    poetry = (data.get("tool") or {}).get("poetry") or {}
    groups = [poetry.get("dependencies") or {}]
    groups += [(g or {}).get("dependencies") or {} for g in (poetry.get("group") or {}).values()]
    for deps in groups:
        for name, value in deps.items():
            n = _norm(name)
            spec = value.get("version") if isinstance(value, dict) else value
            if n in _WANTED and isinstance(spec, str) and n not in out:
                spec = spec.replace(" ", "")
                spec = f"=={spec}" if re.fullmatch(r"\d+(\.\d+)*", spec) else spec
                out[n] = Pin(n, _poetry_spec(spec), path, _line_of(text, name))


def _environment(text: str, path: Path, out: dict[str, Pin]) -> None:
    """conda's dependencies and their pip list. Read by the bounded YAML reader (node, alias and size
    limits; yaml.safe_load took 12 s on 1,000 aliases of a long pip list), lines from its spans."""
    import yaml

    from advisor.sources.yaml_file import parse_yaml

    try:
        result = parse_yaml(text)
    except (yaml.YAMLError, RecursionError):  # its limits too: the file pins nothing
        return
    data = result.data
    deps = data.get("dependencies") if isinstance(data, dict) else None
    if not isinstance(deps, list):
        return
    for i, dep in enumerate(deps):
        if isinstance(dep, dict):
            items = dep.get("pip")
            where: tuple[str | int, ...] = ("dependencies", i, "pip")
        else:
            items, where = [dep], ("dependencies",)
        if not isinstance(items, list):
            continue
        for j, item in enumerate(items):
            if isinstance(item, str):
                span = result.value_spans.get((*where, j if isinstance(dep, dict) else i))
                line = span.line if span is not None else _line_of(text, item)
                _from_requirement(item.split("::")[-1], path, line, out)


def _setup_cfg(text: str, path: Path, out: dict[str, Pin]) -> None:
    inside = False
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("install_requires"):
            inside = True
            rest = stripped.split("=", 1)[1].strip() if "=" in stripped else ""
            if rest:
                _from_requirement(rest, path, n, out)
            continue
        if inside:
            if raw[:1] not in (" ", "\t") and stripped:
                inside = False
            elif stripped and not stripped.startswith("#"):
                _from_requirement(stripped, path, n, out)


def _setup_py(text: str, path: Path, out: dict[str, Pin]) -> None:
    """The string literals of ``install_requires=[...]`` in a ``setup(...)`` call; the file is parsed only."""
    tree = ast.parse(text)
    lists: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            lists[node.targets[0].id] = node.value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg not in ("install_requires", "extras_require"):
                continue
            value = lists.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
            for const in ast.walk(value):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    _from_requirement(const.value, path, getattr(const, "lineno", 1), out)


_READERS = {
    "uv.lock": _lock,
    "poetry.lock": _lock,
    "Pipfile.lock": _pipfile_lock,
    "pyproject.toml": _pyproject,
    "environment.yml": _environment,
    "environment.yaml": _environment,
    "setup.cfg": _setup_cfg,
    "setup.py": _setup_py,
}


def _files(folder: Path) -> list[Path]:
    out = [folder / name for name in PIN_FILES if name != "requirements.txt"]
    try:
        reqs = sorted(p for p in folder.glob("requirements*.txt"))
    except OSError:
        reqs = []
    # requirements.txt before requirements-dev.txt and the like; then the rest of the order above
    reqs.sort(key=lambda p: (p.name != "requirements.txt", p.name))
    return out[:3] + reqs + out[3:]


def _cached_pins(reader: Any, text: str, path: Path) -> list[Pin]:
    """One file's pins, through the on-disk cache (keyed by its text) that settings and rules use."""
    from advisor.core.cache import cached

    def build() -> list[Pin]:
        found: dict[str, Pin] = {}
        reader(text, path, found)
        return list(found.values())

    return cached(
        "pins",
        str(path),
        (text, _WANTED),
        build,
        to_data=lambda pins: [[p.package, p.spec, p.line] for p in pins],
        from_data=lambda data: [Pin(str(a), str(b), path, int(c)) for a, b, c in data],
    )


MAX_FOLDERS_UP = 12  # as advisor.facts.versions walks


@lru_cache(maxsize=64)
def pinned_pyyaml(folder: Path) -> PyYamlPin | None:
    """The PyYAML release pinned exactly (``==X``) nearest to ``folder``, up to the git work tree."""
    here = Path(os.path.abspath(folder))
    for f in (here, *here.parents)[:MAX_FOLDERS_UP]:
        pin = read_folder_pins(f).get("pyyaml")
        if pin is not None:
            exact = re.fullmatch(r"===?\s*(\d+(?:\.\d+)*)", pin.spec)
            return PyYamlPin(exact.group(1), pin.where) if exact else None
        try:
            if (f / ".git").exists():
                break
        except OSError:
            break
    return None


def read_folder_pins(folder: Path) -> dict[str, Pin]:
    """The pins written in one folder's files (first file in PIN_FILES order wins per package). A file
    that cannot be read or parsed pins nothing: its own reader reports it when it is a checked config."""
    from advisor.sources.read import ReadRefused, read_text_file

    out: dict[str, Pin] = {}
    for path in _files(folder):
        try:
            if not path.is_file():
                continue
        except OSError:  # an unreadable folder on the way up
            continue
        try:
            text = read_text_file(path, MAX_PIN_FILE_BYTES)
        except (ReadRefused, OSError, UnicodeDecodeError):
            continue
        if not any(name in text for name in PACKAGES) and "yaml" not in text.lower():
            continue  # pins nothing we judge: not parsed (tomllib alone costs ~10 ms of start-up)
        reader = _READERS.get(path.name, _requirements)
        try:
            for pin in _cached_pins(reader, text, path):
                out.setdefault(pin.package, pin)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError, AttributeError):
            continue  # tomllib/json/yaml errors are ValueError subclasses; yaml's YAMLError is below
        except Exception as exc:  # yaml.YAMLError: not imported up front (start-up time)
            if type(exc).__module__.startswith("yaml"):
                continue
            raise
    return out
