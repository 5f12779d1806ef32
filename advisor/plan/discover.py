"""Seed paths -> runs.

A launch command is the root of a run and pulls in every file it names; an accelerate config pulls in
its DeepSpeed file; a TrainingArguments file pulls in its DeepSpeed file. A config that no launch
command reaches is a run of its own. Folders are searched by content, not by file name.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.document import Document, Location, SourceProblem, Span
from advisor.core.lazy_pattern import LazyPattern
from advisor.core.paths import relative, resolved
from advisor.core.records import field, record
from advisor.plan.config_flag import config_flag_words
from advisor.plan.reference_paths import command_bases, names_file, resolve_reference, start_folders
from advisor.plan.unknown_workdir import installed_tool_config, launch_elsewhere
from advisor.sources import launchers
from advisor.sources.boundary import ProjectBoundary
from advisor.sources.exclude import FileFilter
from advisor.sources.markdown_files import documented, project_markdown
from advisor.sources.named import reads_as
from advisor.sources.project_imports import LIBRARIES, import_roots, module_files
from advisor.sources.read import (
    CONFIG_SUFFIXES,
    NAMED_KINDS,
    PY_SUFFIXES,
    SHELL_SUFFIXES,
    ReadRefused,
    as_named,
    read_bytes,
    read_document,
)

if TYPE_CHECKING:
    from advisor.sources.yaml_merge import PyYamlPin

RUN_KINDS = {"training_args", "axolotl", "accelerate", "deepspeed"}


@record(slots=True)
class Reference:
    """A file named by another file: where it is named, and what it resolved to."""

    named_at: Location
    raw: str
    path: Path | None  # None: does not exist, or lies outside the project (then `outside` says why)
    role: str  # "accelerate", "training_args", "deepspeed", "script", "fsdp_config"
    outside: str | None = None  # why the file is not read: it lies outside the project boundary
    looked: str = "beside the file and up to the project root"  # where it was looked for, in words
    written: str | None = None  # absent, but the launch script writes it before the command ("launch.sh:4")
    # absent here, but opened from a working folder that is not known to be this repository: why (then
    # its absence is unknown, not an error: advisor/plan/unknown_workdir.py)
    unknown: str | None = None


@record(slots=True)
class RunSpec:
    """The files of one run, before merging."""

    name: str
    root: Document
    command: Any = None  # LaunchCommand when the run starts from a launch script
    command_index: int = 0
    training: Document | None = None
    accelerate: Document | None = None
    deepspeed: Document | None = None
    script: Document | None = None
    references: list[Reference] = field(default_factory=list)
    hostfile: Any = None  # advisor.sources.hostfile.Hostfile of `deepspeed --hostfile FILE`
    # the folder the launch command runs in, when its script (or config) resolves from one folder only
    workdir: Path | None = None
    # why the folder the command runs in is not known to be this repository (a cd out of it or to a folder
    # not known statically, files named in another checkout), when no relative file of the command is found
    cwd_unknown: str | None = None

    @property
    def documents(self) -> list[Document]:
        docs = [self.root, self.training, self.accelerate, self.deepspeed]
        seen: list[Document] = []
        for d in docs:
            if d is not None and all(d is not s for s in seen):
                seen.append(d)
        return seen


class DocumentCache:
    """Each file is read once per invocation, however many runs name it. `boundary` bounds which files
    a reference may open (None: only the seeds' own project, see advisor.sources.boundary); `files` what a
    folder walk skips (None: the built-in exclusions and what git ignores)."""

    def __init__(self, boundary: ProjectBoundary | None = None, files: FileFilter | None = None) -> None:
        self.files = files or FileFilter()
        self._docs: dict[Path, Document] = {}
        self._named: dict[tuple[Path, str], Document] = {}  # read first as one kind, named as another
        self._refused: set[Path] = set()  # paths of the documents made by refused()
        self.boundary = boundary
        self._pyyaml_pins: dict[Path, PyYamlPin | None] = {}  # by folder, for this check only

    def _pyyaml_pin(self, folder: Path) -> PyYamlPin | None:
        """The PyYAML release a folder's project pins (advisor.sources.pins.pinned_pyyaml), within the
        check's boundary, looked up once per folder."""
        if folder not in self._pyyaml_pins:
            from advisor.sources.pins import pinned_pyyaml

            self._pyyaml_pins[folder] = pinned_pyyaml(folder, self.boundary)
        return self._pyyaml_pins[folder]

    def get(self, path: Path, hint: Any = None) -> Document:
        key = resolved(path)
        doc = self._docs.get(key)
        if doc is None:
            doc = read_document(path, hint, self._pyyaml_pin)
            self._docs[key] = doc
        elif hint in NAMED_KINDS and doc.kind != hint:
            # found by the walk as one kind, named as a DeepSpeed or accelerate config by a run: judged
            # as that (a GA001 that quotes nothing when it is not one), so its values never reach a report
            named = self._named.get((key, hint))
            if named is None:
                named = self._named[(key, hint)] = as_named(doc, hint)
            return named
        return doc

    def refused(self, path: Path, reason: str) -> Document:
        """A GA001 document for a path that is not read (an unreadable folder, a file outside)."""
        key = Path(os.path.abspath(path))
        doc = self._docs.get(key)
        if doc is not None and key not in self._refused:
            return doc  # also given on the command line, and read as the user asked
        if doc is None:
            doc = self._docs[key] = Document(key, "unknown")
            self._refused.add(key)
        doc.problems.append(SourceProblem("refused-path", reason, Span(1, 1)))
        return doc

    def all(self) -> list[Document]:
        return [*self._docs.values(), *self._named.values()]


@record(slots=True)
class WalkProblem:
    """A folder or file met while walking a checked folder that cannot be read (a permission error,
    a symlink loop, a file outside the project): reported as GA001 on that path, never a traceback."""

    path: Path
    reason: str


def iter_files(
    seeds: list[Path],
    boundary: ProjectBoundary | None = None,
    problems: list[WalkProblem] | None = None,
    files: FileFilter | None = None,
) -> list[Path]:
    """The files to check: each seed file, and the config files found by walking each seed folder.

    Folders are walked without following symlinked folders (no loops); a file found in a folder that
    is a symlink leaving the boundary is not read (the seeds themselves are: the user named them).
    `files` says what the walk skips (advisor/sources/exclude.py: the exclusions, what git ignores)."""
    files = files or FileFilter()
    out: list[Path] = []
    seen: set[Path] = set()
    problems = problems if problems is not None else []

    def add(p: Path) -> None:
        key = resolved(p)
        if key not in seen:
            seen.add(key)
            out.append(p)

    def unreadable(exc: OSError) -> None:
        where = Path(exc.filename) if exc.filename else Path("?")
        problems.append(WalkProblem(where, f"cannot read folder: {exc.strerror or exc}"))

    for seed in seeds:
        if not seed.is_dir():
            add(seed)
            continue
        for dirpath, dirnames, filenames in os.walk(seed, onerror=unreadable):
            dirnames[:] = sorted(
                d
                for d in dirnames
                if not files.skip(os.path.join(dirpath, d), True) and not _is_venv(Path(dirpath, d))
            )
            for name in sorted(filenames):
                p = Path(dirpath, name)
                kept = p.suffix.lower() in CONFIG_SUFFIXES or project_markdown(p, seed)
                if not kept or files.skip(p, False):
                    continue
                if not os.path.islink(p):
                    add(p)
                elif _is_loop(p):
                    # reported on its folder: Path.resolve() on the loop itself raises (Python 3.11)
                    problems.append(WalkProblem(Path(dirpath), f"'{name}' is a symlink loop; not read"))
                elif boundary is not None and not boundary.contains(p):
                    problems.append(WalkProblem(p, boundary.outside_reason(p) or "outside the project"))
                else:
                    add(p)
    return out


def _is_loop(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _is_venv(path: Path) -> bool:
    try:
        return (path / "pyvenv.cfg").is_file()
    except OSError:  # an unreadable folder is reported by the walk itself
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def resolve_in(
    doc: Document, raw: str, span: Span, role: str, cache: DocumentCache, bases: list[Path], key: str | None
) -> Reference:
    """`raw` as a Reference from `doc`, looked for in `bases` in order."""
    path, outside = resolve_reference(raw, doc.path, bases, cache.boundary)
    return Reference(Location(doc.path, span.line, span.col, key), raw, path, role, outside)


def _ref(
    doc: Document, raw: str, span: Span, role: str, cache: DocumentCache, key: str | None = None
) -> Reference:
    return resolve_in(doc, raw, span, role, cache, start_folders(doc.path), key)


def _workdir(command: Any, bases: list[Path], training_word: Any) -> Path | None:
    """The one folder of `bases` the command's relative paths resolve from: the first where its
    training script is (`python train.py` runs ./train.py), else where its config file is; None when
    neither names a relative file that is there."""
    script = command.script
    named = script.text if script is not None and not command.module and not command.subcommand else None
    if not named and training_word is not None:
        named = training_word.text
    if not named or os.path.isabs(named) or named.startswith("~") or named.startswith("$"):
        return None
    return next((b for b in bases if names_file(b / named)), None)


def config_run(name: str, doc: Document) -> RunSpec:
    """A run rooted at a config file that no launch names: the file in its kind's place."""
    run = RunSpec(name=name, root=doc)
    if doc.kind == "accelerate":
        run.accelerate = doc
    elif doc.kind == "deepspeed":
        run.deepspeed = doc
    else:
        run.training = doc
    return run


def discover(seeds: list[Path], cache: DocumentCache | None = None) -> tuple[list[RunSpec], list[Document]]:
    """Build the runs reachable from the seeds. Returns the runs and every document read.

    A config file given on its own (as pre-commit passes changed files) is checked as part of its
    run: launch scripts (and configs) of the project that name it are found and become roots too,
    and only the runs that contain a given file are kept.
    """
    cache = cache or DocumentCache()
    seeds = [s for s in seeds if not cache.files.skip_named(s)]
    # a hostfile is no config: it is read through the launch that names it (`deepspeed --hostfile`)
    hostfiles = [Document(s, "unknown") for s in seeds if _is_file(s) and reads_as(s) == "hostfile"]
    named_hosts = {resolved(d.path) for d in hostfiles}
    seeds = [s for s in seeds if resolved(s) not in named_hosts] if hostfiles else seeds
    walk_problems: list[WalkProblem] = []
    docs = [cache.get(p) for p in iter_files(seeds, cache.boundary, walk_problems, cache.files)]
    docs.extend(cache.refused(w.path, w.reason) for w in walk_problems)
    runs = _build_runs(docs, cache)
    orphans = _unreached_config_seeds(seeds, docs, runs) + hostfiles
    if not orphans:
        return runs, cache.all()
    referrers = find_referrers(orphans, {resolved(d.path) for d in docs}, cache)
    if not referrers:
        return runs, cache.all()
    own = {resolved(d.path) for d in docs}
    runs = [
        r
        for r in _build_runs(docs + referrers, cache)
        if resolved(r.root.path) in own
        or any(resolved(d.path) in own for d in (*r.documents, r.script) if d is not None)
        or (r.hostfile is not None and r.hostfile.found and resolved(r.hostfile.path) in named_hosts)
    ]
    # only the given files and the files of the runs they belong to: a config that a dropped run read
    # (a launch that named a file of the same base name elsewhere) is not reported
    keep = own | {resolved(d.path) for r in runs for d in (*r.documents, r.script) if d is not None}
    return runs, [d for d in cache.all() if resolved(d.path) in keep]


def _unreached_config_seeds(seeds: list[Path], docs: list[Document], runs: list[RunSpec]) -> list[Document]:
    """Config files named as seeds that no launch command among the seeds reaches."""
    files = {resolved(p) for p in seeds if _is_file(p)}
    if not files:
        return []
    reached = {resolved(d.path) for r in runs if r.command is not None for d in r.documents}
    return [
        d
        for d in docs
        if resolved(d.path) in files
        and resolved(d.path) not in reached
        and (
            (d.kind in RUN_KINDS | {"unknown"} and d.path.suffix.lower() in CONFIG_SUFFIXES - SHELL_SUFFIXES)
            or d.path.suffix.lower() in PY_SUFFIXES  # a training script: the launch scripts that run it
        )
    ]


def project_root(path: Path) -> Path | None:
    """The nearest folder at or above path with .git, pyproject.toml or .gpu-advise.toml."""
    here = resolved(path).parent if _is_file(path) else resolved(path)
    for folder in (here, *here.parents):
        if any(os.path.lexists(folder / m) for m in (".git", "pyproject.toml", ".gpu-advise.toml")):
            return folder
    return None


MAX_SCAN_DIRS = 5_000
MAX_SCAN_FILES = 20_000
MAX_SCAN_BYTES = 1024 * 1024


def _scan_files(
    root: Path, boundary: ProjectBoundary | None, files: FileFilter | None = None
) -> list[tuple[Path, bytes]]:
    """Config and launch files under root, with their bytes; bounded so that a project root that
    turns out to be a home folder stays cheap (hidden folders, environments and build output are
    skipped). Only regular files inside the boundary are read: a FIFO or a link out is passed by."""
    files = files or FileFilter()
    out: list[tuple[Path, bytes]] = []
    dirs = 0
    root_inside = boundary is None or boundary.contains(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirs += 1
        if dirs > MAX_SCAN_DIRS:
            break
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and not files.skip(os.path.join(dirpath, d), True)
            and not _is_venv(Path(dirpath, d))
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            bare = "." not in name.lstrip(".")  # `launch`, `run_job`: a launch script by its first lines
            # a README's code blocks may name the file too (advisor/sources/readme_launch.py)
            known = path.suffix.lower() in CONFIG_SUFFIXES or bare or project_markdown(path, root)
            if not known or files.skip(path, False):
                continue
            if len(out) >= MAX_SCAN_FILES:
                return out
            # the walk follows no folder link, so below a root inside the boundary only a file link can leave
            may_leave = not root_inside or os.path.islink(path)
            if boundary is not None and may_leave and not boundary.contains(path):
                continue
            if bare and reads_as(path) != "launch":
                continue
            try:
                out.append((path, read_bytes(path, MAX_SCAN_BYTES)))
            except ReadRefused:
                continue
    return out


def find_referrers(targets: list[Document], known: set[Path], cache: DocumentCache) -> list[Document]:
    """Launch scripts and configs of the targets' projects whose text names a target's file name
    (then, transitively, names one of those: ds.json <- train.yaml <- launch.sh). A cheap text
    filter first; a file that passes is read, and discovery decides whether it really references
    the target. Searched: the project root (.git, pyproject.toml or .gpu-advise.toml above the
    file), else the current folder when the file is below it, else the file's own folder."""
    cwd = resolved(Path.cwd())
    roots: dict[Path, list[Document]] = {}
    for doc in targets:
        path = resolved(doc.path)
        root = project_root(path)
        if root is None:
            root = cwd if path.is_relative_to(cwd) and cwd != Path(cwd.anchor) else path.parent
        roots.setdefault(root, []).append(doc)
    found: list[Document] = []
    seen = set(known)
    for root, docs in roots.items():
        files = _scan_files(root, cache.boundary, cache.files)
        names = {d.path.name.encode() for d in docs}
        for _ in range(3):  # ds.json <- train.yaml <- launch.sh, and one more level
            new: list[Document] = []
            for path, data in files:
                key = resolved(path)
                if key in seen or not any(name in data for name in names):
                    continue
                doc = cache.get(path)
                if doc.kind == "launch" or doc.kind in RUN_KINDS:
                    seen.add(key)
                    new.append(doc)
            if not new:
                break
            found.extend(new)
            names = {d.path.name.encode() for d in new if d.kind != "launch"}
            if not names:
                break
    return found


def _build_runs(docs: list[Document], cache: DocumentCache) -> list[RunSpec]:
    runs: list[RunSpec] = []
    reached: set[Path] = set()

    for doc in sorted(docs, key=documented):  # launch scripts first: a README only adds what they lack
        if doc.kind != "launch" or doc.data is None:
            continue
        commands = doc.data.commands
        for i, command in enumerate(commands):
            shown = relative(doc.path)
            name = shown if len(commands) == 1 else f"{shown}:{command.span.line}"
            readme = documented(doc)
            if readme:
                from advisor.plan import readme_runs  # only a project with a README command loads it

                name = readme_runs.documented_run_name(doc.path, command.span.line)
            run = RunSpec(name=name, root=doc, command=command, command_index=i)
            _attach_from_command(run, doc, command, cache)
            if readme and not readme_runs.keep_documented(run, runs):
                continue
            runs.append(run)
            reached.update(resolved(d.path) for d in run.documents)
    if any(documented(doc) for doc in docs):
        from advisor.plan import readme_runs

        readme_runs.prune_documented(docs, runs)

    for doc in docs:
        if doc.kind not in RUN_KINDS or resolved(doc.path) in reached:
            continue
        run = config_run(relative(doc.path), doc)
        _attach_nested(run, cache)
        runs.append(run)
        reached.update(resolved(d.path) for d in run.documents)

    # A DeepSpeed or accelerate file that a later run pulled in should not also stand alone.
    pulled = {resolved(d.path) for r in runs for d in r.documents if d is not r.root}
    return [r for r in runs if r.command is not None or resolved(r.root.path) not in pulled]


# Hydra's override grammar (hydra/core/override_parser: `key=value`, `+key=value`, `~key`, dotted keys): a
# command word of this form hands one value to the app's config, it is not a file the script parses
_OVERRIDE = LazyPattern(r"^[+~]{0,2}[A-Za-z_][\w.\-/@]*=")


def _attach_from_command(run: RunSpec, doc: Document, command: Any, cache: DocumentCache) -> None:
    training_word = command.script_args.get("config")
    if training_word is None:
        for word in command.positional:
            if word.text and Path(word.text).suffix.lower() in {".yaml", ".yml", ".json"}:
                if _OVERRIDE.match(word.text):
                    continue  # `a.b.tool_config_path=x.yaml`: a Hydra override (verl), not a config file
                training_word = word
                break
    # every relative path of the command is opened from the one folder the process runs in
    bases = command_bases(doc.path, getattr(command, "workdir", None), cache.boundary)
    run.workdir = _workdir(command, bases, training_word)
    if run.workdir is not None:
        bases = [run.workdir]
    else:
        run.cwd_unknown = _cwd_unknown(doc, command, training_word, bases, cache)

    def _ref(doc: Document, raw: str, span: Span, role: str, cache: DocumentCache) -> Reference:
        ref = resolve_in(doc, raw, span, role, cache, bases, None)
        ref.looked = _looked(bases)
        if ref.path is None and ref.outside is None:
            ref.written = _written_before(doc, command, raw, bases, cache.boundary)
            if ref.written is None and not os.path.isabs(os.path.expanduser(raw)):
                ref.unknown = run.cwd_unknown
        return ref

    args = command.launcher_args
    config = launchers.spec_of(command.launcher).accelerate_config_word(args)
    if config is not None and config.text:
        ref = _ref(doc, config.text, config.span, "accelerate", cache)
        run.references.append(ref)
        if ref.path:
            run.accelerate = cache.get(ref.path, "accelerate")

    if training_word is not None and training_word.text:
        ref = _ref(doc, training_word.text, training_word.span, "training_args", cache)
        run.references.append(ref)
        if ref.path:
            training = cache.get(ref.path)
            if training.kind in {"training_args", "axolotl", "unknown"}:
                run.training = training
    for word in config_flag_words(command) if training_word is None else ():
        ref = _ref(doc, word.text, word.span, "training_args", cache)
        if ref.path and (found := cache.get(ref.path)).kind in {"training_args", "axolotl"}:
            run.references.append(ref)
            run.training, training_word = found, word
            break

    ds_word = _deepspeed_word(command)
    if (
        ds_word is not None
        and ds_word.text
        and ds_word.text.lower() != "true"
        and not _preset(command, ds_word.text)
    ):
        ref = _ref(doc, ds_word.text, ds_word.span, "deepspeed", cache)
        run.references.append(ref)
        if ref.path:
            run.deepspeed = cache.get(ref.path, "deepspeed")

    hostfile_word = launchers.spec_of(command.launcher).hostfile_word(args)
    if hostfile_word is not None and hostfile_word.text:
        run.hostfile = _hostfile(run, doc, hostfile_word, cache, bases)

    # `llamafactory-cli train`, `trl sft`: the command word names no file
    subcommand = getattr(command, "subcommand", False)
    # a script word "-" is standard input (`torchrun ... - <<EOF`: the interpreter reads the program from it)
    stdin = command.script is not None and command.script.text == "-"
    if (
        command.script is not None
        and command.script.text
        and not command.module
        and not subcommand
        and not stdin
    ):
        ref = _ref(doc, command.script.text, command.script.span, "script", cache)
        run.references.append(ref)
        if ref.path and ref.path.suffix == ".py":
            run.script = cache.get(ref.path, "script")
            _note_unanalysed(doc, run.script, command.script.span)
    elif command.script is not None and command.script.text and command.module and not subcommand:
        module_ref = _module_ref(doc, command.script.text, command.script.span, cache)
        if module_ref is not None:  # an installed package (trl, swift.cli.sft) is named, not read
            run.references.append(module_ref)
            if module_ref.path is not None:
                run.script = cache.get(module_ref.path, "script")
                _note_unanalysed(doc, run.script, command.script.span)
    _link_config_to_script(run, training_word)
    _link_config_to_own_parser(run, command)
    _attach_nested(run, cache)


def _cwd_unknown(
    doc: Document, command: Any, training_word: Any, bases: list[Path], cache: DocumentCache
) -> str | None:
    """Why the folder `command` runs in is not known to be the project (advisor/plan/unknown_workdir.py)."""
    words: tuple[Any, ...] = (
        training_word,
        _deepspeed_word(command),
        launchers.spec_of(command.launcher).accelerate_config_word(command.launcher_args),
    )
    outside: tuple[str, int] | None = None
    for w in words:
        text = getattr(w, "text", None)
        if not isinstance(text, str) or not text or not os.path.isabs(os.path.expanduser(text)):
            continue
        if resolve_reference(text, doc.path, bases, cache.boundary)[1] is not None:
            outside = (text, int(w.span.line))
            break
    return launch_elsewhere(doc.path.name, getattr(command, "workdir", None), cache.boundary, outside)


def _written_before(
    doc: Document, command: Any, raw: str, bases: list[Path], boundary: ProjectBoundary | None
) -> str | None:
    """Where the launch script writes the file `raw` names before `command` runs (`cat <<EOF > cfg.yaml`
    then `accelerate launch train.py cfg.yaml`: advisor/sources/shell/interpreter.py `note_written`), as
    "launch.sh:4"; None when it does not. Both paths are compared from the folders their commands run in."""
    written = getattr(doc.data, "written", None) or []
    wanted = {os.path.normpath(b / os.path.expanduser(raw)) for b in bases}
    for w in written:
        if (w.span.line, w.span.col) >= (command.span.line, command.span.col):
            break
        places = command_bases(doc.path, w.workdir, boundary)
        if any(os.path.normpath(b / os.path.expanduser(w.path)) in wanted for b in places):
            return f"{doc.path.name}:{w.span.line}"
    return None


def _module_ref(doc: Document, dotted: str, span: Span, cache: DocumentCache) -> Reference | None:
    """`python -m pkg.mod`, `deepspeed --module pkg.mod`, `torchrun -m`, `accelerate launch -m`: the
    file of the project the module is, read as the run's script like a `train.py` path (OpenRLHF
    @cd7a434f examples/scripts/train_sft.sh: `deepspeed --module openrlhf.cli.train_sft`, its argparse
    parser in openrlhf/cli/train_sft.py). Python runs `pkg/mod.py`, or `pkg/mod/__main__.py` for a
    package (runpy._get_module_details, CPython 3.11 Lib/runpy.py:142-148). Looked for under the
    import roots of the project modules (the launch script's folder and its parents up to the project
    root); a link there pointing out of the boundary is named as outside; None for a module that is no
    file of the project (an installed package)."""
    parts = dotted.split(".")
    if parts[0] in LIBRARIES or not all(p.isidentifier() for p in parts):
        return None
    boundary = cache.boundary
    if boundary is not None:
        project_roots = boundary.roots
    else:
        root = project_root(doc.path)
        project_roots = (root,) if root is not None else ()
    for folder in import_roots(doc.path, project_roots):
        for candidate in module_files(folder, parts, "__main__.py"):
            try:
                if not os.path.lexists(candidate) or stat.S_ISDIR(os.stat(candidate).st_mode):
                    continue
            except (OSError, ValueError):
                continue
            where = Location(doc.path, span.line, span.col, None)
            if boundary is not None and not boundary.contains(candidate):
                return Reference(where, dotted, None, "script", boundary.outside_reason(candidate))
            return Reference(where, dotted, candidate, "script")
    return None


def _hostfile(run: RunSpec, doc: Document, word: Any, cache: DocumentCache, bases: list[Path]) -> Any:
    """`deepspeed --hostfile FILE`, read inside the project; a file outside it is GA006's, and a file
    that is not there is DeepSpeed's warning, not an error: it proceeds with local resources only
    (deepspeed 0.16.4 launcher/runner.py:213-217)."""
    from advisor.sources.hostfile import Hostfile, read_hostfile

    ref = resolve_in(doc, word.text, word.span, "hostfile", cache, bases, None)
    if ref.outside is not None:
        run.references.append(ref)
        return Hostfile(path=Path(word.text), problem=ref.outside)
    if ref.path is None:
        return Hostfile(path=Path(word.text), found=False, problem="not found")
    return read_hostfile(ref.path)


def _is_switch(word: Any) -> bool:
    """A flag written without a value (`--deepspeed --deepspeed_config ds.json`): the shell reader
    gives it the text "true" and keeps the flag itself as the raw word."""
    return word is not None and word.text == "true" and word.raw.startswith("-")


def _deepspeed_word(command: Any) -> Any:
    """The word naming the run's DeepSpeed config. `--deepspeed FILE` is HF TrainingArguments' (and
    trl's `deepspeed_config_file` its accelerate flag); a bare `--deepspeed` is DeepSpeed's own
    on/off switch, and the file is then `--deepspeed_config` (or the older `--deepscale_config`):
    deepspeed/__init__.py add_config_arguments (0.16.4 lines 248-262: `--deepspeed` store_true,
    `--deepspeed_config` str, `--deepscale` store_true, `--deepscale_config` str). The deepspeed
    launcher's scripts use that parser even when they do not write `--deepspeed`."""
    script_args = command.script_args
    word = script_args.get("deepspeed") or command.launcher_args.get("deepspeed_config_file")
    bare = _is_switch(word) or (word is None and _is_switch(script_args.get("deepscale")))
    if word is not None and not bare:
        return word
    if bare or launchers.spec_of(command.launcher).starts_deepspeed:
        named = script_args.get("deepspeed_config") or script_args.get("deepscale_config")
        if named is not None and not _is_switch(named):
            return named
    return word


def _preset(command: Any, text: str | None) -> bool:
    """`swift sft --deepspeed zero2`: a config ms-swift ships and picks by name, not a project file."""
    if command is None or not text:
        return False
    owner = launchers.command_owner(command)
    return owner is not None and text in owner.deepspeed_presets


def _owner_preset(training: Document, text: str) -> bool:
    """`deepspeed: zero2` in a config written for a launcher's own parser (launchers.config_owner: ms-swift's
    keys), read alone: a DeepSpeed config that launcher ships, not a project file."""
    owner = launchers.config_owner(training.data)
    return owner is not None and text in owner.deepspeed_presets


def _note_unanalysed(doc: Document, script: Document, span: Span) -> None:
    """A training script too large to analyse is a warning where the launch names it (GA001): its
    parser, model loads and rank guards are then unknown, and the check says so instead of going quiet."""
    from advisor.sources.python_source import too_large

    reason = too_large(script.text or "")
    if reason is None:
        return
    message = (
        f"the training script {script.path.name} is {reason}; its parser, model loads and rank guards "
        "are not checked"
    )
    problem = SourceProblem("refused-path", message, span, severity="warning")
    if problem not in doc.problems:
        doc.problems.append(problem)


def _link_config_to_script(run: RunSpec, training_word: Any) -> None:
    """Tell the run's TrainingArguments file which script reads it, and how (``train.py cfg.yaml`` or
    ``--config cfg.yaml``): its keys are then judged against that script's own dataclasses."""
    if run.training is None or run.script is None or training_word is None:
        return
    how = "config" if run.command.script_args.get("config") is training_word else "positional"
    link = (run.script.path, how)
    if link not in run.training.consumers:
        run.training.consumers.append(link)


def _link_config_to_own_parser(run: RunSpec, command: Any) -> None:
    """Tell the run's training file that a launcher's own parser reads it (`swift sft cfg.yaml`): its keys
    are that parser's, which no TrainingArguments / TRL table judges."""
    if run.training is None:
        return
    owner = launchers.command_owner(command)
    if owner is not None and owner.own_defaults and owner.name not in run.training.read_by:
        run.training.read_by.append(owner.name)


def _attach_nested(run: RunSpec, cache: DocumentCache) -> None:
    """accelerate -> its DeepSpeed file; TrainingArguments -> its DeepSpeed file."""
    for holder, path in (
        (run.training, ("deepspeed",)),
        (run.accelerate, ("deepspeed_config", "deepspeed_config_file")),
    ):
        if holder is None or not holder.ok or (run.deepspeed is not None and holder is run.accelerate):
            continue
        raw = holder.get(path)
        if not isinstance(raw, str) or not raw.strip() or _preset(run.command, raw):
            continue
        if holder is run.training and _owner_preset(holder, raw):
            continue
        span, key = holder.span(path, value=True), "/" + "/".join(path)
        if run.workdir is not None and holder is run.training:
            # HfDeepSpeedConfig opens the string as given, relative to the process's working folder and
            # not to the YAML: transformers 5.24.0 integrations/deepspeed.py:53,60 subclasses accelerate's,
            # whose __init__ (accelerate 1.15.0 utils/deepspeed.py:141-142) does
            # `elif os.path.exists(config_file_or_dict): with open(config_file_or_dict) as f`
            ref = resolve_in(holder, raw, span, "deepspeed", cache, [run.workdir], key)
            ref.looked = _looked([run.workdir])
        else:
            ref = _ref(holder, raw, span, "deepspeed", cache, key)
            if ref.path is None and ref.outside is None and not os.path.isabs(os.path.expanduser(raw)):
                alone = run.command is None and holder is run.training
                ref.unknown = run.cwd_unknown or (
                    installed_tool_config(holder.kind, holder.dialect) if alone else None
                )
        run.references.append(ref)
        if ref.path and run.deepspeed is None:
            run.deepspeed = cache.get(ref.path, "deepspeed")


def _looked(bases: list[Path]) -> str:
    """Where a reference was looked for, in words for GA004."""
    if len(bases) == 1:
        return f"in {relative(bases[0])}/, the folder the launch runs in"
    return "in the folders the launch may run in: the script's own and its parents up to the project root"
