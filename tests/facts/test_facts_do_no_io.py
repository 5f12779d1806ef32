"""The facts are the pure stage (DESIGN.md, issue 19 item 2): what they know of the project's files comes
from the check's context (advisor.plan.context.CheckContext: texts, settings, pins, listings, real paths),
which decides when a read happens and keeps the answer; no module under advisor/facts/ opens, stats,
walks or resolves a path itself, nor reads the current folder or the environment of the process.

Reading the package's own data (advisor/data/: key histories, version tables) is not reading the project.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

FACTS = Path(__file__).resolve().parents[2] / "advisor" / "facts"

# calls that touch the file system or the process's surroundings, by the name they are called by
_IO_FUNCTIONS = {"open", "walk", "listdir", "scandir", "stat", "lstat", "getcwd", "cwd", "realpath"}
_IO_METHODS = {
    "read_text",
    "read_bytes",
    "open",
    "resolve",
    "exists",
    "is_file",
    "is_dir",
    "is_symlink",
    "iterdir",
    "glob",
    "rglob",
    "stat",
    "lstat",
    "samefile",
    "write_text",
    "write_bytes",
    "mkdir",
    "unlink",
}
_IO_PATH_FUNCTIONS = {"exists", "isfile", "isdir", "islink", "getsize", "getmtime", "realpath", "samefile"}
_PACKAGE_DATA_MARKS = ("PACKAGE_DIR", "files('advisor')", 'files("advisor")')


def _package_data_names(tree: ast.Module) -> set[str]:
    """Module-level names bound to a path inside the package (``_DATA = PACKAGE_DIR / "data" / ...``)."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(m in ast.unparse(node.value) for m in _PACKAGE_DATA_MARKS):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def io_calls(source: str) -> list[tuple[int, str]]:
    """(line, call) of each call in `source` that reads the file system, the current folder or the
    process's environment, except reads of the package's own data."""
    tree = ast.parse(source)
    package_data = _package_data_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "os" and node.attr == "environ":
            found.append((node.lineno, "os.environ"))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        text = ast.unparse(func)
        if isinstance(func, ast.Name) and func.id in _IO_FUNCTIONS:
            found.append((node.lineno, text))
        elif isinstance(func, ast.Attribute):
            receiver = ast.unparse(func.value)
            if any(m in receiver for m in _PACKAGE_DATA_MARKS) or receiver in package_data:
                continue
            if receiver in ("os", "os.path", "Path", "subprocess", "shutil") and (
                func.attr in _IO_FUNCTIONS | _IO_PATH_FUNCTIONS or receiver in ("subprocess", "shutil")
            ):
                found.append((node.lineno, text))
            elif receiver not in ("os", "os.path") and func.attr in _IO_METHODS and not _is_text_method(func):
                if func.attr == "resolve" and node.args:
                    continue  # Path.resolve takes no positional argument: a name resolver's (side_effects)
                found.append((node.lineno, text))
    return sorted(found)


def _is_text_method(func: ast.Attribute) -> bool:
    """A method of a string literal (``"a b".split``) reads nothing; any other receiver counts."""
    return isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)


def test_the_scan_sees_each_kind_of_io() -> None:
    source = (
        "import os\nfrom pathlib import Path\n"
        "a = open('x')\nb = Path('y').read_text()\nc = os.walk('.')\nd = os.path.exists('z')\n"
        "e = p.resolve()\nf = os.environ.get('RANK')\ng = Path.cwd()\nh = os.getcwd()\n"
    )
    lines = [line for line, _ in io_calls(source)]
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10]


def test_the_scan_lets_package_data_through() -> None:
    source = (
        "from importlib.resources import files\nPACKAGE_DIR = ...\n_DATA = PACKAGE_DIR / 'data' / 'k.json'\n"
        "a = _DATA.read_text()\nb = files(\"advisor\").joinpath('data').read_text()\n"
    )
    assert io_calls(source) == []


@pytest.mark.parametrize("module", sorted(FACTS.rglob("*.py")), ids=lambda p: str(p.relative_to(FACTS)))
def test_no_fact_module_touches_the_file_system(module: Path) -> None:
    calls = io_calls(module.read_text(encoding="utf-8"))
    assert not calls, f"{module.relative_to(FACTS.parents[1])}: ask the check's context instead: {calls}"


# the modules that read the project's files on the context's behalf: a fact that imported one would read
_READERS = (
    "advisor.sources.read",
    "advisor.sources.project_walk",
    "advisor.sources.exclude",
    "advisor.sources.gitignore",
    "advisor.sources.git_index",
    "advisor.plan.discover",
    "advisor.plan.reference_paths",
)


def imported_readers(source: str) -> list[tuple[int, str]]:
    """(line, module) of each import in `source` of a module that reads the project's files."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        out += [(node.lineno, n) for n in names if n.startswith(_READERS)]
    return out


def test_the_import_scan_sees_a_reader() -> None:
    source = "from advisor.plan.discover import resolve_reference\nimport advisor.sources.read\nimport os\n"
    assert imported_readers(source) == [(1, "advisor.plan.discover"), (2, "advisor.sources.read")]


@pytest.mark.parametrize("module", sorted(FACTS.rglob("*.py")), ids=lambda p: str(p.relative_to(FACTS)))
def test_no_fact_module_imports_a_reader(module: Path) -> None:
    found = imported_readers(module.read_text(encoding="utf-8"))
    assert not found, f"{module.relative_to(FACTS.parents[1])}: ask the check's context instead: {found}"
