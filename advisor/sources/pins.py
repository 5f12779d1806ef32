"""The versions a project pins for the libraries whose keys we judge (transformers, TRL, accelerate, ...).

Read from the files people pin in, nearest folder first: lock files (uv.lock, poetry.lock, Pipfile.lock:
exact versions; a git source's commit), then requirements*.txt (with the files its ``-r`` / ``-c`` lines
include), pyproject.toml (PEP 621 dependencies and optional dependencies,
poetry dependencies), environment.yml (conda and its pip list), setup.cfg (install_requires) and
setup.py (the literal ``install_requires=[...]`` of its ``setup()`` call, and the ``_deps`` list that
transformers' own setup.py idiom looks up through ``deps[...]`` / ``deps_list(...)``; read from the AST, never
run), and last the shell scripts that pip-install (``install.sh``: advisor.sources.pins_shell).
A pin is a specifier (``==4.57.1``, ``>=4.41,<5``, poetry ``^4.40``); which release it means is decided
against the releases we ship key data for (advisor.facts.versions). A PEP 508 direct reference
(``trl @ git+https://github.com/huggingface/trl.git@69ad852``) pins what the URL names: a release for a tag
(``@v0.14.0``), a wheel or sdist file name, a GitHub tag archive; otherwise (a commit, a branch, a local path)
a pin whose release cannot be known (``Pin.spec`` empty, ``Pin.via`` saying why), except a default branch
(no revision, ``@main``): its newest commit (``Pin.newest``).
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.lazy_pattern import LazyPattern
from advisor.core.records import record
from advisor.sources.yaml_merge import PyYamlPin

if TYPE_CHECKING:
    from advisor.sources.boundary import ProjectBoundary

PACKAGES = ("transformers", "trl", "accelerate", "peft", "deepspeed")
# read too: PyYAML's release decides merge-key precedence for the readers (advisor/sources/yaml_merge.py);
# bitsandbytes' decides what a 4-bit Linear keeps for backward (before 0.43.2 its input: PR #1270), a fact
# for the estimator (advisor.facts.versions.pinned); axolotl's decides which of its own patches a run gets
# (advisor/facts/axolotl_setup.py); torch's whether zero_grad() frees the gradients and how large the CUDA
# context is (advisor/facts/torch_release.py)
WANTED = (*PACKAGES, "pyyaml", "bitsandbytes", "axolotl", "torch")
_WANTED = WANTED

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
# shell scripts read per folder (install.sh and the like: advisor.sources.pins_shell), after PIN_FILES
MAX_SHELL_FILES = 40

_REQ_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(\(?[<>=!~^][^;#]*)?")
# PEP 508 ``name [extras] @ url``: the URL runs to the first whitespace (a marker follows after " ;")
_DIRECT_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*@\s*(\S+)")


@record(frozen=True, slots=True)
class Pin:
    package: str
    spec: str  # as written, normalised to PEP 440 ("^4.40" becomes ">=4.40,<5"); "" when ``via`` is unknown
    path: Path
    line: int
    # a direct reference, as the pin is shown: "git commit 69ad852", "git tag v0.14.0", "wheel x.whl";
    # with an empty spec, its release cannot be known, unless it is the newest tree (below)
    via: str = ""
    # a repository's default branch (no revision, or @main / @master): pip installs its newest commit, a
    # tree at least as new as the release current when it is installed
    newest: bool = False

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
    direct = _DIRECT_RE.match(text)
    if direct is not None:
        name = _norm(direct.group(1))
        if name in _WANTED and name not in out:
            out[name] = _direct_pin(name, direct.group(3), path, line)
        return
    m = _REQ_RE.match(text)
    if not m:
        return
    name = _norm(m.group(1))
    if name not in _WANTED or name in out:
        return
    spec = (m.group(3) or "").strip().strip("()").replace(" ", "")
    if spec.startswith("=") and not spec.startswith("=="):
        spec = "=" + spec  # conda's single "=" (transformers=4.57.1)
    if spec and any(c.isdigit() for c in spec):  # "trl==" names no version: pip refuses the line
        out[name] = Pin(name, _poetry_spec(spec), path, line)


# A revision that names a release: the libraries we read tag their releases v4.44.0 / 0.14.0
_TAG_RE = LazyPattern(r"v?(\d+(?:\.\d+)+)")
_COMMIT_RE = re.compile(r"[0-9a-fA-F]{7,40}")
_URL_START = ("git+", "hg+", "svn+", "bzr+", "http://", "https://", "file:")
_ARCHIVE_EXT = (".tar.gz", ".tar.bz2", ".tgz", ".zip")


def direct_reference(url: str) -> tuple[str, str]:
    """(spec, via) for a direct reference's URL as pip installs it: a VCS URL's revision is what follows the
    path's last "@" (pip 23.2 _internal/vcs/versioncontrol.py:415-417, after urlsplit, so ``user@host`` is
    no revision); a tag like ``v0.14.0`` is that release; a commit, a branch or no revision at all is a tree
    whose release cannot be known (spec ""). A wheel's file name carries its version (name-version-...whl,
    pip _internal/models/wheel.py:15-20), as does an sdist's or a GitHub tag archive's."""
    from urllib.parse import unquote, urlsplit

    url = url.strip().strip("'\"")
    base = url.split("#", 1)[0]
    scheme = base.split(":", 1)[0].lower()
    try:
        parts = urlsplit(base)
    except ValueError:
        return "", "a URL that cannot be read"
    if "+" in scheme:  # git+https://..., the VCS forms pip takes
        vcs = scheme.split("+", 1)[0]
        if "@" not in parts.path:
            return "", f"{vcs} default branch of {_shown(parts.path)}"
        rev = unquote(parts.path.rsplit("@", 1)[1])
        if not rev:  # pip refuses it (versioncontrol.py:418-423): nothing is installed
            return "", f"{vcs} URL with an empty revision"
        if rev in ("main", "master"):
            return "", f"{vcs} default branch {rev} of {_shown(parts.path.rsplit('@', 1)[0])}"
        tag = _TAG_RE.fullmatch(rev)
        if tag:
            return f"=={tag.group(1)}", f"{vcs} tag {rev}"
        if _COMMIT_RE.fullmatch(rev):
            return "", f"{vcs} commit {rev[:7]}"
        return "", f"{vcs} ref {rev}"
    name = unquote(parts.path.rstrip("/").rsplit("/", 1)[-1])
    if scheme == "file" or "://" not in base:
        return "", f"local path {name or base}"
    if name.endswith(".whl"):
        wheel = re.match(r"[^-]+-(\d+(?:\.\d+)+)-", name)
        return (f"=={wheel.group(1)}", f"wheel {name}") if wheel else ("", f"wheel {name}")
    stem = next((name[: -len(ext)] for ext in _ARCHIVE_EXT if name.endswith(ext)), None)
    if stem is not None:
        if "/archive/" in parts.path:  # github.com/<org>/<repo>/archive/[refs/tags/]<ref>.zip
            tag = _TAG_RE.fullmatch(stem)
            if tag and "/refs/heads/" not in parts.path:
                return f"=={tag.group(1)}", f"archive of tag {stem}"
            return "", f"archive of {stem}"
        sdist = re.fullmatch(r"[A-Za-z0-9_.]+?-(\d+(?:\.\d+)+)", stem)
        if sdist:
            return f"=={sdist.group(1)}", f"sdist {name}"
    return "", f"URL {name or base}"


_NEWEST = "default branch"  # how direct_reference names a default branch: Pin.newest


def _shown(repo_path: str) -> str:
    return repo_path.strip("/").removesuffix(".git") or "the repository"


def _url_name(url: str) -> str | None:
    """The project a bare URL requirement installs (a requirements line ``git+https://...#egg=trl``): its
    ``egg=`` fragment (pip 23.2 _internal/models/link.py:429), a wheel's or sdist's file name, else the
    repository's own name when it is one of the libraries we read (huggingface/trl.git is trl; pip learns
    the name by building the tree, which is never done here)."""
    egg = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", url)
    if egg:
        return _norm(egg.group(1))
    base = url.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    if "+" in base.split(":", 1)[0] and "@" in base.rsplit("/", 1)[-1]:
        base = base.rsplit("@", 1)[0]
    last = base.rsplit("/", 1)[-1]
    if "/archive/" in base:  # github.com/<org>/<repo>/archive/...: the repository's name
        last = base.split("/archive/", 1)[0].rsplit("/", 1)[-1]
    last = last.removesuffix(".git")
    candidate = re.split(r"-\d", last, maxsplit=1)[0] if last.endswith((".whl", *_ARCHIVE_EXT)) else last
    name = _norm(candidate)
    return name if name in _WANTED else None


def _from_url(url: str, path: Path, line: int, out: dict[str, Pin]) -> None:
    url = url.strip()
    if not url.startswith(_URL_START):
        return  # a local folder (``-e .``): not one of the libraries we read, by its name
    name = _url_name(url)
    if name is not None and name not in out:
        out[name] = _direct_pin(name, url, path, line)


def _direct_pin(name: str, url: str, path: Path, line: int) -> Pin:
    spec, via = direct_reference(url)
    return Pin(name, spec, path, line, via, newest=via.split(" ", 1)[-1].startswith(_NEWEST))


def _names_wanted(requirement: str) -> bool:
    m = _DIRECT_RE.match(requirement) or _REQ_RE.match(requirement)
    return m is not None and _norm(m.group(1)) in _WANTED


def _line_of(text: str, needle: str, start: int = 0) -> int:
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _requirements(text: str, path: Path, out: dict[str, Pin]) -> None:
    for n, raw in enumerate(text.splitlines(), 1):
        _from_line(raw.split(" #", 1)[0].strip(), path, n, out)


def _from_line(line: str, path: Path, n: int, out: dict[str, Pin]) -> None:
    """One requirements-file line (pip's format: a requirement, ``-e URL``, a bare URL; other options
    and comments pin nothing)."""
    editable = re.match(r"(?:-e|--editable)(?:\s+|=)(\S+)", line)
    if editable:
        _from_url(editable.group(1), path, n, out)
    elif line.startswith(_URL_START):
        _from_url(line.split()[0], path, n, out)
    elif line and not line.startswith(("#", "-")):
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
            line = _line_of(text, f'name = "{pkg.get("name")}"')
            commit = _locked_commit(pkg.get("source"))
            if commit is None:
                out[name] = Pin(name, f"=={version}", path, line)
            else:  # the version a git tree's own metadata gives: a release, or a .devN between two
                plain = re.fullmatch(r"\d+(?:\.\d+)*", version) is not None
                out[name] = Pin(
                    name, f"=={version}" if plain else "", path, line, f"git commit {commit[:7]} ({version})"
                )


def _locked_commit(source: Any) -> str | None:
    """The commit a lock file resolved a git source to: uv.lock ``source = { git = "URL?rev=X#<sha>" }``,
    poetry.lock ``[package.source] type = "git"`` with ``resolved_reference``."""
    if not isinstance(source, dict):
        return None
    if isinstance(source.get("git"), str):
        return source["git"].rpartition("#")[2] or "unknown"
    if source.get("type") == "git":
        return str(source.get("resolved_reference") or source.get("reference") or "unknown")
    return None


def _pipfile_lock(text: str, path: Path, out: dict[str, Pin]) -> None:
    data = json.loads(text)
    for group in ("default", "develop"):
        for name, entry in (data.get(group) or {}).items():
            n = _norm(name)
            if n in _WANTED and isinstance(entry, dict) and isinstance(entry.get("version"), str):
                out.setdefault(n, Pin(n, entry["version"], path, _line_of(text, f'"{name}"')))
            elif n in _WANTED and isinstance(entry, dict) and isinstance(entry.get("git"), str):
                ref = entry.get("ref")
                url = f"git+{entry['git']}" + (f"@{ref}" if isinstance(ref, str) and ref else "")
                out.setdefault(n, _direct_pin(n, url, path, _line_of(text, f'"{name}"')))


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
            if n in _WANTED and n not in out and isinstance(value, dict) and spec is None:
                url = _poetry_url(value)
                if url is not None:
                    out[n] = _direct_pin(n, url, path, _line_of(text, name))
                continue
            if n in _WANTED and isinstance(spec, str) and n not in out:
                spec = spec.replace(" ", "")
                spec = f"=={spec}" if re.fullmatch(r"\d+(\.\d+)*", spec) else spec
                out[n] = Pin(n, _poetry_spec(spec), path, _line_of(text, name))


def _poetry_url(value: dict[str, Any]) -> str | None:
    """A poetry git, url or path dependency as the direct reference pip would take: ``{git = URL, tag =
    "v0.14.0"}`` (also ``rev``, ``branch``; none: the default branch), ``{url = ...}``, ``{path = ...}``."""
    git = value.get("git")
    if isinstance(git, str):
        ref = next((value[k] for k in ("tag", "rev", "branch") if isinstance(value.get(k), str)), None)
        base = git if "://" in git else f"https://{git.replace(':', '/', 1).split('@', 1)[-1]}"
        return f"git+{base}" + (f"@{ref}" if ref else "")
    if isinstance(value.get("url"), str):
        return str(value["url"])
    if isinstance(value.get("path"), str):
        return "file:" + str(value["path"])
    return None


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
                _from_line(item.split("::")[-1].strip(), path, line, out)  # a pip list takes -e and URLs


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
    """The requirement strings of ``install_requires=`` / ``extras_require=`` in a ``setup(...)`` call; the
    file is parsed only. Besides literals, the idiom of transformers' setup.py (copied by alignment-handbook,
    open-r1, SPIN...): a ``_deps = ["accelerate==0.23.0", ...]`` list, a dict comprehension over it keyed by
    each requirement's name (``deps = {b: a for a, b in (re.findall(r"^(([^!=<>~ ]+)...", x)[0] for x in
    _deps)}``), and ``deps["accelerate"]`` or ``deps_list("accelerate", ...)`` (a function returning
    ``[deps[p] for p in pkgs]``) in the requirement lists: each is the ``_deps`` string of that name."""
    tree = ast.parse(text)
    lists: dict[str, ast.expr] = {}
    items: dict[str, list[ast.expr]] = {}  # extras["dev"] = ...: the values set item by item
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                lists[target.id] = node.value
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                items.setdefault(target.value.id, []).append(node.value)
    tables = _deps_tables(lists)
    helpers = _deps_helpers(tree, tables)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg not in ("install_requires", "extras_require"):
                continue
            values = [kw.value]
            if isinstance(kw.value, ast.Name):
                values = [lists.get(kw.value.id, kw.value), *items.get(kw.value.id, ())]
            for value in values:
                for found, line in _requirement_strings(value, tables, helpers):
                    _from_requirement(found, path, line, out)


def _deps_key(requirement: str) -> str:
    """The key transformers' setup.py gives a ``_deps`` string: the text before the first of ``!=<>~ []``
    (setup.py ``re.findall(r"^(([^!=<>~ ]+)(?:[!=<>~ ].*)?$)", x)[0]``, group 2)."""
    m = re.match(r"[^!=<>~ \[\]]+", requirement)
    return m.group(0) if m else requirement


def _deps_tables(lists: dict[str, ast.expr]) -> dict[str, dict[str, tuple[str, int]]]:
    """{dict name: {key: (requirement, line)}} for each module-level dict comprehension over a literal list
    of requirement strings."""
    out: dict[str, dict[str, tuple[str, int]]] = {}
    for name, value in lists.items():
        if not isinstance(value, ast.DictComp):
            continue
        for sub in ast.walk(value):
            source = lists.get(sub.id) if isinstance(sub, ast.Name) else None
            if isinstance(source, ast.List | ast.Tuple):
                strings = [
                    (e.value, e.lineno)
                    for e in source.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
                if strings:
                    out[name] = {_deps_key(text): (text, line) for text, line in strings}
                    break
    return out


def _deps_helpers(tree: ast.Module, tables: dict[str, dict[str, tuple[str, int]]]) -> dict[str, str]:
    """{function name: dict name} for ``def deps_list(*pkgs): return [deps[pkg] for pkg in pkgs]``: a
    function subscripting a deps table with a name bound from its parameters."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.value, ast.Name)
                and sub.value.id in tables
                and isinstance(sub.slice, ast.Name)
            ):
                out[node.name] = sub.value.id
                break
    return out


def _requirement_strings(
    value: ast.expr, tables: dict[str, dict[str, tuple[str, int]]], helpers: dict[str, str]
) -> list[tuple[str, int]]:
    """The requirement strings an install_requires / extras_require expression holds, in source order."""
    found: list[tuple[str, int]] = []
    looked_up: set[int] = set()  # the key constants of deps["x"] / deps_list("x"): names, not requirements
    for node in ast.walk(value):
        keys: list[ast.expr] = []
        table: dict[str, tuple[str, int]] | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in tables:
            table, keys = tables[node.value.id], [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            table, keys = tables[helpers[node.func.id]], list(node.args)
        for key in keys:
            looked_up.add(id(key))
            if table is not None and isinstance(key, ast.Constant) and isinstance(key.value, str):
                hit = table.get(key.value)
                if hit is not None:
                    found.append(hit)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in looked_up:
            found.append((node.value, getattr(node, "lineno", 1)))
    return found


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
        shells = sorted(folder.glob("*.sh"))
    except OSError:
        reqs, shells = [], []
    # requirements.txt before requirements-dev.txt and the like; then the rest of the order above
    reqs.sort(key=lambda p: (p.name != "requirements.txt", p.name))
    # shell scripts last, the ones named for setting up (install.sh, setup_env.sh) first
    shells.sort(key=lambda p: (not re.match(r"(install|setup|env|requirements)", p.name.lower()), p.name))
    return out[:3] + reqs + out[3:] + shells[:MAX_SHELL_FILES]


def _shell_pins(text: str, path: Path) -> dict[str, Pin]:
    """The pins of a shell script's install commands (advisor.sources.pins_shell), the last install of a
    package winning (pip replaces what an earlier line installed); ``-r FILE`` read from the script's
    folder."""
    if "install" not in text:
        return {}  # no install command: neither the cache entry nor the reader (start-up of every check)
    from advisor.core.cache import cached
    from advisor.sources.pins_shell import READING, install_requests

    requests = cached(
        "pins-shell",
        str(path),
        (text, READING),  # READING: a change in how scripts are read is no stale entry
        lambda: install_requests(text),
        to_data=lambda found: [list(r) for r in found],
        from_data=lambda data: [(str(k), str(v), int(n)) for k, v, n in data],
    )
    out: dict[str, Pin] = {}
    for kind, value, line in requests:
        found: dict[str, Pin] = {}
        if kind == "file":
            found = _included(path.parent / value, path.parent, 1)
        elif kind == "conda":
            _from_requirement(value, path, line, found)  # conda's single "=" is read as ==
        elif value.startswith(_URL_START):
            _from_url(value, path, line, found)
        else:
            _from_requirement(value, path, line, found)
        out.update(found)
    return out


# -r / --requirement and -c / --constraint lines of a requirements file (pip's requirements file format:
# the named file's requirements, or constraints on the versions installed, are read as if written here)
_INCLUDE_RE = LazyPattern(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)")
MAX_INCLUDE_DEPTH = 5


def _requirements_file(text: str, path: Path, depth: int = 0) -> dict[str, Pin]:
    """A requirements file's own pins (cached), then those of the files its ``-r`` / ``-c`` lines name,
    in order, resolved from its folder (pip resolves a relative include from the including file), each
    inside the work tree; the first pin of a package wins."""
    out = {pin.package: pin for pin in _cached_pins(_requirements, text, path)}
    if depth >= MAX_INCLUDE_DEPTH or ("-r" not in text and "-c" not in text):
        return out
    for raw in text.splitlines():
        m = _INCLUDE_RE.match(raw.split(" #", 1)[0])
        if m is None or "://" in m.group(1):
            continue
        for package, pin in _included(path.parent / m.group(1), path.parent, depth + 1).items():
            out.setdefault(package, pin)
    return out


def _included(listed: Path, near: Path, depth: int) -> dict[str, Pin]:
    """The pins of a requirements file another file or an install script names; {} outside the work tree
    of ``near`` or when it cannot be read."""
    from advisor.sources.read import ReadRefused, read_text_file

    if not _inside(listed, _work_tree(near)):
        return {}
    try:
        return _requirements_file(read_text_file(listed, MAX_PIN_FILE_BYTES), listed, depth)
    except (ReadRefused, OSError, UnicodeDecodeError, ValueError):
        return {}


def _work_tree(folder: Path) -> Path:
    """The folder holding ``.git`` above ``folder`` (as the pins are walked: MAX_FOLDERS_UP), else itself."""
    here = Path(os.path.realpath(folder))
    for f in (here, *here.parents)[:MAX_FOLDERS_UP]:
        try:
            if (f / ".git").exists():
                return f
        except OSError:
            break
    return here


def _inside(path: Path, root: Path) -> bool:
    real = os.path.realpath(path)
    return real == str(root) or real.startswith(str(root).rstrip(os.sep) + os.sep)


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
        (text, _WANTED, "via"),  # "via": entries before direct references were read are not taken
        build,
        to_data=lambda pins: [[p.package, p.spec, p.line, p.via, p.newest] for p in pins],
        from_data=lambda data: [
            Pin(str(a), str(b), path, int(c), str(d), e is True) for a, b, c, d, e in data
        ],
    )


MAX_FOLDERS_UP = 12  # as advisor.facts.versions walks


def pinned_pyyaml(folder: Path, boundary: ProjectBoundary | None = None) -> PyYamlPin | None:
    """The PyYAML release pinned exactly (``==X``) nearest to ``folder``, up to the git work tree and never
    above ``boundary`` (the check's project: a folder above it is not read, as the pins of
    advisor.plan.context.CheckContext.pins_near). The caller keeps the answer for its check
    (advisor.plan.discover.DocumentCache)."""
    here = Path(os.path.abspath(folder))
    for f in (here, *here.parents)[:MAX_FOLDERS_UP]:
        if boundary is not None and not boundary.contains(f):
            break
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
    real_folder = os.path.realpath(folder)
    for path in _files(folder):
        try:
            if not path.is_file():
                continue
            # a pin file that is a link out of its folder (a planted `install.sh -> ../../outside/x`) is
            # not read: nothing outside the project is opened (tests/security/test_project_boundary.py)
            if os.path.commonpath([real_folder, os.path.realpath(path)]) != real_folder:
                continue
        except (OSError, ValueError):  # an unreadable folder on the way up
            continue
        try:
            text = read_text_file(path, MAX_PIN_FILE_BYTES)
        except (ReadRefused, OSError, UnicodeDecodeError):
            continue
        lowered = text.lower()
        names = any(name in lowered for name in (*PACKAGES, "yaml", "bitsandbytes", "axolotl", "torch"))
        includes = path.name not in _READERS and ("-r" in text or "-c" in text)  # a .sh or requirements
        if not names and not includes:
            continue  # pins nothing we read: not parsed (tomllib alone costs ~10 ms of start-up)
        try:
            if path.suffix == ".sh":
                for package, pin in _shell_pins(text, path).items():
                    out.setdefault(package, pin)
                continue
            if path.name not in _READERS:
                for package, pin in _requirements_file(text, path).items():
                    out.setdefault(package, pin)
                continue
            reader = _READERS.get(path.name, _requirements)
            for pin in _cached_pins(reader, text, path):
                out.setdefault(pin.package, pin)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError, AttributeError):
            continue  # tomllib/json/yaml errors are ValueError subclasses; yaml's YAMLError is below
        except Exception as exc:  # yaml.YAMLError: not imported up front (start-up time)
            if type(exc).__module__.startswith("yaml"):
                continue
            raise
    return out
