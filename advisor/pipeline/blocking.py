"""Which findings block under `check --fail-only-on-changed` (the `gpu-advise` pre-commit hook's).

pre-commit passes the staged files; the hook finds the runs they belong to and checks each run whole,
so it also reports what was already there in files the commit did not touch. With the option, the
paths on the command line are the changed files (a folder: every file under it), and a finding
*blocks* (counts for the exit code) when it is located in, or caused by, a changed file:

- its own file is changed, or the file of one of its related locations (the losing value of a
  conflict, the other side of a comparison);
- it is a finding of a run (run-scoped rules such as GA101, the probe's) and one of the files the run
  is made of is changed: the launch script or config it starts from, its training arguments,
  accelerate and DeepSpeed configs, the training script, the hostfile, every file these name, and
  every file one of the run's values was read from (a dataclass default in a project module).

The settings file whose `[[runs]]` entry declares the run (its effective batch, hardware, model) is
one of its files too. A document-level finding (GA001-GA008: unknown, removed or deprecated keys, YAML
1.1 scalars) is caused by its own file only. The project's other settings (select, ignore, severity),
its pins and its hardware descriptors are no file of a run: a commit that only bumps a pin shows the
findings it brings in untouched files without blocking on them (`pre-commit run --all-files`, which
passes every file, and CI judge them all). The other findings are shown, labelled NOT_BLOCKING, and
never fail the command.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.core.findings import Finding
from advisor.core.paths import resolved
from advisor.core.records import record

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

NOT_BLOCKING = "(not in the changed files: not blocking)"


@record(frozen=True, slots=True)
class ChangedFiles:
    """The changed files and folders, resolved."""

    files: frozenset[Path]
    folders: tuple[Path, ...]

    @classmethod
    def from_paths(cls, paths: Iterable[Path]) -> ChangedFiles:
        files: set[Path] = set()
        folders: list[Path] = []
        for path in paths:
            target = resolved(path)
            if _is_dir(target):
                folders.append(target)
            else:
                files.add(target)
        return cls(frozenset(files), tuple(folders))

    def contains(self, path: Path | None) -> bool:
        if path is None:
            return False
        target = resolved(path)
        return target in self.files or any(target.is_relative_to(f) for f in self.folders)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def run_files(plan: RunPlan, top: Any = None) -> set[Path]:
    """The files a run is made of: its documents, script, hostfile, what they name, where its values
    were read from, and the settings file whose `[[runs]]` entry declares it (`top`: the check's own
    settings, where a run may be declared when its folder's settings do not)."""
    spec = plan.spec
    found: list[Path | None] = [doc.path for doc in spec.documents]
    if plan.settings is not None:
        own = plan.project
        declared_in = own if own is not None and own.run_for(spec.root.path) is not None else top
        found.append(getattr(declared_in, "source", None))
    found.append(spec.script.path if spec.script is not None else None)
    found.append(getattr(spec.hostfile, "path", None) if getattr(spec.hostfile, "found", False) else None)
    found.extend(ref.path for ref in spec.references)
    for namespace in plan.namespaces().values():
        for _, value in namespace.flat():
            found.append(value.origin.file if value.origin is not None else None)
            found.extend(loc.file for loc in value.related)
    return {Path(p) for p in found if p is not None}


def blocks(finding: Finding, changed: ChangedFiles, runs: dict[str, set[Path]]) -> bool:
    """Whether `finding` is located in, or caused by, a changed file (the module's definition)."""
    if changed.contains(finding.location.file) or any(changed.contains(loc.file) for loc in finding.related):
        return True
    if finding.run is None:
        return False
    return any(changed.contains(path) for path in runs.get(finding.run, ()))


def split_blocking(result: Any, paths: list[Path]) -> list[Finding]:
    """The findings of `result` that block when `paths` are the changed files; the others get the
    NOT_BLOCKING label on their message (every output format shows it)."""
    changed = ChangedFiles.from_paths(paths or [Path.cwd()])
    runs: dict[str, set[Path]] = {}
    for plan in getattr(result, "plans", []):
        runs.setdefault(plan.name, set()).update(run_files(plan, getattr(result, "settings", None)))
    blocking = []
    for finding in result.findings:
        if blocks(finding, changed, runs):
            blocking.append(finding)
        elif not finding.message.endswith(NOT_BLOCKING):
            finding.message = f"{finding.message} {NOT_BLOCKING}"
    return blocking


def not_blocking_note(shown: int, blocking: int) -> str | None:
    """The line under the report that says how many findings do not block, or None when all do."""
    left = shown - blocking
    if left <= 0:
        return None
    them = "it does" if left == 1 else "they do"
    return (
        f"{left} of {shown} finding{'s' if shown != 1 else ''} not in the changed files: shown, but {them} "
        "not fail the check (--fail-only-on-changed)"
    )
