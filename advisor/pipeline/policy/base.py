"""The base revision's policy for `check --base REV`, and what the change under check relaxes.

A pull request from a fork writes every file the gate reads, its settings, rule folders, inline
directives and baseline included. With `--base REV` the gate reads those from REV as well (the tree
advisor/plan/revision.py materialises): every relaxation the change makes is a finding of its own (GA801
settings, GA802 rule files, GA803 inline suppressions, GA804 baseline entries, GA805 recorded
measurements), which only the base's `ignore` and `severity` (or `--ignore`) can silence; and with
`--policy-from-base` the base's settings, rule folders, baseline, recorded measurements and inline
directives govern the check, the pull request's are not used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from advisor.core.document import Location
from advisor.core.errors import CheckError
from advisor.core.findings import Finding
from advisor.core.records import replace
from advisor.engine.rule_engine import Context, Engine, load_catalog
from advisor.engine.selectors import matches_any
from advisor.sources.settings import SETTINGS_FILES, Settings, SettingsError, parse_settings

from . import settings_diff
from .baseline_diff import added_entries
from .directives import DirectiveDiff
from .facts import policy_facts
from .measurements_diff import added_measurements
from .rule_files import compare_folder, folder_codes
from .toml_lines import locate


def _inside(path: Path, root: Path) -> Path | None:
    """path relative to root, or None when it lies outside."""
    try:
        return path.resolve().relative_to(root)
    except (ValueError, OSError):
        return None


def base_settings(start: Path, base_root: Path, rev: str) -> Settings:
    """The settings the check finds from `start` in the base tree: the closest settings file at or above
    it, no higher than the tree's root (the temporary folder's parents are not the project)."""
    from advisor.sources.read import ReadRefused, read_text_file

    here = start
    while not here.is_dir() and here != base_root:
        here = here.parent
    for folder in (here, *here.parents):
        if _inside(folder, base_root) is None:
            break
        for name in SETTINGS_FILES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            try:
                return parse_settings(read_text_file(candidate), candidate)
            except LookupError:
                continue
            except ReadRefused as exc:
                raise CheckError(f"{name} at {rev}: {exc.reason}") from None
            except SettingsError as exc:
                raise CheckError(f"at {rev}: {str(exc).replace(str(base_root), '.')}") from None
    return Settings()


class BasePolicy:
    """The base tree of one check, its settings, and the pull request's settings to compare them with."""

    def __init__(self, paths: list[Path], options: Any, resolve_settings: Callable[..., Settings]) -> None:
        """`resolve_settings(paths, options)`: the settings the check finds (advisor.pipeline.check's)."""
        from advisor.plan.revision import RevisionError, materialise

        self.rev: str = options.base
        self.from_base: bool = bool(options.policy_from_base)
        self.cwd = Path.cwd().resolve()
        try:
            self.root, self.base_root, self._tmp = materialise(self.rev, self.cwd)
        except RevisionError as exc:
            raise CheckError(str(exc)) from None
        self.root = self.root.resolve()
        start = (self.cwd / paths[0]) if paths else self.cwd
        rel = _inside(start, self.root)
        if rel is None:
            self.close()
            raise CheckError(f"--base: {start} is not inside the git repository {self.root}")
        try:
            self.base = base_settings(self.base_root / rel, self.base_root, self.rev)
            self.pr: Settings | None = resolve_settings(paths, options)
        except SettingsError:
            if not self.from_base:  # the check reports it; under --policy-from-base it is not read
                self.close()
                raise
            self.pr = None
        except CheckError:
            self.close()
            raise
        self.directives: DirectiveDiff | None = None
        self._paths = list(paths)

    # the temporary tree lives as long as the check
    def __enter__(self) -> BasePolicy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._tmp.cleanup()

    # paths between the two trees
    def to_checkout(self, path: Path) -> Path:
        rel = _inside(path, self.base_root.resolve())
        return self.root / rel if rel is not None else path

    def to_base(self, path: Path) -> Path | None:
        rel = _inside(path, self.root)
        return self.base_root / rel if rel is not None else None

    @property
    def base_folder(self) -> Path:
        """The checkout folder that stands for the base settings file's folder."""
        return self.to_checkout(self.base.source.parent) if self.base.source else self.cwd

    def _in_base(self, value: str) -> Path | None:
        """A path of the base's settings, in the base tree (None: it lies outside the repository)."""
        checkout = settings_diff.folder(value, self.base_folder)
        return self.to_base(checkout)

    def _cli_path(self, path: Path, what: str) -> Path:
        """--rules/--baseline inside the repository: the base's copy (the base's policy governs)."""
        absolute = Path(os.path.normpath(self.cwd / path))
        base = self.to_base(absolute)
        if base is None:
            return path
        if not base.exists():
            raise CheckError(
                f"{what} {path}: not in the base revision {self.rev} (--policy-from-base reads it there)"
            )
        return base

    def governing(self, options: Any) -> Any:
        """The options the check runs with: unchanged, or under --policy-from-base the base's settings
        (paths in them still relative to their folder in the checkout), rule folders and baseline."""
        if not self.from_base:
            return options
        base = self.base
        source = self.to_checkout(base.source) if base.source else None
        rules_dirs: list[Path] = []
        outside_rules = []
        for value in base.extend_rules:
            in_base = self._in_base(value)
            if in_base is None:
                outside_rules.append(value)  # outside the repository: checked against the boundary as ever
            elif in_base.is_dir():
                rules_dirs.append(in_base)
            else:
                raise CheckError(f"extend-rules: '{value}' is not a folder at {self.rev}")
        rules_dirs += [self._cli_path(d, "--rules") for d in options.rules_dirs]
        baseline = options.baseline
        kept_baseline = None
        if baseline is not None:
            baseline = self._cli_path(baseline, "--baseline")
        elif base.baseline is not None:
            in_base = self._in_base(base.baseline)
            if in_base is None:
                kept_baseline = base.baseline
            else:
                baseline = in_base
        settings = replace(base, source=source, extend_rules=outside_rules, baseline=kept_baseline)
        measured = self.base_measurements(options)
        return replace(
            options,
            settings=settings,
            rules_dirs=rules_dirs,
            baseline=baseline,
            measured=measured,
            find_measured=False,
            policy=self,
        )

    def restore(
        self, findings: list[Finding], suppressed: list[Any], documents: list[Any], catalog: list[Any]
    ) -> tuple[list[Finding], list[Any]]:
        """--policy-from-base: a finding that only directives new in the change suppress is reported."""
        diff = self._directives(documents, [*findings, *(s.finding for s in suppressed)])
        aliases = {r.code: tuple(r.spec.aliases) for r in catalog}
        return diff.restore(findings, suppressed, aliases)

    def _directives(self, documents: list[Any], findings: list[Finding]) -> DirectiveDiff:
        if self.directives is None:
            self.directives = DirectiveDiff(documents, findings, self.to_base)
        return self.directives

    def report(self, result: Any, options: Any) -> None:
        """Add the relaxation findings (GA801-GA805) to the result."""
        names = {"policy": self._facts(result, options)}
        off = [*options.ignore, *self.base.ignore]  # the pull request's own settings do not apply
        rules = [
            r
            for r in load_catalog()
            if r.spec.scope == "policy" and not matches_any(off, r.spec.code, r.spec.name, r.spec.aliases)
        ]
        if not rules:
            return
        engine = Engine(rules, self.base.severity)
        found = list(engine.evaluate("policy", [Context(names, Location(self.cwd, 1, 1))]))
        if engine.errors:
            raise CheckError("; ".join(engine.errors))
        result.findings = sorted([*result.findings, *found], key=lambda f: f.sort_key)

    def _facts(self, result: Any, options: Any) -> Any:
        pr = self.pr
        catalog = list(result.rules)
        settings_items: list[dict[str, Any]] = []
        rule_items: list[dict[str, Any]] = []
        if pr is not None:
            at = self._locator(pr)
            base, pr_root = self.base, pr.root
            settings_items += self._per_file(base, pr, catalog, at)
            settings_items += settings_diff.fail_on(base, pr, at)
            settings_items += settings_diff.excludes(base, pr, at)
            settings_items += settings_diff.roots_and_files(base, self.base_folder, pr, pr_root, at)

            def rules_of(value: str) -> str:
                in_base = self._in_base(value)
                return folder_codes(in_base) if in_base is not None else "its rules"

            settings_items += settings_diff.dropped_folders(base, self.base_folder, pr, pr_root, rules_of, at)
            settings_items += settings_diff.thresholds(base, pr, at)
            for sub_base, sub_pr in self._folder_settings(result.documents, pr):
                settings_items += self._per_file(sub_base, sub_pr, catalog, self._locator(sub_pr))
        for value in self.base.extend_rules:
            in_base = self._in_base(value)
            if in_base is not None:
                rule_items += compare_folder(in_base, self.to_checkout(in_base), value)
        for d in options.rules_dirs:
            absolute = Path(os.path.normpath(self.cwd / d))
            in_base = self.to_base(absolute)
            if in_base is not None:
                rule_items += compare_folder(in_base, absolute, str(d))
        suppressions: list[dict[str, Any]] = []
        if options.inline_ignores:
            findings = [*result.findings, *(s.finding for s in result.suppressed)]
            suppressions = self._directives(list(result.documents), findings).items()
        lists = (settings_items, rule_items, suppressions, self._baseline(options), self._measured(options))
        for item in (item for items in lists for item in items):
            item["location"] = self._shown(item["location"])
        return policy_facts(f"git {self.rev}", *lists)

    def _shown(self, location: Location) -> Location:
        """A location under the current folder as a relative path, as the check's own documents are."""
        rel = _inside(location.file, self.cwd) if location.file.is_absolute() else None
        return replace(location, file=rel) if rel is not None else location

    @staticmethod
    def _per_file(base: Settings, pr: Settings, catalog: list[Any], at: settings_diff.Locate) -> list[Any]:
        """What settings decide file by file: the rules that run, their severity, the ignores."""
        return [
            *settings_diff.selection(base, pr, catalog, at),
            *settings_diff.severity(base, pr, catalog, at),
            *settings_diff.file_ignores(base, pr, catalog, at),
        ]

    def _folder_settings(self, documents: list[Any], top: Settings) -> list[tuple[Settings, Settings]]:
        """Settings files of sub-folders that govern checked files (a folder's closest settings file), each
        with the settings the same folder has at the base."""
        from advisor.sources.settings import find_settings

        pairs: dict[tuple[str, str], tuple[Settings, Settings]] = {}
        for folder in sorted({Path(d.path).resolve().parent for d in documents}):
            in_base = self.to_base(folder)
            if in_base is None:
                continue
            try:
                pr = find_settings(folder)
                base = base_settings(in_base, self.base_root, self.rev)
            except (SettingsError, CheckError):
                continue  # the check itself reports a broken settings file
            if pr.source is None or pr.source == top.source:
                continue
            pairs.setdefault((str(pr.source), str(base.source)), (base, pr))
        return list(pairs.values())

    def _baseline(self, options: Any) -> list[dict[str, Any]]:
        pr_file: Path | None = None
        base_file: Path | None = None
        if options.baseline is not None:
            pr_file = Path(os.path.normpath(self.cwd / options.baseline))
            base_file = self.to_base(pr_file)
        else:
            if self.pr is not None and self.pr.baseline is not None:
                pr_file = settings_diff.folder(self.pr.baseline, self.pr.root)
            if self.base.baseline is not None:
                base_file = self._in_base(self.base.baseline)
        return added_entries(pr_file, base_file)

    def _recorded_file(self, options: Any) -> Path | None:
        """The recorded measurements the pull request's check reads (advisor.pipeline.check._recorded)."""
        from advisor.pipeline.probe import RECORDED_FILE, recorded_measurements

        if options.measured is not None:
            return Path(os.path.normpath(self.cwd / options.measured))
        found = recorded_measurements(self.pr, self._paths)
        if found is None and self.pr is not None and self.pr.source is not None:
            found = self.pr.source.parent / RECORDED_FILE
        return Path(os.path.normpath(self.cwd / found)) if found is not None else None

    def _measured(self, options: Any) -> list[dict[str, Any]]:
        pr_file = self._recorded_file(options)
        return added_measurements(pr_file, self.to_base(pr_file) if pr_file is not None else None)

    def base_measurements(self, options: Any) -> Path | None:
        """--policy-from-base: the base's copy of the recorded measurements, or None: the pull request's
        file is not read (the check then reads no recorded measurements)."""
        pr_file = self._recorded_file(options)
        in_base = self.to_base(pr_file) if pr_file is not None else None
        return in_base if in_base is not None and in_base.is_file() else None

    def _locator(self, pr: Settings) -> settings_diff.Locate:
        """Where a setting is written in the pull request's settings file (its top when not written)."""
        from advisor.sources.read import ReadRefused, read_text_file

        source = pr.source
        if source is None:  # the change removed the settings: point at the base's file
            gone = self.to_checkout(self.base.source) if self.base.source else self.cwd / SETTINGS_FILES[0]
            return lambda path, value: Location(gone, 1, 1)
        try:
            text = read_text_file(source)
        except (ReadRefused, OSError):
            text = ""
        prefix = ("tool", "gpu-advise") if source.name == "pyproject.toml" else ()

        def at(path: tuple[str, ...], value: str | None) -> Location:
            line, col = locate(text, prefix, path, value)
            return Location(source, line, col)

        return at
