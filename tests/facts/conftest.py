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
