"""The fact catalogue: builders set only declared facts, rules read only declared ones, docs are current."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.provenance import UndeclaredFact, Value
from advisor.facts import declare, stage_namespaces
from advisor.facts.batch import BatchFacts
from advisor.facts.catalogue import NAMESPACES, by_name
from advisor.facts.catalogue_view import markdown
from advisor.facts.data import DataFacts
from advisor.facts.declare import FactNamespace, fact
from advisor.facts.registry import BUILD_ORDER, FACT_BUILDERS, PLAN_NAMESPACES, Builder, _ordered
from advisor.facts.run import RunFacts
from advisor.facts.stage_namespaces import TrainingKeys
from advisor.pipeline.check import CheckOptions, run_check
from advisor.plan.run_plan import RunPlan
from tests.conftest import CORPUS, REPO, write_files

runner = CliRunner()


def _projects() -> list[Path]:
    folders = [p.parent for p in sorted((REPO / "fixtures").rglob("expect.yaml"))]
    if CORPUS.is_dir():
        folders += [p for p in sorted(CORPUS.iterdir()) if p.is_dir()]
    return folders


def test_every_fixture_and_corpus_folder_sets_only_declared_facts_of_their_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An undeclared fact raises (UndeclaredFact is not an Exception); a value of another type is stored
    as unknown in a user's run, and here, on the project's own inputs, it is a builder's bug."""
    mistyped: list[str] = []
    original = declare.mistyped

    def record(namespace: str, declared: Any, value: Value, problem: str) -> Value:
        mistyped.append(f"{namespace}.{declared.name}: {problem}")
        return original(namespace, declared, value, problem)

    monkeypatch.setattr(declare, "mistyped", record)
    for folder in _projects():
        monkeypatch.chdir(folder)
        for hardware in (None, "4xH100-NVL"):
            run_check([Path(".")], CheckOptions(hardware=hardware))
            assert not mistyped, (folder, mistyped)


def test_a_namespace_class_refuses_an_undeclared_fact_and_a_wrong_type() -> None:
    with pytest.raises(UndeclaredFact, match=r"batch\.wrold_size: not a declared fact"):
        BatchFacts().set("wrold_size", Value(4))
    batch = BatchFacts()
    batch.world_size = Value("4")  # a written value of another type: unknown, with the reason
    assert batch.world_size is None
    assert batch.value("world_size").unknown == "a str is not int (batch.world_size is declared int)"  # type: ignore[union-attr]
    with pytest.raises(UndeclaredFact, match="undeclared keys extra"):
        RunFacts().missing_references = Value([{"raw": "x", "extra": 1}])
    batch.world_size = Value(None, unknown="not written")  # unknown: any type
    batch.world_size = Value(4, None, "derived")
    assert batch.world_size == 4 and batch.value("world_size") == Value(4, None, "derived")
    assert batch.read("world_size") == 4 and "world_size" in batch  # what the evaluator reads
    TrainingKeys().set("any_key_of_the_file", Value("x"))  # dynamic: the file's keys


def test_the_type_check_needs_no_environment_variable() -> None:
    """The old check ran only with GPU_ADVISE_STRICT_FACTS=1: a user's run never had it."""
    env = {k: v for k, v in os.environ.items() if k != "GPU_ADVISE_STRICT_FACTS"}
    code = (
        "from advisor.facts.batch import BatchFacts\n"
        "from advisor.core.provenance import Value\n"
        "BatchFacts().set('wrold_size', Value(4))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    assert done.returncode != 0 and "UndeclaredFact: batch.wrold_size: not a declared fact" in done.stderr


def test_a_class_declares_only_fact_types_and_no_shadowing_names() -> None:
    with pytest.raises(TypeError, match="shadows a Namespace attribute"):
        type("Bad", (FactNamespace,), {"items": fact(int, "x")}, name="bad", doc="d")
    with pytest.raises(TypeError, match="is not a fact type"):
        fact(set, "a set")
    declared = {f.name: f.type for f in by_name()["estimates"].facts}
    assert declared["items"] == "list[dict]"  # declared as items_ (key="items"): rules read `items`
    assert (
        by_name()["model"].fact("name") is not None and by_name()["model"].fact("seq_len").type == "int|str"
    )


def test_builders_run_after_what_they_read_by_their_parameter_names() -> None:
    order = [b.name for b in BUILD_ORDER]
    assert sorted(order) == sorted(Builder(f).name for f in FACT_BUILDERS)
    for i, builder in enumerate(BUILD_ORDER):
        assert builder.requires == tuple(inspect.signature(builder.function).parameters)[1:]
        assert by_name()[builder.name].requires == builder.requires
        assert by_name()[builder.name].builder == f"{builder.function.__module__}:{builder.function.__name__}"
        for required in builder.requires:
            assert required in PLAN_NAMESPACES or required in order[:i], (builder.name, required)
    assert order.index("script") < order.index("precision") < order.index("estimates")


def test_the_registry_refuses_an_unknown_namespace_and_a_circle() -> None:
    def reads_nothing_known(plan: RunPlan, bacth: BatchFacts) -> BatchFacts:
        raise AssertionError

    def untyped(plan: RunPlan):  # type: ignore[no-untyped-def]
        raise AssertionError

    with pytest.raises(TypeError, match="reads bacth: no builder or plan provides it"):
        _ordered((reads_nothing_known,))
    with pytest.raises(TypeError, match="must be annotated to return"):
        _ordered((untyped,))

    def data(plan: RunPlan, batch: BatchFacts) -> DataFacts:
        raise AssertionError

    def batch(plan: RunPlan, data: DataFacts) -> BatchFacts:
        raise AssertionError

    with pytest.raises(TypeError, match="read each other"):
        _ordered((data, batch))


def test_docs_facts_md_is_generated_from_the_catalogue() -> None:
    assert (REPO / "docs" / "facts.md").read_text(encoding="utf-8") == markdown(), (
        "docs/facts.md is out of date: run python3 tools/gen_fact_docs.py"
    )


def test_facts_command_lists_every_namespace() -> None:
    result = runner.invoke(app, ["facts", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["namespace"] for r in rows] == [ns.name for ns in NAMESPACES]
    batch = next(r for r in rows if r["namespace"] == "batch")
    assert {"name": "world_size", "type": "int"}.items() <= next(
        f for f in batch["facts"] if f["name"] == "world_size"
    ).items()
    one = runner.invoke(app, ["facts", "placement"])
    assert one.exit_code == 0 and "placement.in_one_nvlink_group" in one.stdout
    assert runner.invoke(app, ["facts", "batc"]).exit_code == 2


POLICY = """code: ORG{n:03d}
name: org-policy-{n}
severity: warning
summary: a policy
{body}
docs: a policy
"""


@pytest.mark.parametrize(
    ("body", "line", "names"),
    [
        ("when: batch.wrold_size > 2\nmessage: too many", 5, ["wrold_size", "world_size"]),
        ("when: batc.world_size > 2\nmessage: too many", 5, ["batc", "batch"]),
        ("when: run.strategy > 2\nmessage: sharded", 5, ["run.strategy"]),
        ("when: \"batch.world_size == 'four'\"\nmessage: four", 5, ["batch.world_size"]),
        ("when: lenn(batch.conflicts) > 0\nmessage: conflicts", 5, ["lenn", "len"]),
        ("for_each: batch.conflicts\nmessage: '{item.knd}'", 6, ["knd", "kind"]),
        ("message: '{training.learning_rat}'", 5, ["learning_rat", "learning_rate"]),
        ("at: placement.gpu_idss\nmessage: x", 5, ["gpu_idss", "gpu_ids"]),
        ("when: document.kind == 'x'\nmessage: x", 5, ["document"]),
        ("let:\n  a: b + 1\n  b: '2'\nmessage: '{a}'", 6, ["'b'"]),
        ("let:\n  a: training.items()\nmessage: '{a}'", 6, ["items"]),
        ("let:\n  xs: batch.conflicts\nfor_each: xs\nmessage: x", 7, ["'xs'"]),
        ("let:\n  batch: '2'\nmessage: '{batch}'", 6, ["batch"]),
    ],
)
def test_a_policy_rule_reading_an_undeclared_name_is_refused_at_load(
    body: str, line: int, names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "policies"
    rules.mkdir()
    (rules / "ORG001.yaml").write_text(POLICY.format(n=1, body=body), encoding="utf-8")
    write_files(tmp_path, {"args.yaml": "per_device_train_batch_size: 2\n"})
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", ".", "--rules", str(rules)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert f"ORG001.yaml:{line}:" in lines[0], lines[0]
    for name in names:
        assert name in lines[0], lines[0]


def test_extend_rules_from_the_settings_are_checked_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "ORG002.yaml").write_text(
        POLICY.format(n=2, body="when: hardware.gpu_count > 4\nmessage: big"), encoding="utf-8"
    )
    write_files(tmp_path, {"args.yaml": "per_device_train_batch_size: 2\n", ".gpu-advise.toml": ""})
    (tmp_path / ".gpu-advise.toml").write_text('extend-rules = ["org"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", "."])
    assert result.exit_code == 2 and "ORG002.yaml:5:" in result.output and "gpu_count" in result.output


LANGUAGE = """code: ORG003
name: org-language
summary: let, message cases, a severity condition
severity: {{error: "n > 2", info: "n == 1", default: warning}}
let:
  n: batch.world_size
  twice: n * 2
when: n is not None
at: batch.world_size
message:
  by: "'many' if n > 2 else 'few'"
  cases:
    many: "{{twice}}"
    few: "{{n}}"
docs: a policy
"""


@pytest.mark.parametrize(
    ("processes", "severity", "message"), [(4, "error", "8"), (2, "warning", "2"), (1, "info", "1")]
)
def test_let_names_message_cases_and_a_severity_condition(
    processes: int, severity: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "policies"
    rules.mkdir()
    (rules / "ORG003.yaml").write_text(LANGUAGE.format(), encoding="utf-8")
    write_files(
        tmp_path,
        {
            "launch.sh": f"#!/bin/bash\ntorchrun --nproc_per_node {processes} train.py --output_dir out\n",
            "train.py": "print('train')\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["check", ".", "--rules", str(rules), "--select", "ORG003", "--format", "json", "--exit-zero"]
    )
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["severity"], f["message"], f["file"]) for f in found] == [
        ("ORG003", severity, message, "launch.sh")
    ]


def test_readers_tag_problems_with_declared_kinds_and_a_built_in_rule_reports_each() -> None:
    """No reader names a rule code; each kind of PROBLEM_KINDS is chosen by GA001 or GA003."""
    import ast

    from advisor.core.document import PROBLEM_KINDS
    from advisor.engine.rule_engine import load_catalog

    used: set[str] = set()
    for path in sorted((REPO / "advisor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "SourceProblem" and node.args:
                first = node.args[0]
                assert isinstance(first, ast.Constant), f"{path}:{node.lineno}: a kind is a literal"
                assert first.value in PROBLEM_KINDS, f"{path}:{node.lineno}: {first.value!r} is not a kind"
                used.add(first.value)
    assert used == set(PROBLEM_KINDS)
    readers = {r.code: r.spec.for_each or "" for r in load_catalog() if r.code in ("GA001", "GA003")}
    for kind in PROBLEM_KINDS:
        assert sum(f"'{kind}'" in for_each for for_each in readers.values()) == 1, kind


def test_a_users_check_runs_every_builder_under_the_type_check(tmp_path: Path) -> None:
    """The real CLI, as a user runs it (no test environment variable): every builder's sets are checked,
    and a run of the bundled example and of a multi-process launch still completes with its findings."""
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 4 train.py --logging_steps 3\n",
            "train.py": "from transformers import Trainer\nTrainer(model=None).train()\n",
        },
    )
    env = {k: v for k, v in os.environ.items() if k != "GPU_ADVISE_STRICT_FACTS"}
    env["PYTHONPATH"] = str(REPO)
    for folder in (REPO / "fixtures" / "example", tmp_path):
        done = subprocess.run(
            [sys.executable, "-m", "advisor", "check", ".", "--format", "json", "-H", "4xH100-NVL"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode in (0, 1), done.stderr
        assert "UndeclaredFact" not in done.stderr and "Traceback" not in done.stderr
        runs = json.loads(done.stdout)["runs"]
        assert runs, done.stdout


def test_namespaces_other_stages_build_are_checked_too() -> None:
    """policy, suppressions and measured are built outside advisor/facts/ from their declared classes."""
    from advisor.engine.suppress import suppression_facts
    from advisor.facts.stage_namespaces import MeasuredFacts, SuppressionFacts
    from advisor.pipeline.policy.facts import policy_facts

    with pytest.raises(UndeclaredFact, match=r"policy\.settings: its items have undeclared keys oops"):
        policy_facts("git HEAD", [{"oops": 1}], [], [], [], [])
    assert isinstance(suppression_facts([], [], []), SuppressionFacts)
    with pytest.raises(UndeclaredFact, match=r"measured\.peak_gib_typo: not a declared fact"):
        MeasuredFacts().set("peak_gib_typo", Value(1.0))


def test_a_written_value_of_another_type_is_unknown_not_a_crash(tmp_path: Path) -> None:
    """tf32: -3 reached precision.tf32 (declared bool) as an int: with the check always on, the CLI
    raised UndeclaredFact; now the fact is unknown and the check reports as for any unknown value."""
    write_files(
        tmp_path,
        {
            "args.yaml": "tf32: -3\nbf16: true\nper_device_train_batch_size: 2\n",
            "launch.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py args.yaml\n",
            "train.py": "from transformers import Trainer\nTrainer(model=None).train()\n",
        },
    )
    env = {k: v for k, v in os.environ.items() if k != "GPU_ADVISE_STRICT_FACTS"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "check", ".", "--format", "json", "-H", "4xH100-NVL"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["runs"]


def test_every_stage_namespace_names_a_builder_that_exists() -> None:
    """stage_namespaces.py names the builders of higher layers as strings (the facts layer may not import
    them); `gpu-advise facts` and docs/facts.md print them, so a renamed builder must fail here, not there."""
    classes = [
        c
        for c in vars(stage_namespaces).values()
        if isinstance(c, type) and issubclass(c, FactNamespace) and c is not FactNamespace
    ]
    assert len(classes) >= 11
    for cls in classes:
        module, _, function = cls.builder.partition(":")
        assert callable(getattr(importlib.import_module(module), function, None)), (cls.name, cls.builder)
