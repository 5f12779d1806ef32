"""Build the fact namespaces of a small project written into a temporary folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.facts import run_names
from advisor.pipeline.check import CheckOptions, build_plans
from advisor.sources.settings import Settings
from tests.conftest import write_files

Names = dict[str, Any]


@pytest.fixture
def facts_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Names]:
    """facts_of(files, hardware=None) -> the namespaces of the project's only run."""

    def build(files: dict[str, str], hardware: str | None = None, run: str | None = None) -> Names:
        write_files(tmp_path, files)
        monkeypatch.chdir(tmp_path)
        plans, _ = build_plans([Path(".")], CheckOptions(hardware=hardware), Settings())
        if run is not None:
            plans = [p for p in plans if p.name == run]
        assert len(plans) == 1, [p.name for p in plans]
        names = run_names(plans[0])
        names["plan"] = plans[0]
        return names

    return build


PROJECT = Path("/nowhere/project")  # no such folder: nothing below is read from the file system


@pytest.fixture
def document_facts_of() -> Callable[..., Any]:
    """document_facts_of(name, text, pins=None) -> the `document` namespace of one file held in memory:
    read through the same parsers as a file on disk (advisor.sources.read.read_document, its bytes from
    the read overlay), judged with a preset check context (the pins a folder sees are given, no settings
    file), so the test needs no file system."""
    from advisor.facts.document import document_facts
    from advisor.plan.context import CheckContext
    from advisor.sources.boundary import ProjectBoundary
    from advisor.sources.read import overlay, read_document

    def build(name: str, text: str, pins: dict[str, Any] | None = None) -> Any:
        path = PROJECT / name
        context = CheckContext.preset(
            ProjectBoundary((PROJECT,)), settings={path.parent: None}, pins={path.parent: dict(pins or {})}
        )
        with overlay({path: text.encode()}):
            doc = read_document(path)
        return document_facts(doc, context)

    return build


@pytest.fixture
def run_facts_of() -> Callable[..., Names]:
    """run_facts_of(files, hardware=None, run=None) -> the namespaces of the run of `files` (`run`: its
    expected name), built in memory: each file read through the same readers as on disk (read_document
    over the read overlay), the run's files put together by name, the plan merged by
    advisor.plan.run_plan.build_plan with a preset check context (no settings file, no pins, the scripts'
    texts given, and the project's files as the walk for lone files would list them), so the test needs no
    file system.

    Putting the run together is discovery's job (advisor.plan.discover), not done here: the root is the
    one launch script (else the one config), and a file joins the run only when the command (or the
    training file, or the accelerate config) names it by exactly its name in `files`: the case where
    discovery finds it beside the launch script. A test about finding files (folders, a missing or
    outside file, several runs) builds its project on disk with facts_of;
    tests/facts/test_in_memory_runs.py checks the two give the same facts."""
    from advisor.facts import run_names
    from advisor.facts.script_readers import SCRIPT_READERS
    from advisor.plan.context import CheckContext
    from advisor.plan.discover import RUN_KINDS, RunSpec, _deepspeed_word, config_run
    from advisor.plan.run_plan import build_plan
    from advisor.sources import launchers
    from advisor.sources.boundary import ProjectBoundary
    from advisor.sources.hardware import load_hardware
    from advisor.sources.read import PY_SUFFIXES, overlay, read_document

    def build(
        files: dict[str, str],
        hardware: str | None = None,
        run: str | None = None,
    ) -> Names:
        paths = {name: PROJECT / name for name in files}
        scripts = {p: files[n] for n, p in paths.items() if p.suffix in PY_SUFFIXES}
        folders = {p.parent for p in paths.values()}
        context = CheckContext.preset(
            ProjectBoundary((PROJECT,)),
            cwd=PROJECT,
            settings={f: None for f in folders},
            pins={f: {} for f in folders},
            texts={p: files[n] for n, p in paths.items()},
            listings=_listings(paths.values()),
        )
        with overlay({paths[n]: text.encode() for n, text in files.items()}):
            docs = {n: read_document(p, "script" if p in scripts else None) for n, p in paths.items()}

            def named(word: Any, hint: str | None = None) -> Any:
                text = getattr(word, "text", word)
                if not isinstance(text, str) or text not in paths:
                    return None
                return read_document(paths[text], hint) if hint else docs[text]

            launches = [d for d in docs.values() if d.kind == "launch"]
            if launches:
                assert len(launches) == 1 and len(launches[0].data.commands) == 1, "one run: one command"
                root, command = launches[0], launches[0].data.commands[0]
                spec = RunSpec(name=root.path.relative_to(PROJECT).as_posix(), root=root, command=command)
                spec_of = launchers.spec_of(command.launcher)
                spec.accelerate = named(spec_of.accelerate_config_word(command.launcher_args), "accelerate")
                training_word = command.script_args.get("config") or next(
                    (w for w in command.positional if str(w.text).endswith((".yaml", ".yml", ".json"))), None
                )
                training = named(training_word)
                if training is not None and training.kind in {"training_args", "axolotl", "unknown"}:
                    spec.training = training
                spec.deepspeed = named(_deepspeed_word(command), "deepspeed")
                if command.script is not None and not command.module and not command.subcommand:
                    spec.script = named(command.script, "script")
                if spec.training is not None and spec.script is not None and training_word is not None:
                    how = "config" if command.script_args.get("config") is training_word else "positional"
                    spec.training.consumers.append((spec.script.path, how))
            else:
                configs = [d for d in docs.values() if d.kind in RUN_KINDS]
                if run is not None:  # several configs, each its own run: the one asked for
                    configs = [d for d in configs if d.path == PROJECT / run]
                assert len(configs) == 1, "one run: one config"
                root = configs[0]
                spec = config_run(root.path.relative_to(PROJECT).as_posix(), root)
            for holder, key in ((spec.training, "deepspeed"), (spec.accelerate, "deepspeed_config_file")):
                if spec.deepspeed is None and holder is not None and isinstance(holder.data, dict):
                    found = (
                        holder.data.get(key) if key == "deepspeed" else holder.get(("deepspeed_config", key))
                    )
                    spec.deepspeed = named(found, "deepspeed")
            assert run is None or run == spec.name, (run, spec.name)
            machine = load_hardware(hardware) if hardware else None
            plan = build_plan(spec, hardware=machine, settings=None, context=context, readers=SCRIPT_READERS)
        plan.project = Settings()
        names = run_names(plan)  # outside the overlay: a fact that opened a file would find none
        names["plan"] = plan
        return names

    return build


def _listings(paths: Any) -> dict[tuple[Path, tuple[str, ...]], list[Path]]:
    """The project listings the facts ask the context for (CheckContext.project_files), in the walk's order
    (advisor.sources.project_walk: a folder's files, then its sub-folders, each sorted)."""
    ordered = sorted(paths, key=lambda p: (p.parent.relative_to(PROJECT).parts, p.name))
    out: dict[tuple[Path, tuple[str, ...]], list[Path]] = {}
    for suffixes in ((".py",), (".yaml", ".yml", ".json")):
        out[(PROJECT, suffixes)] = [p for p in ordered if p.name.endswith(suffixes)]
    return out
