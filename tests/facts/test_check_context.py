"""One check context (advisor.plan.context), built once per check and carried on each plan.

The boundary was computed at every call site, the settings near a file looked up by facts and plan alike,
and pins and scripts read through module-level caches keyed by path (a long-lived process saw stale pins
until someone called `versions.clear_caches()`). Here: a check computes its boundary once, facts read
what the context holds (so they can be tested without files), and a second check reads the files again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.facts import versions
from advisor.pipeline.check import CheckOptions, run_check
from advisor.plan.context import CheckContext
from advisor.sources.boundary import ProjectBoundary
from advisor.sources.pins import Pin

ROOT = Path(__file__).resolve().parents[2]


def test_targets_come_from_the_context_without_a_file_system() -> None:
    # the converted unit test: the pins a folder sees are given to the context, nothing is read
    folder = Path("/nowhere/project")
    pin = Pin("transformers", "==4.45.2", folder / "requirements.txt", 3)
    context = CheckContext.preset(ProjectBoundary((folder,)), pins={folder: {"transformers": pin}})
    targets = versions.targets_for(folder / "args.yaml", None, context)
    assert targets["transformers"].release.startswith("4.45.")
    assert targets["transformers"].why == "pinned ==4.45.2 in requirements.txt:3"
    assert targets["transformers"].pinned
    # nothing pinned in another folder of the same context: the current release
    other = versions.targets_for(
        Path("/nowhere/other/args.yaml"), None, CheckContext.preset(ProjectBoundary(()))
    )
    assert not other["transformers"].pinned


def test_script_parser_reads_the_scripts_text_from_the_context() -> None:
    from advisor.facts.script_flags import _analysed

    script = Path("/nowhere/project/train.py")
    text = (
        "from dataclasses import dataclass, field\nfrom transformers import HfArgumentParser\n\n"
        "@dataclass\nclass Args:\n    lr: float = field(default=1e-4)\n\n"
        "parser = HfArgumentParser((Args,))\n(args,) = parser.parse_args_into_dataclasses()\n"
    )
    context = CheckContext.preset(ProjectBoundary((script.parent,)), texts={script: text})
    parsing = _analysed(script, context)
    assert not isinstance(parsing, str) and parsing is not None
    assert "lr" in parsing.fields


def test_one_check_computes_the_project_boundary_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.sources.boundary

    calls: list[tuple[Path, ...]] = []
    real = advisor.sources.boundary.project_boundary

    def counting(settings, seeds):  # type: ignore[no-untyped-def]
        calls.append(tuple(seeds))
        return real(settings, seeds)

    monkeypatch.setattr(advisor.sources.boundary, "project_boundary", counting)
    monkeypatch.chdir(ROOT)
    result = run_check([Path("fixtures/example")], CheckOptions())
    assert result.runs and result.context is not None
    assert all(plan.context is result.context for plan in result.plans)
    # the check's seeds once, and each run's root file once (its own settings may allow other roots)
    assert len(calls) == len(set(calls))
    assert calls[0] == (Path("fixtures/example"),)


def test_a_second_check_in_one_process_reads_the_pins_again(tmp_path: Path) -> None:
    # the CLI in one process, twice (as a language server or a watch loop would): no cache to clear
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("accelerate==0.34.2\n")
    acc = (
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
        "mixed_precision: bf16\nparallelism_config:\n  parallelism_config_dp_shard_size: 2\n"
    )
    (tmp_path / "acc.yaml").write_text(acc)
    program = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from advisor.cli import app\n"
        "from pathlib import Path\n"
        "r = CliRunner()\n"
        "first = r.invoke(app, ['check', '--format', 'json', 'acc.yaml'])\n"
        "Path('requirements.txt').unlink()\n"
        "second = r.invoke(app, ['check', '--format', 'json', 'acc.yaml'])\n"
        "codes = lambda out: sorted({f['rule'] for f in json.loads(out)['findings']})\n"
        "print(json.dumps([codes(first.stdout), codes(second.stdout)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    import json

    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert "GA002" in first  # parallelism_config is unknown to the pinned accelerate 0.34
    assert "GA002" not in second  # the pin is gone: judged against the current release
